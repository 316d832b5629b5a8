"""What zsn writes to a real terminal (tmux) adds up to the screen it means: partial
updates send each changed span from its own start (`zsn.tui.output`), double-width
characters before a span included."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

from tests.lab.netns import wait_for
from tests.needs import needs_tools

REPO = Path(__file__).resolve().parents[2]


def test_cell_updates_leave_the_terminal_showing_the_apps_screen(tmp_path: Path) -> None:
    needs_tools("tmux")
    server = f"zsn-ticking-{time.monotonic_ns()}"
    tmux = ["tmux", "-L", server]
    for name, mode in (("ticking", ""), ("still", "still")):
        subprocess.run([*tmux, "new-session", "-d", "-x", "80", "-y", "24", "-s", name,
                        f"cd {REPO} && TERM=xterm-256color {sys.executable} -m "
                        f"tests.lab.ticking_table {tmp_path / name} {mode}; sleep 60"],
                       check=True, timeout=30)

    def shown(session: str, *options: str) -> list[str]:
        captured = subprocess.run([*tmux, "capture-pane", "-p", *options, "-t", session],
                                  capture_output=True, text=True, check=True, timeout=30)
        return [line.rstrip() for line in captured.stdout.splitlines()]

    try:
        for name in ("ticking", "still"):
            wait_for((tmp_path / name).exists, 60, f"the {name} app's screen")
        expected = [line.rstrip() for line in (tmp_path / "ticking").read_text().splitlines()]
        # tmux shows what the app wrote once it has read it all (it writes no more)
        wait_for(lambda: shown("ticking")[:len(expected)] == expected, 30,
                 f"tmux to show the app's screen:\n{chr(10).join(expected)}")
        # Colours and attributes too: the same as Textual's own whole frame of that state.
        wait_for(lambda: shown("ticking", "-e") == shown("still", "-e"), 30,
                 "the cell updates' colours to be a whole frame's")
    finally:
        subprocess.run([*tmux, "kill-server"], check=False, timeout=30)
    assert any("名前-0" in line for line in expected) and any("宽字符" in line for line in expected)


def test_a_span_starts_where_it_is_asked_only_on_a_character_boundary() -> None:
    """A span may start at the cell asked unless a double-width character straddles it
    (then its chop is sent from its start)."""
    from rich.segment import Segment
    from textual.strip import Strip

    from zsn.tui.output import _narrow_before

    ascii_line = Strip([Segment("  wg0  "), Segment("1.2 KiB/s"), Segment(" " * 20)])
    assert all(_narrow_before(ascii_line, cells) for cells in range(40))
    wide = Strip([Segment("ab"), Segment("名前x"), Segment("cd")])  # 名 at 2-3, 前 at 4-5
    assert [_narrow_before(wide, cells) for cells in range(10)] == [
        True, True, True, False, True, False, True, True, True, True]


def test_the_cursor_takes_the_shortest_move_a_terminal_reads_the_same_everywhere() -> None:
    """From a known place: along the line, or up and down the column, by whichever is
    shortest (as curses does); from an unknown one (or to another line and column), to
    line and column. Never a line feed (ONLCR would add a carriage return)."""
    from zsn.tui.output import _move

    assert _move(None, 53, 11) == "\x1b[12;54H"
    assert _move((53, 11), 53, 11) == ""
    assert _move((43, 11), 53, 11) == "\x1b[54G"  # 5 bytes, as ESC [ 10 C
    assert _move((50, 11), 53, 11) == "\x1b[3C"
    assert _move((55, 11), 53, 11) == "\b\b"
    assert _move((70, 11), 53, 11) == "\x1b[54G"
    assert _move((53, 10), 53, 11) == "\x1b[B"
    assert _move((53, 14), 53, 11) == "\x1b[3A"
    assert _move((40, 10), 53, 11) == "\x1b[12;54H"
    assert all("\n" not in _move((column, line), x, y) for column in range(0, 80, 7)
               for line in range(0, 24, 5) for x in range(0, 80, 9) for y in range(0, 24, 4))
