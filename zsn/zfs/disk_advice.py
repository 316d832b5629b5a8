"""The advisor on the disks under the pools: SMART read next to `zpool status`.

Each finding is about one disk under one pool (a disk under two pools is named under
each), says which vdev it carries, and gives a fix as a command. The rules (ids in
`zsn.zfs.lint.RULES`):

- ZFS015 a failing disk: SMART's own verdict is FAILED, an NVMe critical warning, a
  pre-failure attribute at its threshold now, or wear or spare past their limit;
- ZFS016 a disk that predicts a failure: reallocated, pending or offline-uncorrectable
  sectors, media errors, grown defects, CRC errors;
- ZFS017 one of those counts grew since the reading before (zsn's records);
- ZFS018 a disk running hot;
- ZFS019 an NVMe disk near its rated wear;
- ZFS020 `zpool status` and SMART disagree: ZFS counts errors on a vdev whose disks'
  SMART shows none (the cable, the controller, power or memory), a vdev ZFS calls
  healthy on a disk SMART calls failing or with unreadable sectors (ZFS has not read
  them yet: a scrub will), a vdev ZFS lost on a disk that answers.
"""

from __future__ import annotations

import time
from collections.abc import Iterator

from zsn.format import human_duration
from zsn.lint import Finding, Severity
from zsn.zfs.disk_health import DiskReading, DiskReport
from zsn.zfs.model import Pool, Vdev, ZfsSnapshot
from zsn.zfs.smart import problems, temperature_problem, wear_problem

SOURCE_SMART = "smartctl(8): exit status bits 3-5, the attributes' thresholds"
SOURCE_BACKBLAZE = ("Backblaze drive stats: SMART 5, 187, 188, 197, 198 above 0 predict "
                    "failure")
LOST = ("FAULTED", "UNAVAIL", "REMOVED")


def _who(report: DiskReport) -> str:
    disk = report.disk
    model = (report.smart.model if report.smart else None) or disk.model
    serial = (report.smart.serial if report.smart else None) or disk.serial
    parts = [part for part in (model, f"serial {serial}" if serial else None) if part]
    return f"/dev/{disk.name}" + (f" ({', '.join(parts)})" if parts else "")


def _leaves(pool: Pool) -> list[Vdev]:
    return [vdev for vdev in pool.vdevs if vdev.is_leaf and vdev.name.startswith("/dev/")]


def advise(snapshot: ZfsSnapshot, reading: DiskReading,
           now: float | None = None) -> list[Finding]:
    now = time.time() if now is None else now
    findings: list[Finding] = []
    for pool in snapshot.pools:
        seen: set[str] = set()
        for vdev in _leaves(pool):
            reports = reading.of_leaf(vdev.name)
            for report in reports:
                if report.disk.name not in seen:
                    seen.add(report.disk.name)
                    findings += _disk(pool, vdev, report, now)
            findings += _disagreement(pool, vdev, reports)
    return findings


def _replace(pool: Pool, vdev: Vdev) -> str:
    return f"zpool replace {pool.name} {vdev.name} NEW-DEVICE"


