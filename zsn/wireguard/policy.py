"""WireGuard access rules as data: groups of peers, ordered allow/deny rules, a default,
and tests the policy must pass; read from and written to zsn's policy file, and
explained (which rule decides a packet) without the kernel.

The file (``/etc/wireguard/acl/IFACE.acl``) is zsn's own, written whole by `render`
and read back by `parse` before it is committed, in the style of the interface's
config: ``Key = value`` lines and ``#`` comments::

    Default = allow
    Group = kids: alice-phone, bob-tablet
    Rule = deny kids -> nas 445/tcp
    Rule = allow kids -> media
    Test = kids -> nas:445/tcp deny

A rule's FROM and TO (and a test's ends) are selectors: ``any``, an address or CIDR,
a group, a peer (all of its allowed IPs: its address and the networks behind it),
``behind:PEER`` (only the networks behind it) or a WireGuard interface (everything
routed through it: how client-to-client, ``IFACE -> IFACE``, and linked interfaces
are written). Rules are numbered from 1 in order; the first that matches decides.

`explain` computes a verdict from the policy and the interface's peers (`Peers`);
`zsn.wireguard.acl` compiles the same policy for nftables, and the lab checks that
the kernel decides every pair as `explain` says.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Iterable, Iterator, Mapping
from typing import TYPE_CHECKING, Literal, NamedTuple

from zsn.errors import ParseError, ValidationError, ZsnError
from zsn.system import files
from zsn.wireguard import addressing
from zsn.wireguard.config import PEER_NAME_RE, WIREGUARD_DIR, WgConfig, parse_shared

if TYPE_CHECKING:
    from pathlib import Path

    from zsn.system.host import Host

Verdict = Literal["allow", "deny"]
VERDICTS: tuple[Verdict, ...] = ("allow", "deny")
Protocol = Literal["tcp", "udp"]
IPNetwork = ipaddress.IPv4Network | ipaddress.IPv6Network

ACL_DIR = f"{WIREGUARD_DIR}/acl"
"""Where each interface's policy file (``IFACE.acl``) and the table a boot loads
(``IFACE.nft.json``) live."""
GROUP_NAME_RE = re.compile(r"[A-Za-z][A-Za-z0-9_-]{0,31}")
"""A group's name (it names nftables sets too): always used with fullmatch."""
BEHIND = "behind:"
ANY = "any"
MAX_GROUPS = 256
MAX_RULES = 1000
MAX_TESTS = 1000
MAX_MEMBERS = 20000
_PORT_RE = re.compile(r"(?P<port>[0-9]{1,5})(?:/(?P<proto>tcp|udp))?")
_CONTROL_RE = re.compile(r"[\x00-\x1f\x7f]")
_KEY_LINE_RE = re.compile(r"^\s*(?P<key>[A-Za-z]+)\s*=\s*(?P<value>.*?)\s*$")

SelectorKind = Literal["any", "network", "name", "behind"]


class Selector(NamedTuple):
    """One end of a rule or test, as written: what it names is found by `Peers.resolve`
    (a name may be a group, a peer or an interface)."""

    kind: SelectorKind
    value: str = ""
    """The network (canonical text) or the name; empty for ``any``."""

    def __str__(self) -> str:
        if self.kind == "any":
            return ANY
        if self.kind == "behind":
            return BEHIND + self.value
        return self.value


class Port(NamedTuple):
    number: int
    protocols: tuple[Protocol, ...]
    """``("tcp",)``, ``("udp",)`` or both (a port written without a protocol)."""

    def __str__(self) -> str:
        return str(self.number) if len(self.protocols) == 2 \
            else f"{self.number}/{self.protocols[0]}"


class Rule(NamedTuple):
    verdict: Verdict
    source: Selector
    destination: Selector
    port: Port | None = None

    def __str__(self) -> str:
        port = f" {self.port}" if self.port else ""
        return f"{self.verdict} {self.source} -> {self.destination}{port}"


class PolicyTest(NamedTuple):
    """A line the policy must pass: what `explain` must say of SRC -> DST[:PORT]."""

    source: Selector
    destination: Selector
    port: Port | None
    expected: Verdict

    def __str__(self) -> str:
        destination = str(self.destination)
        if self.port is not None:
            if self.destination.kind == "network" and ":" in destination:
                destination = f"[{destination}]"
            destination += f":{self.port.number}/{self.port.protocols[0]}"
        return f"{self.source} -> {destination} {self.expected}"


