"""Checking user input for WireGuard (names, ports, CIDRs, endpoints) and handing out addresses.

Every check raises `ValidationError` with a message that names the field and says
what is wrong, before anything is changed.
"""

from __future__ import annotations

import ipaddress
import re
import socket
from collections.abc import Iterable
from typing import NamedTuple

from zsn.errors import ValidationError
from zsn.wireguard.config import Section, WgConfig

IPInterface = ipaddress.IPv4Interface | ipaddress.IPv6Interface
IPNetwork = ipaddress.IPv4Network | ipaddress.IPv6Network
IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address

# wg-quick's own rule for interface names (it derives the name from the file name).
# Every pattern is used with fullmatch: "$" would also match before a final newline.
_IFACE_RE = re.compile(r"[a-zA-Z0-9_=+.-]{1,15}")
_HOSTNAME_RE = re.compile(
    r"(?=.{1,253}\Z)([A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?)"
    r"(\.[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*\.?"
)
BLANKS = " \t"
"""What is trimmed from typed values: spaces and tabs, never a newline."""


_NUMERIC_RE = re.compile(r"[0-9.]+|.*:.*")
"""What wg-quick takes for a DNS server rather than a search domain."""


def _refuse_scope(text: str, what: str) -> None:
    # Python's ipaddress takes "fd77::9%eth0"; wg, ip(8) and every client refuse it.
    if "%" in text:
        raise ValidationError(f"{what} {text!r} has an IPv6 scope id (%...): WireGuard "
                              "configs take plain addresses")


def check_interface_name(name: str) -> str:
    if not name:
        raise ValidationError("interface name is empty")
    if len(name) > 15:
        raise ValidationError(f"interface name {name!r} is longer than 15 characters")
    if not _IFACE_RE.fullmatch(name) or name in (".", ".."):
        raise ValidationError(
            f"interface name {name!r} may only use letters, digits and _ = + . -"
        )
    return name


def check_port(value: str | int, what: str = "listen port") -> int:
    try:
        port = int(value)
    except (TypeError, ValueError):
        raise ValidationError(f"{what} {value!r} is not a number") from None
    if not 1 <= port <= 65535:
        raise ValidationError(f"{what} {port} is outside 1-65535")
    return port


def check_keepalive(value: str | int) -> int:
    try:
        seconds = int(value)
    except (TypeError, ValueError):
        raise ValidationError(f"keepalive {value!r} is not a number of seconds") from None
    if not 0 <= seconds <= 65535:
        raise ValidationError(f"keepalive {seconds} is outside 0-65535 seconds")
    return seconds


def check_interface_address(text: str) -> IPInterface:
    """An interface address with prefix, e.g. ``10.0.0.1/24`` (host bits required)."""
    _refuse_scope(text, "address")
    try:
        iface = ipaddress.ip_interface(text.strip())
    except ValueError:
        raise ValidationError(f"address {text!r} is not an IP address with /prefix") from None
    if "/" not in text:
        raise ValidationError(f"address {text!r} needs a /prefix (e.g. {text}/24)")
    if iface.ip == iface.network.network_address and iface.network.num_addresses > 2:
        raise ValidationError(f"address {text!r} is the network address; use a host (e.g. .1)")
    return iface


def check_network(text: str, what: str = "subnet") -> IPNetwork:
    """A network in CIDR form, e.g. ``192.168.50.0/24`` (no host bits)."""
    _refuse_scope(text, what)
    try:
        network = ipaddress.ip_network(text.strip(), strict=False)
    except ValueError:
        raise ValidationError(f"{what} {text!r} is not a CIDR network (e.g. 10.1.0.0/24)")\
            from None
    if ipaddress.ip_interface(text.strip()).ip != network.network_address:
        raise ValidationError(f"{what} {text!r} has host bits set; did you mean {network}?")
    return network


def check_ip(text: str, what: str = "address") -> IPAddress:
    _refuse_scope(text, what)
    try:
        return ipaddress.ip_address(text.strip())
    except ValueError:
        raise ValidationError(f"{what} {text!r} is not an IP address") from None


