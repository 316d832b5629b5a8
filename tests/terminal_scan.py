"""Hostile text for tests, and a scan of what reached a terminal for raw controls.

Every hostile string carries controls no terminal writer emits by itself (an OSC 52
that sets the clipboard, a C1 CSI, BEL, DEL, a right-to-left override ...), so any
leak of one, whole or in part, is found by `raw_controls`, which allows only the
sequences a Textual app draws with (CSI, and OSC 22 for the pointer's shape).
"""

from __future__ import annotations

import re
from collections.abc import Callable

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


# What a terminal UI draws with: CSI sequences (ESC [, parameters, intermediates, a
# final), and Textual's one OSC, 22, which sets the shape of the mouse pointer.
_CSI = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\]22;[a-z-]*\x07")
_ALLOWED_OUTSIDE_CSI = frozenset("\r\n")


def raw_controls(written: str) -> list[str]:
    """Each control character in `written` that is not part of the drawing (CSI, the
    pointer's OSC 22, line breaks), shown with what surrounds it (empty: nothing but
    text and drawing)."""
    found = []
    text = _CSI.sub("", written)
    for match in re.finditer(r".", text, re.DOTALL):
        char = match.group()
        if char in _ALLOWED_OUTSIDE_CSI or safe(char) == char:
            continue
        start = max(0, match.start() - 20)
        found.append(repr(text[start:match.end() + 20]))
    return found


def run_in_terminal(argv: list[str], *, columns: int = 80, lines: int = 24,
                    timeout: float = 60.0, cwd: str | None = None,
                    env: dict[str, str] | None = None,
                    until: Callable[[bytes], bool] | None = None) -> tuple[int, bytes]:
    """Run `argv` with a pseudo-terminal of `columns` x `lines` as its terminal (stdin,
    stdout, stderr); its exit status and every byte it wrote there. With `until`, it
    is killed as soon as what it wrote makes `until` true."""
    import fcntl
    import os
    import select
    import struct
    import subprocess
    import termios
    import time

    master, slave = os.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", lines, columns, 0, 0))
    process = subprocess.Popen(argv, stdin=slave, stdout=slave, stderr=slave, cwd=cwd,
                               env={**os.environ, "TERM": "xterm-256color", **(env or {})},
                               start_new_session=True)
    os.close(slave)
    written = bytearray()
    deadline = time.monotonic() + timeout
    try:
        while time.monotonic() < deadline:
            ready, _, _ = select.select([master], [], [], 0.2)
            if ready:
                try:
                    chunk = os.read(master, 65536)
                except OSError:  # EIO: the terminal's other end is closed
                    break
                if not chunk:
                    break
                written += chunk
                if until is not None and until(bytes(written)):
                    process.kill()
                    break
            elif process.poll() is not None:
                break
        else:
            raise AssertionError(f"{argv}: still running after {timeout:g} s")
        return process.wait(10), bytes(written)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
        os.close(master)


def drawn_text(written: str) -> str:
    """`written` without the drawing's sequences: the characters put on the screen."""
    return _CSI.sub("", written)
