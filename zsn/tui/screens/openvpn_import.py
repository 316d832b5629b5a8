"""Ask for a .ovpn file and a connection name, and plan its import."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import ClassVar

from textual.binding import Binding, BindingType
from textual.widgets import Input

from zsn.errors import ValidationError
from zsn.openvpn.actions import import_name, plan_import
from zsn.plan import Plan
from zsn.system.host import Host
from zsn.tui.screens.form import FormField, FormScreen, Values

NAME_PLACEHOLDER = "office"


class ImportScreen(FormScreen[Plan]):
    """Dismisses with the import's plan (`zsn vpn import`); an empty name is the
    file's name, as in the CLI."""

    BINDINGS: ClassVar[list[BindingType]] = [Binding("ctrl+s", "submit", "Import")]
    LABELS_BESIDE = False

    def __init__(self, host: Host) -> None:
        super().__init__()
        self.host = host

    def form_title(self) -> str:
        return "Import an OpenVPN profile: enter imports, esc cancels"

    def form_fields(self) -> Iterable[FormField]:
        yield FormField("file", "Profile file (.ovpn) on this machine:",
                        Input(placeholder="/home/me/office.ovpn", id="import-path", compact=True))
        yield FormField("name", "Connection name (becomes openvpn-client@NAME):",
                        Input(placeholder=NAME_PLACEHOLDER, id="import-name", compact=True))

    def on_input_changed(self, event: Input.Changed) -> None:
        # What an empty name becomes, as a hint: only the placeholder changes.
        if event.input.id == "import-path":
            stem = import_name(Path(event.value.strip())) if event.value.strip() else ""
            self.query_one("#import-name", Input).placeholder = \
                f"{stem} (the file's name)" if stem else NAME_PLACEHOLDER

    def build(self, values: Values) -> Plan:
        path_text = str(values["file"]).strip()
        source = Path(path_text).expanduser()
        name = str(values["name"]).strip() or import_name(source)
        if not path_text:
            raise ValidationError("give the path of the .ovpn file", field="file")
        return plan_import(self.host, source, name)
