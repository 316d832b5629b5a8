#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: zsn developers
# MIT License (see the zsn repository's pyproject.toml)
"""Ansible module: a host's state as zsn describes it (``zsn state export``)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
module: zsn_state_info
short_description: Read a host's state as a zsn desired-state file
description:
  - Runs C(zsn state export --json) on the target and returns the desired-state file
    that describes the host now (docs/state.md in zsn); applied with
    M(zsn.fleet.zsn_apply), it plans nothing.
  - It names every WireGuard interface's public key (never a private or preshared
    key), so a play can give each host's peers the keys the other hosts made for
    themselves.
version_added: "0.1.0"
author:
  - zsn developers (!UNKNOWN)
options:
  sections:
    description:
      - The sections to read (C(wireguard), C(links) ...); all of them when empty.
    type: list
    elements: str
    default: []
extends_documentation_fragment:
  - zsn.fleet.common
notes:
  - Changes nothing; runs in check mode too.
  - A part zsn cannot read (a config it cannot parse) is left out of I(state), and a
    warning says why.
"""

EXAMPLES = r"""
- name: Read each host's WireGuard state
  zsn.fleet.zsn_state_info:
    sections: [wireguard]
  register: zsn_now

- name: Note wg0's public key (its private key never leaves the host)
  ansible.builtin.set_fact:
    wg0_public_key: >-
      {{ (zsn_now.state.wireguard.interfaces
          | selectattr('name', 'equalto', 'wg0') | first).public_key }}
"""

RETURN = r"""
state:
  description: The desired-state file that describes the host now (C(version) and
    the sections read).
  returned: always
  type: dict
  sample:
    version: 1
    wireguard:
      interfaces:
        - name: wg0
          public_key: 8DtMxP7orKTjWmrj/T/GQHVamZNprolZYctPJWWkzEE=
          addresses: [10.66.0.1/24]
          listen_port: 51820
          up: true
          client_to_client: false
          linked: []
          peers: []
"""

import json
import re

from ansible.module_utils.basic import AnsibleModule

PARTIAL = 3
"""zsn's exit status for a document written whole, part of a section left out."""
SECTION_NAME = re.compile(r"^[a-z][a-z0-9_]*$")


def main():
    module = AnsibleModule(
        argument_spec=dict(
            sections=dict(type="list", elements="str", default=[]),
            executable=dict(type="path", default="zsn"),
            root=dict(type="path"),
        ),
        supports_check_mode=True,
    )
    for section in module.params["sections"]:
        if not SECTION_NAME.match(section):  # never an option of zsn's
            module.fail_json(msg="sections: %r is not a section name" % section)
    argv = [module.params["executable"]]
    if module.params["root"]:
        argv += ["--root", module.params["root"]]
    argv += ["state", "export", "--json"] + module.params["sections"]
    rc, out, err = module.run_command(argv, expand_user_and_vars=False)
    if rc not in (0, PARTIAL):
        module.fail_json(msg=err.strip() or "zsn state export: exit %d" % rc, rc=rc)
    try:
        state = json.loads(out)
    except ValueError:
        module.fail_json(msg="zsn state export printed no JSON (exit %d)" % rc, rc=rc)
    for line in err.splitlines():
        if line.strip():
            module.warn(line.strip())
    module.exit_json(changed=False, state=state)


if __name__ == "__main__":
    main()
