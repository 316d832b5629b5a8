"""The TUI tries a change that could cut the SSH session off (issue 19): the plan names
the session's path and says it is a try, the countdown is in the status line, one key
keeps it; not kept, the guardian (a real detached process) puts things back and the
TUI says so. The change is a file edit and a sysctl under a temporary root, so the
guardian's work can be checked without touching the machine."""

from __future__ import annotations

import asyncio
import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.needs import unavailable
from tests.pilot import screen_as, wait_until
from tests.tui.captured import CAPTURED_HANDSHAKE, fixed_snapshot
from tests.unit.tries.conftest import plan_of
from zsn.system.host import Host
from zsn.tries import lifecycle
from zsn.tries import session as sessions
from zsn.tries.session import SessionPath
from zsn.tries.store import Store
from zsn.tui import tries
from zsn.tui.app import ZsnApp
from zsn.tui.screens.plan import PlanScreen
from zsn.tui.widgets.footer import KeyBar
from zsn.tui.widgets.status import StatusLine

SESSION = SessionPath("10.0.0.2", "10.0.0.1", "dev eth0",
                      (("eth0", ""), ("eth1", "member of eth0")), "SSH_CONNECTION")


@pytest.fixture
def host(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Host]:
    (tmp_path / "etc").mkdir()
    (tmp_path / "proc/sys/net/ipv4").mkdir(parents=True)
    (tmp_path / "proc/sys/net/ipv4/ip_forward").write_text("0\n")
    (tmp_path / "etc/app.conf").write_text("old = 1\n")
    monkeypatch.setattr(sessions, "find_session", lambda host, environ=None: SESSION)
    # SESSION's links are not this machine's: no routes of theirs to keep.
    monkeypatch.setattr(lifecycle, "session_routes", lambda session: [])
    yield Host(tmp_path)
    for change in Store(Host(tmp_path)).waiting():  # no guardian outlives its test
        lifecycle.roll_back(Host(tmp_path), change.id)


@pytest.fixture
def app(host: Host, monkeypatch: pytest.MonkeyPatch) -> ZsnApp:
    snapshot = fixed_snapshot()
    monkeypatch.setattr("zsn.tui.panes.wireguard.read_wireguard", lambda host, names: snapshot)
    monkeypatch.setattr("zsn.tui.panes.wireguard.record_history",
                        lambda recorder, snapshot: snapshot)
    monkeypatch.setattr("zsn.tui.panes.wireguard.now", lambda: CAPTURED_HANDSHAKE + 42)
    return ZsnApp(host, theme="zsn-night", refresh=3600)


def status(app: ZsnApp) -> str:
    pane = app.active_pane()
    assert pane is not None
    return "\n".join(pane.query_one(StatusLine).lines)


def risky_plan(host: Host) -> object:
    plan = plan_of(host)
    plan.touches = frozenset({"eth1"})
    return plan


async def test_tried_counted_down_and_kept_with_one_key(app: ZsnApp, host: Host) -> None:
    async with app.run_test(size=(80, 24)) as pilot:
        pane = app.active_pane()
        assert pane is not None
        await wait_until(pilot, lambda: pane.snapshot_count > 0, "the first poll")
        assert "k" not in app.query_one(KeyBar).shown_keys
        pane.run_plan(lambda: risky_plan(host))  # type: ignore[arg-type, return-value]
        await wait_until(pilot, lambda: isinstance(app.screen, PlanScreen), "the plan")
        text = screen_as(app, PlanScreen).text
        assert "warning: this SSH session (from 10.0.0.1" not in text
        assert ("warning: this SSH session (from 10.0.0.2 to 10.0.0.1, dev eth0) runs over "
                "eth0, eth1 (member of eth0): it changes eth1" in " ".join(text.split()))
        assert "so it is applied as a try: rolled back by itself 60 s after it is applied " \
               "unless you keep it (k)" in " ".join(text.split())
        await pilot.press("y")
        await wait_until(pilot, lambda: "Trying test change: rolled back in" in status(app),
                         "the countdown", 30)
        assert "k keeps it, u rolls it back now" in status(app)
        assert host.path("/etc/app.conf").read_text() == "new = 2\n"
        # The key bar follows the bindings once they are refreshed (a message later).
        await wait_until(pilot, lambda: "k" in app.query_one(KeyBar).shown_keys,
                         "the keep key on the key bar")
        first = status(app)
        await wait_until(pilot, lambda: status(app) != first, "the countdown to tick", 5)
        [change] = Store(host).changes()
        await pilot.press("k")
        await wait_until(pilot, lambda: Store(host).load(change.id).state == "confirmed",
                         "the change kept", 30)
        await wait_until(pilot, lambda: "Trying" not in status(app), "the countdown gone")
        assert host.path("/etc/boot.yaml").read_text() == "boot: new\n"
        await wait_until(pilot, lambda: "k" not in app.query_one(KeyBar).shown_keys,
                         "the keep key gone from the key bar")


