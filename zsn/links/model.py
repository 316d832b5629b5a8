"""What zsn knows about network links: frozen snapshots, and the tree they form."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from functools import cached_property
from typing import NamedTuple

from zsn.system.rtnetlink import Counters

KINDS_ZSN_MANAGES = ("bond", "vlan", "bridge")


@dataclass(frozen=True)
class BondState:
    mode: str | None
    """The mode's name (``balance-rr``, ``802.3ad`` ...); ``None`` if the kernel's number
    is one zsn does not know."""
    miimon: int | None
    xmit_hash_policy: str | None
    lacp_rate: str | None
    min_links: int | None
    active_member: str | None
    """active-backup (and tlb/alb): the member that carries traffic now."""
    aggregator: int | None
    partner_mac: str | None
    """802.3ad: the LACP partner's system MAC; all zeros when no partner answered."""

    @property
    def has_partner(self) -> bool | None:
        if self.mode != "802.3ad" or self.partner_mac is None:
            return None
        return any(part != "00" for part in self.partner_mac.split(":"))


@dataclass(frozen=True)
class MemberState:
    """A bond member as the bond sees it."""

    mii_status: str
    """up, down, going down, coming back."""
    state: str | None
    """active or backup (which members carry traffic depends on the mode)."""
    link_failure_count: int
    aggregator_id: int | None
    permanent_mac: str | None


ROLE_WORDS = {
    "active": "carries traffic",
    "backup": "backup: takes over when the active member fails",
    "standby": "not in the active aggregator: carries no traffic",
    "down": "carries no traffic",
}
"""What each `member_role` means, for the details box and `zsn link show`."""


def member_role(member: MemberState, bond: BondState | None) -> str:
    """Whether a member carries the bond's traffic, from the sources that know it: its
    MII status first (the kernel keeps a down member's slave state "active" in
    balance-rr and 802.3ad), then, in 802.3ad, whether it is in the bond's active
    aggregator, in active-backup/tlb/alb its active or backup state."""
    if member.mii_status != "up":
        return "down"
    mode = bond.mode if bond is not None else None
    if mode == "802.3ad":
        if bond is not None and bond.aggregator is not None \
                and member.aggregator_id is not None and member.aggregator_id != bond.aggregator:
            return "standby"
        return "active"
    if mode in ("active-backup", "balance-tlb", "balance-alb") and member.state == "backup":
        return "backup"
    return "active"


@dataclass(frozen=True)
class Interface:
    index: int
    name: str
    kind: str
    """bond, vlan, bridge, veth, dummy, ... ``device`` for hardware (no link kind),
    ``loopback``."""
    admin_up: bool
    operstate: str
    carrier: bool | None
    mtu: int
    min_mtu: int | None
    max_mtu: int | None
    mac: str | None
    addresses: tuple[str, ...] = ()
    master: str | None = None
    """The bond or bridge this interface is a member/port of."""
    master_kind: str | None = None
    parent: str | None = None
    """A VLAN's parent link."""
    peer: str | None = None
    """A veth's other end, when it is in this namespace."""
    peer_elsewhere: bool = False
    """A veth whose other end is in another network namespace."""
    vlan_id: int | None = None
    vlan_protocol: str | None = None
    speed_mbps: int | None = None
    duplex: str | None = None
    bond: BondState | None = None
    member: MemberState | None = None
    stp: bool | None = None
    """Bridges: spanning tree on."""
    port_state: str | None = None
    """Bridge ports: forwarding, listening, learning, blocking, disabled."""

    @property
    def state_text(self) -> str:
        """What the State column shows: admin down, no carrier, or the operstate."""
        if not self.admin_up:
            return "down"
        if self.carrier is False:
            return "no-carrier"
        if self.operstate == "unknown" and self.carrier:
            return "up"  # loopback, dummy: no operational state of their own
        return self.operstate


class Rates(NamedTuple):
    rx_bytes: float
    tx_bytes: float
    rx_packets: float
    tx_packets: float
    errors: float
    """Receive plus transmit errors per second."""
    drops: float


