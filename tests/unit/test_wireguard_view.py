"""The WireGuard pane's rows as data, from real wireguard-go captures, without a terminal."""

from __future__ import annotations

from tests.tui.conftest import CAPTURED_HANDSHAKE, fixed_snapshot
from zsn.view import Cell, cell_text, cells_by_key
from zsn.wireguard import view
from zsn.wireguard.model import PeerSession

CLOCK = CAPTURED_HANDSHAKE + 42


def test_interface_rows_say_what_wg_show_says() -> None:
    rows = view.interface_rows(fixed_snapshot().interfaces)
    first = cells_by_key(view.INTERFACE_COLUMNS, rows[0])
    assert [row.key for row in rows] == ["zcapwg1", "zcapwg2"]
    assert first["name"] == Cell("zcapwg1", "bold")
    assert (first["type"], first["port"], first["peers"]) == ("userspace", "51901", "2")
    assert first["addresses"] == Cell("10.77.0.1/24, fd77::1/64", short="10.77.0.1/24 +1")
    assert rows[0].data.name == "zcapwg1"


def test_peer_rows_ages_rates_and_totals() -> None:
    snapshot = fixed_snapshot()
    peers = view.PeerRows()
    peers.observe(snapshot)
    interface = snapshot.interfaces[0]
    rows = peers.rows(interface, {}, CLOCK)
    alice = cells_by_key(view.PEER_COLUMNS, rows[0])
    assert alice["name"] == "alice-laptop"
    assert alice["handshake"] == Cell("42s", "good")
    assert (alice["rx_rate"], alice["tx_rate"]) == ("-", "-")  # one reading: no rate yet
    assert cell_text(alice["allowed"]) == "10.77.0.2/32, fd77::2/128"
    assert cells_by_key(view.PEER_COLUMNS, rows[1])["handshake"] == view.NEVER
    assert view.handshake_cell(interface.peers[0], CLOCK + 600) == Cell(
        "10m 42s stale", "bad", "10m 42s")


def test_an_idle_peer_keeps_its_row_object_until_the_clock_changes_a_cell() -> None:
    snapshot = fixed_snapshot()
    peers = view.PeerRows()
    peers.observe(snapshot)
    interface = snapshot.interfaces[0]
    first = peers.rows(interface, {}, CLOCK)
    assert all(a is b for a, b in zip(first, peers.rows(interface, {}, CLOCK), strict=True))
    later = peers.rows(interface, {}, CLOCK + 1)
    assert later[0] is not first[0] and later[1] is first[1]  # "never" does not age


def test_sessions_and_expiry() -> None:
    up = PeerSession(connected=True, since=CLOCK - 7500, last_seen=CLOCK,
                     endpoint="192.0.2.7:51820", total_rx=0, total_tx=0)
    gone = up._replace(connected=False, since=None, last_seen=CLOCK - 3 * 86400)
    assert view.session_cell(up, CLOCK) == Cell("up 2h 05m", "good")
    assert view.session_cell(gone, CLOCK) == Cell("3d 00h ago", "muted")
    assert view.expiry_cell(int(CLOCK) + 86400, CLOCK) == Cell("in 1d 00h", "warn")
    assert view.expiry_cell(int(CLOCK) - 1, CLOCK) == Cell("expired", "bad")
    assert view.expiry_cell(None, CLOCK) == "-"
