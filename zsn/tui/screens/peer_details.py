"""One peer in full: whole public key, endpoint, allowed IPs, handshake, counters, rates."""

from __future__ import annotations

from collections.abc import Callable
from typing import ClassVar

from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Footer, Static

from zsn.format import human_bytes, human_duration, human_rate
from zsn.wireguard.model import PeerState, handshake_state


class PeerDetailsScreen(ModalScreen[None]):
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "dismiss", "Close"),
        Binding("q", "dismiss", "Close", show=False),
    ]

    def __init__(self, interface: str, peer: PeerState,
                 rates: tuple[float | None, float | None], clock: Callable[[], float]) -> None:
        super().__init__()
        self.interface = interface
        self.peer = peer
        self.rates = rates
        self.clock = clock

    def compose(self) -> ComposeResult:
        with VerticalScroll(id="peer-details"):
            yield Static(self._render_table(), id="peer-details-body")
        yield Footer()

    def on_mount(self) -> None:
        box = self.query_one("#peer-details")
        box.border_title = f"{self.peer.name or 'Peer'} on {self.interface}"

    def update_peer(self, peer: PeerState, rates: tuple[float | None, float | None]) -> None:
        """Called every refresh; repaints only when something shown changed."""
        shown = self._shown()
        self.peer, self.rates = peer, rates
        if self._shown() != shown:
            self.query_one("#peer-details-body", Static).update(self._render_table())

    def _shown(self) -> tuple[object, ...]:
        return (self.peer, self.rates, self._handshake_text(self.clock()))

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
        for label, value in rows:
            table.add_row(label, Text(value))
        return table
