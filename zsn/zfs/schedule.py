"""The snapshot planner: a pure function of the policies, the datasets, their snapshots,
the jobs' bases and the time, used alike by a run, its ``--dry-run``, ``policy
simulate`` (over a simulated clock) and the tests.

Taking: a class is due on a dataset when its newest snapshot of that class is older
than the class's last preferred time (sanoid's rule and times: hourly at minute 0,
daily at 23:59, weekly Monday 23:30, monthly on the 1st at 00:00, yearly on January
1st at 00:00, frequently every `frequent_period` within the hour), in the host's local
time. After downtime that is one snapshot per class, not one per missed period. A
newest snapshot dated more than one period ahead of the clock (the clock went back)
does not stand for the current period. The datasets of a policy due for a class are
snapshotted at once (one ``zfs snapshot`` call: atomic), named
``PREFIX_YYYY-MM-DD_HH:MM:SS_CLASS`` in local time; a name taken already (the hour
that repeats when daylight saving time ends) gets ``dst`` after the time, as sanoid's.

Pruning: a snapshot is a policy's when its name is one the policy makes (its prefix,
a time and a class). Per dataset and class, the `keep` newest (by creation txg, which
the clock cannot reorder) stay; of the others, each is destroyed by its own name unless
it has a hold or a replication job still needs it (its base, or the snapshot an
interrupted send will resume). Snapshots a policy did not make are never touched. A
run takes first, then prunes with the new snapshots counted.
"""

from __future__ import annotations

import calendar
import re
from collections.abc import Mapping, Sequence
from datetime import datetime, timedelta, tzinfo
from typing import NamedTuple

from zsn.zfs.policy import CLASSES, Policy, governing
from zsn.zfs.snapshots import Snapshot

NAME_RE = re.compile(r"(?P<prefix>[a-z]+)_(?P<stamp>\d{4}-\d\d-\d\d_\d\d:\d\d:\d\d)"
                     r"(?P<dst>dst)?_(?P<cls>" + "|".join(CLASSES) + r")")
STAMP_FORMAT = "%Y-%m-%d_%H:%M:%S"


class Take(NamedTuple):
    """One atomic ``zfs snapshot`` of a policy's datasets for one class."""

    policy: str
    cls: str
    name: str
    """The part after ``@``."""
    datasets: tuple[str, ...]
    why: str

    @property
    def snapshots(self) -> tuple[str, ...]:
        return tuple(f"{dataset}@{self.name}" for dataset in self.datasets)


class Verdict(NamedTuple):
    """What the planner decided for one policy snapshot, and the rule that decided it."""

    dataset: str
    name: str
    cls: str
    destroy: bool
    rule: str

    @property
    def snapshot(self) -> str:
        return f"{self.dataset}@{self.name}"


class RunPlan(NamedTuple):
    takes: tuple[Take, ...]
    verdicts: tuple[Verdict, ...]
    """Every policy snapshot's fate (kept or destroyed), datasets in order, oldest first."""
    covered: Mapping[str, str]
    """Dataset -> the dataset of the policy that covers it."""
    notes: tuple[str, ...] = ()

    @property
    def destroys(self) -> tuple[Verdict, ...]:
        return tuple(v for v in self.verdicts if v.destroy)


def policy_class(policy: Policy, name: str) -> str | None:
    """The class of a snapshot `policy` made, by its name; None for any other snapshot."""
    match = NAME_RE.fullmatch(name)
    if match is None or match.group("prefix") != policy.prefix:
        return None
    return match.group("cls")


# -- when a class is due --------------------------------------------------------------------
def _at(day: datetime, hour: int, minute: int, zone: tzinfo) -> datetime:
    return datetime(day.year, day.month, day.day, hour, minute, tzinfo=zone)


def _month_day(year: int, month: int, mday: int) -> int:
    return min(mday, calendar.monthrange(year, month)[1])


