"""WireGuard's section of the desired-state file (`zsn.desired`, docs/state.md).

Interfaces by name (addresses, listen port, up or down, the endpoint clients use, the
gateway, client-to-client, linked interfaces, access rules) and their peers by public
key (name, allowed IPs, endpoint, keepalive, disabled). Keys are public keys only: an
interface's private key is made here when zsn creates it and never leaves this host; a
peer's preshared key is never named and never touched.

`describe` reads the machine into the section (`zsn state export`); `plans` yields the
domain's own plans that make the machine as a section says, only those that change
something: `zsn.wireguard.interfaces` (create, up, down, endpoint), `plan_peers` (every
peer of an interface in one edit of its config, live on a running interface),
`zsn.wireguard.acl.plan_policy`, `zsn.wireguard.routing` (gateway, client-to-client,
links). What a section does not name is left alone; ``exclusive: true`` removes the
interfaces (and an interface's ``exclusive`` the peers) it does not name.
"""

from __future__ import annotations

import contextlib
import ipaddress
import re
import socket
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from functools import partial
from typing import Any

from zsn.desired.spec import checked, repeated
from zsn.errors import ValidationError, ZsnError
from zsn.plan import Check, FileEdit, LiveStep, Plan
from zsn.system import files
from zsn.system.host import Host
from zsn.wireguard import addressing, settings
from zsn.wireguard.config import WIREGUARD_DIR, Section, WgConfig, check_peer_name
from zsn.wireguard.device import LiveDevice, find_device
from zsn.wireguard.keys import check_key
from zsn.wireguard.policy import (
    Group,
    Policy,
    check_group_name,
    check_verdict,
    parse_rule_text,
    parse_test_text,
)
from zsn.wireguard.server import ServerConfig, client_file

# What only a change needs (the access rules, wg-quick, routing, the live peer steps) is
# imported where a change is planned: a file the machine matches already costs about one
# read (bench/apply.py).

ORDER = 20
"""After links (a tunnel's endpoint may be on a VLAN the file makes)."""





def _network(text: str) -> str:
    """An allowed IP as wg reads it: an address (a host) or a network, canonical."""
    if "%" in text or "/" in text and not text.rsplit("/", 1)[1].isdigit():
        raise ValueError(f"{text!r} is not an address or network")
    address, slash, prefix = text.strip().partition("/")
    try:  # dotted IPv4 (nearly every peer's) without ipaddress: ten times faster
        packed = socket.inet_pton(socket.AF_INET, address)
    except (OSError, ValueError):  # not dotted IPv4 (or a NUL in it): ipaddress says
        packed = None
    if packed is not None:
        number = int.from_bytes(packed)
        length = int(prefix) if slash else 32
        if length > 32:
            raise ValueError(f"{text!r} is not an address or network")
        first = number >> (32 - length) << (32 - length)
        canonical = f"{socket.inet_ntop(socket.AF_INET, first.to_bytes(4))}/{length}"
        if first != number:
            raise ValueError(f"{text!r} has host bits set; did you mean {canonical}?")
        return canonical
    try:
        network = ipaddress.ip_network(text.strip(), strict=False)
    except ValueError:
        raise ValueError(f"{text!r} is not an address or network") from None
    if "/" in text and ipaddress.ip_interface(text.strip()).ip != network.network_address:
        raise ValueError(f"{text!r} has host bits set; did you mean {network}?")
    return str(network)


def _endpoint(text: str) -> str:
    """A peer's ``HOST:PORT`` (``[V6]:PORT``), checked as zsn checks one typed."""
    host, colon, port = text.strip().rpartition(":")
    if not colon or not host or host.count(":") and not host.startswith("["):
        raise ValueError(f"endpoint {text!r} is not HOST:PORT ([IPV6]:PORT)")
    return addressing.format_endpoint(checked(addressing.check_endpoint_host, host),
                                      checked(addressing.check_port, port, "endpoint port"))


