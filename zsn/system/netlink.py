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
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from zsn.errors import NetlinkError, netlink_error
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
