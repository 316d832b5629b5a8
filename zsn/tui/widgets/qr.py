"""`QrCodeView`: a QR code drawn with half-block characters, two modules per line."""

from __future__ import annotations

from typing import Any

from rich.style import Style
from rich.text import Text
from textual.widgets import Static

from zsn.qr import QrCode

# Scanners need real dark-on-light contrast whatever the theme, so this is the one
# place zsn uses literal colours instead of theme variables.
QR_STYLE = Style(color="#000000", bgcolor="#ffffff")


class QrCodeView(Static):
    def __init__(self, code: QrCode, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.code = code

    def render(self) -> Text:
        return Text("\n".join(self.code.half_blocks()), style=QR_STYLE, no_wrap=True,
                    end="")
