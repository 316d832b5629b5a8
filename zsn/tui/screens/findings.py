"""Lint findings with their one-line fixes; a safe fix is one key (`f`) away."""

from __future__ import annotations

from typing import ClassVar

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Footer, OptionList, Static
from textual.widgets.option_list import Option

from zsn.lint import Finding
from zsn.terminal import safe, safe_text


def finding_text(finding: Finding) -> Text:
    text = Text()
    text.append(f"{finding.id} {finding.severity}", style="bold")
    if finding.subject:
        text.append(f" [{safe(finding.subject)}]")
    text.append(safe_text(f": {finding.message}\n  fix: {finding.fix}"))
    if finding.fix_plan is not None:
        text.append("  (press f)", style="bold")
    return text


class FindingsScreen(ModalScreen[Finding | None]):
    """Dismisses with the finding whose safe fix the user asked for."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("f", "fix", "Apply safe fix"),
        Binding("escape", "dismiss_none", "Close"),
    ]

    def __init__(self, findings: list[Finding],
                 empty_text: str = "No findings: the WireGuard configs look right.") -> None:
        super().__init__()
        self.findings = findings
        self.empty_text = empty_text

    def compose(self) -> ComposeResult:
        with Vertical(id="findings"):
            if self.findings:
                yield OptionList(*[Option(finding_text(f), id=str(i))
                                   for i, f in enumerate(self.findings)], id="findings-list")
            else:
                yield Static(self.empty_text)
        yield Footer()

    def on_mount(self) -> None:
        self.query_one("#findings").border_title = f"Lint: {len(self.findings)} finding(s)"
        lists = self.query("#findings-list")
        if lists:
            findings = lists.first(OptionList)
            findings.highlighted = 0
            self.set_focus(findings)

    def highlighted(self) -> Finding | None:
        lists = self.query("#findings-list")
        index = lists.first(OptionList).highlighted if lists else None
        return self.findings[index] if index is not None else None

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        # `f` is offered (footer, key) only on a finding that has a safe fix.
        if action == "fix":
            finding = self.highlighted()
            return finding is not None and finding.fix_plan is not None
        return True

    def on_option_list_option_highlighted(self, event: OptionList.OptionHighlighted) -> None:
        self.refresh_bindings()

    def action_fix(self) -> None:
        finding = self.highlighted()
        if finding is not None and finding.fix_plan is not None:
            self.dismiss(finding)

    def action_dismiss_none(self) -> None:
        self.dismiss(None)