class Group(NamedTuple):
    name: str
    members: tuple[str, ...]
    """Peer names, in the order they were added."""


class Policy(NamedTuple):
    """An interface's access rules: what the policy file holds."""

    interface: str
    default: Verdict = "allow"
    """What decides a packet no rule matches. A new policy allows, as before it existed."""
    groups: tuple[Group, ...] = ()
    rules: tuple[Rule, ...] = ()
    tests: tuple[PolicyTest, ...] = ()

    def group(self, name: str) -> Group | None:
        return next((group for group in self.groups if group.name == name), None)

    def groups_of(self, peer: str) -> tuple[str, ...]:
        return tuple(group.name for group in self.groups if peer in group.members)

    def names(self) -> set[str]:
        """Every name a rule or test uses (groups, peers, interfaces)."""
        ends = [(rule.source, rule.destination) for rule in self.rules]
        ends += [(test.source, test.destination) for test in self.tests]
        return {selector.value for pair in ends for selector in pair
                if selector.kind in ("name", "behind")}


def policy_path(host: Host, interface: str) -> Path:
    addressing.check_interface_name(interface)
    return host.path(f"{ACL_DIR}/{interface}.acl")


def read_file(host: Host, interface: str) -> tuple[files.FileSnapshot, Policy] | None:
    """The interface's policy file as read and what it says; None when it has none.
    The one place zsn reads it back (its own state: every reader comes here)."""
    path = policy_path(host, interface)
    if not files.exists(path):
        return None
    snapshot = files.read_tracked(path)
    return snapshot, parse(snapshot.text, interface, str(path))


def compiled_path(host: Host, interface: str) -> Path:
    addressing.check_interface_name(interface)
    return host.path(f"{ACL_DIR}/{interface}.nft.json")


# -- reading what is typed -------------------------------------------------------


def check_group_name(name: str) -> str:
    if not GROUP_NAME_RE.fullmatch(name):
        raise ValidationError(f"group name {name!r} is not allowed: use letters, digits, "
                              "'_' and '-' (up to 32 characters, starting with a letter)")
    if name == ANY:
        raise ValidationError("'any' stands for every address: it cannot name a group")
    return name


def check_verdict(text: str) -> Verdict:
    for verdict in VERDICTS:
        if text == verdict:
            return verdict
    raise ValidationError(f"{text!r} is neither allow nor deny")


def parse_port(text: str, default_protocols: tuple[Protocol, ...] = ("tcp", "udp")) -> Port:
    """``443``, ``443/tcp`` or ``53/udp``; a port without a protocol is `default_protocols`."""
    match = _PORT_RE.fullmatch(text)
    if match is None:
        raise ValidationError(f"port {text!r} is not PORT, PORT/tcp or PORT/udp")
    number = int(match.group("port"))
    if not 1 <= number <= 65535:
        raise ValidationError(f"port {number} is outside 1-65535")
    proto = match.group("proto")
    protocols: tuple[Protocol, ...] = default_protocols
    if proto == "tcp":
        protocols = ("tcp",)
    elif proto == "udp":
        protocols = ("udp",)
    return Port(number, protocols)


def _network(text: str) -> IPNetwork | None:
    """`text` as an address or CIDR, None when it is not one; host bits are refused."""
    if "%" in text:
        raise ValidationError(f"{text!r} has an IPv6 scope id (%...): give a plain address")
    try:
        network = ipaddress.ip_network(text, strict=False)
    except ValueError:
        return None
    if "/" in text and ipaddress.ip_interface(text).ip != network.network_address:
        raise ValidationError(f"{text!r} has host bits set; did you mean {network}?")
    return network


def network_text(network: IPNetwork) -> str:
    """A network as written in the policy: a single host as its address."""
    if network.prefixlen == network.max_prefixlen:
        return str(network.network_address)
    return str(network)


