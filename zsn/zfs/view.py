"""What the ZFS pane shows, as plain data: columns with priorities and keyed rows of cells.

No Textual here: the cells and columns are `zsn.view`'s, which the pane's table draws,
keeping only the columns that fit and dropping the least important first, so a narrow
terminal loses whole columns, never half a word or a unit. Tree depth (vdevs, child
datasets) is the row's, not the text's: the table draws the guides.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from zsn.format import (
    RATE_WIDTH,
    SIZE_WIDTH,
    human_bytes,
    human_duration,
    human_nanoseconds,
    human_rate,
    sparkline,
)
from zsn.view import Cell, Column, Row, row_of
from zsn.zfs.disk_health import DiskReading, DiskReport, Health, health
from zsn.zfs.model import Dataset, IostatRow, Pool, Scan, Vdev
from zsn.zfs.scrub_history import ScrubRun
from zsn.zfs.scrub_history import trend as scrub_trend
from zsn.zfs.snapshots import Snapshot

SPARK_WIDTH = 12
SPARK_SHORT = 6
"""The trends' width when the terminal is narrow: the last six intervals."""
BAD_STATES = ("FAULTED", "UNAVAIL", "REMOVED", "SUSPENDED")
WARN_STATES = ("DEGRADED", "OFFLINE")


Cells = dict[str, Cell]
"""A row's cells by column key (`zsn.view.row_of` puts them in the columns' order)."""

POOL_COLUMNS = (
    Column("name", "Pool", 0, help="the pool"),
    Column("health", "Health", 1, help="ONLINE, DEGRADED (red or yellow when not healthy)"),
    Column("capacity", "Cap", 4, align="right", min_width=4,
           help="space used, in %; yellow from 80 %"),
    Column("read", "Read", 2, align="right", min_width=RATE_WIDTH,
           help="bytes read per second over the last interval"),
    Column("write", "Write", 2, align="right", min_width=RATE_WIDTH,
           help="bytes written per second over the last interval"),
    Column("scan", "Scrub", 3, help="progress and ETA of a running scrub or resilver, "
                                    "else how long ago the last one ended"),
    # Free before size and allocated when narrow: with Cap, what an admin asks first.
    Column("allocated", "Alloc", 7, align="right", min_width=SIZE_WIDTH,
           help="space allocated"),
    Column("size", "Size", 6, align="right", min_width=SIZE_WIDTH, help="the pool's size"),
    Column("free", "Free", 5, align="right", min_width=SIZE_WIDTH, help="space free"),
    Column("fragmentation", "Frag", 8, align="right", min_width=4,
           help="free-space fragmentation"),
    Column("read_ops", "R/s", 9, align="right", help="read operations per second"),
    Column("write_ops", "W/s", 9, align="right", help="write operations per second"),
    Column("dedup", "Dedup", 10, align="right", help="deduplication ratio"),
)
VDEV_COLUMNS = (
    Column("name", "Vdev", 0, help="the pool, its mirrors/raidz/draid groups and devices; "
                                   "then dedup, special, logs, cache and spares",
           truncate=True),
    Column("state", "State", 1, help="ONLINE, DEGRADED, FAULTED ...; `*`: resilvering"),
    Column("errors", "R/W/Ck err", 2, align="right",
           help="read, write and checksum error counts"),
    Column("disk", "Disk", 2, min_width=6,
           help="the disk's SMART: ok and its temperature, warn (signs of failing, heat, "
                "wear, growing counts), FAIL, asleep (not woken to read it), ? "
                "(unreadable); on a group: how many of its disks are not ok"),
    Column("read", "Read", 3, align="right", min_width=RATE_WIDTH,
           help="bytes read per second"),
    Column("write", "Write", 3, align="right", min_width=RATE_WIDTH,
           help="bytes written per second"),
    Column("read_trend", "Reads", 4, help="read bandwidth over the last intervals (a scrub "
                                          "or resilver reads its sources)"),
    Column("write_trend", "Writes", 4, help="write bandwidth over the last intervals (a "
                                            "resilver writes the new device)"),
    Column("read_ops", "R/s", 5, align="right", help="read operations per second"),
    Column("write_ops", "W/s", 5, align="right", help="write operations per second"),
    Column("wait", "Wait r/w", 6, align="right", help="mean total wait of a read / a write"),
    Column("disk_wait", "Disk r/w", 7, align="right",
           help="of which waiting on the disk, read/write"),
)
DATASET_COLUMNS = (
    Column("name", "Dataset", 0, help="the dataset, under its parent", truncate=True),
    Column("used", "Used", 1, align="right", min_width=SIZE_WIDTH,
           help="space used, children included"),
    Column("available", "Avail", 2, align="right", min_width=SIZE_WIDTH,
           help="space available"),
    Column("compression", "Compress", 3, help="the compression property (yellow: off)"),
    Column("recordsize", "Recsize", 4, align="right",
           help="record size (volblocksize of a volume)"),
    Column("ratio", "Ratio", 5, align="right", help="compression ratio achieved"),
    Column("atime", "Atime", 6, help="access-time updates"),
    Column("xattr", "Xattr", 6, help="extended attributes: sa or dir"),
    Column("referenced", "Refer", 7, align="right", min_width=SIZE_WIDTH,
           help="data referenced by this dataset alone"),
    Column("mountpoint", "Mountpoint", 8, help="where it is mounted", truncate=True),
)


