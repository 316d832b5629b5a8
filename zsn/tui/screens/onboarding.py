"""The peer onboarding form: name, address (next free, pre-filled), profile, DNS,
keepalive, preshared key, endpoint, subnets behind the peer. Keyboard only.

On confirm the form builds the same `PeerRequest` as ``zsn peer add`` and returns
the plan made from it; bad input keeps the form open with the reason shown.
"""

from __future__ import annotations

from typing import ClassVar

from textual import work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Grid, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Checkbox, Footer, Input, Label, RadioButton, RadioSet, Select, Static

from zsn.errors import ZsnError
from zsn.plan import Plan
from zsn.system.host import Host
from zsn.wireguard.onboarding import (
    DEFAULT_KEEPALIVE,
    PROFILE_LABELS,
    ClientConfig,
    PeerRequest,
    Profile,
    onboarding_defaults,
    plan_add_peer,
)

Result = tuple[Plan, ClientConfig]


def _items(text: str) -> list[str]:
    return [item.strip() for item in text.replace(" ", ",").split(",") if item.strip()]


class OnboardPeerScreen(ModalScreen[Result | None]):
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("ctrl+s", "submit", "Add peer"),
        Binding("escape", "cancel", "Cancel"),
    ]

    def __init__(self, host: Host, interfaces: list[str], interface: str | None) -> None:
        super().__init__()
        self.host = host
        self.interfaces = interfaces
        self.interface = interface if interface in interfaces else interfaces[0]

    def compose(self) -> ComposeResult:
        with VerticalScroll(id="onboard"):
            with Grid(id="onboard-grid"):
                yield Label("Interface")
                yield Select([(name, name) for name in self.interfaces], value=self.interface,
                             allow_blank=False, id="onboard-interface", compact=True)
                yield Label("Name")
                yield Input(placeholder="e.g. alice-phone", id="onboard-name", compact=True)
                yield Label("Address")
                yield Input(placeholder="next free address", id="onboard-address",
                            compact=True)
                yield Label("Profile")
                with RadioSet(id="onboard-profile", compact=True):
                    for profile in Profile:
                        yield RadioButton(PROFILE_LABELS[profile], value=profile is Profile.SERVER,
                                          name=profile.value)
                yield Label("DNS")
                yield Input(placeholder="none (e.g. 10.0.0.1, 1.1.1.1)", id="onboard-dns",
                            compact=True)
                yield Label("Keepalive s")
                yield Input(str(DEFAULT_KEEPALIVE), type="integer", id="onboard-keepalive",
                            compact=True)
                yield Label("Preshared key")
                yield Checkbox("generate one (recommended)", value=True, id="onboard-psk",
                               compact=True)
                yield Label("Endpoint")
                yield Input(placeholder="server host[:port] clients connect to",
                            id="onboard-endpoint", compact=True)
                yield Label("Subnets behind")
                yield Input(placeholder="none (site-to-site, e.g. 192.168.50.0/24)",
                            id="onboard-routes", compact=True)
            yield Static("", id="onboard-error")
        yield Footer()

    def on_mount(self) -> None:
        box = self.query_one("#onboard")
        box.border_title = "Add a peer: ctrl+s adds, esc cancels"
        self.query_one("#onboard-error", Static).display = False
        self.query_one("#onboard-name", Input).focus()
        self.load_defaults(self.interface)

    @work(thread=True, exclusive=True, group="onboard-defaults")
    def load_defaults(self, interface: str) -> None:
        try:
            defaults = onboarding_defaults(self.host, interface)
        except ZsnError as exc:
            self.app.call_from_thread(self._show_error, str(exc))
            return
        self.app.call_from_thread(self._fill, defaults.address, defaults.endpoint)

    def _fill(self, address: str, endpoint: str) -> None:
        self.query_one("#onboard-address", Input).value = address
        self.query_one("#onboard-endpoint", Input).value = endpoint

    def _show_error(self, message: str) -> None:
        error = self.query_one("#onboard-error", Static)
        error.update(message)
        error.display = bool(message)

    def on_select_changed(self, event: Select.Changed) -> None:
        if event.select.id == "onboard-interface" and isinstance(event.value, str):
            self.interface = event.value
            self.load_defaults(event.value)

    def on_input_submitted(self, event: Input.Submitted) -> None:
        self.action_submit()

    def request(self) -> PeerRequest:
        profile_set = self.query_one("#onboard-profile", RadioSet)
        pressed = profile_set.pressed_button
        keepalive = self.query_one("#onboard-keepalive", Input).value.strip()
        return PeerRequest(
            interface=self.interface,
            name=self.query_one("#onboard-name", Input).value.strip(),
            profile=Profile(pressed.name) if pressed and pressed.name else Profile.SERVER,
            address=self.query_one("#onboard-address", Input).value.strip() or None,
            dns=_items(self.query_one("#onboard-dns", Input).value),
            keepalive=int(keepalive) if keepalive.lstrip("-").isdigit() else None,
            preshared_key=self.query_one("#onboard-psk", Checkbox).value,
            endpoint=self.query_one("#onboard-endpoint", Input).value.strip() or None,
            routed_subnets=_items(self.query_one("#onboard-routes", Input).value),
        )

    def action_submit(self) -> None:
        self._show_error("")
        self.make_plan(self.request())

    @work(thread=True, exclusive=True, group="onboard-plan")
    def make_plan(self, request: PeerRequest) -> None:
        try:
            result = plan_add_peer(self.host, request)
        except ZsnError as exc:
            self.app.call_from_thread(self._show_error, str(exc))
            return
        self.app.call_from_thread(self.dismiss, result)

    def action_cancel(self) -> None:
        self.dismiss(None)
