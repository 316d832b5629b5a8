"""ZFS's own numbers outside the commands: kstat tables and module parameters.

- ``/proc/spl/kstat/zfs/fletcher_4_bench``, ``vdev_raidz_bench``: the kernel's benchmark
  of each implementation (bytes/s), with a ``fastest`` row naming the winner per column;
- module parameters such as ``zfs_fletcher_4_impl``: every implementation, the one in
  use in brackets (``[fastest] scalar sse2 avx2``);
- ``arcstats``, ``simd``, ``POOL/objset-0x...``: name/value tables.
"""

from __future__ import annotations

from dataclasses import dataclass

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
