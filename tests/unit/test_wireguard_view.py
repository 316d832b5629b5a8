"""The WireGuard pane's rows as data, from real wireguard-go captures, without a terminal."""

from __future__ import annotations

from tests.tui.captured import CAPTURED_HANDSHAKE, fixed_snapshot
from zsn.view import Cell, Row, cell_text, cells_by_key
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
    assert alice["handshake"] == Cell("40s", "good")  # 42 s, in 5 s steps
    assert (alice["rx_rate"], alice["tx_rate"]) == ("-", "-")  # one reading: no rate yet
    assert cell_text(alice["allowed"]) == "10.77.0.2/32, fd77::2/128"
    assert cells_by_key(view.PEER_COLUMNS, rows[1])["handshake"] == view.NEVER
    assert view.handshake_cell(interface.peers[0], CLOCK + 600) == Cell(
        "10m stale", "bad", "10m")


def test_an_idle_peer_keeps_its_row_object_until_the_clock_changes_a_cell() -> None:
    snapshot = fixed_snapshot()
    peers = view.PeerRows()
    peers.observe(snapshot)
    interface = snapshot.interfaces[0]
    first = peers.rows(interface, {}, CLOCK)
    assert all(a is b for a, b in zip(first, peers.rows(interface, {}, CLOCK), strict=True))
    assert peers.rows(interface, {}, CLOCK + 2)[0] is first[0]  # 44 s is shown as 40s
    later = peers.rows(interface, {}, CLOCK + 3)
    assert later[0] is not first[0] and later[1] is first[1]  # "never" does not age
    assert cells_by_key(view.PEER_COLUMNS, later[0])["handshake"] == Cell("45s", "good")


def test_an_age_changes_its_cell_every_few_seconds_at_most_and_an_old_one_every_minute(
        ) -> None:
    snapshot = fixed_snapshot()
    peers = view.PeerRows()
    peers.observe(snapshot)
    interface = snapshot.interfaces[0]
    shown = [view.handshake_cell(interface.peers[0], CAPTURED_HANDSHAKE + age).text
             for age in range(0, 3600)]
    changes = sum(1 for a, b in zip(shown, shown[1:], strict=False) if a != b)
    # every 5 s in the first minute, then every minute, and once as it turns stale
    assert changes == 11 + 59 + 1
    assert shown[:6] == ["0s"] * 5 + ["5s"]
    assert shown[185] == "3m stale" and shown[3599] == "59m stale"


def test_moving_counters_change_a_row_only_where_the_shown_values_change() -> None:
    snapshot = fixed_snapshot()
    interface = snapshot.interfaces[0]
    peers = view.PeerRows()
    peers.observe(snapshot)
    first = peers.rows(interface, {}, CLOCK)

    def moved(taken_at: float, rx: int, tx: int) -> list[Row]:
        alice = interface.peers[0]
        alice = alice._replace(rx_bytes=alice.rx_bytes + rx, tx_bytes=alice.tx_bytes + tx)
        moved_interface = interface._replace(peers=(alice, *interface.peers[1:]))
        peers.observe(snapshot._replace(interfaces=(moved_interface,), taken_at=taken_at))
        return peers.rows(moved_interface, {}, CLOCK)

    assert first[0].cells[3:5] == ("-", "-")  # one reading: no rate yet
    moved(snapshot.taken_at + 1, 5_000_000_000, 5_000_000_000)
    second = moved(snapshot.taken_at + 2, 5_000_006_000, 5_000_003_000)
    alice = cells_by_key(view.PEER_COLUMNS, second[0])
    assert (alice["rx_rate"], alice["tx_rate"]) == ("5.9 KiB/s", "2.9 KiB/s")
    assert (alice["rx"], alice["tx"]) == ("4.7 GiB", "4.7 GiB")
    # 4 and 2 more bytes: the rates and totals read the same, so the cells are the
    # very same objects (nothing to repaint), and the row carries the new counters.
    third = moved(snapshot.taken_at + 3, 5_000_012_004, 5_000_006_002)
    assert all(a is b for a, b in zip(third[0].cells, second[0].cells, strict=True))
    assert third[0].data[0].rx_bytes == interface.peers[0].rx_bytes + 5_000_012_004
    assert third[1] is second[1]  # bob did not move: his row is the same object


def test_sessions_and_expiry() -> None:
    up = PeerSession(connected=True, since=CLOCK - 7500, last_seen=CLOCK,
                     endpoint="192.0.2.7:51820", total_rx=0, total_tx=0)
    gone = up._replace(connected=False, since=None, last_seen=CLOCK - 3 * 86400)
    assert view.session_cell(up, CLOCK) == Cell("up 2h 05m", "good")
    assert view.session_cell(gone, CLOCK) == Cell("3d 00h ago", "muted")
    assert view.session_cell(up._replace(since=CLOCK - 185), CLOCK) == Cell("up 3m", "good")
    assert view.expiry_cell(int(CLOCK) + 86400, CLOCK) == Cell("in 1d 00h", "warn")
    assert view.expiry_cell(int(CLOCK) - 1, CLOCK) == Cell("expired", "bad")
    assert view.expiry_cell(None, CLOCK) == "-"