def check_dns(text: str) -> str:
    """A DNS server (IP) or search domain, as wg-quick's ``DNS =`` accepts.

    wg-quick takes digits and dots, or anything with a colon, for a server: such a
    value must be an IP address (``.....`` or ``10.1`` is not a search domain).
    """
    value = text.strip(BLANKS)
    if _NUMERIC_RE.fullmatch(value) or "%" in value:
        return str(check_ip(value, "DNS server"))
    if not _HOSTNAME_RE.fullmatch(value):
        raise ValidationError(f"DNS entry {text!r} is neither an IP address nor a domain")
    return value


def check_endpoint_host(text: str) -> str:
    """A public address or hostname clients use to reach the server."""
    value = text.strip(BLANKS)
    try:  # dotted IPv4 (most endpoints): inet_pton takes only the form ipaddress writes
        socket.inet_pton(socket.AF_INET, value)
        return value
    except (OSError, ValueError):
        pass
    if value.startswith("[") and value.endswith("]"):
        value = value[1:-1]
    _refuse_scope(value, "endpoint")
    try:
        return str(ipaddress.ip_address(value))
    except ValueError:
        pass
    if not _HOSTNAME_RE.fullmatch(value):
        raise ValidationError(f"endpoint {text!r} is neither an IP address nor a hostname")
    return value


def format_endpoint(host: str, port: int) -> str:
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


def interface_addresses(config: WgConfig) -> list[IPInterface]:
    """The addresses of the config's ``[Interface]`` (``Address =``), parsed."""
    interface = config.interface
    if interface is None:
        return []
    found: list[IPInterface] = []
    for item in interface.get_all("Address"):
        try:
            found.append(ipaddress.ip_interface(item))
        except ValueError:
            continue  # lint reports it; addressing ignores what it cannot read
    return found


def peer_networks(peer: Section) -> list[IPNetwork]:
    found: list[IPNetwork] = []
    for item in peer.get_all("AllowedIPs"):
        network = _network(item)
        if network is not None:
            found.append(network)
    return found


def _network(text: str) -> IPNetwork | None:
    """`ipaddress.ip_network(text, strict=False)`, or None; dotted IPv4 (nearly every
    peer's) is made from its span, eight times faster than ipaddress parses it, so a
    policy over a thousand peers is compiled in milliseconds."""
    span = network_span(text)
    if span is None:
        return None
    version, first, _, length = span
    if version == 4:
        return ipaddress.IPv4Network((first, length))
    return ipaddress.IPv6Network((first, length))  # the span parsed it once already


LiveOnlyPeers = Iterable[tuple[str, Iterable[str]]]
"""Peers on the running interface that its config does not list: (label, allowed IPs)."""


class _Taken:
    """Addresses in use: single hosts in a set (fast with thousands of peers), wider
    networks (routed subnets) in a list.

    Only hosts are taken: a peer whose AllowedIPs cover a whole network (a stale
    ``10.66.0.0/24`` on the server) does not own every address in it; a new peer's
    narrower entry wins for its own address, and the overlap is warned about.
    """

    def __init__(self, config: WgConfig, live_only: LiveOnlyPeers = ()) -> None:
        # Disabled peers keep their addresses: enabling one again must not collide.
        self.hosts: dict[IPAddress, str] = {
            addr.ip: "the server itself" for addr in interface_addresses(config)}
        self.networks: list[tuple[IPNetwork, str]] = []
        for peer in config.all_peers:
            for network in peer_networks(peer):
                if network.prefixlen == network.max_prefixlen:
                    self.hosts.setdefault(network.network_address, peer.label)
                else:
                    self.networks.append((network, peer.label))
        # A peer added with `wg set` but never saved still owns its addresses:
        # WireGuard would silently move them to the new peer.
        for label, allowed in live_only:
            for item in allowed:
                try:
                    network = ipaddress.ip_network(item, strict=False)
                except ValueError:
                    continue
                if network.prefixlen == network.max_prefixlen:
                    self.hosts.setdefault(network.network_address, label)
                else:
                    self.networks.append((network, label))

    def owner(self, address: IPAddress) -> str | None:
        """Who holds `address` itself (the server, or a peer's /32 or /128)."""
        return self.hosts.get(address)

    def overlaps(self, addresses: Iterable[IPAddress]) -> tuple[str, ...]:
        """A warning for each network a peer routes that includes one of `addresses`."""
        warnings = []
        for network, owner in self.networks:
            inside = [a for a in addresses if a.version == network.version and a in network]
            if inside:
                shown = ", ".join(map(str, inside))
                warnings.append(
                    f"{owner} routes {network}, which includes {shown}: the new peer's "
                    f"narrower entry wins for {shown}, the rest of {network} still goes to "
                    f"{owner} (AllowedIPs overlap, lint WG001: narrow or remove that entry)")
        return tuple(warnings)


