"""The pane and the peer details with a real history store under the root.

The store is recorded from a real wireguard-go server's replies (fixtures/wireguard/
history-series: a handshake, traffic, a restart, a roam); the pane polls the last
one and records it itself, as it does on a live system.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from textual.pilot import Pilot

from tests.pilot import row_texts, screen_text, wait_for_rows, wait_until
from tests.tui.conftest import SnapCompare
from tests.unit.test_wireguard_history import CLIENT, recorded_series, snapshot, step
from zsn.format import coarse_duration
from zsn.system.host import Host
from zsn.tui.app import ZsnApp
from zsn.tui.screens.peer_details import PeerDetailsScreen
from zsn.tui.widgets.table import LiveTable

_, LAST_READ = step(3)
NOW = int(LAST_READ) + 75


@pytest.fixture
def history_app(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[ZsnApp]:
    monkeypatch.setenv("TZ", "UTC")  # event times are shown in local time
    time.tzset()
    (tmp_path / "var/lib").mkdir(parents=True)
    host = Host(tmp_path)
    recorded_series(host)
    later = snapshot(*step(3), "run2")._replace(taken_at=NOW)
    monkeypatch.setattr("zsn.tui.panes.wireguard.read_wireguard", lambda host, cache: later)
    monkeypatch.setattr("zsn.tui.panes.wireguard.now", lambda: NOW)
    monkeypatch.setattr("zsn.tui.screens.peer_details.HISTORY_RELOAD_SECONDS", 3600)
    app = ZsnApp(host, theme="zsn-night", refresh=3600)
    yield app
    monkeypatch.delenv("TZ")
    time.tzset()


async def open_peer(pilot: Pilot[int]) -> None:
    await wait_for_rows(pilot)
    await pilot.press("enter")
    screen = pilot.app.screen
    await wait_until(pilot, lambda: getattr(screen, "history", None) is not None,
                     "the peer's history read")
    await pilot.pause()


async def test_the_session_column_says_how_long_a_peer_is_connected(
        history_app: ZsnApp) -> None:
    async with history_app.run_test(size=(80, 24)) as pilot:
        await wait_for_rows(pilot)
        [row] = row_texts(history_app.query_one("#wg-peers", LiveTable))
        reconnected = step(2)[0].latest_handshake or 0
        handshake = step(3)[0].latest_handshake or 0
        assert row[:3] == ["phone", coarse_duration(NOW - handshake),
                           f"up {coarse_duration(NOW - reconnected)}"]


async def test_the_details_show_totals_across_the_restart_sparklines_and_events(
        history_app: ZsnApp) -> None:
    async with history_app.run_test(size=(80, 24)) as pilot:
        await open_peer(pilot)
        screen = history_app.screen
        assert isinstance(screen, PeerDetailsScreen)
        body = "\n".join(screen_text(history_app))
        assert "connected for" in body and "192.168.78.3:56563" in body
        assert "across restarts" in body and "Last 30 days" in body
        assert screen.session is not None
        assert (screen.session.total_rx, screen.session.total_tx) == (214708 + 3560,
                                                                      214620 + 3532)
        assert screen.history is not None
        assert [event.kind for event in screen.history.events][-2:] == ["connect", "endpoint"]
        assert screen.peer.public_key == CLIENT


def test_snapshot_peer_details_with_history_80x24(snap_compare: SnapCompare,
                                                  history_app: ZsnApp) -> None:
    assert snap_compare(history_app, terminal_size=(80, 24), run_before=open_peer)
