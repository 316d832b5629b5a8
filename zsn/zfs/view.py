"""What the ZFS pane shows, as plain data: columns with priorities and keyed rows of cells.

No Textual here: the pane turns `Cell`s into table cells (``style`` names a theme
variable, shown as the table's tone for it) and its table keeps only the columns that
fit, dropping the least important first, so a narrow terminal loses whole columns,
never half a word or a unit. Tree depth (vdevs, child datasets) is the row's, not
the text's: the table draws the guides.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from zsn.format import human_bytes, human_duration, human_nanoseconds, human_rate, sparkline
from zsn.zfs.model import Dataset, IostatRow, Pool, Scan, Vdev

SPARK_WIDTH = 12
BAD_STATES = ("FAULTED", "UNAVAIL", "REMOVED", "SUSPENDED")
WARN_STATES = ("DEGRADED", "OFFLINE")


@dataclass(frozen=True)
class Column:
    key: str
    label: str
    priority: int
    """Lower is more important: columns are dropped from the highest number down."""
    right: bool = False
    help: str = ""
    """One line for the pane's `?` help."""


@dataclass(frozen=True)
class Cell:
    text: str
    style: str = ""
    """A theme variable (``text-error`` ...) or empty."""
    right: bool = False


Row = dict[str, Cell]

POOL_COLUMNS = (
    Column("name", "Pool", 0, help="the pool"),
    Column("health", "Health", 1, help="ONLINE, DEGRADED (red or yellow when not healthy)"),
    Column("capacity", "Cap", 4, True, help="space used, in %; yellow from 80 %"),
    Column("read", "Read", 2, True, help="bytes read per second over the last interval"),
    Column("write", "Write", 2, True, help="bytes written per second over the last interval"),
    Column("scan", "Scrub", 3, help="progress and ETA of a running scrub or resilver, "
                                    "else how long ago the last one ended"),
    Column("allocated", "Alloc", 5, True, help="space allocated"),
    Column("size", "Size", 6, True, help="the pool's size"),
    Column("free", "Free", 7, True, help="space free"),
    Column("fragmentation", "Frag", 8, True, help="free-space fragmentation"),
    Column("read_ops", "R/s", 9, True, help="read operations per second"),
    Column("write_ops", "W/s", 9, True, help="write operations per second"),
    Column("dedup", "Dedup", 10, True, help="deduplication ratio"),
)
VDEV_COLUMNS = (
    Column("name", "Vdev", 0, help="the pool, its mirrors/raidz/draid groups and devices; "
                                   "then dedup, special, logs, cache and spares"),
    Column("state", "State", 1, help="ONLINE, DEGRADED, FAULTED ...; `*`: resilvering"),
    Column("errors", "R/W/Ck err", 2, True, help="read, write and checksum error counts"),
    Column("read", "Read", 3, True, help="bytes read per second"),
    Column("write", "Write", 3, True, help="bytes written per second"),
    Column("history", "History", 4, help="bandwidth over the last intervals"),
    Column("read_ops", "R/s", 5, True, help="read operations per second"),
    Column("write_ops", "W/s", 5, True, help="write operations per second"),
    Column("read_wait", "R wait", 6, True, help="mean total wait of a read"),
    Column("write_wait", "W wait", 6, True, help="mean total wait of a write"),
    Column("disk_wait", "Disk r/w", 7, True, help="of which waiting on the disk, read/write"),
)
DATASET_COLUMNS = (
    Column("name", "Dataset", 0, help="the dataset, under its parent"),
    Column("used", "Used", 1, True, help="space used, children included"),
    Column("available", "Avail", 2, True, help="space available"),
    Column("compression", "Compress", 3, help="the compression property (yellow: off)"),
    Column("recordsize", "Recsize", 4, True, help="record size (volblocksize of a volume)"),
    Column("ratio", "Ratio", 5, True, help="compression ratio achieved"),
    Column("atime", "Atime", 6, help="access-time updates"),
    Column("xattr", "Xattr", 6, help="extended attributes: sa or dir"),
    Column("referenced", "Refer", 7, True, help="data referenced by this dataset alone"),
    Column("mountpoint", "Mountpoint", 8, help="where it is mounted"),
)