def parse_selector(text: str) -> Selector:
    """``any``, an address or CIDR, ``behind:PEER`` or a name (group, peer, interface)."""
    if text == ANY:
        return Selector("any")
    if text.startswith("[") and text.endswith("]"):
        text = text[1:-1]  # an IPv6 address as written with a port: [fd00::9]
    if text.startswith(BEHIND):
        name = text[len(BEHIND):]
        _check_name(name, "peer")
        return Selector("behind", name)
    network = _network(text)
    if network is not None:
        return Selector("network", network_text(network))
    _check_name(text, "group, peer or interface")
    return Selector("name", text)


def _check_name(name: str, what: str) -> None:
    if not PEER_NAME_RE.fullmatch(name):
        raise ValidationError(f"{name!r} is not an address, a CIDR, 'any', 'behind:PEER' or "
                              f"the name of a {what} (names use letters, digits, "
                              "'.', '_', '@', '-')")


def parse_rule(verdict: str, source: str, destination: str, port: str | None) -> Rule:
    rule = Rule(check_verdict(verdict), parse_selector(source), parse_selector(destination),
                parse_port(port) if port else None)
    families = {_family(rule.source), _family(rule.destination)} - {None}
    if len(families) > 1:
        raise ValidationError(f"'{rule}' can never match: FROM and TO are of different "
                              "IP versions")
    return rule


def _family(selector: Selector) -> int | None:
    if selector.kind != "network":
        return None
    return ipaddress.ip_network(selector.value).version


def parse_rule_text(text: str) -> Rule:
    """``allow|deny FROM -> TO [PORT[/PROTO]]``."""
    words = text.split()
    if len(words) not in (4, 5) or words[2] != "->":
        raise ValidationError(f"{text!r} is not 'allow|deny FROM -> TO [PORT[/tcp|udp]]'")
    return parse_rule(words[0], words[1], words[3], words[4] if len(words) == 5 else None)


def parse_endpoint(text: str) -> tuple[Selector, Port | None]:
    """A test's or explain's destination with an optional port: ``nas``, ``nas:445/tcp``,
    ``10.0.0.9:445/tcp``, ``[fd00::9]:445/tcp`` (a port without a protocol is TCP)."""
    if text.startswith("["):
        inner, bracket, rest = text[1:].partition("]")
        if not bracket or (rest and not rest.startswith(":")):
            raise ValidationError(f"{text!r} is not [IPV6]:PORT/PROTO")
        selector = parse_selector(inner)
        return selector, parse_port(rest[1:], ("tcp",)) if rest else None
    if text.startswith(BEHIND) or _network(text) is not None or ":" not in text:
        head, port = text, None
        if text.startswith(BEHIND) and text.count(":") > 1:
            head, _, port = text.rpartition(":")
        return parse_selector(head), parse_port(port, ("tcp",)) if port else None
    head, _, port = text.rpartition(":")
    return parse_selector(head), parse_port(port, ("tcp",))


def parse_test_text(text: str) -> PolicyTest:
    """``SRC -> DST[:PORT/PROTO] allow|deny``."""
    words = text.split()
    if len(words) != 4 or words[1] != "->":
        raise ValidationError(f"{text!r} is not 'SRC -> DST[:PORT/PROTO] allow|deny'")
    destination, port = parse_endpoint(words[2])
    return PolicyTest(parse_selector(words[0]), destination, port, check_verdict(words[3]))


# -- the file ----------------------------------------------------------------------


def header(interface: str) -> str:
    return (f"# Access rules of {interface}, written by zsn: change them with `zsn wg acl`.\n"
            "# Rules are tried in order (numbered from 1); the first that matches decides,\n"
            "# Default decides the rest. Replies of an allowed connection always pass.\n"
            f"# Loaded into nftables (table inet zsn_{interface}) when {interface} comes up.\n")


def render(policy: Policy) -> str:
    """The policy file's text. Every value is checked as `parse` reads it, and the text
    is read back: a policy that would not read back the same is refused."""
    lines = [header(policy.interface), f"Default = {policy.default}", ""]
    lines.append("# Group = NAME: PEER, PEER ...")
    for group in policy.groups:
        check_group_name(group.name)
        for member in group.members:
            _check_name(member, "peer")
        lines.append(f"Group = {group.name}: {', '.join(group.members)}".rstrip())
    lines += ["", "# Rule = allow|deny FROM -> TO [PORT[/tcp|/udp]]"]
    lines += [f"Rule = {rule}" for rule in policy.rules]
    lines += ["", "# Test = SRC -> DST[:PORT/PROTO] allow|deny (checked on every change)"]
    lines += [f"Test = {test}" for test in policy.tests]
    text = "\n".join(lines) + "\n"
    if _CONTROL_RE.search(text.replace("\n", "")):
        raise ValidationError("a value of the policy holds a control character")
    again = parse(text, policy.interface, "the policy about to be written")
    if again != policy:
        raise ValidationError("the policy file zsn was about to write does not read back "
                              "as the policy it means; nothing was written")
    return text


