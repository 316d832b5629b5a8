"""The WLAN pane at 80x24 (and 120x40), fed with a snapshot built from the lab's
captures, keys only: every action, the masked passphrase, the QR screen, and no
passphrase in any notification or screen."""

from __future__ import annotations

import dataclasses
import re
import shlex
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from textual.widgets import Checkbox, Input

from tests.pilot import row_texts, screen_as, screen_text, wait_for_rows, wait_until
from zsn.lint import Finding
from zsn.system.host import Host
from zsn.tui.app import PaneSwitcher, ZsnApp
from zsn.tui.panes.wlan import WlanPane
from zsn.tui.screens.findings import FindingsScreen
from zsn.tui.screens.plan import PlanScreen
from zsn.tui.screens.wifi import ConnectScreen, WifiQrScreen
from zsn.tui.widgets.details import DetailsBox
from zsn.tui.widgets.table import LiveTable
from zsn.view import cell_text
from zsn.wlan import iwd
from zsn.wlan.model import KnownNetwork, Link, Rfkill, ScanEntry, WlanInterface, WlanSnapshot
from zsn.wlan.wpa import key_mgmt_security
from zsn.wlan.wpa_protocol import link_from_status, parse_bss, parse_kv, parse_list_networks

FIXTURES = Path(__file__).parent.parent / "fixtures" / "wlan"
SECRET = "correct horse battery"


def _text(name: str) -> str:
    return (FIXTURES / name).read_text()


def fixed_snapshot() -> WlanSnapshot:
    """wlan0 (wpa_supplicant, connected to home-wpa2) and wlan5 (iwd) as captured."""
    walk = re.split(r"^== bss [^\n]*\n", _text("wpa_cli-bss-first-next.txt"), flags=re.M)
    link = link_from_status(parse_kv(_text("wpa_cli-status.completed.txt")),
                            parse_kv(_text("wpa_cli-signal_poll.txt")))
    saved = {b"home-wpa2": "WPA-PSK", b"office-sae": "SAE", b"cafe-open": "NONE",
             b"hidden-wpa2": "WPA-PSK"}  # key_mgmt as in wpa_supplicant.conf.saved.txt
    networks = []
    for line in parse_list_networks(_text("wpa_cli-list_networks.txt")):
        networks.append(KnownNetwork(
            line.ssid, "wpa_supplicant", str(line.id), key_mgmt_security(saved[line.ssid]),
            not line.disabled, hidden=line.ssid == b"hidden-wpa2", interface="wlan0",
            current=line.ssid == link.ssid,
            problem="temporarily disabled (failed attempts)" if line.temporarily_disabled
            else None))
    known = {n.ssid for n in networks}
    scan = []
    for reply in walk:
        bss = parse_bss(reply)
        if bss is not None:
            entry = bss.entry()
            scan.append(dataclasses.replace(entry, known=entry.ssid in known,
                                            connected=entry.bssid == link.bssid))
    wlan0 = WlanInterface("wlan0", "wpa_supplicant", link, mac="02:00:00:00:00:00",
                          phy="phy0", addresses=("10.77.1.2/24",),
                          rfkill=Rfkill(False, False), scan=tuple(scan),
                          config_path="/run/wlan/wpa.conf", saves_config=True)
    # wlan5 as iwd listed it before its first connect (GetOrderedNetworks), with the
    # home network already known (as after the capture's last connect).
    words = shlex.split(_text("busctl-call-GetOrderedNetworks.txt"))[2:]
    iwd_scan = []
    for path, signal in zip(words[0::2], words[1::2], strict=True):
        hex_name, kind = path.rsplit("/", 1)[1].split("_")
        ssid = bytes.fromhex(hex_name)
        iwd_scan.append(ScanEntry(ssid, None, int(signal) / 100, None,
                                  iwd.security_of_type(kind), known=ssid == b"home-wpa2"))
    wlan5 = WlanInterface("wlan5", "iwd", Link("disconnected", False),
                          mac="02:00:00:00:05:00", phy="phy5", rfkill=Rfkill(False, False),
                          scan=tuple(iwd_scan), backend_unit="iwd.service",
                          backend_unit_enabled=True)
    home = KnownNetwork(b"home-wpa2", "iwd", "/net/connman/iwd/686f6d652d77706132_psk",
                        iwd.security_of_type("psk"), True,
                        path=iwd.profile_path(b"home-wpa2", "psk"))
    findings = (Finding("WLAN004", "warning", "cafe-open (wpa_supplicant)",
                        "cafe-open is an open network with autoconnect on",
                        "zsn wifi autoconnect cafe-open off"),)
    return WlanSnapshot((wlan0, wlan5), (*networks, home), 100.0, findings=findings)


