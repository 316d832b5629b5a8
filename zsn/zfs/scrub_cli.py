"""``zsn zfs scrub schedule`` and ``zsn zfs trim schedule``: the schedules shown, one
pool's set or removed, every pool staggered.

``zsn zfs scrub POOL`` stays the scrub itself: the word ``schedule`` in POOL's place
selects the schedules (a pool named ``schedule`` is scrubbed with ``zpool scrub``).
"""

from __future__ import annotations

import argparse
import json
import sys
import time

from zsn.errors import EXIT_OK, ValidationError
from zsn.headless import apply_or_show, print_table
from zsn.system.host import Host
from zsn.terminal import safe
from zsn.zfs.export import schedules_to_dict
from zsn.zfs.scrub_actions import (
    plan_off,
    plan_schedule,
    plan_stagger,
    read_state,
    run_scheduled,
)
from zsn.zfs.scrubs import (
    CRON_PROPERTY,
    PAST,
    Kind,
    Placed,
    Schedules,
    clashes,
    describe_old_unit,
    never,
    old_units,
    rewrite_command,
    twice,
)

SCHEDULE = "schedule"
OPTIONS = ("every", "at", "stagger", "off", "json", "run")


def add_schedule_arguments(parser: argparse.ArgumentParser, kind: Kind) -> None:
    """The options of ``zsn zfs KIND schedule [POOL]`` on KIND's parser."""
    parser.add_argument("scheduled", metavar="POOL", nargs="?",
                        help=f"after 'schedule': the pool whose {kind} schedule to set")
    parser.add_argument("--every", choices=("week", "month"),
                        help=f"schedule: how often to {kind}")
    parser.add_argument("--at", metavar="WHEN",
                        help="schedule: [1st|2nd|3rd|4th] [Mon..Sun] HH:MM, local time "
                             "(default: the units' own, randomized within an hour)")
    parser.add_argument("--stagger", action="store_true",
                        help="schedule: give every pool a slot; pools on the same controller "
                             "or disks never run at once")
    parser.add_argument("--off", action="store_true",
                        help=f"schedule: remove the pool's {kind} timer")
    parser.add_argument("--json", action="store_true",
                        help="schedule: print the schedules as JSON")
    parser.add_argument("--run", action="store_true",
                        help=f"schedule: {kind} the pool now as its timer does (what zsn's "
                             f"own timer runs): a {kind} already under way is waited for, "
                             "not failed")


def _given(args: argparse.Namespace) -> list[str]:
    return [f"--{name}" for name in OPTIONS if getattr(args, name, None)]


def refuse_schedule_options(args: argparse.Namespace, kind: Kind) -> None:
    """``zsn zfs scrub POOL`` with options that only a schedule takes."""
    given = _given(args)
    if given or args.scheduled is not None:
        what = ", ".join(given) or f"a second name ({args.scheduled!r})"
        raise ValidationError(f"{what}: for zsn zfs {kind} schedule [POOL]")


def run_schedule(args: argparse.Namespace, host: Host, kind: Kind) -> int:
    pool = args.scheduled
    if args.run:
        if pool is None or args.every or args.at or args.off or args.stagger or args.json:
            raise ValidationError(f"--run takes a POOL and nothing else but --dry-run: zsn zfs "
                                  f"{kind} schedule POOL --run")
        return run_scheduled(host, kind, pool, args.dry_run)
    if args.stagger:
        if pool is not None or args.at or args.off:
            raise ValidationError("--stagger places every pool: no POOL, --at or --off")
        state = read_state(host)
        plan, placed = plan_stagger(host, kind, args.every, state)
        apply_or_show(host, plan, args.dry_run)
        _print_placed(kind, placed, state[1])
        return EXIT_OK
    if pool is None:
        if args.every or args.at or args.off or args.dry_run:
            raise ValidationError(f"name a pool (zsn zfs {kind} schedule POOL ...), or "
                                  "--stagger for all")
        return show(host, kind, args.json)
    if args.json:
        raise ValidationError("--json is for the schedules shown (no POOL)")
    if args.off:
        if args.every or args.at:
            raise ValidationError("--off takes no --every or --at")
        return apply_or_show(host, plan_off(host, kind, pool), args.dry_run)
    return apply_or_show(host, plan_schedule(host, kind, pool, args.every, args.at),
                         args.dry_run)


