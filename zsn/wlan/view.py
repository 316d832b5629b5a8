"""What the WLAN pane shows, as plain data: keyed rows of cells with a tone, built from a
snapshot without Textual, so the content is tested on its own and the pane's tables
only draw it (dropping whole columns, least important first, when narrow).

Three tables: the wireless interfaces, the scan results of the highlighted one
(strongest first, hidden networks grouped at the end), and the networks its
backend knows. Columns carry a priority: at narrow widths the pane drops whole
columns, least important (highest number) first.
"""

from __future__ import annotations

from zsn.view import Cell, Column, Row, row_of
from zsn.wlan.model import (
    BACKEND_TITLES,
    WlanInterface,
    WlanSnapshot,
    signal_bars,
    sorted_scan,
)
from zsn.wlan.ssid import display

BARS = "▂▄▆█"


INTERFACE_COLUMNS = (
    Column("name", "Iface", 1, help="the wireless interface"),
    Column("backend", "Backend", 1, help="the daemon driving it: iwd, wpa_supplicant, "
               "netctl; NetworkManager (ro) = shown read-only; +x = a second daemon too"),
    Column("state", "State", 1, help="the backend's link state (COMPLETED, connected ...)"),
    Column("ssid", "SSID", 1, help="the network it is connected to"),
    Column("signal", "Signal", 2, help="signal in dBm and 0-4 bars"),
    Column("channel", "Ch", 3, align="right", help="channel of the connection"),
    Column("rate", "Rate", 4, align="right", help="transmit bitrate"),
    Column("address", "Address", 5, help="the first IP address"),
    Column("radio", "Radio", 3, help="on, or off when rfkill blocks it"),
)
SCAN_COLUMNS = (
    Column("ssid", "SSID", 1, help="the network's name; (hidden) for one that hides it"),
    Column("security", "Security", 1, help="as the access point advertises it: open, "
               "OWE, WEP, WPA, WPA2, WPA3, WPA2/WPA3 (transition: either), enterprise "
               "(802.1X); personal / open/OWE: all iwd says when the kernel has no beacon"),
    Column("signal", "Signal", 1, help="signal in dBm and 0-4 bars"),
    Column("channel", "Ch", 2, align="right", help="channel"),
    Column("mark", "", 1, help="connected, or known to the backend"),
    Column("bssid", "BSSID", 4, help="the access point's address (iwd: from the kernel's "
                                     "scan table)"),
)
KNOWN_COLUMNS = (
    Column("ssid", "Known network", 1, help="a network the backend remembers"),
    Column("security", "Security", 2, help="as the backend stores it"),
    Column("auto", "Auto", 1, help="joined by itself when in range"),
    Column("boot", "Boot", 2, help="started at boot: the netctl profile enabled, or "
               "autoconnect with the backend's unit enabled"),
    Column("hidden", "Hidden", 3, help="probed for by name"),
    Column("eap", "802.1X", 2, help="enterprise networks: the method and identity"),
    Column("server", "Server", 2, help="enterprise networks: whether the server's "
               "certificate is checked (a CA and its name); 'NOT checked': a rogue "
               "access point could collect the password"),
    Column("note", "Note", 4, help="connected, or why the backend skips it now"),
)


def signal_text(dbm: float | None) -> Cell:
    if dbm is None:
        return Cell("-", "muted")
    bars = signal_bars(dbm)
    tone = "good" if bars >= 3 else "warn" if bars >= 2 else "bad"
    return Cell(f"{dbm:.0f} dBm {BARS[:bars]}{'·' * (4 - bars)}", tone)


def rate_text(kbps: int | None) -> str:
    if kbps is None:
        return "-"
    return f"{kbps / 1000:g} Mb/s"


def _state_tone(interface: WlanInterface) -> str:
    if interface.link.connected:
        return "good"
    if interface.backend is None or interface.errors:
        return "bad"
    return "warn" if interface.link.state not in ("disconnected", "DISCONNECTED",
                                                  "INACTIVE") else "muted"


