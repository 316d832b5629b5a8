"""Netlink through pyroute2: sockets opened per call, never at import, errors in plain words.

pyroute2 0.9 has an asyncio core; its synchronous `IPRoute` must not run on
Textual's event loop, so callers use these functions from thread workers.

Reading links (`list_links`) goes through `zsn.system.rtnetlink`'s lean decoder
instead: `IPRoute` and its asyncio core cost ~35 ms to import, more than a cold
`zsn --export` of a 5,000-peer wireguard-go server spends reading links, UAPI and
config together, and the WireGuard pane's first read waits for the same. Changes
(links, routes, WireGuard peers) go through `IPRoute` and pyroute2's generic
netlink classes.
"""

from __future__ import annotations

import errno
import importlib
import importlib.util
import socket
import struct
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, NamedTuple

from zsn.errors import NetlinkError, ValidationError, netlink_error
from zsn.system import rtnetlink


def _lean_pyroute2() -> None:
    """Let ``import pyroute2.a.b`` load a.b and what it needs, not the whole library.

    pyroute2's ``__init__`` imports every module it has (about 130 ms and 18 MiB),
    which `zsn --export` and start-up would pay to list links. The package module
    is registered without running ``__init__``; the first time one of its
    top-level names is asked for, ``__init__`` runs after all, so code that does
    ``from pyroute2 import X`` keeps working.
    """
    if "pyroute2" in sys.modules:
        return
    spec = importlib.util.find_spec("pyroute2")
    if spec is None or spec.loader is None:
        return  # not installed: the import below reports it
    package = importlib.util.module_from_spec(spec)

    def load_on_demand(name: str) -> object:
        if name.startswith("__"):
            raise AttributeError(name)
        try:
            return importlib.import_module(f"pyroute2.{name}")
        except ModuleNotFoundError:
            pass
        vars(package).pop("__getattr__", None)
        assert spec.loader is not None
        spec.loader.exec_module(package)
        return getattr(package, name)

    package.__getattr__ = load_on_demand  # type: ignore[method-assign]
    sys.modules["pyroute2"] = package


def pyroute2_module(name: str) -> Any:
    """A pyroute2 submodule (e.g. ``iproute.linux``), loaded without the rest of pyroute2."""
    _lean_pyroute2()
    return importlib.import_module(f"pyroute2.{name}")


@contextmanager
def translate_netlink_errors(what: str) -> Iterator[None]:
    """Turn pyroute2's `NetlinkError` (and socket failures) into zsn's `NetlinkError`,
    with the errno kept (`zsn.errors.netlink_error`)."""
    pyroute2_error = pyroute2_module("netlink.exceptions").NetlinkError

    try:
        yield
    except pyroute2_error as exc:
        raise netlink_error(what, exc.code) from exc
    except OSError as exc:
        if exc.errno is None:
            raise NetlinkError(f"{what}: {exc}") from exc
        raise netlink_error(what, exc.errno, exc.strerror) from exc


@contextmanager
def iproute(what: str = "netlink") -> Iterator[Any]:
    """An `IPRoute` socket for the duration of a call, closed afterwards."""
    iproute_class = pyroute2_module("iproute.linux").IPRoute
    with translate_netlink_errors(what):
        ipr = iproute_class()
        try:
            yield ipr
        finally:
            ipr.close()


@dataclass(frozen=True)
class Link:
    """One network link of this namespace, with its addresses."""

    index: int
    name: str
    kind: str | None
    operstate: str
    mtu: int
    mac: str | None
    addresses: tuple[str, ...]
    """Addresses with prefix length, e.g. ``10.0.0.1/24``, in kernel order."""


def list_links() -> dict[str, Link]:
    """Every link in the current network namespace, by name, with its addresses."""
    records = rtnetlink.read_links()
    by_index: dict[int, list[str]] = {}
    for address in rtnetlink.read_addresses():
        by_index.setdefault(address.index, []).append(address.cidr)
    return {record.name: Link(index=record.index, name=record.name, kind=record.kind,
                              operstate=record.operstate.upper(), mtu=record.mtu,
                              mac=record.mac, addresses=tuple(by_index.get(record.index, ())))
            for record in records if record.name}