def last_slot(policy: Policy, cls: str, now: float, zone: tzinfo) -> float:
    """The last preferred time of `cls` at or before `now` (a Unix time)."""
    local = datetime.fromtimestamp(now, zone)
    s = policy.schedule
    slot: datetime
    if cls == "frequently":
        minutes = policy.frequent_period // 60
        slot = local.replace(minute=local.minute // minutes * minutes, second=0,
                             microsecond=0)
    elif cls == "hourly":
        slot = local.replace(minute=s.hourly_min, second=0, microsecond=0)
        if slot.timestamp() > now:
            return slot.timestamp() - 3600
    elif cls == "daily":
        slot = _at(local, s.daily_hour, s.daily_min, zone)
        if slot.timestamp() > now:
            slot = _at(local - timedelta(days=1), s.daily_hour, s.daily_min, zone)
    elif cls == "weekly":
        back = (local.isoweekday() % 7 - s.weekly_wday) % 7  # sanoid's wday: 0 is Sunday
        slot = _at(local - timedelta(days=back), s.weekly_hour, s.weekly_min, zone)
        if slot.timestamp() > now:
            slot = _at(local - timedelta(days=back + 7), s.weekly_hour, s.weekly_min, zone)
    elif cls == "monthly":
        slot = _monthly(local.year, local.month, policy, zone)
        if slot.timestamp() > now:
            year, month = (local.year, local.month - 1) if local.month > 1 \
                else (local.year - 1, 12)
            slot = _monthly(year, month, policy, zone)
    else:
        slot = _yearly(local.year, policy, zone)
        if slot.timestamp() > now:
            slot = _yearly(local.year - 1, policy, zone)
    return slot.timestamp()


def _monthly(year: int, month: int, policy: Policy, zone: tzinfo) -> datetime:
    s = policy.schedule
    return datetime(year, month, _month_day(year, month, s.monthly_mday), s.monthly_hour,
                    s.monthly_min, tzinfo=zone)


def _yearly(year: int, policy: Policy, zone: tzinfo) -> datetime:
    s = policy.schedule
    return datetime(year, s.yearly_mon, _month_day(year, s.yearly_mon, s.yearly_mday),
                    s.yearly_hour, s.yearly_min, tzinfo=zone)


def due(policy: Policy, cls: str, newest: Snapshot | None, now: float,
        zone: tzinfo) -> str | None:
    """Why `cls` is due given its newest snapshot on a dataset, or None."""
    if newest is None:
        return f"no {cls} snapshot yet"
    created = newest.created or 0
    if created > now + policy.period(cls):
        return f"the newest {cls} is dated ahead of the clock (the clock went back)"
    slot = last_slot(policy, cls, now, zone)
    if created < slot:
        return f"the newest {cls} predates {_clock(slot, zone)}"
    return None


def _clock(when: float, zone: tzinfo) -> str:
    return datetime.fromtimestamp(when, zone).strftime("%Y-%m-%d %H:%M")


def snapshot_name(prefix: str, cls: str, now: float, zone: tzinfo, taken: set[str]) -> str:
    """``PREFIX_STAMP_CLASS``, or ``PREFIX_STAMPdst_CLASS`` when the first is taken."""
    stamp = datetime.fromtimestamp(now, zone).strftime(STAMP_FORMAT)
    name = f"{prefix}_{stamp}_{cls}"
    return f"{prefix}_{stamp}dst_{cls}" if name in taken else name


# -- the plan ---------------------------------------------------------------------------------
def coverage(policies: Mapping[str, Policy], datasets: Sequence[str]) -> dict[str, str]:
    """Dataset -> the dataset whose policy covers it (a children-only policy not its own)."""
    found = {}
    for dataset in datasets:
        policy = governing(policies, dataset)
        if policy is not None and not (policy.children_only and dataset == policy.dataset):
            found[dataset] = policy.dataset
    return found


def plan_run(policies: Mapping[str, Policy], datasets: Sequence[str],
             snapshots: Mapping[str, Sequence[Snapshot]], now: float, zone: tzinfo, *,
             protected: Mapping[tuple[str, str], str] | None = None,
             take: bool = True) -> RunPlan:
    """What a run at `now` takes and destroys (see the module doc). `snapshots` are each
    dataset's, oldest first (`zsn.zfs.snapshots.by_dataset`); `protected` names
    (dataset, snapshot name) pairs a replication job needs, with why."""
    covered = coverage(policies, datasets)
    members: dict[str, list[str]] = {}
    for dataset, owner in covered.items():
        members.setdefault(owner, []).append(dataset)
    takes: list[Take] = []
    notes: list[str] = []
    for owner in sorted(members):
        policy = policies[owner]
        if take and policy.take:
            takes += _takes(policy, members[owner], snapshots, now, zone)
    for dataset in sorted(set(policies) - set(datasets)):
        notes.append(f"{dataset} does not exist (now): nothing to do for its policy")
    after = _with_taken(snapshots, takes, now)
    verdicts: list[Verdict] = []
    for dataset in sorted(covered):
        policy = policies[covered[dataset]]
        verdicts += _prune(policy, dataset, after.get(dataset, ()), protected or {})
    return RunPlan(tuple(takes), tuple(verdicts), covered, tuple(notes))


