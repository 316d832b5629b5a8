"""What the WireGuard pane shows, as plain data: its two tables' columns and rows.

No Textual here: these are the `zsn.view.Row`s the pane's `LiveTable`s draw, tested
without a terminal. ``Row.data`` is the `InterfaceState` for an interface row, and
``(peer, rx_rate, tx_rate)`` for a peer row (the rates order their columns).
"""

from __future__ import annotations

from collections.abc import Container, Iterable, Mapping
from functools import lru_cache
from typing import Any, NamedTuple

from zsn.format import coarse_duration, human_bytes, human_rate, short_key
from zsn.rates import counter_rates
from zsn.view import Cell, CellValue, Column, Row, rate_columns, row_of
from zsn.wireguard.model import (
    InterfaceState,
    PeerSession,
    PeerState,
    WireGuardSnapshot,
    handshake_state,
)

Rates = tuple[float | None, float | None]
"""Bytes per second received and sent since the last reading (None: not known yet)."""
NO_RATES: Rates = (None, None)


def _handshake_order(row: Row) -> float:
    peer: PeerState = row.data[0]
    return float(peer.latest_handshake or 0)


INTERFACE_COLUMNS = (
    Column("name", "Interface", 1, short_label="Iface",
           help="the device; `(other netns)`: its wireguard-go socket is in the shared "
                "/var/run/wireguard but the device lives in another network namespace; "
                "`(stale)`: a socket with no daemon behind it, the interface is down "
                "(`U` removes it and brings it up)"),
    Column("type", "Type", 4, help="`kernel` module or `userspace` (wireguard-go, boringtun)"),
    Column("port", "Port", 3, align="right", help="UDP listen port"),
    Column("peers", "Peers", 2, align="right", help="number of peers"),
    Column("addresses", "Addresses", 5, short_label="Addr",
           help="the interface's addresses (`+N`: more, shown when wider)"),
    Column("key", "Public key", 6, short_label="Key", truncate=True, min_width=9,
           help="the interface's public key (as much as fits)"),
)
PEER_COLUMNS = (
    Column("name", "Peer", 1, truncate=True,
           help="the comment above the peer's `[Peer]` block in /etc/wireguard/IFACE.conf "
                "(`# name`, `# Name = name`), else the start of its public key"),
    Column("handshake", "Handshake", 2, min_width=6, sort_key=_handshake_order,
           help="time since the latest handshake (in 5 s steps under a minute, then in "
                "whole minutes; `enter` shows it to the second); `never` = none yet; "
                "`stale` (red) = older than 180 s, the peer has no working session"),
    Column("session", "Session", 3, min_width=5,
           help="from the history: `up 2h 05m` connected for that long (a handshake within "
                "270 s); `3d 02h ago` last heard from then; `-` not seen since history began"),
    *rate_columns(3),
    Column("allowed", "Allowed IPs", 4, short_label="IPs",
           help="networks routed to the peer (`+N`: more, shown when wider)"),
    Column("endpoint", "Endpoint", 5, help="the address the peer last connected from"),
    Column("expires", "Expires", 6, help="`in 5d 02h` (yellow within 7 days): when the peer "
                                          "is disabled (`zsn peer expire`); `-` never"),
    Column("rx", "Received", 6, short_label="Recv", align="right",
           sort_key=lambda row: row.data[0].rx_bytes, help="total received since it came up"),
    Column("tx", "Sent", 6, align="right", sort_key=lambda row: row.data[0].tx_bytes,
           help="total sent since it came up"),
    Column("groups", "Groups", 6,
           help="the access-rule groups the peer is in (`zsn wg acl`; `g` sets them; "
                "`enter` shows them when the column does not fit)"),
    Column("key", "Key", 7, truncate=True, min_width=9,
           help="the peer's public key (as much as fits; `enter` shows all of it)"),
)

NEVER = Cell("never", "warn")
WEEK = 7 * 86400


def listed(items: tuple[str, ...]) -> CellValue:
    """Several values in one cell; the short form is the first and a count."""
    if len(items) < 2:
        return items[0] if items else "-"
    return Cell(", ".join(items), short=f"{items[0]} +{len(items) - 1}")