class PeerAddress(NamedTuple):
    """The tunnel addresses of one client: IPv4 and/or IPv6, each a single host."""

    addresses: tuple[IPAddress, ...]
    warnings: tuple[str, ...] = ()
    """Networks other peers route that include these addresses (overlaps, lint WG001)."""
    notes: tuple[str, ...] = ()
    """Which range an address came from, when the interface has several of its family
    and an earlier one had no room."""

    def host_routes(self) -> list[str]:
        return [f"{a}/{a.max_prefixlen}" for a in self.addresses]


_CANDIDATES = 65536
"""Hosts looked at per range: a /16 at most (a /64 would never end)."""


def _ranges(addresses: list[IPInterface]) -> dict[int, list[IPInterface]]:
    """The interface's ranges by IP version, versions in the order the config names
    them first, ranges in config order."""
    found: dict[int, list[IPInterface]] = {}
    for address in addresses:
        found.setdefault(address.version, []).append(address)
    return found


def _in_range(rng: IPInterface, number: int) -> IPAddress | None:
    """Host `number` of `rng` (counted from its network address), if it has one."""
    value = int(rng.network.network_address) + number
    if number < 0 or value > int(rng.network.broadcast_address):
        return None
    address = ipaddress.ip_address(value)
    if rng.network.num_addresses > 2 and address in (rng.network.network_address,
                                                     rng.network.broadcast_address):
        return None
    return address


def _first_free(ranges: list[IPInterface], taken: _Taken
                ) -> tuple[IPAddress, IPInterface] | None:
    """The lowest free host of the first range that has one."""
    for rng in ranges:
        for offset, host in enumerate(rng.network.hosts(), start=1):
            if offset > _CANDIDATES:
                break
            candidate = ipaddress.ip_address(int(host))
            if taken.owner(candidate) is None:
                return candidate, rng
    return None


def _full(ranges: list[IPInterface]) -> str:
    return ", ".join(str(r) for r in ranges)


def _from_range(address: IPAddress, rng: IPInterface, ranges: list[IPInterface]) -> str | None:
    """A note naming the range `address` came from, when an earlier one was passed over."""
    if rng is ranges[0]:
        return None
    return (f"{address} is from {rng} ({_full(ranges[:ranges.index(rng)])} has no free "
            "address)")


def _twin(number: int, ranges: list[IPInterface], taken: _Taken
          ) -> tuple[IPAddress, IPInterface]:
    """The other family's address: host `number` of its first range that has it free
    (10.0.0.5 and fd00::5 go together), else that family's first free host."""
    for rng in ranges:
        address = _in_range(rng, number)
        if address is not None and taken.owner(address) is None:
            return address, rng
    found = _first_free(ranges, taken)
    if found is None:
        raise ValidationError(f"no free address left in {_full(ranges)}")
    return found


def _with_twins(address: IPAddress, rng: IPInterface, ranges: dict[int, list[IPInterface]],
                taken: _Taken, picked: bool = True) -> PeerAddress:
    """`address` (from `rng`; `picked` by zsn, not typed) and an address of every other
    family of the interface."""
    chosen = [address]
    notes = [note for note in [_from_range(address, rng, ranges[address.version])]
             if note and picked]
    number = int(address) - int(rng.network.network_address)
    for version, others in ranges.items():
        if version == address.version:
            continue
        twin, twin_range = _twin(number, others, taken)
        chosen.append(twin)
        notes.extend(note for note in [_from_range(twin, twin_range, others)] if note)
    return PeerAddress(tuple(chosen), taken.overlaps(chosen), tuple(notes))