@dataclass
class PeerSpec:
    """One peer, found by its public key."""

    public_key: str
    name: str | None = None
    """Its name (the comment above its block); None: a new peer gets none, a peer there
    keeps its own."""
    allowed_ips: list[str] | None = None
    """What the interface routes to it (its address as a /32 or /128, networks behind
    it); None: left as it is (a new peer needs them)."""
    endpoint: str | None = None
    """Where to reach it (a site, a hub): ``HOST:PORT``; None: left as it is."""
    keepalive: int | None = None
    """PersistentKeepalive seconds (1-65535); None: left as it is."""
    disabled: bool | None = None
    """True: kept in the file, off the running interface; None: left as it is."""

    def __post_init__(self) -> None:
        try:  # one handler for both checks (a file holds thousands of peers)
            self.public_key = check_key(self.public_key, "public key")
            if self.name is not None:
                self.name = check_peer_name(self.name)
        except ValidationError as exc:
            raise ValueError(str(exc)) from None
        if self.allowed_ips is not None:
            self.allowed_ips = [_network(item) for item in self.allowed_ips]
            if len(set(self.allowed_ips)) != len(self.allowed_ips):
                raise ValueError("an allowed IP given twice")
        if self.endpoint is not None:
            self.endpoint = _endpoint(self.endpoint)
        if self.keepalive is not None and not 1 <= self.keepalive <= 65535:
            raise ValueError(f"keepalive {self.keepalive} is outside 1-65535 seconds")


@dataclass
class GroupSpec:
    name: str
    members: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        checked(check_group_name, self.name)
        for member in self.members:
            checked(check_peer_name, member)


@dataclass
class AccessSpec:
    """The interface's access rules (`zsn wg acl`), whole: what its policy file holds."""

    default: str = "allow"
    groups: list[GroupSpec] = field(default_factory=list)
    rules: list[str] = field(default_factory=list)
    """``allow|deny FROM -> TO [PORT[/tcp|/udp]]``, first match decides."""
    tests: list[str] = field(default_factory=list)
    """``SRC -> DST[:PORT/PROTO] allow|deny``: every change must pass them."""

    def __post_init__(self) -> None:
        checked(check_verdict, self.default)
        for rule in self.rules:
            checked(parse_rule_text, rule)
        for test in self.tests:
            checked(parse_test_text, test)
        names = [group.name for group in self.groups]
        if len(set(names)) != len(names):
            raise ValueError("a group given twice")

    def policy(self, interface: str) -> Policy:
        return Policy(interface, check_verdict(self.default),
                      tuple(Group(group.name, tuple(group.members)) for group in self.groups),
                      tuple(parse_rule_text(rule) for rule in self.rules),
                      tuple(parse_test_text(test) for test in self.tests))


@dataclass
class GatewaySpec:
    egress: str | None = None
    """The interface clients are NATed out of; None: the default route's."""

    def __post_init__(self) -> None:
        if self.egress is not None:
            checked(addressing.check_interface_name, self.egress)


@dataclass
class InterfaceSpec:
    name: str
    public_key: str | None = None
    """Checked, never set: the private key is made here and stays here."""
    addresses: list[str] | None = None
    listen_port: int | None = None
    up: bool | None = None
    endpoint: str | None = None
    """The host name or address clients connect to (kept for new clients' configs)."""
    gateway: GatewaySpec | None = None
    client_to_client: bool | None = None
    linked: list[str] | None = None
    access: AccessSpec | None = None
    peers: list[PeerSpec] | None = None
    exclusive: bool | None = None
    """Peers not named are removed (default: the section's ``exclusive``)."""

    def __post_init__(self) -> None:
        checked(addressing.check_interface_name, self.name)
        if self.public_key is not None:
            self.public_key = checked(check_key, self.public_key, "public key")
        if self.addresses is not None:
            parsed = [checked(addressing.check_interface_address, a) for a in self.addresses]
            self.addresses = [str(address) for address in parsed]
        if self.listen_port is not None:
            checked(addressing.check_port, self.listen_port)
        if self.endpoint is not None:
            self.endpoint = checked(addressing.check_endpoint_host, self.endpoint)
        for other in self.linked or []:
            checked(addressing.check_interface_name, other)
            if other == self.name:
                raise ValueError(f"{self.name} cannot be linked to itself")
        peers = self.peers or []
        for what, values in (("public key", [p.public_key for p in peers]),
                             ("name", [p.name for p in peers if p.name])):
            twice = repeated(values)
            if twice:
                raise ValueError(f"two peers with the {what} {twice[0]!r}")


