"""What ``wg`` (and ``wg-quick``) refuse in a config, line by line.

wg-quick takes Address, DNS, MTU, Table, the four hooks and SaveConfig out of
``[Interface]`` and hands every other line to ``wg setconf``, whose parser
(wireguard-tools src/config.c) refuses an unknown key, a key that is not 32 bytes of
base64, a port it cannot resolve, a keepalive or FwMark out of range, an AllowedIPs
item that is not an address with a prefix, an Endpoint without a port, and a peer
without a PublicKey. A refused line makes ``wg-quick up`` fail: lint reports each one.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

from zsn.wireguard.config import Section, WgConfig
from zsn.wireguard.schema import (
    ASCII_SPACES,
    INTERFACE_KEYS,
    PEER_KEYS,
    WG_QUICK_KEYS,
    udp_service_known,
    value_problem,
)


class Refusal(NamedTuple):
    line: int
    """0-based line of the config."""
    message: str


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
        problem = value_problem(key, value, service_known)
        if problem:
            found.append(Refusal(entry.line, f"{entry.key} {problem}"))
    if peer and section.get("PublicKey") is None:
        found.append(Refusal(section.header, "[Peer] has no PublicKey"))
    return found


def _wg_value(value: str) -> str:
    """The value as wg sees it: wg drops every space of a line before parsing it."""
    return "".join(value.split())
