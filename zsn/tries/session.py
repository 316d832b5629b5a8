"""The SSH session zsn runs in, and the whole path its packets take.

OpenSSH puts ``SSH_CONNECTION="CLIENT_IP CLIENT_PORT SERVER_IP SERVER_PORT"`` in the
session's environment (sudo's env_reset drops it: then the connection is read from
the sshd process zsn runs under, its TCP socket in ``/proc/net/tcp{,6}``). The
kernel is asked which route replies to the client take, from the server address, so
policy rules that match on the source count (``ip route get CLIENT from SERVER``);
that route's interface, and the one holding the server address, carry the session.
Below them is everything they sit on: a VLAN's parent, a bond's members, a bridge's
ports, and for a WireGuard interface the path to the peer that carries the session
(its endpoint's route, with the interface's fwmark). A change to any of these, or one
that routes the client's address a new way, can cut the session off.
"""

from __future__ import annotations

import contextlib
import importlib
import ipaddress
import os
import socket
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from zsn.errors import NetlinkError, SessionLinkError, ZsnError
from zsn.plan import Plan
from zsn.system import files, rtnetlink
from zsn.system.host import Host

TUNNEL_STATE = "zsn.wireguard.device:running_state"
"""Reads a running WireGuard interface (peers, endpoints, fwmark) by name: found by name
(a domain's, loaded only when a session runs over a tunnel)."""
STACKED_KINDS = frozenset({"vlan", "macvlan", "ipvlan", "macvtap", "macsec"})
"""Kinds whose IFLA_LINK is the device they sit on (a veth's is its peer: not followed)."""
ROLE_OF_MEMBER = {"bond": "member", "bridge": "port", "team": "member"}
_TCP_ESTABLISHED = "01"
_SSHD_NAMES = ("sshd", "sshd-session")
_MAX_ANCESTORS = 64


@dataclass(frozen=True)
class SessionPath:
    """Where this SSH session's packets go, from the route down to the wires."""

    client: str
    server: str
    route: str
    """The route replies take, as ``ip route get`` would say it (``via GW dev IF``)."""
    stack: tuple[tuple[str, str], ...]
    """(interface, its role), the route's interface first, then what it sits on."""
    found_by: str
    """``SSH_CONNECTION`` or the sshd process the session belongs to."""
    route_prefix: int = 0
    """The prefix length of the route that matched (0: the default route): a new route
    takes the session only when it is at least as specific."""

    @property
    def link(self) -> str:
        """The interface a ``--confirm-ssh-link`` must name: the one replies leave by."""
        return self.stack[0][0]

    @property
    def names(self) -> frozenset[str]:
        return frozenset(name for name, _role in self.stack)

    def describe(self) -> str:
        parts = [name + (f" ({role})" if role else "") for name, role in self.stack]
        return (f"this SSH session (from {self.client} to {self.server}, {self.route}) runs "
                f"over {', '.join(parts)}")

    def hit(self, touches: frozenset[str]) -> list[str]:
        """The interfaces of the path among `touches` (``tun*``: any name starting
        ``tun``), in the path's order."""
        return [name for name, _role in self.stack if any(
            name == touched or touched.endswith("*") and name.startswith(touched[:-1])
            for touched in touches)]

    def risks(self, touches: frozenset[str],
              reroutes: tuple[tuple[str, str], ...]) -> list[str]:
        """Why a change that touches `touches` and routes `reroutes` anew may cut it."""
        found = []
        hit = self.hit(touches)
        if hit:
            found.append(f"it changes {', '.join(hit)}")
        client = ipaddress.ip_address(self.client)
        for network, why in reroutes:
            try:
                routed = ipaddress.ip_network(network, strict=False)
            except ValueError:
                continue
            if client in routed and routed.prefixlen >= self.route_prefix:
                found.append(f"{network} holds the client {self.client}: {why}")
        return found


def parse_ssh_connection(value: str) -> tuple[str, str] | None:
    """(client address, server address) from ``SSH_CONNECTION``; None when malformed."""
    parts = value.split()
    if len(parts) != 4:
        return None
    try:
        client = ipaddress.ip_address(parts[0].split("%", 1)[0])
        server = ipaddress.ip_address(parts[2].split("%", 1)[0])
    except ValueError:
        return None
    return _unmapped(client), _unmapped(server)


def _unmapped(address: ipaddress.IPv4Address | ipaddress.IPv6Address) -> str:
    """An IPv4 client on an IPv6 socket shows as ::ffff:a.b.c.d: routes know a.b.c.d."""
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        return str(address.ipv4_mapped)
    return str(address)