def _health_style(state: str) -> str:
    if state in BAD_STATES:
        return "text-error"
    if state in WARN_STATES:
        return "text-warning"
    if state in ("ONLINE", "AVAIL"):
        return "text-success"
    return ""


def _size(value: int | None) -> str:
    return human_bytes(value) if value is not None else "-"


def scan_cell(scan: Scan | None, now: float) -> Cell:
    """The scrub column: progress while it runs, else how long ago the last one ended."""
    if scan is None:
        return Cell("never", "text-warning")
    if scan.state == "scanning":
        eta = f" {human_duration(scan.eta_seconds)}" if scan.eta_seconds is not None else ""
        percent = f" {scan.percent:.1f}%" if scan.percent is not None else ""
        return Cell(f"{scan.function}{percent}{eta}", "text-accent")
    if scan.state == "paused":
        percent = f" {scan.percent:.0f}%" if scan.percent is not None else ""
        return Cell(f"{scan.function} paused{percent}", "text-warning")
    ago = f" {human_duration(now - scan.ended)} ago" if scan.ended else ""
    if scan.state == "canceled":
        return Cell(f"{scan.function} canceled{ago}", "text-warning")
    errors = scan.errors or 0
    return Cell(f"{'done' if scan.function == 'scrub' else scan.function}{ago}"
                + (f", {errors} err" if errors else ""), "text-error" if errors else "")


def pool_row(pool: Pool, io: IostatRow | None, now: float) -> Row:
    return {
        "name": Cell(pool.name, "bold"),
        "health": Cell(pool.health, _health_style(pool.health)),
        "capacity": Cell(f"{pool.capacity}%" if pool.capacity is not None else "-",
                         "text-warning" if (pool.capacity or 0) >= 80 else "", True),
        "read": Cell(human_rate(io.read_bytes) if io else "-", right=True),
        "write": Cell(human_rate(io.write_bytes) if io else "-", right=True),
        "scan": scan_cell(pool.scan, now),
        "allocated": Cell(_size(pool.allocated), right=True),
        "size": Cell(_size(pool.size), right=True),
        "free": Cell(_size(pool.free), right=True),
        "fragmentation": Cell(f"{pool.fragmentation}%" if pool.fragmentation is not None
                              else "-", right=True),
        "read_ops": Cell(str(io.read_ops) if io else "-", right=True),
        "write_ops": Cell(str(io.write_ops) if io else "-", right=True),
        "dedup": Cell(f"{pool.dedup_ratio:.2f}x" if pool.dedup_ratio is not None else "-",
                      right=True),
    }


def short_name(vdev: Vdev) -> str:
    """Leaves by their last path component (by-id names are long)."""
    name = vdev.name
    if vdev.is_leaf and name.startswith("/"):
        name = name.rsplit("/", 1)[-1]
    return name


