"""WireGuard pane: interfaces and peers, live, the way `wg show` would, refreshed in place."""

from __future__ import annotations

import time
from time import monotonic
from typing import TYPE_CHECKING, Any, ClassVar

from textual.app import ComposeResult
from textual.binding import Binding, BindingType

from zsn.system.host import Host
from zsn.tui.panes.base import GONE_NOTICE_SECONDS, GoneRows, LivePane, NotNow
from zsn.tui.panes.wireguard_actions import (
    ACTION_BINDINGS,
    ACTION_HELP,
    CONFIG_ACTIONS,
    INTERFACE_ACTIONS,
    PEER_ACTIONS,
    RULE_ACTIONS,
    RULE_KEYS,
    FindingsLine,
    WireGuardActions,
)
from zsn.tui.widgets.status import Severity, StatusLine
from zsn.tui.widgets.table import LiveTable
from zsn.wireguard import view
from zsn.wireguard.model import InterfaceState, PeerState, WireGuardSnapshot

if TYPE_CHECKING:
    from zsn.wireguard.live import LiveCache
    from zsn.wireguard.recorder import Recorder


RECORD_SECONDS = 5.0
"""How often the pane records history. Events carry the device's own times and counters
are written once a minute at most, so a record every poll told the store nothing more (zsn
serve records every 30 s): with 200 moving peers it was an eighth of the pane's idle CPU.
Sessions shown follow within this time."""


def now() -> float:
    """The clock used for handshake ages (replaced in snapshot tests)."""
    return time.time()


def read_wireguard(host: Host, cache: LiveCache) -> WireGuardSnapshot:
    """`zsn.wireguard.live.read_wireguard` with the configs in /etc/wireguard (the
    keys that need one follow them), imported in the poll's thread, after the first
    frame (netlink and the UAPI code are not needed to draw it); replaced in tests."""
    from zsn.wireguard import live

    return live.read_wireguard(host, cache)._replace(
        configs=live.configured_interfaces(host))


def read_access_rules(host: Host, interface: str) -> dict[str, Any]:
    """`zsn.wireguard.acl_view.view` of the interface, as `view_dict` (worker thread);
    replaced in tests."""
    from zsn.wireguard.acl_view import view, view_dict

    return view_dict(view(host, interface))


def record_history(recorder: Recorder, snapshot: WireGuardSnapshot) -> WireGuardSnapshot:
    """`Recorder.record`, in the poll's thread; replaced in tests that must not write."""
    return recorder.record(snapshot)


