"""A disk under the pools as zsn judges it: what sysfs says (`zsn.zfs.disks`), its last
SMART reading and a later attempt (`zsn.zfs.disk_state`), and the verdict every face
shows (`health`: failing, warning, ok, or why there is nothing to judge).

`DiskReading` is one reading of every disk under a set of leaf vdevs, as
`zsn.zfs.diskwatch` makes it and the pane, the export and the advisor take it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Literal, NamedTuple

from zsn.zfs.disk_state import Growth
from zsn.zfs.disks import Disk, DiskMap, LeafChain
from zsn.zfs.smart import Smart, problems, temperature_problem, wear_problem


class DiskReport(NamedTuple):
    """One disk: what sysfs says, its last good SMART reading, a later attempt that
    found it asleep or unreadable, and the counts that grew."""

    disk: Disk
    smart: Smart | None = None
    attempt: Smart | None = None
    growth: tuple[Growth, ...] = ()

    @property
    def state(self) -> str:
        """ok, standby, unreadable, never (not read yet), none (no SMART to read)."""
        if self.disk.smart_type is None:
            return "none"
        if self.attempt is not None:
            return self.attempt.state
        return "ok" if self.smart is not None else "never"

    @property
    def read_at(self) -> float | None:
        times = [s.read_at for s in (self.smart, self.attempt) if s is not None]
        return max(times) if times else None


Level = Literal["failing", "warning", "ok", "asleep", "unreadable", "unread", "none"]


class Health(NamedTuple):
    level: Level
    reasons: tuple[str, ...] = ()


def health(report: DiskReport) -> Health:
    """A disk's health in one word and its reasons: failing (the disk's own verdict or a
    limit passed), warning (signs of failing, growth, heat, wear), ok; else why there
    is nothing to judge (asleep, unreadable, not read yet, no SMART)."""
    smart = report.smart
    failing: list[str] = []
    warnings: list[str] = []
    if smart is not None:
        failing, warnings = problems(smart)
        for found in (temperature_problem(smart, report.disk.rotational),
                      wear_problem(smart)):
            if found is not None:
                (failing if found[0] == "error" else warnings).append(found[1])
        warnings += [f"{grown.describe()} since the reading before"
                     for grown in report.growth]
    state = report.state
    extra = ((report.attempt.message,) if report.attempt is not None else ())
    if failing:
        return Health("failing", (*failing, *warnings, *extra))
    if warnings:
        return Health("warning", (*warnings, *extra))
    if state == "standby":
        return Health("asleep", extra)
    if state == "unreadable":
        return Health("unreadable", extra)
    if state == "never":
        return Health("unread")
    if state == "none":
        return Health("none")
    return Health("ok")


class DiskReading(NamedTuple):
    map: DiskMap
    reports: dict[str, DiskReport]
    """By the disk's kernel name."""
    notes: tuple[str, ...] = ()
    taken_at: float = 0.0
    verdicts: Mapping[str, Health] | None = None
    """Each disk's `health` by kernel name, judged once where the reading is made (the
    disk watch's thread), so a refresh that shows it judges nothing again."""

    def health_of(self, report: DiskReport) -> Health:
        found = self.verdicts.get(report.disk.name) if self.verdicts is not None else None
        return found if found is not None else health(report)

    def of_leaf(self, leaf: str) -> list[DiskReport]:
        chain = self.map.leaves.get(leaf)
        if chain is None:
            return []
        return [self.reports[name] for name in chain.disks if name in self.reports]

    def chain(self, leaf: str) -> LeafChain | None:
        return self.map.leaves.get(leaf)


EMPTY = DiskReading(DiskMap({}, {}), {})