@dataclass
class WireguardSection:
    interfaces: list[InterfaceSpec] = field(default_factory=list)
    exclusive: bool = False
    """Interfaces (and their peers) the section does not name are removed."""

    def __post_init__(self) -> None:
        names = [interface.name for interface in self.interfaces]
        twice = repeated(names)
        if twice:
            raise ValueError(f"interface {twice[0]!r} given twice")


SECTION = WireguardSection


# -- the machine as it is ----------------------------------------------------------

_FORWARD_SELF = re.compile(r"^ip6?tables -A FORWARD -i %i -o %i -j ACCEPT$")
_MASQUERADE = re.compile(r"^ip6?tables -t nat -A POSTROUTING -s \S+ -o (?P<egress>\S+) "
                         r"-j MASQUERADE$")


def _post_ups(config: WgConfig) -> list[str]:
    interface = config.interface
    return [entry.value.strip() for entry in interface.entries_for("PostUp")] \
        if interface else []


def _client_to_client(config: WgConfig) -> bool:
    return any(_FORWARD_SELF.match(line) for line in _post_ups(config))


def _egress(config: WgConfig) -> str | None:
    """The interface a gateway NATs out of (its MASQUERADE rule), None: no gateway."""
    for line in _post_ups(config):
        match = _MASQUERADE.match(line)
        if match:
            return match.group("egress")
    return None


def _allowed(peer: Section) -> list[str]:
    """A peer's AllowedIPs as `PeerSpec` has them (canonical), in file order."""
    found: list[str] = []
    for item in peer.get_all("AllowedIPs"):
        try:
            network = str(ipaddress.ip_network(item, strict=False))
        except ValueError:
            network = item  # wg refuses it (lint WG011); kept as written
        if network not in found:
            found.append(network)
    return found


def _peer(peer: Section) -> dict[str, Any]:
    data: dict[str, Any] = {"public_key": peer.get("PublicKey")}
    if peer.name and peer.name_problem is None:
        data["name"] = peer.name
    data["allowed_ips"] = _allowed(peer)
    if peer.get("Endpoint"):
        data["endpoint"] = peer.get("Endpoint")
    keepalive = peer.get("PersistentKeepalive") or ""
    if keepalive.isdigit() and int(keepalive):
        data["keepalive"] = int(keepalive)
    if peer.disabled:
        data["disabled"] = True
    return data


def _interface(host: Host, server: ServerConfig, stored: settings.Settings) -> dict[str, Any]:
    config = server.config
    data: dict[str, Any] = {"name": server.name}
    with contextlib.suppress(ZsnError):  # no key to check against
        data["public_key"] = server.public_key
    data["addresses"] = [str(a) for a in addressing.interface_addresses(config)]
    if server.listen_port is not None:
        data["listen_port"] = server.listen_port
    data["up"] = find_device(host, server.name) is not None
    own = stored.get(server.name)
    if own.endpoint_host:
        data["endpoint"] = own.endpoint_host
    egress = _egress(config)
    if egress is not None:
        data["gateway"] = {"egress": egress}
    data["client_to_client"] = _client_to_client(config)
    data["linked"] = sorted(set(own.links))
    from zsn.wireguard.acl_view import PolicyFile

    stored_policy = PolicyFile.load(host, server)
    if stored_policy.exists:
        policy = stored_policy.policy
        data["access"] = {"default": policy.default,
                          "groups": [{"name": g.name, "members": list(g.members)}
                                     for g in policy.groups],
                          "rules": [str(rule) for rule in policy.rules],
                          "tests": [str(test) for test in policy.tests]}
    data["peers"] = [_peer(peer) for peer in config.all_peers if peer.get("PublicKey")]
    return data


def configs(host: Host) -> list[str]:
    """The interfaces with a config here, by name."""
    names = []
    for path in files.list_files(host.path(WIREGUARD_DIR), "*.conf"):
        try:
            names.append(addressing.check_interface_name(path.stem))
        except ValidationError:
            continue  # not a name wg-quick takes (lint says so)
    return names


def describe(host: Host) -> tuple[dict[str, Any], list[str]]:
    """The section as the machine has it: every interface with a config."""
    found: list[dict[str, Any]] = []
    errors: list[str] = []
    stored = settings.load(host)
    for name in configs(host):
        try:
            found.append(_interface(host, ServerConfig.load(host, name), stored))
        except ZsnError as exc:
            errors.append(f"{name} left out: {exc}")
    return ({"interfaces": found} if found or not errors else {}), errors


