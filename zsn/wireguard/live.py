"""This machine's WireGuard interfaces and peers, read live, as one snapshot.

Kernel devices are found through netlink (link kind ``wireguard``) and read over
generic netlink; userspace ones (wireguard-go, boringtun) through their UAPI
sockets. Peer names come from the interface's wg-quick config, parsed only when
the file changes. Nothing is owned or rewritten: a running interface and a
hand-written config are shown as they are.
"""

from __future__ import annotations

import time
from pathlib import Path
from types import MappingProxyType
from typing import NamedTuple

from zsn.errors import (
    AccessDeniedError,
    NetlinkError,
    ParseError,
    SocketError,
    SocketGoneError,
    StaleSocketError,
    ZsnError,
)
from zsn.system import files
from zsn.system.host import Host
from zsn.system.netlink import Link, list_links
from zsn.system.rtnetlink import LinkWatcher
from zsn.wireguard import config, expiry, kernel, policy, uapi
from zsn.wireguard.config import config_path
from zsn.wireguard.keys import public_key_from_private
from zsn.wireguard.model import DeviceState, InterfaceState, PeerState, WireGuardSnapshot

NEEDS_ROOT = (
    "Reading WireGuard devices needs root: the UAPI sockets are root-only and the "
    "kernel refuses the netlink dump. Run zsn as root (e.g. sudo zsn) to see peers."
)


class _ConfigPeers(NamedTuple):
    """What the live read takes from one config."""

    names: dict[str, str]
    """Peer name by public key, for peers with a name comment."""
    order: dict[str, int]
    """Position of each peer's public key in the config."""
    expiries: dict[str, int]
    """When each peer with an ``# Expires =`` line expires, by public key."""
    disabled: int = 0
    """How many peers are commented out with ``#[disabled]``."""


