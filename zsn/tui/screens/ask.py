"""Small keyboard dialogs: one line of text, or one choice from a list."""

from __future__ import annotations

from typing import ClassVar

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Footer, Input, Label, OptionList
from textual.widgets.option_list import Option


class AskScreen(ModalScreen[str | None]):
    """Asks for one line; dismisses with the text on enter, None on escape."""

    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape", "cancel", "Cancel")]

    def __init__(self, title: str, prompt: str, value: str = "") -> None:
        super().__init__()
        self.title_text, self.prompt, self.value = title, prompt, value

    def compose(self) -> ComposeResult:
        with Vertical(id="ask"):
            yield Label(self.prompt)
            yield Input(self.value, id="ask-input")
        yield Footer()

    def on_mount(self) -> None:
        self.query_one("#ask").border_title = self.title_text
        self.query_one("#ask-input", Input).focus()

    def on_input_submitted(self, event: Input.Submitted) -> None:
        self.dismiss(event.value)

    def action_cancel(self) -> None:
        self.dismiss(None)


class ChooseScreen(ModalScreen[str | None]):
    """Picks one of `choices` (id, label); dismisses with the id, None on escape."""

    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape", "cancel", "Cancel")]

    def __init__(self, title: str, choices: list[tuple[str, str]]) -> None:
        super().__init__()
        self.title_text, self.choices = title, choices

    def compose(self) -> ComposeResult:
        with Vertical(id="ask"):
            yield OptionList(*[Option(label, id=choice_id) for choice_id, label in self.choices],
                             id="ask-choices")
        yield Footer()

    def on_mount(self) -> None:
        self.query_one("#ask").border_title = self.title_text
        self.query_one("#ask-choices", OptionList).focus()

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        self.dismiss(event.option.id)

    def action_cancel(self) -> None:
        self.dismiss(None)
