"""The WLAN pane's rows and columns as plain data (no Textual): what each cell says,
and which whole columns go first on a narrow screen."""

from __future__ import annotations

from zsn.view import Cell, Column, Row, cell_text, cells_by_key
from zsn.wlan.model import KnownNetwork, Link, Rfkill, ScanEntry, WlanInterface, WlanSnapshot
from zsn.wlan.view import (
    INTERFACE_COLUMNS,
    KNOWN_COLUMNS,
    SCAN_COLUMNS,
    interface_details,
    interface_rows,
    known_rows,
    scan_rows,
)

LINK = Link("COMPLETED", True, b"home-wpa2", "02:00:00:00:01:00", -30, 2412, 36000,
            "WPA2-PSK")
SCAN = (ScanEntry(None, "02:00:00:00:03:00", -20, 2462, "WPA2"),
        ScanEntry(b"cafe-open", "02:00:00:00:02:00", -70, 2437, "open"),
        ScanEntry(b"home-wpa2", "02:00:00:00:01:00", -30, 2412, "WPA2", True, True),
        ScanEntry(b"office-sae", "02:00:00:00:04:00", -45, 2437, "WPA3"))


def _cells(row: Row, columns: tuple[Column, ...]) -> dict[str, Cell]:
    cells = cells_by_key(columns, row)
    assert all(isinstance(cell, Cell) for cell in cells.values())
    return {key: cell for key, cell in cells.items() if isinstance(cell, Cell)}


def _texts(row: Row, columns: tuple[Column, ...]) -> dict[str, str]:
    return {key: cell_text(cell) for key, cell in cells_by_key(columns, row).items()}


def test_interface_row_says_backend_rivals_and_radio() -> None:
    wlan0 = WlanInterface("wlan0", "iwd", LINK, addresses=("10.77.1.2/24",),
                          rfkill=Rfkill(True, False), also_managed_by=("wpa_supplicant",))
    (row,) = interface_rows(WlanSnapshot((wlan0,), (), 0.0))
    texts = _texts(row, INTERFACE_COLUMNS)
    assert texts["backend"] == "iwd +wpa_supplicant"
    assert _cells(row, INTERFACE_COLUMNS)["backend"].tone == "bad"
    assert texts["signal"] == "-30 dBm ▂▄▆█" and texts["rate"] == "36 Mb/s"
    assert texts["radio"] == "off" and texts["channel"] == "1"
    none = WlanInterface("wlan1", None)
    (row,) = interface_rows(WlanSnapshot((none,), (), 0.0))
    texts = _texts(row, INTERFACE_COLUMNS)
    assert texts["backend"] == "none" and texts["signal"] == "-"


def test_scan_rows_connected_first_hidden_last() -> None:
    rows = scan_rows(WlanInterface("wlan0", "wpa_supplicant", LINK, scan=SCAN))
    shown = [_cells(r, SCAN_COLUMNS) for r in rows]
    assert [cells["ssid"].text for cells in shown] == ["home-wpa2", "office-sae", "cafe-open",
                                                       "(hidden)"]
    assert shown[0]["mark"].text == "connected" and shown[2]["security"].tone == "warn"
    assert shown[1]["signal"].tone == "good" and shown[2]["signal"].tone == "bad"
    assert len({r.key for r in rows}) == 4


def test_known_rows_boot_column() -> None:
    wlan0 = WlanInterface("wlan0", "iwd", backend_unit="iwd.service", backend_unit_enabled=True)
    networks = (KnownNetwork(b"home", "iwd", "/a", "WPA2/WPA3", True),
                KnownNetwork(b"cafe", "iwd", "/b", "open", False),
                KnownNetwork(b"other", "netctl", "wlan0-other", "WPA2", True,
                             interface="wlan0", at_boot=True))
    rows = known_rows(WlanSnapshot((wlan0,), networks, 0.0), wlan0)
    texts = [_texts(r, KNOWN_COLUMNS) for r in rows]
    assert [(t["ssid"], t["auto"], t["boot"]) for t in texts] == [
        ("home", "on", "on"), ("cafe", "off", "off")]


def test_columns_say_what_they_show_and_what_goes_first() -> None:
    for columns in (INTERFACE_COLUMNS, SCAN_COLUMNS):
        assert all(column.help for column in columns)
        assert columns[0].priority == 1
    by_key = {column.key: column.priority for column in INTERFACE_COLUMNS}
    assert by_key["address"] > by_key["signal"] > by_key["ssid"]


def test_details_name_what_the_row_cannot_hold() -> None:
    wlan0 = WlanInterface("wlan0", None, mac="02:00:00:00:00:00", phy="phy0",
                          rfkill=Rfkill(False, True), hint="no Wi-Fi daemon manages wlan0")
    assert interface_details(wlan0) == [
        "wlan0, MAC 02:00:00:00:00:00, phy0, radio hard-blocked",
        "no Wi-Fi daemon manages wlan0"]