def find_session(host: Host, environ: Mapping[str, str] | None = None,
                 proc: Path = Path("/proc")) -> SessionPath | None:
    """The session's path, or None when zsn does not run over SSH (or the session
    does not use this namespace's links: it arrived over another one)."""
    if not host.is_live:
        return None  # a tree under --root: its links are not this machine's
    env = os.environ if environ is None else environ
    parsed = parse_ssh_connection(env.get("SSH_CONNECTION", ""))
    found_by = "SSH_CONNECTION"
    if parsed is None:
        parsed = connection_of_sshd(proc)
        found_by = "the sshd process this session runs under"
    if parsed is None:
        return None
    client, server = parsed
    try:
        return _walk(host, client, server, found_by)
    except NetlinkError:
        return None


def _walk(host: Host, client: str, server: str, found_by: str) -> SessionPath | None:
    links = {record.index: record for record in rtnetlink.read_links()}
    try:
        route = rtnetlink.route_get(client, server)
    except NetlinkError:  # the server address is not ours (NAT, another netns)
        route = rtnetlink.route_get(client)
    stack: list[tuple[str, str]] = []
    if route is not None and route.oifs and route.oifs[0] in links:
        stack.append((links[route.oifs[0]].name, ""))
    holder = next((a.index for a in rtnetlink.read_addresses() if a.address == server), None)
    if holder is not None and holder in links:
        stack.append((links[holder].name, f"holds {server}"))
    stack = [(name, role) for name, role in stack if name != "lo"]
    if not stack:
        return None
    walked = _below(host, links, stack, client)
    description = _describe_route(route, links)
    prefix = _matched_prefix(client, route.table if route is not None else None)
    return SessionPath(client, server, description, tuple(walked), found_by, prefix)


def _matched_prefix(client: str, table: int | None) -> int:
    """How specific the route to `client` is: the longest prefix of `table` holding it
    (``ip route get`` answers with the client's own /32)."""
    address = ipaddress.ip_address(client)
    family = socket.AF_INET6 if address.version == 6 else socket.AF_INET
    unspecified = "::" if address.version == 6 else "0.0.0.0"
    best = 0
    for route in rtnetlink.decode_routes(rtnetlink.dump_routes_raw(family)):
        if table is not None and route.table != table:
            continue
        network = ipaddress.ip_network(f"{route.dst or unspecified}/{route.dst_len}",
                                       strict=False)
        if address in network:
            best = max(best, route.dst_len)
    return best


def _describe_route(route: rtnetlink.RouteRecord | None,
                    links: Mapping[int, rtnetlink.LinkRecord]) -> str:
    if route is None or not route.oifs:
        return "no route"
    words = [f"via {route.gateway}"] if route.gateway else []
    oif = links.get(route.oifs[0])
    words.append(f"dev {oif.name if oif else route.oifs[0]}")
    if route.table != rtnetlink.RT_TABLE_MAIN:
        words.append(f"table {route.table}")
    return " ".join(words)


def _below(host: Host, links: Mapping[int, rtnetlink.LinkRecord],
           start: list[tuple[str, str]], client: str) -> list[tuple[str, str]]:
    by_name = {record.name: record for record in links.values()}
    found: list[tuple[str, str]] = []
    seen: set[str] = set()
    pending = list(start)
    while pending:
        name, role = pending.pop(0)
        if name in seen or name not in by_name:
            continue
        seen.add(name)
        found.append((name, role))
        record = by_name[name]
        if (record.kind in STACKED_KINDS and record.link is not None
                and record.link_netnsid is None and record.link in links):
            pending.append((links[record.link].name, f"{record.kind} parent of {name}"))
        member_role = ROLE_OF_MEMBER.get(record.kind or "", "member")
        pending.extend((other.name, f"{member_role} of {name}") for other in links.values()
                       if other.master == record.index)
        for underlay, why in _tunnel_underlay(host, record, client, links):
            pending.append((underlay, why))
    return found


def _tunnel_underlay(host: Host, record: rtnetlink.LinkRecord, client: str,
                     links: Mapping[int, rtnetlink.LinkRecord]) -> list[tuple[str, str]]:
    """For a WireGuard interface: the interfaces its peer's packets leave by (the peer
    whose allowed IPs hold the client, else every peer with an endpoint)."""
    if record.kind not in ("wireguard", "tun"):
        return []
    module_name, _, attribute = TUNNEL_STATE.partition(":")
    running_state = getattr(importlib.import_module(module_name), attribute)
    try:
        state = running_state(host, record.name)
    except ZsnError:
        return []
    if state is None:
        return []
    address = ipaddress.ip_address(client)
    peers = [peer for peer in state.peers if peer.endpoint]
    carrying = [peer for peer in peers if any(
        _contains(allowed, address) for allowed in peer.allowed_ips)]
    found = []
    for peer in carrying or peers:
        assert peer.endpoint is not None
        endpoint = peer.endpoint.rsplit(":", 1)[0].strip("[]")
        with contextlib.suppress(NetlinkError, ValueError):
            route = rtnetlink.route_get(endpoint, mark=state.fwmark)
            if route is not None and route.oifs and route.oifs[0] in links:
                found.append((links[route.oifs[0]].name,
                              f"underlay of {record.name} (peer endpoint {endpoint})"))
    return found


