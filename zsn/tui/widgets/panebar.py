"""`PaneBar`: one line with the pane tabs on the left and the title on the right.

It replaces Textual's Header and TabbedContent (three lines, a clock-sized slot,
an animated underline): at 80x24 two more table rows, and a cheaper start.
Nothing in it changes unless the pane or the title does; the title is the first
thing left out when the line is too narrow for both.
"""

from __future__ import annotations

from typing import Any, ClassVar

from rich.cells import cell_len
from rich.text import Text
from textual import events
from textual.message import Message
from textual.reactive import reactive
from textual.widget import Widget


class PaneBar(Widget):
    COMPONENT_CLASSES: ClassVar[set[str]] = {"pane-bar--active", "pane-bar--title"}

    active: reactive[str] = reactive("")
    title: reactive[str] = reactive("")

    class Chosen(Message):
        """A tab was clicked."""

        def __init__(self, name: str) -> None:
            super().__init__()
            self.name = name

    def __init__(self, tabs: list[tuple[str, str]], **kwargs: Any) -> None:
        """`tabs`: (name, label) in order; labels are shown as ``N label``."""
        super().__init__(**kwargs)
        self.tabs = tabs
        self._spans: list[tuple[int, int, str]] = []

    def render(self) -> Text:
        active_style = self.get_component_rich_style("pane-bar--active")
        line = Text(no_wrap=True, end="")
        self._spans = []
        for number, (name, label) in enumerate(self.tabs, start=1):
            start = line.cell_len
            line.append(f" {number} {label} ", style=active_style if name == self.active else "")
            self._spans.append((start, line.cell_len, name))
        title = self.title
        if title:
            room = self.size.width - line.cell_len - 1
            if cell_len(title) <= room:
                line.append(" " * (room - cell_len(title)))
                line.append(title, style=self.get_component_rich_style("pane-bar--title"))
        return line

    async def _on_click(self, event: events.Click) -> None:
        for start, end, name in self._spans:
            if start <= event.x < end:
                self.post_message(self.Chosen(name))
                return