class LiveCache:
    """What a poller keeps between reads, so a big server costs little per refresh:
    peer names and order per config (re-read only when the file changes), each
    userspace device's unchanged peers, and the link table (read again when the kernel
    tells of a change)."""

    def __init__(self, link_watcher: LinkWatcher | None = None) -> None:
        self._cache: dict[Path, tuple[tuple[int, int], _ConfigPeers]] = {}
        self._peers: dict[str, uapi.PeerCache] = {}
        self._orders: dict[str, tuple[list[str], dict[str, int], frozenset[str]]] = {}
        self._groups: dict[Path, tuple[tuple[int, int], dict[str, str],
                                       dict[str, tuple[str, ...]]]] = {}
        self._links: dict[str, Link] | None = None
        self._link_watcher = link_watcher or LinkWatcher()
        self.errors: list[str] = []

    def links(self) -> dict[str, Link]:
        """The links and their addresses (`list_links`), dumped again only when the
        kernel told of a change to a link or an address since (netlink multicast): a
        poll asks the devices alone."""
        told = self._link_watcher.changed()  # True the first time (it starts listening)
        if told or self._links is None:
            self._links = None  # a dump that fails is tried again at the next poll
            self._links = list_links()
        return self._links

    def peers_of(self, interface: str) -> uapi.PeerCache:
        return self._peers.setdefault(interface, uapi.PeerCache())

    def forget_except(self, interfaces: set[str]) -> None:
        for name in list(self._peers):
            if name not in interfaces:
                del self._peers[name]
        for name in list(self._orders):
            if name not in interfaces:
                del self._orders[name]

    def for_config(self, path: Path) -> dict[str, str]:
        """Peer names by public key from the config at `path`."""
        return self._config_peers(path).names

    def expiries(self, path: Path) -> dict[str, int]:
        """Expiry by public key from the config at `path` (read with the names)."""
        return self._config_peers(path).expiries

    def disabled(self, path: Path) -> int:
        """How many peers the config at `path` has disabled (read with the names)."""
        return self._config_peers(path).disabled

    def groups(self, host: Host, interface: str, config: Path) -> dict[str, tuple[str, ...]]:
        """Each peer's access-rule groups by public key, from the interface's policy file
        (read again only when it or the config's names change)."""
        try:
            path = policy.policy_path(host, interface)
            st = files.status(path)
        except (OSError, ZsnError):
            return {}
        signature = (st.st_mtime_ns, st.st_size)
        names = self._config_peers(config).names
        cached = self._groups.get(path)
        if cached is not None and cached[0] == signature and cached[1] is names:
            return cached[2]
        found: dict[str, tuple[str, ...]] = {}
        try:
            read = policy.read_file(host, interface)
        except ZsnError as exc:
            self.errors.append(f"access rules of {interface}: {exc}")
        else:
            for key, name in names.items():
                groups = read[1].groups_of(name) if read is not None else ()
                if groups:
                    found[key] = groups
        self._groups[path] = (signature, names, found)
        return found

    def _config_peers(self, path: Path) -> _ConfigPeers:
        try:
            st = files.status(path)
        except (OSError, ZsnError):
            self._cache.pop(path, None)
            return _ConfigPeers({}, {}, {})
        signature = (st.st_mtime_ns, st.st_size)
        cached = self._cache.get(path)
        if cached and cached[0] == signature:
            return cached[1]
        peers = _ConfigPeers({}, {}, {})
        try:
            parsed = config.parse_shared(files.read_text(path), str(path))
        except ParseError as exc:
            self.errors.append(f"peer names unavailable: {exc}")
        except ZsnError as exc:
            self.errors.append(f"cannot read config: {exc}")
        else:
            keyed = parsed.peer_keys()
            peers = _ConfigPeers({key: peer.name for key, peer in keyed if peer.name}, {},
                                 expiry.expiries(parsed),
                                 sum(1 for peer in parsed.all_peers if peer.disabled))
            for position, (key, _peer) in enumerate(keyed):
                peers.order.setdefault(key, position)
        self._cache[path] = (signature, peers)
        return peers

    def in_config_order(self, interface: str, path: Path,
                        peers: tuple[PeerState, ...]) -> tuple[PeerState, ...]:
        """`peers` in a stable order: the config's, then the others by name (unnamed last,
        by key).

        wireguard-go lists peers in Go map order, which changes from one read to
        the next; the kernel in the order they were added. While the same peers
        come back, the order found last time is reused.
        """
        order = self._config_peers(path).order
        by_key = {peer.public_key: peer for peer in peers}
        cached = self._orders.get(interface)
        if cached is not None and cached[1] is order and len(cached[0]) == len(by_key) \
                and by_key.keys() == cached[2]:
            return tuple(by_key[key] for key in cached[0])
        # The config's peers as `order` lists them (it was filled in file order),
        # then the others.
        ordered = [by_key[key] for key in order if key in by_key]
        if len(ordered) < len(by_key):
            ordered += sorted((peer for key, peer in by_key.items() if key not in order),
                              key=lambda peer: (peer.name is None, peer.name or "",
                                                peer.public_key))
        keys = [peer.public_key for peer in ordered]
        self._orders[interface] = (keys, order, frozenset(keys))
        return tuple(ordered)