# -- plans ---------------------------------------------------------------------------


def plans(host: Host, section: WireguardSection) -> Iterator[Plan]:
    named = {interface.name for interface in section.interfaces}
    for spec in section.interfaces:  # first: an interface may be linked to a new one
        if not files.exists(host.path(f"{WIREGUARD_DIR}/{spec.name}.conf")):
            yield _create(host, spec)
    for spec in section.interfaces:
        exclusive = section.exclusive if spec.exclusive is None else spec.exclusive
        yield from _interface_plans(host, spec, exclusive)
    if section.exclusive:
        for name in configs(host):
            if name not in named:
                yield plan_remove_interface(host, name)


def _interface_plans(host: Host, spec: InterfaceSpec, exclusive: bool) -> Iterator[Plan]:
    yield from _interface_settings(host, spec)
    running = find_device(host, spec.name) is not None
    if spec.peers is not None:
        yield plan_peers(host, spec.name, spec.peers, exclusive)
    yield from _routing(host, spec)
    if spec.up is not None and spec.up != running:
        from zsn.wireguard import interfaces

        yield (interfaces.plan_up if spec.up else interfaces.plan_down)(host, spec.name)


def _create(host: Host, spec: InterfaceSpec) -> Plan:
    if not spec.addresses or spec.listen_port is None:
        raise ValidationError(f"{spec.name} does not exist: give its addresses and "
                              "listen_port to create it")
    if spec.public_key is not None:
        raise ValidationError(f"{spec.name} does not exist, and its key is made here when "
                              "it is created: leave public_key out")
    from zsn.wireguard import interfaces

    return interfaces.plan_create_interface(host, spec.name, list(spec.addresses),
                                            spec.listen_port, spec.endpoint)


def _interface_settings(host: Host, spec: InterfaceSpec) -> Iterator[Plan]:
    server = ServerConfig.load(host, spec.name)
    if spec.public_key is not None and spec.public_key != server.public_key:
        raise ValidationError(f"{spec.name}'s public key here is {server.public_key}, not "
                              f"{spec.public_key}: zsn never sets a private key (a key is "
                              "made on the host and stays there)")
    differs = []
    have = [str(a) for a in addressing.interface_addresses(server.config)]
    if spec.addresses is not None and sorted(have) != sorted(spec.addresses):
        differs.append(f"addresses {', '.join(have) or 'none'}, not "
                       f"{', '.join(spec.addresses)}")
    if spec.listen_port is not None and server.listen_port != spec.listen_port:
        differs.append(f"listen port {server.listen_port}, not {spec.listen_port}")
    if differs:
        yield plan_interface_settings(host, server, spec.addresses, spec.listen_port,
                                      "; ".join(differs))
    if spec.endpoint is not None and \
            settings.load(host).get(spec.name).endpoint_host != spec.endpoint:
        from zsn.wireguard import interfaces

        yield interfaces.plan_set_endpoint(host, spec.name, spec.endpoint)


def plan_interface_settings(host: Host, server: ServerConfig, addresses: list[str] | None,
                            listen_port: int | None, what: str) -> Plan:
    """Address and ListenPort of an interface that is down (its lines edited in
    place); refused while it runs: its live addresses and port would have to change
    with the file, and wg-quick sets them only as it brings it up."""
    if server.live() is not None:
        raise ValidationError(f"{server.name} runs with {what}: zsn changes an interface's "
                              "addresses and listen port while it is down (up: false, "
                              "apply; then up: true)")
    edited = server.edited()
    interface = edited.interface
    if interface is None:
        raise ValidationError(f"{server.path}: no [Interface] section")
    if addresses is not None:
        edited.set_value(interface, "Address", ", ".join(addresses))
        interface = edited.interface
        assert interface is not None
    if listen_port is not None:
        edited.set_value(interface, "ListenPort", str(listen_port))
    return Plan(f"set {server.name}'s {what.split(',')[0].split(' ')[0]} settings "
                f"({what})", [server.edit(edited)])


