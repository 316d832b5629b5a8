"""WLAN pane: wireless interfaces with their backend and link, the networks in range,
and the networks the backend knows; scan, connect, disconnect, forget, autoconnect
and Wi-Fi QR codes, each change shown as a plan first."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, ClassVar

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.widgets import DataTable, Static

from zsn.lint import Finding
from zsn.plan import Plan
from zsn.tui.panes.base import LivePane
from zsn.wlan import actions
from zsn.wlan.live import read_wlan
from zsn.wlan.model import KnownNetwork, ScanEntry, WlanInterface, WlanSnapshot, needs_passphrase
from zsn.wlan.ssid import display
from zsn.wlan.view import (
    INTERFACE_COLUMNS,
    KNOWN_COLUMNS,
    SCAN_COLUMNS,
    ViewColumn,
    ViewRow,
    interface_details,
    interface_rows,
    known_rows,
    scan_rows,
    visible_columns,
)

TONE_VARIABLES = {"good": "text-success", "warn": "text-warning", "bad": "text-error",
                  "muted": "text-muted"}
TABLES = (("#wlan-interfaces", INTERFACE_COLUMNS), ("#wlan-scan", SCAN_COLUMNS),
          ("#wlan-known", KNOWN_COLUMNS))


class WlanPane(LivePane):
    PANE_HELP: ClassVar[str] = """\
### WLAN
The upper table lists the wireless interfaces: the **backend** driving each (iwd,
wpa_supplicant, netctl; NetworkManager's are shown read-only, `(ro)`, with the
nmcli command to use instead; `+x` means a second daemon fights over the radio),
the link **state**, SSID, **signal** (dBm and bars), channel, transmit **rate**,
address and whether rfkill lets the **radio** transmit.