def require_link(name: str, what: str = "interface") -> Link:
    """The live link `name`; refused input (`ValidationError`) naming the links there
    when there is none: a change that needs it must not be planned around a typo."""
    links = list_links()
    if name not in links:
        known = ", ".join(sorted(links)) or "none"
        raise ValidationError(f"no {what} named {name!r} here (known: {known})")
    return links[name]


# -- changing links (pyroute2 builds the requests) -------------------------------


def link_index(ipr: Any, name: str) -> int:
    """The ifindex of `name` on an open `IPRoute`; `NetlinkError` (ENODEV) when missing."""
    found = ipr.link_lookup(ifname=name)
    if not found:
        raise netlink_error(name, errno.ENODEV)
    return int(found[0])


def create_link(name: str, kind: str, **attributes: Any) -> None:
    """``ip link add NAME type KIND ...``: `attributes` are pyroute2's names for the
    IFLA_* attributes (``mtu``, ``bond_mode``, ``vlan_id``, ``br_stp_state`` ...), with
    ``link`` given as a name (a VLAN's parent) and turned into its index here."""
    with iproute(f"creating {kind} {name}") as ipr:
        if isinstance(attributes.get("link"), str):
            attributes["link"] = link_index(ipr, attributes["link"])
        ipr.link("add", ifname=name, kind=kind, **attributes)


def set_link(name: str, **attributes: Any) -> None:
    """``ip link set NAME ...``: ``state="up"|"down"``, ``mtu=N``, ``master=NAME`` (or
    ``None`` to leave the master), ``bond_*`` settings."""
    what = ", ".join(f"{key} {value if value is not None else 'none'}"
                     for key, value in attributes.items())
    with iproute(f"setting {name} {what}") as ipr:
        index = link_index(ipr, name)
        if "master" in attributes:
            master = attributes["master"]
            attributes["master"] = link_index(ipr, master) if master else 0
        ipr.link("set", index=index, **attributes)


def delete_link(name: str) -> None:
    with iproute(f"deleting {name}") as ipr:
        ipr.link("del", index=link_index(ipr, name))


def add_address(name: str, cidr: str) -> None:
    """Add `cidr` (``10.0.0.1/24``) to `name`, as ``ip addr add`` does."""
    address, _, prefix = cidr.partition("/")
    with iproute(f"adding {cidr} to {name}") as ipr:
        ipr.addr("add", index=link_index(ipr, name), address=address, prefixlen=int(prefix))


def delete_address(name: str, cidr: str) -> None:
    address, _, prefix = cidr.partition("/")
    with iproute(f"removing {cidr} from {name}") as ipr:
        ipr.addr("del", index=link_index(ipr, name), address=address, prefixlen=int(prefix))


# -- routes (a try records them, a rollback puts back the ones that went) -----------

_RTPROT_KERNEL = 2
_RT_TABLE_LOCAL = 255
_RT_TABLE_MAIN = 254
_RTM_F_CLONED = 0x200
_PROTOCOLS = {3: "boot", 4: "static", 9: "ra", 16: "dhcp"}
_SCOPES = {253: "link", 254: "host"}


