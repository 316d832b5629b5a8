"""`FormScreen`: the base of every form (fields that build a plan, or one answer).

Typing into a form is never lost, whatever runs underneath (a pane polling every
50 ms, defaults read in a thread):

- The widgets are made once, in `compose`. Nothing the form does replaces them or
  re-validates while the user types; a field's change only clears its own "refused"
  mark. Nothing moves the focus but the user's own keys.
- Values found later (defaults read from files) go only into fields the user has
  not typed in (`fill`).
- The first field has the focus as soon as the form is mounted, so keys typed
  right after the key that opened the form land in it (the app hands keys over
  one at a time, each once the screen the one before opened is mounted:
  `zsn.tui.keys`).
- Submitting (`ctrl+s`, or `enter` in a text field) reads the values on the UI
  thread and runs `build(values)` in a worker thread (it reads files, checks
  everything and returns the plan). A `ZsnError` keeps the form open with what was
  typed: the message names the field the error is about (`ValidationError.field`
  is one of the fields' keys: its label is shown, never a CLI flag) and that field
  is marked. Success dismisses the form with `build`'s result.

A subclass lists its fields in `form_fields` (key, label, widget with an id) and
implements `build`; `fill` puts in values read later.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, ClassVar, TypeVar

from textual import work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Grid, VerticalScroll
from textual.screen import ModalScreen
from textual.widget import Widget
from textual.widgets import Checkbox, Footer, Input, Label, RadioSet, Select

from zsn.errors import ZsnError
from zsn.terminal import safe
from zsn.tui.widgets.safe import SafeStatic, title
from zsn.tui.wording import say

ResultT = TypeVar("ResultT")

Values = dict[str, Any]
"""Field key -> value: an `Input`'s text (as typed), a `Select`'s value, the pressed
`RadioButton`'s name, a `Checkbox`'s bool."""


@dataclass(frozen=True)
class FormField:
    key: str
    """The input's name in the core (a `PeerRequest` attribute, a plan function's
    argument): a `ValidationError` whose `field` is this key is shown on this field."""
    label: str
    widget: Widget
    """Made in `form_fields`, with an id."""


class FormScreen(ModalScreen[ResultT | None]):
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("ctrl+s", "submit", "OK"),
        Binding("escape", "cancel", "Cancel"),
    ]
    LABELS_BESIDE: ClassVar[bool] = True
    """Labels in a column beside the fields; False puts each label above its field."""
    FIRST_FIELD: ClassVar[str | None] = None
    """The key of the field the form starts in (default: the first)."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._fields: dict[str, FormField] = {}
        self._filled: dict[str, str] = {}
        self._building = False

    # -- to implement ------------------------------------------------------------
    def form_title(self) -> str:
        """The border title: what the form does and how to submit it."""
        return "ctrl+s to confirm, esc to cancel"

    def form_fields(self) -> Iterable[FormField]:
        raise NotImplementedError

    def build(self, values: Values) -> ResultT:
        """Check `values` and make the result (worker thread; raise `ZsnError`)."""
        raise NotImplementedError

    # -- for subclasses ---------------------------------------------------------
    def fill(self, key: str, value: str) -> None:
        """Put `value` in a text field, unless the user typed in it."""
        widget = self._fields[key].widget
        if isinstance(widget, Input) and widget.value in ("", self._filled.get(key)):
            value = safe(value)  # read from a file or a daemon: never raw on the terminal
            self._filled[key] = value
            widget.value = value
            if widget.has_focus and widget.select_on_focus:
                # Entered before the value came: what is typed next replaces it, as
                # when a field with its value is entered (not appended to it).
                widget.select_all()

    def show_error(self, message: str, key: str | None = None) -> None:
        """Show `message` under the fields (hidden when empty), marking field `key`."""
        marked = self._fields.get(key or "")
        if marked is not None and len(self._fields) > 1:
            message = f"{marked.label}: {message}"
        for field in self._fields.values():
            field.widget.set_class(field is marked, "-refused")
        error = self.query_one(".form-error", SafeStatic)
        error.update(message)
        error.display = bool(message)

    def values(self) -> Values:
        result: Values = {}
        for key, field in self._fields.items():
            widget = field.widget
            if isinstance(widget, Input | Select | Checkbox):
                result[key] = widget.value
            elif isinstance(widget, RadioSet):
                pressed = widget.pressed_button
                result[key] = pressed.name if pressed is not None else None
        return result

    # -- machinery ----------------------------------------------------------------
    def compose(self) -> ComposeResult:
        fields = list(self.form_fields())
        self._fields = {field.key: field for field in fields}
        with VerticalScroll(classes="form"):
            if self.LABELS_BESIDE:
                with Grid(classes="form-grid"):
                    for field in fields:
                        yield Label(field.label, classes="form-label")
                        yield field.widget
            else:
                for field in fields:
                    yield Label(field.label, classes="form-label")
                    yield field.widget
            error = SafeStatic("", classes="form-error")
            error.display = False
            yield error
        yield Footer()

    def on_mount(self) -> None:
        self.query_one(".form").border_title = title(self.form_title())
        first = self._fields.get(self.FIRST_FIELD or "", next(iter(self._fields.values())))
        # At once (not `focus()`, which waits for the app's queue): the screen counts
        # as ready for the next key once mounted (zsn.tui.keys).
        self.set_focus(first.widget)

    def on_input_changed(self, event: Input.Changed) -> None:
        event.input.remove_class("-refused")

    def on_input_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        self.action_submit()

    def action_submit(self) -> None:
        if self._building:
            return  # one check at a time; typing goes on meanwhile
        self._building = True
        self._build_in_thread(self.values())

    @work(thread=True, group="form-build")
    def _build_in_thread(self, values: Values) -> None:
        try:
            result = self.build(values)
        except ZsnError as exc:
            self.app.call_from_thread(self._refused, exc)
        except Exception as exc:  # noqa: BLE001 - a bug in a check must not end the app
            self.app.call_from_thread(self._refused, ZsnError(f"{type(exc).__name__}: {exc}"))
        else:
            self.app.call_from_thread(self._built, result)

    def _refused(self, error: ZsnError) -> None:
        self._building = False
        if self.is_mounted:
            self.show_error(say(error, self), getattr(error, "field", None))

    def _built(self, result: ResultT) -> None:
        self._building = False
        if self.is_mounted:
            self.dismiss(result)

    def action_cancel(self) -> None:
        self.dismiss(None)
