"""A LiveTable whose cells change many times, for a real terminal (tmux) to show:
``python -m tests.lab.ticking_table OUT [still]``. It drives the table through the
same partial updates zsn's app sends (`zsn.tui.output.tight`), then writes the screen
as the app itself knows it to OUT (`tests/tui/test_terminal_output.py` compares that
with what tmux shows) and waits to be killed. ``still`` shows the last state at once
(one whole frame, as Textual draws it), to compare colours with.

A second table above the first changes in the same frames (a peer's rates and its
interface's totals): the ticking app is drawn by `zsn.tui.output.FrontScreen`, which
renders each table's changes apart; the still one by Textual's own screen."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from rich.console import RenderableType
from textual.app import App, ComposeResult
from textual.screen import Screen

from zsn.tui.output import FrontScreen, tight
from zsn.tui.widgets.table import LiveTable
from zsn.view import Cell, Column, Row

STYLES = Path(__file__).resolve().parents[2] / "zsn" / "tui" / "styles" / "table.tcss"
COLUMNS = (Column("name", "Name", 1), Column("age", "Age", 2, min_width=6),
           Column("note", "Note", 3), Column("rate", "Rate", 4, min_width=9, align="right"))
TICKS = 40


def rows(tick: int) -> list[Row]:
    # Double-width names before the changing cells; every other row changes its age
    # and its rate, the rest only the rate.
    # Some rows turn muted or gone and back (their whole line is drawn again).
    return [Row(f"r{n}", (f"{'名前' if n % 3 == 0 else 'peer'}-{n}",
                          Cell(f"{(tick if n % 2 else 0) + n}s", "good"),
                          "宽字符" if n % 4 == 0 else "plain",
                          Cell(f"{(tick * (n + 3)) % 997} B/s", "warn" if tick % 3 else "")),
                state=("", "muted", "gone")[(tick + n) % 3] if n % 5 == 0 else "")
            for n in range(12)]


TOTAL_COLUMNS = (Column("name", "Interface", 1), Column("total", "Total", 2, align="right"))


def totals(tick: int) -> list[Row]:
    return [Row("wg0", ("wg0", Cell(f"{tick * 1234} B", "good")))]


class TickingApp(App[None]):
    CSS_PATH = [str(STYLES)]
    CSS = "#totals { height: 4; }"

    def __init__(self, out: Path, still: bool) -> None:
        super().__init__()
        self.out = out
        self.tick = TICKS if still else 0

    def get_default_screen(self) -> Screen[Any]:
        return Screen(id="_default") if self.tick else FrontScreen(id="_default")

    def compose(self) -> ComposeResult:
        yield LiveTable(TOTAL_COLUMNS, id="totals", title="Totals")
        yield LiveTable(COLUMNS, id="table", title="Ticking")

    def on_mount(self) -> None:
        self.query_one("#totals", LiveTable).update(totals(self.tick))
        table = self.query_one("#table", LiveTable)
        table.update(rows(self.tick))
        table.focus()  # a cursor row, in colours of its own
        self.set_interval(0.05, self._next)

    def _next(self) -> None:
        self.tick += 1
        if self.tick <= TICKS:
            self.query_one("#totals", LiveTable).update(totals(self.tick))
            self.query_one("#table", LiveTable).update(rows(self.tick))
        elif self.tick == TICKS + 10:  # drawn: write what is on the screen
            lines = [strip.text for strip in self.screen._compositor.render_strips()]
            self.out.write_text("\n".join(lines))

    def _display(self, screen: Screen[Any], renderable: RenderableType | None) -> None:
        super()._display(screen, tight(renderable))


if __name__ == "__main__":
    TickingApp(Path(sys.argv[1]), sys.argv[2:] == ["still"]).run()
