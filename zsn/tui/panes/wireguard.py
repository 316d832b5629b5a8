"""WireGuard pane: interfaces and peers, live, the way `wg show` would, refreshed in place."""

from __future__ import annotations

import time
from typing import Any, ClassVar

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.widgets import DataTable, Static

from zsn.format import human_bytes, human_duration, human_rate, short_key
from zsn.rates import RateTracker
from zsn.tui.panes.base import LivePane
from zsn.tui.panes.wireguard_actions import ACTION_BINDINGS, ACTION_HELP, WireGuardActions
from zsn.wireguard.live import LiveCache, read_wireguard
from zsn.wireguard.model import InterfaceState, PeerState, WireGuardSnapshot, handshake_state


def now() -> float:
    """The clock used for handshake ages (replaced in snapshot tests)."""
    return time.time()


INTERFACE_COLUMNS = (
    ("name", "Interface"), ("type", "Type"), ("port", "Port"), ("peers", "Peers"),
    ("addresses", "Addresses"), ("key", "Public key"),
)
PEER_COLUMNS = (
    ("name", "Peer"), ("handshake", "Handshake"), ("rx_rate", "↓ Rate"), ("tx_rate", "↑ Rate"),
    ("endpoint", "Endpoint"), ("allowed", "Allowed IPs"), ("rx", "Received"), ("tx", "Sent"),
    ("key", "Key"),
)