@pytest.fixture
def fixed_root() -> Iterator[Path]:
    """A root at a fixed path (it shows in the header): iwd's captured profile for QR."""
    root = Path(tempfile.gettempdir()) / "zsn-wlan-snapshot-root"
    shutil.rmtree(root, ignore_errors=True)
    (root / "var/lib/iwd").mkdir(parents=True)
    (root / "var/lib/iwd/home-wpa2.psk").write_text(_text("iwd-home-wpa2.psk.txt"))
    try:
        yield root
    finally:
        shutil.rmtree(root, ignore_errors=True)


@pytest.fixture
def wlan_app(monkeypatch: pytest.MonkeyPatch, fixed_root: Path) -> ZsnApp:
    snapshot = fixed_snapshot()
    monkeypatch.setattr("zsn.tui.panes.wlan.read_with_findings", lambda host: snapshot)
    return ZsnApp(Host(fixed_root), theme="zsn-night", refresh=3600)


async def open_tab(pilot: Any) -> None:
    await pilot.pause()
    pilot.app.query_one("#panes", PaneSwitcher).active = "tab-wlan"
    await pilot.pause()
    await wait_for_rows(pilot, "#wlan-scan")


async def to_office_on_wlan5(pilot: Any) -> None:
    """Highlight wlan5 (iwd), then office-sae, a network iwd does not know yet."""
    pilot.app.query_one("#wlan-interfaces", LiveTable).focus()
    await pilot.press("down")
    scan = pilot.app.query_one("#wlan-scan", LiveTable)
    scan.focus()
    await wait_until(pilot, lambda: scan.row_count == 3, "wlan5's networks")
    await pilot.press("down", "down")  # cafe-open, home-wpa2, office-sae (equal signals)
    assert _cursor_ssid(pilot.app) == "office-sae"


def _rows(app: ZsnApp, table: str) -> list[list[str]]:
    return row_texts(app.query_one(table, LiveTable))


def _cursor_ssid(app: ZsnApp) -> str:
    row = app.query_one("#wlan-scan", LiveTable).cursor_row
    return cell_text(row.cells[0]) if row is not None else ""


def _messages(app: ZsnApp) -> list[str]:
    return [f"{n.title} {n.message}" for n in app._notifications]


def test_snapshot_80x24(snap_compare: Any, wlan_app: ZsnApp) -> None:
    assert snap_compare(wlan_app, terminal_size=(80, 24), run_before=open_tab)


def test_snapshot_120x40(snap_compare: Any, wlan_app: ZsnApp) -> None:
    assert snap_compare(wlan_app, terminal_size=(120, 40), run_before=open_tab)


def test_snapshot_connect_dialog_80x24(snap_compare: Any, wlan_app: ZsnApp) -> None:
    async def connect(pilot: Any) -> None:
        await open_tab(pilot)
        await to_office_on_wlan5(pilot)
        await pilot.press("c")
        await pilot.pause()
        for key in "sesame street 99":
            await pilot.press("space" if key == " " else key)
        await pilot.pause()

    assert snap_compare(wlan_app, terminal_size=(80, 24), run_before=connect)


