"""`?`: what every key does here, and what the columns and markers mean.

The help opens at once, even in a busy pane: its first frame is the pane's own
keys (a short table); the rest (what the pane shows, its columns and which go
when narrow, the keys every pane shares) is drawn on the next frame. It is one
Rich renderable in a scrolled `Static`, not Textual's `Markdown` widget (one
widget per block: seconds to mount on a loaded machine while keys waited).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import ClassVar

from rich.markdown import Markdown
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.screen import ModalScreen
from textual.widgets import Footer, Static

from zsn.terminal import safe
from zsn.tui.keys import DrawnInSteps
from zsn.tui.widgets.details import ScrollBox

GENERAL = """\
## Keys in every pane
| key | action |
|---|---|
| `?` | this help |
| `ctrl+p` | command palette: every action, theme switching |
| `1` `2` … | switch pane (the number is on each tab) |
| `tab` / `shift+tab` | move between tables and boxes |
| `↑ ↓ pgup pgdn` | move in a table; `home` / `end`: first / last row |
| `enter` | open the highlighted row |
| `/` | filter a table (every row, every column); `enter` keeps it |
| `esc` | clear the filter, while typing it or later (a kept one shows in the border) |
| `o` / `O` | order a table by the next column / reverse the order |
| `r` | refresh now |
| `ctrl+s` | in a form: submit (`enter` in a text field too); `esc` cancels |
| `q` | quit |
"""


def markdown_text(text: str) -> str:
    """Outside text (a name in a reason) as literal Markdown: escaped for the
    terminal, its punctuation taken as itself, never as a table cell's end."""
    return re.sub(r"([\\`*_{}\[\]<>()#+\-.!|~])", r"\\\1", safe(text))


def keys_table(title: str, bindings: list[tuple[str, str, str]]) -> str:
    """The pane's keys, in its order; a key that cannot act now says why."""
    rows = "".join(f"| `{key}` | {description}"
                   + (f" — *not now: {markdown_text(why)}*" if why else "") + " |\n"
                   for key, description, why in bindings)
    return f"## {title}\n| key | action |\n|---|---|\n{rows}" if rows else ""


class HelpScreen(ModalScreen[None], DrawnInSteps):
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "dismiss", "Close"),
        Binding("q", "dismiss", "Close", show=False),
        Binding("question_mark", "dismiss", "Close", show=False),
    ]

    def __init__(self, bindings: list[tuple[str, str, str]],
                 pane_help: Callable[[], str] | str = "", title: str = "this pane") -> None:
        super().__init__()
        self.bindings_here = bindings
        """The pane's own keys (key, action, why not now), first on the screen."""
        self._pane_help = pane_help
        self.title_here = title

    @property
    def pane_help(self) -> str:
        """What the pane shows and its columns (Markdown), built once when first needed."""
        if callable(self._pane_help):
            self._pane_help = self._pane_help()
        return self._pane_help

    def compose(self) -> ComposeResult:
        with ScrollBox(id="help", hint="↑↓ pgdn"):
            yield Static(Markdown(keys_table(f"Keys of {self.title_here}", self.bindings_here)
                                  or "No keys of its own here."), id="help-keys")
            yield Static("", id="help-more")
        yield Footer()

    def on_mount(self) -> None:
        self.query_one("#help").border_title = "Help (esc to close, ↑↓ scroll)"
        self.call_after_refresh(self._show_the_rest)

    def _show_the_rest(self) -> None:
        self.query_one("#help-more", Static).update(Markdown(self.pane_help + "\n\n" + GENERAL))
        self.call_after_refresh(self._drawn_whole)

    def _drawn_whole(self) -> None:
        self.query_one("#help", ScrollBox).show_position()
        self.drawn = True  # the keys typed after `?` go on (`zsn.tui.keys`)
