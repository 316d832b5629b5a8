"""A unit's recent journal lines, newest at the bottom; `r` reads them again.

Lines wrap at the screen's width (RichLog renders at least 78 columns by default,
which hid the end of long lines on an 80-column terminal) and wrap again when the
terminal is resized."""

from __future__ import annotations

import datetime
from typing import ClassVar

from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.screen import ModalScreen
from textual.widgets import Footer, RichLog

from zsn.errors import ZsnError
from zsn.system.host import Host
from zsn.system.journal import JournalLine, unit_lines
from zsn.terminal import safe_text
from zsn.tui.widgets.safe import plain, title


class JournalScreen(ModalScreen[None]):
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "dismiss", "Close"),
        Binding("q", "dismiss", "Close", show=False),
        Binding("r", "reload", "Reload"),
    ]

    def __init__(self, host: Host, unit: str, lines: int = 200) -> None:
        super().__init__()
        self.host = host
        self.unit = unit
        self.lines = lines
        self._shown: list[JournalLine] | None = None

    def compose(self) -> ComposeResult:
        yield RichLog(id="journal", wrap=True, markup=False, highlight=False, min_width=1)
        yield Footer()

    def on_mount(self) -> None:
        self.query_one("#journal").border_title = title(f"Log of {self.unit}")
        self.action_reload()

    def action_reload(self) -> None:
        self._read()

    @work(thread=True, exclusive=True)
    def _read(self) -> None:
        try:
            lines = unit_lines(self.host, self.unit, lines=self.lines)
        except ZsnError as exc:
            self.app.call_from_thread(self._show_error, str(exc))
        else:
            self.app.call_from_thread(self._show, lines)

    def on_resize(self) -> None:
        if self._shown is not None:
            self._show(self._shown)

    def _show(self, lines: list[JournalLine]) -> None:
        self._shown = lines
        log = self.query_one("#journal", RichLog)
        log.clear()
        if not lines:
            log.write(Text("No journal lines for this unit (never started, or the journal "
                           "is volatile and out of reach under --root)."))
        for line in lines:
            when = datetime.datetime.fromtimestamp(line.timestamp_us / 1e6)
            style = ("bold " if line.priority <= 3 else "") + (
                self.app.theme_variables.get("text-error", "") if line.priority <= 3 else
                self.app.theme_variables.get("text-warning", "") if line.priority == 4 else "")
            log.write(Text(safe_text(f"{when:%H:%M:%S} {line.message}"), style=style.strip()))

    def _show_error(self, message: str) -> None:
        self.query_one("#journal", RichLog).write(plain(f"Cannot read the journal: {message}"))
