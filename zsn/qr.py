"""QR codes drawn with half-block characters (two modules per line), for any payload.

The error-correction level is chosen by size: the highest level whose symbol still
fits the space available, down to L for long payloads. When even L does not fit,
`QrCode.fits` is false and the caller says so (the user enlarges the terminal or
zooms out) instead of showing a code that cannot scan. WireGuard client configs
(`zsn.wireguard.qr`) and Wi-Fi networks (`zsn.wlan.wifiqr`) use it.
"""

from __future__ import annotations

from dataclasses import dataclass

from zsn.errors import ValidationError

QUIET_ZONE = 2
"""Modules of light border; the spec asks for 4, phone scanners read 2 reliably."""
LEVELS = ("H", "Q", "M", "L")
DEFAULT_SIZE = (80, 46)
"""Columns and lines a headless QR aims for when nothing else is known."""
_ANSI_BLACK_ON_WHITE = "\x1b[38;5;16;48;5;231m"
_ANSI_RESET = "\x1b[0m"


@dataclass(frozen=True)
class QrCode:
    matrix: tuple[tuple[bool, ...], ...]
    """Dark modules as True, quiet zone included."""
    error: str
    version: int
    fits: bool
    """Whether it fits the size it was made for."""

    @property
    def columns(self) -> int:
        return len(self.matrix[0])

    @property
    def lines(self) -> int:
        return (len(self.matrix) + 1) // 2

    def half_blocks(self, light: bool = False) -> list[str]:
        """Lines of text whose blocks are the dark modules (to draw dark on light), or
        with `light` the light ones, quiet zone included (to draw light on dark)."""
        rows = [tuple(cell != light for cell in row) for row in self.matrix]
        if len(rows) % 2:
            rows.append(tuple(light for _ in rows[0]))
        out = []
        for top, bottom in zip(rows[0::2], rows[1::2], strict=True):
            out.append("".join(
                "█" if t and b else "▀" if t else "▄" if b else " "
                for t, b in zip(top, bottom, strict=True)
            ))
        return out

    def ansi(self) -> str:
        """The code for a terminal: explicit black-on-white, readable on dark and light themes."""
        return "".join(f"{_ANSI_BLACK_ON_WHITE}{line}{_ANSI_RESET}\n"
                       for line in self.half_blocks())

    def plain(self) -> str:
        """The code as plain text, for a file: no colour codes, so it reads the same in
        an editor, `less` or a mail. Drawn as ``qrencode -t UTF8`` draws it, for the
        usual terminal (light text on a dark background): the light modules and the
        quiet zone are the blocks, so the code keeps its light border there."""
        return "".join(f"{line}\n" for line in self.half_blocks(light=True))

    def describe(self) -> str:
        size = f"{self.columns}x{self.lines}"
        text = f"QR version {self.version}, error correction {self.error}, {size} characters"
        return text if self.fits else text + " (does not fit: enlarge the terminal or zoom out)"


def make_qr(text: str, columns: int = DEFAULT_SIZE[0], lines: int = DEFAULT_SIZE[1]) -> QrCode:
    """A QR code of `text` at the highest error-correction level that fits columns x lines."""
    import segno

    fallback: QrCode | None = None
    for level in LEVELS:
        try:
            symbol = segno.make(text, error=level, micro=False, boost_error=False)
        except segno.DataOverflowError:
            continue
        matrix = _with_quiet_zone(symbol.matrix)
        code = QrCode(matrix, level, int(symbol.version), fits=False)
        if code.columns <= columns and code.lines <= lines:
            return QrCode(matrix, level, int(symbol.version), fits=True)
        fallback = code
    if fallback is None:
        raise ValidationError(f"too long for a QR code ({len(text)} bytes)")
    return fallback


def _with_quiet_zone(matrix: tuple[bytearray, ...]) -> tuple[tuple[bool, ...], ...]:
    width = len(matrix[0]) + 2 * QUIET_ZONE
    blank = tuple(False for _ in range(width))
    pad = (False,) * QUIET_ZONE
    body = tuple(pad + tuple(bool(cell) for cell in row) + pad for row in matrix)
    return (blank,) * QUIET_ZONE + body + (blank,) * QUIET_ZONE


def matrix_from_half_blocks(lines: list[str]) -> list[list[bool]]:
    """The module matrix back from half-block text (used to check a drawn code scans)."""
    rows: list[list[bool]] = []
    for line in lines:
        top = [ch in "█▀" for ch in line]
        bottom = [ch in "█▄" for ch in line]
        rows += [top, bottom]
    return rows
