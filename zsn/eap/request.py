"""An 802.1X request: method, identities, secrets and how the server is checked.

One `EapRequest` is read from the command's options or the WLAN pane's form (the same
keys: `request_from_values`), checked once, and handed to each backend's renderer.
Secrets are `EapSecret`s: their repr says ``(hidden)``, and only the renderer that
writes the backend's 0600 file or its control-socket command calls `reveal`.

The server is always checked: a profile needs the CA that signed the RADIUS server's
certificate *and* the server's name, or anyone with an access point (or a switch port)
of that name can pose as the server (`SERVER_CHECK_RISK`). Only ``--no-server-check``
lets a profile through without them, and the lint flags every such profile.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from zsn.errors import ValidationError

Method = Literal["peap", "ttls", "tls"]
Phase2 = Literal["mschapv2", "pap", "gtc"]
METHODS: tuple[Method, ...] = ("peap", "ttls", "tls")
PHASE2: tuple[Phase2, ...] = ("mschapv2", "pap", "gtc")
DEFAULT_PHASE2: dict[Method, Phase2] = {"peap": "mschapv2", "ttls": "pap"}
ALLOWED_PHASE2: dict[Method, tuple[Phase2, ...]] = {
    "peap": ("mschapv2", "gtc"), "ttls": ("pap", "mschapv2", "gtc")}
METHOD_TITLES = {"peap": "PEAP", "ttls": "TTLS", "tls": "EAP-TLS"}
MAX_SECRET = 256
MAX_IDENTITY = 253

SERVER_CHECK_RISK = (
    "anyone with a rogue access point or port of that name can pose as the "
    "authentication server and collect the identity and the password (PAP, GTC: in "
    "clear; MSCHAPv2: a hash that is cracked offline)")
"""What a profile without a server check lets an attacker do: the refusal and the lint
(WLAN010, LINK020) say it with the same words."""


def server_check_refusal(missing: str) -> str:
    return (f"no server check ({missing}): {SERVER_CHECK_RISK}; give the CA certificate "
            "and the server's name, or turn the server check off to accept that")


_DOMAIN_RE = re.compile(
    r"(?=.{1,253}\Z)([A-Za-z0-9*](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?)"
    r"(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*")
_REALM_RE = re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9.-]{0,251}[A-Za-z0-9])?")


@dataclass(frozen=True)
class EapSecret:
    """A password or a key's passphrase: never in a repr, a log or a plan."""

    _text: str = field(repr=False)
    what: str = "password"

    def __post_init__(self) -> None:
        text = self._text
        if not text:
            raise ValidationError(f"the {self.what} is empty")
        if "\n" in text or "\r" in text:
            raise ValidationError(f"the {self.what} contains a line break (a file read "
                                  "with one too many lines?); it is one line")
        if len(text) > MAX_SECRET:
            raise ValidationError(f"the {self.what} has {len(text)} characters; at most "
                                  f"{MAX_SECRET}")
        if any(ord(char) < 32 or ord(char) == 127 for char in text):
            raise ValidationError(f"the {self.what} contains control characters")
        if '"' in text:
            raise ValidationError(f"the {self.what} contains a double quote, which "
                                  "wpa_supplicant's and netctl's files cannot carry")

    def __repr__(self) -> str:
        return f"EapSecret({self.what}, (hidden))"

    __str__ = __repr__

    def reveal(self) -> str:
        return self._text


def _text_value(value: str, what: str, limit: int = MAX_IDENTITY) -> str:
    if not value:
        raise ValidationError(f"the {what} is empty")
    if len(value) > limit:
        raise ValidationError(f"the {what} has {len(value)} characters; at most {limit}")
    for char, reason in (('"', "a double quote"), ("'", "a single quote")):
        if char in value:
            raise ValidationError(f"the {what} contains {reason}, which the backends' "
                                  "files cannot carry safely")
    if any(ord(char) < 32 or ord(char) == 127 for char in value):
        raise ValidationError(f"the {what} contains control characters or a line break")
    if value != value.strip():
        raise ValidationError(f"the {what} starts or ends with a space")
    return value