def plan_remove_interface(host: Host, name: str) -> Plan:
    """An interface the section does not name (``exclusive``): brought down, its config
    removed (kept as ``.zsn-bak``)."""
    server = ServerConfig.load(host, name)
    plan = Plan(f"remove WireGuard interface {name} (not in the desired state)")
    if server.live() is not None:
        from zsn.wireguard import interfaces

        down = interfaces.plan_down(host, name)
        plan.steps.extend(down.steps)
        plan.checks.extend(down.checks)
        plan.touches = down.touches
    plan.steps.append(FileEdit(server.path, server.snapshot, "", remove=True, intent=None))
    return plan


def _routing(host: Host, spec: InterfaceSpec) -> Iterator[Plan]:
    server = ServerConfig.load(host, spec.name)
    if spec.client_to_client is False and _client_to_client(server.config):
        raise ValidationError(f"{spec.name} lets its clients reach each other (its PostUp "
                              "FORWARD rule): zsn does not take that back; remove the "
                              "PostUp/PostDown pair by hand, or leave client_to_client out")
    if spec.access is None and not spec.client_to_client and not spec.linked and \
            spec.gateway is None:
        return
    from zsn.wireguard import acl, routing
    from zsn.wireguard.acl_view import PolicyFile

    if spec.access is not None:
        wanted = spec.access.policy(spec.name)
        if spec.client_to_client:
            wanted = acl.with_rule(wanted, routing.between(spec.name, spec.name))
        for other in spec.linked or []:
            wanted = acl.with_rule(wanted, routing.between(other, spec.name))
            wanted = acl.with_rule(wanted, routing.between(spec.name, other))
        stored = PolicyFile.load(host, server)
        if not stored.exists or stored.policy != wanted:
            yield acl.plan_policy(host, spec.name, wanted)
    if spec.client_to_client:
        yield routing.plan_client_to_client(host, spec.name)
    have = set(settings.load(host).get(spec.name).links)
    for other in spec.linked or []:
        if other not in have:
            yield routing.plan_link_interfaces(host, spec.name, other)
    if spec.gateway is not None:
        egress = _egress(server.config)
        if egress is None or spec.gateway.egress not in (None, egress):
            yield routing.plan_gateway(host, spec.name, spec.gateway.egress)


# -- peers ----------------------------------------------------------------------------


@dataclass
class _PeerPlan:
    """What `plan_peers` gathers while it edits the config."""

    server: ServerConfig
    edited: WgConfig
    device: LiveDevice | None
    live: list[LiveStep] = field(default_factory=list)
    checks: list[Check] = field(default_factory=list)
    said: list[str] = field(default_factory=list)
    renamed: dict[str, str] = field(default_factory=dict)
    removed: set[str] = field(default_factory=set)
    touched: set[str] = field(default_factory=set)
    """Keys of the peers added or changed: their allowed IPs may not overlap another's."""

    index: tuple[list[Section], dict[str | None, Section]] | None = None
    """The peers by public key, and the sections they were found in (an edit makes
    new ones: then they are looked up again)."""

    def peer(self, key: str) -> Section | None:
        sections = self.edited.sections
        if self.index is None or self.index[0] is not sections:
            found: dict[str | None, Section] = {}
            for peer in self.edited.all_peers:
                found.setdefault(peer.get("PublicKey"), peer)
            self.index = (sections, found)
        return self.index[1].get(key)

    def routes(self, networks: tuple[str, ...] | list[str], add: bool) -> None:
        from zsn.wireguard.actions import outside_subnet, route_steps

        if self.device is not None:
            self.live.extend(route_steps(self.device, outside_subnet(self.server,
                                                                     list(networks)), add))


def plan_peers(host: Host, interface: str, wanted: list[PeerSpec], exclusive: bool) -> Plan:
    """Every peer of `interface` as `wanted` says, in one edit of its config (each line
    changed in place, new blocks at the end) and, on the running interface, each added,
    changed or removed peer live (no restart); with `exclusive` the peers not named go.
    Peers are found by public key; a preshared key is never touched. No steps: the
    peers are so already."""
    server = ServerConfig.load(host, interface)
    work = _PeerPlan(server, server.edited(), server.live())
    keys = {spec.public_key for spec in wanted}
    while exclusive:  # every removal re-indexes the sections after it: look again
        doomed = next((p for p in work.edited.all_peers if p.get("PublicKey") not in keys),
                      None)
        if doomed is None:
            break
        _remove(work, doomed)
    for spec in wanted:
        found = work.peer(spec.public_key)
        if found is None:
            _add(host, work, spec)
        else:
            _change(host, work, found, spec)
    if work.edited.render() == server.config.render() and not work.live:
        return Plan(f"peers of {interface}")
    from zsn.wireguard import acl
    from zsn.wireguard.actions import down_note, with_rules

    _refuse_overlaps(work)
    said = work.said if len(work.said) <= SAID_IN_TITLE else _counted(work.said)
    plan = Plan(f"peers of {interface}: {'; '.join(said)}",
                [server.edit(work.edited), *work.live], checks=work.checks)
    if work.device is None:
        plan.notes.append(down_note(server))
    rules = acl.peer_change_steps(host, server, work.edited, renamed=work.renamed,
                                  removed=frozenset(work.removed))
    return with_rules(plan, rules)


