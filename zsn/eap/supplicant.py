"""wpa_supplicant's form of 802.1X: a network block's values (for ``SET_NETWORK`` over the
control socket and for a config file zsn writes, the wired port's), read back from a
block, and what the daemon's events say about the outcome.

Values are written as wpa_supplicant.conf documents them: strings quoted (``identity=
"alice@example.org"``), ``phase2="auth=MSCHAPV2"``, ``domain_match`` for the server's
exact name (iwd's ServerDomainMask without a wildcard is the same check). SET_NETWORK
takes the same text as the file. Secret values are `Command`s whose shown form hides
them.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

from zsn.eap.iwd import Files
from zsn.eap.profile import EapProfile
from zsn.eap.request import EapRequest
from zsn.errors import ValidationError
from zsn.formats.wpa_supplicant import WPA_SUPPLICANT
from zsn.meaning import Intent, one_line
from zsn.system.wpa_config import parse_wpa_config

SECRET_KEYS = frozenset({"password", "private_key_passwd"})
PHASE2_VALUES = {("peap", "mschapv2"): "auth=MSCHAPV2", ("peap", "gtc"): "auth=GTC",
                 ("ttls", "pap"): "auth=PAP", ("ttls", "mschapv2"): "auth=MSCHAPV2",
                 ("ttls", "gtc"): "autheap=GTC"}
NAME_CHECKS = ("domain_match", "domain_suffix_match", "altsubject_match")
"""Settings that tie the server's certificate to a name (subject_match is a substring of
the subject, which wpa_supplicant's own documentation says not to use for that)."""


def _quoted(value: str) -> str:
    if '"' in value or any(ord(char) < 32 or ord(char) == 127 for char in value):
        raise ValidationError("a value holds a quote or a control character, which "
                              "wpa_supplicant cannot take")
    return f'"{value}"'


@dataclass(frozen=True)
class Value:
    key: str
    text: str
    """As in the config file and after SET_NETWORK's id and name."""

    @property
    def secret(self) -> bool:
        return self.key in SECRET_KEYS

    def __repr__(self) -> str:
        return f"Value({self.key}, {'(hidden)' if self.secret else self.text})"


def network_values(request: EapRequest, paths: Files, *, wired: bool) -> list[Value]:
    """The block's settings for `request`, in the order wpa_supplicant.conf lists them."""
    values = [Value("key_mgmt", "IEEE8021X" if wired else "WPA-EAP"),
              Value("eap", request.method.upper()),
              Value("identity", _quoted(request.identity))]
    if request.anonymous_identity:
        values.append(Value("anonymous_identity", _quoted(request.anonymous_identity)))
    if request.password is not None:
        values.append(Value("password", _quoted(request.password.reveal())))
    if request.phase2 is not None:
        values.append(Value("phase2",
                            _quoted(PHASE2_VALUES[(request.method, request.phase2)])))
    if paths.ca_cert:
        values.append(Value("ca_cert", _quoted(paths.ca_cert)))
    if request.server_domain:
        values.append(Value("domain_match", _quoted(request.server_domain)))
    if paths.client_cert:
        values.append(Value("client_cert", _quoted(paths.client_cert)))
    if paths.client_key:
        values.append(Value("private_key", _quoted(paths.client_key)))
    if request.key_password is not None:
        values.append(Value("private_key_passwd", _quoted(request.key_password.reveal())))
    if wired:
        values.append(Value("eapol_flags", "0"))
    return values


def _unquote(value: str | None) -> str | None:
    if value is None:
        return None
    if len(value) >= 2 and value[0] == value[-1] == '"':
        return value[1:-1]
    return value


def profile_of_values(values: Mapping[str, str]) -> EapProfile | None:
    """The 802.1X part of a network block (config file lines, or GET_NETWORK replies);
    None when it is not an EAP network."""
    key_mgmt = set((_unquote(values.get("key_mgmt")) or "").split())
    eap = _unquote(values.get("eap"))
    if eap is None and not key_mgmt & {"WPA-EAP", "IEEE8021X", "WPA-EAP-SHA256", "FT-EAP",
                                       "WPA-EAP-SUITE-B", "WPA-EAP-SUITE-B-192"}:
        return None
    methods = (eap or "any").upper().split()
    method = methods[0] if len(methods) == 1 else "/".join(methods)
    phase2 = _unquote(values.get("phase2"))
    inner = None
    if phase2:
        match = re.search(r"auth(?:eap)?=(\S+)", phase2)
        inner = match.group(1).upper() if match else phase2
    ca = _unquote(values.get("ca_cert")) or _unquote(values.get("ca_path"))
    name = next((_unquote(values[key]) for key in NAME_CHECKS if values.get(key)), None)
    if ca is not None and ca.startswith("hash://"):
        name = name or "(server certificate pinned by hash)"
    if any(m in ("PEAP", "TTLS", "TLS", "FAST") for m in methods) and method not in (
            "PEAP", "TTLS", "TLS", "FAST"):
        method = next(m for m in methods if m in ("PEAP", "TTLS", "TLS", "FAST"))
    return EapProfile(method=method, identity=_unquote(values.get("identity")),
                      phase2=inner, ca_cert=ca, server_domain=name)


WIRED_HEADER = ("# Written by zsn (zsn link 8021x): 802.1X on a wired port\n"
                "ctrl_interface=/run/wpa_supplicant\nap_scan=0\n")


def wired_config(request: EapRequest, paths: Files, *, disabled: bool = False) -> str:
    """wpa_supplicant's config for ``-Dwired`` (``wpa_supplicant-wired-IFACE.conf``)."""
    return wired(request, paths, disabled=disabled)[0]


def wired(request: EapRequest, paths: Files, *, disabled: bool = False
          ) -> tuple[str, Intent]:
    """`wired_config`'s text and what it means (`zsn.meaning`: the plan's FileEdit reads
    it back); `disabled`: the network waits for ENABLE_NETWORK (a daemon zsn starts, so
    it listens from the first EAP packet)."""
    values = network_values(request, paths, wired=True)
    if disabled:
        values.append(Value("disabled", "1"))
    text = WIRED_HEADER + "network={\n" + "".join(
        f"\t{value.key}={value.text}\n" for value in values) + "}\n"
    parsed = parse_wpa_config(text)
    if len(parsed.networks) != 1 or dict(parsed.networks[0].values) != {
            value.key: value.text for value in values}:
        raise ValidationError("the wpa_supplicant config zsn rendered does not read back "
                              "as requested; nothing was written")
    intent = Intent(WPA_SUPPLICANT)
    intent.whole([("", [("ctrl_interface", "/run/wpa_supplicant"), ("ap_scan", "0")]),
                  ("network", [(value.key, one_line(value.text, value.key))
                               for value in values])])
    return text, intent