async def test_tables_show_link_scan_and_known_networks(wlan_app: ZsnApp) -> None:
    async with wlan_app.run_test(size=(80, 24)) as pilot:
        await open_tab(pilot)
        interfaces = _rows(wlan_app, "#wlan-interfaces")
        assert interfaces[0][:5] == ["wlan0", "wpa_supplicant", "COMPLETED", "home-wpa2",
                                     "-30 dBm ▂▄▆█"]
        assert interfaces[1][:3] == ["wlan5", "iwd", "disconnected"]
        scan = _rows(wlan_app, "#wlan-scan")
        assert [row[:3] for row in scan] == [
            ["home-wpa2", "WPA2", "-30 dBm ▂▄▆█"], ["cafe-open", "open", "-30 dBm ▂▄▆█"],
            ["office-sae", "WPA3", "-30 dBm ▂▄▆█"], ["(hidden)", "WPA2", "-30 dBm ▂▄▆█"]]
        assert scan[0][4] == "connected" and scan[2][4] == "known"
        known = _rows(wlan_app, "#wlan-known")
        assert [row[:3] for row in known] == [["home-wpa2", "WPA2", "on"],
                                              ["office-sae", "WPA3", "off"],
                                              ["cafe-open", "open", "off"],
                                              ["hidden-wpa2", "WPA2", "on"]]
        details = wlan_app.query_one("#wlan-details", DetailsBox).text
        assert "MAC 02:00:00:00:00:00" in details and "BSSID 02:00:00:00:01:00" in details
        wlan_app.query_one("#wlan-interfaces", LiveTable).focus()
        await pilot.press("down")  # wlan5: iwd's known networks
        await pilot.pause()
        assert [row[0] for row in _rows(wlan_app, "#wlan-known")] == ["home-wpa2"]
        assert "iwd.service enabled at boot" in wlan_app.query_one("#wlan-details",
                                                                   DetailsBox).text


async def test_narrow_screens_drop_whole_columns(wlan_app: ZsnApp) -> None:
    async with wlan_app.run_test(size=(60, 24)) as pilot:
        await open_tab(pilot)
        table = wlan_app.query_one("#wlan-interfaces", LiveTable)
        hidden = [column.key for column in table.hidden_columns]
        assert "address" in hidden and "ssid" not in hidden and "state" not in hidden
        shown = "\n".join(screen_text(wlan_app))
        assert "COMPLETED" in shown and "home-wpa2" in shown and "10.77.1.2" not in shown


async def test_connect_asks_a_masked_passphrase_and_shows_the_plan(
        wlan_app: ZsnApp) -> None:
    async with wlan_app.run_test(size=(80, 24)) as pilot:
        await open_tab(pilot)
        await to_office_on_wlan5(pilot)
        await pilot.press("enter")  # unknown to iwd: it needs a passphrase
        await wait_until(pilot, lambda: isinstance(wlan_app.screen, ConnectScreen))
        field = wlan_app.screen.query_one("#wifi-passphrase", Input)
        assert field.password and field.has_focus
        await pilot.press(*"short", "enter")
        error = str(wlan_app.screen.query_one("#wifi-connect-error").render())
        assert "has 5 characters; WPA needs 8 to 63" in error
        field.value = ""
        await pilot.press(*[("space" if c == " " else c) for c in SECRET], "enter")
        await wait_until(pilot, lambda: isinstance(wlan_app.screen, PlanScreen), "the plan")
        plan = screen_as(wlan_app, PlanScreen).text
        assert "connect wlan5 to office-sae" in plan and "zsn's agent, once" in plan
        assert SECRET not in plan
        await pilot.press("n")
        await pilot.pause()
        assert not isinstance(wlan_app.screen, PlanScreen)


async def test_applying_a_connect_that_fails_notifies_without_the_passphrase(
        wlan_app: ZsnApp) -> None:
    async with wlan_app.run_test(size=(80, 24)) as pilot:
        await open_tab(pilot)
        await to_office_on_wlan5(pilot)
        await pilot.press("c")
        await wait_until(pilot, lambda: isinstance(wlan_app.screen, ConnectScreen))
        await pilot.press(*[("space" if c == " " else c) for c in SECRET], "enter")
        await wait_until(pilot, lambda: isinstance(wlan_app.screen, PlanScreen))
        await pilot.press("y")
        await wait_until(pilot, lambda: any("Failed" in m for m in _messages(wlan_app)),
                         "the failure notification")
        messages = " ".join(_messages(wlan_app))
        assert "system bus" in messages
        assert SECRET not in messages


