"""The form that creates a server interface: name, addresses, listen port, endpoint.

It returns the plan `zsn wg create` would make (key generated, file 0600 in a 0700
directory); bad input keeps the form open with the reason shown.
"""

from __future__ import annotations

from typing import ClassVar

from textual import work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Grid, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Footer, Input, Label, Static

from zsn.errors import ZsnError
from zsn.plan import Plan
from zsn.system.host import Host
from zsn.wireguard.interfaces import plan_create_interface

FIELDS = (
    ("name", "Name", "wg0"),
    ("ipv4", "IPv4 address", "10.66.0.1/24"),
    ("ipv6", "IPv6 address", "optional, e.g. fd66::1/64"),
    ("port", "Listen port", "51820"),
    ("endpoint", "Public name", "address or hostname clients connect to"),
)


class CreateInterfaceScreen(ModalScreen[Plan | None]):
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("ctrl+s", "submit", "Create"),
        Binding("escape", "cancel", "Cancel"),
    ]

    def __init__(self, host: Host) -> None:
        super().__init__()
        self.host = host

    def compose(self) -> ComposeResult:
        with VerticalScroll(id="onboard"):
            with Grid(id="onboard-grid"):
                for key, label, placeholder in FIELDS:
                    yield Label(label)
                    yield Input(placeholder=placeholder, id=f"create-{key}", compact=True)
            yield Static("", id="onboard-error")
        yield Footer()

    def on_mount(self) -> None:
        self.query_one("#onboard").border_title = "New interface: ctrl+s creates, esc cancels"
        self.query_one("#onboard-error", Static).display = False
        self.query_one("#create-name", Input).focus()

    def _value(self, key: str) -> str:
        return self.query_one(f"#create-{key}", Input).value.strip()

    def on_input_submitted(self, event: Input.Submitted) -> None:
        self.action_submit()

    def action_submit(self) -> None:
        addresses = [a for a in (self._value("ipv4"), self._value("ipv6")) if a]
        self.make_plan(self._value("name"), addresses, self._value("port") or "51820",
                       self._value("endpoint") or None)

    @work(thread=True, exclusive=True, group="create-plan")
    def make_plan(self, name: str, addresses: list[str], port: str,
                  endpoint: str | None) -> None:
        try:
            plan = plan_create_interface(self.host, name, addresses, port, endpoint)
        except ZsnError as exc:
            self.app.call_from_thread(self._show_error, str(exc))
            return
        self.app.call_from_thread(self.dismiss, plan)

    def _show_error(self, message: str) -> None:
        error = self.query_one("#onboard-error", Static)
        error.update(message)
        error.display = True

    def action_cancel(self) -> None:
        self.dismiss(None)
