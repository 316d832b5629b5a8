"""OpenVPN pane: every connection as its systemd unit, with the tunnel's live state."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any, ClassVar

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType

from zsn.errors import ZsnError
from zsn.openvpn import actions, view
from zsn.openvpn.connections import Connection, load
from zsn.openvpn.live import OpenVpnSnapshot, read_openvpn
from zsn.plan import Plan
from zsn.system.host import Host
from zsn.tui.panes.base import GONE_NOTICE_SECONDS, GoneRows, LivePane, NotNow
from zsn.tui.widgets.safe import SafeStatic
from zsn.tui.widgets.status import StatusLine
from zsn.tui.widgets.table import LiveTable
from zsn.tui.wording import say


def now() -> float:
    """The wall clock for "active for" (replaced in snapshot tests)."""
    return time.time()



class OpenVpnPane(LivePane[OpenVpnSnapshot]):
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

    def __init__(self, host: Host, refresh_seconds: float, **kwargs: Any) -> None:
        super().__init__(host, refresh_seconds, **kwargs)
        self._rows = view.ConnectionRows()
        self._snapshot: OpenVpnSnapshot | None = None
        self._details = ""
        self.gone = GoneRows(lambda message: self.notify(
            message, severity="warning", timeout=GONE_NOTICE_SECONDS), "Connection ")

    def compose(self) -> ComposeResult:
        yield StatusLine()
        yield LiveTable(view.COLUMNS, id="ovpn-connections", title="Connections")
        details = SafeStatic("", id="ovpn-details")
        details.border_title = "Details"
        yield details

    # -- data ------------------------------------------------------------------
    def fetch(self) -> OpenVpnSnapshot:
        return read_openvpn(self.host)

    def show(self, snapshot: OpenVpnSnapshot) -> None:
        self._snapshot = snapshot
        self._show_status(snapshot)
        with self.app.batch_update():
            table = self.query_one("#ovpn-connections", LiveTable)
            table.update(self.gone.merge(self._rows.rows(snapshot)))
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
        findings = self._snapshot.findings if self._snapshot else ()
        return Text("\n".join(view.details(conn, findings, now())))

    # -- events and actions ----------------------------------------------------
    def on_live_table_highlighted(self, event: LiveTable.Highlighted) -> None:
        if self._snapshot is not None:
            self._update_details()
        self.state_changed()

    def not_now(self, action: str, parameters: tuple[object, ...]) -> NotNow | None:
        """Every key but import and refresh acts on the highlighted connection."""
        if action in ("import_profile", "refresh_now") or self._snapshot is None:
            return None
        if not self._snapshot.connections:
            return NotNow("No OpenVPN connections here: i imports a profile.", hidden=True)
        conn = self.selected()
        if conn is None:
            return NotNow("Highlight a connection first.")
        return self._unit_not_now(conn, action, parameters)

    @staticmethod
    def _unit_not_now(conn: Connection, action: str,
                      parameters: tuple[object, ...]) -> NotNow | None:
        """Start while it runs, stop while it does not, enable when enabled ...: systemd
        would do nothing (unknown without the bus: offered)."""
        unit = conn.unit
        if unit is None:
            return None
        name = conn.config.unit
        running = unit.active_state in ("active", "activating", "reloading")
        if action == "unit" and parameters == ("start",) and running:
            return NotNow(f"{name} is running (R restarts it).", hidden=True)
        if action == "unit" and parameters == ("stop",) and unit.active_state in (
                "inactive", "failed"):
            return NotNow(f"{name} is not running.", hidden=True)
        if action == "enable" and parameters and unit.unit_file_state == (
                "enabled" if parameters[0] else "disabled"):
            return NotNow(f"{name} is {unit.unit_file_state} at boot already.", hidden=True)
        return None

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