def _when(moment: float | None) -> str:
    return time.strftime("%a %Y-%m-%d %H:%M", time.localtime(moment)) if moment else "-"


def _print_placed(kind: Kind, placed: list[Placed], schedules: Schedules) -> None:
    now = time.time()
    print(f"{kind} calendar:")
    rows: list[tuple[str, ...]] = [("POOL", "WHEN", "NEXT", "SHARES WITH")]
    for entry in sorted(placed, key=lambda p: (p.slot.next_run(now) or 0, p.pool)):
        shared = schedules.of(entry.pool, kind)
        rows.append((entry.pool, entry.slot.describe(), _when(entry.slot.next_run(now)),
                     ", ".join(shared.group) if shared and shared.group else "-"))
    print_table(rows)


def show(host: Host, kind: Kind, as_json: bool) -> int:
    """The pools, what scrubs (trims) each and when, the cron job, the clashes."""
    _snapshot, schedules = read_state(host)
    now = time.time()
    if as_json:
        print(json.dumps(schedules_to_dict(schedules, now), indent=2))
        return EXIT_OK
    for note in schedules.notes:
        print(f"note: {note}", file=sys.stderr)
    cron = schedules.cron
    cron_slot = cron.slots.get(kind) if cron is not None else None
    if cron is not None and kind in cron.lines:
        when = cron_slot.describe() if cron_slot else f"as its line says: {cron.lines[kind]}"
        which = "every ONLINE pool" if kind == "scrub" else \
            "the ONLINE pools made only of NVMe disks, and those that opt in"
        print(safe(f"cron job {cron.path}: {kind}s {which}, {when} (a pool opts "
                   f"out with zfs set {CRON_PROPERTY[kind]}=disable POOL)"))
    folder = schedules.openzfs[kind]
    print(f"units: OpenZFS's zfs-{kind}-weekly@/monthly@ ({folder})" if folder
          else f"units: zsn's own (this OpenZFS ships no zfs-{kind}@.service)")
    rows: list[tuple[str, ...]] = [("POOL", "BY", "WHEN", "NEXT", "SHARES WITH")]
    for entry in (e for e in schedules.pools if e.kind == kind):
        shares = ", ".join(entry.group) or "-"
        by = [(timer.unit, timer.slot.describe() if timer.slot else timer.calendar,
               timer.slot.next_run(now) if timer.slot else None) for timer in entry.timers]
        if entry.cron and cron is not None:
            by.append((f"cron ({cron.path})", cron_slot.describe() if cron_slot else "?",
                       cron_slot.next_run(now) if cron_slot else None))
        if not by:
            by.append(("-" if entry.applies else "- (spinning disks)", "never", None))
        for unit, when, upcoming in by:
            rows.append((entry.pool, unit, when, _when(upcoming), shares))
    print_table(rows)
    for problem in problems(schedules, kind, now):
        print(safe(f"warning: {problem}"))
    return EXIT_OK


def problems(schedules: Schedules, kind: Kind, now: float) -> list[str]:
    """Pools run twice or never, pools that run at once on shared hardware, and zsn's
    services an older zsn wrote."""
    found = [f"{entry.pool} is {PAST[kind]} twice: by {' and '.join(by)}"
             for entry, by in twice(schedules) if entry.kind == kind]
    if kind == "scrub":
        found += [f"no schedule scrubs {entry.pool}" for entry in never(schedules)]
    for first, second in clashes(schedules, now):
        if kind in (first.kind, second.kind):
            found.append(f"{first.pool}'s {first.kind} and {second.pool}'s {second.kind} can "
                         "run at once on a shared controller or disks (zsn zfs "
                         f"{kind} schedule --stagger)")
    found += [f"{old.path}:{old.line}: {describe_old_unit(timer, old)}: "
              f"{rewrite_command(timer)} rewrites it"
              for timer, old in old_units(schedules) if timer.kind == kind]
    return found