def vdev_rows(pool: Pool, io: Mapping[str, IostatRow] | None,
              history: Callable[[str], list[int]]) -> dict[str, Row]:
    """One row per vdev of `pool`, keyed ``POOL/NAME``, in tree order."""
    rows: dict[str, Row] = {}
    for vdev in pool.vdevs:
        key = f"{pool.name}\0{vdev.name}"
        if vdev.kind == "group":
            rows[key] = {"name": Cell(vdev.name, "dim")}
            continue
        row = (io or {}).get(vdev.name)
        errors = vdev.errors
        counts = "/".join("-" if n is None else str(n) for n in
                          (vdev.read_errors, vdev.write_errors, vdev.checksum_errors))
        disk = "-"
        if row and (row.disk_wait_read is not None or row.disk_wait_write is not None):
            disk = (f"{human_nanoseconds(row.disk_wait_read)}/"
                    f"{human_nanoseconds(row.disk_wait_write)}")
        state_text = vdev.state + (" *" if "resilvering" in vdev.note else "")
        rows[key] = {
            "name": Cell(short_name(vdev), "bold" if vdev.kind == "pool" else ""),
            "state": Cell(state_text, _health_style(vdev.state)),
            "errors": Cell(counts if vdev.read_errors is not None else "",
                           "text-error" if errors else "", True),
            "read": Cell(human_rate(row.read_bytes) if row else "-", right=True),
            "write": Cell(human_rate(row.write_bytes) if row else "-", right=True),
            "history": Cell(sparkline(history(vdev.name), SPARK_WIDTH) if row else "",
                            "text-accent"),
            "read_ops": Cell(str(row.read_ops) if row else "-", right=True),
            "write_ops": Cell(str(row.write_ops) if row else "-", right=True),
            "read_wait": Cell(human_nanoseconds(row.total_wait_read) if row else "-",
                              right=True),
            "write_wait": Cell(human_nanoseconds(row.total_wait_write) if row else "-",
                               right=True),
            "disk_wait": Cell(disk, right=True),
        }
    return rows


def dataset_row(dataset: Dataset) -> Row:
    ratio = f"{dataset.compress_ratio:.2f}x" if dataset.compress_ratio is not None else "-"
    record = dataset.recordsize if dataset.recordsize is not None else dataset.volblocksize
    return {
        "name": Cell(dataset.name.rsplit("/", 1)[-1], "" if "/" in dataset.name else "bold"),
        "used": Cell(_size(dataset.used), right=True),
        "available": Cell(_size(dataset.available), right=True),
        "compression": Cell(dataset.compression or "-",
                            "text-warning" if dataset.compression == "off" else ""),
        "recordsize": Cell(_size(record).replace(".0 ", " ") if record else "-", right=True),
        "ratio": Cell(ratio, right=True),
        "atime": Cell(dataset.atime or "-"),
        "xattr": Cell(dataset.xattr or "-"),
        "referenced": Cell(_size(dataset.referenced), right=True),
        "mountpoint": Cell(dataset.mountpoint or "-"),
    }


def scan_line(pool: Pool, now: float) -> str:
    """The line under the pools: the highlighted pool's scan in full."""
    scan = pool.scan
    if scan is None:
        return f"{pool.name}: never scrubbed (s starts a scrub)"
    started = f", started {time.strftime('%b %d %H:%M', time.localtime(scan.started))}" \
        if scan.started else ""
    if scan.state in ("scanning", "paused"):
        parts = [f"{pool.name}: {scan.function} "
                 + ("paused" if scan.state == "paused" else "in progress")]
        if scan.percent is not None:
            parts.append(f"{scan.percent:.2f}% done")
        if scan.issued is not None and scan.total:
            parts.append(f"{human_bytes(scan.issued)} of {human_bytes(scan.total)}")
        if scan.state == "scanning":
            parts.append(human_rate(scan.rate) if scan.rate else "rate -")
            parts.append(f"ETA {human_duration(scan.eta_seconds)}"
                         if scan.eta_seconds is not None else "no ETA yet")
        if scan.repaired is not None:
            verb = "resilvered" if scan.function == "resilver" else "repaired"
            parts.append(f"{human_bytes(scan.repaired)} {verb}")
        return ", ".join(parts) + started
    when = time.strftime("%b %d %H:%M", time.localtime(scan.ended)) if scan.ended else "?"
    ago = f" ({human_duration(now - scan.ended)} ago)" if scan.ended else ""
    if scan.state == "canceled":
        return f"{pool.name}: last {scan.function} canceled {when}{ago}"
    took = f" in {human_duration(scan.duration_seconds)}" \
        if scan.duration_seconds is not None else ""
    repaired = f", {human_bytes(scan.repaired)} repaired" if scan.repaired else ""
    return (f"{pool.name}: last {scan.function} finished {when}{ago}{took}, "
            f"{scan.errors or 0} errors{repaired}")
