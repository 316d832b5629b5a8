"""The live link table: netlink for links, addresses and counters; /proc/net/bonding and
sysfs for what netlink leaves out (per-member LACP details, speed and duplex).

`read_links` is a one-off read (export, headless commands). `LinkMonitor` is what the
pane polls: counters every refresh (one RTM_GETSTATS dump), the whole table only when
netlink reports a change (or every `FULL_READ_SECONDS`), so an idle host with 500
links costs about half a millisecond per refresh.
"""

from __future__ import annotations

import time
from collections import deque
from dataclasses import dataclass, replace
from pathlib import Path

from zsn.errors import NetlinkError, ZsnError
from zsn.links import bonding
from zsn.links.model import BondState, Interface, LinksSnapshot, MemberState, Rates
from zsn.rates import CounterRates
from zsn.system import files, rtnetlink
from zsn.system.host import Host
from zsn.system.rtnetlink import Counters, LinkRecord

FULL_READ_SECONDS = 30.0
"""A whole re-read even without netlink events (sysfs speed has none)."""
HISTORY = 16
"""Samples kept per interface for the sparkline."""
PORT_STATES = ("disabled", "listening", "learning", "forwarding", "blocking")
IFF_LOOPBACK = 0x8
SPEED_KINDS = ("device", "bond")
"""Kinds whose sysfs speed/duplex is read (hardware and bonds); members get theirs
from /proc/net/bonding, software links report made-up figures."""
PROC_BONDING = Path("/proc/net/bonding")
PROC_BONDING_CAP = 1 << 20
SYS_CLASS_NET = Path("/sys/class/net")


def build_interfaces(records: list[LinkRecord],
                     addresses: dict[int, list[str]]) -> tuple[Interface, ...]:
    """Netlink records (and addresses by ifindex) as `Interface`s: indexes become names."""
    names = {record.index: record.name for record in records}
    interfaces = []
    for record in records:
        kind = record.kind or ("loopback" if record.flags & IFF_LOOPBACK else "device")
        peer = None
        peer_elsewhere = False
        parent = None
        if record.kind == "veth" and record.link:
            if record.link_netnsid is not None:
                peer_elsewhere = True
            else:
                peer = names.get(record.link)
        elif record.kind == "vlan" and record.link:
            parent = names.get(record.link)
        bond = member = None
        if record.bond is not None:
            data = record.bond
            bond = BondState(
                mode=bonding.name_of(bonding.MODES, data.mode), miimon=data.miimon,
                xmit_hash_policy=bonding.name_of(bonding.XMIT_HASH_POLICIES,
                                                 data.xmit_hash_policy),
                lacp_rate=bonding.name_of(bonding.LACP_RATES, data.lacp_rate),
                min_links=data.min_links,
                active_member=names.get(data.active_slave) if data.active_slave else None,
                aggregator=data.aggregator, partner_mac=data.partner_mac)
        if record.bond_slave is not None:
            slave = record.bond_slave
            mii = slave.mii_status
            member = MemberState(
                mii_status=bonding.MII_STATUS[mii] if mii is not None and mii < 4 else "unknown",
                state=bonding.SLAVE_STATE[slave.state]
                if slave.state is not None and slave.state < 2 else None,
                link_failure_count=slave.link_failure_count or 0,
                aggregator_id=slave.aggregator_id, permanent_mac=slave.perm_hwaddr)
        port_state = None
        if record.bridge_port is not None and record.bridge_port.state is not None:
            state = record.bridge_port.state
            port_state = PORT_STATES[state] if state < len(PORT_STATES) else str(state)
        vlan_protocol = None
        if record.vlan is not None and record.vlan.protocol is not None:
            vlan_protocol = {0x8100: "802.1Q", 0x88A8: "802.1ad"}.get(
                record.vlan.protocol, hex(record.vlan.protocol))
        interfaces.append(Interface(
            index=record.index, name=record.name, kind=kind, admin_up=record.admin_up,
            operstate=record.operstate, carrier=record.carrier, mtu=record.mtu,
            min_mtu=record.min_mtu, max_mtu=record.max_mtu, mac=record.mac,
            addresses=tuple(addresses.get(record.index, ())),
            master=names.get(record.master) if record.master else None,
            master_kind=record.slave_kind, parent=parent, peer=peer,
            peer_elsewhere=peer_elsewhere,
            vlan_id=record.vlan.vlan_id if record.vlan else None, vlan_protocol=vlan_protocol,
            bond=bond, member=member,
            stp=bool(record.bridge.stp_state) if record.bridge and
            record.bridge.stp_state is not None else None,
            port_state=port_state))
    return tuple(interfaces)