def read_wireguard(host: Host, cache: LiveCache | None = None) -> WireGuardSnapshot:
    """Read every WireGuard interface visible from here; what cannot be read goes to `errors`.

    Pass the same `cache` on every poll; a one-off read needs none.
    """
    cache = cache if cache is not None else LiveCache()
    cache.errors.clear()
    errors: list[str] = []
    permission_denied = False

    socket_errors: list[str] = []
    try:
        sockets = uapi.socket_paths(host)
    except SocketError as exc:
        socket_errors.append(str(exc))
        permission_denied = True
        sockets = {}
    # Every userspace device is asked first: each builds its reply (wireguard-go
    # takes ~8 ms for 5,000 peers) while the links and configs are read here.
    requests: dict[str, uapi.Exchange | SocketError] = {}
    for name, socket_path in sorted(sockets.items()):
        try:
            requests[name] = uapi.request_device(socket_path)
        except SocketGoneError:
            continue  # its interface went away since the folder was listed, as wg(8) sees it
        except SocketError as exc:
            requests[name] = exc
    try:
        links: dict[str, Link] = {}
        if host.is_live:
            try:
                links = cache.links()
            except NetlinkError as exc:
                errors.append(str(exc))
        errors.extend(socket_errors)
        kernel_names = sorted(name for name, link in links.items() if link.kind == "wireguard")

        interfaces: list[InterfaceState] = []
        for name in kernel_names:
            path = config_path(host, name)
            device: DeviceState | None = None
            try:
                device = kernel.get_device(name, cache.for_config(path))
            except NetlinkError as exc:
                errors.append(str(exc))
                permission_denied |= isinstance(exc, AccessDeniedError)
            if device is not None:
                device = device._replace(peers=cache.in_config_order(name, path, device.peers))
            link = links.get(name)
            instance = f"kernel:{link.index}" if link is not None else ""
            interfaces.append(_interface(name, "kernel", device, link, path, instance=instance,
                                         expiries=cache.expiries(path),
                                         disabled=cache.disabled(path))._replace(
                groups=MappingProxyType(cache.groups(host, name, path))))
        for name, request in requests.items():
            if name in kernel_names:
                continue
            path = config_path(host, name)
            names = cache.for_config(path)  # parsed while the device builds its reply
            device = None
            try:
                if isinstance(request, SocketError):
                    raise request  # it could not even be asked
                device = uapi.read_device(request, names, cache.peers_of(name))
            except (SocketError, ParseError) as exc:
                errors.append(f"{name}: {exc}")
                permission_denied |= isinstance(exc, AccessDeniedError)
            if device is not None:
                device = device._replace(peers=cache.in_config_order(name, path, device.peers))
            link = links.get(name)
            in_namespace = link is not None or not host.is_live
            interfaces.append(_interface(name, "userspace", device, link, path, in_namespace,
                                         _socket_instance(sockets[name]), cache.expiries(path),
                                         cache.disabled(path),
                                         stale=isinstance(request, StaleSocketError))._replace(
                groups=MappingProxyType(cache.groups(host, name, path))))
    finally:
        for request in requests.values():
            if isinstance(request, uapi.Exchange):
                request.close()

    errors.extend(cache.errors)
    cache.forget_except(set(sockets) | set(kernel_names))
    return WireGuardSnapshot(
        interfaces=tuple(interfaces),
        errors=tuple(errors),
        taken_at=time.time(),
        read_only_reason=NEEDS_ROOT if permission_denied and not host.is_superuser else None,
    )


def configured_interfaces(host: Host) -> tuple[str, ...] | None:
    """The interfaces with a config in /etc/wireguard (None: it cannot be listed)."""
    try:
        return tuple(sorted(path.stem for path in
                            files.list_files(host.path(config.WIREGUARD_DIR), "*.conf")))
    except ZsnError:
        return None


def _readable_name(path: Path) -> bool:
    """Whether `path` exists; False when zsn may not even look (not root)."""
    try:
        return files.exists(path)
    except ZsnError:
        return False


def _socket_instance(path: Path) -> str:
    """A userspace device's run: its UAPI socket is made anew each time it starts."""
    try:
        st = files.status(path)
    except (OSError, ZsnError):
        return ""
    return f"uapi:{st.st_ino}:{st.st_ctime_ns}"


def _configured_addresses(link: Link | None) -> tuple[str, ...]:
    # A tun device gets an IPv6 link-local address by itself; WireGuard never uses
    # it and wg-quick never sets it, so it is not one of the interface's addresses.
    if link is None:
        return ()
    return tuple(a for a in link.addresses if not a.lower().startswith("fe80:"))


def _interface(
    name: str,
    implementation: str,
    device: DeviceState | None,
    link: Link | None,
    path: Path,
    in_namespace: bool = True,
    instance: str = "",
    expiries: dict[str, int] | None = None,
    disabled: int = 0,
    stale: bool = False,
) -> InterfaceState:
    public_key = device.public_key if device else None
    if device and public_key is None and device.private_key:
        try:
            public_key = public_key_from_private(device.private_key)
        except ZsnError:
            public_key = None
    return InterfaceState(
        name=name,
        implementation="kernel" if implementation == "kernel" else "userspace",
        public_key=public_key,
        private_key=device.private_key if device else None,
        listen_port=device.listen_port if device else None,
        fwmark=device.fwmark if device else None,
        addresses=_configured_addresses(link),
        config_path=str(path) if _readable_name(path) else None,
        peers=device.peers if device else (),
        in_namespace=in_namespace,
        instance=instance,
        expiries=MappingProxyType(expiries or {}),
        disabled_peers=disabled,
        stale=stale,
    )
