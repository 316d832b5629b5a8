"""The OpenVPN pane's rows and details box as data, from real management-interface
transcripts and configs (the pane tests' snapshot), without a terminal."""

from __future__ import annotations

from dataclasses import replace

from tests.tui.test_openvpn_pane import NOW, fixed_snapshot
from zsn.openvpn import view
from zsn.view import Cell, cells_by_key


def test_one_row_per_connection_with_unit_tunnel_and_remote() -> None:
    rows = view.ConnectionRows().rows(fixed_snapshot())
    office, backup, home = (cells_by_key(view.COLUMNS, row) for row in rows)
    assert office["unit"] == Cell("active/running", "good", "active")
    assert office["live"] == Cell("CONNECTED", "good")
    assert backup["unit"] == Cell("inactive/dead", "", "inactive")
    assert (backup["live"], backup["address"], backup["boot"]) == (Cell("-"), "-", "disabled")
    assert home["kind"] == "server"
    assert (office["rx_rate"], office["tx_rate"]) == ("-", "-")  # one reading


def test_rates_come_from_the_counters_between_two_snapshots() -> None:
    first = fixed_snapshot()
    office = first.connections[0]
    assert office.live is not None and office.live.bytes_in is not None
    live = replace(office.live, bytes_in=office.live.bytes_in + 2048)
    second = replace(first, connections=(replace(office, live=live), *first.connections[1:]),
                     taken_at=first.taken_at + 2)
    rows = view.ConnectionRows()
    rows.rows(first)
    again = rows.rows(second)
    assert cells_by_key(view.COLUMNS, again[0])["rx_rate"] == "1.0 KiB/s"
    assert again[0].data[1] == 1024.0


def test_the_details_box_has_the_unit_the_tunnel_and_the_advice() -> None:
    snapshot = fixed_snapshot()
    lines = view.details(snapshot.connections[0], snapshot.findings, NOW)
    assert lines[0].endswith("-> openvpn-client@office.service")
    assert lines[1] == "PID 412, active for 1h 02m"
    assert lines[-1].startswith("OVPN004 info: DNS servers the server pushes are ignored")
    assert not any("OVPN004" in line
                   for line in view.details(snapshot.connections[2], snapshot.findings, NOW))
