"""Shows a plan (file diffs with secrets masked, live operations) and asks before applying."""

from __future__ import annotations

from typing import ClassVar

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Footer, Static

from zsn.plan import Plan


class PlanScreen(ModalScreen[bool]):
    """Dismisses with True when the user confirms (`y` or `enter`), False otherwise."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("y", "confirm", "Apply"),
        Binding("enter", "confirm", "Apply", show=False),
        Binding("n", "cancel", "Cancel"),
        Binding("escape", "cancel", "Cancel", show=False),
    ]

    def __init__(self, plan: Plan) -> None:
        super().__init__()
        self.plan = plan

    def compose(self) -> ComposeResult:
        with VerticalScroll(id="plan"):
            yield Static(Text(self.plan.describe()), id="plan-body")
        yield Footer()

    def on_mount(self) -> None:
        box = self.query_one("#plan")
        box.border_title = "Apply this plan? y = apply, n = cancel"
        box.focus()

    def action_confirm(self) -> None:
        self.dismiss(True)

    def action_cancel(self) -> None:
        self.dismiss(False)
