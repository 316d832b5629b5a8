"""Outside text with control characters never reaches the terminal raw, and is never
read as markup: table cells and titles, the status line, notifications, plan and
detail screens all show it through `zsn.terminal.safe`."""

from __future__ import annotations

from pathlib import Path

from tests.pilot import TerminalOutput, screen_text, wait_for_rows, wait_until
from tests.terminal_scan import HOSTILE, hostile, raw_controls
from tests.tui.test_table import TableApp, table_of
from zsn.meaning import OwnFile
from zsn.plan import FileEdit, LiveStep, Plan
from zsn.system import files
from zsn.tui.app import ZsnApp
from zsn.tui.panes.base import LivePane
from zsn.tui.screens.plan import PlanScreen
from zsn.view import Cell, Column, Row

COLUMNS = (Column("name", "Name", 1), Column("state", "State", 2),
           Column("path", "Path", 3, truncate=True))


def hostile_rows() -> list[Row]:
    return [Row(hostile(i), (hostile(i), Cell(hostile(i + 1), "bad", short=hostile(i + 2)),
                             "/dev/disk/by-id/" + hostile(i + 3)))
            for i in range(len(HOSTILE))]


def assert_clean(output: TerminalOutput) -> None:
    written = "".join(output.written)
    assert written, "nothing was drawn"
    assert raw_controls(written) == []


async def test_table_cells_shorts_and_titles_reach_the_terminal_escaped() -> None:
    app = TableApp(hostile_rows(), COLUMNS)
    async with app.run_test(size=(80, 24)) as pilot:
        output = TerminalOutput(app)
        table = table_of(app)
        table.set_title(f"Pools of {HOSTILE[0]}{HOSTILE[-1]}")
        table.update(hostile_rows()[::-1])  # moves every row: all of them redrawn
        await pilot.pause()
        assert_clean(output)
        shown = "\n".join(screen_text(app))
        assert "h0\\x1b]52;c;SE9TVElMRQ==\\x07clip" in shown
        assert "[link=http://evil.example]markup[/link]" in shown  # as typed, not a link
        # The rows keep their text as given: keys and actions use the real name.
        assert table.cell(hostile(0), "name") == hostile(0)


async def test_status_notifications_and_plans_reach_the_terminal_escaped(
        fixed_app: ZsnApp, tmp_path: Path) -> None:
    edited = tmp_path / "wg0.conf"
    edited.write_text("[Interface]\n# " + HOSTILE[0] + "\n")
    plan = Plan(f"rename {HOSTILE[3]}", [
        FileEdit(edited, files.read_tracked(edited), "[Interface]\n# " + "\n# ".join(HOSTILE),
                 intent=OwnFile("a test's file")),
        LiveStep(f"set {HOSTILE[4]} down", lambda: None)],
        warnings=[HOSTILE[1]], notes=[HOSTILE[5]])
    async with fixed_app.run_test(size=(80, 24), notifications=True) as pilot:
        await wait_for_rows(pilot)
        output = TerminalOutput(fixed_app)
        pane = fixed_app.query_one(LivePane)
        pane.set_status([HOSTILE[2], HOSTILE[6]], severity="warning")
        fixed_app.notify(HOSTILE[7] + HOSTILE[0], title=HOSTILE[4], severity="error")
        pane.notify(HOSTILE[3])  # a widget's notify asks Textual for markup
        await wait_until(pilot, lambda: "evil.example" in "".join(screen_text(fixed_app)),
                         "the notification")
        shown = "\n".join(screen_text(fixed_app))
        assert "\\x1b]0;title" in shown  # the status line
        assert "[link=http://evil.example]markup" in shown  # the toast, not read as markup
        assert_clean(output)
        output.reset()
        await fixed_app.push_screen(PlanScreen(plan))
        await wait_until(pilot, lambda: "# \\x1b]52;c;" in "".join(screen_text(fixed_app)),
                         "the plan's diff, escaped")
        shown = "\n".join(screen_text(fixed_app))
        assert "rename rtl\\u202eevil" in shown and "set c1\\x9b31mred" in shown
        assert_clean(output)
