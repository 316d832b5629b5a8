"""The pool cache file (``/etc/zfs/zpool.cache``): every imported pool's vdev config.

The kernel rewrites it whenever a pool's configuration changes (create, import, add,
attach, replace, export). `zdb -C` without a pool prints exactly this file; zsn reads
it itself, as the advisor needs only each top-level vdev's ``ashift`` and which leaves
are whole disks, and starting zdb (it loads all of libzpool) costs more than the
`zpool` commands zsn runs. Pools imported with ``cachefile=none`` are not in it.

The file is an nvlist packed in OpenZFS's native encoding (``fnvlist_pack``, in
``module/nvpair/nvpair.c``; releases before 0.8 wrote XDR, which zsn does not read): a
4-byte header (encoding 0, byte order), the top list's version and flags, then each
pair as it lies in memory: its size, name length, element count and type, the name
padded to 8 bytes, the value; a nested list's pairs follow its pair, and a zero size
ends each list. Every length is checked against the data, so a damaged file is a
`ParseError`, never a wrong answer.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from typing import Any

from zsn.errors import ParseError
from zsn.system import files
from zsn.system.host import Host

PATH = "/etc/zfs/zpool.cache"
MAX_SIZE = 4 << 20
"""A cache file holds a few KiB per pool; anything this big is not one."""
MAX_DEPTH = 24
"""Nested lists: root -> pool -> vdev_tree -> top -> replacing/spare -> leaf, plus room."""

_NATIVE = 0
_BOOLEAN, _UINT64, _STRING, _NVLIST, _NVLIST_ARRAY, _UINT64_ARRAY = 1, 8, 9, 19, 20, 16
_OTHER_FIRST, _OTHER_LAST = 2, 27
"""Every other type nvpair.c knows (byte ... double, the arrays): skipped, not decoded."""
_PAIR_HEADER = 16
"""nvp_size (int32), nvp_name_sz (int16), nvp_reserve (int16), nvp_value_elem (int32),
nvp_type (int32)."""
_NVLIST_SIZE = 24
"""An nvlist_t in a pair's value: version, flags, a pointer, flags, padding."""

NvList = dict[str, Any]


@dataclass(frozen=True)
class TopVdev:
    """A top-level vdev of a pool: its ashift and the leaves under it."""

    pool: str
    id: int
    type: str
    ashift: int | None
    is_log: bool
    leaves: tuple[str, ...]
    whole_disks: tuple[str, ...] = ()
    """Leaves ZFS partitioned itself (``whole_disk``): the disk's scheduler is ZFS's."""
    nparity: int | None = None

    @property
    def name(self) -> str:
        """The name `zpool status` gives it: mirror-0, raidz2-1, or the leaf's path."""
        if self.type in ("disk", "file"):
            return self.leaves[0] if self.leaves else str(self.id)
        kind = f"{self.type}{self.nparity}" if self.type == "raidz" and self.nparity else \
            self.type
        return f"{kind}-{self.id}"