def _health_tone(state: str) -> str:
    if state in BAD_STATES:
        return "bad"
    if state in WARN_STATES:
        return "warn"
    if state in ("ONLINE", "AVAIL"):
        return "good"
    return ""


def _size(value: int | None) -> str:
    return human_bytes(value) if value is not None else "-"


def eta(scan: Scan) -> tuple[int | None, bool]:
    """Seconds until a running scan ends, and whether zsn computed it: zpool prints no
    estimate below 10 MiB/s issued, but one follows from what is left and the rate."""
    if scan.eta_seconds is not None:
        return scan.eta_seconds, False
    if scan.rate and scan.total is not None and scan.issued is not None \
            and scan.total >= scan.issued:
        return round((scan.total - scan.issued) / scan.rate), True
    return None, False


def eta_text(scan: Scan) -> str | None:
    seconds, computed = eta(scan)
    if seconds is None:
        return None
    return ("~" if computed else "") + human_duration(seconds)


def scan_cell(scan: Scan | None, now: float) -> Cell:
    """The scrub column: progress while it runs, else how long ago the last one ended."""
    if scan is None:
        return Cell("never", "warn")
    if scan.state == "scanning":
        left = eta_text(scan)
        percent = f" {scan.percent:.1f}%" if scan.percent is not None else ""
        return Cell(f"{scan.function}{percent}" + (f" {left}" if left else ""), "accent",
                    f"{scan.function}{percent}")
    if scan.state == "unknown":
        return Cell("?", "warn")
    if scan.state == "paused":
        percent = f" {scan.percent:.0f}%" if scan.percent is not None else ""
        return Cell(f"{scan.function} paused{percent}", "warn")
    ago = f" {human_duration(now - scan.ended)} ago" if scan.ended else ""
    if scan.state == "canceled":
        return Cell(f"{scan.function} canceled{ago}", "warn")
    errors = scan.errors or 0
    return Cell(f"{'done' if scan.function == 'scrub' else scan.function}{ago}"
                + (f", {errors} err" if errors else ""), "bad" if errors else "")


def pool_cells(pool: Pool, io: IostatRow | None, now: float) -> Cells:
    return {
        "name": Cell(pool.name, "bold"),
        "health": Cell(pool.health, _health_tone(pool.health)),
        "capacity": Cell(f"{pool.capacity}%" if pool.capacity is not None else "-",
                         "warn" if (pool.capacity or 0) >= 80 else ""),
        "read": Cell(human_rate(io.read_bytes) if io else "-"),
        "write": Cell(human_rate(io.write_bytes) if io else "-"),
        "scan": scan_cell(pool.scan, now),
        "allocated": Cell(_size(pool.allocated)),
        "size": Cell(_size(pool.size)),
        "free": Cell(_size(pool.free)),
        "fragmentation": Cell(f"{pool.fragmentation}%" if pool.fragmentation is not None
                              else "-"),
        "read_ops": Cell(str(io.read_ops) if io else "-"),
        "write_ops": Cell(str(io.write_ops) if io else "-"),
        "dedup": Cell(f"{pool.dedup_ratio:.2f}x" if pool.dedup_ratio is not None else "-"),
    }


def short_name(vdev: Vdev) -> str:
    """Leaves by their last path component (by-id names are long)."""
    name = vdev.name
    if vdev.is_leaf and name.startswith("/"):
        name = name.rsplit("/", 1)[-1]
    return name


def trend(samples: list[int]) -> Cell:
    """A bandwidth trend: the last intervals as a sparkline, each scaled to the
    highest of them (the rate beside it says how high that is)."""
    return Cell(sparkline(samples, SPARK_WIDTH), "accent",
                short=sparkline(samples, SPARK_SHORT))


def _pair(first: int | None, second: int | None) -> str:
    """Two latencies as ``read/write``; ``-`` when neither was measured."""
    if first is None and second is None:
        return "-"
    return f"{human_nanoseconds(first)}/{human_nanoseconds(second)}"


def vdev_cells(pool: Pool, io: Mapping[str, IostatRow] | None,
               reads: Callable[[str], list[int]],
               writes: Callable[[str], list[int]],
               disks: DiskReading | None = None) -> dict[str, Cells]:
    """Each vdev's cells, keyed ``POOL\0NAME``, in tree order."""
    rows: dict[str, Cells] = {}
    health = disk_column(pool, disks) if disks is not None else {}
    for vdev in pool.vdevs:
        key = f"{pool.name}\0{vdev.name}"
        if vdev.kind == "group":
            rows[key] = {"name": Cell(vdev.name, "muted")}
            continue
        row = (io or {}).get(vdev.name)
        errors = vdev.errors
        counts = "/".join("-" if n is None else str(n) for n in
                          (vdev.read_errors, vdev.write_errors, vdev.checksum_errors))
        state_text = vdev.state + (" *" if "resilvering" in vdev.note else "")
        rows[key] = {
            "name": Cell(short_name(vdev), "bold" if vdev.kind == "pool" else ""),
            "state": Cell(state_text, _health_tone(vdev.state)),
            "errors": Cell(counts if vdev.read_errors is not None else "",
                           "bad" if errors else ""),
            "disk": health.get(vdev.name, Cell("")),
            "read": Cell(human_rate(row.read_bytes) if row else "-"),
            "write": Cell(human_rate(row.write_bytes) if row else "-"),
            "read_trend": trend(reads(vdev.name)) if row else Cell(""),
            "write_trend": trend(writes(vdev.name)) if row else Cell(""),
            "read_ops": Cell(str(row.read_ops) if row else "-"),
            "write_ops": Cell(str(row.write_ops) if row else "-"),
            "wait": Cell(_pair(row.total_wait_read, row.total_wait_write) if row else "-"),
            "disk_wait": Cell(_pair(row.disk_wait_read, row.disk_wait_write) if row else "-"),
        }
    return rows


