"""Text from outside zsn, made safe to put on a terminal.

Names, SSIDs, pool and dataset names, mountpoints, daemon replies and program stderr
come from people and programs zsn does not control. Written to a terminal as they
are, an ``ESC ] 52`` sets the viewer's clipboard, ``ESC [ 2J`` clears the screen, a
C1 ``CSI`` (U+009B) does the same on terminals that take 8-bit controls, U+202E
turns the text that follows around, a zero-width space makes ``wg0`` and ``wg\\u200b0``
look alike, and a cut-off OSC swallows the rest of the frame.

`safe` is the one function every face (TUI tables, titles, status line,
notifications, plan and detail screens, CLI tables and error lines) passes such
text through: anything that is not a visible character becomes a visible escape
(``\\x1b``, ``\\u202e``), the way `zsn.wlan.ssid.display` has always shown SSIDs.

What is escaped: every character Python does not call printable, that is the
Unicode categories Cc (C0, DEL, C1), Cf (format controls: the bidi embeddings,
overrides and isolates U+202A–U+202E and U+2066–U+2069, marks such as U+200E, zero
width characters, the BOM, tag characters), Zl and Zp (line and paragraph
separators), Zs other than the ASCII space (no-break and other wide or narrow
spaces), Co (private use) and Cn (unassigned), plus surrogates, which cannot be
written at all: one that stands for a byte that was not UTF-8 (Python's
``surrogateescape``) is shown as that byte, ``\\xNN``. The Hangul fillers, letters
by category but drawn as nothing, are escaped too.

The result holds printable characters only, so `safe` is idempotent: a face may
pass text through it that a domain has already shown safely (an SSID) and nothing
changes. Backslashes are kept as they are for that reason; where two names must
never look alike (SSIDs), the domain escapes backslashes itself before calling it.
"""

from __future__ import annotations

import contextlib
import io
import sys
import unicodedata
from collections.abc import Iterable, Iterator
from typing import TextIO

# Letters by category, drawn as blank space: a name made of them looks empty.
_INVISIBLE_LETTERS = frozenset("\u115f\u1160\u3164\uffa0")

_SURROGATE_ESCAPE = range(0xDC80, 0xDD00)
QUOTE_LIMIT = 200
"""Characters of a program's or a file's line an error message quotes."""


def is_safe(text: str) -> bool:
    """Whether `safe` would leave `text` as it is (cheap: two scans in C)."""
    return text.isprintable() and _INVISIBLE_LETTERS.isdisjoint(text)


def safe(text: str) -> str:
    """`text` with every control, format, invisible or unassigned character written
    as a visible escape: ``\\xNN`` below U+0100, ``\\uNNNN``, ``\\UNNNNNNNN`` above."""
    if is_safe(text):
        return text
    return "".join(_escape(char) if _needs_escape(char) else char for char in text)


def safe_text(text: str) -> str:
    """Text of several lines (a diff, a config, a log): each line through `safe`, the
    line breaks (``\\n``) kept. Every other break (``\\r``, ``\\v``, U+2028 ...) is
    escaped: only the lines zsn sees are the lines the terminal shows."""
    if is_safe(text.replace("\n", "")):
        return text
    return "\n".join(safe(line) for line in text.split("\n"))


def safe_lines(lines: Iterable[str]) -> str:
    """Lines made by zsn around outside values (a details box, a report), each
    through `safe` and joined by line breaks: a value with a line break in it stays
    on its line, escaped, and never forges one of its own."""
    return "\n".join(safe(line) for line in lines)


def one_line(text: str, limit: int = QUOTE_LIMIT) -> str:
    """The first line of `text` that is not blank, for an error message that quotes a
    program's stderr or a line of a file: through `safe`, and cut to `limit`
    characters (then ``…``). Empty when every line is blank."""
    for line in text.splitlines():
        if line.strip():
            shown = safe(line.strip())
            return shown if len(shown) <= limit else shown[:limit - 1] + "…"
    return ""


def message_line(text: str) -> str:
    """An error message as the one line a command prints: its lines joined by ``; ``
    (what was undone, what was not ...), still to be shown through `safe`."""
    return "; ".join(line.strip() for line in text.splitlines() if line.strip())


def cell_width(text: str) -> int:
    """Terminal cells `text` (already safe) takes: two for each wide character (CJK,
    most emoji), one for the rest, none for a combining mark. For aligning columns
    in plain output; the TUI measures with Rich."""
    if text.isascii():
        return len(text)
    return sum(0 if unicodedata.combining(char) else
               2 if unicodedata.east_asian_width(char) in "WF" else 1 for char in text)


def safe_bytes(data: bytes) -> str:
    """Bytes from a program or a file as safe text: UTF-8 where it is valid, each
    byte that is not as ``\\xNN``."""
    return safe(data.decode("utf-8", errors="surrogateescape"))


class SafeStream(io.TextIOBase):
    """A text stream that writes everything through `safe_text`: what a headless
    command prints (tables, plans, notes, errors) cannot drive the terminal, whatever
    a print forgot. Only `write_styled` bypasses it, for zsn's own colours."""

    def __init__(self, stream: TextIO) -> None:
        super().__init__()
        self.stream = stream

    def write(self, text: str) -> int:
        self.stream.write(safe_text(text))
        return len(text)

    def flush(self) -> None:
        self.stream.flush()

    def isatty(self) -> bool:
        return self.stream.isatty()

    def fileno(self) -> int:
        return self.stream.fileno()

    @property
    def encoding(self) -> str:  # type: ignore[override]
        return getattr(self.stream, "encoding", "utf-8")


@contextlib.contextmanager
def safe_output() -> Iterator[None]:
    """`sys.stdout` and `sys.stderr` as `SafeStream`s while the block runs (a headless
    command, an export's errors)."""
    saved = sys.stdout, sys.stderr
    sys.stdout = SafeStream(saved[0])
    sys.stderr = SafeStream(saved[1])
    try:
        yield
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        sys.stdout, sys.stderr = saved


def write_styled(text: str) -> None:
    """Text zsn drew itself with its own escape sequences (a QR code's colours) to
    standard output as it is; everything in it must come from zsn, none from outside."""
    stream = sys.stdout
    (stream.stream if isinstance(stream, SafeStream) else stream).write(text)


def _needs_escape(char: str) -> bool:
    return not char.isprintable() or char in _INVISIBLE_LETTERS


def _escape(char: str) -> str:
    code = ord(char)
    if code in _SURROGATE_ESCAPE:
        return f"\\x{code - 0xDC00:02x}"
    if code < 0x100:
        return f"\\x{code:02x}"
    if code < 0x10000:
        return f"\\u{code:04x}"
    return f"\\U{code:08x}"
