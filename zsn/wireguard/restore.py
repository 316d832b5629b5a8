"""Putting back what a tried WireGuard change did (restorers of `zsn.tries.undo`):
one peer of a running interface as it was, a route into an interface (an interface
up or down again: `zsn.wireguard.interfaces.WG_QUICK`).

Each compares first: a peer already as it was, an interface already down, a route
already gone is left alone. A peer's preshared key is in the change's record (0600,
like the config it came from) and never in the commands printed for an admin.
"""

from __future__ import annotations

import ipaddress
import re
from dataclasses import dataclass

from zsn.system import netlink
from zsn.system.host import Host
from zsn.tries import params as checked
from zsn.tries.undo import Outcome, Undo
from zsn.wireguard.device import PeerSettings, add_route, find_device, remove_route
from zsn.wireguard.keys import is_valid_key

_ENDPOINT_RE = re.compile(r"(?:\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9_.-]{1,253}):[0-9]{1,5}")


def _key(text: str, what: str) -> str:
    if not is_valid_key(text):
        raise ValueError(f"{what} is not a base64 WireGuard key")
    return text


@dataclass(frozen=True)
class PeerBefore:
    """A peer's live settings as they were."""

    preshared_key: str | None
    allowed_ips: tuple[str, ...]
    persistent_keepalive: int | None
    endpoint: str | None

    def __post_init__(self) -> None:
        if self.preshared_key is not None:
            _key(self.preshared_key, "preshared key")
        for network in self.allowed_ips:
            checked.network(network, "allowed IP")
        if self.persistent_keepalive is not None:
            checked.whole(self.persistent_keepalive, 0, 65535, "keepalive")
        if self.endpoint is not None and _ENDPOINT_RE.fullmatch(self.endpoint) is None:
            raise ValueError(f"endpoint {self.endpoint[:60]!r} is not host:port")

    def __repr__(self) -> str:  # the preshared key is a secret
        return f"PeerBefore(allowed_ips={self.allowed_ips!r})"


@dataclass(frozen=True)
class PeerUndo:
    """Peer `public_key` of the running `interface` as `before` (None: not there)."""

    interface: str
    public_key: str
    before: PeerBefore | None

    def __post_init__(self) -> None:
        checked.interface(self.interface)
        _key(self.public_key, "public key")

    @property
    def name(self) -> str:
        return f"wg-peer {self.interface} {self.public_key}"


def peer_undo(interface: str, public_key: str, before: PeerSettings | None) -> Undo:
    """Peer `public_key` of the running `interface` as `before` (None: not there)."""
    return Undo("wg-peer", PeerUndo(interface, public_key, None if before is None else
                                    PeerBefore(before.preshared_key, tuple(before.allowed_ips),
                                               before.persistent_keepalive, before.endpoint)))


@dataclass(frozen=True)
class RouteUndo:
    interface: str
    network: str
    present: bool

    def __post_init__(self) -> None:
        checked.interface(self.interface)
        checked.network(self.network)

    @property
    def name(self) -> str:
        return f"route {self.network} dev {self.interface}"


def route_undo(interface: str, network: str, present: bool) -> Undo:
    return Undo("wg-route", RouteUndo(interface, network, present))


class PeerRestorer:
    params = PeerUndo

    def describe(self, params: PeerUndo) -> str:
        key = params.public_key[:8]
        if params.before is None:
            return f"remove peer {key}… from {params.interface} (the change adds it)"
        return f"peer {key}… of {params.interface} as it was"

    def objects(self, params: PeerUndo) -> tuple[str, ...]:
        return (params.name,)

    def observe(self, host: Host, params: PeerUndo) -> dict[str, object]:
        """Whether the peer is there and the networks it is routed (what a restore sets;
        its endpoint roams by itself)."""
        device = find_device(host, params.interface)
        peer = None if device is None else next(
            (peer for peer in device.peers() if peer.public_key == params.public_key), None)
        return {params.name: None if peer is None else sorted(peer.allowed_ips)}

    def wanted(self, params: PeerUndo) -> dict[str, object]:
        before = params.before
        return {params.name: None if before is None else sorted(before.allowed_ips)}

    def restore(self, host: Host, params: PeerUndo, leave: frozenset[str],
                force: bool) -> Outcome:
        outcome = Outcome()
        if params.name in leave:
            return outcome
        name, key = params.interface, params.public_key
        device = find_device(host, name)
        if device is None:
            return outcome  # the interface is down: no live peer to put back
        live = {peer.public_key: peer for peer in device.peers()}
        before = params.before
        if before is None:
            if key in live:
                device.remove_peer(key)
                outcome.done.append(f"peer {key[:8]}… off {name}")
            return outcome
        settings = PeerSettings(key, before.preshared_key, before.allowed_ips,
                                before.persistent_keepalive, before.endpoint)
        current = live.get(key)
        if current is None or set(current.allowed_ips) != set(settings.allowed_ips):
            device.add_peer(settings)
            outcome.done.append(f"peer {key[:8]}… back on {name}")
        return outcome

    def commands(self, host: Host, params: PeerUndo) -> list[str]:
        name, key = params.interface, params.public_key
        before = params.before
        if before is None:
            return [f"wg set {name} peer {key} remove"]
        command = f"wg set {name} peer {key} allowed-ips {','.join(before.allowed_ips)}"
        if before.preshared_key:
            command += "  # and its preshared key, from the server config"
        return [command]


class RouteRestorer:
    params = RouteUndo

    def describe(self, params: RouteUndo) -> str:
        verb = "route" if params.present else "remove the route"
        return f"{verb} {params.network} dev {params.interface}"

    def objects(self, params: RouteUndo) -> tuple[str, ...]:
        return (params.name,)

    def observe(self, host: Host, params: RouteUndo) -> dict[str, object]:
        return {params.name: self._present(params)}

    def wanted(self, params: RouteUndo) -> dict[str, object]:
        return {params.name: params.present}

    @staticmethod
    def _present(params: RouteUndo) -> bool:
        wanted = ipaddress.ip_network(params.network, strict=False)
        return any(route.dst is not None and ipaddress.ip_network(
            f"{route.dst}/{route.dst_len}", strict=False) == wanted
            for route in netlink.read_routes({params.interface}))

    def restore(self, host: Host, params: RouteUndo, leave: frozenset[str],
                force: bool) -> Outcome:
        outcome = Outcome()
        if params.name in leave or self._present(params) == params.present:
            return outcome
        (add_route if params.present else remove_route)(params.interface, params.network)
        outcome.done.append(self.describe(params))
        return outcome

    def commands(self, host: Host, params: RouteUndo) -> list[str]:
        verb = "replace" if params.present else "del"
        return [f"ip route {verb} {params.network} dev {params.interface}"]


PEER = PeerRestorer()
ROUTE = RouteRestorer()