def interface_row(interface: InterfaceState) -> Row:
    name = Cell(interface.name, "bold")
    if interface.stale:
        name = Cell(f"{interface.name} (stale)", "bad", short=interface.name)
    elif not interface.in_namespace:
        name = Cell(f"{interface.name} (other netns)", "muted")
    return row_of(interface.name, INTERFACE_COLUMNS, {
        "name": name,
        "type": interface.implementation,
        "port": str(interface.listen_port or "-"),
        "peers": str(len(interface.peers)),
        "addresses": listed(interface.addresses),
        "key": interface.public_key or "-",
    }, state="muted" if interface.stale or not interface.in_namespace else "",
        data=interface)


def handshake_cell(peer: PeerState, clock: float) -> Cell:
    if peer.latest_handshake is None:
        return NEVER
    state = handshake_state(peer.latest_handshake, clock)
    if state == "never":
        return NEVER
    return _age_cell(int(clock - peer.latest_handshake), "{}", state == "stale")


def session_cell(session: PeerSession | None, clock: float) -> CellValue:
    if session is None:
        return "-"
    if session.connected and session.since:
        return _age_cell(int(clock - session.since), "up {}")
    if session.last_seen:
        return _age_cell(int(clock - session.last_seen), "{} ago")
    return "-"


@lru_cache(maxsize=4096)
def _age_cell(seconds: int, form: str, stale: bool = False) -> Cell:
    """An age's cell, one object per shown age: every peer that handshook a moment
    apart shares it (a poll of a big server builds few, and compares them by identity)."""
    age = coarse_duration(seconds)
    if stale:
        return Cell(f"{age} stale", "bad", short=age)
    return Cell(form.format(age), "muted" if form.endswith("ago") else "good")


def expiry_cell(at: int | None, clock: float) -> CellValue:
    if at is None:
        return "-"
    if at <= clock:
        return Cell("expired", "bad")
    return Cell(f"in {coarse_duration(at - clock)}", "warn" if at - clock <= WEEK else "")


def peer_cells(peer: PeerState, rates: Rates,
               groups: tuple[str, ...] = ()) -> dict[str, CellValue]:
    """A peer's cells by column key, but those that change with the clock alone
    (`clock_cells`)."""
    return {
        "groups": listed(groups) if groups else "",
        "name": peer.name or short_key(peer.public_key, 12),
        "allowed": listed(peer.allowed_ips),
        "endpoint": peer.endpoint or "-",
        "key": peer.public_key,
    } | counter_cells(peer, rates)


def counter_cells(peer: PeerState, rates: Rates) -> dict[str, CellValue]:
    """The cells that follow the peer's byte counters: its rates and totals, as shown
    (rounded): a counter that moved changes what is drawn only when these change."""
    rx_rate, tx_rate = rates
    return {"rx_rate": human_rate(rx_rate), "tx_rate": human_rate(tx_rate),
            "rx": human_bytes(peer.rx_bytes), "tx": human_bytes(peer.tx_bytes)}


def clock_cells(peer: PeerState, session: PeerSession | None, expires: int | None,
                clock: float) -> dict[str, CellValue]:
    """The cells that change with the clock: ages counted to `clock`, at a step that
    suits their size (`zsn.format.coarse_duration`)."""
    return {"handshake": handshake_cell(peer, clock), "session": session_cell(session, clock),
            "expires": expiry_cell(expires, clock)}


def _indices(keys: tuple[str, ...]) -> tuple[tuple[str, int], ...]:
    return tuple((column.key, i) for i, column in enumerate(PEER_COLUMNS)
                 if column.key in keys)


_CLOCK_COLUMNS = _indices(("handshake", "session", "expires"))
_COUNTER_COLUMNS = _indices(("rx_rate", "tx_rate", "rx", "tx"))


def _moved(row: Row, cells: dict[str, CellValue],
           columns: tuple[tuple[str, int], ...]) -> tuple[CellValue, ...] | None:
    """`row`'s cells with `cells` in their columns; None when none differs."""
    shown = row.cells
    if all(shown[i] == cells[key] for key, i in columns):
        return None
    new = list(shown)
    for key, i in columns:
        new[i] = cells[key]
    return tuple(new)


