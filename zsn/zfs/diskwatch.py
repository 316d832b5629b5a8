"""Reading the disks under the pools: their sysfs facts every time, their SMART when due.

`DiskReader.read` maps every leaf vdev to its disks (`zsn.zfs.disks`, sysfs only) and
reads SMART (`smartctl --json`, root only) of each disk whose last reading is older than
`READ_EVERY`: at most every 10 minutes per disk, whoever asks (the TUI, ``zsn serve``,
the CLI), because the last readings are kept in zsn's records (`zsn.zfs.disk_state`).
A disk the kernel has put to sleep is not asked at all; one that spun itself down is
asked with ``--nocheck=standby``, which smartctl answers before sending the disk any
command that would wake it. Both are shown as asleep, with the last reading from before.

`DiskWatch` is the pane's and ``zsn serve``'s: the same reader in a thread of its own,
so a slow disk (a SMART read takes up to `SMARTCTL_TIMEOUT`) never holds up a refresh;
the poll takes the latest `DiskReading` without waiting.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from typing import TYPE_CHECKING

from zsn.errors import CommandError, ZsnError
from zsn.system import commands
from zsn.system.host import Host
from zsn.watch import Watch
from zsn.zfs import disk_state, disks, smart
from zsn.zfs.disk_health import EMPTY, DiskReading, DiskReport, health
from zsn.zfs.disk_state import SmartRecords
from zsn.zfs.disks import Disk
from zsn.zfs.smart import Smart

if TYPE_CHECKING:
    from zsn.zfs.facts import Facts
    from zsn.zfs.model import ZfsSnapshot

READ_EVERY = 600.0
"""Seconds between two SMART reads of one disk."""
MAP_EVERY = 60.0
"""Seconds between two reads of the sysfs facts by `DiskWatch` (pools that change are
mapped at once)."""
SMARTCTL_TIMEOUT = 30.0
PARALLEL_READS = 4
"""Disks read at once by one `read` (one smartctl each)."""
NOT_INSTALLED = "smartctl is not installed (Debian: apt install smartmontools): no SMART"
NOT_ROOT = "reading SMART needs root: the readings shown are the last ones zsn kept"
UNDER_ROOT = "SMART is read on the live system only, not under --root"
ASLEEP_BY_KERNEL = "the kernel has the disk asleep (runtime power management): not woken"


Runner = Callable[[Sequence[str]], commands.CommandResult]


def _run(argv: Sequence[str]) -> commands.CommandResult:
    return commands.run(argv, timeout=SMARTCTL_TIMEOUT, check=False,
                        env={"LC_ALL": "C"}, max_output=smart.MAX_JSON_BYTES)


def smartctl_program() -> str | None:
    from zsn.zfs.live import find_program

    return find_program("smartctl")


def why_not(host: Host, program: str | None) -> str | None:
    """Why SMART cannot be read here (None: it can)."""
    if not host.is_live:
        return UNDER_ROOT
    if not host.is_superuser:
        return NOT_ROOT
    if program is None:
        return NOT_INSTALLED
    return None


def read_smart(host: Host, disk: Disk, program: str, now: float,
               runner: Runner = _run) -> Smart:
    """One disk's SMART, never waking it."""
    device, kind = disk.smart_device, disk.smart_type
    if device is None or kind is None:
        return Smart("unreadable", now, "no SMART on this kind of device")
    if disks.suspended_now(host, disk):
        return Smart("standby", now, ASLEEP_BY_KERNEL)
    try:
        result = runner(smart.argv(program, device, kind))
    except CommandError as exc:
        return Smart("unreadable", now, str(exc))
    if not result.stdout.strip():
        return Smart("unreadable", now, f"smartctl: {result.first_error_line()}",
                     result.returncode)
    try:
        return smart.parse(result.stdout, f"smartctl {device}", read_at=now)
    except ZsnError as exc:
        return Smart("unreadable", now, str(exc), result.returncode)