def check_domain(value: str) -> str:
    """A server name as the certificate holds it: DNS labels, one name."""
    if not _DOMAIN_RE.fullmatch(value):
        raise ValidationError(f"{value!r} is not a server name (DNS labels such as "
                              "radius.example.org; one name)")
    return value.lower()


@dataclass(frozen=True)
class EapRequest:
    """What an 802.1X profile says, checked: each backend renders this and nothing else."""

    method: Method
    identity: str
    """The inner (real) identity; EAP-TLS: the identity sent with the certificate."""
    anonymous_identity: str | None = None
    """The outer identity sent in clear (PEAP, TTLS): eduroam's ``anonymous@realm``."""
    phase2: Phase2 | None = None
    password: EapSecret | None = field(default=None, repr=False)
    ca_cert: str | None = None
    """The CA certificate file (PEM) as given; copied where the backend reads it."""
    server_domain: str | None = None
    client_cert: str | None = None
    client_key: str | None = None
    key_password: EapSecret | None = field(default=None, repr=False)
    server_check: bool = True
    """False only with --no-server-check."""

    @property
    def title(self) -> str:
        inner = f"/{self.phase2.upper()}" if self.phase2 else ""
        return f"{METHOD_TITLES[self.method]}{inner}"

    @property
    def server_checked(self) -> bool:
        return self.ca_cert is not None and self.server_domain is not None


def _method(method: str | None) -> Method:
    if method is None:
        raise ValidationError("name the EAP method: peap, ttls or tls", field="method")
    for known in METHODS:
        if method.lower() == known:
            return known
    raise ValidationError(f"unknown EAP method {method!r} (peap, ttls or tls)",
                          field="method")


def _eduroam_outer(identity: str, anonymous_identity: str | None) -> str:
    """eduroam's outer identity: ``anonymous@REALM``, the realm of the identity."""
    realm = identity.rpartition("@")[2] if "@" in identity else ""
    if not _REALM_RE.fullmatch(realm) or "." not in realm:
        raise ValidationError("eduroam identities are user@realm (the realm routes the "
                              "request home)", field="identity")
    outer = anonymous_identity or f"anonymous@{realm}"
    if outer.rpartition("@")[2] != realm:
        raise ValidationError(f"eduroam's outer identity must end in @{realm}, the "
                              "realm of the identity", field="anonymous_identity")
    return outer


def _phase2(method: Method, phase2: str | None, password: EapSecret | None,
            client_cert: str | None, client_key: str | None) -> Phase2 | None:
    """The inner method (None for EAP-TLS), with what each method needs."""
    if method == "tls":
        if phase2 is not None:
            raise ValidationError("EAP-TLS has no inner method",
                                  field="phase2")
        if password is not None:
            raise ValidationError("EAP-TLS uses the client certificate, not a password",
                                  field="password")
        if client_cert is None or client_key is None:
            raise ValidationError("EAP-TLS needs the client certificate and its key",
                                  field="client_cert" if client_cert is None
                                  else "client_key")
        return None
    wanted = (phase2 or DEFAULT_PHASE2[method]).lower()
    inner = next((each for each in ALLOWED_PHASE2[method] if each == wanted), None)
    if inner is None:
        allowed = ", ".join(ALLOWED_PHASE2[method])
        raise ValidationError(f"{METHOD_TITLES[method]} takes phase 2 {allowed}, not "
                              f"{wanted!r}", field="phase2")
    if password is None:
        raise ValidationError(f"{METHOD_TITLES[method]} needs the password "
                              "(from a file or standard input)", field="password")
    if client_cert is not None or client_key is not None:
        raise ValidationError("client certificates are for EAP-TLS",
                              field="client_cert")
    return inner


def _server_check(ca_cert: str | None, domain: str | None) -> None:
    missing = [what for what, value in (("no CA certificate", ca_cert),
                                        ("no server name", domain)) if value is None]
    if missing:
        raise ValidationError(server_check_refusal(" and ".join(missing)),
                              field="ca_cert" if ca_cert is None else "server_domain")