def parse(text: str, interface: str, source: str) -> Policy:
    """The policy in `text` (zsn's file for `interface`); `ParseError` naming the line."""
    default: Verdict | None = None
    groups: dict[str, Group] = {}
    rules: list[Rule] = []
    tests: list[PolicyTest] = []
    members = 0
    for number, line in enumerate(text.split("\n"), start=1):
        stripped = line.strip(" \t\r")
        if not stripped or stripped.startswith("#"):
            continue
        if _CONTROL_RE.search(line.rstrip("\r")):
            raise ParseError("a control character", number, source)
        match = _KEY_LINE_RE.match(stripped)
        if match is None:
            raise ParseError(f"not 'Key = value': {stripped[:60]!r}", number, source)
        key, value = match.group("key").lower(), match.group("value")
        try:
            if key == "default":
                if default is not None:
                    raise ValidationError("a second Default line")
                default = check_verdict(value)
            elif key == "group":
                group = _group_line(value)
                if group.name in groups:
                    raise ValidationError(f"a second line for group {group.name!r}")
                members += len(group.members)
                if len(groups) >= MAX_GROUPS or members > MAX_MEMBERS:
                    raise ValidationError(f"more than {MAX_GROUPS} groups or {MAX_MEMBERS} "
                                          "members")
                groups[group.name] = group
            elif key == "rule":
                if len(rules) >= MAX_RULES:
                    raise ValidationError(f"more than {MAX_RULES} rules")
                rules.append(parse_rule_text(value))
            elif key == "test":
                if len(tests) >= MAX_TESTS:
                    raise ValidationError(f"more than {MAX_TESTS} tests")
                tests.append(parse_test_text(value))
            else:
                raise ValidationError(f"unknown key {match.group('key')!r} (known: Default, "
                                      "Group, Rule, Test)")
        except ValidationError as exc:
            raise ParseError(str(exc), number, source) from None
    return Policy(interface, default or "allow", tuple(groups.values()), tuple(rules),
                  tuple(tests))


def _group_line(value: str) -> Group:
    name, colon, rest = value.partition(":")
    if not colon:
        raise ValidationError(f"{value[:60]!r} is not 'NAME: PEER, PEER ...'")
    members = [member.strip() for member in rest.split(",")] if rest.strip() else []
    for member in members:
        _check_name(member, "peer")
    if len(set(members)) != len(members):
        raise ValidationError(f"group {name.strip()!r} lists a peer twice")
    return Group(check_group_name(name.strip()), tuple(members))


# -- what the names stand for ----------------------------------------------------

Where = Literal["group", "peer", "behind", "interface", "network", "any"]


class Resolved(NamedTuple):
    """What a selector stands for on one interface."""

    kind: Where
    name: str
    networks: tuple[IPNetwork, ...]
    """The addresses it covers (for an interface: everything routed through it)."""


