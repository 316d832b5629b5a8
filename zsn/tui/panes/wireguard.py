"""WireGuard pane: interfaces and peers, live, the way `wg show` would, refreshed in place."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any, ClassVar

from textual.app import ComposeResult
from textual.binding import Binding, BindingType

from zsn.format import human_bytes, human_duration, human_rate, short_key
from zsn.rates import RateTracker
from zsn.system.host import Host
from zsn.tui.panes.base import GONE_NOTICE_SECONDS, GoneRows, LivePane
from zsn.tui.panes.wireguard_actions import (
    ACTION_BINDINGS,
    ACTION_HELP,
    FindingsLine,
    WireGuardActions,
)
from zsn.tui.widgets.status import Severity, StatusLine
from zsn.tui.widgets.table import LiveTable
from zsn.view import Cell, CellValue, Column, Row, rate_columns
from zsn.wireguard.model import (
    InterfaceState,
    PeerSession,
    PeerState,
    WireGuardSnapshot,
    handshake_state,
)

if TYPE_CHECKING:
    from zsn.wireguard.live import LiveCache
    from zsn.wireguard.recorder import Recorder


def now() -> float:
    """The clock used for handshake ages (replaced in snapshot tests)."""
    return time.time()


def read_wireguard(host: Host, cache: LiveCache) -> WireGuardSnapshot:
    """`zsn.wireguard.live.read_wireguard`, imported in the poll's thread, after the
    first frame (netlink and the UAPI code are not needed to draw it); replaced in
    tests."""
    from zsn.wireguard import live

    return live.read_wireguard(host, cache)


def record_history(recorder: Recorder, snapshot: WireGuardSnapshot) -> WireGuardSnapshot:
    """`Recorder.record`, in the poll's thread; replaced in tests that must not write."""
    return recorder.record(snapshot)


def _handshake_order(row: Row) -> float:
    peer: PeerState = row.data[0]
    return float(peer.latest_handshake or 0)



INTERFACE_COLUMNS = (
    Column("name", "Interface", 1, short_label="Iface",
           help="the device; `(other netns)`: its wireguard-go socket is in the shared "
                "/var/run/wireguard but the device lives in another network namespace"),
    Column("type", "Type", 4, help="`kernel` module or `userspace` (wireguard-go, boringtun)"),
    Column("port", "Port", 3, align="right", help="UDP listen port"),
    Column("peers", "Peers", 2, align="right", help="number of peers"),
    Column("addresses", "Addresses", 5, short_label="Addr",
           help="the interface's addresses (`+N`: more, shown when wider)"),
    Column("key", "Public key", 6, short_label="Key", truncate=True, min_width=9,
           help="the interface's public key (as much as fits)"),
)
PEER_COLUMNS = (
    Column("name", "Peer", 1, truncate=True,
           help="the comment above the peer's `[Peer]` block in /etc/wireguard/IFACE.conf "
                "(`# name`, `# Name = name`), else the start of its public key"),
    Column("handshake", "Handshake", 2, min_width=6, sort_key=_handshake_order,
           help="time since the latest handshake; `never` = none yet; `stale` (red) = older "
                "than 180 s, the peer has no working session"),
    Column("session", "Session", 3, min_width=5,
           help="from the history: `up 2h 05m` connected for that long (a handshake within "
                "270 s); `3d 02h ago` last heard from then; `-` not seen since history began"),
    *rate_columns(3),
    Column("allowed", "Allowed IPs", 4, short_label="IPs",
           help="networks routed to the peer (`+N`: more, shown when wider)"),
    Column("endpoint", "Endpoint", 5, help="the address the peer last connected from"),
    Column("expires", "Expires", 6, help="`in 5d 02h` (yellow within 7 days): when the peer "
                                          "is disabled (`zsn peer expire`); `-` never"),
    Column("rx", "Received", 6, short_label="Recv", align="right",
           sort_key=lambda row: row.data[0].rx_bytes, help="total received since it came up"),
    Column("tx", "Sent", 6, align="right", sort_key=lambda row: row.data[0].tx_bytes,
           help="total sent since it came up"),
    Column("key", "Key", 7, truncate=True, min_width=9,
           help="the peer's public key (as much as fits; `enter` shows all of it)"),
)


def listed(items: tuple[str, ...]) -> CellValue:
    """Several values in one cell; the short form is the first and a count."""
    if len(items) < 2:
        return items[0] if items else "-"
    return Cell(", ".join(items), short=f"{items[0]} +{len(items) - 1}")


NEVER = Cell("never", "warn")
WEEK = 7 * 86400


def _expiry_cell(at: int | None, clock: float) -> CellValue:
    if at is None:
        return "-"
    if at <= clock:
        return Cell("expired", "bad")
    return Cell(f"in {human_duration(at - clock)}", "warn" if at - clock <= WEEK else "")


