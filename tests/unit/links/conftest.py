from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from zsn.links.live import BondDetails, addresses_by_index, build_interfaces
from zsn.links.model import Interface, LinksSnapshot
from zsn.system import rtnetlink
from zsn.system.host import Host
from zsn.tries.session import SessionPath, find_session

LINK_FIXTURES = Path(__file__).parents[2] / "fixtures" / "links"


def captured_bytes(name: str) -> list[bytes]:
    return [(LINK_FIXTURES / name).read_bytes()]


def ip_json(name: str) -> list[dict[str, Any]]:
    data: list[dict[str, Any]] = json.loads((LINK_FIXTURES / name).read_text())
    return data


def captured_interfaces(suffix: str = "") -> tuple[Interface, ...]:
    """The lab capture (bonds rr0, ad0, adnp, ab0; VLAN rr0.10; bridge br0) as zsn sees it."""
    records = rtnetlink.decode_links(captured_bytes(f"rtm-getlink{suffix}.bin"))
    addresses = addresses_by_index(rtnetlink.decode_addresses(captured_bytes("rtm-getaddr.bin")))
    return build_interfaces(records, addresses)


def captured_snapshot(suffix: str = "") -> LinksSnapshot:
    records = rtnetlink.decode_links(captured_bytes(f"rtm-getlink{suffix}.bin"))
    counters = {r.index: r.counters for r in records if r.counters is not None}
    return LinksSnapshot(captured_interfaces(suffix), 100.0, counters=counters)


@pytest.fixture
def snapshot() -> LinksSnapshot:
    return captured_snapshot()


@pytest.fixture
def no_details() -> BondDetails:
    return BondDetails({}, ())


def captured_session(monkeypatch: pytest.MonkeyPatch, route_via: str | None,
                     connection: str) -> SessionPath | None:
    """The SSH session zsn would find on the captured lab, with ``SSH_CONNECTION`` set
    to `connection` and the kernel routing the client through `route_via` (the lab
    capture has no route table: that answer is the one thing given)."""
    records = rtnetlink.decode_links(captured_bytes("rtm-getlink.bin"))
    addresses = rtnetlink.decode_addresses(captured_bytes("rtm-getaddr.bin"))
    oif = next((r.index for r in records if r.name == route_via), None)
    route = rtnetlink.RouteRecord(2, 32, 254, None, (oif,) if oif else ())
    monkeypatch.setattr(rtnetlink, "read_links", lambda: records)
    monkeypatch.setattr(rtnetlink, "read_addresses", lambda: addresses)
    monkeypatch.setattr(rtnetlink, "route_get", lambda *args, **kwargs: route)
    monkeypatch.setattr(rtnetlink, "dump_routes_raw", lambda family: [])
    return find_session(Host(Path("/")), {"SSH_CONNECTION": connection})
