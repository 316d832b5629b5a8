"""What ``wg`` (and ``wg-quick``) refuse in a config, line by line.

wg-quick takes Address, DNS, MTU, Table, the four hooks and SaveConfig out of
``[Interface]`` and hands every other line to ``wg setconf``, whose parser
(wireguard-tools src/config.c) refuses an unknown key, a key that is not 32 bytes of
base64, a port it cannot resolve, a keepalive or FwMark out of range, an AllowedIPs
item that is not an address with a prefix, an Endpoint without a port, and a peer
without a PublicKey. A refused line makes ``wg-quick up`` fail: lint reports each one.
"""

from __future__ import annotations

import re
import socket
from collections.abc import Callable
from typing import NamedTuple

from zsn.wireguard.config import Section, WgConfig
from zsn.wireguard.keys import is_valid_key

WG_QUICK_KEYS = frozenset({"address", "dns", "mtu", "table", "preup", "postup", "predown",
                           "postdown", "saveconfig"})
"""[Interface] keys wg-quick keeps for itself (case-insensitive, as it reads them)."""
INTERFACE_KEYS = frozenset({"privatekey", "listenport", "fwmark"})
PEER_KEYS = frozenset({"publickey", "presharedkey", "allowedips", "endpoint",
                       "persistentkeepalive"})
ASCII_SPACES = " \t\n\r\v\f"
"""The only spaces wg and wg-quick skip (a no-break space is part of the key)."""
_NUMBER_RE = re.compile(r"[0-9]+")
_FWMARK_RE = re.compile(r"0x[0-9a-fA-F]+|[0-9]+")


class Refusal(NamedTuple):
    line: int
    """0-based line of the config."""
    message: str


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


def refusals(config: WgConfig, service_known: Callable[[str], bool] = udp_service_known
             ) -> list[Refusal]:
    """Every line of `config` that wg or wg-quick would refuse, in file order."""
    found: list[Refusal] = []
    for section in config.sections:
        if section.disabled:
            continue
        found.extend(_section_refusals(config.lines, section, service_known))
    return sorted(found)


def _section_refusals(lines: list[str], section: Section,
                      service_known: Callable[[str], bool]) -> list[Refusal]:
    found: list[Refusal] = []
    header = lines[section.header].partition("#")[0]
    as_wg_reads = "".join(ch for ch in header if ch not in ASCII_SPACES).lower()
    as_wg_quick_reads = header.strip(ASCII_SPACES).lower()
    if as_wg_reads != f"[{section.kind.lower()}]" or (
            section.kind == "Interface" and as_wg_quick_reads != "[interface]"):
        found.append(Refusal(section.header, f"{header.strip()!r} is not read as "
                                             f"[{section.kind}] by wg-quick and wg"))
    peer = section.kind == "Peer"
    known = PEER_KEYS if peer else INTERFACE_KEYS | WG_QUICK_KEYS
    for entry in section.entries:
        key, value = entry.key.lower(), _wg_value(entry.value)
        written = lines[entry.line].partition("=")[0].strip(ASCII_SPACES)
        if written != entry.key:
            found.append(Refusal(entry.line, f"key {written!r} is not {entry.key}: wg-quick "
                                             "and wg skip ASCII spaces only"))
            continue
        if key not in known:
            found.append(Refusal(entry.line, f"{entry.key} is not a {section.kind} key wg "
                                             "or wg-quick knows"))
            continue
        problem = _value_problem(key, value, service_known)
        if problem:
            found.append(Refusal(entry.line, f"{entry.key} {problem}"))
    if peer and section.get("PublicKey") is None:
        found.append(Refusal(section.header, "[Peer] has no PublicKey"))
    return found


def _wg_value(value: str) -> str:
    """The value as wg sees it: wg drops every space of a line before parsing it."""
    return "".join(value.split())


def _value_problem(key: str, value: str, service_known: Callable[[str], bool]) -> str | None:
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
        bad = [item for item in value.split(",") if item and not _allowed_ip(item)]
        return f"item {bad[0]!r} is not an address with an optional prefix" if bad else None
    if key == "endpoint":
        return None if _endpoint_has_port(value) else f"{value!r} has no :port"
    return None


def _allowed_ip(item: str) -> bool:
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


def _endpoint_has_port(value: str) -> bool:
    if value.startswith("["):
        closing = value.find("]")
        return closing > 0 and value[closing + 1:closing + 2] == ":" and \
            len(value) > closing + 2
    host, colon, port = value.rpartition(":")
    return bool(colon and host and port)
