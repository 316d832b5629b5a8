"""`zpool iostat -Hpvly -P -T u POOL INTERVAL`: one pool's live I/O, block by block.

Every interval the child prints a ``-T u`` line (a Unix time), then one tab-separated
row per vdev: the pool, its vdevs depth-first, then the dedup, special, log and cache
groups, each after an empty line and without a heading; spares are never listed. A
row is the name, alloc, free, read/write operations and bytes per second, then with
``-l`` the mean latencies in ns (total, disk, sync queue, async queue wait, read and
write each; scrub; trim; and from 2.2 rebuild): 17 fields in 2.1, 18 from 2.2. ``-``
means "no I/O of that kind", and alloc/free print ``0`` where they do not apply.
With ``-y`` the first ``-T u`` line stands alone (the since-import block is skipped).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable

from zsn.errors import ParseError
from zsn.format import excerpt
from zsn.zfs.model import IostatBlock, IostatRow
from zsn.zfs.units import is_number

LATENCY_FIELDS = ("total_wait_read", "total_wait_write", "disk_wait_read", "disk_wait_write",
                  "syncq_wait_read", "syncq_wait_write", "asyncq_wait_read",
                  "asyncq_wait_write", "scrub_wait", "trim_wait", "rebuild_wait")
FIELD_COUNTS = (7, 17, 18)
"""Without ``-l``; with ``-l`` in 2.1; with ``-l`` from 2.2 (the rebuild column)."""


def iostat_argv(zpool: str, pool: str, interval: float, count: int | None = None) -> list[str]:
    """The stream zsn runs per shown pool (``-P``: leaf names as `zpool status -P` has them)."""
    argv = [zpool, "iostat", "-HpvlyP", "-T", "u", pool, f"{interval:g}"]
    if count is not None:
        argv.append(str(count))
    return argv


def is_timestamp(line: str) -> bool:
    return is_number(line) and 9 <= len(line) <= 12


def looks_like_row(line: str) -> bool:
    """Cheap check for the stream's watchdog: the field count and numbers are right."""
    fields = line.split("\t")
    return len(fields) in FIELD_COUNTS and all(is_number(f) or f == "-" for f in fields[1:])


def _number(text: str, line: str) -> int | None:
    if text == "-":
        return None
    if not is_number(text):
        raise ParseError("zpool iostat: not a number in " + excerpt(line, 60))
    return int(text)


def parse_row(line: str, group_index: int = 0) -> IostatRow:
    fields = line.split("\t")
    if len(fields) not in FIELD_COUNTS:
        raise ParseError(f"zpool iostat: {len(fields)} fields (expected "
                         f"{', '.join(map(str, FIELD_COUNTS))}): " + excerpt(line, 60))
    name = fields[0]
    if not name:
        raise ParseError("zpool iostat: a row without a name")
    numbers = [_number(field, line) for field in fields[1:]]
    alloc, free, read_ops, write_ops, read_bytes, write_bytes = numbers[:6]
    latencies = dict(zip(LATENCY_FIELDS, numbers[6:], strict=False))
    return IostatRow(name, group_index, alloc, free, read_ops or 0, write_ops or 0,
                     read_bytes or 0, write_bytes or 0, **latencies)


class BlockAssembler:
    """Feeds on one pool's stream, line by line, and hands out each complete block.

    A block starts at a ``-T u`` line or at the pool's own row. It is complete when the
    next one starts, or, once one block has been seen whole, as soon as it has as many
    rows as that one: no waiting an interval for the next block to show this one.
    """

    def __init__(self, pool: str) -> None:
        self.pool = pool
        self._rows: list[IostatRow] = []
        self._group = 0
        self._timestamp: int | None = None
        self._expected: int | None = None
        self._handed_out = 0
        """How many rows of the current block were in the block already handed out."""

    def expect(self, rows: int) -> None:
        """The number of rows a block has (from the pool's vdev tree), so the very first
        block is handed out when its last row arrives."""
        self._expected = rows

    def feed(self, line: str) -> list[IostatBlock]:
        if is_timestamp(line):
            flushed = self._flush()
            self._timestamp = int(line)
            return flushed
        if not line.strip():
            if self._rows:
                self._group += 1
            return []
        row = parse_row(line, self._group)
        blocks: list[IostatBlock] = []
        if row.name == self.pool and self._rows:
            blocks = self._flush()
        if not self._rows and row.name != self.pool:
            raise ParseError(f"zpool iostat: a block of pool {self.pool} starts with "
                             + excerpt(row.name))
        self._rows.append(row)
        if len(self._rows) == self._expected:
            blocks.append(self._block())
            self._handed_out = len(self._rows)
        return blocks

    def feed_all(self, lines: Iterable[str]) -> list[IostatBlock]:
        return [block for line in lines for block in self.feed(line)]

    def finish(self) -> list[IostatBlock]:
        """The last block, at the end of the stream."""
        return self._flush()

    def _block(self) -> IostatBlock:
        return IostatBlock(self.pool, tuple(self._rows), self._timestamp)

    def _flush(self) -> list[IostatBlock]:
        blocks = []
        if self._rows and len(self._rows) != self._handed_out:
            blocks.append(self._block())
        if self._rows:
            self._expected = len(self._rows)
        self._rows, self._group, self._handed_out = [], 0, 0
        return blocks


def parse_blocks(text: str, pool: str) -> list[IostatBlock]:
    """Every block of a finished `zpool iostat` run (a capture, or ``COUNT`` given)."""
    assembler = BlockAssembler(pool)
    return assembler.feed_all(text.splitlines()) + assembler.finish()


def parse_pools(text: str, pools: Iterable[str]) -> dict[str, IostatBlock]:
    """One block per pool from a single `zpool iostat -Hpvl` of every pool (no interval:
    the averages since each pool was imported). A row named like a pool starts its block."""
    names = set(pools)
    blocks: dict[str, IostatBlock] = {}
    assembler: BlockAssembler | None = None
    for line in text.splitlines():
        if line and line.split("\t", 1)[0] in names:
            if assembler is not None:
                blocks.update((b.pool, b) for b in assembler.finish())
            assembler = BlockAssembler(line.split("\t", 1)[0])
        if assembler is not None:
            blocks.update((b.pool, b) for b in assembler.feed(line))
    if assembler is not None:
        blocks.update((b.pool, b) for b in assembler.finish())
    return blocks


class History:
    """The last `length` samples of each vdev's read and write bandwidth (bytes/s)."""

    def __init__(self, length: int = 60) -> None:
        self.length = length
        self._samples: dict[tuple[str, str], deque[tuple[int, int]]] = {}

    def add(self, block: IostatBlock) -> None:
        seen = set()
        for row in block.rows:
            key = (block.pool, row.name)
            seen.add(key)
            samples = self._samples.get(key)
            if samples is None:
                samples = self._samples[key] = deque(maxlen=self.length)
            samples.append((row.read_bytes, row.write_bytes))
        for key in [k for k in self._samples if k[0] == block.pool and k not in seen]:
            del self._samples[key]  # a vdev that left the pool (a finished replace)

    def forget(self, pool: str) -> None:
        for key in [k for k in self._samples if k[0] == pool]:
            del self._samples[key]

    def reads(self, pool: str, name: str) -> list[int]:
        """Bytes read per second, oldest first."""
        return [read for read, _ in self._samples.get((pool, name), ())]

    def writes(self, pool: str, name: str) -> list[int]:
        """Bytes written per second, oldest first."""
        return [write for _, write in self._samples.get((pool, name), ())]