def _newest(found: Sequence[Snapshot], policy: Policy, cls: str) -> Snapshot | None:
    return next((s for s in reversed(found) if policy_class(policy, s.name) == cls), None)


def _takes(policy: Policy, datasets: list[str], snapshots: Mapping[str, Sequence[Snapshot]],
           now: float, zone: tzinfo) -> list[Take]:
    takes = []
    for cls in policy.kept_classes:
        reasons = {}
        for dataset in datasets:
            reason = due(policy, cls, _newest(snapshots.get(dataset, ()), policy, cls), now,
                         zone)
            if reason is not None:
                reasons[dataset] = reason
        if not reasons:
            continue
        chosen = tuple(d for d in datasets if d in reasons)
        taken = {s.name for d in chosen for s in snapshots.get(d, ())}
        why = reasons.get(policy.dataset) or next(iter(reasons.values()))
        takes.append(Take(policy.dataset, cls, snapshot_name(policy.prefix, cls, now, zone,
                                                             taken), chosen, why))
    return takes


def _with_taken(snapshots: Mapping[str, Sequence[Snapshot]], takes: Sequence[Take],
                now: float) -> dict[str, list[Snapshot]]:
    """Each dataset's snapshots as they will be once `takes` ran (newest last)."""
    after = {dataset: list(found) for dataset, found in snapshots.items()}
    for take in takes:
        for dataset in take.datasets:
            found = after.setdefault(dataset, [])
            txg = (found[-1].createtxg + 1) if found else 1
            found.append(Snapshot(dataset, take.name, 0, txg, int(now)))
    return after


def _prune(policy: Policy, dataset: str, found: Sequence[Snapshot],
           protected: Mapping[tuple[str, str], str]) -> list[Verdict]:
    by_class: dict[str, list[Snapshot]] = {}
    for snapshot in found:
        cls = policy_class(policy, snapshot.name)
        if cls is not None:
            by_class.setdefault(cls, []).append(snapshot)
    verdicts = []
    for cls in CLASSES:
        mine = sorted(by_class.get(cls, ()), key=lambda s: s.createtxg)
        keep = policy.keep.get(cls, 0)
        for index, snapshot in enumerate(mine):
            rank = len(mine) - index  # 1: the newest
            if rank <= keep:
                verdicts.append(Verdict(dataset, snapshot.name, cls, False,
                                        f"one of the {keep} newest {cls} (#{rank})"))
                continue
            why = f"beyond the {keep} newest {cls}" if keep else f"{cls} keeps none"
            if not policy.prune:
                verdicts.append(Verdict(dataset, snapshot.name, cls, False,
                                        f"{why}, but the policy does not prune"))
            elif snapshot.holds:
                verdicts.append(Verdict(dataset, snapshot.name, cls, False,
                                        f"{why}, but held (zfs hold)"))
            elif (dataset, snapshot.name) in protected:
                verdicts.append(Verdict(dataset, snapshot.name, cls, False,
                                        f"{why}, but {protected[(dataset, snapshot.name)]}"))
            else:
                verdicts.append(Verdict(dataset, snapshot.name, cls, True, why))
    return verdicts


# -- the future, simulated ---------------------------------------------------------------------
class Simulation(NamedTuple):
    final: dict[str, list[Snapshot]]
    """Each dataset's snapshots at the end (policy snapshots and the rest)."""
    destroyed: list[tuple[float, Verdict]]
    """When each was destroyed, and why."""
    taken: int
    runs: int


def simulate(policies: Mapping[str, Policy], datasets: Sequence[str],
             snapshots: Mapping[str, Sequence[Snapshot]], start: float, seconds: float,
             every: float, zone: tzinfo, *,
             protected: Mapping[tuple[str, str], str] | None = None) -> Simulation:
    """Runs every `every` seconds from `start` for `seconds`, each the real planner on
    what the runs before left; a taken snapshot is dated at its run."""
    current = {dataset: list(found) for dataset, found in snapshots.items()}
    destroyed: list[tuple[float, Verdict]] = []
    taken = runs = 0
    now = start
    while now <= start + seconds:
        plan = plan_run(policies, datasets, current, now, zone, protected=protected)
        current = _with_taken(current, plan.takes, now)
        taken += sum(len(t.datasets) for t in plan.takes)
        gone = {(v.dataset, v.name) for v in plan.destroys}
        destroyed += [(now, v) for v in plan.destroys]
        current = {dataset: [s for s in found if (dataset, s.name) not in gone]
                   for dataset, found in current.items()}
        runs += 1
        now += every
    return Simulation(current, destroyed, taken, runs)