class Counters(NamedTuple):
    """A snapshot's peers by (interface, public key), for their rates."""

    taken_at: float
    peers: dict[tuple[str, str], PeerState]


class PeerRows:
    """The peers' rows, poll after poll: each peer's rates from the change of its
    counters since the last snapshot, and each peer's row built once and then only
    told what moved. An idle peer keeps its row object (an idle server formats
    nothing, and the table skips such rows without comparing them); a peer whose
    counters moved gets the cells that follow them (`counter_cells`) formatted as
    shown, and keeps its cells as they are when those read the same.

    `rows(..., current=KEYS)` brings only those peers' rows up to date (the rows on
    screen, while the table's order and filter do not depend on values): the others
    keep the row they had (`stale` holds their keys) until they are asked for."""

    def __init__(self) -> None:
        self._readings: tuple[Counters | None, Counters | None] = (None, None)
        """The counters of the snapshot before and of the last one."""
        self._rates: dict[tuple[str, str], Rates] = {}
        """The rates asked for since the last snapshot."""
        self._rows: dict[str, tuple[PeerState, Rates, tuple[str, ...], Row]] = {}
        self.stale: set[str] = set()
        """Keys of the rows last given as they were, not brought up to date."""

    def observe(self, snapshot: WireGuardSnapshot) -> None:
        """Take a snapshot's counters: a peer's rate is since the snapshot before,
        worked out when asked for (the rows on screen, not every peer each poll)."""
        peers = {(interface.name, peer.public_key): peer
                 for interface in snapshot.interfaces for peer in interface.peers}
        self._readings = (self._readings[1], Counters(snapshot.taken_at, peers))
        self._rates = {}

    def rates(self, interface: str, public_key: str) -> Rates:
        key = (interface, public_key)
        found = self._rates.get(key)
        if found is None:
            found = self._rates[key] = self._rates_of(key)
        return found

    def _rates_of(self, key: tuple[str, str]) -> Rates:
        before, last = self._readings
        if before is None or last is None:
            return NO_RATES
        old, new = before.peers.get(key), last.peers.get(key)
        if old is None or new is None:
            return NO_RATES
        rates = counter_rates(before.taken_at, (old.rx_bytes, old.tx_bytes), last.taken_at,
                              (new.rx_bytes, new.tx_bytes))
        return NO_RATES if rates is None else (rates[0], rates[1])

    def forget(self) -> None:
        """Another interface's peers are shown: nothing to reuse."""
        self._rows.clear()
        self.stale.clear()

    def rows(self, interface: InterfaceState,
             sessions: Mapping[tuple[str, str], PeerSession], clock: float,
             current: Container[str] | None = None, first: int | None = None) -> list[Row]:
        """Every peer's row; only those in `current` up to date, when it is given (a
        peer seen for the first time is always). `first`: the first so many peers'
        rows only (a table not drawn yet: the lines a screen can show)."""
        if current is None:
            self.stale.clear()
            peers = interface.peers if first is None else interface.peers[:first]
            shown = [self._row(interface, peer, sessions.get((interface.name,
                                                              peer.public_key)), clock)
                     for peer in peers]
        else:
            cached = self._rows
            stale: set[str] = set()
            shown = []
            for peer in interface.peers:
                key = peer.public_key
                kept = cached.get(key) if key not in current else None
                if kept is not None:
                    shown.append(kept[3])
                    stale.add(key)
                else:
                    shown.append(self._row(interface, peer,
                                           sessions.get((interface.name, key)), clock))
            self.stale = stale
        if len(self._rows) > len(shown):
            keys = {row.key for row in shown}
            self._rows = {key: kept for key, kept in self._rows.items() if key in keys}
        return shown

    def _row(self, interface: InterfaceState, peer: PeerState, session: PeerSession | None,
             clock: float) -> Row:
        rates = self.rates(interface.name, peer.public_key)
        groups = interface.groups.get(peer.public_key, ())
        timed = clock_cells(peer, session, interface.expiries.get(peer.public_key), clock)
        cached = self._rows.get(peer.public_key)
        row: Row | None = None
        if cached is not None and cached[2] == groups:
            before, before_rates, _, row = cached
            if before is peer and before_rates == rates:  # an idle peer
                cells = _moved(row, timed, _CLOCK_COLUMNS)
                if cells is None:
                    return row
                row = Row(row.key, cells, row.state, row.depth, row.data)
            elif before.name == peer.name and before.allowed_ips == peer.allowed_ips \
                    and before.endpoint == peer.endpoint:  # its counters or handshake moved
                cells = _moved(row, counter_cells(peer, rates) | timed,
                               _COUNTER_COLUMNS + _CLOCK_COLUMNS) or row.cells
                row = Row(row.key, cells, row.state, row.depth, (peer, *rates))
            else:
                row = None
        if row is None:
            row = row_of(peer.public_key, PEER_COLUMNS,
                         peer_cells(peer, rates, groups) | timed, data=(peer, *rates))
        self._rows[peer.public_key] = (peer, rates, groups, row)
        return row


