"""Plans for scrub and trim schedules (``zsn zfs scrub schedule``, ``zsn zfs trim
schedule``): one pool's timer set, changed or removed, or every pool staggered.

A pool has one timer per kind: setting one removes the others of that pool and kind
(weekly after monthly, OpenZFS's after zsn's). With OpenZFS's units a chosen time is
zsn's drop-in ``zsn.conf`` beside the instance (``OnCalendar=`` emptied, then the slot;
no random delay); without a time the instance runs as OpenZFS ships it. Where Debian's
cron job would scrub (trim) the same pool, the plan sets the pool's opt-out property
(`zsn.zfs.scrubs.CRON_PROPERTY`) to ``disable``: the cron job then skips it.

zsn's own units (where OpenZFS ships none) run ``zsn zfs KIND schedule POOL --run``
(`run_scheduled`), which does what OpenZFS's ``zfs-KIND@.service`` does: a scrub (trim)
already under way is waited for (``zpool wait -t KIND``), not started again, so the run
succeeds when it ends instead of failing on zpool's "currently scrubbing"; else
``zpool KIND -w POOL``. It hands the process over to zpool (no shell: the pool is one
argv word), so the unit's status is zpool's. Stopping the unit ends zpool's wait, and
its ``ExecStop=-`` pauses the scrub (``zpool scrub -p POOL``; a trim: ``zpool trim -s``,
suspended), as OpenZFS's unit does, run directly rather than through ``sh -c``: the
next run resumes it. systemd runs ExecStop after a run that ended by itself too, when
there is nothing to pause: zpool says so in the journal, and the ``-`` keeps that from
failing the unit.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass

from zsn.errors import ValidationError, ZsnError, about_input
from zsn.formats.unitfile import UnitFile
from zsn.plan import FileEdit, LiveStep, Plan, Step
from zsn.system import commands, files
from zsn.system.host import Host
from zsn.zfs import timers
from zsn.zfs.actions import shown
from zsn.zfs.disks import read_map
from zsn.zfs.live import read_zfs, require_program, run_zfs_command, zfs_stdout
from zsn.zfs.model import Pool, ZfsSnapshot
from zsn.zfs.names import validate_pool_name
from zsn.zfs.scrubs import (
    CRON_PROPERTY,
    DROPIN,
    UNIT_DIR,
    Every,
    Kind,
    Placed,
    Schedules,
    Slot,
    default_slot,
    leaves_of,
    openzfs_unit_name,
    parse_at,
    read_schedules,
    stagger,
    zsn_unit_name,
)

ACTION_TIMEOUT = 60.0
STOP_OPTION: dict[Kind, str] = {"scrub": "-p", "trim": "-s"}
"""zpool's option that pauses a scrub (suspends a trim): what zsn's unit runs on stop."""
DROPIN_SCHEMA = {key: timers.SCHEMA[key] for key in (("Timer", "OnCalendar"),
                                                     ("Timer", "RandomizedDelaySec"))}


def read_state(host: Host) -> tuple[ZfsSnapshot, Schedules]:
    """The pools and their schedules, read now."""
    snapshot = read_zfs(host, datasets=False)
    if snapshot.unavailable:
        raise ZsnError(f"ZFS is not available: {snapshot.unavailable}")
    if snapshot.errors and not snapshot.pools:
        raise ZsnError("; ".join(snapshot.errors))
    return snapshot, schedules_of(host, snapshot.pools)


def schedules_of(host: Host, pools: Sequence[Pool]) -> Schedules:
    """The schedules of `pools` (their disks mapped from sysfs: which share hardware)."""
    disks = read_map(host, [leaf for pool in pools for leaf in leaves_of(pool)])
    return read_schedules(host, pools, disks, zfs_stdout)


def _unit_word(pool: str) -> str:
    if " " in pool:
        raise ValidationError(f"pool {pool!r}: a name with a space cannot go into a unit's "
                              "command line (systemd would split it)")
    return pool


@dataclass
class Change:
    """One pool's new schedule of one kind."""

    pool: str
    kind: Kind
    every: Every
    slot: Slot | None
    """None: the units' default (OpenZFS's ``weekly``/``monthly`` with 1 h at random)."""

    @property
    def effective(self) -> Slot:
        return self.slot or default_slot(self.every)