class _Decoder:
    def __init__(self, data: bytes) -> None:
        if len(data) > MAX_SIZE:
            raise ParseError(f"pool cache file larger than {MAX_SIZE >> 20} MiB")
        if len(data) < 12:
            raise ParseError("pool cache file: too short for an nvlist")
        if data[0] != _NATIVE:
            raise ParseError(f"pool cache file: encoding {data[0]} (XDR is 1, written by "
                             "OpenZFS before 0.8) is not read")
        order = "<" if data[1] == 1 else ">"
        self.data = data
        self.int32 = struct.Struct(order + "i")
        self.header = struct.Struct(order + "ihhii")
        self.uint64 = struct.Struct(order + "Q")

    def fail(self, what: str, offset: int) -> ParseError:
        return ParseError(f"pool cache file: {what} at byte {offset} of {len(self.data)}")

    def pairs(self, offset: int, depth: int) -> tuple[NvList, int]:
        """The pairs of one list from `offset`, and where the list ends."""
        if depth > MAX_DEPTH:
            raise self.fail(f"lists nested deeper than {MAX_DEPTH}", offset)
        data = self.data
        found: NvList = {}
        while True:
            if offset + 4 > len(data):
                raise self.fail("a list without its end", offset)
            (size,) = self.int32.unpack_from(data, offset)
            if size == 0:
                return found, offset + 4
            end = offset + size
            if size < _PAIR_HEADER + 8 or end > len(data):
                raise self.fail(f"a pair of {size} bytes", offset)
            _, name_size, _, count, kind = self.header.unpack_from(data, offset)
            name_end = offset + _PAIR_HEADER + name_size
            if name_size < 2 or name_end > end or data[name_end - 1] != 0:
                raise self.fail("a pair name", offset)
            try:
                name = data[offset + _PAIR_HEADER:name_end - 1].decode()
            except UnicodeDecodeError:
                raise self.fail("a pair name that is not UTF-8", offset) from None
            value_at = offset + (_PAIR_HEADER + name_size + 7) // 8 * 8
            found[name], offset = self.value(kind, count, value_at, end, depth)

    def value(self, kind: int, count: int, at: int, end: int, depth: int) -> tuple[Any, int]:
        """A pair's value and where the next pair starts (after a nested list's pairs)."""
        data = self.data
        if kind == _BOOLEAN:
            return True, end
        if kind == _UINT64:
            if at + 8 > end:
                raise self.fail("a number past its pair", at)
            return self.uint64.unpack_from(data, at)[0], end
        if kind == _STRING:
            stop = data.find(b"\0", at, end)
            if stop < 0:
                raise self.fail("a string without its end", at)
            try:
                return data[at:stop].decode(), end
            except UnicodeDecodeError:
                raise self.fail("a string that is not UTF-8", at) from None
        if kind == _UINT64_ARRAY:
            if count < 0 or at + 8 * count > end:
                raise self.fail("a number array past its pair", at)
            return [self.uint64.unpack_from(data, at + 8 * i)[0] for i in range(count)], end
        if kind == _NVLIST:
            if at + _NVLIST_SIZE > end:
                raise self.fail("a list header past its pair", at)
            return self.pairs(end, depth + 1)
        if kind == _NVLIST_ARRAY:
            if count < 0 or at + count * (8 + _NVLIST_SIZE) > end:
                raise self.fail("a list array past its pair", at)
            items = []
            offset = end
            for _ in range(count):
                item, offset = self.pairs(offset, depth + 1)
                items.append(item)
            return items, offset
        if _OTHER_FIRST <= kind <= _OTHER_LAST:
            return None, end  # a type the advisor never reads: skipped by its size
        raise self.fail(f"unknown value type {kind}", at)


def unpack(data: bytes) -> NvList:
    """The nvlist in `data`: uint64s as ints, strings, booleans as True, nested lists
    as dicts (arrays of them as lists); values of other types are None."""
    decoder = _Decoder(data)
    found, end = decoder.pairs(12, 0)  # after the header, the version and the flags
    if end != len(data):
        raise decoder.fail("data after the end of the list", end)
    return found


def top_vdevs(pools: NvList) -> list[TopVdev]:
    """Each pool's top-level vdevs (in the order `zpool status` shows them) with their
    ashift, whether they are log devices, their leaves' paths and the whole disks."""
    tops: list[TopVdev] = []
    for pool_name, config in pools.items():
        tree = config.get("vdev_tree") if isinstance(config, dict) else None
        children = tree.get("children") if isinstance(tree, dict) else None
        if not isinstance(children, list):
            continue
        for child in children:
            if not isinstance(child, dict):
                continue
            tops.append(TopVdev(
                pool=pool_name, id=_number(child.get("id")) or 0,
                type=str(child.get("type", "?")), ashift=_number(child.get("ashift")),
                is_log=child.get("is_log") == 1, leaves=tuple(_leaves(child)),
                whole_disks=tuple(_leaves(child, whole_only=True)),
                nparity=_number(child.get("nparity"))))
    return tops


def _number(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _leaves(node: NvList, whole_only: bool = False, depth: int = 0) -> list[str]:
    children = node.get("children")
    if isinstance(children, list) and children and depth < MAX_DEPTH:
        return [path for child in children if isinstance(child, dict)
                for path in _leaves(child, whole_only, depth + 1)]
    path = node.get("path")
    if isinstance(path, str) and (not whole_only or node.get("whole_disk") == 1):
        return [path]
    return []


def read(host: Host) -> list[TopVdev]:
    """The top-level vdevs of every pool in the host's cache file; none when there is no
    file (no pool imported with the default cache file). A file that cannot be read or
    understood is a `ZsnError` saying so."""
    path = host.path(PATH)
    if not files.exists(path):
        return []
    return top_vdevs(unpack(files.read_bytes(path, MAX_SIZE)))
