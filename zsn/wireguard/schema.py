"""The keys wg and wg-quick read in a config, and what each takes, as they check it.

wg-quick takes Address, DNS, MTU, Table, the four hooks and SaveConfig out of
``[Interface]`` and hands every other line to ``wg setconf``, whose parser
(wireguard-tools src/config.c) refuses an unknown key, a key that is not 32 bytes of
base64, a port it cannot resolve, a keepalive or FwMark out of range, an AllowedIPs
item that is not an address with a prefix and an Endpoint without a port. Lint reports
a refused line (`zsn.wireguard.refusals`); the renderer (`zsn.wireguard.config`) never
writes one (`SCHEMA`).
"""

from __future__ import annotations

import re
import socket
from collections.abc import Callable

from zsn import values
from zsn.meaning import ValueType, refusing
from zsn.wireguard.keys import is_valid_key

WG_QUICK_KEYS = frozenset({"address", "dns", "mtu", "table", "preup", "postup", "predown",
                           "postdown", "saveconfig"})
"""[Interface] keys wg-quick keeps for itself (case-insensitive, as it reads them)."""
HOOK_KEYS = ("preup", "postup", "predown", "postdown")
"""The keys whose value wg-quick runs as root (through bash) when the interface goes up
or down."""
INTERFACE_KEYS = frozenset({"privatekey", "listenport", "fwmark"})
PEER_KEYS = frozenset({"publickey", "presharedkey", "allowedips", "endpoint",
                       "persistentkeepalive"})
ASCII_SPACES = " \t\n\r\v\f"
"""The only spaces wg and wg-quick skip (a no-break space is part of the key)."""
_NUMBER_RE = re.compile(r"[0-9]+")
_FWMARK_RE = re.compile(r"0x[0-9a-fA-F]+|[0-9]+")
NAME_KEY = "#name"
"""A peer's name (the comment above its ``[Peer]``) as zsn reads it: part of what a
config means to zsn, so a read-back compares it too."""
EXPIRES_KEY = "#expires"
"""A peer's ``# Expires =`` comment (`zsn.wireguard.expiry`), likewise."""


def udp_service_known(name: str) -> bool:
    """Whether the resolver knows `name` as a UDP service (wg looks ports up that way)."""
    try:
        socket.getservbyname(name, "udp")
    except OSError:
        return False
    return True


def port_problem(value: str, service_known: Callable[[str], bool] = udp_service_known
                 ) -> str | None:
    """Why wg refuses `value` as a ListenPort (None: it takes it)."""
    if not value:
        return "is empty"
    if _NUMBER_RE.fullmatch(value):
        return None if int(value) <= 65535 else "is above 65535"
    if service_known(value):
        return None
    return "is not a port number (nor a service name this host knows)"


def value_problem(key: str, value: str, service_known: Callable[[str], bool]
                  = udp_service_known) -> str | None:
    """Why wg refuses `value` for `key` (lower case), as it reads it (None: it takes it)."""
    if key in ("privatekey", "publickey", "presharedkey"):
        if not value:
            return "is empty"
        return None if is_valid_key(value) else "is not a 32-byte base64 key"
    if key == "listenport":
        problem = port_problem(value, service_known)
        return f"{value!r} {problem}" if problem and value else problem
    if key == "persistentkeepalive":
        if value.lower() == "off" or (_NUMBER_RE.fullmatch(value) and int(value) <= 65535):
            return None
        return f"{value!r} is neither off nor 0-65535 seconds"
    if key == "fwmark":
        if value.lower() == "off" or (_FWMARK_RE.fullmatch(value)
                                      and int(value, 0) <= 0xFFFFFFFF):
            return None
        return f"{value!r} is neither off nor 0-0xffffffff"
    if key == "allowedips":
        bad = [item for item in value.split(",") if item and not allowed_ip(item)]
        return f"item {bad[0]!r} is not an address with an optional prefix" if bad else None
    if key == "endpoint":
        return None if endpoint_has_port(value) else f"{value!r} has no :port"
    return None


def allowed_ip(item: str) -> bool:
    address, slash, prefix = item.lstrip("+-").partition("/")
    family = socket.AF_INET6 if ":" in address else socket.AF_INET
    try:
        socket.inet_pton(family, address)
    except (OSError, ValueError):
        return False
    if not slash:
        return True
    limit = 128 if family == socket.AF_INET6 else 32
    return bool(_NUMBER_RE.fullmatch(prefix)) and int(prefix) <= limit


def endpoint_has_port(value: str) -> bool:
    if value.startswith("["):
        closing = value.find("]")
        return closing > 0 and value[closing + 1:closing + 2] == ":" and \
            len(value) > closing + 2
    host, colon, port = value.rpartition(":")
    return bool(colon and host and port)


def _as_wg_reads(key: str) -> ValueType:
    """A key `wg setconf` reads: its value as wg sees it (every space dropped)."""
    def problem(value: str) -> str | None:
        found = value_problem(key, "".join(value.split()))
        return found.removeprefix(f"{value!r} ") if found else None
    return ValueType(f"a value wg takes for {key}", problem)


def _endpoint(value: str) -> str | None:
    if not endpoint_has_port(value):
        return "has no :port"
    host, _colon, port = value.rpartition(":")
    return values.HOST.check(host) or values.PORT.check(port)


_WG_KEYS = {key: _as_wg_reads(key) for key in
            ("privatekey", "publickey", "presharedkey", "listenport", "persistentkeepalive",
             "fwmark", "allowedips")}
SCHEMA: dict[str, ValueType] = {key: refusing(type_, "#") for key, type_ in {
    **_WG_KEYS,
    "endpoint": ValueType("host:port", _endpoint),
    "address": values.listed(values.INTERFACE_ADDRESS),
    "dns": values.listed(values.either(values.IP, values.HOSTNAME)),
    "mtu": values.integer(68, 65535),
    "table": values.either(values.one_of("off", "auto"), values.WORD),
    "saveconfig": values.one_of("true", "false"),
    **{hook: values.TEXT for hook in HOOK_KEYS},
}.items()}
"""Every key zsn writes in a wg-quick config (lower case) and what it takes; ``#``
starts a comment for wg and zsn, so no value holds one."""