class Route(NamedTuple):
    """A route as ``ip route`` would add it again; interfaces by name, since a link
    that is deleted and made again comes back with another index."""

    family: int
    table: int
    dst: str | None
    """None for a default route."""
    dst_len: int
    gateway: str | None
    oif: str | None
    priority: int | None
    proto: int
    scope: int
    type: int
    prefsrc: str | None
    expires: int | None
    """Seconds left for a route that expires (an IPv6 default route learned from a
    router advertisement): put back, it still expires."""
    metrics: dict[str, int] | None = None
    """RTA_METRICS by pyroute2's names (``RTAX_MTU``, ``RTAX_HOPLIMIT``: what a router
    advertisement set)."""

    @property
    def key(self) -> tuple[object, ...]:
        """What makes two routes the same for the kernel (proto and expiry aside)."""
        return (self.family, self.table, self.dst, self.dst_len, self.gateway, self.oif,
                self.priority or 0)

    def as_dict(self) -> dict[str, object]:
        return self._asdict()

    def command(self) -> str:
        """The ``ip route add`` that puts it back."""
        words = ["ip", "-6" if self.family == socket.AF_INET6 else "-4", "route", "add"]
        words.append(f"{self.dst}/{self.dst_len}" if self.dst else "default")
        if self.gateway:
            words += ["via", self.gateway]
        if self.oif:
            words += ["dev", self.oif]
        if self.priority:
            words += ["metric", str(self.priority)]
        if self.table != _RT_TABLE_MAIN:
            words += ["table", str(self.table)]
        if self.proto in _PROTOCOLS:
            words += ["proto", _PROTOCOLS[self.proto]]
        if self.scope in _SCOPES:
            words += ["scope", _SCOPES[self.scope]]
        if self.prefsrc:
            words += ["src", self.prefsrc]
        for name, value in (self.metrics or {}).items():
            words += [name.removeprefix("RTAX_").lower(), str(value)]
        if self.expires:
            words += ["expires", str(self.expires)]
        return " ".join(words)


def read_routes(interfaces: set[str] | None = None) -> list[Route]:
    """The routes of every table (local and kernel-made ones aside: addresses bring
    those back) that go out through `interfaces` (all when None)."""
    found: list[Route] = []
    with iproute("reading routes") as ipr:
        names = {int(link["index"]): str(link.get_attr("IFLA_IFNAME"))
                 for link in ipr.get_links()}
        for family in (socket.AF_INET, socket.AF_INET6):
            for message in ipr.route("dump", family=family):
                route = _route_of(message, names)
                if route is not None and (interfaces is None or route.oif in interfaces):
                    found.append(route)
    return found


def _route_of(message: Any, names: dict[int, str]) -> Route | None:
    table = message.get("table")
    if (table == _RT_TABLE_LOCAL or message["proto"] == _RTPROT_KERNEL
            or message["flags"] & _RTM_F_CLONED or message.get("multipath")):
        return None  # multipath routes are not zsn's to restore: named, not touched
    oif = message.get("oif")
    cache = message.get("cacheinfo") or {}
    expires = int(cache.get("rta_expires", 0) or 0) // 100  # jiffies at USER_HZ 100
    metrics = message.get("metrics")
    return Route(family=int(message["family"]), table=int(table), dst=message.get("dst"),
                 dst_len=int(message["dst_len"]), gateway=message.get("gateway"),
                 oif=names.get(int(oif)) if oif is not None else None,
                 priority=message.get("priority"), proto=int(message["proto"]),
                 scope=int(message["scope"]), type=int(message["type"]),
                 prefsrc=message.get("prefsrc"), expires=expires or None,
                 metrics={str(k): int(v) for k, v in metrics["attrs"]} if metrics else None)


def add_route(route: Route) -> None:
    """``ip route add`` of `route` (its interface by name)."""
    with iproute(f"adding route {route.command().split(' add ', 1)[1]}") as ipr:
        attributes: dict[str, Any] = {
            "family": route.family, "table": route.table, "dst_len": route.dst_len,
            "proto": route.proto, "scope": route.scope, "type": route.type}
        if route.dst:
            attributes["dst"] = route.dst
        if route.gateway:
            attributes["gateway"] = route.gateway
        if route.oif:
            attributes["oif"] = link_index(ipr, route.oif)
        if route.priority:
            attributes["priority"] = route.priority
        if route.prefsrc:
            attributes["prefsrc"] = route.prefsrc
        if route.metrics:
            attributes["metrics"] = dict(route.metrics)
        if route.expires and route.family == socket.AF_INET6:
            # RTA_EXPIRES: u32 seconds (IPv6 only); pyroute2 sends it as raw bytes.
            attributes["expires"] = struct.pack("=I", route.expires)
        ipr.route("add", **attributes)
