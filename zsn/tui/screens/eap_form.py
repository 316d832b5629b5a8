"""The form for an enterprise (802.1X) network: its fields follow the method.

PEAP and TTLS ask for the password and the inner method, EAP-TLS for the client
certificate and key (and the key's passphrase) instead; the CA and the server's name
are always asked for, since zsn checks the server unless "No server check" is ticked.
Fields of the other methods are hidden, never removed, so what was typed in them stays.
The masked fields are read once, into `EapSecret`s, by `build` (the same
`request_from_values` as the command's options: a refusal names the field).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import ClassVar

from textual.widgets import Checkbox, Input, Label, Select

from zsn.eap.request import PHASE2, EapRequest, EapSecret, request_from_values
from zsn.plan import Plan
from zsn.tui.screens.form import FormField, FormScreen, Values

PASSWORD_KEYS = ("phase2", "password", "anonymous_identity")
TLS_KEYS = ("client_cert", "client_key", "key_password")


class EapFormScreen(FormScreen[Plan]):
    """Dismisses with the connect plan, None on escape."""

    FIRST_FIELD: ClassVar[str | None] = "identity"

    def __init__(self, interface: str, ssid: str,
                 build: Callable[[EapRequest], Plan]) -> None:
        super().__init__()
        self.interface = interface
        self.ssid = ssid
        self._build = build

    def form_title(self) -> str:
        return f"802.1X {self.ssid} on {self.interface}: ctrl+s shows the plan, esc cancels"

    def form_fields(self) -> Iterable[FormField]:
        def text(key: str, placeholder: str, *, password: bool = False) -> Input:
            return Input("", placeholder=placeholder, password=password, compact=True,
                         id=f"eap-{key.replace('_', '-')}")

        yield FormField("method", "Method", Select(
            [("PEAP", "peap"), ("TTLS", "ttls"), ("EAP-TLS", "tls")], value="peap",
            allow_blank=False, compact=True, id="eap-method"))
        yield FormField("identity", "Identity", text("identity", "alice@example.org"))
        yield FormField("anonymous_identity", "Outer identity",
                        text("anonymous_identity", "optional: anonymous@example.org"))
        yield FormField("phase2", "Inner method", Select(
            [("MSCHAPv2", "mschapv2"), ("PAP (TTLS)", "pap"), ("GTC", "gtc")],
            prompt="default: PEAP MSCHAPv2, TTLS PAP", compact=True, id="eap-phase2"))
        yield FormField("password", "Password", text("password", "", password=True))
        yield FormField("client_cert", "Client cert", text("client_cert", "/root/me.pem"))
        yield FormField("client_key", "Client key", text("client_key", "/root/me.key"))
        yield FormField("key_password", "Key passphrase",
                        text("key_password", "if the key is encrypted", password=True))
        yield FormField("ca_cert", "CA certificate", text("ca_cert", "/root/ca.pem"))
        yield FormField("server_domain", "Server name",
                        text("server_domain", "radius.example.org"))
        yield FormField("no_server_check", "Risky", Checkbox(
            "No server check", compact=True, id="eap-no-server-check"))

    def on_mount(self) -> None:
        self._follow_method("peap")

    def on_select_changed(self, event: Select.Changed) -> None:
        if event.select.id == "eap-method" and isinstance(event.value, str):
            self._follow_method(event.value)

    def _follow_method(self, method: str) -> None:
        """Show the fields `method` takes, hide the others (with their labels)."""
        labels = list(self.query(".form-label").results(Label))
        for label, (key, field) in zip(labels, self._fields.items(), strict=False):
            shown = not ((key in PASSWORD_KEYS and method == "tls")
                         or (key in TLS_KEYS and method != "tls"))
            label.display = shown
            field.widget.display = shown

    def build(self, values: Values) -> Plan:
        method = values.get("method")
        tls = method == "tls"
        password = values.get("password") if not tls else ""
        key_password = values.get("key_password") if tls else ""
        texts = {key: value for key, value in values.items()
                 if key not in ("password", "key_password")
                 and not (tls and key in PASSWORD_KEYS) and not (not tls and key in TLS_KEYS)}
        if texts.get("phase2") not in PHASE2:  # nothing chosen: the method's default
            texts["phase2"] = None
        request = request_from_values(
            texts, EapSecret(password) if password else None,
            EapSecret(key_password, "key passphrase") if key_password else None)
        return self._build(request)