def dataset_cells(dataset: Dataset) -> Cells:
    ratio = f"{dataset.compress_ratio:.2f}x" if dataset.compress_ratio is not None else "-"
    record = dataset.recordsize if dataset.recordsize is not None else dataset.volblocksize
    return {
        "name": Cell(dataset.name.rsplit("/", 1)[-1], "" if "/" in dataset.name else "bold"),
        "used": Cell(_size(dataset.used)),
        "available": Cell(_size(dataset.available)),
        "compression": Cell(dataset.compression or "-",
                            "warn" if dataset.compression == "off" else ""),
        "recordsize": Cell(_size(record).replace(".0 ", " ") if record else "-"),
        "ratio": Cell(ratio),
        "atime": Cell(dataset.atime or "-"),
        "xattr": Cell(dataset.xattr or "-"),
        "referenced": Cell(_size(dataset.referenced)),
        "mountpoint": Cell(dataset.mountpoint or "-"),
    }


def scan_parts(pool: Pool, now: float) -> list[tuple[str, int]]:
    """The highlighted pool's scan in full, as (text, priority) parts: the line under
    the pools shows those that fit, dropping the least important (highest number,
    then the rightmost) whole, never a number without its unit."""
    scan = pool.scan
    if scan is None:
        return [(f"{pool.name}: never scrubbed", 0), ("(s starts a scrub)", 3)]
    if scan.state == "unknown":
        return [(f"{pool.name}: scan not understood:", 0), (scan.text, 1)]
    started = [(f"started {time.strftime('%b %d %H:%M', time.localtime(scan.started))}", 5)] \
        if scan.started else []
    if scan.state in ("scanning", "paused"):
        parts = [(f"{pool.name}: {scan.function} "
                  + ("paused" if scan.state == "paused" else "in progress"), 0)]
        if scan.percent is not None:
            parts.append((f"{scan.percent:.2f}% done", 1))
        if scan.issued is not None and scan.total:
            parts.append((f"{human_bytes(scan.issued)} of {human_bytes(scan.total)}", 4))
        if scan.state == "scanning":
            parts.append((f"at {human_rate(scan.rate)}" if scan.rate else "rate -", 3))
            left = eta_text(scan)
            parts.append((f"ETA {left}" if left else "no ETA yet", 1))
        if scan.repaired is not None:
            verb = "resilvered" if scan.function == "resilver" else "repaired"
            parts.append((f"{human_bytes(scan.repaired)} {verb}", 2))
        return parts + started
    when = time.strftime("%b %d %H:%M", time.localtime(scan.ended)) if scan.ended else "?"
    ago = [(f"({human_duration(now - scan.ended)} ago)", 2)] if scan.ended else []
    if scan.state == "canceled":
        return [(f"{pool.name}: last {scan.function} canceled {when}", 0), *ago]
    took = [(f"in {human_duration(scan.duration_seconds)}", 4)] \
        if scan.duration_seconds is not None else []
    repaired = [(f"{human_bytes(scan.repaired)} repaired", 3)] if scan.repaired else []
    return [(f"{pool.name}: last {scan.function} finished {when}", 0), *ago, *took,
            (f"{scan.errors or 0} errors", 1), *repaired]


def fit_parts(parts: list[tuple[str, int]], width: int) -> str:
    """The parts joined with ", " (a space before a bracket), dropping whole parts
    until the line fits `width`; the first part is always kept."""
    kept = list(parts)

    def joined() -> str:
        line = kept[0][0] if kept else ""
        for text, _ in kept[1:]:
            line += (" " if text.startswith("(") else ", ") + text
        return line

    while len(kept) > 1 and len(joined()) > width:
        worst = max(range(1, len(kept)), key=lambda i: (kept[i][1], i))
        del kept[worst]
    return joined()


def wrap_parts(parts: list[tuple[str, int]], width: int, lines: int) -> list[str]:
    """The parts on at most `lines` lines of `width`, each part whole on one line,
    dropping the least important parts (as `fit_parts`) until they fit."""
    kept = list(parts)

    def wrapped() -> list[str]:
        out: list[str] = []
        for text, _ in kept:
            if out and len(out[-1]) + 2 + len(text) <= width:
                out[-1] += (" " if text.startswith("(") else ", ") + text
            else:
                out.append(text if not out else "  " + text)
        return out

    while len(kept) > 1 and (len(wrapped()) > lines or any(len(x) > width for x in wrapped())):
        worst = max(range(1, len(kept)), key=lambda i: (kept[i][1], i))
        del kept[worst]
    return wrapped()


