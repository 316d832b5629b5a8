"""Changing a running WireGuard interface without restarting it.

Userspace interfaces (wireguard-go, boringtun) are changed through their UAPI
socket, kernel ones through generic netlink (pyroute2 `WireGuard`). Adding or
removing one peer never touches the other peers' sessions.
"""

from __future__ import annotations

import ipaddress
import socket
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from zsn.errors import ZsnError
from zsn.system import netlink
from zsn.system.host import Host
from zsn.wireguard import kernel, uapi
from zsn.wireguard.addressing import format_endpoint
from zsn.wireguard.keys import base64_to_hex
from zsn.wireguard.model import DeviceState, PeerState


@dataclass(frozen=True)
class PeerSettings:
    """What zsn puts on a live interface for one peer."""

    public_key: str
    preshared_key: str | None
    allowed_ips: tuple[str, ...]
    persistent_keepalive: int | None = None
    endpoint: str | None = None

    def __repr__(self) -> str:  # the preshared key is a secret
        return f"PeerSettings(public_key={self.public_key!r}, allowed_ips={self.allowed_ips!r})"


@dataclass(frozen=True)
class LiveDevice:
    name: str
    implementation: Literal["kernel", "userspace"]
    socket: Path | None = None

    def peers(self) -> tuple[PeerState, ...]:
        """The peers the running interface has now, whatever its config file says."""
        if self.socket is not None:
            return uapi.get_device(self.socket).peers
        return kernel.get_device(self.name).peers

    def add_peer(self, peer: PeerSettings) -> None:
        """Add (or replace the settings of) one peer on the running interface."""
        if self.socket is not None:
            uapi.set_device(self.socket, _uapi_peer_lines(peer))
        else:
            _kernel_set(self.name, _kernel_peer(peer))

    def remove_peer(self, public_key: str) -> None:
        if self.socket is not None:
            uapi.set_device(self.socket, [f"public_key={base64_to_hex(public_key)}",
                                          "remove=true"])
        else:
            _kernel_set(self.name, {"public_key": public_key, "remove": True})


def find_device(host: Host, name: str) -> LiveDevice | None:
    """The running interface `name` (userspace socket first), or ``None`` when it is down."""
    socket = uapi.socket_paths(host).get(name)
    if socket is not None and not uapi.is_stale(socket):  # a stale one is no interface
        return LiveDevice(name, "userspace", socket)
    if not host.is_live:
        return None
    try:
        links = netlink.list_links()
    except ZsnError:
        return None
    link = links.get(name)
    if link is not None and link.kind == "wireguard":
        return LiveDevice(name, "kernel")
    return None


def running_state(host: Host, name: str) -> DeviceState | None:
    """The running interface `name` as it is now (peers, endpoints, fwmark), or ``None``
    when it is down. What the SSH session's path reads below a tunnel
    (`zsn.tries.session`)."""
    device = find_device(host, name)
    if device is None:
        return None
    if device.socket is not None:
        return uapi.get_device(device.socket)
    return kernel.get_device(name)


RESOLVE_TIMEOUT = 10.0


def resolve_endpoint(endpoint: str, timeout: float = RESOLVE_TIMEOUT) -> tuple[str, int]:
    """A config's ``Endpoint`` (``host:port``, ``[v6]:port``) as an IP address and port.

    The kernel and wireguard-go take addresses only; a hostname (a site-to-site peer's
    dynamic DNS name) is resolved here, the first address getaddrinfo gives, as `wg`
    does when wg-quick brings the interface up.
    """
    host, colon, port_text = endpoint.strip().rpartition(":")
    if not colon or not port_text.isdigit() or not 0 < int(port_text) < 65536 or not host:
        raise ZsnError(f"endpoint {endpoint!r} is not HOST:PORT")
    port = int(port_text)
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
    try:
        return str(ipaddress.ip_address(host)), port
    except ValueError:
        pass
    found: list[str] = []
    failure: list[OSError] = []

    def lookup() -> None:
        try:
            results = socket.getaddrinfo(host, port, type=socket.SOCK_DGRAM,
                                         proto=socket.IPPROTO_UDP)
            found.extend(str(info[4][0]) for info in results
                         if info[0] in (socket.AF_INET, socket.AF_INET6))
        except OSError as exc:
            failure.append(exc)

    # getaddrinfo has no deadline of its own; a thread gives it one.
    worker = threading.Thread(target=lookup, daemon=True)
    worker.start()
    worker.join(timeout)
    if worker.is_alive():
        raise ZsnError(f"cannot resolve endpoint {host}: no answer within {timeout:.0f} s")
    if not found:
        reason = failure[0].strerror if failure and failure[0].strerror else "no address"
        raise ZsnError(f"cannot resolve endpoint {host}: {reason}")
    return found[0], port


def _uapi_peer_lines(peer: PeerSettings) -> list[str]:
    lines = [f"public_key={base64_to_hex(peer.public_key)}"]
    if peer.preshared_key:
        lines.append(f"preshared_key={base64_to_hex(peer.preshared_key)}")
    if peer.endpoint:
        lines.append(f"endpoint={format_endpoint(*resolve_endpoint(peer.endpoint))}")
    if peer.persistent_keepalive is not None:
        lines.append(f"persistent_keepalive_interval={peer.persistent_keepalive}")
    lines.append("replace_allowed_ips=true")
    lines.extend(f"allowed_ip={network}" for network in peer.allowed_ips)
    return lines


def _kernel_peer(peer: PeerSettings) -> dict[str, object]:
    spec: dict[str, object] = {
        "public_key": peer.public_key,
        "replace_allowed_ips": True,
        "allowed_ips": list(peer.allowed_ips),
    }
    if peer.preshared_key:
        spec["preshared_key"] = peer.preshared_key
    if peer.persistent_keepalive is not None:
        spec["persistent_keepalive"] = peer.persistent_keepalive
    if peer.endpoint:
        spec["endpoint_addr"], spec["endpoint_port"] = resolve_endpoint(peer.endpoint)
    return spec


def _kernel_set(name: str, peer: dict[str, object]) -> None:
    wireguard_class = netlink.pyroute2_module("netlink.generic.wireguard").WireGuard
    with netlink.translate_netlink_errors(f"changing {name}"):
        wg = wireguard_class()
        try:
            wg.set(name, peer=peer)
        finally:
            wg.close()


def add_route(device: str, network: str) -> None:
    """Route `network` into `device` (site-to-site subnets behind a peer)."""
    with netlink.iproute(f"adding route {network} dev {device}") as ipr:
        index = ipr.link_lookup(ifname=device)
        if not index:
            raise ZsnError(f"{device}: no such interface")
        ipr.route("replace", dst=network, oif=index[0])


def remove_route(device: str, network: str) -> None:
    with netlink.iproute(f"removing route {network} dev {device}") as ipr:
        index = ipr.link_lookup(ifname=device)
        if not index:
            return
        ipr.route("del", dst=network, oif=index[0])


def default_route_device() -> str | None:
    """The interface holding the IPv4 default route, found through netlink."""
    with netlink.iproute("reading the default route") as ipr:
        routes = ipr.get_default_routes(family=2)
        for route in routes:
            oif = route.get("oif") or route.get(("multipath", 0, "oif"))
            if oif:
                links = ipr.get_links(oif)
                if links:
                    name = links[0].get("ifname")
                    return str(name) if name else None
    return None