class Peers(NamedTuple):
    """What an interface's config says the names stand for: enough to compile and to
    explain a policy without reading anything else."""

    interface: str
    own: tuple[IPNetwork, ...]
    """The interface's own subnets."""
    peers: Mapping[str, tuple[IPNetwork, ...]]
    """Allowed IPs of each named active peer (a disabled peer is not on the device)."""
    disabled: frozenset[str] = frozenset()
    """Names of peers the config keeps disabled: they exist but cover nothing now."""
    interfaces: Mapping[str, tuple[IPNetwork, ...]] = {}
    """Other WireGuard interfaces of this host: everything routed through each."""
    local: tuple[IPNetwork, ...] = ()
    """The server's own addresses on the interface (traffic to them is not forwarded)."""

    def networks_behind(self, name: str) -> tuple[IPNetwork, ...]:
        return tuple(network for network in self.peers.get(name, ())
                     if not any(network.version == own.version
                                and network.subnet_of(own)  # type: ignore[arg-type]
                                for own in self.own))

    def routed(self) -> tuple[IPNetwork, ...]:
        """Everything routed through this interface: its subnets and its peers' networks."""
        found = list(self.own)
        for networks in self.peers.values():
            found.extend(networks)
        return tuple(found)

    def resolve(self, selector: Selector, policy: Policy) -> Resolved:
        """What `selector` stands for; `ValidationError` for a name nothing has."""
        if selector.kind == "any":
            return Resolved("any", ANY, ())
        if selector.kind == "network":
            return Resolved("network", selector.value,
                            (ipaddress.ip_network(selector.value),))
        name = selector.value
        if selector.kind == "behind":
            if name not in self.peers and name not in self.disabled:
                raise ValidationError(f"{self.interface} has no peer named {name!r}")
            return Resolved("behind", name, self.networks_behind(name))
        group = policy.group(name)
        if group is not None:
            networks: list[IPNetwork] = []
            for member in group.members:
                networks.extend(self.peers.get(member, ()))
            return Resolved("group", name, tuple(networks))
        if name in self.peers or name in self.disabled:
            return Resolved("peer", name, self.peers.get(name, ()))
        if name == self.interface:
            return Resolved("interface", name, self.routed())
        if name in self.interfaces:
            return Resolved("interface", name, self.interfaces[name])
        raise ValidationError(f"{name!r} is no group, peer or WireGuard interface of "
                              f"{self.interface}")


def _overlaps(network: IPNetwork, networks: Iterable[IPNetwork]) -> bool:
    return any(network.version == outer.version and network.overlaps(outer)
               for outer in networks)


def check_policy(policy: Policy, peers: Peers) -> None:
    """Refuse a policy whose rules or tests name what the interface does not have."""
    named = [(f"rule {number} ({rule})", rule.source, rule.destination)
             for number, rule in enumerate(policy.rules, start=1)]
    named += [(f"test {number} ({test})", test.source, test.destination)
              for number, test in enumerate(policy.tests, start=1)]
    for what, *ends in named:
        for selector in ends:
            try:
                peers.resolve(selector, policy)
            except ValidationError as exc:
                raise ValidationError(f"{what}: {exc}") from None
    known = set(peers.peers) | peers.disabled
    for group in policy.groups:
        if group.name in known:
            raise ValidationError(f"group {group.name!r} has the name of a peer of "
                                  f"{policy.interface}")
        missing = [member for member in group.members if member not in known]
        if missing:
            raise ValidationError(f"group {group.name!r}: {policy.interface} has no peer "
                                  f"named {missing[0]!r}")


def peers_of(host: Host, interface: str, config: WgConfig) -> Peers:
    """What the names of `interface`'s policy stand for, from its config (and the
    other interfaces' configs, for rules naming them)."""
    own = tuple(address.network for address in addressing.interface_addresses(config))
    peers: dict[str, tuple[IPNetwork, ...]] = {}
    disabled: set[str] = set()
    for peer in config.all_peers:
        name = peer.name
        if not name or not PEER_NAME_RE.fullmatch(name):
            continue
        if peer.disabled:
            disabled.add(name)
        else:
            peers[name] = tuple(addressing.peer_networks(peer))
    local = tuple(ipaddress.ip_network(address.ip)
                  for address in addressing.interface_addresses(config))
    return Peers(interface, own, peers, frozenset(disabled - set(peers)),
                 _other_interfaces(host, interface), local)


def _other_interfaces(host: Host, interface: str) -> dict[str, tuple[IPNetwork, ...]]:
    found: dict[str, tuple[IPNetwork, ...]] = {}
    try:
        paths = files.list_files(host.path(WIREGUARD_DIR), "*.conf")
    except ZsnError:
        return found
    for path in paths:
        if path.stem == interface:
            continue
        try:
            other = parse_shared(files.read_tracked(path).text, str(path))
        except ZsnError:
            continue  # lint reports a config it cannot read
        networks = [address.network for address in addressing.interface_addresses(other)]
        for peer in other.peers:
            networks.extend(addressing.peer_networks(peer))
        found[path.stem] = tuple(networks)
    return found