def scan_lines(pool: Pool, now: float, width: int, lines: int = 2) -> list[str]:
    """The box under the pools: the highlighted pool's scan on up to `lines` lines."""
    return wrap_parts(scan_parts(pool, now), width, lines)


def scan_line(pool: Pool, now: float, width: int = 1000) -> str:
    """The line under the pools: the highlighted pool's scan, as much as fits."""
    return fit_parts(scan_parts(pool, now), width)


def pool_rows(pools: Iterable[Pool], io_of: Callable[[str], Mapping[str, IostatRow]],
              now: float) -> list[Row]:
    """The pools table: `io_of(pool)` is the pool's latest iostat rows by vdev name."""
    return [row_of(pool.name, POOL_COLUMNS, pool_cells(pool, io_of(pool.name).get(pool.name),
                                                       now)) for pool in pools]


def vdev_rows(pool: Pool, io: Mapping[str, IostatRow] | None,
              reads: Callable[[str], list[int]],
              writes: Callable[[str], list[int]],
              disks: DiskReading | None = None) -> list[Row]:
    """The vdev tree of `pool`: one row per vdev in tree order, indented by depth;
    `reads`/`writes` give a vdev's recent bandwidth for its trend, `disks` its disks'
    health."""
    depth = {f"{pool.name}\0{vdev.name}": vdev.depth for vdev in pool.vdevs}
    return [row_of(key, VDEV_COLUMNS, cells, depth=depth.get(key, 0))
            for key, cells in vdev_cells(pool, io, reads, writes, disks).items()]


# -- disks -------------------------------------------------------------------------------
LEVEL_ORDER = ("failing", "warning", "unreadable", "asleep", "unread", "ok", "none")
"""From the worst: the level a leaf on several disks shows."""


def leaf_health(reports: Sequence[DiskReport], judged: Sequence[Health] | None = None) -> Cell:
    """A leaf vdev's disk column: its worst disk's health in a word (`judged`: the
    reports' health, judged already)."""
    if judged is None:
        judged = [health(report) for report in reports]
    if not judged:
        return Cell("")
    worst = min(judged, key=lambda found: LEVEL_ORDER.index(found.level))
    if worst.level == "failing":
        return Cell("FAIL", "bad")
    if worst.level == "warning":
        return Cell("warn", "warn")
    if worst.level == "unreadable":
        return Cell("?", "warn")
    if worst.level == "asleep":
        return Cell("asleep", "muted")
    if worst.level == "unread":
        return Cell("-", "muted")
    if worst.level == "none":
        return Cell("")
    temperatures = [r.smart.temperature for r in reports
                    if r.smart is not None and r.smart.temperature is not None]
    return Cell(f"ok {max(temperatures)}°" if temperatures else "ok", "good", "ok")


def disk_column(pool: Pool, reading: DiskReading) -> dict[str, Cell]:
    """The disk column of every vdev of `pool`: each leaf's health; on a group (the
    pool, a mirror ...) how many disks under it are failing or warn."""
    cells: dict[str, Cell] = {}
    levels: dict[str, list[str]] = {}
    for vdev in pool.vdevs:
        if not vdev.is_leaf:
            continue
        reports = reading.of_leaf(vdev.name)
        verdicts = [reading.health_of(report) for report in reports]
        cells[vdev.name] = leaf_health(reports, verdicts)
        judged = [verdict.level for verdict in verdicts]
        parent = vdev.parent
        while parent is not None:
            levels.setdefault(parent, []).extend(judged)
            parent = next((v.parent for v in pool.vdevs if v.name == parent), None)
    for name, under in levels.items():
        failing, warning = under.count("failing"), under.count("warning")
        if failing:
            cells[name] = Cell(f"{failing} FAIL", "bad")
        elif warning:
            cells[name] = Cell(f"{warning} warn", "warn")
    return cells


def disk_lines(vdev: Vdev, reading: DiskReading, now: float) -> list[str]:
    """The box under the vdev tree: the highlighted leaf's disks, most important first
    (health, what is wrong, what the disk is, the way down to it, its counts), so a
    small terminal shows the verdict and the rest scrolls (outside text: the box shows
    it through `zsn.terminal.safe`)."""
    chain = reading.chain(vdev.name)
    if chain is None:
        return [f"{short_name(vdev)}: not mapped yet"] if vdev.is_leaf else []
    if not chain.disks:
        return [f"{short_name(vdev)}: {chain.note or 'no disk found under it'}"]
    lines: list[str] = []
    for report in reading.of_leaf(vdev.name):
        lines += _disk_lines(report, now)
    way = " → ".join(layer.label for layer in chain.layers)
    by_id = [r.disk.by_id.rsplit("/", 1)[-1] for r in reading.of_leaf(vdev.name)
             if r.disk.by_id]
    return [*lines, way + (f" · {', '.join(by_id)}" if by_id else "")]


