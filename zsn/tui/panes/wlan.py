"""WLAN pane: wireless interfaces with their backend and link, the networks in range,
and the networks the backend knows; scan, connect, disconnect, forget, autoconnect
and Wi-Fi QR codes, each change shown as a plan first."""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any, ClassVar

from textual.app import ComposeResult
from textual.binding import Binding, BindingType

from zsn.lint import Finding
from zsn.system import wireless
from zsn.system.host import Host
from zsn.tui.panes.base import LivePane, NotNow
from zsn.tui.widgets.details import DetailsBox
from zsn.tui.widgets.status import StatusLine
from zsn.tui.widgets.table import LiveTable
from zsn.wlan import actions
from zsn.wlan.lint import read_with_findings
from zsn.wlan.live import ScanFollower
from zsn.wlan.model import KnownNetwork, ScanEntry, WlanInterface, WlanSnapshot, needs_passphrase
from zsn.wlan.secrets import Passphrase
from zsn.wlan.ssid import display
from zsn.wlan.view import (
    INTERFACE_COLUMNS,
    KNOWN_COLUMNS,
    SCAN_COLUMNS,
    interface_details,
    interface_rows,
    known_rows,
    scan_rows,
)


class WlanPane(LivePane[WlanSnapshot]):
    PANE_HELP: ClassVar[str] = """\
### WLAN
The upper table lists the wireless interfaces with the **backend** driving each (iwd,
wpa_supplicant, netctl; NetworkManager's are shown read-only, `(ro)`, with the
nmcli command to use instead; `+x` means a second daemon fights over the radio).

The middle table lists the networks in range of the highlighted interface: the
connected one first, then by signal, hidden ones last. It is read again as every scan
ends, whoever started it (iwd's own periodic scans too). The lower table lists the
networks its backend knows. The line at the bottom: MAC, radio (rfkill), the
backend's unit at boot, and the link's BSSID, frequency and security.

- `s` scans now; `enter`/`c` connects to the highlighted network (a masked
  passphrase field when one is needed; WPA2 keys are stored as the derived PSK
  where the backend allows; an enterprise network opens the 802.1X form, whose
  fields follow the method, the CA and server name always asked for), `h` a hidden
  network by name, `d` disconnects.
- `a` turns autoconnect on or off (netctl: start at boot), `x` forgets a network,
  `v` shows its Wi-Fi QR code for a phone (`p` there shows the passphrase).
- `l` lint findings (`f` applies a safe fix). Every change shows its plan first.
"""

    # Most important first: the footer shows as many as fit.
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("c", "connect", "Connect"),
        Binding("s", "scan", "Scan"),
        Binding("tab", "focus_next_table", "Next table"),
        Binding("d", "disconnect", "Disconnect"),
        Binding("h", "connect_hidden", "Hidden…"),
        Binding("a", "autoconnect", "Autoconnect"),
        Binding("x", "forget", "Forget"),
        Binding("v", "qr", "QR code"),
        Binding("l", "lint", "Lint"),
        Binding("r", "refresh_now", "Refresh", show=False),
    ]

    def __init__(self, host: Host, refresh_seconds: float, **kwargs: Any) -> None:
        super().__init__(host, refresh_seconds, **kwargs)
        self._snapshot: WlanSnapshot | None = None
        self._shown_interface: str | None = None
        self._busy_scanning: set[str] = set()
        self._scans = ScanFollower(host, self._scan_ended)
        self._followed: tuple[str, ...] = ()
        self._loop: asyncio.AbstractEventLoop | None = None

    def _scan_ended(self, _name: str) -> None:
        """A scan (or part of one) ended on a shown interface (the watch's thread). Not
        `call_from_thread`: it waits for the UI, which may be closing the watch."""
        if self._loop is not None:
            with contextlib.suppress(RuntimeError):  # the loop is closed
                self._loop.call_soon_threadsafe(self._read_after_scan)

    def _read_after_scan(self) -> None:
        if self.is_mounted and self._is_shown():
            self.poll(force=True)

    def on_mount(self) -> None:
        # From the start, not from the first time the pane is shown: the scans iwd
        # makes meanwhile are there when it opens.
        self._loop = asyncio.get_running_loop()
        self._followed = tuple(wireless.wireless_interfaces(self.host))
        self._scans.follow(self._followed)

    def on_unmount(self) -> None:
        self._scans.close()

    def compose(self) -> ComposeResult:
        yield StatusLine()
        yield LiveTable(INTERFACE_COLUMNS, id="wlan-interfaces",
                        title="Wireless interfaces",
                        empty_text="No wireless interface (no /sys/class/net/*/phy80211).")
        yield LiveTable(SCAN_COLUMNS, id="wlan-scan", title="Networks in range",
                        empty_text="No networks in range (s scans).")
        yield LiveTable(KNOWN_COLUMNS, id="wlan-known", title="Known networks",
                        empty_text="No known networks.")
        yield DetailsBox(id="wlan-details")

    def focus_main(self) -> None:
        """The networks in range take the keyboard: connecting is what the pane is for
        (tab reaches the known networks, shift+tab the interfaces)."""
        tables = self.query("#wlan-scan")
        if tables:
            tables.first().focus()
        else:  # not composed yet
            super().focus_main()

    # -- data ----------------------------------------------------------------------
    def fetch(self) -> WlanSnapshot:
        return read_with_findings(self.host)

    def show(self, snapshot: WlanSnapshot) -> None:
        self._snapshot = snapshot
        names = tuple(each.name for each in snapshot.interfaces)
        if names != self._followed:
            self._followed = names
            self._scans.follow(names)
        with self.app.batch_update():
            self._show_status(snapshot)
            self.query_one("#wlan-interfaces", LiveTable).update(
                interface_rows(snapshot))
            self._update_lower()

    def _show_status(self, snapshot: WlanSnapshot) -> None:
        lines = list(dict.fromkeys(snapshot.errors))
        lines += [f"{f.id} {f.severity}: {f.message} (l for fixes)"
                  for f in snapshot.findings if f.severity == "error"]
        self.set_status(lines[:4] + ([f"... and {len(lines) - 4} more"] if len(lines) > 4
                                     else []), "warning")

    def selected_interface(self) -> WlanInterface | None:
        if self._snapshot is None or not self._snapshot.interfaces:
            return None
        key = self.query_one("#wlan-interfaces", LiveTable).cursor_key
        found = self._snapshot.interface(key) if key is not None else None
        return found or self._snapshot.interfaces[0]

    def _update_lower(self) -> None:
        if self._snapshot is None:
            return
        scan = self.query_one("#wlan-scan", LiveTable)
        known = self.query_one("#wlan-known", LiveTable)
        interface = self.selected_interface()
        name = interface.name if interface else None
        if name != self._shown_interface:  # another interface: its rows replace the old
            self._shown_interface = name
            scan.clear()
            known.clear()
        scanning = " (scanning…)" if name in self._busy_scanning else ""
        scan.set_title(f"Networks in range of {name}{scanning}" if name
                       else "Networks in range")
        scan.set_empty_text(
            "No wireless interface to scan with." if interface is None
            else f"No networks: no Wi-Fi daemon manages {name} to scan with (see below)."
            if interface.backend is None else "No networks in range (s scans).")
        scan.update(scan_rows(interface))
        known.update(known_rows(self._snapshot, interface))
        self.query_one("#wlan-details", DetailsBox).show_lines(interface_details(interface))

    def on_live_table_highlighted(self, event: LiveTable.Highlighted) -> None:
        if event.table.id == "wlan-interfaces" and self._snapshot is not None:
            self._update_lower()
        self.state_changed()

    def on_descendant_focus(self) -> None:
        self.state_changed()

    def urgent_keys(self) -> tuple[str, ...]:
        """On a known network: what can be done with it; nothing in range: scan."""
        known = self.query("#wlan-known")
        if known and known.first().has_focus:
            return ("a", "x", "v") if known.first(LiveTable).cursor_row else ("tab",)
        scan = self.query("#wlan-scan")
        interface = self.selected_interface()
        if scan and not scan.first(LiveTable).row_count and interface is not None \
                and interface.backend is not None:
            return ("s",)
        return ()

    def not_now(self, action: str, parameters: tuple[object, ...]) -> NotNow | None:
        """No wireless interface, or none a daemon zsn drives manages: no changes;
        connecting needs a network highlighted, the known networks' keys a known one."""
        if action in ("refresh_now", "lint", "focus_next_table") or self._snapshot is None:
            return None
        interface = self.selected_interface()
        if interface is None:
            return NotNow("No wireless interface here.", hidden=True)
        if interface.read_only or interface.backend is None:
            return NotNow(interface.read_only or interface.hint
                          or f"No Wi-Fi daemon manages {interface.name}.", hidden=True)
        if action == "scan" and interface.name in self._busy_scanning:
            return NotNow(f"{interface.name} is scanning.")
        if action == "disconnect" and not interface.link.in_use:
            return NotNow(f"{interface.name} is not connected.", hidden=True)
        if action in ("connect", "autoconnect", "forget", "qr"):
            return self._network_not_now(action)
        return None

    def _network_not_now(self, action: str) -> NotNow | None:
        entry, known = self._focused_network()
        if action == "connect" and entry is None and known is None:
            return NotNow("Highlight a network to connect to (tab moves between the "
                          "tables); h connects to a hidden network by its name.")
        if action != "connect" and known is None:
            return NotNow("Highlight a known network (lower table, or a network marked "
                          "known).", hidden=entry is not None)
        return None

    def on_live_table_selected(self, event: LiveTable.Selected) -> None:
        if event.table.id in ("wlan-scan", "wlan-known"):
            self.action_connect()

    def action_focus_next_table(self) -> None:
        self.screen.focus_next(LiveTable)

    def action_refresh_now(self) -> None:
        self.poll(force=True)

    # -- actions -----------------------------------------------------------------------
    def _interface_for_change(self) -> WlanInterface | None:
        interface = self.selected_interface()
        if interface is None:
            self.notify("No wireless interface.", severity="warning")
            return None
        if interface.read_only or interface.backend is None:
            self.notify(interface.read_only or interface.hint or "No backend.",
                        title="Nothing changed", severity="warning", timeout=10)
            return None
        return interface

    def _focused_network(self) -> tuple[ScanEntry | None, KnownNetwork | None]:
        """The scan entry or known network under the cursor of the focused lower table
        (the scan table when neither has the focus)."""
        known_table = self.query_one("#wlan-known", LiveTable)
        if known_table.has_focus:
            row = known_table.cursor_row
            return None, row.data if row is not None else None
        row = self.query_one("#wlan-scan", LiveTable).cursor_row
        entry: ScanEntry | None = row.data if row is not None else None
        known = None
        if entry is not None and entry.ssid is not None and self._snapshot is not None:
            interface = self.selected_interface()
            if interface is not None:
                known = next((n for n in self._snapshot.networks_of(interface)
                              if n.ssid == entry.ssid), None)
        return entry, known

    def action_scan(self) -> None:
        interface = self.selected_interface()
        if interface is None:
            return
        self._busy_scanning.add(interface.name)
        self._update_lower()
        self.state_changed()

        def finished(_: object = None) -> None:
            self._busy_scanning.discard(interface.name)
            self.state_changed()
            self.poll(force=True)

        def failed(message: str) -> None:
            finished()
            self.notify(message, title="Scan", severity="error", timeout=10)

        self.run_in_thread(lambda: actions.scan(self.host, interface), finished, failed)

    def action_connect(self) -> None:
        interface = self._interface_for_change()
        if interface is None:
            return
        entry, known = self._focused_network()
        if entry is None and known is None:
            self.notify("Highlight a network to connect to (tab moves between the tables); "
                        "h connects to a hidden network by its name.", severity="warning")
            return
        if entry is not None and entry.hidden:
            self.action_connect_hidden()  # the highlighted access point hides its name
            return
        ssid = known.ssid if known is not None else entry.ssid if entry else None
        assert ssid is not None
        security = entry.security if entry is not None else known.security if known else None
        if security == "enterprise" and known is None:
            self._ask_eap_and_connect(interface, ssid)
            return
        if known is not None or not needs_passphrase(security):
            self._plan_connect(interface, ssid, None, False)  # stored key, or open
            return
        self._ask_and_connect(interface, display(ssid), hidden=False)

    def _ask_eap_and_connect(self, interface: WlanInterface, ssid: bytes) -> None:
        """An enterprise network: the 802.1X form, whose build makes the plan."""
        from zsn.tui.screens.eap_form import EapFormScreen

        snapshot = self._snapshot
        assert snapshot is not None
        self.app.push_screen(EapFormScreen(interface.name, display(ssid), lambda request:
                                           actions.plan_connect(self.host, snapshot,
                                                                interface, ssid, None, False,
                                                                request)), self.show_plan)

    def action_connect_hidden(self) -> None:
        interface = self._interface_for_change()
        if interface is not None:
            self._ask_and_connect(interface, "", hidden=True)

    def _ask_and_connect(self, interface: WlanInterface, ssid: str, *, hidden: bool) -> None:
        from zsn.tui.screens.wifi import ConnectRequest, ConnectScreen

        def answered(request: ConnectRequest | None) -> None:
            if request is not None:
                self._plan_connect(interface, request.ssid, request.passphrase, request.hidden)

        self.app.push_screen(ConnectScreen(interface.name, ssid, hidden=hidden), answered)

    def _plan_connect(self, interface: WlanInterface, ssid: bytes,
                      passphrase: Passphrase | None, hidden: bool) -> None:
        snapshot = self._snapshot
        assert snapshot is not None
        self.run_plan(lambda: actions.plan_connect(self.host, snapshot, interface, ssid,
                                                   passphrase, hidden))

    def action_disconnect(self) -> None:
        interface = self._interface_for_change()
        if interface is not None and self._snapshot is not None:
            snapshot = self._snapshot
            self.run_plan(lambda: actions.plan_disconnect(self.host, snapshot, interface))

    def _known_target(self) -> tuple[WlanInterface, KnownNetwork] | None:
        interface = self._interface_for_change()
        if interface is None:
            return None
        _entry, known = self._focused_network()
        if known is None:
            self.notify("Highlight a known network (lower table, or a network marked "
                        "known).", severity="warning")
            return None
        return interface, known

    def action_forget(self) -> None:
        target = self._known_target()
        if target is not None and self._snapshot is not None:
            interface, known = target
            snapshot = self._snapshot
            self.run_plan(lambda: actions.plan_forget(self.host, snapshot, interface,
                                                      known.ssid))

    def action_autoconnect(self) -> None:
        target = self._known_target()
        if target is not None and self._snapshot is not None:
            interface, known = target
            snapshot = self._snapshot
            state = not known.autoconnect
            self.run_plan(lambda: actions.plan_autoconnect(self.host, snapshot, interface,
                                                           known.ssid, state))

    def action_qr(self) -> None:
        from zsn.tui.screens.wifi import WifiQrScreen
        from zsn.wlan.wifiqr import WifiCode, wifi_code

        target = self._known_target()
        if target is None:
            return
        interface, known = target

        def read() -> WifiCode:
            return wifi_code(self.host, known, interface.config_path)

        def show(code: WifiCode) -> None:
            self.app.push_screen(WifiQrScreen(f"{known.title} ({interface.name})", code))

        self.run_in_thread(read, show, lambda message: self.notify(
            message, title="QR code", severity="error", timeout=10))

    def action_lint(self) -> None:
        from zsn.tui.screens.findings import FindingsScreen

        findings = list(self._snapshot.findings) if self._snapshot else []

        def chosen(finding: Finding | None) -> None:
            if finding is not None and finding.fix_plan is not None:
                self.run_plan(finding.fix_plan)

        self.app.push_screen(FindingsScreen(findings, empty_text="No findings: the Wi-Fi "
                                            "setup looks right."), chosen)
