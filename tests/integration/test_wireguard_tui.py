"""The TUI against live wireguard-go devices: names, handshake ages, and recovery."""

from __future__ import annotations

import pytest
from textual.widgets import DataTable

from tests.integration.conftest import WgPair
from tests.pilot import wait_until
from zsn.system.host import Host
from zsn.tui.app import ZsnApp

pytestmark = pytest.mark.lab


async def test_tui_shows_peer_name_and_handshake_age(wg_pair: WgPair) -> None:
    app = ZsnApp(Host(), refresh=0.2)
    server = wg_pair.ifnames[0]
    async with app.run_test(size=(80, 24)) as pilot:
        interfaces = app.query_one("#wg-interfaces", DataTable)
        await wait_until(pilot, lambda: server in [k.value for k in interfaces.rows])
        interfaces.move_cursor(row=interfaces.get_row_index(server))
        peers = app.query_one("#wg-peers", DataTable)
        await wait_until(pilot, lambda: peers.border_title == f"Peers of {server}"
                         and peers.row_count == 1)
        name, handshake = (str(cell) for cell in peers.get_row_at(0)[:2])
        assert name == wg_pair.peer_name
        assert handshake.endswith("s") and handshake[0].isdigit(), handshake


async def test_tui_reports_a_vanished_daemon_and_recovers(wg_pair: WgPair) -> None:
    app = ZsnApp(Host(), refresh=0.2)
    client = wg_pair.ifnames[1]
    async with app.run_test(size=(80, 24)) as pilot:
        interfaces = app.query_one("#wg-interfaces", DataTable)
        status = app.query_one(".pane-status")
        await wait_until(pilot, lambda: client in [k.value for k in interfaces.rows])
        wg_pair.lab.stop_daemon(client)
        await wait_until(pilot, lambda: status.display and f"{client} disappeared"
                         in str(status.render()))
        assert client not in [k.value for k in interfaces.rows]
        assert app.is_running
        wg_pair.lab.wireguard_go(wg_pair.ns[1], client)
        await wait_until(pilot, lambda: client in [k.value for k in interfaces.rows])
        await wait_until(pilot, lambda: f"{client} disappeared" not in str(status.render()))