SAID_IN_TITLE = 8
"""Peer changes a plan's title names one by one; more are counted."""


def _counted(said: list[str]) -> list[str]:
    """``add 998``, ``remove 2``, ``change 3``: the peer changes by kind."""
    kinds: dict[str, int] = {}
    for each in said:
        kind = each.split(" ", 1)[0] if each.startswith(("add ", "remove ")) else "change"
        kinds[kind] = kinds.get(kind, 0) + 1
    return [f"{kind} {count}" for kind, count in kinds.items()]


def _label(peer: Section | PeerSpec, key: str) -> str:
    return peer.name or f"{key[:8]}…"


def _remove(work: _PeerPlan, peer: Section) -> None:
    from zsn.wireguard.actions import live_step_remove, settings_of

    key = peer.get("PublicKey") or ""
    label = _label(peer, key)
    if peer.name:
        work.removed.add(peer.name)
    if key and not peer.disabled and work.device is not None:
        before = settings_of(peer)
        work.live.append(live_step_remove(work.device, before, f"remove peer {label}"))
        work.routes(before.allowed_ips, add=False)
    work.edited.remove_peer(peer)
    work.said.append(f"remove {label}")


def _add(host: Host, work: _PeerPlan, spec: PeerSpec) -> None:
    from zsn.wireguard import acl
    from zsn.wireguard.actions import live_peer_check, live_step_add, settings_of

    label = _label(spec, spec.public_key)
    if spec.allowed_ips is None:
        raise ValidationError(f"new peer {label} of {work.server.name}: give its allowed_ips")
    if spec.name is not None:
        if work.edited.find_peer(spec.name) is not None:
            raise ValidationError(f"{work.server.name} already has a peer named "
                                  f"{spec.name!r} (with another key)")
        acl.refuse_group_name(host, work.server.name, spec.name)
    fields = [("PublicKey", spec.public_key), ("AllowedIPs", ", ".join(spec.allowed_ips))]
    if spec.endpoint is not None:
        fields.append(("Endpoint", spec.endpoint))
    if spec.keepalive is not None:
        fields.append(("PersistentKeepalive", str(spec.keepalive)))
    peer = work.edited.append_peer(spec.name, fields)
    work.touched.add(spec.public_key)
    work.said.append(f"add {label}")
    if spec.disabled:
        work.edited.disable_peer(peer)
        return
    if work.device is not None:
        after = settings_of(peer)
        work.live.append(live_step_add(work.device, after, f"add peer {label}"))
        work.routes(after.allowed_ips, add=True)
        work.checks.append(live_peer_check(work.device, after))