def _contains(network: str, address: ipaddress.IPv4Address | ipaddress.IPv6Address) -> bool:
    try:
        return address in ipaddress.ip_network(network, strict=False)
    except ValueError:
        return False


# -- without SSH_CONNECTION: the sshd process above zsn --------------------------------


def connection_of_sshd(proc: Path = Path("/proc"),
                       pid: int | None = None) -> tuple[str, str] | None:
    """(client, server) of the TCP connection held by the nearest sshd above `pid`
    (this process): what ``SSH_CONNECTION`` would have said before sudo dropped it."""
    current = os.getpid() if pid is None else pid
    for _ in range(_MAX_ANCESTORS):
        parent = _parent(proc, current)
        if parent is None or parent <= 1:
            return None
        current = parent
        if _name(proc, current) in _SSHD_NAMES:
            found = _established(proc, current)
            if found is not None:
                return found
    return None


def _parent(proc: Path, pid: int) -> int | None:
    try:
        status = (proc / str(pid) / "status").read_text(errors="replace")
    except OSError:
        return None
    for line in status.splitlines():
        if line.startswith("PPid:"):
            value = line.split(":", 1)[1].strip()
            return int(value) if value.isdigit() else None
    return None


def _name(proc: Path, pid: int) -> str:
    try:
        return (proc / str(pid) / "comm").read_text(errors="replace").strip()
    except OSError:
        return ""


def _established(proc: Path, pid: int) -> tuple[str, str] | None:
    inodes = set()
    try:
        for entry in files.list_files(proc / str(pid) / "fd"):
            with contextlib.suppress(OSError, ZsnError):
                target = files.read_link(entry)
                if target.startswith("socket:["):
                    inodes.add(target[len("socket:["):-1])
    except (OSError, ZsnError):
        return None
    for table in ("tcp", "tcp6"):
        try:
            lines = files.read_text(proc / str(pid) / "net" / table).splitlines()[1:]
        except (OSError, ZsnError):
            continue
        for line in lines:
            fields = line.split()
            if len(fields) > 9 and fields[3] == _TCP_ESTABLISHED and fields[9] in inodes:
                local, remote = _hex_address(fields[1]), _hex_address(fields[2])
                if local and remote:
                    return remote, local
    return None


def _hex_address(field: str) -> str | None:
    """``0100007F:0016`` (kernel byte order, per 32-bit word) -> ``127.0.0.1``."""
    text = field.split(":", 1)[0]
    try:
        raw = bytes.fromhex(text)
    except ValueError:
        return None
    if len(raw) not in (4, 16):
        return None
    ordered = b"".join(raw[i:i + 4][::-1] for i in range(0, len(raw), 4))
    return _unmapped(ipaddress.ip_address(ordered))


# -- the gate every live change passes -------------------------------------------------


def name_in_plan(plan: Plan, session: SessionPath | None) -> list[str]:
    """The risks `plan` runs for `session`; named in the plan's warnings, first."""
    if session is None:
        return []
    risks = session.risks(plan.touches, plan.reroutes)
    if risks:
        warning = f"{session.describe()}: {'; '.join(risks)}: it could cut the session off"
        if warning not in plan.warnings:
            plan.warnings.insert(0, warning)
    return risks


def guard(plan: Plan, session: SessionPath | None, confirmed_link: str | None,
          trying: bool) -> None:
    """Refuse (`SessionLinkError`) a change that may cut the session off unless it is
    tried or the session's link is named; a named link must be the session's."""
    risks = name_in_plan(plan, session)
    if session is None or not risks or trying or confirmed_link == session.link:
        return
    touched = session.hit(plan.touches)
    if confirmed_link is not None:
        raise SessionLinkError(f"this SSH session leaves by {session.link}, not "
                               f"{confirmed_link}", session.link, touched)
    raise SessionLinkError(f"{session.describe()}; {'; '.join(risks)}, which could cut "
                           "the session off", session.link, touched)