def _disk_lines(report: DiskReport, now: float) -> list[str]:
    disk, smart = report.disk, report.smart
    judged = health(report)
    head = [disk.name, f"SMART {judged.level}"]
    if smart is not None:
        if smart.temperature is not None:
            head.append(f"{smart.temperature} °C")
        if smart.power_on_hours is not None:
            head.append(f"{smart.power_on_hours} h on")
    when = report.read_at
    if when is not None:
        head.append(f"read {human_duration(max(0.0, now - when))} ago")
    lines = [" · ".join(head)]
    lines += [f"  ! {reason}" for reason in judged.reasons]
    model = (smart.model if smart else None) or disk.model or "?"
    serial = (smart.serial if smart else None) or disk.serial
    kind = "HDD" if disk.rotational else "SSD" if disk.rotational is False else ""
    rpm = smart.rotation_rate if smart and smart.rotation_rate else None
    identity = [model, f"serial {serial}" if serial else None,
                human_bytes(disk.capacity) if disk.capacity else None,
                " ".join(part for part in (disk.transport, kind,
                                          f"{rpm} rpm" if rpm else None) if part)]
    lines.append("  " + " · ".join(part for part in identity if part))
    if smart is not None:
        counts = [f"{label} {value}" for value, label in (
            (smart.reallocated, "realloc"), (smart.pending, "pending"),
            (smart.offline_uncorrectable, "uncorr"), (smart.crc_errors, "CRC"),
            (smart.percentage_used, "wear %"), (smart.available_spare, "spare %"),
            (smart.media_errors, "media err"), (smart.grown_defects, "defects"),
            (smart.uncorrected_errors, "uncorrected")) if value is not None]
        if counts:
            lines.append("  " + " · ".join(counts))
    return lines


def dataset_rows(datasets: Iterable[Dataset]) -> list[Row]:
    """The datasets table, each under its parent."""
    return [row_of(dataset.name, DATASET_COLUMNS, dataset_cells(dataset),
                   depth=dataset.name.count("/")) for dataset in datasets]


# -- snapshots -------------------------------------------------------------------------
SNAPSHOT_COLUMNS = (
    Column("name", "Snapshot", 0, help="the snapshot (DATASET@NAME)", truncate=True),
    Column("created", "Created", 1, help="when it was taken (local time)"),
    Column("used", "Used", 2, align="right",
           help="space only this snapshot holds (freed if it alone went)"),
    Column("referenced", "Refer", 3, align="right", help="data the snapshot refers to"),
    Column("holds", "Holds", 4, align="right",
           help="user holds (zfs hold): a held snapshot cannot be destroyed"),
)


def snapshot_row(snapshot: Snapshot, shown_dataset: str | None = None) -> Cells:
    """A snapshot's cells; its name alone when the table shows one dataset's."""
    name = f"@{snapshot.name}" if snapshot.dataset == shown_dataset else snapshot.full_name
    created = time.strftime("%Y-%m-%d %H:%M", time.localtime(snapshot.created)) \
        if snapshot.created is not None else "-"
    return {
        "name": Cell(name),
        "created": Cell(created),
        "used": Cell(_size(snapshot.used)),
        "referenced": Cell(_size(snapshot.referenced)),
        "holds": Cell(str(snapshot.holds) if snapshot.holds else "-",
                      "accent" if snapshot.holds else ""),
    }


# -- transfers ---------------------------------------------------------------------------
TRANSFER_COLUMNS = (
    Column("pair", "Source → Target", 0, help="what is sent where; a replication job's "
                                              "rows start with its name", truncate=True,
           min_width=30),
    Column("state", "State", 1, help="running, ok, failed, interrupted (run it again: "
                                     "it resumes); a job: stalled (nothing moved for 5 "
                                     "minutes), late (no success for two periods)"),
    Column("progress", "Progress", 2, help="bytes moved of zfs send's estimate; a job "
                                           "not running: what its next run sends (zfs "
                                           "send -nvP from its base)"),
    Column("last_ok", "Last ok", 2, align="right",
           help="how long ago the last successful run (a job's) or send ended"),
    Column("lag", "Lag", 4, align="right",
           help="a job: how old the newest snapshot on the target is"),
    Column("rate", "Rate", 3, align="right",
           help="over the last seconds while running; the average once done"),
    Column("eta", "ETA/took", 5, align="right", help="time left while running, else how "
                                                     "long it took"),
    Column("via", "Via", 6, help="local (a pipe), ssh or tcp"),
    Column("when", "When", 7, align="right", help="started (running) or ended, how long ago"),
    Column("resumed", "Resumed", 8, help="it went on from an interrupted one"),
)
BAR_WIDTH = 10


def _bar(percent: float) -> str:
    filled = max(0, min(BAR_WIDTH, int(BAR_WIDTH * percent / 100)))
    return "█" * filled + "░" * (BAR_WIDTH - filled)


