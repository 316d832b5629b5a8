"""What the ZFS pane shows, as plain data: columns with priorities and keyed rows of cells.

No Textual here: the pane turns `Cell`s into styled text (``style`` names a theme
variable) and keeps only the columns that fit, dropping the least important first, so
a narrow terminal loses whole columns, never half a word or a unit.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from zsn.format import human_bytes, human_duration, human_nanoseconds, human_rate, sparkline
from zsn.zfs.model import Dataset, IostatRow, Pool, Scan, Vdev

SPARK_WIDTH = 12
INDENT = "\u00a0\u00a0"
"""Tree depth: no-break spaces, which table cells keep (leading spaces are trimmed)."""
BAD_STATES = ("FAULTED", "UNAVAIL", "REMOVED", "SUSPENDED")
WARN_STATES = ("DEGRADED", "OFFLINE")


@dataclass(frozen=True)
class Column:
    key: str
    label: str
    width: int
    priority: int
    """Lower is more important: columns are dropped from the highest number down."""
    right: bool = False


@dataclass(frozen=True)
class Cell:
    text: str
    style: str = ""
    """A theme variable (``text-error`` ...) or empty."""
    right: bool = False


Row = dict[str, Cell]

POOL_COLUMNS = (
    Column("name", "Pool", 12, 0), Column("health", "Health", 8, 1),
    Column("capacity", "Cap", 4, 4, True), Column("read", "Read", 11, 2, True),
    Column("write", "Write", 11, 2, True), Column("scan", "Scrub", 22, 3),
    Column("allocated", "Alloc", 9, 5, True), Column("size", "Size", 9, 6, True),
    Column("free", "Free", 9, 7, True), Column("fragmentation", "Frag", 4, 8, True),
    Column("read_ops", "R/s", 6, 9, True), Column("write_ops", "W/s", 6, 9, True),
    Column("dedup", "Dedup", 5, 10, True),
)
VDEV_COLUMNS = (
    Column("name", "Vdev", 24, 0), Column("state", "State", 8, 1),
    Column("errors", "R/W/Ck err", 10, 2, True), Column("read", "Read", 11, 3, True),
    Column("write", "Write", 11, 3, True), Column("history", "History", SPARK_WIDTH, 4),
    Column("read_ops", "R/s", 6, 5, True), Column("write_ops", "W/s", 6, 5, True),
    Column("read_wait", "R wait", 7, 6, True), Column("write_wait", "W wait", 7, 6, True),
    Column("disk_wait", "Disk r/w", 15, 7, True),
)
DATASET_COLUMNS = (
    Column("name", "Dataset", 22, 0), Column("used", "Used", 9, 1, True),
    Column("available", "Avail", 9, 2, True), Column("compression", "Compress", 8, 3),
    Column("recordsize", "Recsize", 7, 4, True), Column("ratio", "Ratio", 5, 5, True),
    Column("atime", "Atime", 5, 6), Column("xattr", "Xattr", 5, 6),
    Column("referenced", "Refer", 9, 7, True), Column("mountpoint", "Mountpoint", 16, 8),
)


def fit_columns(columns: tuple[Column, ...], width: int, widths: Mapping[str, int] | None = None,
                padding: int = 2) -> list[Column]:
    """The columns that fit in `width` cells, in their order: the least important
    (highest priority number, then the rightmost) go first. `widths` are the widest
    cells each column holds now (else each column's usual width)."""
    kept = list(columns)

    def need(column: Column) -> int:
        return (widths or {}).get(column.key, column.width) + padding

    while len(kept) > 1 and sum(need(c) for c in kept) > width:
        worst = max(kept, key=lambda c: (c.priority, kept.index(c)))
        kept.remove(worst)
    return kept


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
    """Leaves by their last path component (by-id names are long); the tree shows depth."""
    name = vdev.name
    if vdev.is_leaf and name.startswith("/"):
        name = name.rsplit("/", 1)[-1]
    return INDENT * vdev.depth + name


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
    depth = dataset.name.count("/")
    return {
        "name": Cell(INDENT * depth + dataset.name.rsplit("/", 1)[-1],
                     "bold" if not depth else ""),
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
