"""OpenVPN pane: every connection as its systemd unit, with the tunnel's live state."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, ClassVar

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.widgets import DataTable, Static

from zsn.errors import ZsnError
from zsn.format import human_bytes, human_duration, human_rate
from zsn.openvpn import actions
from zsn.openvpn.connections import Connection, load
from zsn.openvpn.live import OpenVpnSnapshot, read_openvpn
from zsn.plan import Plan
from zsn.rates import RateTracker
from zsn.tui.panes.base import LivePane


def now() -> float:
    """The wall clock for "active for" (replaced in snapshot tests)."""
    return time.time()


COLUMNS = (
    ("name", "Name"), ("unit", "Unit"), ("boot", "Boot"), ("live", "Tunnel"),
    ("rx_rate", "↓ Rate"), ("tx_rate", "↑ Rate"), ("address", "Address"),
    ("remote", "Remote"), ("kind", "Type"),
)
LIVE_GOOD = ("CONNECTED",)
LIVE_BAD = ("EXITING", "RECONNECTING", "WAIT")


class OpenVpnPane(LivePane):
    PANE_HELP: ClassVar[str] = """\
### OpenVPN
One row per config under `/etc/openvpn`: `client/NAME.conf` runs as
`openvpn-client@NAME`, `server/NAME.conf` as `openvpn-server@NAME`, a top-level
`NAME.conf` as Debian's `openvpn@NAME`.

- **Unit**: systemd's ActiveState/SubState. **Boot**: enabled or not at boot.
- **Tunnel**: the state OpenVPN's management interface reports (CONNECTED,
  WAIT, RECONNECTING ...), `-` when the config has no `management` line (key `m`
  adds one). zsn connects briefly each refresh and never holds the interface.
- **↓ Rate / ↑ Rate**: bytes per second on the link over the last refresh.
- Start/stop/restart/enable/disable go to systemd over D-Bus and report the job's
  result. `h` installs zsn's DNS hook: pushed DNS servers and domains go to
  systemd-resolved for the tun link, and are reverted when the tunnel goes down.
