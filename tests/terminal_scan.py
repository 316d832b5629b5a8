"""Hostile text for tests, and a scan of what reached a terminal for raw controls.

Every hostile string carries controls no terminal writer emits by itself (an OSC 52
that sets the clipboard, a C1 CSI, BEL, DEL, a right-to-left override ...), so any
leak of one, whole or in part, is found by `raw_controls`, which allows only the
CSI sequences a Textual app draws with (and, for the QR code, SGR).
"""

from __future__ import annotations

import re

from zsn.terminal import safe

HOSTILE = (
    "\x1b]52;c;SE9TVElMRQ==\x07clip",  # OSC 52: writes the viewer's clipboard
    "\x1b[2J\x1b[Hclear\x9b",  # clears the screen
    "\x1b]0;title",  # an OSC left open swallows what follows
    "rtl\u202eevil\u2066x\u2069",  # bidi override and isolate
    "c1\x9b31mred\x9d0;t\x9c",  # 8-bit CSI, OSC, ST
    "del\x7f\x08\x08bs\x00nul\rcr",
    "two\nlines\u2028sep",
    "[link=http://evil.example]markup[/link][b]\u200f",  # Textual markup
)
"""Strings to put where outside text goes. Each holds a control that no terminal UI
writes itself (so a leak of any of them is seen whole); the last is mostly markup,
to check that outside text is never read as markup (a link, a style)."""


def hostile(index: int) -> str:
    """One hostile string per index, each different (row keys stay unique)."""
    return f"h{index}{HOSTILE[index % len(HOSTILE)]}"


# The CSI sequences a terminal UI draws with: ESC [, parameters, intermediates, a final.
_CSI = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]")
_ALLOWED_OUTSIDE_CSI = frozenset("\n")


def raw_controls(written: str) -> list[str]:
    """Each control character in `written` that is not part of a CSI sequence, shown
    with what surrounds it (empty: nothing but text and drawing)."""
    found = []
    text = _CSI.sub("", written)
    for match in re.finditer(r".", text, re.DOTALL):
        char = match.group()
        if char in _ALLOWED_OUTSIDE_CSI or safe(char) == char:
            continue
        start = max(0, match.start() - 20)
        found.append(repr(text[start:match.end() + 20]))
    return found
