"""``zsn confirm [ID]``, ``zsn pending`` and ``zsn rollback [ID]``: the changes made
with ``--try``. Without ID, the one change pending (refused when there are several)."""

from __future__ import annotations

import argparse
import json
import sys
import time

from zsn.domains import HeadlessGroup
from zsn.errors import EXIT_OK
from zsn.system.host import Host
from zsn.tries import guardians, lifecycle
from zsn.tries import store as records
from zsn.tries.store import Change, Store


def _id_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("change_id", nargs="?", metavar="ID",
                        help="the change (as 'zsn pending' lists it; default: the only one)")


def add_confirm_arguments(parser: argparse.ArgumentParser) -> None:
    parser.epilog = ("Keeps a change made with --try: its guardian stops, and the boot "
                     "config it deferred (--persist) is written now.")
    _id_argument(parser)


def run_confirm(args: argparse.Namespace, host: Host) -> int:
    change = lifecycle.confirm(host, args.change_id)
    for line in change.outcome.get("done", []):
        print(f"done: {line}", file=sys.stderr)
    print(f"kept: change {change.id} ({change.title})")
    return EXIT_OK


def add_rollback_arguments(parser: argparse.ArgumentParser) -> None:
    parser.epilog = ("Undoes a change made with --try now, live and in files, instead of "
                     "waiting for its deadline; run it again to finish a rollback that "
                     "could not restore everything. What changed since the try is left "
                     "as it is unless --force.")
    _id_argument(parser)
    parser.add_argument("--force", action="store_true",
                        help="also restore what changed since the try (someone's later "
                             "change: lost)")


def run_rollback(args: argparse.Namespace, host: Host) -> int:
    change = lifecycle.roll_back(host, args.change_id, force=args.force)
    print(lifecycle.report(change))
    return EXIT_OK if change.state == records.ROLLED_BACK else 1


def add_pending_arguments(parser: argparse.ArgumentParser) -> None:
    parser.epilog = ("One line each: ID, what, seconds left (and who rolls it back); a "
                     "record zsn will not act on is listed as unreadable, with why.")
    parser.add_argument("--all", action="store_true",
                        help="also the changes that ended lately: confirmed, rolled back")
    parser.add_argument("--json", action="store_true", help="print the records as JSON "
                        "(without the saved file contents)")


def run_pending(args: argparse.Namespace, host: Host) -> int:
    store = Store(host)
    changes, unreadable = store.scan()
    shown = changes if args.all else [c for c in changes if c.state in records.WAITING]
    if args.json:
        print(json.dumps([_public(change) for change in shown]
                         + [{"id": bad.id, "state": "unreadable", "path": str(bad.path),
                             "reason": bad.reason} for bad in unreadable], indent=2))
        return EXIT_OK
    if not shown and not unreadable:
        print("no change is pending" + ("" if args.all else
                                        " (zsn pending --all: the ones that ended)"),
              file=sys.stderr)
    now = records.boot_clock()
    for change in shown:
        print(_line(host, store, change, now))
    for bad in unreadable:
        print(f"{bad.id}  unreadable  {bad.path}: {bad.reason}")
    return EXIT_OK


def _line(host: Host, store: Store, change: Change, now: float) -> str:
    if change.state == records.PENDING:
        status = f"{change.seconds_left(now):.0f} s left"
        if not change.applied:
            status += " (not all applied: zsn was stopped, or is still applying it)"
        if not guardians.alive(host, store, change):
            status += " (its guardian is gone: zsn rollback it, or zsn confirm it)"
    elif change.state == records.ARMING:
        status = "being applied"
    else:
        when = time.strftime("%H:%M:%S", time.localtime(change.outcome.get("at", 0)))
        status = f"{change.state} at {when} by {change.outcome.get('by', '?')}"
        if change.outcome.get("left"):
            status += f"; NOT restored: {'; '.join(change.outcome['left'])}"
    return f"{change.id}  {change.title}  {status}"


def _public(change: Change) -> dict[str, object]:
    data = change.as_dict()
    data.pop("deferred")
    data["undo"] = lifecycle.describe_undo(change.undo)
    data.pop("after")
    data["seconds_left"] = round(change.seconds_left(), 1) \
        if change.state == records.PENDING else None
    return data


confirm = HeadlessGroup(add_confirm_arguments, run_confirm)
pending = HeadlessGroup(add_pending_arguments, run_pending)
rollback = HeadlessGroup(add_rollback_arguments, run_rollback)