# -- explain -----------------------------------------------------------------------


class Decision(NamedTuple):
    """The verdict for traffic from one network to another, and what decided it."""

    verdict: Verdict | None
    """None: the policy does not judge it (neither end is routed through the interface),
    or (`partly`) different addresses of it get different verdicts."""
    rule: int | None
    """The deciding rule's number; None for the default (or no verdict)."""
    source: IPNetwork
    destination: IPNetwork
    partly: bool = False
    """Only part of the networks matches the deciding rule: no one verdict for all."""
    aside: str = ""
    """Why the policy does not judge it (verdict None, not `partly`)."""

    def describe(self, policy: Policy) -> str:
        pair = f"{network_text(self.source)} -> {network_text(self.destination)}"
        if self.partly:
            rule = policy.rules[self.rule - 1] if self.rule else None
            return f"{pair}: mixed (rule {self.rule}, '{rule}', matches only part of it)"
        if self.verdict is None:
            return f"{pair}: not judged ({self.aside})"
        if self.rule is None:
            return f"{pair}: {self.verdict} by the default"
        return f"{pair}: {self.verdict} by rule {self.rule} ({policy.rules[self.rule - 1]})"


Relation = Literal["all", "some", "none"]
_Key = tuple[int, int, int]
"""A network as (IP version, first address as a number, prefix length)."""


def _key(network: IPNetwork) -> _Key:
    return network.version, int(network.network_address), network.prefixlen


def _supernets(network: IPNetwork) -> Iterator[_Key]:
    """`network` and every network that holds it, narrowest first, as keys."""
    bits = network.max_prefixlen
    address = int(network.network_address)
    for prefix in range(network.prefixlen, -1, -1):
        yield network.version, address & (((1 << prefix) - 1) << (bits - prefix)), prefix


class Judge:
    """Decides packets for one policy on one interface: where each network is routed
    and what each rule's ends cover are indexed once (a config has thousands of
    peers; a lookup walks a network's 33 or 129 supernets, never the peers)."""

    def __init__(self, policy: Policy, peers: Peers) -> None:
        self.policy, self.peers = policy, peers
        self.owners: dict[_Key, tuple[str, str | None]] = {}
        for name, networks in peers.interfaces.items():
            for network in networks:
                self.owners.setdefault(_key(network), (name, None))
        for network in peers.own:
            self.owners[_key(network)] = (peers.interface, None)
        for peer, networks in peers.peers.items():
            for network in networks:
                self.owners[_key(network)] = (peers.interface, peer)
        self.local = {_key(network) for network in peers.local}
        self.resolved = {selector: peers.resolve(selector, policy)
                         for rule in policy.rules
                         for selector in (rule.source, rule.destination)}
        self.covered = {selector: {_key(network) for network in resolved.networks}
                        for selector, resolved in self.resolved.items()}

    def _owners(self, network: IPNetwork) -> Iterator[tuple[str, str | None]]:
        for key in _supernets(network):
            found = self.owners.get(key)
            if found is not None:
                yield found

    def interface_of(self, network: IPNetwork) -> str | None:
        """The WireGuard interface `network` is routed through (None: elsewhere)."""
        return next((interface for interface, _peer in self._owners(network)), None)

    def peer_of(self, network: IPNetwork) -> str | None:
        """The peer of this interface whose allowed IPs hold all of `network`."""
        return next((peer for interface, peer in self._owners(network)
                     if peer is not None and interface == self.peers.interface), None)

    def _side(self, selector: Selector, network: IPNetwork,
              interface: str | None) -> Relation:
        resolved = self.resolved[selector]
        if resolved.kind == "any":
            return "all"
        if resolved.kind == "interface":
            # The kernel matches the interface a packet came in or goes out by.
            return "all" if interface == resolved.name else "none"
        covered = self.covered[selector]
        if any(key in covered for key in _supernets(network)):
            return "all"
        wider = network.prefixlen < network.max_prefixlen
        return "some" if wider and _overlaps(network, resolved.networks) else "none"

    def decide(self, source: IPNetwork, destination: IPNetwork, protocol: Protocol | None,
               port: int | None) -> Decision:
        """What the policy does to traffic from `source` to `destination` (a port of
        `protocol`, or no port: ping, or a port no rule names)."""
        interface = self.peers.interface
        source_if, destination_if = self.interface_of(source), self.interface_of(destination)
        if interface not in (source_if, destination_if):
            return Decision(None, None, source, destination,
                            aside=f"neither end is routed through {interface}")
        if any(key in self.local for end in (source, destination) for key in _supernets(end)):
            return Decision(None, None, source, destination,
                            aside="traffic to or from the server itself is not forwarded")
        behind = self.peer_of(source)
        if behind is not None and behind == self.peer_of(destination):
            return Decision(None, None, source, destination,
                            aside=f"both ends are behind peer {behind}: their traffic does "
                                  "not cross the server")
        for number, rule in enumerate(self.policy.rules, start=1):
            if rule.port is not None and (port != rule.port.number
                                          or protocol not in rule.port.protocols):
                continue
            ends = (self._side(rule.source, source, source_if),
                    self._side(rule.destination, destination, destination_if))
            if "none" in ends:
                continue
            if "some" in ends:
                return Decision(None, number, source, destination, partly=True)
            return Decision(rule.verdict, number, source, destination)
        return Decision(self.policy.default, None, source, destination)


