"""OpenVPN pane: every connection as its systemd unit, with the tunnel's live state."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any, ClassVar

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType

from zsn.errors import ZsnError
from zsn.format import human_bytes, human_duration, human_rate
from zsn.openvpn import actions
from zsn.openvpn.connections import Connection, load
from zsn.openvpn.live import OpenVpnSnapshot, read_openvpn
from zsn.plan import Plan
from zsn.rates import RateTracker
from zsn.tui.panes.base import GONE_NOTICE_SECONDS, GoneRows, LivePane
from zsn.tui.widgets.safe import SafeStatic
from zsn.tui.widgets.status import StatusLine
from zsn.tui.widgets.table import LiveTable
from zsn.tui.wording import say
from zsn.view import Cell, Column, Row, rate_columns


def now() -> float:
    """The wall clock for "active for" (replaced in snapshot tests)."""
    return time.time()



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


class OpenVpnPane(LivePane):
    PANE_HELP: ClassVar[str] = """\
### OpenVPN
One row per config under `/etc/openvpn`: `client/NAME.conf` runs as
`openvpn-client@NAME`, `server/NAME.conf` as `openvpn-server@NAME`, a top-level
`NAME.conf` as Debian's `openvpn@NAME`.

zsn connects to a management interface briefly each refresh and never holds it.
Start/stop/restart/enable/disable go to systemd over D-Bus and report the job's
result. `h` installs zsn's DNS hook: pushed DNS servers and domains go to
  systemd-resolved for the tun link, and are reverted when the tunnel goes down.