def interface_rows(snapshot: WlanSnapshot) -> list[Row]:
    rows = []
    for each in snapshot.interfaces:
        link = each.link
        backend = BACKEND_TITLES.get(each.backend or "", "none")
        if each.read_only:
            backend += " (ro)"
        if each.also_managed_by:
            backend += " +" + "+".join(BACKEND_TITLES[b] for b in each.also_managed_by)
        radio = Cell("off", "bad") if each.rfkill and each.rfkill.blocked else \
            Cell("on") if each.rfkill else Cell("-", "muted")
        rows.append(row_of(each.name, INTERFACE_COLUMNS, {
            "name": Cell(each.name, "bold"),
            "backend": Cell(backend, "bad" if each.backend is None or each.also_managed_by
                                else ""),
            "state": Cell(link.state, _state_tone(each)),
            "ssid": Cell(link.ssid and display(link.ssid) or "-"),
            "signal": signal_text(link.signal_dbm) if link.connected else Cell("-", "muted"),
            "channel": Cell(str(link.channel) if link.channel else "-"),
            "rate": Cell(rate_text(link.bitrate_kbps) if link.connected else "-"),
            "address": Cell(each.addresses[0] if each.addresses else "-"),
            "radio": radio,
        }, data=each))
    return rows


def scan_rows(interface: WlanInterface | None) -> list[Row]:
    if interface is None:
        return []
    rows = []
    for number, entry in enumerate(sorted_scan(interface.scan)):
        mark = Cell("connected", "good") if entry.connected else \
            Cell("known", "bold") if entry.known else Cell("")
        security = Cell(entry.security, "warn" if entry.security in ("open", "WEP") else
                        "muted" if entry.security in ("personal", "open/OWE", "unknown")
                        else "")
        key = f"{entry.bssid or ''}/{entry.title}" if entry.bssid or entry.ssid else str(number)
        rows.append(row_of(key, SCAN_COLUMNS, {
            "ssid": Cell(entry.title, "muted" if entry.hidden else ""),
            "security": security, "signal": signal_text(entry.signal_dbm),
            "channel": Cell(str(entry.channel) if entry.channel else "-"),
            "mark": mark, "bssid": Cell(entry.bssid or "-"),
        }, data=entry))
    return rows


def _on_off(value: bool | None) -> Cell:
    if value is None:
        return Cell("-", "muted")
    return Cell("on", "good") if value else Cell("off", "muted")


def known_rows(snapshot: WlanSnapshot, interface: WlanInterface | None) -> list[Row]:
    if interface is None:
        return []
    rows = []
    for net in snapshot.networks_of(interface):
        note = net.problem or ("connected" if net.current else "")
        rows.append(row_of(net.key, KNOWN_COLUMNS, {
            "ssid": Cell(net.title, "good" if net.current else ""),
            "security": Cell(net.security or "?", "warn" if net.security in ("open", "WEP")
                                 else ""),
            "auto": _on_off(net.autoconnect),
            "boot": _on_off(net.at_boot if net.at_boot is not None
                            else (net.autoconnect and interface.backend_unit_enabled
                                  if interface.backend_unit_enabled is not None else None)),
            "hidden": Cell("yes" if net.hidden else ""),
            "eap": Cell(f"{net.eap.title} {net.eap.identity or ''}".strip()
                        if net.eap else ""),
            "server": (Cell("checked", "good") if net.eap.server_checked
                       else Cell("NOT checked", "bad")) if net.eap else Cell(""),
            "note": Cell(note, "warn" if net.problem else "good" if net.current else ""),
        }, data=net))
    return rows


def interface_details(interface: WlanInterface | None) -> list[str]:
    """Lines under the tables: what the highlighted interface's row cannot hold."""
    if interface is None:
        return []
    link = interface.link
    lines = []
    parts = [f"{interface.name}"]
    if interface.mac:
        parts.append(f"MAC {interface.mac}")
    if interface.phy:
        parts.append(interface.phy)
    if interface.rfkill is not None:
        parts.append(f"radio {interface.rfkill.describe()}")
    if interface.backend_unit:
        state = {True: "enabled at boot", False: "not enabled at boot",
                 None: "boot state unknown"}[interface.backend_unit_enabled]
        parts.append(f"{interface.backend_unit} {state}")
    lines.append(", ".join(parts))
    if link.connected:
        bits = [f"BSSID {link.bssid}" if link.bssid else "",
                f"{link.frequency} MHz" if link.frequency else "",
                link.security or ""]
        lines.append("Link: " + ", ".join(bit for bit in bits if bit))
    lines += [text for text in (interface.read_only, interface.hint) if text]
    lines += list(interface.errors)
    return lines