def transfer_row(record: Mapping[str, Any], now: float) -> Cells:
    """A transfer record (`zsn.zfs.transfers`) as cells: running, or the pair's last."""
    state = str(record.get("state", "?"))
    moved = record.get("bytes") or 0
    estimate = record.get("estimate")
    running = state == "running"
    if running and isinstance(estimate, int | float) and estimate:
        percent = min(99.9, 100.0 * moved / estimate)
        progress = Cell(f"{_bar(percent)} {percent:3.0f}% {human_bytes(moved)}",
                        "accent", short=f"{percent:.0f}% {human_bytes(moved)}")
    else:
        progress = Cell(human_bytes(moved) + (f" of {human_bytes(estimate)}"
                                              if running and estimate else ""))
    rate = record.get("rate")
    if running:
        eta = record.get("eta_seconds")
        timing = human_duration(eta) if isinstance(eta, int | float) else "-"
        when_at = record.get("started")
    else:
        seconds = record.get("seconds")
        timing = human_duration(seconds) if isinstance(seconds, int | float) else "-"
        when_at = record.get("finished") or record.get("updated")
    tone = {"running": "accent", "ok": "good", "failed": "bad", "interrupted": "warn"}
    return {
        "pair": Cell(f"{record['source']} → {record['target']}"),
        "state": Cell(state, tone.get(state, "")),
        "progress": progress,
        "last_ok": Cell(_ago(when_at, now) if state == "ok" else "-"), "lag": Cell("-"),
        "rate": Cell(human_rate(rate) if isinstance(rate, int | float) else "-"),
        "eta": Cell(timing),
        "via": Cell(str(record.get("via") or "-")),
        "when": Cell(f"{human_duration(now - when_at)} ago"
                     if isinstance(when_at, int | float) else "-"),
        "resumed": Cell("yes" if record.get("resumed") else ""),
    }


def _ago(when: object, now: float) -> str:
    return f"{human_duration(max(0.0, now - when))} ago" if isinstance(when, int | float) \
        else "never"


def job_state(job: Mapping[str, Any], now: float) -> Cell:
    """A job's state: stalled, running, late (no success for two periods), its last
    run's outcome, or never run."""
    if job.get("stalled"):
        return Cell("stalled", "bad")
    if job.get("running"):
        return Cell("running", "accent")
    since = job.get("last_success") or job.get("added") or 0
    late = now - since > 2 * job["every_seconds"]
    state = job.get("state")
    if state not in (None, "ok"):
        return Cell(str(state), "bad" if state == "failed" else "warn")
    if late:
        return Cell("late", "warn")
    return Cell("ok", "good") if state == "ok" else Cell("never run", "muted")


def job_cells(job: Mapping[str, Any], running: Mapping[str, Any] | None,
              now: float) -> Cells:
    """A replication job's row: its running transfer's progress, else its proof."""
    behind = job.get("bytes_behind")
    cells = transfer_row(running, now) if running is not None else {
        "progress": Cell("up to date" if behind == 0 else f"{human_bytes(behind)} behind"
                         if isinstance(behind, int) else "-"),
        "rate": Cell("-"), "eta": Cell("-"),
        "via": Cell(str(job.get("via") or "-")),
        "when": Cell(_ago(job.get("last_attempt_end") or job.get("last_attempt"), now)
                     if job.get("last_attempt") else "-"),
        "resumed": Cell("")}
    lag = job.get("lag_seconds")
    return {**cells,
            "pair": Cell(f"{job['name']}: {job['source']} → {job['target']}"),
            "state": job_state(job, now),
            "last_ok": Cell(_ago(job.get("last_success"), now),
                            "" if job.get("last_success") else "warn"),
            "lag": Cell(human_duration(lag) if isinstance(lag, int | float) else "-")}


def transfer_rows(transfers: Mapping[str, Any], now: float,
                  jobs: Sequence[Mapping[str, Any]] = ()) -> list[Row]:
    """The replication jobs first (each with its running transfer, if any), then one
    row per other source and target pair: running transfers, then the other pairs'
    last results, the latest first."""
    rows: dict[str, Cells] = {}
    running = {f"{r['source']}\0{r['target']}": r for r in transfers.get("running", ())}
    taken = set()
    for job in jobs:
        pair = f"{job['source']}\0{job['target']}"
        taken.add(pair)
        rows[f"job\0{job['name']}"] = job_cells(job, running.get(pair), now)
    last = sorted(transfers.get("last", ()), key=lambda r: -(r.get("updated") or 0))
    for record in [*transfers.get("running", ()), *last]:
        key = f"{record['source']}\0{record['target']}"
        if key not in rows and key not in taken:
            rows[key] = transfer_row(record, now)
    return [row_of(key, TRANSFER_COLUMNS, cells) for key, cells in rows.items()]


def jobs_title(jobs: Sequence[Mapping[str, Any]], now: float) -> str:
    """The transfers table's title: the jobs' last errors, when there are any."""
    failed = [job for job in jobs if job.get("error") and job.get("state") != "running"]
    if not failed:
        return "Transfers"
    first = failed[0]
    more = f" (+{len(failed) - 1} more)" if len(failed) > 1 else ""
    return (f"Transfers: job {first['name']} {first.get('state') or 'failed'} "
            f"{_ago(first.get('last_attempt_end') or first.get('last_attempt'), now)}: "
            f"{first['error']}{more}")


# -- policies ----------------------------------------------------------------------------
POLICY_COLUMNS = (
    Column("name", "Dataset / class", 0, help="each dataset a policy covers, under it its "
                                              "classes", truncate=True),
    Column("state", "State", 1, help="ok; late: the newest is older than two periods; "
                                     "none: no snapshot of the class yet"),
    Column("newest", "Newest", 1, align="right", help="how old the newest policy "
                                                       "snapshot of the class is"),
    Column("kept", "Kept", 2, align="right", help="policy snapshots of the class, of how "
                                                  "many the policy keeps"),
    Column("period", "Every", 3, align="right", help="the class's period"),
    Column("policy", "Policy", 4, help="the dataset whose policy covers it, and how",
           truncate=True),
)


