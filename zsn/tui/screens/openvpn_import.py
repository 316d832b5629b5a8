"""Ask for a .ovpn file and a connection name to import it as."""

from __future__ import annotations

from pathlib import Path
from typing import ClassVar

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Footer, Input, Label

from zsn.errors import ValidationError
from zsn.openvpn.config import validate_name


class ImportScreen(ModalScreen[tuple[Path, str] | None]):
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "cancel", "Cancel"),
    ]

    def compose(self) -> ComposeResult:
        with Vertical(id="ovpn-import"):
            yield Label("Profile file (.ovpn) on this machine:")
            yield Input(placeholder="/home/me/office.ovpn", id="import-path")
            yield Label("Connection name (becomes openvpn-client@NAME):")
            yield Input(placeholder="office", id="import-name")
            yield Label("", id="import-error")
        yield Footer()

    def on_mount(self) -> None:
        self.query_one("#ovpn-import").border_title = "Import an OpenVPN profile"

    def on_input_submitted(self, event: Input.Submitted) -> None:
        path_text = self.query_one("#import-path", Input).value.strip()
        name_input = self.query_one("#import-name", Input)
        if event.input.id == "import-path" and path_text and not name_input.value:
            name_input.value = Path(path_text).stem
            name_input.focus()
            return
        error = self.query_one("#import-error", Label)
        if not path_text:
            error.update("Give the path of the .ovpn file.")
            return
        try:
            name = validate_name(name_input.value.strip())
        except ValidationError as exc:
            error.update(str(exc))
            return
        self.dismiss((Path(path_text).expanduser(), name))

    def action_cancel(self) -> None:
        self.dismiss(None)
