"""The SSH session zsn runs in, and the links that carry it.

``SSH_CONNECTION`` is ``CLIENT_IP CLIENT_PORT SERVER_IP SERVER_PORT``. The session
rides on the interface that holds SERVER_IP and on the one the kernel routes replies
to CLIENT_IP through (usually the same), and on everything those sit on (a VLAN's
parent, a bond's members, a bridge's ports). Changing any of them can cut the
session off, so actions touching them need an explicit confirmation naming the link.
"""

from __future__ import annotations

import ipaddress
import os
from collections.abc import Mapping
from dataclasses import dataclass

from zsn.errors import NetlinkError
from zsn.links.model import Interface, lower_stack
from zsn.system import rtnetlink


@dataclass(frozen=True)
class SshSession:
    client: str
    local: str
    carriers: tuple[str, ...]
    """The interfaces the session's packets use directly (local address, route back)."""
    affected: frozenset[str]
    """`carriers` and everything below them."""

    @property
    def link(self) -> str:
        """The interface a confirmation must name: the one the route back uses."""
        return self.carriers[0]

    def describe(self) -> str:
        return f"{self.link} carries this SSH session (from {self.client})"


def parse_ssh_connection(value: str) -> tuple[str, str] | None:
    """(client address, local address) from ``SSH_CONNECTION``; None when malformed."""
    parts = value.split()
    if len(parts) != 4:
        return None
    try:
        client = ipaddress.ip_address(parts[0].split("%", 1)[0])
        local = ipaddress.ip_address(parts[2].split("%", 1)[0])
    except ValueError:
        return None
    return str(client), str(local)


def find_session(interfaces: tuple[Interface, ...],
                 environ: Mapping[str, str] | None = None) -> SshSession | None:
    """The SSH session's links, or None when zsn does not run over SSH (or over a
    link of another namespace: nothing here carries it)."""
    parsed = parse_ssh_connection((environ if environ is not None else os.environ)
                                  .get("SSH_CONNECTION", ""))
    if parsed is None:
        return None
    client, local = parsed
    by_index = {interface.index: interface.name for interface in interfaces}
    carriers: list[str] = []
    try:
        route_index = rtnetlink.route_interface(client)
    except NetlinkError:
        route_index = None
    if route_index is not None and route_index in by_index:
        carriers.append(by_index[route_index])
    for interface in interfaces:
        holds_local = any(address.split("/", 1)[0] == local for address in interface.addresses)
        if holds_local and interface.name not in carriers:
            carriers.append(interface.name)
    carriers = [name for name in carriers if name != "lo"]
    if not carriers:
        return None
    return SshSession(client, local, tuple(carriers),
                      frozenset(lower_stack(interfaces, set(carriers))))
