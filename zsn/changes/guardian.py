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

Either way it runs ``python -m zsn.changes.guardian --root ROOT ID``: it loads what
the rollback needs while it waits (so the deadline costs no imports), says it is
ready by writing its pid into the change's folder, then sleeps until the deadline
and rolls back unless the change was confirmed or rolled back meanwhile. Stopped
early (SIGTERM: a shutdown, a stop of its unit) while the change is pending, it
rolls back at once: nobody else would. zsn applies nothing until the guardian is
ready; one that cannot be started means the change is not made.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from zsn.changes import store as records
from zsn.changes.store import Change, Store
from zsn.errors import ZsnError
from zsn.system.host import Host
from zsn.system.systemd import systemd_runs

READY_TIMEOUT = 60.0
"""How long zsn waits, at most, for a guardian to say it is ready: Python starts in well
under a second, but a box under load (or an emulated one) may take tens of seconds."""
ARMING_LIMIT = 120.0
"""A change still being armed after this long: zsn died before applying anything."""
RUNTIME_SLACK = 600.0
"""A guardian unit's RuntimeMaxSec beyond the deadline: a bound, never reached."""
UNIT_PREFIX = "zsn-guard-"


class GuardianError(ZsnError):
    """No guardian could be started: the change must not be made."""


def unit_name(change_id: str) -> str:
    return f"{UNIT_PREFIX}{change_id}.service"


def guardian_argv(host: Host, change_id: str, detach: bool) -> list[str]:
    """The guardian's command line. A detached guardian runs on this machine and sees
    the host's root where zsn does; a unit runs under the systemd of that root, which
    sees it as ``/`` (a container's, under --root)."""
    root = str(host.root) if detach else "/"
    argv = [sys.executable, "-m", "zsn.changes.guardian", "--root", root]
    return [*argv, "--detach", change_id] if detach else [*argv, change_id]


def _ready_file(store: Store, change_id: str) -> Path:
    return store.folder(change_id) / "guardian"


def start(host: Host, store: Store, change: Change) -> dict[str, Any]:
    """Start the change's guardian and wait until it is ready; how it runs, for the
    record. `GuardianError` when none could be started."""
    if systemd_runs(host):
        namespace = _network_namespace_path(host)
        if namespace is not None:
            _start_unit(host, change, namespace or None)
            try:
                _wait_ready(store, change.id, None)
            except GuardianError:
                with contextlib.suppress(ZsnError):
                    _stop_unit(host, change.id)
                raise
            return {"how": "systemd", "unit": unit_name(change.id)}
    # Its stderr goes to a log in the change's folder: a detached process has no
    # terminal, and what goes wrong in it must be readable afterwards.
    log = os.open(store.folder(change.id) / "guardian.log",
                  os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_CLOEXEC, 0o600)
    try:
        process = subprocess.Popen(
            guardian_argv(host, change.id, detach=True), stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL, stderr=log, start_new_session=True, cwd="/",
            close_fds=True)
    finally:
        os.close(log)
    _wait_ready(store, change.id, process)
    return {"how": "process"}


def _network_namespace_path(host: Host) -> str | None:
    """"" when the guardian unit may run in PID 1's network namespace, the path of
    zsn's own named namespace otherwise, None when it has no name systemd could join
    (then a detached process, which keeps zsn's namespace, is the guardian)."""
    if not host.is_live:
        return ""  # systemd of a tree under --root (a container) shares its namespace
    try:
        mine = os.stat("/proc/self/ns/net")
        init = os.stat("/proc/1/ns/net")
    except OSError:
        return ""
    if (mine.st_dev, mine.st_ino) == (init.st_dev, init.st_ino):
        return ""
    with contextlib.suppress(OSError):
        for entry in os.scandir("/run/netns"):
            st = os.stat(entry.path)
            if (st.st_dev, st.st_ino) == (mine.st_dev, mine.st_ino):
                return entry.path
    return None


