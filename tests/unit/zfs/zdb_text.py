"""`zdb -C` output read back into the nvlist it prints: the tests' oracle for
`zsn.zfs.cachefile`, which decodes the same configs from the cache file's bytes.

zdb prints an nvlist as ``name: value`` lines indented four spaces per level:
strings quoted, numbers bare, a boolean as its name alone, a nested list as
``name:`` with its pairs below, an array of lists as ``name[0]:``, ``name[1]:`` ...
Without a pool (the cache file) each pool is a ``POOL:`` heading at column 0; with
one (`zdb -C POOL`) the heading is ``MOS Configuration:`` and the pool is its
``name``.
"""

from __future__ import annotations

import re
from typing import Any

_LINE_RE = re.compile(r"( *)(.+?)(?:\[(\d+)\])?:(?: (.*))?")


def _value(text: str) -> Any:
    if text.startswith("'") and text.endswith("'"):
        return text[1:-1]
    return int(text) if text.isdigit() else text


def nvlist_of(text: str) -> dict[str, Any]:
    """Pool name -> its config, as nested dicts and lists."""
    pools: dict[str, Any] = {}
    stack: list[tuple[int, dict[str, Any]]] = []
    for line in text.splitlines():
        if not line.strip():
            continue
        match = _LINE_RE.fullmatch(line.rstrip())
        if match is None:  # a boolean: its name alone
            indent = len(line) - len(line.lstrip())
            while stack and stack[-1][0] >= indent:
                stack.pop()
            stack[-1][1][line.strip()] = True
            continue
        indent, key, index, value = (len(match[1]), match[2].strip(), match[3], match[4])
        if indent == 0:
            config: dict[str, Any] = {}
            pools[key] = config
            stack = [(0, config)]
            continue
        while stack and stack[-1][0] >= indent:
            stack.pop()
        parent = stack[-1][1]
        if index is not None:
            child: dict[str, Any] = {}
            parent.setdefault(key, []).append(child)
            stack.append((indent, child))
        elif value is None:
            child = {}
            parent[key] = child
            stack.append((indent, child))
        else:
            parent[key] = _value(value)
    if "MOS Configuration" in pools:
        config = pools.pop("MOS Configuration")
        pools[config["name"]] = config
    return pools