def _dropin_steps(host: Host, unit: str, slot: Slot | None, command: str) -> list[Step]:
    path = host.path(f"{UNIT_DIR}/{unit}.d/{DROPIN}")
    previous = files.read_tracked(path, 1 << 16) if files.exists(path) else None
    if slot is None:
        return [FileEdit(path, previous, "", remove=True, intent=None)] if previous else []
    dropin = UnitFile(schema=DROPIN_SCHEMA)
    dropin.set("Timer", "OnCalendar", "")
    dropin.add("Timer", "OnCalendar", slot.calendar)
    dropin.set("Timer", "RandomizedDelaySec", str(slot.delay))
    text = timers.HEADER.format(command=command) + dropin.text
    if previous is not None and previous.text == text:
        return []
    return [FileEdit(path, previous, text, intent=dropin.intent, new_dir=True)]


def _removals(host: Host, schedules: Schedules, pool: str, kind: Kind,
              keep: str | None) -> list[Step]:
    """The pool's other timers of `kind` disabled and zsn's files for them removed."""
    steps: list[Step] = []
    for timer in schedules.timers:
        if timer.pool != pool or timer.kind != kind or timer.unit == keep:
            continue
        if timer.enabled:
            steps += timers.disable_steps(host, timer.unit, timer.unit_file)
        for name in timer.zsn_files:
            path = host.path(name)
            steps.append(FileEdit(path, files.read_tracked(path, 1 << 16), "", remove=True,
                                  intent=None))
    return steps


def _property_step(schedules: Schedules, change: Change) -> tuple[list[Step], list[str]]:
    entry = schedules.of(change.pool, change.kind)
    if entry is None or not entry.cron or schedules.cron is None:
        return [], []
    zfs = require_program("zfs")
    name = CRON_PROPERTY[change.kind]
    disable = [zfs, "set", f"{name}=disable", change.pool]
    back = [zfs, "inherit", name, change.pool] if entry.cron_property in (None, "-") \
        else [zfs, "set", f"{name}={entry.cron_property}", change.pool]
    return [LiveStep(shown(disable), lambda: _run(disable), lambda: _run(back))], [
        f"{schedules.cron.path} {change.kind}s every pool that does not opt out: {name}="
        f"disable on {change.pool} opts it out, so the timer alone {change.kind}s it"]


def _run(argv: list[str]) -> None:
    run_zfs_command(argv, timeout=ACTION_TIMEOUT, check=True)


def change_steps(host: Host, schedules: Schedules, change: Change,
                 command: str) -> tuple[list[Step], list[str]]:
    """The steps that give `change.pool` its schedule, and notes."""
    pool = _unit_word(change.pool)
    folder = schedules.openzfs[change.kind]
    steps: list[Step] = []
    notes: list[str] = []
    if folder is not None:
        unit = openzfs_unit_name(change.kind, change.every, pool)
        steps += _removals(host, schedules, pool, change.kind, unit)
        steps += _dropin_steps(host, unit, change.slot, command)
        enabling, notes = timers.enable_steps(
            host, unit, f"{folder}/zfs-{change.kind}-{change.every}ly@.timer")
        steps += enabling
    else:
        slot = change.effective
        zpool = require_program("zpool")
        spec = timers.TimerSpec(zsn_unit_name(change.kind, pool),
                                f"zsn: {change.kind} pool {pool}",
                                timers.zsn_argv("zfs", change.kind, "schedule", pool, "--run"),
                                slot.calendar, slot.delay, command=command, network=False,
                                stop_argv=(zpool, change.kind, STOP_OPTION[change.kind], pool))
        steps += _removals(host, schedules, pool, change.kind, spec.timer)
        made, notes = timers.timer_steps(host, spec)
        steps += made
        notes += [f"{timer.old_unit.path} was written by an older zsn: written again"
                  for timer in schedules.timers
                  if timer.unit == spec.timer and timer.old_unit is not None]
        notes = [*notes, f"OpenZFS here ships no zfs-{change.kind}@.service: zsn's "
                         f"{spec.timer} runs zpool {change.kind} -w {pool} (or waits for "
                         f"the {change.kind} under way), as OpenZFS's would"]
    opt_out, said = _property_step(schedules, change)
    return steps + opt_out, notes + said


