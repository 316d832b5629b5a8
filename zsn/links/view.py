"""What the Links pane shows, as plain data: keyed rows of cells, in tree order.

No Textual here: the pane declares the columns (`zsn.view.Column`, with their
priorities) and hands these cells (`zsn.view.Cell`) to its `LiveTable`, which draws
the tree's guides from each row's depth and drops whole columns on a narrow screen.
"""

from __future__ import annotations

from typing import NamedTuple

from zsn.format import human_rate, sparkline
from zsn.links.model import Interface, LinksSnapshot, Rates, TreeRow, tree
from zsn.links.persist import LinkConfig
from zsn.view import Cell

TREND_WIDTH = 8
COLUMN_KEYS = ("name", "kind", "state", "mtu", "rx_rate", "tx_rate", "trend", "detail",
               "packets", "faults", "speed", "mac", "addresses")
"""The pane's columns, in order; every row has a cell for each."""


STATE_TONES = {"up": "good", "down": "bad", "no-carrier": "bad", "lowerlayerdown": "bad",
               "notpresent": "bad", "dormant": "warn", "testing": "warn"}


class ViewRow(NamedTuple):
    key: str
    cells: dict[str, Cell]
    depth: int
    interface: Interface | None
    """None for a link only the config defines (offline, under --root)."""
    rates: Rates | None = None


def _rate(value: float | None) -> str:
    return human_rate(value) if value is not None else "-"


def _pair(first: float, second: float) -> str:
    return f"{first:.0f}/{second:.0f}"


def detail(interface: Interface) -> Cell:
    """The stack-specific word: bond mode and LACP, member MII, VLAN id, port state."""
    bond = interface.bond
    if bond is not None:
        mode = bond.mode or "?"
        if bond.has_partner is False:
            return Cell(f"{mode} no partner", "bad", "no partner")
        if bond.active_member:
            return Cell(f"{mode} ({bond.active_member})", short=mode)
        return Cell(mode)
    member = interface.member
    if member is not None:
        failures = f" {member.link_failure_count}×" if member.link_failure_count else ""
        role = "" if member.state in (None, "active") else f" {member.state}"
        return Cell(f"mii {member.mii_status}{role}{failures}",
                    "" if member.mii_status == "up" else "bad", f"mii {member.mii_status}")
    if interface.vlan_id is not None:
        return Cell(f"vlan {interface.vlan_id}")
    if interface.port_state is not None:
        return Cell(interface.port_state, "" if interface.port_state == "forwarding" else "warn")
    if interface.kind == "bridge":
        return Cell("stp on" if interface.stp else "")
    if interface.peer_elsewhere:
        return Cell("peer in netns")
    return Cell("")


def cells(interface: Interface, rates: Rates | None,
          history: tuple[float, ...]) -> dict[str, Cell]:
    state = interface.state_text
    speed = ""
    if interface.speed_mbps:
        speed = (f"{interface.speed_mbps // 1000}G" if interface.speed_mbps % 1000 == 0
                 else f"{interface.speed_mbps}M") + (
            "" if interface.duplex in (None, "full") else f" {interface.duplex}")
    routable = [a for a in interface.addresses if not a.startswith("fe80:")]
    return {
        "name": Cell(interface.name),
        "kind": Cell(interface.kind),
        "state": Cell(state, STATE_TONES.get(state, "")),
        "mtu": Cell(str(interface.mtu)),
        "rx_rate": Cell(_rate(rates.rx_bytes if rates else None)),
        "tx_rate": Cell(_rate(rates.tx_bytes if rates else None)),
        # An idle link draws no line: 500 idle rows stay blank and never repaint.
        "trend": Cell(sparkline(list(history), TREND_WIDTH) if any(history) else "",
                      "accent"),
        "detail": detail(interface),
        "packets": Cell(_pair(rates.rx_packets, rates.tx_packets) if rates else "-"),
        "faults": Cell(_pair(rates.errors, rates.drops) if rates else "-",
                       "bad" if rates and (rates.errors or rates.drops) else ""),
        "speed": Cell(speed),
        "mac": Cell(interface.mac or ""),
        "addresses": Cell(" ".join(routable),
                          short=f"{routable[0]} +{len(routable) - 1}"
                          if len(routable) > 1 else None),
    }


def row(tree_row: TreeRow, snapshot: LinksSnapshot) -> ViewRow:
    interface = tree_row.interface
    rates = snapshot.rates.get(interface.name)
    return ViewRow(interface.name,
                   cells(interface, rates, snapshot.history.get(interface.name, ())),
                   tree_row.depth, interface, rates)


def rows(snapshot: LinksSnapshot) -> list[ViewRow]:
    """Every link once, depth first: bond > members, bridge > ports, parent > VLANs."""
    return [row(tree_row, snapshot) for tree_row in tree(snapshot.interfaces)]


def config_row(config: LinkConfig) -> ViewRow:
    """A link only the config defines (offline, under --root)."""
    members = ",".join(config.members)
    what = config.mode or (f"vlan {config.vlan_id} on {config.parent}" if config.parent
                           else "")
    blank = dict.fromkeys(COLUMN_KEYS, Cell(""))
    return ViewRow(config.name, blank | {
        "name": Cell(config.name), "kind": Cell(config.kind),
        "state": Cell("config", "muted"),
        "mtu": Cell(str(config.mtu) if config.mtu else "-"),
        "detail": Cell(what + (f" {members}" if members else ""), short=what or None),
        "addresses": Cell(config.source),
    }, 0, None)