The middle table lists the networks in range of the highlighted interface,
strongest first, hidden ones last, with their security, channel and whether the
backend knows them. The lower table lists the networks the backend knows:
**Auto** = joins by itself, **Boot** = started at boot (netctl profiles; for iwd
and wpa_supplicant: autoconnect and the daemon's unit enabled).

- `s` scans now; `enter`/`c` connects to the highlighted network (the passphrase
  field is masked; WPA2 keys are stored as the derived PSK where the backend
  allows), `h` connects to a hidden network by name, `d` disconnects.
- `a` turns autoconnect on or off (netctl: start at boot), `x` forgets a network,
  `v` shows its Wi-Fi QR code for a phone (`p` there shows the passphrase).
- `l` lint findings (`f` applies a safe fix). Every change shows its plan first.
"""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("s", "scan", "Scan"),
        Binding("c", "connect", "Connect"),
        Binding("enter", "connect", "Connect", show=False),
        Binding("h", "connect_hidden", "Hidden…"),
        Binding("d", "disconnect", "Disconnect"),
        Binding("a", "autoconnect", "Autoconnect"),
        Binding("x", "forget", "Forget", show=False),
        Binding("v", "qr", "QR code", show=False),
        Binding("l", "lint", "Lint", show=False),
        Binding("r", "refresh_now", "Refresh", show=False),
        Binding("tab", "focus_next_table", "Next table", show=False),
    ]

    def __init__(self, host: Any, refresh_seconds: float, **kwargs: Any) -> None:
        super().__init__(host, refresh_seconds, **kwargs)
        self._snapshot: WlanSnapshot | None = None
        self._cells: dict[str, dict[str, dict[str, Any]]] = {name: {} for name, _ in TABLES}
        self._rows: dict[str, dict[str, ViewRow]] = {name: {} for name, _ in TABLES}
        self._columns: dict[str, tuple[str, ...]] = {}
        self._shown_interface: str | None = None
        self._busy_scanning: set[str] = set()
        self._details = ""
        self._status: tuple[list[str], str] | None = None

    def compose(self) -> ComposeResult:
        yield Static("", classes="pane-status")
        titles = {"#wlan-interfaces": "Wireless interfaces", "#wlan-scan": "Networks in range",
                  "#wlan-known": "Known networks"}
        for name, _columns in TABLES:
            table: DataTable[Any] = DataTable(id=name[1:], cursor_type="row")
            table.border_title = titles[name]
            yield table
        yield Static("", id="wlan-details")

    def on_mount(self) -> None:
        self.status_line().display = False
        super().on_mount()

    def on_resize(self) -> None:
        if self._snapshot is not None:
            self.show(self._snapshot)

    def _set_columns(self, name: str, columns: tuple[ViewColumn, ...],
                     rows: list[ViewRow]) -> None:
        """Show the columns that fit the pane's width, whole; rebuild when that changes."""
        width = (self.size.width or self.app.size.width) - 4  # border and scrollbar
        shown = tuple(column.key for column in visible_columns(columns, width, rows))
        if self._columns.get(name) == shown:
            return
        table = self.query_one(name, DataTable)
        table.clear(columns=True)
        for column in columns:
            if column.key in shown:
                table.add_column(column.label, key=column.key)
        self._columns[name] = shown
        self._cells[name] = {}

    # -- data ----------------------------------------------------------------------
    def fetch(self) -> WlanSnapshot:
        return read_wlan(self.host)

    def show(self, snapshot: WlanSnapshot) -> None:
        self._snapshot = snapshot
        self._show_status(snapshot)
        with self.app.batch_update():
            self._fill("#wlan-interfaces", INTERFACE_COLUMNS, interface_rows(snapshot))
            self._update_lower()

    def _show_status(self, snapshot: WlanSnapshot) -> None:
        if not snapshot.interfaces:
            status = (["No wireless interface on this machine (no "
                       "/sys/class/net/*/phy80211)."], "info")
        else:
            lines = list(dict.fromkeys(snapshot.errors))
            lines += [f"{f.id} {f.severity}: {f.message} (l for fixes)"
                      for f in snapshot.findings if f.severity == "error"]
            status = (lines[:4] + ([f"... and {len(lines) - 4} more"] if len(lines) > 4
                                   else []), "warning")
        if status != self._status:  # an unchanged status line is not redrawn
            self._status = status
            self.set_status(*status)

    def _cell(self, row: ViewRow, column: ViewColumn) -> Text:
        cell = row.cells[column.key]
        style = "bold" if cell.tone == "bold" else self.theme_colour(
            TONE_VARIABLES.get(cell.tone, "")) if cell.tone else ""
        return Text(cell.text, style=style, justify="right" if column.align == "right"
                    else "left", no_wrap=True)

    def _fill(self, name: str, columns: tuple[ViewColumn, ...], rows: list[ViewRow]) -> None:
        self._set_columns(name, columns, rows)
        table = self.query_one(name, DataTable)
        shown = [column for column in columns if column.key in self._columns.get(name, ())]
        self._rows[name] = {row.key: row for row in rows}
        cells = {row.key: {column.key: self._cell(row, column) for column in shown}
                 for row in rows}
        old = self._cells[name]
        in_place = [key for key in old if key in cells] + [key for key in cells if key not in old]
        if in_place != list(cells):
            # Updating in place would leave rows out of order (a signal moved past
            # another, a network appeared mid-list): rebuild, the cursor staying put.
            selected = self._selected(name)
            table.clear()
            self._cells[name] = {}
            self._update_rows(table, cells, self._cells[name])
            if selected is not None and selected.key in self._cells[name]:
                table.move_cursor(row=table.get_row_index(selected.key))
            return
        self._update_rows(table, cells, self._cells[name])

    def selected_interface(self) -> WlanInterface | None:
        row = self._selected("#wlan-interfaces")
        if row is None and self._snapshot and self._snapshot.interfaces:
            return self._snapshot.interfaces[0]
        return row.data if row is not None else None

    def _selected(self, name: str) -> ViewRow | None:
        table = self.query_one(name, DataTable)
        if table.row_count == 0:
            return None
        key = table.coordinate_to_cell_key(table.cursor_coordinate).row_key.value
        return self._rows[name].get(str(key))

    def _update_lower(self) -> None:
        if self._snapshot is None:
            return
        interface = self.selected_interface()
        if interface is not None and interface.name != self._shown_interface:
            self._shown_interface = interface.name
            for name in ("#wlan-scan", "#wlan-known"):
                self.query_one(name, DataTable).clear()
                self._cells[name] = {}
        scan_table = self.query_one("#wlan-scan", DataTable)
        scanning = " (scanning…)" if interface and interface.name in self._busy_scanning else ""
        title = f"Networks in range of {interface.name}{scanning}" if interface \
            else "Networks in range"
        if scan_table.border_title != title:  # setting it repaints the whole table
            scan_table.border_title = title
        self._fill("#wlan-scan", SCAN_COLUMNS, scan_rows(interface))
        self._fill("#wlan-known", KNOWN_COLUMNS, known_rows(self._snapshot, interface))
        details = "\n".join(interface_details(interface))
        if details != self._details:
            self._details = details
            self.query_one("#wlan-details", Static).update(Text(details))

    def on_data_table_row_highlighted(self, event: DataTable.RowHighlighted) -> None:
        if event.data_table.id == "wlan-interfaces" and self._snapshot is not None:
            self._update_lower()

    def on_data_table_row_selected(self, event: DataTable.RowSelected) -> None:
        if event.data_table.id in ("wlan-scan", "wlan-known"):
            self.action_connect()

    def focus_main(self) -> None:
        """The networks in range take the keyboard: connecting is what the pane is for
        (tab reaches the known networks, shift+tab the interfaces)."""
        self.query_one("#wlan-scan", DataTable).focus()

    def action_focus_next_table(self) -> None:
        self.screen.focus_next(DataTable)

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
        known_table = self.query_one("#wlan-known", DataTable)
        if known_table.has_focus:
            row = self._selected("#wlan-known")
            return None, row.data if row else None
        row = self._selected("#wlan-scan")
        entry: ScanEntry | None = row.data if row else None
        known = None
        if entry is not None and entry.ssid is not None and self._snapshot is not None:
            interface = self.selected_interface()
            if interface is not None:
                known = next((n for n in self._snapshot.networks_of(interface)
                              if n.ssid == entry.ssid), None)
        return entry, known

    def _offer_plan(self, make_plan: Callable[[], Plan], done: str) -> None:
        """Build the plan in a thread (it reads the backend), show it, apply on y."""
        from zsn.tui.screens.plan import PlanScreen

        def show_plan(plan: Plan) -> None:
            def answered(apply: bool | None) -> None:
                if apply:
                    self.run_in_thread(lambda: self._apply(plan),
                                       lambda notes: self._applied(done, notes),
                                       self._failed)
            self.app.push_screen(PlanScreen(plan), answered)

        self.run_in_thread(make_plan, show_plan, lambda message: self.notify(
            message, title="Nothing changed", severity="error", timeout=10))

    @staticmethod
    def _apply(plan: Plan) -> list[str]:
        plan.apply()
        return list(plan.notes)

    def _applied(self, done: str, notes: list[str]) -> None:
        self.notify("\n".join([done, *notes]), timeout=6 if not notes else 10)
        self.poll(force=True)

    def _failed(self, message: str) -> None:
        self.notify(message, title="Failed", severity="error", timeout=12)
        self.poll(force=True)

    def action_scan(self) -> None:
        interface = self.selected_interface()
        if interface is None:
            return
        self._busy_scanning.add(interface.name)
        self._update_lower()

        def finished(_: object = None) -> None:
            self._busy_scanning.discard(interface.name)
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
            self.action_connect_hidden()
            return
        if entry is not None and entry.hidden:
            self.action_connect_hidden()
            return
        ssid = known.ssid if known is not None else entry.ssid if entry else None
        assert ssid is not None
        security = entry.security if entry is not None else known.security if known else None
        if known is not None or not needs_passphrase(security):
            self._plan_connect(interface, ssid, None, False)  # stored key, or open
            return
        self._ask_and_connect(interface, display(ssid), hidden=False, known=False)

    def action_connect_hidden(self) -> None:
        interface = self._interface_for_change()
        if interface is not None:
            self._ask_and_connect(interface, "", hidden=True, known=False)

    def _ask_and_connect(self, interface: WlanInterface, ssid: str, *, hidden: bool,
                         known: bool) -> None:
        from zsn.tui.screens.wifi import ConnectRequest, ConnectScreen

        def answered(request: ConnectRequest | None) -> None:
            if request is not None:
                self._plan_connect(interface, request.ssid, request.passphrase, request.hidden)

        self.app.push_screen(ConnectScreen(interface.name, ssid, hidden=hidden, known=known),
                             answered)

    def _plan_connect(self, interface: WlanInterface, ssid: bytes, passphrase: Any,
                      hidden: bool) -> None:
        snapshot = self._snapshot
        assert snapshot is not None
        self._offer_plan(lambda: actions.plan_connect(self.host, snapshot, interface, ssid,
                                                      passphrase, hidden),
                         f"{interface.name}: connected to {display(ssid)}")

    def action_disconnect(self) -> None:
        interface = self._interface_for_change()
        if interface is not None and self._snapshot is not None:
            snapshot = self._snapshot
            self._offer_plan(lambda: actions.plan_disconnect(self.host, snapshot, interface),
                             f"{interface.name}: disconnected")

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
            self._offer_plan(lambda: actions.plan_forget(self.host, snapshot, interface,
                                                         known.ssid),
                             f"{known.title}: forgotten")

    def action_autoconnect(self) -> None:
        target = self._known_target()
        if target is not None and self._snapshot is not None:
            interface, known = target
            snapshot = self._snapshot
            state = not known.autoconnect
            self._offer_plan(lambda: actions.plan_autoconnect(self.host, snapshot, interface,
                                                              known.ssid, state),
                             f"{known.title}: autoconnect {'on' if state else 'off'}")

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
                self._offer_plan(finding.fix_plan, f"{finding.id}: fixed")

        self.app.push_screen(FindingsScreen(findings, empty_text="No findings: the Wi-Fi "
                                            "setup looks right."), chosen)