def _require_pool(snapshot: ZfsSnapshot, name: str) -> None:
    if snapshot.pool(name) is None:
        known = ", ".join(p.name for p in snapshot.pools) or "none"
        raise ValidationError(f"no pool named {name!r} (pools: {known})")


def plan_schedule(host: Host, kind: Kind, pool: str, every: str | None, at: str | None,
                  state: tuple[ZfsSnapshot, Schedules] | None = None) -> Plan:
    """``zsn zfs KIND schedule POOL --every week|month [--at WHEN]``."""
    validate_pool_name(pool)
    snapshot, schedules = state or read_state(host)
    _require_pool(snapshot, pool)
    entry = schedules.of(pool, kind)
    assert entry is not None
    if kind == "trim" and not entry.applies:
        raise ValidationError(f"pool {pool} is on spinning disks only: there is nothing to "
                              "trim")
    if every is None:
        current = next((slot for slot, _unit in entry.slots), None)
        if current is None:
            raise ValidationError("say how often: week or month", field="every")
        every = current.every
    if every not in ("week", "month"):
        raise ValidationError(f"{every!r}: week or month", field="every")
    chosen: Every = "week" if every == "week" else "month"
    with about_input("at"):
        slot = parse_at(at, chosen) if at is not None else None
    change = Change(pool, kind, chosen, slot)
    plan = Plan(f"{kind} {pool}: {change.effective.describe()}", warnings=_warnings(host))
    plan.steps, plan.notes = change_steps(host, schedules, change, f"zsn zfs {kind} schedule")
    if not plan.steps:
        plan.notes = [f"{pool}'s {kind} schedule is already as asked"]
    plan.notes.append(_next(change.effective))
    return plan


def _next(slot: Slot) -> str:
    when = slot.next_run(time.time())
    return "next run: " + (time.strftime("%a %Y-%m-%d %H:%M", time.localtime(when))
                           if when is not None else "none within a year")


def _warnings(host: Host) -> list[str]:
    return [] if host.is_superuser else ["zsn is not root: systemd's unit folder and the "
                                         "pools' properties are root's"]


def plan_off(host: Host, kind: Kind, pool: str,
             state: tuple[ZfsSnapshot, Schedules] | None = None) -> Plan:
    """``zsn zfs KIND schedule POOL --off``: its timers disabled, zsn's files for them
    removed (a pool not imported can be named: its timers are found by name)."""
    validate_pool_name(pool)
    _snapshot, schedules = state or read_state(host)
    found = [t for t in schedules.timers if t.pool == pool and t.kind == kind]
    if not found:
        raise ValidationError(f"no timer {kind}s pool {pool}")
    plan = Plan(f"no {kind} timer for {pool}", warnings=_warnings(host))
    plan.steps = _removals(host, schedules, pool, kind, None)
    entry = schedules.of(pool, kind)
    cron = schedules.cron
    name = CRON_PROPERTY[kind]
    if entry is not None and entry.cron and cron is not None:
        plan.notes.append(f"{cron.path} still {kind}s {pool}")
    elif cron is not None and kind in cron.lines and entry is not None \
            and entry.cron_property == "disable":
        plan.notes.append(f"no schedule {kind}s {pool} now; {cron.path} would again after "
                          f"'zfs inherit {name} {pool}'")
    else:
        plan.notes.append(f"no schedule {kind}s {pool} now")
    return plan


