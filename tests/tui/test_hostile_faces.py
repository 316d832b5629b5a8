"""The property: whatever outside text holds, zsn writes no raw control character to a
terminal but its own drawing. Every domain's snapshot with hostile strings in every
text field (`tests.lab.hostile_faces`), every pane and every listing, status, lint,
export and error line rendered, and the bytes read from a pseudo-terminal."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

from tests.lab.hostile_faces import CLI_COMMANDS
from tests.terminal_scan import drawn_text, raw_controls, run_in_terminal

REPO = Path(__file__).resolve().parents[2]
# HOSTILE[6] is "two\nlines\u2028sep": were its line feed kept, "lines" would start a line.
FORGED_LINE = re.compile(r"[\r\n]lines(?:\\u2028|\u2028)sep")


def test_every_pane_reaches_the_terminal_escaped() -> None:
    code, written = run_in_terminal([sys.executable, "-m", "tests.lab.hostile_faces", "tui"],
                                    cwd=str(REPO), timeout=120)
    text = written.decode("utf-8", "replace")
    assert code == 0, text[-2000:]
    assert raw_controls(text) == []
    # The hostile text was drawn, escaped: in tables, the plan and the notification.
    drawn = drawn_text(text)
    for shown in ("\\x1b]52;c;SE9TVElMRQ==\\x07clip", "rtl\\u202eevil", "c1\\x9b31mred",
                  "[link=http://evil.example]markup", "rename c1\\x9b31mred"):
        assert shown in drawn, shown
    for pane in ("WireGuard", "OpenVPN", "ZFS", "WLAN", "Links"):
        assert pane in drawn


@pytest.mark.parametrize("argv", CLI_COMMANDS, ids=" ".join)
def test_every_command_reaches_the_terminal_escaped(argv: list[str]) -> None:
    code, written = run_in_terminal(
        [sys.executable, "-m", "tests.lab.hostile_faces", "cli", *argv], cwd=str(REPO),
        timeout=60)
    text = written.decode("utf-8", "replace")
    assert written, "nothing was written"
    assert raw_controls(text) == [], text[-2000:]
    assert not FORGED_LINE.search(text), text[-2000:]
    assert code in (0, 1, 2, 3), text[-2000:]
    if argv[0] == "FAIL":
        assert code == 1 and text.count("\n") == 1 and "the daemon said \\x1b]52" in text
