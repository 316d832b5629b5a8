"""What the OpenVPN pane shows, as plain data: its columns, one row per connection, and
the details box's lines.

No Textual here: these are the `zsn.view.Row`s the pane's `LiveTable` draws, tested
without a terminal. ``Row.data`` is ``(connection, rx_rate, tx_rate)``.
"""

from __future__ import annotations

from collections.abc import Iterable

from zsn.format import human_bytes, human_duration, human_rate
from zsn.lint import Finding
from zsn.openvpn.connections import Connection
from zsn.openvpn.live import OpenVpnSnapshot
from zsn.rates import RateTracker
from zsn.view import Cell, CellValue, Column, Row, rate_columns, row_of

COLUMNS = (
    Column("name", "Name", 1, help="the config's name"),
    Column("unit", "Unit", 2, help="systemd's ActiveState/SubState of the unit (short: the "
                                   "ActiveState alone)"),
    Column("live", "Tunnel", 3,
           help="the state OpenVPN's management interface reports (CONNECTED, WAIT, "
                "RECONNECTING ...); `-` without a `management` line (key `m` adds one)"),
    *rate_columns(4, where=" on the link"),
    Column("address", "Address", 5, short_label="Addr", help="the tunnel address"),
    Column("boot", "Boot", 6, help="enabled or not at boot"),
    Column("remote", "Remote", 7, help="the server it is connected to, else the first "
                                       "`remote` of the config (`+N`: more)"),
    Column("kind", "Type", 8, help="client, server, or legacy (a top-level NAME.conf)"),
)
LIVE_GOOD = ("CONNECTED",)
LIVE_BAD = ("EXITING", "RECONNECTING", "WAIT")

Rates = tuple[float | None, float | None]


def unit_cell(conn: Connection) -> Cell:
    unit = conn.unit
    if unit is None:
        return Cell("?", "warn")
    if not unit.exists:
        return Cell("no unit", "bad")
    tone = {"active": "good", "failed": "bad"}.get(unit.active_state, "")
    return Cell(f"{unit.active_state}/{unit.sub_state}", tone, short=unit.active_state)


def live_cell(conn: Connection) -> Cell:
    live = conn.live
    if live is None:
        return Cell("-")
    tone = ("good" if live.state in LIVE_GOOD else "bad" if live.state in LIVE_BAD
            else "warn")
    return Cell(live.state, tone)


def remote_cell(conn: Connection) -> Cell:
    """The server it is connected to, else the config's first ``remote``."""
    live, summary = conn.live, conn.summary
    if live and live.remote:
        return Cell(f"{live.remote}:{live.remote_port}")
    if summary and summary.remotes:
        first = summary.remotes[0]
        more = len(summary.remotes) - 1
        return Cell(f"{first.host}:{first.port}" + (f" +{more}" if more else ""))
    return Cell("-")


def row(conn: Connection, rates: Rates) -> Row:
    live, unit = conn.live, conn.unit
    cells: dict[str, CellValue] = {
        "name": Cell(conn.config.name, "bold"),
        "unit": unit_cell(conn),
        "live": live_cell(conn),
        "rx_rate": human_rate(rates[0]),
        "tx_rate": human_rate(rates[1]),
        "address": (live.tunnel_ipv4 or live.tunnel_ipv6 or "-") if live else "-",
        "boot": unit.unit_file_state if unit and unit.unit_file_state else "-",
        "remote": remote_cell(conn),
        "kind": conn.config.kind,
    }
    return row_of(conn.key, COLUMNS, cells, data=(conn, *rates))


class ConnectionRows:
    """The table's rows, poll after poll: each connection's byte rates from the change
    of its management interface's counters since the last snapshot."""

    def __init__(self) -> None:
        self._tracker = RateTracker()

    def rows(self, snapshot: OpenVpnSnapshot) -> list[Row]:
        shown = []
        for conn in snapshot.connections:
            live = conn.live
            rates: Rates = (None, None)
            if live and live.bytes_in is not None and live.bytes_out is not None:
                rates = self._tracker.update(conn.key, snapshot.taken_at, live.bytes_in,
                                             live.bytes_out)
            shown.append(row(conn, rates))
        self._tracker.forget_except({conn.key for conn in snapshot.connections})
        return shown


def details(conn: Connection, findings: Iterable[Finding], clock: float) -> list[str]:
    """The details box: config and unit, process or last result, role and remotes, the
    tunnel's state and totals, and the config's lint findings."""
    lines = [f"{conn.config.path} -> {conn.config.unit}"]
    unit, live, summary = conn.unit, conn.live, conn.summary
    if unit and unit.exists:
        if unit.active_state == "active" and unit.active_since_us:
            age = human_duration(clock - unit.active_since_us / 1e6)
            lines.append(f"PID {unit.main_pid or '-'}, active for {age}")
        else:
            status = (f" (exit status {unit.exec_main_status})"
                      if unit.result == "exit-code" and unit.exec_main_status else "")
            lines.append(f"{unit.active_state}, last result {unit.result or '-'}{status}")
    if summary:
        remotes = ", ".join(f"{r.host}:{r.port}/{r.proto}" for r in summary.remotes)
        lines.append(f"{summary.role}, dev {summary.dev or '?'}, remotes {remotes or '-'}")
    if live:
        total = (f", {human_bytes(live.bytes_in)} in / {human_bytes(live.bytes_out)} out"
                 if live.bytes_in is not None and live.bytes_out is not None else "")
        clients = f", {live.clients} clients" if live.clients is not None else ""
        lines.append(f"{live.state} {live.description}".strip() + total + clients)
    lines += [f"{f.id} {f.severity}: {f.message} -> {f.fix}" for f in findings
              if f.subject == conn.config.unit]
    return lines