class WireGuardPane(WireGuardActions, LivePane):
    PANE_HELP: ClassVar[str] = """\
### WireGuard
The upper table lists interfaces (kernel or userspace: wireguard-go, boringtun);
the lower one the peers of the highlighted interface, in config order (peers not
in the config after them, by name). `enter` on a peer shows all of it.
""" + ACTION_HELP

    BINDINGS: ClassVar[list[BindingType]] = [
        *ACTION_BINDINGS,
        Binding("r", "refresh_now", "Refresh", show=False),  # polling makes it rare
        Binding("tab", "focus_next_table", "Next table", show=False),
    ]

    def __init__(self, host: Any, refresh_seconds: float, **kwargs: Any) -> None:
        super().__init__(host, refresh_seconds, **kwargs)
        self._live_cache: LiveCache | None = None
        self._recorder: Recorder | None = None
        self._rates = RateTracker()
        self._snapshot: WireGuardSnapshot | None = None
        self.gone = GoneRows(lambda message: self.notify(
            message, severity="warning", timeout=GONE_NOTICE_SECONDS), "Interface ")
        self._shown_interface: str | None = None
        self._rate_cells: dict[tuple[str, str], tuple[float | None, float | None]] = {}
        self._peer_rows: dict[str, tuple[PeerState, tuple[float | None, float | None], Row]] = {}
        """Last row per peer of the shown interface: an idle peer's row is reused."""

    def compose(self) -> ComposeResult:
        yield StatusLine()
        yield FindingsLine(id="wg-findings")
        yield LiveTable(INTERFACE_COLUMNS, id="wg-interfaces", title="Interfaces")
        yield LiveTable(PEER_COLUMNS, id="wg-peers", title="Peers", zebra=True,
                        empty_text="No peers.")

    def on_mount(self) -> None:
        # Textual runs LivePane.on_mount too (handlers of every class are called):
        # calling it here as well started a second polling timer.
        self.start_findings()

    # -- data ------------------------------------------------------------------
    def fetch(self) -> WireGuardSnapshot:
        if self._live_cache is None:
            from zsn.wireguard.live import LiveCache

            self._live_cache = LiveCache()
        snapshot = read_wireguard(self.host, self._live_cache)
        from zsn.wireguard.expiry import due_in_snapshot
        from zsn.wireguard.recorder import Recorder, take_off_expired

        if self._recorder is None:
            self._recorder = Recorder(self.host, report=self._report_from_thread)
        take_off_expired(self.host, self._recorder, due_in_snapshot(snapshot),
                         self._tell_from_thread, self._report_from_thread)
        return record_history(self._recorder, snapshot)

    def _tell_from_thread(self, message: str) -> None:
        self.app.call_from_thread(self.notify, message, timeout=10)

    def _report_from_thread(self, message: str) -> None:
        self.app.call_from_thread(self.notify, message, severity="warning", timeout=10)

    def on_unmount(self) -> None:
        if self._recorder is not None:
            self._recorder.close()

    def show(self, snapshot: WireGuardSnapshot) -> None:
        self._snapshot = snapshot
        rates, taken_at = self._rates, snapshot.taken_at
        cells: dict[tuple[str, str], tuple[float | None, float | None]] = {}
        for interface in snapshot.interfaces:
            for peer in interface.peers:
                key = (interface.name, peer.public_key)
                cells[key] = rates.update(key, taken_at, peer.rx_bytes, peer.tx_bytes)
        self._rate_cells = cells
        rates.forget_except(cells.keys())
        self._show_status(snapshot)
        with self.app.batch_update():
            interfaces = self.query_one("#wg-interfaces", LiveTable)
            interfaces.update(self.gone.merge([self._interface_row(i)
                                               for i in snapshot.interfaces]))
            self._update_peers()

    def _show_status(self, snapshot: WireGuardSnapshot) -> None:
        lines: list[str] = []
        severity: Severity = "error"
        if snapshot.read_only_reason:
            lines.append(f"Read-only: {snapshot.read_only_reason}")
            severity = "warning"
        else:
            lines.extend(snapshot.errors)
        if snapshot.history_note:
            lines.append(snapshot.history_note)
            severity = "warning" if not snapshot.errors else severity
        if not snapshot.interfaces and not lines and not self.gone.gone_keys:
            lines.append("No WireGuard interfaces are running. Bring one up with U "
                         "(or `wg-quick up NAME`), or create one with N.")
            severity = "info"
        self.set_status(lines, severity)

    def _interface_row(self, interface: InterfaceState) -> Row:
        name = Cell(interface.name, "bold")
        if not interface.in_namespace:
            name = Cell(f"{interface.name} (other netns)")
        return Row(interface.name, (
            name,
            interface.implementation,
            str(interface.listen_port or "-"),
            str(len(interface.peers)),
            listed(interface.addresses),
            interface.public_key or "-",
        ), state="" if interface.in_namespace else "muted", data=interface)

    def selected_interface(self) -> InterfaceState | None:
        if not self._snapshot or not self._snapshot.interfaces:
            return None
        key = self.query_one("#wg-interfaces", LiveTable).cursor_key
        for interface in self._snapshot.interfaces:
            if interface.name == key:
                return interface
        return None

    def _handshake_cell(self, peer: PeerState, clock: float) -> Cell:
        if peer.latest_handshake is None:
            return NEVER
        state = handshake_state(peer.latest_handshake, clock)
        if state == "never":
            return NEVER
        age = human_duration(clock - (peer.latest_handshake or 0))
        if state == "stale":
            return Cell(f"{age} stale", "bad", short=age)
        return Cell(age, "good")

    def _session_cell(self, session: PeerSession | None, clock: float) -> CellValue:
        if session is None:
            return "-"
        if session.connected and session.since:
            return Cell(f"up {human_duration(clock - session.since)}", "good")
        if session.last_seen:
            return Cell(f"{human_duration(clock - session.last_seen)} ago", "muted")
        return "-"

    def _peer_row(self, interface: InterfaceState, peer: PeerState, clock: float) -> Row:
        rx_rate, tx_rate = rates = self._rate_cells.get((interface.name, peer.public_key),
                                                        (None, None))
        cached = self._peer_rows.get(peer.public_key)
        handshake = self._handshake_cell(peer, clock)
        sessions = self._snapshot.sessions if self._snapshot is not None else {}
        session = self._session_cell(sessions.get((interface.name, peer.public_key)), clock)
        expires = _expiry_cell(interface.expiries.get(peer.public_key), clock)
        if cached is not None and cached[0] is peer and cached[1] == rates \
                and cached[2].cells[1] == handshake and cached[2].cells[2] == session \
                and cached[2].cells[7] == expires:
            return cached[2]  # an idle peer: nothing to format again
        row = Row(peer.public_key, (
            peer.name or short_key(peer.public_key, 12),
            handshake,
            session,
            human_rate(rx_rate),
            human_rate(tx_rate),
            listed(peer.allowed_ips),
            peer.endpoint or "-",
            expires,
            human_bytes(peer.rx_bytes),
            human_bytes(peer.tx_bytes),
            peer.public_key,
        ), data=(peer, rx_rate, tx_rate))
        self._peer_rows[peer.public_key] = (peer, rates, row)
        return row

    def _update_peers(self) -> None:
        table = self.query_one("#wg-peers", LiveTable)
        interfaces = self.query_one("#wg-interfaces", LiveTable)
        interface = self.selected_interface()
        name = interfaces.cursor_key
        if name != self._shown_interface:
            table.clear()
            self._peer_rows.clear()
            self._shown_interface = name
        title = "Peers"
        if name and interface is None:
            title = f"Peers of {name} (gone)"
        elif interface is not None:
            title = f"Peers of {name}" + ("" if interface.in_namespace else " (other netns)")
        table.set_title(title)
        clock = now()
        rows = [self._peer_row(interface, p, clock) for p in interface.peers] \
            if interface else []
        if len(self._peer_rows) > len(rows):
            shown = {row.key for row in rows}
            self._peer_rows = {k: v for k, v in self._peer_rows.items() if k in shown}
        table.update(rows)
        self._refresh_details(interface)

    def _refresh_details(self, interface: InterfaceState | None) -> None:
        screen = self.app.screen
        if screen is self.screen or interface is None:
            return  # no peer open (and no need to load its screen's module yet)
        from zsn.tui.screens.peer_details import PeerDetailsScreen

        if isinstance(screen, PeerDetailsScreen):
            sessions = self._snapshot.sessions if self._snapshot is not None else {}
            for peer in interface.peers:
                if peer.public_key == screen.peer.public_key:
                    key = (interface.name, peer.public_key)
                    screen.update_peer(peer, self._rate_cells.get(key, (None, None)),
                                       sessions.get(key))

    def selected_peer(self) -> PeerState | None:
        row = self.query_one("#wg-peers", LiveTable).cursor_row
        if row is None or self.selected_interface() is None:
            return None
        peer: PeerState = row.data[0]
        return peer

    # -- events and actions ----------------------------------------------------
    def on_live_table_highlighted(self, event: LiveTable.Highlighted) -> None:
        if event.table.id == "wg-interfaces" and self._snapshot is not None \
                and event.key != self._shown_interface:
            self._update_peers()

    def on_live_table_selected(self, event: LiveTable.Selected) -> None:
        if event.table.id == "wg-peers":
            self.action_peer_details()
        elif event.table.id == "wg-interfaces":
            self.query_one("#wg-peers", LiveTable).focus()

    def action_peer_details(self) -> None:
        from zsn.tui.screens.peer_details import PeerDetailsScreen

        interface = self.selected_interface()
        peer = self.selected_peer()
        if interface is None or peer is None:
            self.notify("No peer selected.", severity="warning")
            return
        key = (interface.name, peer.public_key)
        rates = self._rate_cells.get(key, (None, None))
        sessions = self._snapshot.sessions if self._snapshot is not None else {}
        self.app.push_screen(PeerDetailsScreen(interface.name, peer, rates, now,
                                               sessions.get(key), self.host))

    def action_refresh_now(self) -> None:
        self.poll(force=True)

    def action_focus_next_table(self) -> None:
        interfaces = self.query_one("#wg-interfaces", LiveTable)
        peers = self.query_one("#wg-peers", LiveTable)
        (peers if interfaces.has_focus else interfaces).focus()