def plan_stagger(host: Host, kind: Kind, every: str | None,
                 state: tuple[ZfsSnapshot, Schedules] | None = None,
                 now: float | None = None) -> tuple[Plan, list[Placed]]:
    """``zsn zfs KIND schedule --stagger [--every week|month]``: every pool (trim: those
    with a solid-state disk) gets a slot; pools on the same controller or disks never
    run at once, nor with the other kind's runs on them. A pool keeps how often it ran
    (its timer's, or the cron job's); others run every `every` (a month)."""
    if every is not None and every not in ("week", "month"):
        raise ValidationError(f"{every!r}: week or month", field="every")
    snapshot, schedules = state or read_state(host)
    now = time.time() if now is None else now
    entries = [e for e in schedules.pools if e.kind == kind and e.applies]
    if not entries:
        raise ValidationError("no pool to schedule" + (" (none has a solid-state disk)"
                                                        if kind == "trim" else ""))
    wanted: list[tuple[str, Every, int]] = []
    for entry in entries:
        current = next((slot.every for slot, _unit in entry.slots), None)
        if current is None and entry.cron and schedules.cron is not None:
            cron_slot = schedules.cron.slots.get(kind)
            current = cron_slot.every if cron_slot else None
        period: Every = current or ("week" if every == "week" else "month")
        if every is not None:
            period = "week" if every == "week" else "month"
        wanted.append((entry.pool, period, entry.run_seconds))
    other: Kind = "trim" if kind == "scrub" else "scrub"
    taken = [(e.pool, slot, e.run_seconds) for e in schedules.pools if e.kind == other
             for slot, _unit in e.slots]
    groups = {e.pool: e.group for e in entries}
    placed = stagger(wanted, taken, groups, now)
    plan = Plan(f"stagger the {kind}s of {len(placed)} pool{'s' * (len(placed) != 1)}",
                warnings=_warnings(host))
    command = f"zsn zfs {kind} schedule --stagger"
    for (pool, period, _seconds), slot in zip(wanted, placed, strict=True):
        steps, notes = change_steps(host, schedules, Change(pool, kind, period, slot.slot),
                                    command)
        plan.steps += steps
        plan.notes += [note for note in notes if note not in plan.notes]
        if slot.clashes_with:
            plan.warnings.append(f"{pool} still overlaps {', '.join(slot.clashes_with)}: no "
                                 "free slot was left (fewer pools per controller, or a "
                                 "weekly period, leaves more)")
    return plan, placed


def under_way(kind: Kind, status_text: str) -> bool:
    """Whether `zpool status POOL` says a `kind` runs on the pool: what OpenZFS's
    ``zfs-KIND@.service`` looks for (``scrub in progress`` on the scan line, a vdev
    ``(trimming)``). A paused scrub is not under way: ``zpool scrub`` resumes it."""
    lines = status_text.splitlines()
    if kind == "scrub":
        return any(line.strip().startswith("scan: scrub in progress") for line in lines)
    return any(len(line.split()) > 1 and line.rstrip().endswith("(trimming)")
               for line in lines)


def scheduled_argv(zpool: str, kind: Kind, pool: str,
                   status_text: str | None) -> tuple[list[str], str]:
    """What a scheduled run of `kind` on `pool` runs, given its `zpool status` (None: not
    read; zpool then says what is wrong), and a line saying why."""
    if status_text is not None and under_way(kind, status_text):
        return [zpool, "wait", "-t", kind, pool], (
            f"a {kind} is already running on {pool}: waiting for it to end, not starting "
            "another")
    return [zpool, kind, "-w", pool], f"{kind} of {pool}: started, waiting for it to end"


def run_scheduled(host: Host, kind: Kind, pool: str, dry_run: bool = False) -> int:
    """``zsn zfs KIND schedule POOL --run``: what zsn's timer runs (see the module's
    docstring); hands the process over to zpool unless `dry_run`."""
    validate_pool_name(pool)
    if not host.is_live:
        raise ValidationError(f"--run {kind}s a pool of the live system, not under --root")
    zpool = require_program("zpool")
    try:
        result = run_zfs_command([zpool, "status", pool], timeout=ACTION_TIMEOUT)
        status_text = result.stdout if result.ok else None
    except ZsnError:
        status_text = None
    argv, why = scheduled_argv(zpool, kind, pool, status_text)
    print(f"zsn zfs {kind} schedule: {why}: {shown(argv)}", file=sys.stderr)
    if dry_run:
        return 0
    commands.hand_over(argv, env={"LC_ALL": "C"})
