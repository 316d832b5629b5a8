"""The guardian as a transient systemd unit (issue 19, item 2), in a real systemd booted
with systemd-nspawn (tests/lab/container.py), with this machine's Python and zsn shown
to it read-only.

zsn runs inside the container, inside a scope like the one logind makes for a login
(``systemd-run --scope``), and brings a WireGuard interface up through its wg-quick@
unit with ``--try``: the guardian is ``zsn-guard-ID.service``, started over D-Bus, in
system.slice. The scope is then killed whole, as logind's ``KillUserProcesses=yes``
(or ``loginctl terminate-session``) kills a session: the guardian is not in it, and
stops the interface's unit at the deadline. A second try is confirmed from outside
(``--root``): the guardian unit is stopped over D-Bus and the interface stays up.
"""

from __future__ import annotations

import json
import secrets
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.lab.container import Container, booted_container, python_binds
from tests.lab.netns import Lab, require_lab, wait_for
from zsn.system.dbus import Systemd, UnitState, run_sync

pytestmark = pytest.mark.lab
REPO = Path(__file__).resolve().parents[2]
TOOLS = ("ip", "systemd-nspawn", "debootstrap", "nsenter")
SECONDS = 8


@dataclass(frozen=True)
class SystemdLab:
    lab: Lab
    container: Container

    def unit(self, name: str) -> UnitState:
        return run_sync(self.container.host, lambda bus: Systemd(bus).unit_state(name))

    def changes(self) -> list[dict[str, object]]:
        folder = self.container.root / "run/zsn/changes"
        return [json.loads(path.read_text()) for path in sorted(folder.glob("*/change.json"))]

    def zsn_inside(self, *args: str, scope: str | None = None,
                   then: str = "") -> None:
        """zsn in the container, in a scope of its own (a login's) when `scope` is set,
        left running in the background: `then` is what the scope runs after it."""
        command = (f"cd {REPO} && {sys.executable} -m zsn {' '.join(args)} "
                   f"> /run/zsn-inside.log 2>&1; {then}")
        argv = ["sh", "-c", command]
        if scope:
            argv = ["systemd-run", "--scope", f"--unit={scope}", "--quiet", *argv]
        self.container.run_inside(["sh", "-c", f"({' '.join(_quote(a) for a in argv)}) "
                                               "</dev/null >/dev/null 2>&1 &"])


def _quote(text: str) -> str:
    import shlex

    return shlex.quote(text)


@pytest.fixture(scope="module")
def sdlab() -> Iterator[SystemdLab]:
    require_lab(TOOLS)
    lab = Lab(tag="ztb" + secrets.token_hex(2))
    try:
        namespace = lab.namespace("sd")
        with booted_container(lab, namespace, extra=tuple(python_binds())) as container:
            yield SystemdLab(lab, container)
    finally:
        lab.close()


def _create(sdlab: SystemdLab, name: str, port: str, address: str) -> None:
    import subprocess

    created = subprocess.run([sys.executable, "-m", "zsn", "--root", str(sdlab.container.root),
                              "wg", "create", name, "--address", address, "--port", port],
                             capture_output=True, text=True, cwd=REPO, timeout=60, check=False)
    assert created.returncode == 0, created.stderr


def test_the_guardian_unit_outlives_the_session_scope_killed_whole(sdlab: SystemdLab) -> None:
    name = sdlab.lab.name("g")
    unit = f"wg-quick@{name}.service"
    _create(sdlab, name, "51865", "10.65.0.1/24")
    scope = f"zsn-login-{name}.scope"
    sdlab.zsn_inside("wg", "up", name, "--try", str(SECONDS), scope=scope.removesuffix(".scope"),
                     then="sleep 600")
    wait_for(lambda: any(c.get("applied") for c in sdlab.changes()), 90, "the change applied")
    [change] = sdlab.changes()
    guardian = f"zsn-guard-{change['id']}.service"
    assert change["guardian"] == {"how": "systemd", "unit": guardian}
    assert sdlab.unit(unit).active_state == "active"
    state = sdlab.unit(guardian)
    assert state.active_state == "active" and state.main_pid
    # What logind does to a session with KillUserProcesses=yes: its scope, killed whole.
    assert sdlab.unit(scope).active_state == "active"
    killed = sdlab.container.run_inside(["systemctl", "kill", "--signal=SIGKILL", scope])
    assert killed.returncode == 0, killed.stderr
    wait_for(lambda: sdlab.unit(scope).active_state != "active", 30, "the scope killed")
    assert sdlab.unit(guardian).active_state == "active"  # not in the session's cgroup
    wait_for(lambda: sdlab.changes()[0]["state"] == "rolled back", SECONDS + 60,
             "the guardian's rollback")
    done = sdlab.changes()[0]
    assert done["outcome"]["by"] == "the guardian, at the deadline"  # type: ignore[index]
    assert any(unit in line for line in done["outcome"]["done"])  # type: ignore[index]
    assert sdlab.unit(unit).active_state == "inactive"
    wait_for(lambda: sdlab.unit(guardian).active_state != "active", 30, "the guardian gone")


