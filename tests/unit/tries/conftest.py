"""A temporary root to try changes in (files and a sysctl), and the plan tried there."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from zsn.meaning import OwnFile
from zsn.plan import FileEdit, LiveStep, Plan
from zsn.system import files
from zsn.system.host import Host
from zsn.tries import lifecycle, restores
from zsn.tries.store import Store


@pytest.fixture
def host(tmp_path: Path) -> Iterator[Host]:
    (tmp_path / "etc").mkdir()
    (tmp_path / "proc/sys/net/ipv4").mkdir(parents=True)
    (tmp_path / "proc/sys/net/ipv4/ip_forward").write_text("0\n")
    (tmp_path / "etc/app.conf").write_text("old = 1\n")
    (tmp_path / "etc/app.conf.zsn-bak").write_text("older = 1\n")
    yield Host(tmp_path)
    for change in Store(Host(tmp_path)).waiting():  # no guardian outlives its test
        lifecycle.roll_back(Host(tmp_path), change.id)


def plan_of(host: Host) -> Plan:
    """Edit a file, turn forwarding on (live), and write a boot config file."""
    conf = host.path("/etc/app.conf")
    forward = host.path("/proc/sys/net/ipv4/ip_forward")
    plan = Plan("test change")
    plan.steps.append(FileEdit(conf, files.read_tracked(conf), "new = 2\n",
                               intent=OwnFile("a test's file")))
    plan.steps.append(LiveStep("forwarding on", lambda: forward.write_text("1\n"),
                               restore=(restores.sysctl_undo("net.ipv4.ip_forward", "0"),)))
    plan.steps.append(FileEdit(host.path("/etc/boot.yaml"), None, "boot: new\n",
                               persistent=True, intent=OwnFile("a test's file")))
    return plan


def wait_state(host: Host, change_id: str, states: tuple[str, ...], seconds: float) -> str:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        state = Store(host).load(change_id).state
        if state in states:
            return state
        time.sleep(0.05)
    raise AssertionError(f"change {change_id} not {states} after {seconds} s")
