"""What the Links pane shows, as plain data: its columns and keyed rows, in tree order.

No Textual here: these are the very `zsn.view.Row`s the pane's `LiveTable` draws (the
tree's guides from each row's depth, whole columns dropped on a narrow screen), so
they are tested without a terminal. ``Row.data`` is ``(interface, rx, tx)``: the
`Interface` (None for a link only the config defines) and the two byte rates.
"""

from __future__ import annotations

from typing import Any

from zsn.format import human_rate, sparkline
from zsn.links.model import (
    BondState,
    Interface,
    LinksSnapshot,
    Rates,
    TreeRow,
    member_role,
    tree,
)
from zsn.links.persist import LinkConfig
from zsn.view import Cell, Column, Row, rate_columns, row_of

TREND_WIDTH = 8

COLUMNS = (
    Column("name", "Link", 1, help="the interface, under the bond, bridge or parent it "
                                   "belongs to (a veth under its peer)"),
    Column("kind", "Kind", 6, help="bond, vlan, bridge, veth, dummy ...; device: hardware"),
    # As wide as no-carrier from the start: a pulled cable does not move the columns.
    Column("state", "State", 2, min_width=len("no-carrier"),
           help="up; down: set down; no-carrier: up without a link; else the kernel's "
                "operstate"),
    Column("mtu", "MTU", 4, align="right", min_width=5, help="the link's MTU"),
    *rate_columns(3, where=" on the link"),
    Column("trend", "Trend", 7, help="receive + send bytes per second over the last "
                                     "refreshes (blank while idle)"),
    Column("detail", "Detail", 5,
           help="bond mode (active member; `no partner`: 802.3ad without LACP), a "
                "member's MII status, role and failures (`2×`), a VLAN's id, a bridge "
                "port's STP state"),
    Column("packets", "Pkt/s ↓/↑", 9, short_label="Pkt/s", align="right",
           help="packets per second received/sent"),
    Column("faults", "Err/Drop", 8, align="right",
           help="errors and drops per second (receive + send)"),
    Column("speed", "Speed", 10, align="right",
           help="link speed (and duplex when not full), where the driver reports it"),
    Column("addresses", "Addresses", 11, help="IPv4 and global IPv6 addresses"),
    Column("mac", "MAC", 12, help="the link-layer address"),
)

STATE_TONES = {"up": "good", "down": "bad", "no-carrier": "bad", "lowerlayerdown": "bad",
               "notpresent": "bad", "dormant": "warn", "testing": "warn"}


def _rate(value: float | None) -> str:
    return human_rate(value) if value is not None else "-"


def _pair(first: float, second: float) -> str:
    return f"{first:.0f}/{second:.0f}"


def detail(interface: Interface, master_bond: BondState | None = None) -> Cell:
    """The stack-specific word: bond mode and LACP, a member's MII and whether it
    carries traffic (`master_bond`: the bond it belongs to), VLAN id, port state."""
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
        role = member_role(member, master_bond)
        said = "" if role in ("active", "down") else f" {role}"
        tone = "bad" if role == "down" else "warn" if role == "standby" else ""
        return Cell(f"mii {member.mii_status}{said}{failures}", tone,
                    f"mii {member.mii_status}{said}")
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
          history: tuple[float, ...], master_bond: BondState | None = None) -> dict[str, Cell]:
    """A live link's cells by column key (`master_bond`: the bond it is a member of)."""
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
        "detail": detail(interface, master_bond),
        "packets": Cell(_pair(rates.rx_packets, rates.tx_packets) if rates else "-"),
        "faults": Cell(_pair(rates.errors, rates.drops) if rates else "-",
                       "bad" if rates and (rates.errors or rates.drops) else ""),
        "speed": Cell(speed),
        "mac": Cell(interface.mac or ""),
        "addresses": Cell(" ".join(routable),
                          short=f"{routable[0]} +{len(routable) - 1}"
                          if len(routable) > 1 else None),
    }


def row(tree_row: TreeRow, snapshot: LinksSnapshot) -> Row:
    interface = tree_row.interface
    rates = snapshot.rates.get(interface.name)
    master = snapshot.by_name().get(interface.master) if interface.member and \
        interface.master else None
    return row_of(interface.name, COLUMNS,
                  cells(interface, rates, snapshot.history.get(interface.name, ()),
                        master.bond if master is not None else None),
                  depth=tree_row.depth,
                  data=(interface, rates.rx_bytes if rates else None,
                        rates.tx_bytes if rates else None))


def rows(snapshot: LinksSnapshot) -> list[Row]:
    """Every link once, depth first: bond > members, bridge > ports, parent > VLANs."""
    return [row(tree_row, snapshot) for tree_row in tree(snapshot.interfaces)]


def config_row(config: LinkConfig) -> Row:
    """A link only the config defines (offline, under --root), shown muted."""
    members = ",".join(config.members)
    what = config.mode or (f"vlan {config.vlan_id} on {config.parent}" if config.parent
                           else "")
    return row_of(config.name, COLUMNS, {
        "name": Cell(config.name), "kind": Cell(config.kind),
        "state": Cell("config", "muted"),
        "mtu": Cell(str(config.mtu) if config.mtu else "-"),
        "detail": Cell(what + (f" {members}" if members else ""), short=what or None),
        "addresses": Cell(config.source),
    }, state="muted", data=(None, None, None))


class TableRows:
    """The table's rows poll after poll. A link whose inputs (its interface record,
    place in the tree, rates, trend) are those of the last poll keeps its row object:
    an idle host formats nothing, and the table skips such rows without comparing
    them."""

    def __init__(self) -> None:
        self._tree: tuple[tuple[Interface, ...], list[TreeRow]] = ((), [])
        self._memo: dict[str, tuple[tuple[Any, ...], Row]] = {}

    def rows(self, snapshot: LinksSnapshot, configs: tuple[LinkConfig, ...] = ()) -> list[Row]:
        """The live links as a tree; for a root that is not this machine (no live
        links), the links its config defines."""
        if not snapshot.live:
            return [config_row(config) for config in configs]
        if self._tree[0] is not snapshot.interfaces:  # the table was read again
            self._tree = (snapshot.interfaces, tree(snapshot.interfaces))
        result = []
        memo: dict[str, tuple[tuple[Any, ...], Row]] = {}
        for tree_row in self._tree[1]:
            name = tree_row.interface.name
            inputs = (tree_row.interface, tree_row.depth, snapshot.rates.get(name),
                      snapshot.history.get(name, ()))
            old = self._memo.get(name)
            if old is not None and old[0][0] is inputs[0] and old[0][1:] == inputs[1:]:
                shown = old[1]
            else:
                shown = row(tree_row, snapshot)
            memo[name] = (inputs, shown)
            result.append(shown)
        self._memo = memo
        return result
