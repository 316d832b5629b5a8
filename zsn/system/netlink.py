"""Netlink through pyroute2: sockets opened per call, never at import, errors in plain words.

pyroute2 0.9 has an asyncio core; its synchronous `IPRoute` must not run on
Textual's event loop, so callers use these functions from thread workers.
"""

from __future__ import annotations

import errno
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from zsn.errors import NetlinkAccessError

_PLAIN_REASONS = {
    errno.EPERM: "operation not permitted (needs root / CAP_NET_ADMIN)",
    errno.EACCES: "permission denied (needs root / CAP_NET_ADMIN)",
    errno.ENODEV: "no such network device",
    errno.ENOENT: "no such object",
    errno.EEXIST: "already exists",
    errno.EBUSY: "device or resource busy",
    errno.EINVAL: "invalid argument",
    errno.EOPNOTSUPP: "not supported by this kernel (module not loaded?)",
    errno.EAFNOSUPPORT: "address family not supported by this kernel",
    errno.EADDRNOTAVAIL: "address not available",
    errno.ENETUNREACH: "network unreachable",
}


def plain_netlink_reason(code: int) -> str:
    """A user-facing reason for a netlink errno."""
    return _PLAIN_REASONS.get(code, f"error {code}")


@contextmanager
def translate_netlink_errors(what: str) -> Iterator[None]:
    """Turn pyroute2's `NetlinkError` (and socket failures) into `NetlinkAccessError`."""
    from pyroute2.netlink.exceptions import NetlinkError

    try:
        yield
    except NetlinkError as exc:
        raise NetlinkAccessError(f"{what}: {plain_netlink_reason(exc.code)}") from exc
    except PermissionError as exc:
        raise NetlinkAccessError(f"{what}: {plain_netlink_reason(errno.EPERM)}") from exc
    except OSError as exc:
        raise NetlinkAccessError(f"{what}: {exc.strerror or exc}") from exc


@contextmanager
def iproute(what: str = "netlink") -> Iterator[Any]:
    """An `IPRoute` socket for the duration of a call, closed afterwards."""
    from pyroute2 import IPRoute

    with translate_netlink_errors(what):
        ipr = IPRoute()
        try:
            yield ipr
        finally:
            ipr.close()


@dataclass(frozen=True)
class Link:
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
    with iproute("listing network links") as ipr:
        raw_links = ipr.get_links()
        raw_addresses = ipr.get_addr()
    by_index: dict[int, list[str]] = {}
    for message in raw_addresses:
        address = message.get("address") or message.get("local")
        if address:
            by_index.setdefault(message["index"], []).append(f"{address}/{message['prefixlen']}")
    links: dict[str, Link] = {}
    for message in raw_links:
        name = message.get("ifname")
        if not name:
            continue
        links[name] = Link(
            index=message["index"],
            name=name,
            kind=message.get(("linkinfo", "kind")),
            operstate=message.get("operstate") or "UNKNOWN",
            mtu=message.get("mtu") or 0,
            mac=message.get("address"),
            addresses=tuple(by_index.get(message["index"], ())),
        )
    return links