class WireGuardPane(WireGuardActions, LivePane):
    PANE_HELP: ClassVar[str] = """\
### WireGuard
The upper table lists interfaces (kernel or userspace: wireguard-go, boringtun);
the lower one the peers of the highlighted interface.

- **Peer**: the comment above the peer's `[Peer]` block in `/etc/wireguard/IFACE.conf`
  (`# name`, `# Name = name`), else the shortened public key.
- **Handshake**: time since the latest handshake. `never` = no handshake yet;
  `stale` = older than 180 s, so the peer has no working session.
- **↓ Rate / ↑ Rate**: received / sent per second over the last refresh.
- **Received / Sent**: totals since the interface came up.
""" + ACTION_HELP

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("enter", "peer_details", "Details", show=True),
        Binding("r", "refresh_now", "Refresh", show=False),  # polling makes it rare
        Binding("tab", "focus_next_table", "Next table", show=False),
        *ACTION_BINDINGS,
    ]

    def __init__(self, host: Any, refresh_seconds: float, **kwargs: Any) -> None:
        super().__init__(host, refresh_seconds, **kwargs)
        self._live_cache = LiveCache()
        self._rates = RateTracker()
        self._snapshot: WireGuardSnapshot | None = None
        self._seen: set[str] = set()
        self._vanished: set[str] = set()
        self._peer_cells: dict[str, dict[str, Any]] = {}
        self._interface_cells: dict[str, dict[str, Any]] = {}
        self._shown_interface: str | None = None
        self._rate_cells: dict[str, tuple[float | None, float | None]] = {}

    def compose(self) -> ComposeResult:
        yield Static("", classes="pane-status")
        yield Static("", id="wg-findings")
        interfaces: DataTable[Any] = DataTable(id="wg-interfaces", cursor_type="row",
                                               zebra_stripes=False)
        interfaces.border_title = "Interfaces"
        yield interfaces
        peers: DataTable[Any] = DataTable(id="wg-peers", cursor_type="row", zebra_stripes=True)
        peers.border_title = "Peers"
        yield peers

    def on_mount(self) -> None:
        interfaces = self.query_one("#wg-interfaces", DataTable)
        for key, label in INTERFACE_COLUMNS:
            interfaces.add_column(label, key=key)
        peers = self.query_one("#wg-peers", DataTable)
        for key, label in PEER_COLUMNS:
            peers.add_column(label, key=key)
        self.status_line().display = False
        self.query_one("#wg-findings", Static).display = False
        super().on_mount()
        self.start_findings()

    # -- data ------------------------------------------------------------------
    def fetch(self) -> WireGuardSnapshot:
        return read_wireguard(self.host, self._live_cache)

    def show(self, snapshot: WireGuardSnapshot) -> None:
        self._snapshot = snapshot
        names = {interface.name for interface in snapshot.interfaces}
        self._vanished = (self._vanished | (self._seen - names)) - names
        self._seen |= names
        for interface in snapshot.interfaces:
            for peer in interface.peers:
                key = (interface.name, peer.public_key)
                self._rate_cells[f"{interface.name}/{peer.public_key}"] = self._rates.update(
                    key, snapshot.taken_at, peer.rx_bytes, peer.tx_bytes)
        self._rates.forget_except(
            {(i.name, p.public_key) for i in snapshot.interfaces for p in i.peers})
        self._show_status(snapshot)
        with self.app.batch_update():
            self._update_interfaces(snapshot)
            self._update_peers()

    def _show_status(self, snapshot: WireGuardSnapshot) -> None:
        lines: list[str] = []
        severity = "error"
        if snapshot.read_only_reason:
            lines.append(f"Read-only: {snapshot.read_only_reason}")
            severity = "warning"
        for name in sorted(self._vanished):
            lines.append(f"{name} disappeared: its daemon stopped or the interface was "
                         "removed. zsn keeps watching and shows it again when it is back.")
            severity = "error"
        if not snapshot.read_only_reason:
            lines.extend(snapshot.errors)
        if not snapshot.interfaces and not lines:
            lines.append("No WireGuard interfaces are running. Bring one up with "
                         "`wg-quick up NAME` (or `systemctl start wg-quick@NAME`).")
            severity = "info"
        self.set_status(lines, severity)

    def _interface_row(self, interface: InterfaceState) -> dict[str, Any]:
        implementation: str = interface.implementation
        if not interface.in_namespace:
            implementation += " (other netns)"
        return {
            "name": Text(interface.name, style="bold"),
            "type": Text(implementation),
            "port": Text(str(interface.listen_port or "-")),
            "peers": Text(str(len(interface.peers)), justify="right"),
            "addresses": Text(", ".join(interface.addresses) or "-"),
            "key": Text(short_key(interface.public_key, 12)),
        }

    def _update_interfaces(self, snapshot: WireGuardSnapshot) -> None:
        table = self.query_one("#wg-interfaces", DataTable)
        rows = {i.name: self._interface_row(i) for i in snapshot.interfaces}
        self._update_rows(table, rows, self._interface_cells)
        table.styles.height = min(len(rows), 4) + 3 if rows else 3

    def selected_interface(self) -> InterfaceState | None:
        if not self._snapshot or not self._snapshot.interfaces:
            return None
        table = self.query_one("#wg-interfaces", DataTable)
        index = min(max(table.cursor_row, 0), len(self._snapshot.interfaces) - 1)
        interface: InterfaceState = self._snapshot.interfaces[index]
        return interface

    def _handshake_cell(self, peer: PeerState, clock: float) -> Text:
        state = handshake_state(peer.latest_handshake, clock)
        if state == "never":
            return Text("never", style=self.theme_colour("text-warning"))
        age = human_duration(clock - (peer.latest_handshake or 0))
        if state == "stale":
            return Text(f"{age} stale", style=self.theme_colour("text-error"))
        return Text(age, style=self.theme_colour("text-success"))

    def _peer_row(self, interface: InterfaceState, peer: PeerState, clock: float
                  ) -> dict[str, Any]:
        rx_rate, tx_rate = self._rate_cells.get(f"{interface.name}/{peer.public_key}",
                                                (None, None))
        return {
            "name": Text(peer.name or short_key(peer.public_key, 12)),
            "handshake": self._handshake_cell(peer, clock),
            "rx_rate": Text(human_rate(rx_rate), justify="right"),
            "tx_rate": Text(human_rate(tx_rate), justify="right"),
            "endpoint": Text(peer.endpoint or "-"),
            "allowed": Text(", ".join(peer.allowed_ips) or "-"),
            "rx": Text(human_bytes(peer.rx_bytes), justify="right"),
            "tx": Text(human_bytes(peer.tx_bytes), justify="right"),
            "key": Text(short_key(peer.public_key)),
        }

    def _update_peers(self) -> None:
        table = self.query_one("#wg-peers", DataTable)
        interface = self.selected_interface()
        name = interface.name if interface else None
        if name != self._shown_interface:
            table.clear()
            self._peer_cells.clear()
            self._shown_interface = name
        table.border_title = f"Peers of {name}" if name else "Peers"
        clock = now()
        rows = {p.public_key: self._peer_row(interface, p, clock)
                for p in interface.peers} if interface else {}
        self._update_rows(table, rows, self._peer_cells)
        self._refresh_details(interface)

    def _refresh_details(self, interface: InterfaceState | None) -> None:
        from zsn.tui.screens.peer_details import PeerDetailsScreen

        screen = self.app.screen
        if isinstance(screen, PeerDetailsScreen) and interface is not None:
            for peer in interface.peers:
                if peer.public_key == screen.peer.public_key:
                    screen.update_peer(peer, self._rate_cells.get(
                        f"{interface.name}/{peer.public_key}", (None, None)))

    def selected_peer(self) -> PeerState | None:
        interface = self.selected_interface()
        table = self.query_one("#wg-peers", DataTable)
        if interface is None or not interface.peers or table.row_count == 0:
            return None
        key = table.coordinate_to_cell_key(table.cursor_coordinate).row_key.value
        return next((p for p in interface.peers if p.public_key == key), None)

    # -- events and actions ----------------------------------------------------
    def on_data_table_row_highlighted(self, event: DataTable.RowHighlighted) -> None:
        if event.data_table.id == "wg-interfaces" and self._snapshot is not None:
            self._update_peers()

    def on_data_table_row_selected(self, event: DataTable.RowSelected) -> None:
        if event.data_table.id == "wg-peers":
            self.action_peer_details()
        elif event.data_table.id == "wg-interfaces":
            self.query_one("#wg-peers", DataTable).focus()

    def action_peer_details(self) -> None:
        from zsn.tui.screens.peer_details import PeerDetailsScreen

        interface = self.selected_interface()
        peer = self.selected_peer()
        if interface is None or peer is None:
            self.notify("No peer selected.", severity="warning")
            return
        rates = self._rate_cells.get(f"{interface.name}/{peer.public_key}", (None, None))
        self.app.push_screen(PeerDetailsScreen(interface.name, peer, rates, now))

    def action_refresh_now(self) -> None:
        self.poll(force=True)

    def action_focus_next_table(self) -> None:
        interfaces = self.query_one("#wg-interfaces", DataTable)
        peers = self.query_one("#wg-peers", DataTable)
        (peers if interfaces.has_focus else interfaces).focus()