def test_confirmed_from_outside_the_guardian_unit_is_stopped(sdlab: SystemdLab) -> None:
    import subprocess

    name = sdlab.lab.name("h")
    unit = f"wg-quick@{name}.service"
    _create(sdlab, name, "51866", "10.66.0.1/24")
    for folder in (sdlab.container.root / "run/zsn/changes").glob("*"):
        subprocess.run(["rm", "-rf", str(folder)], check=True)
    sdlab.zsn_inside("wg", "up", name, "--try", "60")
    try:
        wait_for(lambda: any(c.get("applied") for c in sdlab.changes()), 90, "the change")
        [change] = sdlab.changes()
        guardian = f"zsn-guard-{change['id']}.service"
        kept = subprocess.run([sys.executable, "-m", "zsn", "--root",
                               str(sdlab.container.root), "confirm"], capture_output=True,
                              text=True, cwd=REPO, timeout=60, check=False)
        assert kept.returncode == 0, kept.stderr
        wait_for(lambda: sdlab.unit(guardian).active_state != "active", 30,
                 "the guardian unit stopped")
        time.sleep(1)
        assert sdlab.changes()[0]["state"] == "confirmed"
        assert sdlab.unit(unit).active_state == "active"
    finally:
        sdlab.container.run_inside(["systemctl", "stop", unit])


def test_zfs_timers_are_installed_enabled_and_run_zsn(sdlab: SystemdLab) -> None:
    """``zsn zfs policy install-timer`` from outside (``--root``, the container's bus):
    the units are written, enabled and started; the service runs this zsn inside (no
    policy yet: a run with nothing to do succeeds)."""
    import subprocess

    root = sdlab.container.root
    installed = subprocess.run([sys.executable, "-m", "zsn", "--root", str(root), "zfs",
                                "policy", "install-timer", "--every", "5m"],
                               capture_output=True, text=True, cwd=REPO, timeout=120,
                               check=False)
    assert installed.returncode == 0, installed.stderr
    assert "reload, enable and start zsn-zfs-snapshots.timer" in installed.stderr
    for name in ("snapshots", "replicate"):
        timer = sdlab.unit(f"zsn-zfs-{name}.timer")
        assert (timer.active_state, timer.unit_file_state) == ("active", "enabled")
        assert (root / f"etc/systemd/system/timers.target.wants/zsn-zfs-{name}.timer"
                ).is_symlink()
        text = (root / f"etc/systemd/system/zsn-zfs-{name}.timer").read_text()
        assert "OnCalendar=*-*-* *:00/5:00\n" in text and "Persistent=true\n" in text
        ran = sdlab.container.run_inside(["systemctl", "start", f"zsn-zfs-{name}.service"],
                                         timeout=180)
        assert ran.returncode == 0, ran.stderr
        assert sdlab.unit(f"zsn-zfs-{name}.service").result == "success"
    listed = sdlab.container.run_inside(["systemctl", "list-timers", "--all", "--no-pager"])
    assert "zsn-zfs-snapshots.timer" in listed.stdout
    again = subprocess.run([sys.executable, "-m", "zsn", "--root", str(root), "zfs", "policy",
                            "install-timer", "--every", "5m", "--dry-run"],
                           capture_output=True, text=True, cwd=REPO, timeout=120, check=False)
    assert again.returncode == 0 and "create " not in again.stdout and "edit " not in \
        again.stdout