"""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("s", "unit('start')", "Start"),
        Binding("x", "unit('stop')", "Stop"),
        Binding("R", "unit('restart')", "Restart", key_display="R"),
        Binding("l", "log", "Log"),
        Binding("h", "hook", "DNS hook"),
        Binding("e", "enable(True)", "Enable", show=False),
        Binding("d", "enable(False)", "Disable", show=False),
        Binding("m", "management", "Mgmt socket", show=False),
        Binding("i", "import_profile", "Import", show=False),
        Binding("r", "refresh_now", "Refresh", show=False),
    ]

    def __init__(self, host: Any, refresh_seconds: float, **kwargs: Any) -> None:
        super().__init__(host, refresh_seconds, **kwargs)
        self._rates = RateTracker()
        self._rate_cells: dict[str, tuple[float | None, float | None]] = {}
        self._cells: dict[str, dict[str, Any]] = {}
        self._snapshot: OpenVpnSnapshot | None = None

    def compose(self) -> ComposeResult:
        yield Static("", classes="pane-status")
        table: DataTable[Any] = DataTable(id="ovpn-connections", cursor_type="row")
        table.border_title = "Connections"
        yield table
        details = Static("", id="ovpn-details")
        details.border_title = "Details"
        yield details

    def on_mount(self) -> None:
        table = self.query_one("#ovpn-connections", DataTable)
        for key, label in COLUMNS:
            table.add_column(label, key=key)
        self.status_line().display = False
        super().on_mount()

    def on_show(self) -> None:
        """Focus the table and read at once when the tab is opened, not at the next tick."""
        self.poll()

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
            self._update_table(snapshot)
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

    def _row(self, conn: Connection) -> dict[str, Any]:
        unit, live, summary = conn.unit, conn.live, conn.summary
        if unit is None:
            unit_cell = Text("?", style=self.theme_colour("text-warning"))
        elif not unit.exists:
            unit_cell = Text("no unit", style=self.theme_colour("text-error"))
        else:
            style = {"active": "text-success", "failed": "text-error"}.get(unit.active_state, "")
            unit_cell = Text(f"{unit.active_state}/{unit.sub_state}",
                             style=self.theme_colour(style) if style else "")
        boot = unit.unit_file_state if unit and unit.unit_file_state else "-"
        if live is None:
            live_cell = Text("-")
        else:
            style = ("text-success" if live.state in LIVE_GOOD else
                     "text-error" if live.state in LIVE_BAD else "text-warning")
            live_cell = Text(live.state, style=self.theme_colour(style))
        rx_rate, tx_rate = self._rate_cells.get(conn.key, (None, None))
        remote = "-"
        if live and live.remote:
            remote = f"{live.remote}:{live.remote_port}"
        elif summary and summary.remotes:
            first = summary.remotes[0]
            remote = f"{first.host}:{first.port}" + (
                f" +{len(summary.remotes) - 1}" if len(summary.remotes) > 1 else "")
        return {
            "name": Text(conn.config.name, style="bold"),
            "unit": unit_cell,
            "boot": Text(boot),
            "live": live_cell,
            "rx_rate": Text(human_rate(rx_rate), justify="right"),
            "tx_rate": Text(human_rate(tx_rate), justify="right"),
            "address": Text(live.tunnel_ipv4 or live.tunnel_ipv6 or "-" if live else "-"),
            "remote": Text(remote),
            "kind": Text(conn.config.kind),
        }

    def _update_table(self, snapshot: OpenVpnSnapshot) -> None:
        table = self.query_one("#ovpn-connections", DataTable)
        rows = {c.key: self._row(c) for c in snapshot.connections}
        self._update_rows(table, rows, self._cells)

    def selected(self) -> Connection | None:
        if not self._snapshot or not self._snapshot.connections:
            return None
        table = self.query_one("#ovpn-connections", DataTable)
        if table.row_count == 0:
            return None
        key = table.coordinate_to_cell_key(table.cursor_coordinate).row_key.value
        return next((c for c in self._snapshot.connections if c.key == key), None)

    def _update_details(self) -> None:
        self.query_one("#ovpn-details", Static).update(self._details_text(self.selected()))

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
    def on_data_table_row_highlighted(self, event: DataTable.RowHighlighted) -> None:
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

    def _nothing_changed(self, exc: ZsnError) -> None:
        self.notify(str(exc), title="Nothing changed", severity="error", timeout=10)

    def _offer_plan(self, make_plan: Callable[[], Plan]) -> None:
        from zsn.tui.screens.plan import PlanScreen

        try:
            plan = make_plan()
        except ZsnError as exc:
            self._nothing_changed(exc)
            return

        def answered(apply: bool | None) -> None:
            if apply:
                self._in_background(plan.title, lambda: f"{plan.title}: done ("
                                    + "; ".join(plan.apply()) + ")")

        self.app.push_screen(PlanScreen(plan), answered)

    def action_hook(self) -> None:
        """Ask split or route-all DNS (what the config has now comes first), then plan."""
        from zsn.tui.screens.ask import ChooseScreen

        conn = self._need_selection()
        if conn is None:
            return
        try:
            config = load(self.host, conn.config)
        except ZsnError as exc:
            self._nothing_changed(exc)
            return
        route_all = actions.routes_all_dns(config)
        now = " (now)" if actions.runs_hook(config) else ""
        split = ("split", "Split DNS: pushed domains only" + ("" if route_all else now))
        every = ("all", "All DNS through the tunnel (~.)" + (now if route_all else ""))
        choices = [every, split] if route_all else [split, every]

        def chosen(choice: str | None) -> None:
            if choice is not None:
                self._offer_plan(lambda: actions.plan_hook_install(
                    self.host, conn.config, route_all_dns=choice == "all"))

        self.app.push_screen(ChooseScreen(f"DNS hook for {conn.config.unit}", choices), chosen)

    def action_management(self) -> None:
        conn = self._need_selection()
        if conn is not None:
            self._offer_plan(lambda: actions.plan_management_socket(self.host, conn.config))

    def action_import_profile(self) -> None:
        from zsn.tui.screens.openvpn_import import ImportScreen

        def chosen(answer: tuple[Path, str] | None) -> None:
            if answer is not None:
                source, name = answer
                self._offer_plan(lambda: actions.plan_import(self.host, source, name))

        self.app.push_screen(ImportScreen(), chosen)

    def action_refresh_now(self) -> None:
        self.poll(force=True)
