"""Putting back what a tried WireGuard change did (restorers of `zsn.tries.undo`):
one peer of a running interface as it was, a route into an interface (an interface
up or down again: `zsn.wireguard.interfaces.WG_QUICK`).

Each compares first: a peer already as it was, an interface already down, a route
already gone is left alone. A peer's preshared key is in the change's record (0600,
like the config it came from) and never in the commands printed for an admin.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Mapping
from typing import Any

from zsn.system import netlink
from zsn.system.host import Host
from zsn.tries.undo import Outcome, Undo
from zsn.wireguard.device import PeerSettings, add_route, find_device, remove_route


def peer_undo(interface: str, public_key: str, before: PeerSettings | None) -> Undo:
    """Peer `public_key` of the running `interface` as `before` (None: not there)."""
    return Undo("wg-peer", {
        "interface": interface, "public_key": public_key,
        "before": None if before is None else {
            "preshared_key": before.preshared_key, "allowed_ips": list(before.allowed_ips),
            "persistent_keepalive": before.persistent_keepalive,
            "endpoint": before.endpoint}})


def route_undo(interface: str, network: str, present: bool) -> Undo:
    return Undo("wg-route", {"interface": interface, "network": network, "present": present})


class PeerRestorer:
    def describe(self, data: Mapping[str, Any]) -> str:
        key = str(data["public_key"])[:8]
        if data["before"] is None:
            return f"remove peer {key}… from {data['interface']} (the change adds it)"
        return f"peer {key}… of {data['interface']} as it was"

    def restore(self, host: Host, data: Mapping[str, Any]) -> Outcome:
        outcome = Outcome()
        name, key = str(data["interface"]), str(data["public_key"])
        device = find_device(host, name)
        if device is None:
            return outcome  # the interface is down: no live peer to put back
        live = {peer.public_key: peer for peer in device.peers()}
        before = data["before"]
        if before is None:
            if key in live:
                device.remove_peer(key)
                outcome.done.append(f"peer {key[:8]}… off {name}")
            return outcome
        settings = PeerSettings(key, before["preshared_key"], tuple(before["allowed_ips"]),
                                before["persistent_keepalive"], before["endpoint"])
        current = live.get(key)
        if current is None or set(current.allowed_ips) != set(settings.allowed_ips):
            device.add_peer(settings)
            outcome.done.append(f"peer {key[:8]}… back on {name}")
        return outcome

    def commands(self, data: Mapping[str, Any]) -> list[str]:
        name, key = data["interface"], data["public_key"]
        before = data["before"]
        if before is None:
            return [f"wg set {name} peer {key} remove"]
        command = f"wg set {name} peer {key} allowed-ips {','.join(before['allowed_ips'])}"
        if before["preshared_key"]:
            command += "  # and its preshared key, from the server config"
        return [command]


class RouteRestorer:
    def describe(self, data: Mapping[str, Any]) -> str:
        verb = "route" if data["present"] else "remove the route"
        return f"{verb} {data['network']} dev {data['interface']}"

    def restore(self, host: Host, data: Mapping[str, Any]) -> Outcome:
        outcome = Outcome()
        name, network = str(data["interface"]), str(data["network"])
        wanted = ipaddress.ip_network(network, strict=False)
        present = any(route.dst is not None and ipaddress.ip_network(
            f"{route.dst}/{route.dst_len}", strict=False) == wanted
            for route in netlink.read_routes({name}))
        if present == bool(data["present"]):
            return outcome
        (add_route if data["present"] else remove_route)(name, network)
        outcome.done.append(self.describe(data))
        return outcome

    def commands(self, data: Mapping[str, Any]) -> list[str]:
        verb = "replace" if data["present"] else "del"
        return [f"ip route {verb} {data['network']} dev {data['interface']}"]


PEER = PeerRestorer()
ROUTE = RouteRestorer()