class WireGuardPane(WireGuardActions, LivePane[WireGuardSnapshot]):
    PANE_HELP: ClassVar[str] = """\
### WireGuard
The upper table lists interfaces (kernel or userspace: wireguard-go, boringtun);
the lower one the peers of the highlighted interface, in config order (peers not
in the config after them, by name). `enter` on a peer shows all of it.
""" + ACTION_HELP

    BINDINGS: ClassVar[list[BindingType]] = [
        *ACTION_BINDINGS,
        Binding("r", "refresh_now", "Refresh", show=False),  # polling makes it rare
        Binding("tab", "focus_next_table", "Next table", show=False),
    ]

    def __init__(self, host: Host, refresh_seconds: float, **kwargs: Any) -> None:
        super().__init__(host, refresh_seconds, **kwargs)
        self._live_cache: LiveCache | None = None
        self._recorder: Recorder | None = None
        self._recorded_at = -RECORD_SECONDS
        self._recorded: WireGuardSnapshot | None = None
        """The last snapshot recorded: its sessions and history note until the next."""
        self._peers = view.PeerRows()
        self._snapshot: WireGuardSnapshot | None = None
        self.gone = GoneRows(lambda message: self.notify(
            message, severity="warning", timeout=GONE_NOTICE_SECONDS), "Interface ")
        self._shown_interface: str | None = None
        self.rules_shown = False
        self._rules_reading = False
        # Mounted when `P` first shows them: two hidden tables cost the first frame
        # their mounting and styles (~2 % of its instructions).
        self._rules_table = LiveTable(view.RULE_COLUMNS, id="wg-rules", title="Access rules",
                                      empty_text="No rules.")
        self._tests_table = LiveTable(view.TEST_COLUMNS, id="wg-tests", title="Tests",
                                      empty_text="No tests: T adds one.")
        self._rules_table.display = self._tests_table.display = False

    def compose(self) -> ComposeResult:
        yield StatusLine()
        yield FindingsLine(id="wg-findings")
        yield LiveTable(view.INTERFACE_COLUMNS, id="wg-interfaces", title="Interfaces")
        peers = LiveTable(view.PEER_COLUMNS, id="wg-peers", title="Peers", zebra=True,
                          empty_text="No peers.")
        peers.on_window_moved = self._peers_came_into_view
        yield peers

    def tables(self) -> list[LiveTable]:
        """Every table, the access rules' and tests' before they are first shown too."""
        mounted = super().tables()
        return mounted + [table for table in (self._rules_table, self._tests_table)
                          if table not in mounted]

    def on_mount(self) -> None:
        # Textual runs LivePane.on_mount too (handlers of every class are called):
        # calling it here as well started a second polling timer.
        self.start_findings()

    # -- data ------------------------------------------------------------------
    def fetch(self) -> WireGuardSnapshot:
        if self._live_cache is None:
            from zsn.wireguard.live import LiveCache

            self._live_cache = LiveCache()
        snapshot = read_wireguard(self.host, self._live_cache)
        from zsn.wireguard.expiry import due_in_snapshot
        from zsn.wireguard.recorder import Recorder, take_off_expired

        if self._recorder is None:
            self._recorder = Recorder(self.host, report=self._report_from_thread)
        take_off_expired(self.host, self._recorder, due_in_snapshot(snapshot),
                         self._tell_from_thread, self._report_from_thread)
        recorded = self._recorded
        started = monotonic()
        if recorded is not None and started - self._recorded_at < RECORD_SECONDS:
            return snapshot._replace(sessions=recorded.sessions,
                                     history_note=recorded.history_note)
        self._recorded_at = started
        self._recorded = recorded = record_history(self._recorder, snapshot)
        return recorded

    def _tell_from_thread(self, message: str) -> None:
        self.app.call_from_thread(self.notify, message, timeout=10)

    def _report_from_thread(self, message: str) -> None:
        self.app.call_from_thread(self.notify, message, severity="warning", timeout=10)

    def on_unmount(self) -> None:
        if self._recorder is not None:
            self._recorder.close()

    def show(self, snapshot: WireGuardSnapshot) -> None:
        self._snapshot = snapshot
        self._peers.observe(snapshot)
        self._show_status(snapshot)
        with self.app.batch_update():
            interfaces = self.query_one("#wg-interfaces", LiveTable)
            interfaces.update(self.gone.merge(view.interface_rows(snapshot.interfaces)))
            self._update_peers()
        if self.rules_shown:
            self._read_rules()

    def _show_status(self, snapshot: WireGuardSnapshot) -> None:
        lines: list[str] = []
        severity: Severity = "error"
        if snapshot.read_only_reason:
            lines.append(f"Read-only: {snapshot.read_only_reason}")
            severity = "warning"
        else:
            lines.extend(snapshot.errors)
        if snapshot.history_note:
            lines.append(snapshot.history_note)
            severity = "warning" if not snapshot.errors else severity
        if not snapshot.interfaces and not lines and not self.gone.gone_keys:
            lines.append("No WireGuard interfaces are running. Bring one up with U "
                         "(or `wg-quick up NAME`), or create one with N.")
            severity = "info"
        self.set_status(lines, severity)

    def selected_interface(self) -> InterfaceState | None:
        if not self._snapshot or not self._snapshot.interfaces:
            return None
        key = self.query_one("#wg-interfaces", LiveTable).cursor_key
        for interface in self._snapshot.interfaces:
            if interface.name == key:
                return interface
        return None

    def _update_peers(self) -> None:
        table = self.query_one("#wg-peers", LiveTable)
        interfaces = self.query_one("#wg-interfaces", LiveTable)
        interface = self.selected_interface()
        name = interfaces.cursor_key
        if name != self._shown_interface:
            self._peers.forget()
            table.clear()
            self._shown_interface = name
        title = "Peers"
        if name and interface is None:
            title = f"Peers of {name} (gone)"
        elif interface is not None:
            title = f"Peers of {name}" + ("" if interface.in_namespace else " (other netns)")
        table.set_title(title)
        sessions = self._snapshot.sessions if self._snapshot is not None else {}
        # Only the rows on screen are brought up to date each poll (200 peers whose
        # rates move cost their formatting and the table's comparison every second);
        # the others when they come into view, or all while the order or the filter
        # depends on their values.
        if interface is not None and not table.row_count and not table.size.height:
            # Shown before the first frame (the read made at start-up): the rows a screen
            # can show now, the others once that frame is drawn (a big server's 5,000
            # rows cost ~25 ms to make, for some twenty lines).
            lines = self.app.size.height
            table.update(self._peers.rows(interface, sessions, now(), first=lines))
            if len(interface.peers) > lines:
                self.call_after_refresh(self._update_peers)
        else:
            current = None if table.orders_by_value else set(table.window_keys())
            table.update(self._peers.rows(interface, sessions, now(), current)
                         if interface else [])
        self._refresh_details(interface)

    def _peers_came_into_view(self) -> None:
        """`LiveTable.on_window_moved` of the peers' table: rows kept as they were may be
        drawn now."""
        stale = self._peers.stale
        if not stale or self._snapshot is None:
            return
        table = self.query_one("#wg-peers", LiveTable)
        if table.orders_by_value or not stale.isdisjoint(table.window_keys()):
            self._update_peers()

    def _refresh_details(self, interface: InterfaceState | None) -> None:
        screen = self.app.screen
        if screen is self.screen or interface is None:
            return  # no peer open (and no need to load its screen's module yet)
        from zsn.tui.screens.peer_details import PeerDetailsScreen

        if isinstance(screen, PeerDetailsScreen):
            sessions = self._snapshot.sessions if self._snapshot is not None else {}
            for peer in interface.peers:
                if peer.public_key == screen.peer.public_key:
                    key = (interface.name, peer.public_key)
                    screen.update_peer(peer, self._peers.rates(*key), sessions.get(key))

    def selected_peer(self) -> PeerState | None:
        row = self.query_one("#wg-peers", LiveTable).cursor_row
        if row is None or self.selected_interface() is None:
            return None
        peer: PeerState = row.data[0]
        return peer

    # -- events and actions ----------------------------------------------------
    def not_now(self, action: str, parameters: tuple[object, ...]) -> NotNow | None:
        """A peer's keys need a highlighted peer, an interface's a running interface;
        adding a peer, bringing one up and enabling a peer need a config that allows it."""
        if self._snapshot is None:
            return None
        if action in RULE_ACTIONS and not self.rules_shown:
            return NotNow("The access rules are not shown: P shows them.", hidden=True)
        if self.rules_shown and action in PEER_ACTIONS | CONFIG_ACTIONS:
            return NotNow("The access rules are shown: P shows the peers again.", hidden=True)
        if action in RULE_ACTIONS and self.selected_interface() is None:
            return NotNow("Highlight a running interface first.")
        if action == "access_rules" and self.selected_interface() is None:
            return NotNow("Highlight a running interface first.", hidden=True)
        if action in CONFIG_ACTIONS:
            return self._config_not_now(action, self._snapshot)
        if action not in PEER_ACTIONS | INTERFACE_ACTIONS:
            return None
        if not self._snapshot.interfaces:
            return NotNow("No WireGuard interface is running: U brings one up, N creates "
                          "one.", hidden=True)
        if self.selected_interface() is None:
            return NotNow("Highlight a running interface first.")
        if action in PEER_ACTIONS and self.selected_peer() is None:
            return NotNow("Highlight a peer first.")
        return None

    def _config_not_now(self, action: str, snapshot: WireGuardSnapshot) -> NotNow | None:
        configs = snapshot.configs
        if configs is None:
            return None  # not listable from here: the action says what it finds
        if not configs:
            return NotNow("No config in /etc/wireguard: N creates an interface.")
        if action == "interface_up":
            running = {each.name for each in snapshot.interfaces if each.running}
            if all(name in running for name in configs):
                return NotNow("Every interface with a config is already up.")
        if action == "enable_peer":
            interface = self.selected_interface()
            if interface is None:
                return NotNow("Highlight a running interface first.")
            if not interface.disabled_peers:
                return NotNow(f"{interface.name} has no disabled peers.")
        return None

    def on_live_table_highlighted(self, event: LiveTable.Highlighted) -> None:
        if event.table.id == "wg-interfaces" and self._snapshot is not None \
                and event.key != self._shown_interface:
            self._update_peers()
            if self.rules_shown:
                self._read_rules()
        self.state_changed()

    # -- access rules ----------------------------------------------------------
    def show_rules(self, shown: bool) -> None:
        """The access rules (and tests) of the highlighted interface instead of its
        peers, or the peers again."""
        self.rules_shown = shown
        rules, tests = self._rules_table, self._tests_table
        if shown and rules.parent is None:
            self.mount(rules, tests)
        self.query_one("#wg-peers", LiveTable).display = not shown
        rules.display = tests.display = shown
        if shown:
            rules.clear()
            tests.clear()
            self._read_rules()
            rules.focus()
        else:
            self.query_one("#wg-peers", LiveTable).focus()
        self.state_changed()

    def _read_rules(self) -> None:
        interface = self.query_one("#wg-interfaces", LiveTable).cursor_key
        if interface is None or self._rules_reading:
            return
        self._rules_reading = True

        def done(data: dict[str, Any]) -> None:
            self._rules_reading = False
            if self.rules_shown and interface == \
                    self.query_one("#wg-interfaces", LiveTable).cursor_key:
                self._show_rules(interface, data)

        def failed(message: str) -> None:
            self._rules_reading = False
            self._rules_table.set_title(f"Access rules of {interface}: {message}")

        self.run_in_thread(lambda: read_access_rules(self.host, interface), done, failed)

    def _show_rules(self, interface: str, data: dict[str, Any]) -> None:
        rules = self._rules_table
        state = "in the kernel" if data["loaded"] else "not loaded"
        if data["problem"]:
            state = "differs from the kernel's (l: lint)"
        if not data["policy_file"]:
            state = "none yet: R adds the first rule"
        rules.set_title(f"Access rules of {interface}: default {data['default']['verdict']}, "
                        f"{state}")
        with self.app.batch_update():
            rules.update(view.rule_rows(data))
            self._tests_table.update(view.policy_test_rows(data))

    def highlighted_rule(self) -> tuple[str, int | None] | None:
        tests = self._tests_table
        if tests.has_focus and tests.cursor_row is not None:
            return "test", tests.cursor_row.data
        row = self._rules_table.cursor_row
        return ("rule", row.data) if row is not None else None

    def urgent_keys(self) -> tuple[str, ...]:
        return RULE_KEYS if self.rules_shown else ()

    def on_live_table_selected(self, event: LiveTable.Selected) -> None:
        if event.table.id == "wg-peers":
            self.action_peer_details()
        elif event.table.id == "wg-interfaces":
            self.query_one("#wg-peers", LiveTable).focus()

    def action_peer_details(self) -> None:
        from zsn.tui.screens.peer_details import PeerDetailsScreen

        interface = self.selected_interface()
        peer = self.selected_peer()
        if interface is None or peer is None:
            self.notify("No peer selected.", severity="warning")
            return
        key = (interface.name, peer.public_key)
        rates = self._peers.rates(*key)
        sessions = self._snapshot.sessions if self._snapshot is not None else {}
        self.app.push_screen(PeerDetailsScreen(interface.name, peer, rates, now,
                                               sessions.get(key), self.host,
                                               interface.groups.get(peer.public_key, ())))

    def action_refresh_now(self) -> None:
        self.poll(force=True)

    def action_focus_next_table(self) -> None:
        shown = [table for table in self.query(LiveTable) if table.display]
        focused = next((i for i, table in enumerate(shown) if table.has_focus), -1)
        shown[(focused + 1) % len(shown)].focus()
