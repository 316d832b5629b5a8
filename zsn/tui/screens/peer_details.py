"""One peer in full: whole public key, endpoint, allowed IPs, handshake, counters, rates,
and its life from the history: the session, totals across restarts, sparklines of
the last day, week and month, the latest events."""

from __future__ import annotations

import time
from collections.abc import Callable
from datetime import datetime
from typing import TYPE_CHECKING, ClassVar

from rich.table import Table
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Footer

from zsn.format import human_bytes, human_duration, human_rate, sparkline
from zsn.system.host import Host
from zsn.tui.widgets.safe import SafeStatic, plain, title
from zsn.wireguard.model import PeerSession, PeerState, handshake_state

if TYPE_CHECKING:
    from zsn.wireguard.history import PeerHistory

HISTORY_RELOAD_SECONDS = 60.0
"""How often an open peer's sparklines are read again (hours change slowly)."""
SPARK_WIDTH = 24
"""Bars per sparkline: a day of hours, a week of 7-hour and a month of 30-hour bars."""


class PeerDetailsScreen(ModalScreen[None]):
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "dismiss", "Close"),
        Binding("q", "dismiss", "Close", show=False),
    ]

    def __init__(self, interface: str, peer: PeerState,
                 rates: tuple[float | None, float | None], clock: Callable[[], float],
                 session: PeerSession | None = None, host: Host | None = None,
                 groups: tuple[str, ...] = ()) -> None:
        super().__init__()
        self.groups = groups
        """Its access-rule groups (shown when it is in any)."""
        self.interface = interface
        self.peer = peer
        self.rates = rates
        self.clock = clock
        self.session = session
        self.host = host
        self.history: PeerHistory | None = None
        self._history_read = 0.0

    def compose(self) -> ComposeResult:
        with VerticalScroll(id="peer-details"):
            yield SafeStatic(self._render_table(), id="peer-details-body")
        yield Footer()

    def on_mount(self) -> None:
        box = self.query_one("#peer-details")
        box.border_title = title(f"{self.peer.name or 'Peer'} on {self.interface}")
        self._read_history()

    def update_peer(self, peer: PeerState, rates: tuple[float | None, float | None],
                    session: PeerSession | None = None) -> None:
        """Called every refresh; repaints only when something shown changed."""
        shown = self._shown()
        self.peer, self.rates, self.session = peer, rates, session
        if self._shown() != shown:
            self._repaint()
        if time.monotonic() - self._history_read > HISTORY_RELOAD_SECONDS:
            self._read_history()

    def _repaint(self) -> None:
        self.query_one("#peer-details-body", SafeStatic).update(self._render_table())

    def _shown(self) -> tuple[object, ...]:
        return (self.peer, self.rates, self._handshake_text(self.clock()), self.session,
                self._session_text(self.clock()))

    def _read_history(self) -> None:
        host = self.host
        if host is None:
            return
        self._history_read = time.monotonic()
        interface, key, now = self.interface, self.peer.public_key, int(self.clock())

        def read() -> None:
            from zsn.errors import ZsnError
            from zsn.wireguard.history import HistoryStore, read_peer

            try:
                store = HistoryStore.open(host, create=False)
            except ZsnError:
                return  # no history (yet): the rows say so
            try:
                found = read_peer(store, interface, key, now, events=5)
            except ZsnError:
                return  # a damaged store: the pane's status line says so (the recorder's)
            finally:
                store.close()
            self.app.call_from_thread(self._history_loaded, found)

        self.run_worker(read, thread=True, group="peer-history", exclusive=True)

    def _history_loaded(self, history: PeerHistory | None) -> None:
        if history != self.history:
            self.history = history
            self._repaint()

    def _session_text(self, clock: float) -> str:
        session = self.session
        if session is None:
            return "(no history: off, or not recorded yet)"
        if session.connected and session.since:
            return (f"connected for {human_duration(clock - session.since)}, since "
                    f"{_when(session.since)} from {session.endpoint or '?'}")
        if session.last_seen:
            return (f"not connected; last seen {human_duration(clock - session.last_seen)} "
                    f"ago ({_when(session.last_seen)}) from {session.endpoint or '?'}")
        return "never connected since history began"

    def _history_rows(self) -> list[tuple[str, str]]:
        session, history = self.session, self.history
        rows = [("Session", self._session_text(self.clock()))]
        if session is not None:
            since = f" since {_when(history.first_seen)}" if history else ""
            rows.append(("Total ↓ / ↑", f"{human_bytes(session.total_rx)} / "
                         f"{human_bytes(session.total_tx)}{since} (across restarts)"))
        if history is None:
            return rows
        from zsn.wireguard.history import buckets

        for label, hours, size in (("Last 24 h", 24, 1), ("Last 7 days", 7 * 24, 7),
                                   ("Last 30 days", 30 * 24, 30)):
            sums = buckets(history.hours[-hours:], size)
            total = [rx + tx for rx, tx in sums]
            rows.append((label, f"{sparkline(total, SPARK_WIDTH).strip() or '-'} "
                         f"↓ {human_bytes(sum(rx for rx, _ in sums))} "
                         f"↑ {human_bytes(sum(tx for _, tx in sums))}"))
        if history.events:
            rows.append(("Events", "\n".join(
                f"{_when(event.at)} {event.kind}"
                + (f" from {event.endpoint}" if event.endpoint else "")
                + (f" after {human_duration(event.seconds)}" if event.seconds else "")
                for event in reversed(history.events))))
        return rows

    def _handshake_text(self, clock: float) -> str:
        latest = self.peer.latest_handshake
        state = handshake_state(latest, clock)
        if state == "never":
            return "never"
        age = human_duration(clock - (latest or 0))
        return f"{age} ago" + (" (stale: no working session)" if state == "stale" else "")

    def _render_table(self) -> Table:
        peer = self.peer
        table = Table.grid(padding=(0, 2))
        table.add_column(style="bold", no_wrap=True)
        table.add_column(overflow="fold")
        handshake = self._handshake_text(self.clock())
        rows = [
            ("Name", peer.name or "(no name comment in the config)"),
            ("Public key", peer.public_key),
            ("Preshared key", "set" if peer.preshared_key else "none"),
            ("Endpoint", peer.endpoint or "(none: waits for the peer to connect)"),
            ("Allowed IPs", "\n".join(peer.allowed_ips) or "(none)"),
            ("Latest handshake", handshake),
            ("Received", f"{human_bytes(peer.rx_bytes)} ({peer.rx_bytes} bytes)"),
            ("Sent", f"{human_bytes(peer.tx_bytes)} ({peer.tx_bytes} bytes)"),
            ("Rate ↓ / ↑", f"{human_rate(self.rates[0])} / {human_rate(self.rates[1])}"),
            ("Keepalive", f"every {peer.persistent_keepalive} s"
             if peer.persistent_keepalive else "off"),
        ]
        if self.groups:
            rows.append(("Groups", ", ".join(self.groups)))
        for label, value in rows + self._history_rows():
            table.add_row(label, plain(value))
        return table


def _when(unix: int) -> str:
    """A moment in the machine's local time, to the minute."""
    return datetime.fromtimestamp(unix).strftime("%Y-%m-%d %H:%M")