async def test_hidden_network_by_name(wlan_app: ZsnApp) -> None:
    async with wlan_app.run_test(size=(80, 24)) as pilot:
        await open_tab(pilot)
        await pilot.press("h")
        await wait_until(pilot, lambda: isinstance(wlan_app.screen, ConnectScreen))
        screen = wlan_app.screen
        assert screen.query_one("#wifi-hidden", Checkbox).value
        assert screen.query_one("#wifi-ssid", Input).has_focus
        await pilot.press(*"x" * 33, "tab", *"hidden treasure 42".replace(" ", "_"), "enter")
        error = str(screen.query_one("#wifi-connect-error").render())
        assert "is 33 bytes long; 802.11 allows at most 32" in error
        await pilot.press("escape")
        await pilot.pause()
        assert not isinstance(wlan_app.screen, ConnectScreen)


@pytest.mark.parametrize("keys, title", [
    (["d"], "disconnect wlan0"),
    (["tab", "down", "a"], "autoconnect office-sae on"),
    (["tab", "x"], "forget home-wpa2"),
    (["c"], "connect wlan0 to home-wpa2"),  # known: no passphrase asked
])
async def test_actions_show_their_plan(wlan_app: ZsnApp, keys: list[str], title: str) -> None:
    async with wlan_app.run_test(size=(80, 24)) as pilot:
        await open_tab(pilot)
        await pilot.press(*keys)
        await wait_until(pilot, lambda: isinstance(wlan_app.screen, PlanScreen), title)
        assert screen_as(wlan_app, PlanScreen).plan_title == title


async def test_scan_key_scans_the_highlighted_interface(
        wlan_app: ZsnApp, monkeypatch: pytest.MonkeyPatch) -> None:
    scanned: list[str] = []
    monkeypatch.setattr("zsn.wlan.actions.scan",
                        lambda host, interface: scanned.append(interface.name))
    async with wlan_app.run_test(size=(80, 24)) as pilot:
        await open_tab(pilot)
        wlan_app.query_one("#wlan-interfaces", LiveTable).focus()
        await pilot.press("down", "s")
        await wait_until(pilot, lambda: scanned == ["wlan5"], "the scan")


async def test_qr_screen_hides_the_passphrase_until_asked(wlan_app: ZsnApp) -> None:
    async with wlan_app.run_test(size=(80, 40)) as pilot:
        await open_tab(pilot)
        wlan_app.query_one("#wlan-interfaces", LiveTable).focus()
        await pilot.press("down")  # wlan5 (iwd), whose profile file is in the root
        await pilot.pause()
        wlan_app.query_one("#wlan-known", LiveTable).focus()
        await pilot.press("v")
        await wait_until(pilot, lambda: isinstance(wlan_app.screen, WifiQrScreen), "the QR")
        secret = wlan_app.screen.query_one("#wifi-qr-secret")
        # The capture's Passphrase line reads "<removed>": that is this file's secret.
        assert "<removed>" not in str(secret.render())
        await pilot.press("p")
        assert "Passphrase: <removed>" in str(secret.render())
        await pilot.press("p")
        assert "<removed>" not in str(secret.render())
        assert all("<removed>" not in m for m in _messages(wlan_app))


async def test_lint_key_lists_findings(wlan_app: ZsnApp) -> None:
    async with wlan_app.run_test(size=(80, 24)) as pilot:
        await open_tab(pilot)
        await pilot.press("l")
        await wait_until(pilot, lambda: isinstance(wlan_app.screen, FindingsScreen))
        assert [f.id for f in screen_as(wlan_app, FindingsScreen).findings] == ["WLAN004"]


