"""A client's config and its QR code, for a phone camera or a copy over SSH (OSC 52).

The QR is made for the terminal's size: the highest error-correction level that
fits; when even level L does not fit, the screen says so (enlarge the terminal or
zoom out) and the code scrolls. The config text shows the private key only on
request, so screenshots of the screen do not leak it by default.
"""

from __future__ import annotations

from typing import ClassVar

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Footer

from zsn.plan import mask_secrets
from zsn.qr import make_qr
from zsn.tui.widgets.qr import QrCodeView
from zsn.tui.widgets.safe import SafeStatic, title
from zsn.wireguard.qr import qr_payload

CHROME_LINES = 4
"""Footer, border and the fit note around the code."""


class ClientConfigScreen(ModalScreen[None]):
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "dismiss", "Close"),
        Binding("c", "copy", "Copy config (OSC 52)"),
        Binding("s", "toggle_secret", "Show/hide key"),
    ]

    def __init__(self, title: str, config_text: str, notes: list[str] | None = None) -> None:
        super().__init__()
        self.title_text = title
        self.config_text = config_text
        self.notes = notes or []
        self.reveal = False

    def compose(self) -> ComposeResult:
        width, height = self.app.size
        code = make_qr(qr_payload(self.config_text), columns=width - 2,
                       lines=height - CHROME_LINES)
        fit = code.describe()
        if not code.fits:
            fit = (f"The QR needs {code.lines} lines x {code.columns} columns; this terminal "
                   f"has {height} x {width}. Enlarge it or zoom out (ctrl -) to scan; "
                   "scroll to see all of it.")
        with VerticalScroll(id="client-config"):
            yield SafeStatic(fit, id="qr-note",
                         classes="" if code.fits else "-does-not-fit")
            yield QrCodeView(code, id="qr-code")
            yield SafeStatic(self._config_text(), id="client-config-text")
            if self.notes:
                yield SafeStatic("\n".join(self.notes), id="client-config-notes")
        yield Footer()

    def on_mount(self) -> None:
        box = self.query_one("#client-config")
        box.border_title = title(self.title_text)
        self.set_focus(box)
        # Nothing may cover the code or the config: notifications wait until it closes.
        keep_uncovered = getattr(self.app, "keep_uncovered", None)
        if keep_uncovered is not None:
            keep_uncovered()

    def on_unmount(self) -> None:
        uncovered = getattr(self.app, "uncovered", None)
        if uncovered is not None:
            uncovered()

    def _config_text(self) -> str:
        return self.config_text if self.reveal else mask_secrets(self.config_text)

    def action_toggle_secret(self) -> None:
        self.reveal = not self.reveal
        self.query_one("#client-config-text", SafeStatic).update(self._config_text())

    def action_copy(self) -> None:
        self.app.copy_to_clipboard(self.config_text)
        # On the border, not a notification: that would cover the code.
        self.query_one("#client-config").border_subtitle = \
            "config sent to your terminal's clipboard (OSC 52)"