@dataclass(frozen=True)
class LinksSnapshot:
    interfaces: tuple[Interface, ...]
    taken_at: float
    """time.monotonic() of the counters' reading: rates use its differences."""
    errors: tuple[str, ...] = ()
    counters: dict[int, Counters] = field(default_factory=dict)
    """By ifindex, the latest reading (the pane reads them every refresh, the rest
    only when links change)."""
    rates: dict[str, Rates] = field(default_factory=dict)
    """By interface name; missing until two readings exist (or after a counter reset)."""
    history: dict[str, tuple[float, ...]] = field(default_factory=dict)
    """By name: recent receive+transmit bytes/s, oldest first, for a sparkline."""
    live: bool = True
    """False under --root: no kernel to read, only the persistent config."""

    def by_name(self) -> dict[str, Interface]:
        """Interfaces by name (made once per snapshot: rows look their master up)."""
        return self._by_name

    @cached_property
    def _by_name(self) -> dict[str, Interface]:
        return {interface.name: interface for interface in self.interfaces}


class TreeRow(NamedTuple):
    interface: Interface
    depth: int
    relation: str
    """How it hangs under its parent row: ``member``, ``port``, ``vlan``, ``peer`` or ``""``."""
    last: bool
    """The last child of its parent (the tree draws └ instead of ├)."""
    prefix: str
    """Tree drawing before the name, e.g. ``│ └ ``."""


def tree(interfaces: tuple[Interface, ...]) -> list[TreeRow]:
    """Every interface once, depth first: bond → members, bridge → ports, parent →
    VLANs, a veth → its peer (when the peer hangs nowhere else); roots in kernel order."""
    by_name = {interface.name: interface for interface in interfaces}
    placed: dict[str, tuple[str, str]] = {}
    for interface in interfaces:
        if interface.master in by_name:
            relation = "port" if interface.master_kind == "bridge" else "member"
            placed[interface.name] = (interface.master, relation)
        elif interface.parent in by_name:
            placed[interface.name] = (interface.parent, "vlan")
    for interface in interfaces:
        peer = by_name.get(interface.peer or "")
        if interface.name in placed or peer is None:
            continue
        # The end that hangs somewhere else (a bridge port) or comes first is the parent.
        if (peer.name in placed or peer.index < interface.index) \
                and not _is_under(placed, peer.name, interface.name):
            placed[interface.name] = (peer.name, "peer")
    children: dict[str, list[Interface]] = {}
    for interface in interfaces:
        if interface.name in placed:
            children.setdefault(placed[interface.name][0], []).append(interface)
    rows: list[TreeRow] = []

    def walk(interface: Interface, depth: int, relation: str, last: bool, lead: str) -> None:
        prefix = lead + (("└ " if last else "├ ") if depth else "")
        rows.append(TreeRow(interface, depth, relation, last, prefix))
        kids = children.get(interface.name, [])
        below = lead + (("  " if last else "│ ") if depth else "")
        for position, kid in enumerate(kids):
            walk(kid, depth + 1, placed[kid.name][1], position == len(kids) - 1, below)

    for interface in interfaces:
        if interface.name not in placed:
            walk(interface, 0, "", True, "")
    return rows


def _is_under(placed: dict[str, tuple[str, str]], name: str, ancestor: str) -> bool:
    seen = set()
    while name in placed and name not in seen:
        seen.add(name)
        name = placed[name][0]
        if name == ancestor:
            return True
    return False


def lower_stack(interfaces: tuple[Interface, ...], names: set[str]) -> set[str]:
    """`names` and everything they sit on: a VLAN's parent, a bond's members, a
    bridge's ports, recursively (what a change to any of them also disturbs)."""
    by_name = {interface.name: interface for interface in interfaces}
    found: set[str] = set()
    pending = [name for name in names if name in by_name]
    while pending:
        name = pending.pop()
        if name in found:
            continue
        found.add(name)
        interface = by_name[name]
        if interface.parent:
            pending.append(interface.parent)
        pending.extend(other.name for other in interfaces if other.master == name)
    return found


def dependents(interfaces: tuple[Interface, ...], name: str) -> Iterator[Interface]:
    """Interfaces stacked directly on `name`: its VLANs, its members or ports."""
    for interface in interfaces:
        if interface.parent == name or interface.master == name:
            yield interface