async def test_read_only_interface_changes_nothing(monkeypatch: pytest.MonkeyPatch,
                                                  fixed_root: Path) -> None:
    snapshot = fixed_snapshot()
    managed = WlanInterface("wlp3s0", "networkmanager", Link("activated", True, b"office"),
                            read_only="NetworkManager manages wlp3s0: zsn shows it read-only; "
                                      "use 'nmcli device wifi connect SSID --ask ifname "
                                      "wlp3s0'")
    snapshot = WlanSnapshot((managed,), (), 1.0)
    monkeypatch.setattr("zsn.tui.panes.wlan.read_with_findings", lambda host: snapshot)
    app = ZsnApp(Host(fixed_root), theme="zsn-night", refresh=3600)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        app.query_one("#panes", PaneSwitcher).active = "tab-wlan"
        await wait_until(pilot, lambda: app.query_one("#wlan-interfaces", LiveTable).row_count,
                         "the interface row")
        assert _rows(app, "#wlan-interfaces")[0][1] == "NetworkManager (ro)"
        from zsn.tui.widgets.footer import KeyBar

        bar = app.query_one(KeyBar)
        # the footer follows the row on the next refresh of the bindings, not with it
        await wait_until(pilot, lambda: "q" in bar.shown_keys
                         and not {"c", "s", "d", "h"} & set(bar.shown_keys), "no change keys")
        await pilot.press("d")
        await wait_until(pilot, lambda: any("nmcli device wifi connect" in m
                                            for m in _messages(app)), "the nmcli hint")
        assert not isinstance(app.screen, PlanScreen)


async def test_rows_follow_the_signal_order_and_the_cursor_its_network(
        monkeypatch: pytest.MonkeyPatch, fixed_root: Path) -> None:
    first = fixed_snapshot()
    current = {"snapshot": first}
    monkeypatch.setattr("zsn.tui.panes.wlan.read_with_findings", lambda host: current["snapshot"])
    app = ZsnApp(Host(fixed_root), theme="zsn-night", refresh=3600)
    async with app.run_test(size=(80, 24)) as pilot:
        await open_tab(pilot)
        await pilot.press("down", "down")  # office-sae
        wlan0 = first.interfaces[0]
        stronger = tuple(dataclasses.replace(e, signal_dbm=-20) if e.ssid == b"office-sae"
                         else dataclasses.replace(e, signal_dbm=-75) if e.ssid == b"cafe-open"
                         else e for e in wlan0.scan)
        current["snapshot"] = dataclasses.replace(
            first, interfaces=(dataclasses.replace(wlan0, scan=stronger),
                               *first.interfaces[1:]))
        pane = app.query_one("#wlan", WlanPane)
        pane.poll(force=True)
        await wait_until(pilot, lambda: [r[0] for r in _rows(app, "#wlan-scan")] == [
            "home-wpa2", "office-sae", "cafe-open", "(hidden)"], "the new order")
        assert _cursor_ssid(app) == "office-sae"
        assert _rows(app, "#wlan-scan")[2][2] == "-75 dBm ▂···"


def app_reading(monkeypatch: pytest.MonkeyPatch, root: Path, snapshot: WlanSnapshot) -> ZsnApp:
    monkeypatch.setattr("zsn.tui.panes.wlan.read_with_findings", lambda host: snapshot)
    return ZsnApp(Host(root), theme="zsn-night", refresh=3600)


async def open_read(pilot: Any) -> None:
    """The WLAN tab, once its networks table has had its first read (empty or not)."""
    await pilot.pause()
    pilot.app.query_one("#panes", PaneSwitcher).active = "tab-wlan"
    await wait_until(pilot, lambda: not pilot.app.query_one("#wlan-scan", LiveTable).reading,
                     "the scan table read")


async def test_connect_without_a_highlighted_network_says_so(
        monkeypatch: pytest.MonkeyPatch, fixed_root: Path) -> None:
    """`c` needs a network: with none highlighted it says so and opens no form (the
    hidden-network form took a typed passphrase as the SSID)."""
    snapshot = fixed_snapshot()
    wlan0 = dataclasses.replace(snapshot.interfaces[0], scan=())
    empty = dataclasses.replace(snapshot, interfaces=(wlan0,), networks=())
    app = app_reading(monkeypatch, fixed_root, empty)
    async with app.run_test(size=(80, 24)) as pilot:
        await open_read(pilot)
        await pilot.press("c")
        await wait_until(pilot, lambda: bool(app._notifications), "the notice")
        assert not isinstance(app.screen, ConnectScreen)
        assert next(iter(app._notifications)).message.startswith(
            "Highlight a network to connect to")