def addresses_by_index(records: list[rtnetlink.AddressRecord]) -> dict[int, list[str]]:
    found: dict[int, list[str]] = {}
    for record in records:
        found.setdefault(record.index, []).append(record.cidr)
    return found


@dataclass(frozen=True)
class BondDetails:
    """/proc/net/bonding/BOND, read with the table (per-member LACP partner, churn)."""

    bonds: dict[str, bonding.ProcBond]
    errors: tuple[str, ...]


def read_bond_details(interfaces: tuple[Interface, ...],
                      proc: Path = PROC_BONDING) -> BondDetails:
    bonds: dict[str, bonding.ProcBond] = {}
    errors: list[str] = []
    for interface in interfaces:
        if interface.kind != "bond":
            continue
        path = proc / interface.name
        try:
            if not files.exists(path):
                continue  # removed since the dump
            bonds[interface.name] = bonding.parse_proc_bonding(
                files.read_text(path, PROC_BONDING_CAP), str(path))
        except ZsnError as exc:  # names the file (files' errors, ParseError's source)
            errors.append(str(exc))
    return BondDetails(bonds, tuple(errors))


def _read_small(path: Path) -> str | None:
    try:
        return files.read_text(path, 256).strip()
    except ZsnError:
        return None  # e.g. EINVAL: the driver has no speed


def with_speeds(interfaces: tuple[Interface, ...], details: BondDetails,
                sys_class_net: Path = SYS_CLASS_NET) -> tuple[Interface, ...]:
    """Speed and duplex: sysfs for hardware and bonds (only when sysfs shows this
    namespace's device: same ifindex), /proc/net/bonding for bond members."""
    from_proc = {slave.name: slave for bond in details.bonds.values() for slave in bond.slaves}
    result = []
    for interface in interfaces:
        speed = duplex = None
        slave = from_proc.get(interface.name)
        if slave is not None:
            speed = _speed_mbps(slave.speed.split()[0] if slave.speed else None)
            duplex = slave.duplex
        elif interface.kind in SPEED_KINDS:
            base = sys_class_net / interface.name
            if _read_small(base / "ifindex") == str(interface.index):
                speed = _speed_mbps(_read_small(base / "speed"))
                duplex = _read_small(base / "duplex")
                duplex = None if duplex in (None, "unknown") else duplex
        result.append(replace(interface, speed_mbps=speed, duplex=duplex)
                      if speed is not None or duplex is not None else interface)
    return tuple(result)


def _speed_mbps(text: str | None) -> int | None:
    """sysfs prints -1 (SPEED_UNKNOWN) for a link without carrier."""
    if text is None or not text.isdigit():
        return None
    value = int(text)
    return value if 0 < value < 10_000_000 else None


@dataclass(frozen=True)
class Structure:
    interfaces: tuple[Interface, ...]
    details: BondDetails
    counters: dict[int, Counters]
    errors: tuple[str, ...]


def read_structure() -> Structure:
    """Links, addresses, bond details and speeds, with the counters the link dump carries."""
    records = rtnetlink.read_links()
    errors: list[str] = []
    try:
        addresses = addresses_by_index(rtnetlink.read_addresses())
    except NetlinkError as exc:
        addresses = {}
        errors.append(str(exc))
    interfaces = build_interfaces(records, addresses)
    details = read_bond_details(interfaces)
    interfaces = with_speeds(interfaces, details)
    counters = {record.index: record.counters for record in records
                if record.counters is not None}
    return Structure(interfaces, details, counters, tuple(errors) + details.errors)


