"""`?`: what every key does here, and what the columns and markers mean."""

from __future__ import annotations

from typing import ClassVar

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Footer, Markdown

GENERAL = """\
## zsn keys
| key | action |
|---|---|
| `?` | this help |
| `ctrl+p` | command palette: every action, theme switching |
| `1` `2` … | switch pane (the number is on each tab) |
| `tab` / `shift+tab` | move between tables |
| `↑ ↓ pgup pgdn` | move in a table; `home` / `end`: first / last row |
| `enter` | open the highlighted row |
| `/` | filter a table (every row, every column); `enter` keeps it, `esc` clears it |
| `o` / `O` | order a table by the next column / reverse the order |
| `r` | refresh now |
| `ctrl+s` | in a form: submit (`enter` in a text field too); `esc` cancels |
| `q` | quit |
"""


class HelpScreen(ModalScreen[None]):
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "dismiss", "Close"),
        Binding("q", "dismiss", "Close", show=False),
        Binding("question_mark", "dismiss", "Close", show=False),
    ]

    def __init__(self, pane_help: str, bindings: list[tuple[str, str]]) -> None:
        super().__init__()
        self.pane_help = pane_help
        self.bindings_here = bindings

    def compose(self) -> ComposeResult:
        rows = "".join(f"| `{key}` | {description} |\n" for key, description in self.bindings_here)
        here = f"\n## Keys active here\n| key | action |\n|---|---|\n{rows}" if rows else ""
        with VerticalScroll(id="help"):
            yield Markdown(GENERAL + here + "\n" + self.pane_help)
        yield Footer()

    def on_mount(self) -> None:
        self.query_one("#help").border_title = "Help (esc to close)"