def next_free_address(config: WgConfig, live_only: LiveOnlyPeers = ()) -> PeerAddress:
    """The lowest free host of the interface's first range with room, in the family of
    its first address, and an address in each other family (the same host number where
    that is free). With several ranges of one family (``10.8.0.2/32, 10.7.0.1/24``),
    a full one is passed over and the notes say which range was used."""
    addresses = interface_addresses(config)
    if not addresses:
        raise ValidationError("the interface has no Address; cannot pick a peer address")
    taken = _Taken(config, live_only)
    ranges = _ranges(addresses)
    primary = ranges[addresses[0].version]
    found = _first_free(primary, taken)
    if found is None:
        raise ValidationError(f"no free address left in {_full(primary)}")
    return _with_twins(*found, ranges, taken)


Span = tuple[int, int, int, int]
"""(IP version, first address, last address, prefix length) as integers."""


def network_span(text: str) -> Span | None:
    """The span of a CIDR such as ``10.0.0.2/32``; ``None`` when it is not one.

    Dotted IPv4 takes a short path through `socket.inet_pton` (which takes exactly
    four decimal octets up to 255, without leading zeros): configs hold thousands of
    these and `ipaddress` objects cost tens of microseconds each.
    """
    address, _, prefix = text.strip().partition("/")
    if not prefix or prefix.isdigit():
        try:
            packed = socket.inet_pton(socket.AF_INET, address)
        except (OSError, ValueError):
            pass
        else:
            length = int(prefix) if prefix else 32
            if length > 32:
                return None
            host_bits = 32 - length
            first = int.from_bytes(packed) >> host_bits << host_bits
            return 4, first, first | ((1 << host_bits) - 1), length
    try:
        network = ipaddress.ip_network(text.strip(), strict=False)
    except ValueError:
        return None
    return (network.version, int(network.network_address), int(network.broadcast_address),
            network.prefixlen)


def check_peer_address(config: WgConfig, text: str, live_only: LiveOnlyPeers = ()
                       ) -> PeerAddress:
    """A user-given peer address: inside the interface subnet, not the network, not taken.

    ``10.0.0.7`` picks IPv4 (the IPv6 twin is derived when the interface has IPv6);
    several addresses may be given comma-separated.
    """
    wanted = [part.strip() for part in text.split(",") if part.strip()]
    if not wanted:
        raise ValidationError("peer address is empty")
    networks = interface_addresses(config)
    if not networks:
        raise ValidationError("the interface has no Address; cannot place a peer in it")
    taken = _Taken(config, live_only)
    ranges = _ranges(networks)
    chosen: list[tuple[IPAddress, IPInterface]] = []
    for item in wanted:
        if "/" in item:
            _refuse_scope(item, "peer address")
            try:
                iface = ipaddress.ip_interface(item)
            except ValueError:
                raise ValidationError(f"peer address {item!r} is not an IP address") from None
            if iface.network.prefixlen != iface.max_prefixlen:
                raise ValidationError(
                    f"peer address {item!r} must be a single host (/{iface.max_prefixlen})"
                )
            address: IPAddress = iface.ip
        else:
            address = check_ip(item, "peer address")
        inside = [n for n in networks if n.version == address.version and address in n.network]
        if not inside:
            subnets = ", ".join(str(n.network) for n in networks)
            raise ValidationError(f"peer address {address} is outside the interface subnet "
                                  f"({subnets})")
        network = inside[0].network
        if network.num_addresses > 2 and address in (network.network_address,
                                                     network.broadcast_address):
            raise ValidationError(f"peer address {address} is the network or broadcast address "
                                  f"of {network}")
        owner = taken.owner(address)
        if owner is not None:
            raise ValidationError(f"peer address {address} is already used by {owner}")
        chosen.append((address, inside[0]))
    if len(chosen) == 1 and chosen[0][0].version == networks[0].version:
        # The first family given: the others are derived (the same host number if free).
        return _with_twins(*chosen[0], ranges, taken, picked=False)
    addresses = [a for a, _range in chosen]
    return PeerAddress(tuple(addresses), taken.overlaps(addresses))


def check_allowed_networks(items: Iterable[str], what: str = "routed subnet") -> list[str]:
    return [str(check_network(item, what)) for item in items]