async def test_not_kept_the_guardian_puts_it_back_and_the_tui_says_so(
        app: ZsnApp, host: Host, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(tries, "TRY_SECONDS", 2.0)
    async with app.run_test(size=(80, 24)) as pilot:
        pane = app.active_pane()
        assert pane is not None
        await wait_until(pilot, lambda: pane.snapshot_count > 0, "the first poll")
        pane.run_plan(lambda: risky_plan(host))  # type: ignore[arg-type, return-value]
        await wait_until(pilot, lambda: isinstance(app.screen, PlanScreen), "the plan")
        await pilot.press("y")
        await wait_until(pilot, lambda: any(
            n.title == "Rolled back" for n in app._notifications), "the rollback told", 30)
        assert "Trying" not in status(app)
        assert host.path("/etc/app.conf").read_text() == "old = 1\n"
        assert host.path("/proc/sys/net/ipv4/ip_forward").read_text() == "0\n"
        [change] = Store(host).changes()
        assert change.state == "rolled back"
        assert change.outcome["by"] == "the guardian, at the deadline"


async def test_a_pending_change_is_picked_up_and_rolled_back_with_u(
        app: ZsnApp, host: Host) -> None:
    """A try made before the TUI started (the CLI's, or a TUI gone with its session)."""
    if os.geteuid() != 0:
        unavailable("the TUI looks for pending changes as root only")
    began = await asyncio.to_thread(lifecycle.begin, host, risky_plan(host), 60,  # type: ignore[arg-type]
                                    "zsn test", SESSION)
    change = began.change
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_until(pilot, lambda: "Trying test change" in status(app),
                         "the pending change shown", 30)
        await pilot.press("u")
        await wait_until(pilot, lambda: Store(host).load(change.id).state == "rolled back",
                         "the rollback", 30)
        await wait_until(pilot, lambda: "Trying" not in status(app), "the countdown gone")
        assert host.path("/etc/app.conf").read_text() == "old = 1\n"
        assert Store(host).load(change.id).outcome["by"] == "zsn's TUI (u)"


async def test_a_change_to_what_the_pending_try_owns_is_refused_naming_it(
        app: ZsnApp, host: Host) -> None:
    """Tries own what they touch (issue 34): the TUI refuses before showing a plan,
    naming the try and the keys that end it."""
    if os.geteuid() != 0:
        unavailable("the TUI looks for pending changes as root only")
    began = await asyncio.to_thread(lifecycle.begin, host, risky_plan(host), 60,  # type: ignore[arg-type]
                                    "zsn test", SESSION)
    change = began.change
    async with app.run_test(size=(80, 24)) as pilot:
        pane = app.active_pane()
        assert pane is not None
        await wait_until(pilot, lambda: "Trying test change" in status(app),
                         "the pending change shown", 30)
        pane.run_plan(lambda: plan_of(host))
        await wait_until(pilot, lambda: any(
            n.title == "Nothing changed" for n in app._notifications), "the refusal", 30)
        [refused] = [n for n in app._notifications if n.title == "Nothing changed"]
        assert refused.message == (
            f"file /etc/app.conf (and 2 more) belongs to change {change.id} (test change), "
            "still being "
            "tried: keep it (key k: Keep change) or roll it back (key u: Roll back) first")
        assert not isinstance(app.screen, PlanScreen)
        assert host.path("/etc/app.conf").read_text() == "new = 2\n"


async def test_a_store_others_could_write_is_named_with_its_fix(app: ZsnApp, host: Host) -> None:
    """The state rule in the TUI: pending changes are not read from a store others could
    write; the TUI says so once, with the command that fixes it."""
    if os.geteuid() != 0:
        unavailable("the TUI looks for pending changes as root only")
    store = host.path("/run/zsn/changes")
    store.mkdir(parents=True)
    store.chmod(0o777)
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_until(pilot, lambda: any(
            n.title == "Pending changes not read" for n in app._notifications),
            "the refusal", 30)
        [refused] = [n for n in app._notifications if n.title == "Pending changes not read"]
        assert refused.message == (f"{store}: writable by group and others (mode 0777); zsn "
                                   "trusts its own state only where root alone can change "
                                   f"it: chmod go-w {store}")
    store.chmod(0o700)  # for the fixture's own look at the store