def interface_rows(interfaces: Iterable[InterfaceState]) -> list[Row]:
    return [interface_row(interface) for interface in interfaces]


# -- access rules ------------------------------------------------------------------

RULE_COLUMNS = (
    Column("number", "#", 1, align="right", help="the rule's number: the first rule that "
           "matches a packet decides; `-` is the default, for what no rule matches"),
    Column("verdict", "Verdict", 1, short_label="Do", help="`allow`, or `deny` (rejected: "
           "the sender is told at once)"),
    Column("from", "From", 1, truncate=True,
           help="a group, a peer, `behind:PEER`, an interface, a CIDR or `any`"),
    Column("to", "To", 1, truncate=True, help="as From"),
    Column("port", "Port", 2, help="the destination port (`445/tcp`; without /tcp or /udp: "
           "both); `any`: every packet"),
    Column("packets", "Packets", 3, short_label="Pkts", align="right", min_width=6,
           help="packets the rule decided (the first of each connection; replies pass "
                "apart), counted by the kernel since the table was loaded"),
    Column("bytes", "Bytes", 4, align="right", min_width=7, help="their bytes"),
)
TEST_COLUMNS = (
    Column("number", "#", 1, align="right", help="the test's number"),
    Column("test", "Test", 1, truncate=True,
           help="SRC -> DST[:PORT/PROTO] and the verdict it must get"),
    Column("state", "State", 1, help="`pass`, or `FAIL` and what explain says instead"),
)


def _count(value: int | None) -> str:
    return "-" if value is None else str(value)


def rule_rows(data: Mapping[str, Any]) -> list[Row]:
    """An interface's rules in order, then the default (`zsn.wireguard.acl_view.view_dict`
    of its policy): ``Row.data`` is the rule's number, None for the default."""
    rows = []
    for rule in data["rules"]:
        rows.append(row_of(f"rule-{rule['number']}", RULE_COLUMNS, {
            "number": str(rule["number"]),
            "verdict": Cell(rule["verdict"], "good" if rule["verdict"] == "allow" else "bad"),
            "from": rule["from"], "to": rule["to"], "port": rule["port"] or "any",
            "packets": _count(rule["packets"]),
            "bytes": human_bytes(rule["bytes"]) if rule["bytes"] is not None else "-",
        }, data=rule["number"]))
    default = data["default"]
    rows.append(row_of("default", RULE_COLUMNS, {
        "number": "-", "verdict": Cell(default["verdict"], "bold"),
        "from": Cell("(the default)", "muted"), "to": "", "port": "",
        "packets": _count(default["packets"]),
        "bytes": human_bytes(default["bytes"]) if default["bytes"] is not None else "-",
    }, data=None))
    return rows


def policy_test_rows(data: Mapping[str, Any]) -> list[Row]:
    """The policy's tests and their states: ``Row.data`` is the test's number."""
    return [row_of(f"test-{test['number']}", TEST_COLUMNS, {
        "number": str(test["number"]), "test": test["test"],
        "state": Cell("pass", "good") if test["passes"]
        else Cell(f"FAIL: {test['failure']}", "bad", short="FAIL"),
    }, data=test["number"]) for test in data["tests"]]
