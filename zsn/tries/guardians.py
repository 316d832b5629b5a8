"""Starting, finding and stopping a change's guardian (`zsn.tries.guardian`, the
process itself): zsn's side of it. Where systemd runs, a transient unit over D-Bus;
otherwise a detached process. zsn applies nothing until the guardian is ready."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from zsn.errors import ZsnError
from zsn.system import files
from zsn.system.host import Host
from zsn.system.namespaces import joinable_network_namespace
from zsn.system.systemd import systemd_runs
from zsn.tries.store import Change, Store

READY_TIMEOUT = 60.0
"""How long zsn waits, at most, for a guardian to say it is ready: Python starts in well
under a second, but a box under load (or an emulated one) may take tens of seconds."""
ARMING_LIMIT = 120.0
"""A change still being armed after this long: zsn died before applying anything."""
RUNTIME_SLACK = 600.0
"""A guardian unit's RuntimeMaxSec beyond the deadline: a bound, never reached."""
UNIT_PREFIX = "zsn-guard-"
_MAX_COMMAND_LINE = 64 * 1024


class GuardianError(ZsnError):
    """No guardian could be started: the change must not be made."""


def unit_name(change_id: str) -> str:
    return f"{UNIT_PREFIX}{change_id}.service"


def guardian_argv(host: Host, change_id: str, detach: bool) -> list[str]:
    """The guardian's command line. A detached guardian runs on this machine and sees
    the host's root where zsn does; a unit runs under the systemd of that root, which
    sees it as ``/`` (a container's, under --root)."""
    root = str(host.root) if detach else "/"
    argv = [sys.executable, "-m", "zsn.tries.guardian", "--root", root]
    return [*argv, "--detach", change_id] if detach else [*argv, change_id]


def ready_file(store: Store, change_id: str) -> Path:
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
    log = files.open_append(store.folder(change.id) / "guardian.log", files.PRIVATE_FILE_MODE)
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
    return joinable_network_namespace()


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
    ready = ready_file(store, change_id)
    while not files.exists(ready):
        if process is not None and process.poll() not in (None, 0):
            raise GuardianError(f"the guardian exited at once (status {process.returncode})")
        if time.monotonic() > deadline:
            raise GuardianError(f"the guardian was not ready within {READY_TIMEOUT:g} s")
        time.sleep(0.02)
    if process is not None:
        process.wait(5)  # the first child exits once it has forked the guardian


def guardian_pid(store: Store, change_id: str) -> int | None:
    try:
        text = files.read_text(ready_file(store, change_id)).strip()
    except (OSError, ZsnError):
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
        command = files.read_bytes(Path("/proc") / str(pid) / "cmdline", _MAX_COMMAND_LINE)
    except (OSError, ZsnError):
        return False
    return b"zsn.tries.guardian" in command and change.id.encode() in command


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
