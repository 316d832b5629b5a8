"""Words for a link: the details `zsn link show` prints and the pane's details box shows."""

from __future__ import annotations

from zsn.format import human_bytes, human_rate
from zsn.links.bonding import HASHED_MODES
from zsn.links.live import BondDetails
from zsn.links.model import ROLE_WORDS, BondState, Interface, LinksSnapshot, member_role


def describe(interface: Interface, snapshot: LinksSnapshot, details: BondDetails) -> list[str]:
    """The details a person wants about one link (headless `show` and the pane)."""
    lines = [f"{interface.name}: {interface.kind}, {interface.state_text}, MTU {interface.mtu}"
             + (f", {interface.speed_mbps} Mb/s" if interface.speed_mbps else "")
             + (f" {interface.duplex}" if interface.duplex else "")]
    if interface.mac:
        lines.append(f"  mac:        {interface.mac}")
    if interface.addresses:
        lines.append(f"  addresses:  {', '.join(interface.addresses)}")
    if interface.master:
        lines.append(f"  master:     {interface.master}")
    if interface.parent:
        lines.append(f"  VLAN:       id {interface.vlan_id} on {interface.parent}"
                     + (f" ({interface.vlan_protocol})" if interface.vlan_protocol else ""))
    if interface.peer or interface.peer_elsewhere:
        lines.append(f"  veth peer:  {interface.peer or 'in another network namespace'}")
    if interface.bond is not None:
        lines += _bond_lines(interface.bond)
    lines += _member_lines(interface, snapshot, details)
    if interface.kind == "bridge":
        lines.append(f"  STP:        {'on' if interface.stp else 'off'}")
    counters = snapshot.counters.get(interface.index)
    if counters is not None:
        lines.append(f"  received:   {human_bytes(counters.rx_bytes)}, {counters.rx_packets} "
                     f"packets, {counters.rx_errors} errors, {counters.rx_dropped} dropped")
        lines.append(f"  sent:       {human_bytes(counters.tx_bytes)}, {counters.tx_packets} "
                     f"packets, {counters.tx_errors} errors, {counters.tx_dropped} dropped")
    rates = snapshot.rates.get(interface.name)
    if rates is not None:
        lines.append(f"  rates:      ↓ {human_rate(rates.rx_bytes)} ({rates.rx_packets:.0f} "
                     f"pkt/s), ↑ {human_rate(rates.tx_bytes)} ({rates.tx_packets:.0f} pkt/s)")
    return lines


def _bond_lines(bond: BondState) -> list[str]:
    """The bond's mode and settings, its active member, its LACP partner."""
    settings = [bond.mode or "?", f"miimon {bond.miimon}"]
    if bond.xmit_hash_policy and bond.mode in HASHED_MODES:
        settings.append(f"hash {bond.xmit_hash_policy}")
    if bond.mode == "802.3ad":
        settings.append(f"lacp_rate {bond.lacp_rate}")
    lines = [f"  bond:       {', '.join(settings)}"]
    if bond.active_member:
        lines.append(f"  active:     {bond.active_member}")
    if bond.mode == "802.3ad":
        partner = bond.partner_mac or "?"
        note = "" if bond.has_partner else " (no LACP partner)"
        lines.append(f"  LACP:       aggregator {bond.aggregator}, partner {partner}{note}")
    return lines


def _member_lines(interface: Interface, snapshot: LinksSnapshot,
                  details: BondDetails) -> list[str]:
    """A line per bond member (MII, failures, role) or bridge port (its state)."""
    lines = []
    proc = details.bonds.get(interface.name)
    for member in (i for i in snapshot.interfaces if i.master == interface.name):
        state = member.member
        if state is not None:
            slave = next((s for s in proc.slaves if s.name == member.name), None) if proc \
                else None
            extra = f", aggregator {state.aggregator_id}" if state.aggregator_id else ""
            if slave is not None and slave.partner_mac:
                extra += f", partner {slave.partner_mac}"
            failures = state.link_failure_count
            lines.append(f"  member:     {member.name} mii {state.mii_status}, {failures} "
                         f"failure{'' if failures == 1 else 's'}{extra}; "
                         f"{ROLE_WORDS[member_role(state, interface.bond)]}")
        else:
            lines.append(f"  port:       {member.name} {member.port_state or member.state_text}")
    return lines