class DiskReader:
    """Maps leaves to disks and reads SMART when due; keeps zsn's records."""

    def __init__(self, host: Host, *, runner: Runner = _run,
                 clock: Callable[[], float] = time.time,
                 program: Callable[[], str | None] = smartctl_program,
                 refusal: Callable[[Host, str | None], str | None] = why_not) -> None:
        self.host = host
        self._runner = runner
        self._clock = clock
        self._program = program
        self._refusal = refusal
        self._record_note: str | None = None
        self._lock = threading.Lock()

    def _load(self) -> SmartRecords:
        """The records as they are now (another zsn may have read a disk meanwhile)."""
        records, self._record_note = disk_state.load(self.host)
        return records

    def read(self, leaves: Iterable[str], *, smart_reads: bool = True) -> DiskReading:
        """The disks under `leaves`; SMART of those due (`smart_reads`: at all)."""
        with self._lock:
            now = self._clock()
            mapped = disks.read_map(self.host, leaves)
            records = self._load()
            program = self._program() if smart_reads else None
            reason = self._refusal(self.host, program) if smart_reads else None
            notes = [reason] if reason and mapped.disks else []
            if reason is None and smart_reads and program is not None:
                due = [disk for disk in mapped.disks.values()
                       if disk.smart_type is not None and self._due(records, disk, now)]
                if due:
                    self._read_due(records, due, program, now)
            if self._record_note:
                notes.append(self._record_note)
            reports = {name: self._report(records, disk) for name, disk
                       in mapped.disks.items()}
            verdicts = {name: health(report) for name, report in reports.items()}
            return DiskReading(mapped, reports, tuple(notes), now, verdicts)

    @staticmethod
    def _due(records: SmartRecords, disk: Disk, now: float) -> bool:
        record = records.disks.get(disk.key)
        last = record.read_at if record is not None else None
        return last is None or now - last >= READ_EVERY or last > now

    def _read_due(self, records: SmartRecords, due: list[Disk], program: str,
                  now: float) -> None:
        with ThreadPoolExecutor(min(PARALLEL_READS, len(due))) as pool:
            readings = list(pool.map(
                lambda disk: read_smart(self.host, disk, program, now, self._runner), due))
        for disk, reading in zip(due, readings, strict=True):
            disk_state.add_reading(records, disk.key, disk.name, reading)
        try:
            disk_state.save(self.host, records)
        except (OSError, ZsnError) as exc:
            self._record_note = f"SMART records not kept: {exc}"

    @staticmethod
    def _report(records: SmartRecords, disk: Disk) -> DiskReport:
        record = records.disks.get(disk.key)
        if record is None:
            return DiskReport(disk)
        return DiskReport(disk, record.last, record.attempt,
                          tuple(disk_state.growth(record)))


def with_disks(facts: Facts, reading: DiskReading) -> Facts:
    """The advisor's facts with the disks (and their notes)."""
    return replace(facts, disks=reading, notes=(*facts.notes, *reading.notes))


def read_with_disks(host: Host, snapshot: ZfsSnapshot, facts: Facts) -> Facts:
    """`facts` with the disks under `snapshot`'s pools read now (SMART when due): what
    `zsn zfs advise` and ``--export zfs`` give the advisor."""
    from zsn.zfs.facts import leaf_paths

    if not snapshot.pools:
        return facts
    return with_disks(facts, DiskReader(host).read(leaf_paths(snapshot.pools)))


class DiskWatch(Watch[tuple[str, ...], DiskReading]):
    """`DiskReader` in a thread of its own (`zsn.watch.Watch`): `want` names the leaves,
    `latest` gives the last reading at once. The thread maps the disks every `MAP_EVERY`
    seconds (or as soon as the leaves change) and reads SMART when due; it stops with
    `stop`."""

    def __init__(self, host: Host, *, reader: DiskReader | None = None,
                 smart_reads: bool = True, map_every: float = MAP_EVERY) -> None:
        self.reader = reader or DiskReader(host)
        self.smart_reads = smart_reads
        super().__init__(self._read_leaves, EMPTY, every=map_every, name="zsn-disks")

    def want(self, leaves: Iterable[str]) -> None:
        super().want(tuple(sorted(set(leaves))))

    def _read_leaves(self, leaves: tuple[str, ...]) -> DiskReading:
        return self.reader.read(leaves, smart_reads=self.smart_reads)