def class_state(row: Mapping[str, Any]) -> Cell:
    age = row.get("newest_age_seconds")
    if age is None:
        return Cell("none", "warn")
    if age > 2 * row["period_seconds"]:
        return Cell("late", "bad")
    return Cell("ok", "good")


def policy_rows(protection: Mapping[str, Any]) -> list[Row]:
    """Per covered dataset (the worst of its classes), its classes under it."""
    by_dataset: dict[str, list[Mapping[str, Any]]] = {}
    for row in protection.get("classes", ()):
        by_dataset.setdefault(row["dataset"], []).append(row)
    policies = {p["dataset"]: p for p in protection.get("policies", ())}
    rows = []
    order = {"bad": 0, "warn": 1, "good": 2}
    for dataset, classes in by_dataset.items():
        states = [class_state(c) for c in classes]
        worst = min(states, key=lambda c: order.get(c.tone, 3))
        owner = classes[0]["policy"]
        policy = policies.get(owner, {})
        how = ", ".join(part for part in (
            "recursive" if policy.get("recursive") and owner != dataset else "",
            "prune only" if policy.get("take") is False else "",
            f"{policy.get('prefix')}_*" if policy.get("prefix") not in (None, "zsn") else "")
            if part)
        newest = [c["newest_age_seconds"] for c in classes
                  if c["newest_age_seconds"] is not None]
        rows.append(row_of(dataset, POLICY_COLUMNS, {
            "name": Cell(dataset, "bold"), "state": worst,
            "newest": Cell(human_duration(min(newest)) if newest else "-"),
            "kept": Cell(str(sum(c["count"] for c in classes))),
            "period": Cell(""),
            "policy": Cell(owner + (f" ({how})" if how else ""))}))
        for cls, state in zip(classes, states, strict=True):
            age = cls["newest_age_seconds"]
            rows.append(row_of(f"{dataset}\0{cls['class']}", POLICY_COLUMNS, {
                "name": Cell(cls["class"]), "state": state,
                "newest": Cell(human_duration(age) if age is not None else "-"),
                "kept": Cell(f"{cls['count']} of {cls['keep']}",
                             "warn" if cls["count"] > cls["keep"] else ""),
                "period": Cell(human_duration(cls["period_seconds"])),
                "policy": Cell("")}, depth=1))
    return rows


def last_run_line(protection: Mapping[str, Any], now: float) -> tuple[str, str]:
    """The line over the policies: the last run, and its tone."""
    last = protection.get("last_run")
    if not protection.get("policies"):
        return ("No snapshot policies: zsn zfs policy set DATASET --keep hourly=24,daily=7, "
                "then zsn zfs policy install-timer.", "info")
    if not last:
        return ("No snapshot run yet: zsn zfs policy install-timer runs them (or zsn zfs "
                "snapshots run).", "warning")
    text = (f"Last run {_ago(last.get('finished'), now)}: took {last.get('taken', 0)}, "
            f"destroyed {last.get('destroyed', 0)}")
    errors = last.get("errors") or []
    if errors:
        return (f"{text}; {len(errors)} error{'s' if len(errors) != 1 else ''}: {errors[0]}",
                "error")
    return text + ".", "info"


def snapshot_rows(dataset: str, snapshots: Sequence[Snapshot]) -> list[Row]:
    """`dataset`'s snapshots, the newest first."""
    return [row_of(s.full_name, SNAPSHOT_COLUMNS, snapshot_row(s, dataset))
            for s in reversed(snapshots)]


# -- scrub history ---------------------------------------------------------------------
SCRUB_SPARK = 16
"""Scrubs shown in a trend line."""


def _read_text(run: ScrubRun) -> str:
    """The bytes a scrub read; ``~`` when it is the pool's allocated space (an estimate)."""
    if run.examined is None:
        return "-"
    return ("~" if run.bytes_from == "allocated" else "") + human_bytes(run.examined)


def _change(percent: float | None, more: str, less: str) -> str | None:
    if percent is None:
        return None
    if abs(percent) < 0.5:
        return "the same"
    return f"{abs(percent):.0f}% {more if percent > 0 else less}"


def scrub_summary(runs: Sequence[ScrubRun]) -> str:
    """The last scrub against the ones before it, in one line: ``last scrub 18s at 10.7
    MiB/s: 20% longer than the median of the 4 before (15s), 17% slower``."""
    found = scrub_trend(runs)
    if found is None:
        return "no finished scrub recorded"
    last = found.last
    text = "last scrub " + (human_duration(last.seconds) if last.seconds is not None else "?")
    if last.rate is not None:
        text += f" at {'~' if last.bytes_from == 'allocated' else ''}{human_rate(last.rate)}"
    longer = _change(found.duration_change, "longer", "shorter")
    if found.before == 0 or longer is None:
        return text + (": the first zsn knows of" if found.before == 0 else "")
    median = human_duration(found.seconds_median) if found.seconds_median else "?"
    text += (f": {longer} than the median of the {found.before} before ({median})"
             if longer != "the same" else f": as long as the {found.before} before ({median})")
    slower = _change(found.rate_change, "faster", "slower")
    return text + (f", {slower}" if slower and slower != "the same" else "")