def _disk(pool: Pool, vdev: Vdev, report: DiskReport, now: float) -> Iterator[Finding]:
    smart = report.smart
    if smart is None:
        return
    who = _who(report)
    age = f" (read {human_duration(max(0.0, now - smart.read_at))} ago)"
    failing, warnings = problems(smart)
    wear = wear_problem(smart)
    if wear is not None and wear[0] == "error":
        failing.append(wear[1])
    if failing:
        yield Finding(
            "ZFS015", "error", pool.name,
            f"{who} under {vdev.name} is failing: {'; '.join(failing)}{age}",
            f"{_replace(pool, vdev)} (soon: while the rest of its vdev still holds the "
            "data)", source=SOURCE_SMART)
    elif warnings:
        yield Finding(
            "ZFS016", "warning", pool.name,
            f"{who} under {vdev.name} shows signs of failing: {'; '.join(warnings)}{age}",
            f"zpool scrub {pool.name} (ZFS rewrites what it cannot read from redundancy); "
            f"if the counts grow: {_replace(pool, vdev)}", source=SOURCE_BACKBLAZE)
    if report.growth:
        grown = ", ".join(
            f"{g.describe()} ({human_duration(max(0.0, g.at - g.since))} between the "
            "readings)" for g in report.growth)
        yield Finding(
            "ZFS017", "warning", pool.name,
            f"{who} under {vdev.name}: {grown}; counts that keep growing precede a failure",
            f"{_replace(pool, vdev)} (scrub first: zpool scrub {pool.name})",
            source=SOURCE_BACKBLAZE)
    hot = temperature_problem(smart, report.disk.rotational)
    if hot is not None:
        severity: Severity = "error" if hot[0] == "error" else "warning"
        yield Finding(
            "ZFS018", severity, pool.name, f"{who} under {vdev.name} runs hot: {hot[1]}",
            "improve the airflow over the disk (fans, free bays between disks); "
            "heat shortens its life", source=SOURCE_SMART)
    if wear is not None and wear[0] == "warning":
        yield Finding(
            "ZFS019", "warning", pool.name,
            f"{who} under {vdev.name} is near its rated endurance: {wear[1]}",
            f"plan its replacement: {_replace(pool, vdev)}",
            source="NVMe SMART log: Percentage Used (100 = rated endurance reached)")


def _disagreement(pool: Pool, vdev: Vdev, reports: list[DiskReport]) -> Iterator[Finding]:
    good = [r for r in reports if r.smart is not None and r.attempt is None]
    if not good or len(good) != len(reports):
        return  # a disk not read (asleep, unreadable): nothing to compare
    media_clean = all(_media_clean(r) for r in good)
    checksum = vdev.checksum_errors or 0
    crc = sum((r.smart.crc_errors or 0) for r in good if r.smart is not None)
    who = ", ".join(_who(r) for r in good)
    if vdev.errors and media_clean:
        cause = ("its SMART counts interface CRC errors: the cable or the port"
                 if crc else "the cause is likely on the way to it: cable, controller, "
                 "power" + (", or memory (checksum errors)" if checksum else ""))
        yield Finding(
            "ZFS020", "warning", pool.name,
            f"zpool status counts {vdev.read_errors or 0} read, {vdev.write_errors or 0} "
            f"write and {checksum} checksum errors on {vdev.name}, but SMART of {who} "
            f"reports no media problem: {cause}",
            f"check the cable and port of {who}, then zpool clear {pool.name} {vdev.name} "
            f"&& zpool scrub {pool.name}", source=SOURCE_SMART)
    elif vdev.state == "ONLINE" and not vdev.errors:
        bad = [r for r in good if _unread_sectors(r)]
        if bad:
            yield Finding(
                "ZFS020", "warning", pool.name,
                f"SMART of {', '.join(_who(r) for r in bad)} reports "
                f"{'; '.join(_unread_sectors(bad[0]))}, but zpool status shows "
                f"{vdev.name} ONLINE without errors: ZFS has not read those sectors yet",
                f"zpool scrub {pool.name} (reads every block: bad sectors are found and "
                "rewritten from redundancy)", source=SOURCE_SMART)
    elif vdev.state in LOST and media_clean:
        yield Finding(
            "ZFS020", "warning", pool.name,
            f"zpool status has {vdev.name} {vdev.state}, but its disk answers and SMART "
            f"of {who} reads fine: it was pulled, lost power or timed out",
            f"zpool online {pool.name} {vdev.name} (or zpool clear {pool.name} "
            f"{vdev.name}), then zpool scrub {pool.name}", source=SOURCE_SMART)


def _media_clean(report: DiskReport) -> bool:
    """SMART shows no problem of the medium (interface CRC errors aside)."""
    smart = report.smart
    if smart is None:
        return False
    failing, warnings = problems(smart._replace(crc_errors=None))
    return not failing and not warnings


def _unread_sectors(report: DiskReport) -> list[str]:
    smart = report.smart
    if smart is None:
        return []
    found = []
    if smart.passed is False:
        found.append("overall health FAILED")
    for count, what in ((smart.pending, "pending sectors"),
                        (smart.offline_uncorrectable, "offline uncorrectable sectors"),
                        (smart.media_errors, "media errors")):
        if count:
            found.append(f"{count} {what}")
    return found