def _change(host: Host, work: _PeerPlan, peer: Section, spec: PeerSpec) -> None:
    key = spec.public_key
    original, was_disabled = peer, peer.disabled  # its entries stay as read: see `before`
    changed: list[str] = []
    edited = work.edited
    if spec.name is not None and peer.name != spec.name:
        changed.append(f"name (was {peer.name or 'none'})")
        _rename(host, work, peer, spec.name)
    peer = _found(work, key)
    if spec.allowed_ips is not None and not _same_networks(peer, spec.allowed_ips):
        doomed = [item for item in peer.get_all("AllowedIPs")
                  if _canonical(item) not in spec.allowed_ips]
        edited.remove_list_items(peer, "AllowedIPs", doomed)
        have = {_canonical(item) for item in _found(work, key).get_all("AllowedIPs")}
        edited.add_list_items(_found(work, key), "AllowedIPs",
                              [item for item in spec.allowed_ips if item not in have])
        changed.append("allowed IPs")
    for value, config_key, what in ((spec.endpoint, "Endpoint", "endpoint"),
                                    (None if spec.keepalive is None else str(spec.keepalive),
                                     "PersistentKeepalive", "keepalive")):
        if value is not None and (_found(work, key).get(config_key) or "") != value:
            edited.set_value(_found(work, key), config_key, value)
            changed.append(what)
    if spec.disabled is not None and spec.disabled != was_disabled:
        if spec.disabled:
            edited.disable_peer(_found(work, key))
        else:
            from zsn.wireguard.expiry import check_not_expired

            check_not_expired(edited, _found(work, key), work.server.name, time.time())
            edited.enable_peer(_found(work, key))
        changed.append("disabled" if spec.disabled else "enabled")
    if not changed:
        return
    label = _label(spec, key)
    work.touched.add(key)
    work.said.append(f"{label}: {', '.join(changed)}")
    peer = _found(work, key)
    if work.device is None:
        return
    from zsn.wireguard.actions import (
        live_peer_check,
        live_step_add,
        live_step_remove,
        settings_of,
    )
    from zsn.wireguard.restore import peer_undo

    before, after = settings_of(original), settings_of(peer)
    if peer.disabled and not was_disabled:
        work.live.append(live_step_remove(work.device, before, f"remove peer {label}"))
        work.routes(before.allowed_ips, add=False)
    elif not peer.disabled and was_disabled:
        work.live.append(live_step_add(work.device, after, f"add peer {label}"))
        work.routes(after.allowed_ips, add=True)
        work.checks.append(live_peer_check(work.device, after))
    elif not peer.disabled and after != before:
        work.live.append(LiveStep(
            f"set peer {label} on running {work.device.name} (no restart)",
            partial(work.device.add_peer, after), partial(work.device.add_peer, before),
            (peer_undo(work.device.name, key, before),)))
        work.routes([n for n in before.allowed_ips if n not in after.allowed_ips], add=False)
        work.routes([n for n in after.allowed_ips if n not in before.allowed_ips], add=True)
        work.checks.append(live_peer_check(work.device, after))


def _same_networks(peer: Section, wanted: list[str]) -> bool:
    """Whether the peer's AllowedIPs are `wanted` (canonical): as written, most often
    (zsn writes them so), else once read as networks."""
    written = {item.strip() for item in peer.get_all("AllowedIPs")}
    return written == set(wanted) or set(_allowed(peer)) == set(wanted)


def _found(work: _PeerPlan, key: str) -> Section:
    """The peer with `key` in the config as edited so far (every edit re-indexes it)."""
    peer = work.peer(key)
    assert peer is not None
    return peer


def _canonical(item: str) -> str:
    try:
        return str(ipaddress.ip_network(item, strict=False))
    except ValueError:
        return item


def _rename(host: Host, work: _PeerPlan, peer: Section, name: str) -> None:
    from zsn.wireguard import acl

    other = work.edited.find_peer(name)
    if other is not None and other is not peer:
        raise ValidationError(f"{work.server.name} already has a peer named {name!r} "
                              "(with another key)")
    client = client_file(host, work.server.name, peer)
    if client is not None and files.exists(client):
        raise ValidationError(f"peer {peer.name} of {work.server.name} has a client config "
                              f"({client}): rename it with 'zsn peer rename "
                              f"{work.server.name} {peer.name} {name}', which moves it")
    acl.refuse_group_name(host, work.server.name, name)
    if peer.name:
        work.renamed[peer.name] = name
    work.edited.rename_peer(peer, name)


def _refuse_overlaps(work: _PeerPlan) -> None:
    """A peer added or changed may not share allowed IPs with another active peer: wg
    routes each address to one peer, the last one given it."""
    taken: list[tuple[ipaddress.IPv4Network | ipaddress.IPv6Network, Section]] = []
    for peer in work.edited.peers:
        for network in addressing.peer_networks(peer):
            for other_network, other in taken:
                if network.version == other_network.version and \
                        network.overlaps(other_network) and \
                        work.touched & {peer.get("PublicKey"), other.get("PublicKey")}:
                    raise ValidationError(f"{peer.label}'s {network} overlaps "
                                          f"{other_network} of {other.label} on "
                                          f"{work.server.name}")
            taken.append((network, peer))
