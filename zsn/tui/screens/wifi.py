"""Wi-Fi dialogs: connect (SSID and a masked passphrase) and a network's QR code.

The passphrase field is masked; what was typed is handed to the pane once, as a
`Passphrase`, and the field is emptied. The QR screen shows the code for a phone
camera; the passphrase as text appears only while `p` is pressed on.
"""

from __future__ import annotations

from typing import ClassVar, NamedTuple

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Checkbox, Footer, Input, Label

from zsn.errors import ValidationError
from zsn.qr import make_qr
from zsn.tui.widgets.qr import QrCodeView
from zsn.tui.widgets.safe import SafeStatic, title
from zsn.wlan.secrets import Passphrase
from zsn.wlan.ssid import from_user
from zsn.wlan.wifiqr import WifiCode


class ConnectRequest(NamedTuple):
    ssid: bytes
    passphrase: Passphrase | None
    hidden: bool


class ConnectScreen(ModalScreen[ConnectRequest | None]):
    """Asks for a network's name (when hidden) and passphrase; checks both before it
    closes, so a mistake is fixed in place and nothing is tried with it."""

    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape", "cancel", "Cancel")]

    def __init__(self, interface: str, ssid: str = "", *, hidden: bool = False,
                 needs_passphrase: bool = True, known: bool = False) -> None:
        super().__init__()
        self.interface = interface
        self.ssid = ssid
        self.hidden = hidden
        self.needs_passphrase = needs_passphrase
        self.known = known

    def compose(self) -> ComposeResult:
        with Vertical(id="wifi-connect"):
            yield Label("Network name (SSID)")
            yield Input(self.ssid, id="wifi-ssid", disabled=bool(self.ssid) and not self.hidden)
            hint = ("Passphrase (empty: use the stored one)" if self.known else
                    "Passphrase (8-63 characters, or the 64-hex-digit PSK)"
                    if self.needs_passphrase else "Passphrase (open network: leave empty)")
            yield Label(hint)
            yield Input("", id="wifi-passphrase", password=True)
            yield Checkbox("Hidden network (look for it by name)", self.hidden,
                           id="wifi-hidden")
            yield SafeStatic("", id="wifi-connect-error")
        yield Footer()

    def on_mount(self) -> None:
        self.query_one("#wifi-connect").border_title = title(f"Connect {self.interface}")
        target = "#wifi-passphrase" if self.ssid and not self.hidden else "#wifi-ssid"
        self.query_one(target, Input).focus()

    def on_input_submitted(self, event: Input.Submitted) -> None:
        if event.input.id == "wifi-ssid":
            self.query_one("#wifi-passphrase", Input).focus()
            return
        self._submit()

    def _submit(self) -> None:
        field = self.query_one("#wifi-passphrase", Input)
        typed = field.value
        try:
            ssid = from_user(self.query_one("#wifi-ssid", Input).value)
            passphrase = Passphrase(typed) if typed else None
        except ValidationError as exc:
            self.query_one("#wifi-connect-error", SafeStatic).update(str(exc))
            return
        field.value = ""
        self.dismiss(ConnectRequest(ssid, passphrase,
                                    self.query_one("#wifi-hidden", Checkbox).value))

    def action_cancel(self) -> None:
        self.query_one("#wifi-passphrase", Input).value = ""
        self.dismiss(None)


QR_CHROME = 6
"""Lines around the code: border, title, notes, footer."""


class WifiQrScreen(ModalScreen[None]):
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "dismiss", "Close"),
        Binding("p", "toggle_passphrase", "Show/hide passphrase"),
    ]

    def __init__(self, title: str, code: WifiCode) -> None:
        super().__init__()
        self.title_text = title
        self.code = code
        self.reveal = False

    def compose(self) -> ComposeResult:
        width, height = self.app.size
        drawn = make_qr(self.code.payload(), columns=width - 4, lines=height - QR_CHROME)
        notes = [drawn.describe(), *self.code.notes()]
        with VerticalScroll(id="wifi-qr"):
            yield QrCodeView(drawn, id="qr-code")
            yield SafeStatic("\n".join(notes), id="wifi-qr-notes")
            yield SafeStatic(self._secret_text(), id="wifi-qr-secret")
        yield Footer()

    def on_mount(self) -> None:
        box = self.query_one("#wifi-qr")
        box.border_title = title(self.title_text)
        box.focus()

    def _secret_text(self) -> str:
        if self.code.secret is None:
            return "Open network: no passphrase."
        what = "PSK" if self.code.secret_is_psk else "Passphrase"
        shown = self.code.secret if self.reveal else "(hidden: press p to show)"
        return f"{what}: {shown}"

    def action_toggle_passphrase(self) -> None:
        self.reveal = not self.reveal
        self.query_one("#wifi-qr-secret", SafeStatic).update(self._secret_text())
