#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: zsn developers
# MIT License (see the zsn repository's pyproject.toml)
"""Ansible module: make a host as a zsn desired-state file says (``zsn apply``)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
module: zsn_apply
short_description: Make a host as a zsn desired-state file says
description:
  - Runs C(zsn apply) on the target, which reads the machine, plans what differs from
    the desired state as one plan and applies it (docs/state.md in zsn).
  - C(changed) comes from the plan; a second run of the same state plans nothing.
  - Check mode runs C(zsn apply --dry-run), which changes nothing; diff mode shows the
    plan's file diffs (secrets masked).
  - With I(try_seconds) the change is tried (C(zsn apply --try)) and rolled back by
    itself unless M(zsn.fleet.zsn_confirm) confirms it in time (commit-confirmed; the
    role C(zsn.fleet.commit_confirmed) does the whole flow).
version_added: "0.1.0"
author:
  - zsn developers (!UNKNOWN)
options:
  src:
    description:
      - The desired-state file on the target. One of I(src) and I(state) is needed.
    type: path
  state:
    description:
      - The desired state itself (the file's content as a mapping), passed on standard
        input.
    type: dict
  try_seconds:
    description:
      - Try the change for this many seconds (1-3600); unless confirmed in time it is
        rolled back by zsn's guardian on the host.
    type: int
  confirm_ssh_link:
    description:
      - The interface this SSH session runs over, when the plan changes it and the
        change is not tried (zsn refuses such a plan otherwise).
    type: str
extends_documentation_fragment:
  - zsn.fleet.common
notes:
  - Supports check mode and diff mode.
  - A refusal (bad input, a plan zsn will not make) fails the task with zsn's one line.
"""

EXAMPLES = r"""
- name: Make the host as host.yaml says
  zsn.fleet.zsn_apply:
    src: /etc/zsn/host.yaml

- name: Give a hub a peer, tried for a minute
  zsn.fleet.zsn_apply:
    state:
      version: 1
      wireguard:
        interfaces:
          - name: wg0
            peers:
              - name: alice
                public_key: 8DtMxP7orKTjWmrj/T/GQHVamZNprolZYctPJWWkzEE=
                allowed_ips: [10.66.0.2/32]
    try_seconds: 60
  register: tried
"""

RETURN = r"""
steps:
  description: The plan's steps.
  returned: always
  type: list
  elements: str
parts:
  description: The titles of the plans the one plan is made of.
  returned: always
  type: list
  elements: str
done:
  description: The steps that were carried out.
  returned: always
  type: list
  elements: str
try_id:
  description: The id of the tried change (give it to M(zsn.fleet.zsn_confirm)); null
    unless tried and applied.
  returned: always
  type: str
outcome:
  description: zsn apply's whole JSON outcome (docs/state.md).
  returned: when zsn printed it
  type: dict
"""

import json

from ansible.module_utils.basic import AnsibleModule


def command(module):
    """The argv of zsn apply for the module's parameters."""
    params = module.params
    argv = [params["executable"]]
    if params["root"]:
        argv += ["--root", params["root"]]
    argv += ["apply", params["src"] or "-", "--json", "--diff"]
    if module.check_mode:
        argv.append("--dry-run")
    if params["try_seconds"] is not None:
        argv += ["--try", str(params["try_seconds"])]
    if params["confirm_ssh_link"]:
        argv += ["--confirm-ssh-link", params["confirm_ssh_link"]]
    return argv


def main():
    module = AnsibleModule(
        argument_spec=dict(
            src=dict(type="path"),
            state=dict(type="dict"),
            try_seconds=dict(type="int"),
            confirm_ssh_link=dict(type="str"),
            executable=dict(type="path", default="zsn"),
            root=dict(type="path"),
        ),
        mutually_exclusive=[("src", "state")],
        required_one_of=[("src", "state")],
        supports_check_mode=True,
    )
    data = None
    if module.params["state"] is not None:
        data = json.dumps(module.params["state"])  # JSON is YAML: zsn reads it as the file
    rc, out, err = module.run_command(command(module), data=data, binary_data=True,
                                      expand_user_and_vars=False)
    said = err.strip()
    try:
        outcome = json.loads(out) if out.strip() else None
    except ValueError:
        outcome = None
    if outcome is None:
        module.fail_json(msg=said or "zsn apply printed no outcome (exit %d)" % rc, rc=rc)
    changed = bool(outcome["changed"]) and (outcome["applied"] or module.check_mode)
    result = dict(changed=changed,
                  steps=outcome["steps"], parts=outcome["parts"], done=outcome["done"],
                  try_id=(outcome["try"] or {}).get("id"), outcome=outcome, rc=rc)
    if module._diff and outcome["diffs"]:
        result["diff"] = [dict(prepared=each["diff"]) for each in outcome["diffs"]]
    for warning in outcome["warnings"]:
        module.warn(warning)
    if rc != 0:
        verify = "; ".join(outcome["verify"])
        module.fail_json(msg=said or "zsn apply: not as planned after applying: " + verify,
                         **result)
    module.exit_json(**result)


if __name__ == "__main__":
    main()
