# -*- coding: utf-8 -*-
# Copyright: zsn developers
# MIT License (see the zsn repository's pyproject.toml)
"""The options every module of zsn.fleet takes: which zsn runs, and on what root."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type


class ModuleDocFragment:
    DOCUMENTATION = r"""
options:
  executable:
    description:
      - The zsn program on the target.
    type: path
    default: zsn
  root:
    description:
      - Treat this folder as the system root (C(zsn --root)).
    type: path
requirements:
  - zsn on the target
"""
