"""A WireGuard pane fed with a fixed snapshot made from real wireguard-go captures."""

from __future__ import annotations

import os
import shutil
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest
from textual.pilot import Pilot
from textual.widgets import Input

from zsn.system.host import Host
from zsn.tui.app import ZsnApp
from zsn.wireguard import config, uapi
from zsn.wireguard.model import InterfaceState, WireGuardSnapshot

FIXTURES = Path(__file__).parent.parent / "fixtures" / "wireguard"
# The UI clock is pinned 42 s after the captured handshake, so ages are stable.
CAPTURED_HANDSHAKE = 1795367367


def fixed_snapshot(clock_offset: int = 42) -> WireGuardSnapshot:
    names = config.parse((FIXTURES / "zcapwg1.conf").read_text()).peer_names()
    server = uapi.parse_get(
        (FIXTURES / "uapi-get.wireguard-go-0.0.20220316.two-peers.txt").read_text(), names=names)
    client = uapi.parse_get(
        (FIXTURES / "uapi-get.wireguard-go-0.0.20220316.client-keepalive.txt").read_text())
    return WireGuardSnapshot(
        interfaces=(
            InterfaceState("zcapwg1", "userspace", "17teO74WVdzYvLcf6VJ12u9p/4FxswL/4aT5gNYpZzM=",
                           server.private_key, server.listen_port, None,
                           ("10.77.0.1/24", "fd77::1/64"), "/etc/wireguard/zcapwg1.conf",
                           server.peers),
            InterfaceState("zcapwg2", "userspace", "8DtMxP7orKTjWmrj/T/GQHVamZNprolZYctPJWWkzEE=",
                           client.private_key, client.listen_port, None, ("10.77.0.2/24",),
                           None, client.peers),
        ),
        taken_at=CAPTURED_HANDSHAKE + clock_offset,
    )


@pytest.fixture
def fixed_app(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> ZsnApp:
    snapshot = fixed_snapshot()
    monkeypatch.setattr("zsn.tui.panes.wireguard.read_wireguard", lambda host, names: snapshot)
    # Nothing to record: the root does not exist (history has its own tests).
    monkeypatch.setattr("zsn.tui.panes.wireguard.record_history",
                        lambda recorder, snapshot: snapshot)
    monkeypatch.setattr("zsn.tui.panes.wireguard.now", lambda: CAPTURED_HANDSHAKE + 42)
    # A fixed (non-existent) root: it shows in the header, so it must not vary.
    return ZsnApp(Host(Path("/srv/zsn-test-root")), theme="zsn-night", refresh=3600)


@pytest.fixture
def root(tmp_path: Path) -> Path:
    """A --root tree with zcapwg1's config (0600, in a 0700 folder), for actions."""
    directory = tmp_path / "etc/wireguard"
    directory.mkdir(parents=True, mode=0o700)
    shutil.copyfile(FIXTURES / "zcapwg1.conf", directory / "zcapwg1.conf")
    os.chmod(directory / "zcapwg1.conf", 0o600)
    return tmp_path


@pytest.fixture
def tree_app(root: Path, monkeypatch: pytest.MonkeyPatch) -> ZsnApp:
    """The app on the `root` tree (changes land there), its WireGuard pane reading the
    fixed snapshot."""
    snapshot = fixed_snapshot()
    monkeypatch.setattr("zsn.tui.panes.wireguard.read_wireguard", lambda host, names: snapshot)
    monkeypatch.setattr("zsn.tui.panes.wireguard.now", lambda: CAPTURED_HANDSHAKE + 42)
    return ZsnApp(Host(root), theme="zsn-night", refresh=3600)


SnapCompare = Callable[..., bool]


@pytest.fixture
def snap_compare(snap_compare: SnapCompare) -> SnapCompare:
    """pytest-textual-snapshot's, with every text cursor steady when the picture is
    taken: a cursor blinks every 0.5 s, so on a busy machine a picture taken a little
    later than usual would show it off."""

    def compare(app: Any, *args: Any,
                run_before: Callable[[Pilot[Any]], Awaitable[None] | None] | None = None,
                **kwargs: Any) -> bool:
        async def steady(pilot: Pilot[Any]) -> None:
            done = run_before(pilot) if run_before is not None else None
            if done is not None:
                await done
            for field in pilot.app.screen.query(Input):
                field.cursor_blink = False  # shown, not blinking
            await pilot.pause()

        return snap_compare(app, *args, run_before=steady, **kwargs)

    return compare