"""

    # Most important first: the footer shows as many as fit.
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("s", "unit('start')", "Start"),
        Binding("x", "unit('stop')", "Stop"),
        Binding("R", "unit('restart')", "Restart", key_display="R"),
        Binding("l", "log", "Log"),
        Binding("i", "import_profile", "Import…"),
        Binding("h", "hook", "DNS hook"),
        Binding("e", "enable(True)", "Enable"),
        Binding("d", "enable(False)", "Disable"),
        Binding("m", "management", "Mgmt socket"),
        Binding("r", "refresh_now", "Refresh", show=False),
    ]

    def __init__(self, host: Any, refresh_seconds: float, **kwargs: Any) -> None:
        super().__init__(host, refresh_seconds, **kwargs)
        self._rates = RateTracker()
        self._rate_cells: dict[str, tuple[float | None, float | None]] = {}
        self._snapshot: OpenVpnSnapshot | None = None
        self._details = ""
        self.gone = GoneRows(lambda message: self.notify(
            message, severity="warning", timeout=GONE_NOTICE_SECONDS), "Connection ")

    def compose(self) -> ComposeResult:
        yield StatusLine()
        yield LiveTable(COLUMNS, id="ovpn-connections", title="Connections")
        details = SafeStatic("", id="ovpn-details")
        details.border_title = "Details"
        yield details

    # -- data ------------------------------------------------------------------
    def fetch(self) -> OpenVpnSnapshot:
        return read_openvpn(self.host)

    def show(self, snapshot: OpenVpnSnapshot) -> None:
        self._snapshot = snapshot
        for conn in snapshot.connections:
            live = conn.live
            if live and live.bytes_in is not None and live.bytes_out is not None:
                self._rate_cells[conn.key] = self._rates.update(
                    conn.key, snapshot.taken_at, live.bytes_in, live.bytes_out)
            else:
                self._rate_cells[conn.key] = (None, None)
        self._rates.forget_except({c.key for c in snapshot.connections})
        self._show_status(snapshot)
        with self.app.batch_update():
            table = self.query_one("#ovpn-connections", LiveTable)
            table.update(self.gone.merge([self._row(c) for c in snapshot.connections]))
            self._update_details()

    def _show_status(self, snapshot: OpenVpnSnapshot) -> None:
        if not snapshot.connections:
            self.set_status(["No OpenVPN configs under /etc/openvpn (client/, server/ or "
                             "top level). Press i to import a .ovpn profile."], "info")
            return
        errors = [f"{c.config.name}: {e}" for c in snapshot.connections for e in c.errors]
        unique = list(dict.fromkeys(errors))
        self.set_status(unique[:4] + ([f"... and {len(unique) - 4} more"]
                                      if len(unique) > 4 else []), "warning")

    def _row(self, conn: Connection) -> Row:
        unit, live, summary = conn.unit, conn.live, conn.summary
        if unit is None:
            unit_cell = Cell("?", "warn")
        elif not unit.exists:
            unit_cell = Cell("no unit", "bad")
        else:
            tone = {"active": "good", "failed": "bad"}.get(unit.active_state, "")
            unit_cell = Cell(f"{unit.active_state}/{unit.sub_state}", tone,
                             short=unit.active_state)
        boot = unit.unit_file_state if unit and unit.unit_file_state else "-"
        if live is None:
            live_cell = Cell("-")
        else:
            tone = ("good" if live.state in LIVE_GOOD else
                    "bad" if live.state in LIVE_BAD else "warn")
            live_cell = Cell(live.state, tone)
        rx_rate, tx_rate = self._rate_cells.get(conn.key, (None, None))
        remote = Cell("-")
        if live and live.remote:
            remote = Cell(f"{live.remote}:{live.remote_port}")
        elif summary and summary.remotes:
            first = summary.remotes[0]
            more = len(summary.remotes) - 1
            remote = Cell(f"{first.host}:{first.port}" + (f" +{more}" if more else ""))
        return Row(conn.key, (
            Cell(conn.config.name, "bold"),
            unit_cell,
            live_cell,
            human_rate(rx_rate),
            human_rate(tx_rate),
            (live.tunnel_ipv4 or live.tunnel_ipv6 or "-") if live else "-",
            boot,
            remote,
            conn.config.kind,
        ), data=(conn, rx_rate, tx_rate))

    def selected(self) -> Connection | None:
        if not self._snapshot or not self._snapshot.connections:
            return None
        key = self.query_one("#ovpn-connections", LiveTable).cursor_key
        return next((c for c in self._snapshot.connections if c.key == key), None)

    def _update_details(self) -> None:
        text = self._details_text(self.selected())
        if text.plain != self._details:
            self._details = text.plain
            self.query_one("#ovpn-details", SafeStatic).update(text)

    def _details_text(self, conn: Connection | None) -> Text:
        if conn is None:
            return Text("")
        parts: list[str] = [f"{conn.config.path} -> {conn.config.unit}"]
        unit, live, summary = conn.unit, conn.live, conn.summary
        if unit and unit.exists:
            if unit.active_state == "active" and unit.active_since_us:
                age = human_duration(now() - unit.active_since_us / 1e6)
                parts.append(f"PID {unit.main_pid or '-'}, active for {age}")
            else:
                status = (f" (exit status {unit.exec_main_status})"
                          if unit.result == "exit-code" and unit.exec_main_status else "")
                parts.append(f"{unit.active_state}, last result {unit.result or '-'}{status}")
        if summary:
            remotes = ", ".join(f"{r.host}:{r.port}/{r.proto}" for r in summary.remotes)
            parts.append(f"{summary.role}, dev {summary.dev or '?'}, remotes {remotes or '-'}")
        if live:
            total = (f", {human_bytes(live.bytes_in)} in / {human_bytes(live.bytes_out)} out"
                     if live.bytes_in is not None and live.bytes_out is not None else "")
            clients = f", {live.clients} clients" if live.clients is not None else ""
            parts.append(f"{live.state} {live.description}".strip() + total + clients)
        findings = [f for f in (self._snapshot.findings if self._snapshot else ())
                    if f.subject == conn.config.unit]
        parts += [f"{f.id} {f.severity}: {f.message} -> {f.fix}" for f in findings]
        return Text("\n".join(parts))

    # -- events and actions ----------------------------------------------------
    def on_live_table_highlighted(self, event: LiveTable.Highlighted) -> None:
        if self._snapshot is not None:
            self._update_details()

    def _need_selection(self) -> Connection | None:
        conn = self.selected()
        if conn is None:
            self.notify("No connection selected.", severity="warning")
        return conn

    def _in_background(self, what: str, job: Callable[[], str]) -> None:
        """Run a blocking core call in a thread; report its outcome as a notification."""
        self.run_in_thread(job, lambda message: self._after_job(what, message, "information"),
                           lambda message: self._after_job(what, message, "error"))

    def _after_job(self, what: str, message: str, severity: str) -> None:
        if severity == "information" and message.endswith(": done"):
            self.notify(message, title=what)
        else:
            self.notify(message, title=what, severity="error" if severity == "error" else
                        "warning", timeout=10)
        self.poll(force=True)

    def action_unit(self, verb: str) -> None:
        conn = self._need_selection()
        if conn is None:
            return
        self.notify(f"{verb} {conn.config.unit} ...", timeout=2)
        self._in_background(verb.capitalize(), lambda: self._applied(
            actions.plan_unit(self.host, conn.config, verb)))

    def action_enable(self, enabled: bool) -> None:
        conn = self._need_selection()
        if conn is not None:
            self._in_background("Enable" if enabled else "Disable", lambda: self._applied(
                actions.plan_enabled(self.host, conn.config, enabled)))

    @staticmethod
    def _applied(plan: Plan) -> str:
        plan.apply()
        return f"{plan.title}: done"

    def action_log(self) -> None:
        from zsn.tui.screens.journal import JournalScreen

        conn = self._need_selection()
        if conn is not None:
            self.app.push_screen(JournalScreen(self.host, conn.config.unit))

    def action_hook(self) -> None:
        """Ask split or route-all DNS (what the config has now comes first), then plan."""
        from zsn.tui.screens.ask import ChooseScreen

        conn = self._need_selection()
        if conn is None:
            return
        try:
            config = load(self.host, conn.config)
        except ZsnError as exc:
            self.nothing_changed(say(exc, self))
            return
        route_all = actions.routes_all_dns(config)
        now = " (now)" if actions.runs_hook(config) else ""
        split = ("split", "Split DNS: pushed domains only" + ("" if route_all else now))
        every = ("all", "All DNS through the tunnel (~.)" + (now if route_all else ""))
        choices = [every, split] if route_all else [split, every]

        def chosen(choice: str | None) -> None:
            if choice is not None:
                self.run_plan(lambda: actions.plan_hook_install(
                    self.host, conn.config, route_all_dns=choice == "all"))

        self.app.push_screen(ChooseScreen(f"DNS hook for {conn.config.unit}", choices), chosen)

    def action_management(self) -> None:
        conn = self._need_selection()
        if conn is not None:
            self.run_plan(lambda: actions.plan_management_socket(self.host, conn.config))

    def action_import_profile(self) -> None:
        from zsn.tui.screens.openvpn_import import ImportScreen

        self.app.push_screen(ImportScreen(self.host), self.show_plan)

    def action_refresh_now(self) -> None:
        self.poll(force=True)
