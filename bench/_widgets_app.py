"""A second reference for bench/startup.py: zsn's first-screen widgets, no zsn code.

Header, one TabbedContent tab holding a status Static and two DataTables with zsn's
columns, and a Footer: what the WireGuard pane shows at start, built with Textual
alone, to separate Textual's cost for these widgets from zsn's own.
"""

from textual.app import App, ComposeResult
from textual.widgets import DataTable, Footer, Header, Static, TabbedContent, TabPane

INTERFACE_COLUMNS = ("Interface", "Type", "Port", "Peers", "Addresses", "Public key")
PEER_COLUMNS = ("Peer", "Handshake", "↓ Rate", "↑ Rate", "Endpoint", "Allowed IPs",
                "Received", "Sent", "Key")


class WidgetsApp(App[None]):
    BINDINGS = [("q", "quit", "Quit")]

    def compose(self) -> ComposeResult:
        yield Header()
        with TabbedContent(), TabPane("WireGuard"):
            yield Static("No WireGuard interfaces are running.")
            interfaces: DataTable[str] = DataTable()
            interfaces.add_columns(*INTERFACE_COLUMNS)
            yield interfaces
            peers: DataTable[str] = DataTable()
            peers.add_columns(*PEER_COLUMNS)
            yield peers
        yield Footer()


if __name__ == "__main__":
    WidgetsApp().run()
