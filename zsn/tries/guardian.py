"""The guardian: the process that rolls a tried change back at its deadline.

It must outlive zsn (kill -9 included), the SSH session and the session's scope
(logind's ``KillUserProcesses``), so it is never a child left in the session:

- where systemd runs, a transient service started over D-Bus (``zsn-guard-ID``,
  in system.slice, a child of PID 1: logout, SIGHUP and the session's cgroup being
  killed do not reach it), in the network namespace the change was made in
  (``NetworkNamespacePath``) when that is not PID 1's;
- otherwise a detached process: a new session, forked once more so it can never
  take a terminal, stdin/stdout/stderr on /dev/null, cwd ``/`` (daemon(7)). It keeps
  the network namespace it was started in.

Either way it runs ``python -m zsn.tries.guardian --root ROOT ID``: it loads what
the rollback needs while it waits (so the deadline costs no imports), says it is
ready by writing its pid into the change's folder, then sleeps until the deadline
and rolls back unless the change was confirmed or rolled back meanwhile. Stopped
early (SIGTERM: a shutdown, a stop of its unit) while the change is pending, it
rolls back at once: nobody else would. zsn applies nothing until the guardian is
ready; one that cannot be started means the change is not made.
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
import time

from zsn.errors import ZsnError
from zsn.system import files
from zsn.system.host import Host
from zsn.tries import store as records
from zsn.tries.guardians import ARMING_LIMIT, ready_file
from zsn.tries.lifecycle import roll_back
from zsn.tries.store import Change, Store


def _preload(change: Change) -> None:
    """Import what the rollback runs now, not at the deadline."""
    from zsn.system import netlink
    from zsn.tries.undo import restorer

    for undo in change.undo:
        restorer(undo.kind)
    netlink.pyroute2_module("iproute.linux")


def _detach() -> None:
    """Fork once more: the child is no session leader, so it can never take a terminal;
    the parent's exit tells zsn the guardian is on its own."""
    if os.fork() > 0:
        os._exit(0)


def guard(host: Host, change_id: str) -> int:
    store = Store(host)
    stops = {signal.SIGTERM, signal.SIGINT}
    signal.pthread_sigmask(signal.SIG_BLOCK, stops)
    signal.signal(signal.SIGHUP, signal.SIG_IGN)
    change = store.load(change_id)
    ready = ready_file(store, change_id)
    # zsn may apply now: what is left to load takes well under a second
    files.publish(ready, f"{os.getpid()}\n", mode=files.PRIVATE_FILE_MODE)
    _preload(change)
    started = time.monotonic()
    while True:
        change = store.load(change_id)
        if change.state not in records.WAITING:
            return 0
        now = records.boot_clock()
        if change.state == records.PENDING and now >= change.deadline:
            roll_back(host, change_id, by="the guardian, at the deadline", from_guardian=True)
            return 0
        if change.state == records.ARMING and time.monotonic() - started > ARMING_LIMIT:
            _abandon(store, change_id)
            return 0
        wait = change.deadline - now if change.state == records.PENDING else 1.0
        received = signal.sigtimedwait(stops, max(0.0, min(wait, 1.0)))
        if received is not None:
            name = signal.Signals(received.si_signo).name
            roll_back(host, change_id, by=f"the guardian, stopped by {name} before the "
                      "deadline", from_guardian=True)
            return 0


def _abandon(store: Store, change_id: str) -> None:
    with store.locked(change_id) as change:
        if change.state == records.ARMING:
            change.finish(records.ABANDONED, "the guardian: zsn went away before applying")
            store.save(change)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m zsn.tries.guardian")
    parser.add_argument("--root", default="/")
    parser.add_argument("--detach", action="store_true")
    parser.add_argument("change_id")
    args = parser.parse_args(argv)
    if args.detach:
        _detach()
    os.chdir("/")
    try:
        return guard(Host.at(args.root), args.change_id)
    except ZsnError as exc:
        print(f"zsn guardian {args.change_id}: {exc}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
