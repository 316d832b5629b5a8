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

from tests.tui.captured import CAPTURED_HANDSHAKE, FIXTURES, fixed_snapshot
from zsn.system.host import Host
from zsn.tui.app import ZsnApp


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
