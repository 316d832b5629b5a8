#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: zsn developers
# MIT License (see the zsn repository's pyproject.toml)
"""Ansible module: keep a change zsn is trying (``zsn confirm``)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
module: zsn_confirm
short_description: Keep a change zsn is trying on a host
description:
  - Runs C(zsn confirm ID) on the target, which keeps a change made with
    M(zsn.fleet.zsn_apply) and I(try_seconds) (and writes its boot config).
  - Run it over a fresh SSH connection, so a change that cut the host's path is never
    confirmed; a change not confirmed in time is rolled back by zsn's guardian on the
    host, and confirming it then fails.
version_added: "0.1.0"
author:
  - zsn developers (!UNKNOWN)
options:
  id:
    description:
      - The change's id (M(zsn.fleet.zsn_apply) returns it as C(try_id)).
    type: str
    required: true
extends_documentation_fragment:
  - zsn.fleet.common
notes:
  - In check mode nothing is confirmed.
"""

EXAMPLES = r"""
- name: Keep the tried change
  zsn.fleet.zsn_confirm:
    id: "{{ tried.try_id }}"
"""

RETURN = r"""
message:
  description: What zsn said.
  returned: always
  type: str
"""

from ansible.module_utils.basic import AnsibleModule


def main():
    module = AnsibleModule(
        argument_spec=dict(
            id=dict(type="str", required=True),
            executable=dict(type="path", default="zsn"),
            root=dict(type="path"),
        ),
        supports_check_mode=True,
    )
    if module.check_mode:
        module.exit_json(changed=False, message="check mode: nothing confirmed")
    argv = [module.params["executable"]]
    if module.params["root"]:
        argv += ["--root", module.params["root"]]
    argv += ["confirm", module.params["id"]]
    rc, out, err = module.run_command(argv, expand_user_and_vars=False)
    if rc != 0:
        module.fail_json(msg=err.strip() or out.strip() or "zsn confirm: exit %d" % rc,
                         rc=rc)
    module.exit_json(changed=True, message=out.strip())


if __name__ == "__main__":
    main()
