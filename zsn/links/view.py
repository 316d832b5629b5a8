"""The Links pane's table as plain data: columns with priorities, keyed rows of cells.

No Textual here: the pane turns cells into styled text, and tests check rows, widths
and which columns a narrow screen keeps without starting an app.
"""

from __future__ import annotations

from typing import NamedTuple

from zsn.format import human_rate, sparkline
from zsn.links.model import Interface, LinksSnapshot, Rates, TreeRow, tree

TREND_WIDTH = 8


class Column(NamedTuple):
    key: str
    label: str
    priority: int
    """Lower stays longer: a narrow screen drops the highest first, whole."""
    right: bool = False


COLUMNS = (
    Column("name", "Link", 0), Column("kind", "Kind", 5), Column("state", "State", 1),
    Column("mtu", "MTU", 3, True), Column("rx", "↓ Rate", 2, True),
    Column("tx", "↑ Rate", 2, True), Column("trend", "Trend", 6), Column("detail", "Detail", 4),
    Column("packets", "Pkt/s ↓/↑", 8, True), Column("faults", "Err/Drop", 7, True),
    Column("speed", "Speed", 9, True), Column("mac", "MAC", 11),
    Column("addresses", "Addresses", 10),
)
"""At 80 columns: link, kind, state, MTU and rates (the details box has the rest);
the bond/member detail comes next, then the trend, errors, packets, speed."""


class Cell(NamedTuple):
    text: str
    style: str = ""
    """A theme variable name (``text-success`` ...) or ``bold``; empty for none."""


STATE_STYLES = {"up": "text-success", "unknown": "text-success", "down": "text-error",
                "no-carrier": "text-error", "lowerlayerdown": "text-error",
                "dormant": "text-warning", "testing": "text-warning"}


def _rate(value: float | None) -> str:
    return human_rate(value) if value is not None else "-"


def _pair(first: float, second: float) -> str:
    return f"{first:.0f}/{second:.0f}"


def detail(interface: Interface) -> Cell:
    """The stack-specific word: bond mode and LACP, member MII, VLAN id, port state."""
    bond = interface.bond
    if bond is not None:
        text = bond.mode or "?"
        if bond.has_partner is False:
            return Cell(f"{text} no partner", "text-error")
        if bond.active_member:
            text += f" ({bond.active_member})"
        return Cell(text)
    member = interface.member
    if member is not None:
        failures = f" {member.link_failure_count}×" if member.link_failure_count else ""
        role = "" if member.state in (None, "active") else f" {member.state}"
        style = "" if member.mii_status == "up" else "text-error"
        return Cell(f"mii {member.mii_status}{role}{failures}", style)
    if interface.vlan_id is not None:
        return Cell(f"vlan {interface.vlan_id}")
    if interface.port_state is not None:
        style = "" if interface.port_state == "forwarding" else "text-warning"
        return Cell(interface.port_state, style)
    if interface.kind == "bridge":
        return Cell("stp on" if interface.stp else "")
    if interface.peer_elsewhere:
        return Cell("peer in netns")
    return Cell("")


def cells(row: TreeRow, rates: Rates | None, history: tuple[float, ...]) -> dict[str, Cell]:
    interface = row.interface
    state = interface.state_text
    speed = ""
    if interface.speed_mbps:
        speed = (f"{interface.speed_mbps // 1000}G" if interface.speed_mbps % 1000 == 0
                 else f"{interface.speed_mbps}M") + (
            "" if interface.duplex in (None, "full") else f" {interface.duplex}")
    return {
        "name": Cell(row.prefix + interface.name, "bold" if row.depth == 0 else ""),
        "kind": Cell(interface.kind),
        "state": Cell(state, STATE_STYLES.get(state, "")),
        "mtu": Cell(str(interface.mtu)),
        "rx": Cell(_rate(rates.rx_bytes if rates else None)),
        "tx": Cell(_rate(rates.tx_bytes if rates else None)),
        # An idle link draws no line: 500 idle rows stay blank and never repaint.
        "trend": Cell(sparkline(list(history), TREND_WIDTH) if any(history) else "",
                      "text-accent"),
        "detail": detail(interface),
        "packets": Cell(_pair(rates.rx_packets, rates.tx_packets) if rates else "-"),
        "faults": Cell(_pair(rates.errors, rates.drops) if rates else "-",
                       "text-error" if rates and (rates.errors or rates.drops) else ""),
        "speed": Cell(speed),
        "mac": Cell(interface.mac or ""),
        "addresses": Cell(" ".join(a for a in interface.addresses
                                   if not a.startswith("fe80:")) or ""),
    }


def table_rows(snapshot: LinksSnapshot) -> dict[str, dict[str, Cell]]:
    """Every link's cells keyed by its name, in tree order."""
    return {row.interface.name: cells(row, snapshot.rates.get(row.interface.name),
                                      snapshot.history.get(row.interface.name, ()))
            for row in tree(snapshot.interfaces)}


def visible_columns(rows: dict[str, dict[str, Cell]], width: int,
                    columns: tuple[Column, ...] = COLUMNS, padding: int = 2) -> list[Column]:
    """The columns that fit in `width` cells: taken whole in priority order while they
    fit (a wide column that does not fit leaves room for narrower, lesser ones), shown
    in table order. Each is as wide as its widest cell or label."""
    needed = {column.key: max([len(column.label)] + [len(row[column.key].text)
                                                      for row in rows.values()]) + padding
              for column in columns}
    chosen: set[str] = set()
    used = 0
    for column in sorted(columns, key=lambda c: c.priority):
        if not chosen or used + needed[column.key] <= width:
            chosen.add(column.key)
            used += needed[column.key]
    return [column for column in columns if column.key in chosen]