@pytest.mark.parametrize("daemon", [False, True], ids=["no-interface", "no-daemon"])
async def test_nothing_to_scan_with_is_said_and_s_not_offered_first(
        monkeypatch: pytest.MonkeyPatch, fixed_root: Path, daemon: bool) -> None:
    """No wireless interface, or one no daemon manages: the networks table says why
    it is empty instead of offering a scan that cannot run."""
    from zsn.tui.widgets.footer import KeyBar

    bare = WlanInterface("wlan0", None, hint="no Wi-Fi daemon manages wlan0: start iwd")
    snapshot = WlanSnapshot((bare,) if daemon else (), (), 1.0)
    app = app_reading(monkeypatch, fixed_root, snapshot)
    async with app.run_test(size=(80, 24)) as pilot:
        await open_read(pilot)
        wanted = ("No networks: no Wi-Fi daemon manages wlan0 to scan with (see below)."
                  if daemon else "No wireless interface to scan with.")
        await wait_until(pilot, lambda: any(wanted in line for line in screen_text(app)),
                         "the reason")
        bar = app.query_one(KeyBar)
        # nothing a change could act on: no change offered; pressed, a key says why
        await wait_until(pilot, lambda: "q" in bar.shown_keys and not {
            "c", "s", "d", "h", "a", "x", "v"} & set(bar.shown_keys), "no change keys")
        await pilot.press("c")
        reason = "start iwd" if daemon else "No wireless interface here."
        await wait_until(pilot, lambda: any(reason in m for m in _messages(app)), "why")
        assert not isinstance(app.screen, ConnectScreen)


async def test_the_footer_offers_tab_and_the_known_networks_keys(wlan_app: ZsnApp) -> None:
    from zsn.tui.widgets.footer import KeyBar

    async with wlan_app.run_test(size=(80, 24)) as pilot:
        await open_tab(pilot)
        bar = wlan_app.query_one(KeyBar)
        await wait_until(pilot, lambda: "tab" in bar.shown_keys, "tab on the footer")
        await pilot.press("tab")  # to the known networks
        await wait_until(pilot, lambda: bar.shown_keys[:3] == ["a", "x", "v"],
                         "autoconnect, forget, QR first")


def iwd_app(monkeypatch: pytest.MonkeyPatch, root: Path, step: str) -> ZsnApp:
    """The pane on wlan0 under iwd as captured in the lab at `step` (the kernel's access
    points with iwd's knowledge: tests/unit/wlan/conftest.py)."""
    from tests.unit.wlan.conftest import iwd_replies, iwd_station
    from zsn.wlan.iwd import state_of

    station = iwd_station(step)
    snapshot = WlanSnapshot((station,), state_of(iwd_replies(step)).networks, 100.0)
    monkeypatch.setattr("zsn.tui.panes.wlan.read_with_findings", lambda host: snapshot)
    return ZsnApp(Host(root), theme="zsn-night", refresh=3600)


def test_snapshot_iwd_security_80x24(snap_compare: Any, monkeypatch: pytest.MonkeyPatch,
                                     fixed_root: Path) -> None:
    """WPA2-only, SAE-only, transition, OWE, open and hidden access points under iwd:
    each with its channel, BSSID and the security it advertises."""
    assert snap_compare(iwd_app(monkeypatch, fixed_root, "scanned"), terminal_size=(80, 24),
                        run_before=open_tab)


