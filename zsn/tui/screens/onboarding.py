"""The peer onboarding form: name, address (next free, pre-filled), profile, DNS,
keepalive, preshared key, endpoint, subnets behind the peer. Keyboard only.

On confirm the form builds the same `PeerRequest` as ``zsn peer add`` and returns
the plan made from it; bad input keeps the form open with the reason shown on
its field (`FormScreen`).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import ClassVar

from textual import work
from textual.binding import Binding, BindingType
from textual.widgets import Checkbox, Input, RadioButton, RadioSet, Select

from zsn.errors import ZsnError, about_input
from zsn.plan import Plan
from zsn.system.host import Host
from zsn.tui.screens.form import FormField, FormScreen, Values
from zsn.wireguard.addressing import check_keepalive
from zsn.wireguard.onboarding import (
    PROFILE_LABELS,
    ClientConfig,
    PeerRequest,
    Profile,
    onboarding_defaults,
    plan_add_peer,
)
from zsn.wireguard.server import DEFAULT_KEEPALIVE

Result = tuple[Plan, ClientConfig]


def _items(text: str) -> list[str]:
    return [item.strip() for item in text.replace(" ", ",").split(",") if item.strip()]


class OnboardPeerScreen(FormScreen[Result]):
    BINDINGS: ClassVar[list[BindingType]] = [Binding("ctrl+s", "submit", "Add peer")]
    FIRST_FIELD = "name"

    def __init__(self, host: Host, interfaces: list[str], interface: str | None) -> None:
        super().__init__()
        self.host = host
        self.interfaces = interfaces
        self.interface = interface if interface in interfaces else interfaces[0]

    def form_title(self) -> str:
        return "Add a peer: ctrl+s adds, esc cancels"

    def form_fields(self) -> Iterable[FormField]:
        yield FormField("interface", "Interface", Select(
            [(name, name) for name in self.interfaces], value=self.interface,
            allow_blank=False, id="onboard-interface", compact=True))
        yield FormField("name", "Name", Input(placeholder="e.g. alice-phone",
                                              id="onboard-name", compact=True))
        yield FormField("address", "Address", Input(placeholder="next free address",
                                                    id="onboard-address", compact=True))
        profiles = RadioSet(*[RadioButton(PROFILE_LABELS[profile],
                                          value=profile is Profile.SERVER, name=profile.value)
                              for profile in Profile], id="onboard-profile", compact=True)
        yield FormField("profile", "Profile", profiles)
        yield FormField("dns", "DNS", Input(placeholder="none (e.g. 10.0.0.1, 1.1.1.1)",
                                            id="onboard-dns", compact=True))
        yield FormField("keepalive", "Keepalive s", Input(
            str(DEFAULT_KEEPALIVE), placeholder="0 or empty: none", id="onboard-keepalive",
            compact=True))
        yield FormField("preshared_key", "Preshared key", Checkbox(
            "generate one (recommended)", value=True, id="onboard-psk", compact=True))
        yield FormField("endpoint", "Endpoint", Input(
            placeholder="server host[:port] clients connect to", id="onboard-endpoint",
            compact=True))
        yield FormField("routed_subnets", "Subnets behind", Input(
            placeholder="none (site-to-site, e.g. 192.168.50.0/24)", id="onboard-routes",
            compact=True))

    def on_mount(self) -> None:
        self.load_defaults(self.interface)

    @work(thread=True, exclusive=True, group="onboard-defaults")
    def load_defaults(self, interface: str) -> None:
        try:
            defaults = onboarding_defaults(self.host, interface)
        except ZsnError as exc:
            self.app.call_from_thread(self.show_error, str(exc))
            return
        self.app.call_from_thread(self._fill_defaults, interface, defaults.address,
                                  defaults.endpoint)

    def _fill_defaults(self, interface: str, address: str, endpoint: str) -> None:
        if interface == self.interface and self.is_mounted:
            self.fill("address", address)
            self.fill("endpoint", endpoint)

    def on_select_changed(self, event: Select.Changed) -> None:
        if event.select.id == "onboard-interface" and isinstance(event.value, str) \
                and event.value != self.interface:
            self.interface = event.value
            self.load_defaults(event.value)

    def build(self, values: Values) -> Result:
        keepalive_text = values["keepalive"].strip()
        with about_input("keepalive"):
            keepalive = check_keepalive(keepalive_text) if keepalive_text else 0
        interface = values["interface"]
        request = PeerRequest(
            interface=interface if isinstance(interface, str) else self.interface,
            name=values["name"].strip(),
            profile=Profile(values["profile"] or Profile.SERVER),
            address=values["address"].strip() or None,
            dns=_items(values["dns"]),
            keepalive=keepalive or None,
            preshared_key=bool(values["preshared_key"]),
            endpoint=values["endpoint"].strip() or None,
            routed_subnets=_items(values["routed_subnets"]),
        )
        return plan_add_peer(self.host, request)
