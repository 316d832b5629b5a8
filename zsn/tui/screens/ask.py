"""Small keyboard dialogs: one line of text checked where it is typed, or one choice."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import ClassVar, TypeVar

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Footer, Input, OptionList
from textual.widgets.option_list import Option

from zsn.terminal import safe
from zsn.tui.screens.form import FormField, FormScreen, Values
from zsn.tui.widgets.safe import plain, title

ResultT = TypeVar("ResultT")


class AskScreen(FormScreen[ResultT]):
    """Asks for one line and hands it to `build` (run in a worker thread: it reads
    files, checks the text, makes the plan). A refusal keeps the dialog open with the
    text and the reason; success dismisses with `build`'s result, escape with None."""

    BINDINGS: ClassVar[list[BindingType]] = [Binding("ctrl+s", "submit", "OK", show=False)]
    LABELS_BESIDE = False

    def __init__(self, title: str, prompt: str, value: str,
                 build: Callable[[str], ResultT], field: str = "value") -> None:
        super().__init__()
        self.title_text, self.prompt, self.value = title, prompt, value
        self._build = build
        self.field = field
        """The core's name for the input (`ValidationError.field`)."""

    def form_title(self) -> str:
        return f"{self.title_text}: enter to confirm, esc to cancel"

    def form_fields(self) -> Iterable[FormField]:
        yield FormField(self.field, self.prompt, Input(safe(self.value), id="ask-input",
                                                      compact=True))

    def build(self, values: Values) -> ResultT:
        return self._build(str(values[self.field]))


class Picker(OptionList):
    """An option list whose `enter` shows in the footer: a picker says how to confirm."""

    BINDINGS: ClassVar[list[BindingType]] = [Binding("enter", "select", "Choose")]


class ChooseScreen(ModalScreen[str | None]):
    """Picks one of `choices` (id, label); dismisses with the id, None on escape."""

    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape", "cancel", "Cancel")]

    def __init__(self, title: str, choices: list[tuple[str, str]]) -> None:
        super().__init__()
        self.title_text, self.choices = title, choices

    def compose(self) -> ComposeResult:
        with Vertical(id="ask"):
            yield Picker(*[Option(plain(label), id=choice_id)
                           for choice_id, label in self.choices],
                         id="ask-choices")
        yield Footer()

    def on_mount(self) -> None:
        self.query_one("#ask").border_title = title(
            f"{self.title_text}: enter chooses, esc cancels")
        self.set_focus(self.query_one("#ask-choices", Picker))

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        self.dismiss(event.option.id)

    def action_cancel(self) -> None:
        self.dismiss(None)
