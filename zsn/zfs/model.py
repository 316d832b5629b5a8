"""What zsn knows about ZFS: pools, their vdev trees and scans, datasets, live I/O.

Every value is what OpenZFS printed, parsed: sizes in bytes, times as Unix times,
latencies in nanoseconds, ``None`` where ZFS printed ``-`` (not applicable).

The records are NamedTuples (immutable; `_replace` makes a changed copy): as frozen
dataclasses they took ~3 ms to define, ten times as long, at every start of a
headless command.
"""

from __future__ import annotations

from typing import Literal, NamedTuple

VdevGroup = Literal["data", "dedup", "special", "logs", "cache", "spares"]
GROUPS: tuple[VdevGroup, ...] = ("data", "dedup", "special", "logs", "cache", "spares")
"""In the order `zpool status` and `zpool iostat -v` print them."""

LEAF_KINDS = frozenset({"disk", "file", "leaf"})

ScanFunction = Literal["scrub", "resilver", "error scrub"]
ScanState = Literal["scanning", "paused", "finished", "canceled", "unknown"]
"""``unknown``: zpool printed a scan line zsn cannot read (its text is in `Scan.text`)."""


class Vdev(NamedTuple):
    """One row of a pool's configuration tree, as `zpool status` shows it."""

    name: str
    """As zpool names it (with ``-P``: a leaf's full path)."""
    state: str
    """ONLINE, DEGRADED, FAULTED, OFFLINE, REMOVED, UNAVAIL; spares AVAIL or INUSE."""
    depth: int
    """0 for the pool (or the first level of a group without a row of its own)."""
    group: VdevGroup
    parent: str | None
    read_errors: int | None = None
    write_errors: int | None = None
    checksum_errors: int | None = None
    kind: str = "disk"
    """pool, mirror, raidz1, draid2, replacing, spare, root (a group's row); for leaves
    disk or file (or what JSON's vdev_type says)."""
    note: str = ""
    """What zpool adds after the counts: ``(resilvering)``, ``was /dev/...``,
    ``block size: 512B configured, 4096B native`` ..."""

    @property
    def is_leaf(self) -> bool:
        return self.kind in LEAF_KINDS

    @property
    def errors(self) -> int:
        return sum(count or 0 for count in
                   (self.read_errors, self.write_errors, self.checksum_errors))


class Scan(NamedTuple):
    """The last or current scrub or resilver, from the ``scan:`` lines of `zpool status`."""

    function: ScanFunction
    state: ScanState
    started: float | None = None
    ended: float | None = None
    """When it finished or was canceled (Unix time, the host's local clock)."""
    examined: int | None = None
    issued: int | None = None
    total: int | None = None
    rate: float | None = None
    """Bytes issued per second (what the ETA is computed from)."""
    percent: float | None = None
    """Issued / total, clamped to 0..100."""
    eta_seconds: int | None = None
    repaired: int | None = None
    """Bytes repaired (scrub) or resilvered (resilver)."""
    errors: int | None = None
    duration_seconds: int | None = None
    text: str = ""
    """The ``scan:`` lines as zpool printed them, kept when the state is ``unknown``."""

    @property
    def understood(self) -> bool:
        return self.state != "unknown"


class Pool(NamedTuple):
    name: str
    health: str
    size: int | None = None
    allocated: int | None = None
    free: int | None = None
    fragmentation: int | None = None
    """Percent; ``None`` when ZFS cannot tell (``-``)."""
    capacity: int | None = None
    dedup_ratio: float | None = None
    ashift: int | None = None
    """The pool property: the default for new vdevs, 0 = detect."""
    freeing: int | None = None
    """Bytes still to be freed in the background after a destroy."""
    leaked: int | None = None
    """Bytes a destroy could not free (only with ``zfs_free_leak_on_eio``)."""
    readonly: bool | None = None
    """Imported read-only (``zpool import -o readonly=on``)."""
    vdevs: tuple[Vdev, ...] = ()
    scan: Scan | None = None
    status: str = ""
    """The ``status:`` text of `zpool status` (why the pool is not fine), if any."""
    action: str = ""
    data_errors: int = 0
    """Permanent data errors (the ``errors:`` line)."""

    def vdev(self, name: str) -> Vdev | None:
        return next((v for v in self.vdevs if v.name == name), None)


class Dataset(NamedTuple):
    name: str
    type: str
    """filesystem or volume."""
    used: int | None = None
    available: int | None = None
    referenced: int | None = None
    compress_ratio: float | None = None
    recordsize: int | None = None
    """``None`` for volumes (they have `volblocksize`)."""
    volblocksize: int | None = None
    compression: str | None = None
    atime: str | None = None
    relatime: str | None = None
    xattr: str | None = None
    mountpoint: str | None = None
    created: int | None = None
    use: str | None = None
    """The ``zsn:use`` user property (media, database, vm ...), when set."""

    @property
    def pool(self) -> str:
        return self.name.split("/", 1)[0]

    @property
    def parent(self) -> str | None:
        head, slash, _ = self.name.rpartition("/")
        return head if slash else None


class IostatRow(NamedTuple):
    """One vdev's line of ``zpool iostat -Hpvly -l``: rates over the last interval."""

    name: str
    group_index: int
    """0 for the pool and its data vdevs; 1, 2 ... for each group printed after a blank line."""
    allocated: int | None
    free: int | None
    read_ops: int
    write_ops: int
    read_bytes: int
    write_bytes: int
    total_wait_read: int | None = None
    total_wait_write: int | None = None
    disk_wait_read: int | None = None
    disk_wait_write: int | None = None
    syncq_wait_read: int | None = None
    syncq_wait_write: int | None = None
    asyncq_wait_read: int | None = None
    asyncq_wait_write: int | None = None
    scrub_wait: int | None = None
    trim_wait: int | None = None
    rebuild_wait: int | None = None
    """2.2+ only."""


class IostatBlock(NamedTuple):
    """One interval of a pool's iostat stream: the pool's row first, then every vdev's."""

    pool: str
    rows: tuple[IostatRow, ...]
    timestamp: int | None = None
    """The ``-T u`` line before the block (Unix time)."""

    def row(self, name: str) -> IostatRow | None:
        return next((r for r in self.rows if r.name == name), None)


class ZfsSnapshot(NamedTuple):
    """Everything read in one go. `unavailable` says why there is nothing (no module,
    no zpool program); `errors` lists what could not be read although it exists."""

    pools: tuple[Pool, ...] = ()
    datasets: tuple[Dataset, ...] = ()
    version: str | None = None
    unavailable: str | None = None
    errors: tuple[str, ...] = ()
    taken_at: float = 0.0
    notes: tuple[str, ...] = ()
    """Things worth saying that are not errors (e.g. "actions need root")."""

    def pool(self, name: str) -> Pool | None:
        return next((p for p in self.pools if p.name == name), None)

    def datasets_of(self, pool: str) -> tuple[Dataset, ...]:
        return tuple(d for d in self.datasets if d.pool == pool)