def _start_unit(host: Host, change: Change, namespace: str | None) -> None:
    from dbus_fast import Variant

    from zsn.system.dbus import SYSTEMD, SYSTEMD_MANAGER, SYSTEMD_PATH, SystemBus, run_sync

    argv = guardian_argv(host, change.id, detach=False)
    properties = [
        ("Description", Variant("s", f"zsn: roll back change {change.id} unless confirmed")),
        ("ExecStart", Variant("a(sasb)", [[argv[0], argv, False]])),
        ("Type", Variant("s", "simple")),
        ("CollectMode", Variant("s", "inactive-or-failed")),
        ("RuntimeMaxUSec", Variant("t", int((change.seconds + RUNTIME_SLACK) * 1e6))),
        ("WorkingDirectory", Variant("s", "/")),
    ]
    if namespace:
        properties.append(("NetworkNamespacePath", Variant("s", namespace)))

    async def call(bus: SystemBus) -> None:
        await bus.call(SYSTEMD, SYSTEMD_PATH, SYSTEMD_MANAGER, "StartTransientUnit",
                       "ssa(sv)a(sa(sv))", [unit_name(change.id), "fail", properties, []],
                       what=f"starting {unit_name(change.id)}")

    try:
        run_sync(host, call, timeout=10.0)
    except ZsnError as exc:
        raise GuardianError(f"the guardian unit could not be started: {exc}") from exc


def _stop_unit(host: Host, change_id: str) -> None:
    from zsn.system.dbus import SYSTEMD, SYSTEMD_MANAGER, SYSTEMD_PATH, SystemBus, run_sync

    async def call(bus: SystemBus) -> None:
        await bus.call(SYSTEMD, SYSTEMD_PATH, SYSTEMD_MANAGER, "StopUnit", "ss",
                       [unit_name(change_id), "replace"], what=f"stopping {unit_name(change_id)}")

    run_sync(host, call, timeout=10.0)


def _wait_ready(store: Store, change_id: str, process: subprocess.Popen[bytes] | None) -> None:
    deadline = time.monotonic() + READY_TIMEOUT
    ready = _ready_file(store, change_id)
    while not ready.exists():
        if process is not None and process.poll() not in (None, 0):
            raise GuardianError(f"the guardian exited at once (status {process.returncode})")
        if time.monotonic() > deadline:
            raise GuardianError(f"the guardian was not ready within {READY_TIMEOUT:g} s")
        time.sleep(0.02)
    if process is not None:
        process.wait(5)  # the first child exits once it has forked the guardian


def guardian_pid(store: Store, change_id: str) -> int | None:
    try:
        text = _ready_file(store, change_id).read_text().strip()
    except OSError:
        return None
    return int(text) if text.isdigit() else None


def alive(host: Host, store: Store, change: Change) -> bool:
    """Whether the change's guardian still runs (its pid is this change's guardian)."""
    pid = guardian_pid(store, change.id)
    if pid is None:
        return False
    if change.guardian.get("how") == "systemd" and not host.is_live:
        return True  # a container's pid: not one of ours to look at
    try:  # a detached guardian is this machine's process, whatever the root
        command = (Path("/proc") / str(pid) / "cmdline").read_bytes()
    except OSError:
        return False
    return b"zsn.changes.guardian" in command and change.id.encode() in command


def stop(host: Host, store: Store, change: Change) -> None:
    """Tell the guardian it has nothing left to do (the change was confirmed or rolled
    back: it looks, and goes)."""
    if change.guardian.get("how") == "systemd":
        with contextlib.suppress(ZsnError):
            _stop_unit(host, change.id)
        return
    pid = guardian_pid(store, change.id)
    if pid is not None and alive(host, store, change):
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGTERM)


# -- the guardian itself ---------------------------------------------------------------


def _preload(change: Change) -> None:
    """Import what the rollback runs now, not at the deadline."""
    from zsn.changes.undo import restorer
    from zsn.system import netlink

    for undo in change.undo:
        restorer(undo.kind)
    netlink.pyroute2_module("iproute.linux")


def _detach() -> None:
    """Fork once more: the child is no session leader, so it can never take a terminal;
    the parent's exit tells zsn the guardian is on its own."""
    if os.fork() > 0:
        os._exit(0)


def guard(host: Host, change_id: str) -> int:
    from zsn.changes.trial import roll_back

    store = Store(host)
    stops = {signal.SIGTERM, signal.SIGINT}
    signal.pthread_sigmask(signal.SIG_BLOCK, stops)
    signal.signal(signal.SIGHUP, signal.SIG_IGN)
    change = store.load(change_id)
    ready = _ready_file(store, change_id)
    tmp = ready.with_name(f".guardian.{os.getpid()}")
    tmp.write_text(f"{os.getpid()}\n")
    os.replace(tmp, ready)  # zsn may apply now: what is left to load takes well under a second
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
    parser = argparse.ArgumentParser(prog="python -m zsn.changes.guardian")
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