class LinkMonitor:
    """Polled by the pane (never two polls at once): rates, history, cheap refreshes."""

    def __init__(self, history: int = HISTORY,
                 watcher: rtnetlink.LinkWatcher | None = None) -> None:
        self._watcher = watcher or rtnetlink.LinkWatcher()
        self._structure: Structure | None = None
        self._read_at = 0.0
        self._rates = CounterRates()
        self._lines: dict[tuple[str, int], deque[float]] = {}
        self._history: dict[tuple[str, int], tuple[float, ...]] = {}
        """The lines as tuples, kept while an idle link's line stays all zeros (a big
        idle host then builds nothing new per refresh)."""
        self._length = history
        self.version = 0
        """Counts whole re-reads: what depends on the link table only (lint, the
        tree) is worked out again when it changes."""
        self._last: LinksSnapshot | None = None
        self._quiet = False
        """The last snapshot had no traffic and no trend left to fade."""

    @property
    def details(self) -> BondDetails:
        return self._structure.details if self._structure else BondDetails({}, ())

    def poll(self, force: bool = False) -> LinksSnapshot:
        now = time.monotonic()
        changed = self._watcher.changed()
        if (force or changed or self._structure is None
                or now - self._read_at > FULL_READ_SECONDS):
            self._structure = read_structure()
            self._read_at = now
            self.version += 1
            counters = self._structure.counters
        else:
            counters = rtnetlink.read_counters()
            if self._quiet and self._last is not None and counters == self._last.counters:
                # Nothing moved and nothing is left to fade: the same snapshot, so the
                # pane has nothing to redo either (a big idle host costs one dump).
                return self._last
        taken = time.monotonic()
        structure = self._structure
        rates: dict[str, Rates] = {}
        history: dict[str, tuple[float, ...]] = {}
        keys = set()
        for interface in structure.interfaces:
            key = (interface.name, interface.index)
            keys.add(key)
            sample = counters.get(interface.index)
            if sample is None:
                continue
            measured = self._rates.update(key, taken, sample)
            if measured is None:
                history[interface.name] = self._history.get(key, ())
                continue
            rate = rates_from(measured)
            rates[interface.name] = rate
            history[interface.name] = self._remember(key, rate.rx_bytes + rate.tx_bytes)
        self._rates.forget_except(set(keys))
        for key in [k for k in self._history if k not in keys]:
            del self._history[key]
            self._lines.pop(key, None)
        self._last = LinksSnapshot(structure.interfaces, taken, structure.errors, counters,
                                   rates, history)
        self._quiet = bool(rates) and all(rate is IDLE for rate in rates.values()) and not any(
            any(line) for line in history.values())
        return self._last

    def _remember(self, key: tuple[str, int], value: float) -> tuple[float, ...]:
        kept = self._history.get(key)
        if not value and kept is not None and len(kept) == self._length and not any(kept):
            return kept
        line = self._lines.setdefault(key, deque(maxlen=self._length))
        line.append(value)
        kept = self._history[key] = tuple(line)
        return kept

    def close(self) -> None:
        self._watcher.close()


IDLE = Rates(0.0, 0.0, 0.0, 0.0, 0.0, 0.0)


def rates_from(per_second: tuple[float, ...]) -> Rates:
    """Per-second deltas of the eight `Counters` fields as the pane's `Rates`."""
    if not any(per_second):
        return IDLE
    (rx_packets, tx_packets, rx_bytes, tx_bytes, rx_errors, tx_errors, rx_dropped,
     tx_dropped) = per_second
    return Rates(rx_bytes, tx_bytes, rx_packets, tx_packets, rx_errors + tx_errors,
                 rx_dropped + tx_dropped)


def read_links(host: Host) -> tuple[LinksSnapshot, BondDetails]:
    """One reading of the live table (counters as the link dump carries them, no
    rates). Under --root there is no live table: empty, ``live=False``."""
    if not host.is_live:
        return LinksSnapshot((), time.monotonic(), live=False), BondDetails({}, ())
    started = time.monotonic()
    structure = read_structure()
    return (LinksSnapshot(structure.interfaces, started, structure.errors, structure.counters),
            structure.details)


def with_rates(snapshot: LinksSnapshot, window: float) -> LinksSnapshot:
    """`snapshot` with rates: the counters are read again `window` seconds after its
    reading (whatever work came in between counts towards the wait)."""
    if not snapshot.live:
        return snapshot
    remaining = window - (time.monotonic() - snapshot.taken_at)
    if remaining > 0:
        time.sleep(remaining)
    second = rtnetlink.read_counters()
    taken = time.monotonic()
    tracker = CounterRates()
    rates: dict[str, Rates] = {}
    for interface in snapshot.interfaces:
        first, later = snapshot.counters.get(interface.index), second.get(interface.index)
        if first is None or later is None:
            continue
        tracker.update(interface.index, snapshot.taken_at, first)
        measured = tracker.update(interface.index, taken, later)
        if measured is not None:
            rates[interface.name] = rates_from(measured)
    return replace(snapshot, taken_at=taken, counters=second, rates=rates)
