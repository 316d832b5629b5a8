"""Show a plan (steps, warnings, notes, file diffs) and ask before applying it."""

from __future__ import annotations

from typing import ClassVar

from rich.syntax import Syntax
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Footer, Static

from zsn.plan import Plan
from zsn.terminal import safe_text
from zsn.tui.widgets.safe import title
from zsn.tui.wording import say


class PlanScreen(ModalScreen[bool]):
    """Dismisses with True when the user says apply, False otherwise.

    A plan with no steps can only be closed: there is nothing to apply."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("y", "answer(True)", "Apply"),
        Binding("n", "answer(False)", "Cancel"),
        Binding("escape", "answer(False)", "Cancel", show=False),
    ]

    def __init__(self, plan: Plan) -> None:
        super().__init__()
        self.plan = plan
        self.plan_title = plan.title
        self.text = ""
        self.can_apply = bool(plan.steps)

    def compose(self) -> ComposeResult:
        self.text = self.plan.describe(word=lambda text: say(text, self))
        with VerticalScroll(id="plan"):
            # File contents and names: escaped before Rich's diff lexer sees them.
            yield Static(Syntax(safe_text(self.text), "diff", theme="ansi_dark",
                                word_wrap=True),
                         id="plan-body")
        yield Footer()

    def on_mount(self) -> None:
        suffix = "y to apply, n to cancel" if self.can_apply else "esc to close"
        self.query_one("#plan").border_title = title(f"{self.plan_title} ({suffix})")

    def action_answer(self, apply: bool) -> None:
        self.dismiss(apply and self.can_apply)
