"""ZFS's own numbers outside the commands: kstat tables, module parameters, zdb's config.

- ``/proc/spl/kstat/zfs/fletcher_4_bench``, ``vdev_raidz_bench``: the kernel's benchmark
  of each implementation (bytes/s), with a ``fastest`` row naming the winner per column;
- module parameters such as ``zfs_fletcher_4_impl``: every implementation, the one in
  use in brackets (``[fastest] scalar sse2 avx2``);
- ``arcstats``, ``simd``, ``POOL/objset-0x...``: name/value tables;
- `zdb -C`: the cached pool configs, which hold each top-level vdev's ``ashift`` (2.1
  has no vdev properties to ask).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from zsn.errors import ParseError
from zsn.zfs.units import is_number


@dataclass(frozen=True)
class Bench:
    """A benchmark table: implementation -> column -> bytes per second."""

    columns: tuple[str, ...]
    speeds: dict[str, dict[str, int]]
    fastest: dict[str, str]
    """Column -> the implementation ZFS found fastest."""


def parse_bench(text: str) -> Bench:
    lines = [line.split() for line in text.splitlines() if line.strip()]
    header = next((i for i, words in enumerate(lines) if words and words[0] == "implementation"),
                  None)
    if header is None:
        raise ParseError("kstat bench: no 'implementation' header")
    columns = tuple(lines[header][1:])
    speeds: dict[str, dict[str, int]] = {}
    fastest: dict[str, str] = {}
    for words in lines[header + 1:]:
        name, values = words[0], words[1:]
        if name == "fastest":
            fastest = dict(zip(columns, values, strict=False))
        elif all(is_number(value) for value in values):
            speeds[name] = {c: int(v) for c, v in zip(columns, values, strict=False)}
    return Bench(columns, speeds, fastest)


def parse_choice(text: str) -> tuple[str | None, tuple[str, ...]]:
    """``cycle [fastest] scalar sse2`` -> (``fastest``, every name without brackets)."""
    names: list[str] = []
    chosen = None
    for word in text.split():
        if word.startswith("[") and word.endswith("]"):
            word = word[1:-1]
            chosen = word
        names.append(word)
    return chosen, tuple(names)


def parse_table(text: str) -> dict[str, str]:
    """A named kstat (``name type data`` rows, or ``name<TAB>value`` rows of ``simd``)."""
    values: dict[str, str] = {}
    for line in text.splitlines()[1:]:
        words = line.split()
        if len(words) >= 3 and is_number(words[1]):
            values[words[0]] = " ".join(words[2:])
        elif len(words) == 2:
            values[words[0]] = words[1]
    return values


@dataclass(frozen=True)
class TopVdev:
    """A top-level vdev from `zdb -C`: its ashift and the leaves under it."""

    pool: str
    id: int
    type: str
    ashift: int | None
    is_log: bool
    leaves: tuple[str, ...]
    whole_disks: tuple[str, ...] = ()
    nparity: int | None = None

    @property
    def name(self) -> str:
        """The name `zpool status` gives it: mirror-0, raidz2-1, or the leaf's path."""
        if self.type in ("disk", "file"):
            return self.leaves[0] if self.leaves else str(self.id)
        kind = f"{self.type}{self.nparity}" if self.type == "raidz" and self.nparity else \
            self.type
        return f"{kind}-{self.id}"


_LINE_RE = re.compile(r"( *)([^:]+):(?: (.*))?")


@dataclass
class _Node:
    values: dict[str, str] = field(default_factory=dict)
    children: list[_Node] = field(default_factory=list)


def parse_zdb_config(text: str) -> list[TopVdev]:
    """Top-level vdevs of every pool in `zdb -C` (``POOL:`` sections) or `zdb -C POOL`
    (``MOS Configuration:``)."""
    tops: list[TopVdev] = []
    pool = None
    stack: list[tuple[int, _Node]] = []
    roots: list[tuple[str, _Node]] = []
    for line in text.splitlines():
        match = _LINE_RE.fullmatch(line.rstrip())
        if not match:
            continue
        indent, key, value = len(match.group(1)), match.group(2).strip(), match.group(3)
        if indent == 0:
            pool, stack = (None if key == "MOS Configuration" else key), []
            continue
        while stack and stack[-1][0] >= indent:
            stack.pop()
        if key == "vdev_tree" or key.startswith("children["):
            node = _Node()
            if stack:
                stack[-1][1].children.append(node)
            else:
                roots.append((pool or "", node))
            stack.append((indent, node))
        elif stack and value is not None:
            stack[-1][1].values[key] = value.strip("'")
        elif key == "name" and value is not None and not stack:
            pool = value.strip("'")
    for pool_name, root in roots:
        for child in root.children:
            values = child.values
            leaves = tuple(_leaf_paths(child))
            whole = tuple(_leaf_paths(child, whole_only=True))
            tops.append(TopVdev(
                pool=pool_name, id=int(values.get("id", "0")), type=values.get("type", "?"),
                ashift=int(values["ashift"]) if is_number(values.get("ashift", "")) else None,
                is_log=values.get("is_log") == "1", leaves=leaves, whole_disks=whole,
                nparity=int(values["nparity"]) if is_number(values.get("nparity", ""))
                else None))
    return tops


def _leaf_paths(node: _Node, whole_only: bool = False) -> list[str]:
    if not node.children:
        path = node.values.get("path")
        if path and (not whole_only or node.values.get("whole_disk") == "1"):
            return [path]
        return []
    return [path for child in node.children for path in _leaf_paths(child, whole_only)]
