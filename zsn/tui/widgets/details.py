"""`DetailsBox`: the lines about the highlighted row under a pane's table.

It grows with the terminal (its height is a share of the pane's, set in the pane's
styles, not a fixed number of lines) and scrolls when its lines do not fit: `tab`
reaches it, the arrows scroll it, and its border says how many lines are above
and below, so nothing is cut silently. Setting the same lines again costs nothing
(a Static's update re-lays out the screen). `ScrollBox` is that border alone, for
a scrolled box of other widgets (the dataset box).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from textual.containers import VerticalScroll

from zsn.terminal import safe_lines
from zsn.tui.widgets.safe import SafeStatic, title


class ScrollBox(VerticalScroll):
    """A scrolled box whose bottom border says what is out of sight ("↑ 2 ↓ 5 more
    lines"), after `summary` (what the box holds further down, e.g. "3 snapshots";
    outside text allowed: it is escaped)."""

    def __init__(self, *children: Any, hint: str = "tab, ↑↓", summary: str = "",
                 **kwargs: Any) -> None:
        super().__init__(*children, **kwargs)
        self.hint = hint
        self.summary = summary

    def watch_scroll_y(self, old: float, new: float) -> None:
        super().watch_scroll_y(old, new)
        self.show_position()

    def on_resize(self) -> None:
        self.show_position()

    def show_position(self) -> None:
        height = self.scrollable_content_region.height
        total = self.virtual_size.height  # wrapped lines count
        top = round(self.scroll_y)
        above = min(top, total)
        below = max(0, total - top - height)
        parts = ([f"↑ {above}"] if above else []) + ([f"↓ {below}"] if below else [])
        position = " ".join(parts) + f" more lines ({self.hint})" if parts else ""
        subtitle = " · ".join(part for part in (self.summary, position) if part)
        if str(self.border_subtitle or "") != subtitle:
            self.border_subtitle = title(subtitle)


class DetailsBox(ScrollBox):
    def __init__(self, title: str = "", **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._text = ""
        if title:
            self.border_title = title

    def compose(self) -> Any:
        yield SafeStatic("", classes="details-text")  # outside text: names, replies

    @property
    def text(self) -> str:
        return self._text

    def show_lines(self, lines: Sequence[str]) -> None:
        text = safe_lines(lines)  # a value with a line break stays on its line
        if text == self._text:
            return
        self._text = text
        self.query_one(SafeStatic).update(text)
        self.call_after_refresh(self.show_position)