def make_request(method: str | None, identity: str | None, *,
                 anonymous_identity: str | None = None, phase2: str | None = None,
                 password: EapSecret | None = None, ca_cert: str | None = None,
                 server_domain: str | None = None, client_cert: str | None = None,
                 client_key: str | None = None, key_password: EapSecret | None = None,
                 no_server_check: bool = False, eduroam: bool = False) -> EapRequest:
    """The request from what was typed, every refusal naming its option's key (the
    form's field): `ValidationError.field`."""
    if eduroam:
        if (method or "peap").lower() != "peap" or (phase2 or "mschapv2").lower() != \
                "mschapv2":
            raise ValidationError("eduroam is PEAP/MSCHAPv2: no other method",
                                  field="method")
        method, phase2 = "peap", "mschapv2"
    chosen = _method(method)
    if identity is None:
        raise ValidationError("give the identity (the user name, e.g. alice@example.org)",
                              field="identity")
    identity = _text_value(identity, "identity")
    if eduroam:
        anonymous_identity = _eduroam_outer(identity, anonymous_identity)
    if anonymous_identity is not None:
        if chosen == "tls":
            raise ValidationError("EAP-TLS has no outer identity of its own",
                                  field="anonymous_identity")
        anonymous_identity = _text_value(anonymous_identity, "anonymous identity")
    inner = _phase2(chosen, phase2, password, client_cert, client_key)
    if key_password is not None and client_key is None:
        raise ValidationError("a key passphrase is for a client key", field="key_password")
    domain = check_domain(server_domain) if server_domain else None
    for value, key in ((ca_cert, "ca_cert"), (client_cert, "client_cert"),
                       (client_key, "client_key")):
        if value is not None and not value.startswith("/"):
            raise ValidationError(f"{value}: give the file's absolute path", field=key)
    if not no_server_check:
        _server_check(ca_cert, domain)
    return EapRequest(chosen, identity, anonymous_identity, inner, password, ca_cert, domain,
                      client_cert, client_key, key_password, server_check=not no_server_check)


def request_from_values(values: Mapping[str, Any], password: EapSecret | None,
                        key_password: EapSecret | None) -> EapRequest:
    """The request from option dests / form keys (text, empty = not given)."""
    def text(key: str) -> str | None:
        value = values.get(key)
        return str(value).strip() or None if value not in (None, False) else None

    return make_request(
        text("method"), text("identity"), anonymous_identity=text("anonymous_identity"),
        phase2=text("phase2"), password=password, ca_cert=text("ca_cert"),
        server_domain=text("server_domain"), client_cert=text("client_cert"),
        client_key=text("client_key"), key_password=key_password,
        no_server_check=bool(values.get("no_server_check")),
        eduroam=bool(values.get("eduroam")))


def read_secret_line(path: str, what: str, stdin_text: str | None = None) -> str:
    """A secret from a file the user names (``-``: standard input, process substitution
    welcome): its first line without the line break, so ``echo pass > file`` works; a
    second non-empty line is refused."""
    if path == "-":
        if stdin_text is None:
            raise ValidationError(f"no {what} on standard input")
        text = stdin_text
    else:
        try:
            with open(path, encoding="utf-8") as handle:  # the user's own file, as given
                text = handle.read(4096)
        except FileNotFoundError:
            raise ValidationError(f"{what} file {path}: no such file") from None
        except PermissionError:
            raise ValidationError(f"{what} file {path}: permission denied") from None
        except IsADirectoryError:
            raise ValidationError(f"{what} file {path}: is a directory") from None
        except UnicodeDecodeError:
            raise ValidationError(f"{what} file {path}: not text") from None
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    if len(lines) > 1:
        raise ValidationError(f"the {what} file has more than one line; put only the "
                              f"{what} in it")
    return (lines[0] if lines else "").removesuffix("\r")


def read_secret_file(path: str, what: str, stdin_text: str | None = None) -> EapSecret:
    return EapSecret(read_secret_line(path, what, stdin_text), what)