def decide(policy: Policy, peers: Peers, source: IPNetwork, destination: IPNetwork,
           protocol: Protocol | None, port: int | None) -> Decision:
    """`Judge.decide` for one pair."""
    return Judge(policy, peers).decide(source, destination, protocol, port)


class NoAddressError(ValidationError):
    """A test's or explain's end covers no address now: a disabled peer, an empty group."""


def endpoints(selector: Selector, policy: Policy, peers: Peers) -> tuple[IPNetwork, ...]:
    """The networks an explain or test end stands for (each judged on its own)."""
    resolved = peers.resolve(selector, policy)
    if resolved.kind == "any":
        return (ipaddress.ip_network("0.0.0.0/0"), ipaddress.ip_network("::/0"))
    if resolved.kind == "interface":
        return resolved.networks
    if not resolved.networks:
        raise NoAddressError(f"{selector} covers no address now (a disabled peer, or a "
                             "group of none)")
    return resolved.networks


def explain(policy: Policy, peers: Peers, source: Selector, destination: Selector,
            port: Port | None, judge: Judge | None = None) -> list[Decision]:
    """The decision for every pair of networks `source` and `destination` stand for (of
    the same IP version)."""
    judge = judge or Judge(policy, peers)
    protocol = port.protocols[0] if port else None
    number = port.number if port else None
    decisions = []
    for src in endpoints(source, policy, peers):
        for dst in endpoints(destination, policy, peers):
            if src.version == dst.version:
                decisions.append(judge.decide(src, dst, protocol, number))
    if not decisions:
        raise ValidationError(f"{source} and {destination} share no IP version")
    return decisions


class TestResult(NamedTuple):
    failure: str | None
    """Why the test fails (None: it passes)."""
    note: str | None = None
    """Why it passes without judging anything (an end that covers no address now)."""


def run_test(policy: Policy, peers: Peers, test: PolicyTest, number: int,
             judge: Judge | None = None) -> TestResult:
    try:
        decisions = explain(policy, peers, test.source, test.destination, test.port, judge)
    except NoAddressError as exc:
        return TestResult(None, str(exc))
    except ValidationError as exc:
        return TestResult(f"test {number} ({test}): {exc}")
    # A pair the server never forwards (a peer to itself, both ends behind one peer)
    # is no case of the test, unless no pair is judged at all.
    judged = [d for d in decisions if d.verdict is not None or d.partly] or decisions
    wrong = [decision for decision in judged if decision.verdict != test.expected]
    if wrong:
        return TestResult(f"test {number} ({test}) fails: {wrong[0].describe(policy)}")
    return TestResult(None)


def failing_tests(policy: Policy, peers: Peers) -> list[str]:
    """Each test the policy does not pass, with what `explain` says instead (a test
    whose end covers no address now judges nothing and is not counted)."""
    if not policy.tests:
        return []
    judge = Judge(policy, peers)
    results = (run_test(policy, peers, test, number, judge)
               for number, test in enumerate(policy.tests, start=1))
    return [result.failure for result in results if result.failure is not None]
