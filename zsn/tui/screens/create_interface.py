"""The form that creates a server interface: name, addresses, listen port, endpoint.

It returns the plan `zsn wg create` would make (key generated, file 0600 in a 0700
directory); bad input keeps the form open with the reason shown on its field. The
name, the IPv4 address and the port come pre-filled with values free now
(`free_interface`), which the user can keep.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import ClassVar

from textual import work
from textual.binding import Binding, BindingType
from textual.widgets import Input

from zsn.errors import ZsnError, about_input
from zsn.plan import Plan
from zsn.system.host import Host
from zsn.tui.screens.form import FormField, FormScreen, Values
from zsn.wireguard.addressing import check_interface_address
from zsn.wireguard.interfaces import NewInterface, free_interface, plan_create_interface

FIELDS = (
    # (key: the core's name for the input, label, placeholder)
    ("interface", "Name", "wg0"),
    ("ipv4", "IPv4 address", "10.66.0.1/24"),
    ("ipv6", "IPv6 address", "optional, e.g. fd66::1/64"),
    ("port", "Listen port", "51820"),
    ("endpoint", "Public name", "address or hostname clients connect to"),
)


class CreateInterfaceScreen(FormScreen[Plan]):
    BINDINGS: ClassVar[list[BindingType]] = [Binding("ctrl+s", "submit", "Create")]

    def __init__(self, host: Host) -> None:
        super().__init__()
        self.host = host

    def form_title(self) -> str:
        return "New interface: ctrl+s creates, esc cancels"

    def form_fields(self) -> Iterable[FormField]:
        for key, label, placeholder in FIELDS:
            yield FormField(key, label, Input(placeholder=placeholder, id=f"create-{key}",
                                              compact=True))

    def on_mount(self) -> None:
        self.load_free()

    @work(thread=True, exclusive=True, group="create-free")
    def load_free(self) -> None:
        try:
            free = free_interface(self.host)
        except ZsnError:
            return  # the placeholders stay: the plan says what is taken
        self.app.call_from_thread(self._fill_free, free)

    def _fill_free(self, free: NewInterface) -> None:
        if self.is_mounted:
            self.fill("interface", free.name)
            if free.address:
                self.fill("ipv4", free.address)
            self.fill("port", str(free.port))

    def build(self, values: Values) -> Plan:
        text = {key: str(value).strip() for key, value in values.items()}
        # Two fields feed the core's one list of addresses: each is checked here,
        # so an error lands on the field it is about.
        for key in ("ipv4", "ipv6"):
            if text[key]:
                with about_input(key):
                    check_interface_address(text[key])
        with about_input("ipv4"):
            return plan_create_interface(
                self.host, text["interface"], [text[k] for k in ("ipv4", "ipv6") if text[k]],
                text["port"] or "51820", text["endpoint"] or None)