async def test_under_iwd_the_table_says_what_each_access_point_offers(
        monkeypatch: pytest.MonkeyPatch, fixed_root: Path) -> None:
    app = iwd_app(monkeypatch, fixed_root, "scanned")
    async with app.run_test(size=(120, 40)) as pilot:
        await open_tab(pilot)
        table = app.query_one("#wlan-scan", LiveTable)
        labels = [column.key for column in table.columns]
        rows = {row[0]: row for row in _rows(app, "#wlan-scan")}
        security, channel, bssid = (labels.index(key) for key in ("security", "channel",
                                                                   "bssid"))
        assert {name: (row[security], row[channel]) for name, row in rows.items()} == {
            "home-wpa2": ("WPA2", "1"), "office-sae": ("WPA3", "6"),
            "mixed-wpa3": ("WPA2/WPA3", "11"), "cafe-open": ("open", "6"),
            "guest-owe": ("OWE", "1"), "(hidden)": ("WPA2", "11")}
        assert all(row[bssid].startswith("02:00:00:00:0") for row in rows.values())


async def test_after_connecting_to_a_hidden_network_no_hidden_row_stays(
        monkeypatch: pytest.MonkeyPatch, fixed_root: Path) -> None:
    app = iwd_app(monkeypatch, fixed_root, "hidden")
    async with app.run_test(size=(80, 24)) as pilot:
        await open_tab(pilot)
        names = [row[0] for row in _rows(app, "#wlan-scan")]
        assert names[0] == "hidden-wpa2" and "(hidden)" not in names
        assert "connected" in _rows(app, "#wlan-scan")[0]


async def test_the_footer_offers_what_the_interface_and_network_allow(
        wlan_app: ZsnApp) -> None:
    """wlan0 is connected, to a known network: disconnect and the known network's keys
    act. wlan5 is not connected, its highlighted network unknown: neither is offered,
    and pressed, each says why."""
    from zsn.tui.widgets.footer import KeyBar

    async with wlan_app.run_test(size=(80, 24)) as pilot:
        await open_tab(pilot)
        bar = wlan_app.query_one(KeyBar)
        await wait_until(pilot, lambda: "d" in bar.shown_keys, "disconnect offered")
        assert not bar.greyed_keys
        await to_office_on_wlan5(pilot)
        await wait_until(pilot, lambda: not {"d", "a", "x", "v"} & set(bar.shown_keys)
                         and "c" in bar.shown_keys, "no disconnect, no known network's keys")
        await pilot.press("d")
        await wait_until(pilot, lambda: any("wlan5 is not connected." in m
                                            for m in _messages(wlan_app)), "not connected")
        await pilot.press("x")
        await wait_until(pilot, lambda: any("Highlight a known network" in m
                                            for m in _messages(wlan_app)), "needs a known one")
        assert not isinstance(wlan_app.screen, PlanScreen)


async def test_a_scan_that_ends_is_read_at_once(wlan_app: ZsnApp) -> None:
    """Told, not polled: as a scan ends (the follower's thread says so, whoever started
    the scan) the shown pane reads again, though its refresh is an hour away."""
    import threading

    async with wlan_app.run_test(size=(80, 24)) as pilot:
        await open_tab(pilot)
        pane = pilot.app.query_one(WlanPane)
        assert pane._scans.ended is not None
        shown = pane.snapshot_count
        threading.Thread(target=pane._scans.ended, args=("wlan5",)).start()
        await wait_until(pilot, lambda: pane.snapshot_count > shown, "a read after the scan")


# 802.1X -------------------------------------------------------------------------------
# corp-peap as wpa_supplicant's BSS table had it in the kernel lab (its EAP access
# point); the enterprise profile iwd's own test suite ships (tests/fixtures/corpus/eap),
# which names no server.
CORPUS = Path(__file__).parent.parent / "fixtures" / "corpus" / "eap"


def enterprise_snapshot() -> WlanSnapshot:
    from zsn.eap import iwd as eap_iwd

    snapshot = fixed_snapshot()
    bss = parse_bss(_text("wpa_cli-bss.corp-peap.txt"))
    assert bss is not None
    wlan0 = dataclasses.replace(snapshot.interfaces[0],
                                scan=(*snapshot.interfaces[0].scan, bss.entry()))
    text = (CORPUS / "iwd" / "testEAP__peap__ssidEAP-PEAP-MSCHAPv2.8021x").read_text()
    peap = KnownNetwork(b"ssidEAP-PEAP-MSCHAPv2", "iwd", "/net/connman/iwd/x_8021x",
                        "enterprise", False, path="/var/lib/iwd/ssidEAP-PEAP-MSCHAPv2.8021x",
                        eap=eap_iwd.profile_of(eap_iwd.parse_settings(text)))
    return dataclasses.replace(snapshot, interfaces=(wlan0, snapshot.interfaces[1]),
                               networks=(*snapshot.networks, peap))