def scrub_lines(pool: str, runs: Sequence[ScrubRun], now: float) -> list[str]:
    """The box under the vdev tree on the pool's row: its scrubs' trend, then each scrub,
    newest first (how long, how much, how fast, errors)."""
    if not runs:
        return []
    lines = [f"{pool}: {scrub_summary(runs)}"]
    durations = [run.seconds or 0 for run in runs]
    rates = [run.rate or 0.0 for run in runs]
    lines.append(f"  took  {sparkline(durations, min(SCRUB_SPARK, len(runs)))}"
                 + (f"   rate  {sparkline(rates, min(SCRUB_SPARK, len(runs)))}"
                    if any(rates) else "") + "   (oldest → newest)")
    for run in reversed(runs):
        when = time.strftime("%b %d %H:%M", time.localtime(run.ended))
        parts = [when, human_duration(run.seconds) if run.seconds is not None else "?"]
        if run.examined is not None:
            parts.append(_read_text(run))
        if run.rate is not None:
            parts.append(human_rate(run.rate))
        if run.errors is not None:
            parts.append(f"{run.errors} errors")
        lines.append("  " + " · ".join(parts)
                     + f" ({human_duration(max(0.0, now - run.ended))} ago)")
    return lines


# -- the scrub and trim schedules (w) ------------------------------------------------
SCHEDULE_COLUMNS = (
    Column("pool", "Pool", 0, truncate=True, help="each pool, once for its scrubs and once "
                                                  "for its trims"),
    Column("kind", "Kind", 0, help="scrub or trim (a trim only on solid-state disks)"),
    Column("next", "Next", 1, help="the next run (and how long until it)"),
    Column("note", "Note", 1, help="twice: more than one schedule runs it; clashes: it can "
                                   "run at once with a pool on the same controller or disks; "
                                   "older zsn's unit: its service as an older zsn wrote it "
                                   "(the advisor, l, says which command rewrites it)"),
    Column("when", "When", 2, help="when its timer (or the cron job) runs it, local time; "
                                   "never: nothing does"),
    Column("by", "By", 3, truncate=True, help="the timer unit, or the distribution's cron "
                                              "job"),
    Column("shares", "Shares disks with", 4, truncate=True,
           help="the pools on the same controller or disks"),
)


def schedules_title(schedules: Mapping[str, Any]) -> str:
    """The schedules table's title: whose units, and the cron job if there is one."""
    units = schedules.get("units", {})
    whose = ", ".join(f"{kind}: {'OpenZFS' if units.get(kind) == 'openzfs' else 'zsn'}"
                      for kind in ("scrub", "trim"))
    cron = schedules.get("cron")
    return f"Schedules ({whose} units" + (f"; cron job {cron['path']})" if cron else ")")


def schedule_rows(schedules: Mapping[str, Any], now: float) -> list[Row]:
    """One row per pool and kind (`zsn.zfs.export.schedules_to_dict`'s ``pools``): what
    runs it, when, the next run, and what is wrong (run twice or never, a clash)."""
    cron = schedules.get("cron") or {}
    clashes: dict[tuple[str, str], list[str]] = {}
    for first, first_kind, second, second_kind in schedules.get("clashes", ()):
        clashes.setdefault((first, first_kind), []).append(f"{second} {second_kind}")
        clashes.setdefault((second, second_kind), []).append(f"{first} {first_kind}")
    rows = []
    for entry in schedules.get("pools", ()):
        pool, kind = entry["pool"], entry["kind"]
        by = [timer["unit"] for timer in entry["timers"]]
        when = [timer["when"] or timer["calendar"] for timer in entry["timers"]]
        if entry["cron"]:
            by.append("cron")
            when.append((cron.get(kind) or {}).get("when") or "?")
        notes = ["twice"] if len(by) > 1 else []
        if any(timer.get("old_unit") for timer in entry["timers"]):
            notes.append("older zsn's unit (l)")
        if (pool, kind) in clashes:
            notes.append("clashes with " + ", ".join(clashes[pool, kind]))
        upcoming = entry["next_run"]
        if not entry["applies"]:
            shown_when = Cell("- (spinning disks)", "muted")
        elif not by:
            shown_when = Cell("never", "warn" if kind == "scrub" else "muted")
        else:
            brief = [text.split(" (+", 1)[0] for text in when]  # without the random delay
            shown_when = Cell(" + ".join(when), short=brief[0] + (
                f" +{len(brief) - 1}" if len(brief) > 1 else ""))
        rows.append(row_of(f"{pool}\0{kind}", SCHEDULE_COLUMNS, {
            "pool": Cell(pool, "bold"), "kind": Cell(kind),
            "when": shown_when,
            "next": Cell(time.strftime("%b %d %H:%M", time.localtime(upcoming))
                         + f" (in {human_duration(max(0.0, upcoming - now))})",
                         short=time.strftime("%b %d %H:%M", time.localtime(upcoming)))
            if upcoming is not None else Cell("-"),
            "note": Cell("; ".join(notes), "warn"),
            "by": Cell(", ".join(by) or "-"),
            "shares": Cell(", ".join(entry["shares_with"]) or "-")},
            state="muted" if not entry["applies"] else ""))
    return rows