@pytest.fixture
def eap_app(monkeypatch: pytest.MonkeyPatch, fixed_root: Path) -> ZsnApp:
    snapshot = enterprise_snapshot()
    monkeypatch.setattr("zsn.tui.panes.wlan.read_with_findings", lambda host: snapshot)
    return ZsnApp(Host(fixed_root), theme="zsn-night", refresh=3600)


async def to_corp_peap(pilot: Any) -> None:
    await open_tab(pilot)
    scan = pilot.app.query_one("#wlan-scan", LiveTable)
    scan.focus()
    while _cursor_ssid(pilot.app) != "corp-peap":
        await pilot.press("down")


def test_snapshot_eap_form_80x24(snap_compare: Any, eap_app: ZsnApp) -> None:
    async def form(pilot: Any) -> None:
        await to_corp_peap(pilot)
        await pilot.press("c")
        await wait_until(pilot, lambda: type(pilot.app.screen).__name__ == "EapFormScreen")
        await pilot.press(*"alice@lab.test")
        await pilot.pause()

    assert snap_compare(eap_app, terminal_size=(80, 24), run_before=form)


async def test_the_eap_form_follows_the_method_and_refuses_no_server_check(
        eap_app: ZsnApp) -> None:
    from textual.widgets import Select

    from zsn.tui.screens.eap_form import EapFormScreen

    async with eap_app.run_test(size=(80, 24)) as pilot:
        await to_corp_peap(pilot)
        await pilot.press("enter")
        await wait_until(pilot, lambda: isinstance(eap_app.screen, EapFormScreen))
        form = eap_app.screen

        def shown(widget_id: str) -> bool:
            return bool(form.query_one(widget_id).display)

        assert shown("#eap-password") and not shown("#eap-client-cert")
        form.query_one("#eap-method", Select).value = "tls"
        await pilot.pause()
        assert not shown("#eap-password") and shown("#eap-client-key")
        assert not shown("#eap-phase2")
        form.query_one("#eap-method", Select).value = "peap"
        await pilot.pause()
        await pilot.press(*"alice@lab.test")
        form.query_one("#eap-password", Input).value = SECRET
        await pilot.press("ctrl+s")
        await wait_until(pilot, lambda: "rogue access point" in str(
            form.query_one(".form-error").render()), "the refusal")
        assert isinstance(eap_app.screen, EapFormScreen)  # kept open, what was typed kept
        assert SECRET not in " ".join(screen_text(eap_app))


async def test_enterprise_known_networks_show_their_server_check_and_no_qr(
        eap_app: ZsnApp) -> None:
    async with eap_app.run_test(size=(120, 40)) as pilot:
        await open_tab(pilot)
        eap_app.query_one("#wlan-interfaces", LiveTable).focus()
        await pilot.press("down")  # wlan5: iwd's networks
        await pilot.pause()
        rows = _rows(eap_app, "#wlan-known")
        (peap,) = [row for row in rows if row[0] == "ssidEAP-PEAP-MSCHAPv2"]
        assert "PEAP/MSCHAPV2 mschapv2-phase2@example.com" in peap
        assert "NOT checked" in peap
        known = eap_app.query_one("#wlan-known", LiveTable)
        known.focus()

        def on_peap() -> bool:
            row = known.cursor_row
            return row is not None and cell_text(row.cells[0]) == "ssidEAP-PEAP-MSCHAPv2"

        for _ in rows:
            if on_peap():
                break
            await pilot.press("down")
        await pilot.press("v")
        await wait_until(pilot, lambda: any("no standard QR" in m
                                            for m in _messages(eap_app)), "the refusal")
        assert not isinstance(eap_app.screen, WifiQrScreen)
