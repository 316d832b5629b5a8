"""Links pane: every interface as a tree (bond > members, bridge > ports, parent > VLANs,
veth > peer) with state, MTU, live rates and a trend line; actions as plans."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, ClassVar

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.widgets import DataTable, Static

from zsn.errors import ValidationError, ZsnError
from zsn.links import actions, validate
from zsn.links.actions import Options, SessionLinkError
from zsn.links.lint import lint_links
from zsn.links.live import BondDetails, LinkMonitor
from zsn.links.model import Interface, LinksSnapshot, TreeRow, tree
from zsn.links.persist import Owner, Persisted, detect_owner, read_persistent
from zsn.links.text import describe
from zsn.links.view import COLUMNS, Cell, Column, cells, visible_columns
from zsn.lint import Finding
from zsn.plan import Plan
from zsn.tui.panes.base import LivePane

LINT_SECONDS = 30.0
"""Config and lint are read again at least this often (the config may change on disk)."""
MODES = ("live", "persist", "config")
MODE_TEXT = {"live": "live only", "persist": "live + config", "config": "config only"}


@dataclass(frozen=True)
class LinksView:
    """One poll: the live table, bond details, the config's owner and what it defines."""

    snapshot: LinksSnapshot
    details: BondDetails
    owner: Owner | None
    persisted: Persisted
    findings: tuple[Finding, ...]
    errors: tuple[str, ...] = ()
    version: int = 0


@dataclass
class _Memo:
    interface: Interface
    rates: Any
    history: tuple[float, ...]
    cells: dict[str, Cell] = field(default_factory=dict)


class LinksPane(LivePane):
    PANE_HELP: ClassVar[str] = """\
### Links
Every network interface, as a tree: a bond over its members, a bridge over its
ports, a parent over its VLANs, a veth over its peer.

- **State**: `up`, `down` (set down), `no-carrier` (up, but no link), or what the
  kernel reports (`lowerlayerdown` ...).
- **↓ Rate / ↑ Rate**: bytes per second over the last refresh; **Trend**: the last
  refreshes' traffic; **Pkt/s**: packets per second in/out; **Err/Drop**: errors and
  drops per second.
- **Detail**: a bond's mode (and active member; `no partner` for 802.3ad without
  LACP), a member's MII status, failure count (`2×`) and role, a VLAN's id, a
  bridge port's STP state.
- The box below shows the highlighted link: bond settings, each member's LACP
  partner, counters, and the advice (lint) about it.

Changes are plans: `c` creates a bond, VLAN or bridge, `m` sets the MTU (raising
the bond or parent first, lowering VLANs first), `a` adds a member or port to the
highlighted bond or bridge, `x` removes the highlighted member, `d` deletes, `s`
saves a live link into the config. `p` chooses what changes touch: the live links
only, live and the persistent config (netplan, networkd, ifupdown, netctl; with
NetworkManager, the nmcli commands), or the config only. Changing the link your
SSH session runs over asks you to type its name first.
"""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("c", "create", "Create…"),
        Binding("m", "mtu", "MTU…"),
        Binding("d", "delete", "Delete"),
        Binding("l", "lint", "Lint"),
        Binding("a", "add_member", "Add member…", show=False),
        Binding("x", "remove_member", "Remove member", show=False),
        Binding("s", "save", "Save to config", show=False),
        Binding("p", "persist_mode", "Live/config", show=False),
        Binding("r", "refresh_now", "Refresh", show=False),
    ]

    def __init__(self, host: Any, refresh_seconds: float, **kwargs: Any) -> None:
        super().__init__(host, refresh_seconds, **kwargs)
        self._monitor = LinkMonitor() if host.is_live else None
        self._view: LinksView | None = None
        self._lint_at = 0.0
        self._lint: tuple[Owner | None, Persisted, tuple[Finding, ...], tuple[str, ...]] = (
            None, Persisted(), (), ())
        self._lint_version = -1
        self._force_lint = False
        self._memo: dict[str, _Memo] = {}
        self._rows: dict[str, dict[str, Cell]] = {}
        self._shown: dict[str, dict[str, Cell]] = {}
        self._added: dict[str, dict[str, Any]] = {}
        self._order: list[str] = []
        self._columns: list[Column] = []
        self._structure: tuple[Interface, ...] | None = None
        self._tree: list[TreeRow] = []
        self.mode: str | None = None
        self._status_shown: tuple[list[str], str] | None = None
        self._details_shown: str | None = None

    def compose(self) -> ComposeResult:
        yield Static("", classes="pane-status")
        table: DataTable[Any] = DataTable(id="links-table", cursor_type="row")
        table.border_title = "Links"
        yield table
        details = Static("", id="links-details")
        details.border_title = "Details"
        yield details

    def on_mount(self) -> None:
        self.status_line().display = False
        super().on_mount()

    def on_unmount(self) -> None:
        if self._monitor is not None:
            self._monitor.close()

    # -- data (worker thread) --------------------------------------------------------
    def fetch(self) -> LinksView:
        if self._monitor is not None:
            snapshot = self._monitor.poll()
            version = self._monitor.version
            details = self._monitor.details
        else:
            snapshot, details = LinksSnapshot((), time.monotonic(), live=False), BondDetails(
                {}, ())
            version = 0
        now = time.monotonic()
        if (version != self._lint_version or self._force_lint
                or now - self._lint_at > LINT_SECONDS):
            self._lint_version, self._lint_at, self._force_lint = version, now, False
            self._lint = self._read_config(snapshot)
        owner, persisted, findings, errors = self._lint
        return LinksView(snapshot, details, owner, persisted, findings,
                         errors + snapshot.errors, version)

    def _read_config(self, snapshot: LinksSnapshot) -> tuple[
            Owner | None, Persisted, tuple[Finding, ...], tuple[str, ...]]:
        try:
            owner, persisted = read_persistent(self.host, detect_owner(self.host))
        except ZsnError as exc:
            return None, Persisted(), (), (str(exc),)
        return owner, persisted, tuple(lint_links(snapshot, owner, persisted, self.host)), ()

    # -- showing (UI thread) -------------------------------------------------------------
    def show(self, view: LinksView) -> None:
        self._view = view
        if self.mode is None and view.owner is not None:
            self.mode = "persist" if view.owner.name != "none" else "live"
            self._show_mode()
        self._show_status(view)
        rows = self._table_rows(view)
        with self.app.batch_update():
            self._update_table(rows)
            self._update_details()

    def _show_status(self, view: LinksView) -> None:
        lines = list(dict.fromkeys(view.errors))[:4]
        severity = "warning"
        if not view.snapshot.live:
            owner = view.owner.name if view.owner else "unknown"
            lines.insert(0, f"{self.host.root} is not this machine's root: showing what its "
                         f"config ({owner}) defines; changes are config only.")
            severity = "info"
        if (lines, severity) != self._status_shown:  # unchanged: no repaint
            self._status_shown = (lines, severity)
            self.set_status(lines, severity)

    def _table_rows(self, view: LinksView) -> dict[str, dict[str, Cell]]:
        snapshot = view.snapshot
        if not snapshot.live:
            return {config.name: _config_cells(config)
                    for config in view.persisted.configs.values()}
        if snapshot.interfaces is not self._structure:
            self._structure = snapshot.interfaces
            self._tree = tree(snapshot.interfaces)
            self._memo = {k: m for k, m in self._memo.items()
                          if k in snapshot.by_name()}
        rows: dict[str, dict[str, Cell]] = {}
        for row in self._tree:
            name = row.interface.name
            rates = snapshot.rates.get(name)
            history = snapshot.history.get(name, ())
            memo = self._memo.get(name)
            if memo is None or memo.interface is not row.interface or memo.rates != rates \
                    or memo.history != history:
                memo = _Memo(row.interface, rates, history, cells(row, rates, history))
                self._memo[name] = memo
            rows[name] = memo.cells
        return rows

    def _text(self, cell: Cell, column: Column) -> Text:
        style = cell.style if cell.style in ("", "bold") else self.theme_colour(cell.style)
        return Text(cell.text, style=style, justify="right" if column.right else "left",
                    no_wrap=True)

    def _update_table(self, rows: dict[str, dict[str, Cell]]) -> None:
        table = self.query_one("#links-table", DataTable)
        width = max(20, table.size.width - 2 or self.size.width - 2)
        changed_rows = rows is not self._rows and rows != self._rows
        columns = visible_columns(rows, width) if changed_rows or not self._columns \
            else self._columns
        keys = list(rows)
        if columns != self._columns or keys != self._order:
            self._rebuild(table, rows, columns)
        else:
            for key, row in rows.items():
                old = self._shown.get(key)
                if old is row or key not in self._added:
                    continue  # unchanged, or still waiting to be added (200 per frame)
                for column in columns:
                    cell = row[column.key]
                    if old is None or old[column.key] != cell:
                        table.update_cell(key, column.key, self._text(cell, column))
                self._shown[key] = row
        self._rows = rows

    def _rebuild(self, table: DataTable[Any], rows: dict[str, dict[str, Cell]],
                 columns: list[Column]) -> None:
        """New columns or a new tree order: the table is filled again, keeping the row
        the cursor was on."""
        selected = self.selected_name()
        # Rows of an earlier fill may still be queued (200 per frame): marking them as
        # added makes that queue stop, so it never adds them to the new table too.
        self._added.update({key: {} for key in self._order})
        table.clear(columns=True)
        for column in columns:
            table.add_column(column.label, key=column.key)
        self._columns, self._order = columns, list(rows)
        # What each row shows once added; rows are added 200 per frame, and `_added`
        # fills as they are, so updates never touch a row that is not there yet.
        self._shown = dict(rows)
        self._added = {}
        new_rows = [(key, {c.key: self._text(row[c.key], c) for c in columns})
                    for key, row in rows.items()]
        self._add_rows_by_frames(table, new_rows, self._added)
        if selected in rows:
            table.move_cursor(row=list(rows).index(selected))

    def on_resize(self) -> None:
        if self._rows:
            table = self.query_one("#links-table", DataTable)
            columns = visible_columns(self._rows, max(20, table.size.width - 2))
            if columns != self._columns:
                self._rebuild(table, self._rows, columns)

    def selected_name(self) -> str | None:
        table = self.query_one("#links-table", DataTable)
        if table.row_count == 0:
            return None
        try:
            key = table.coordinate_to_cell_key(table.cursor_coordinate).row_key.value
        except Exception:  # noqa: BLE001 - the cursor may sit past a row being re-added
            return None
        return str(key) if key is not None else None

    def selected(self) -> Interface | None:
        if self._view is None:
            return None
        name = self.selected_name()
        return self._view.snapshot.by_name().get(name or "")

    def _update_details(self) -> None:
        details = self.query_one("#links-details", Static)
        view = self._view
        name = self.selected_name()
        if view is None or name is None:
            if self._details_shown != "":
                self._details_shown = ""
                details.update("")
            return
        interface = view.snapshot.by_name().get(name)
        if interface is not None:
            lines = describe(interface, view.snapshot, view.details)
        else:
            config = view.persisted.configs.get(name)
            lines = [f"{name}: {config.describe()} ({config.source})"] if config else []
        lines += [f"{f.id} {f.severity}: {f.message} -> {f.fix}"
                  for f in view.findings if f.subject == name]
        text = "\n".join(lines)
        if text != self._details_shown:  # unchanged: no repaint
            self._details_shown = text
            details.update(Text(text))

    def on_data_table_row_highlighted(self, event: DataTable.RowHighlighted) -> None:
        if self._view is not None:
            self._update_details()

    def _show_mode(self) -> None:
        table = self.query_one("#links-table", DataTable)
        owner = self._view.owner.name if self._view and self._view.owner else "none"
        mode = self._mode()
        table.border_subtitle = f"changes: {MODE_TEXT[mode]}" + (
            f" ({owner})" if mode != "live" else "") + " · p switches"

    def _mode(self) -> str:
        if self._view is not None and not self._view.snapshot.live:
            return "config"
        return self.mode or "live"

    # -- actions -------------------------------------------------------------------
    def action_persist_mode(self) -> None:
        if self._view is not None and not self._view.snapshot.live:
            self.notify("Under --root only the config can change.", severity="warning")
            return
        self.mode = MODES[(MODES.index(self._mode()) + 1) % len(MODES)]
        self._show_mode()
        self.notify(f"Changes now: {MODE_TEXT[self.mode]}", timeout=3)

    def _options(self, confirm: str | None = None) -> Options:
        mode = self._mode()
        return Options(persist=mode == "persist", config_only=mode == "config",
                       confirm_ssh=confirm)

    def _link_context(self) -> actions.Context:
        return actions.Context.read(self.host)

    def _offer(self, build: Callable[[Options], Plan], confirm: str | None = None) -> None:
        """Build the plan in a thread; ask for the SSH link when needed; show the plan;
        apply it in a thread on `y`."""
        options = self._options(confirm)

        def job() -> Plan | SessionLinkError:
            try:
                return build(options)
            except SessionLinkError as exc:
                return exc

        self.run_in_thread(job, lambda result: self._planned(result, build),
                           self._nothing_changed)

    def _planned(self, result: Plan | SessionLinkError,
                 build: Callable[[Options], Plan]) -> None:
        if isinstance(result, SessionLinkError):
            self._confirm_session(result, lambda link: self._offer(build, link))
            return
        self._show_plan(result)

    def _confirm_session(self, error: SessionLinkError, go: Callable[[str], None]) -> None:
        from zsn.tui.screens.ask import AskScreen

        def answered(text: str | None) -> None:
            if text is not None and text.strip() == error.link:
                go(error.link)
            else:
                self.notify(f"Nothing changed: {error.link} was not confirmed.",
                            severity="warning")

        self.app.push_screen(AskScreen(
            f"{error.link} carries your SSH session",
            f"{error} — type {error.link} to go ahead, esc to cancel."), answered)

    def _show_plan(self, plan: Plan) -> None:
        from zsn.tui.screens.plan import PlanScreen

        def answered(apply: bool | None) -> None:
            if apply:
                self.run_in_thread(lambda: plan.apply(), lambda done: self._applied(plan),
                                   lambda message: self._apply_failed(plan, message))

        self.app.push_screen(PlanScreen(plan), answered)

    def _applied(self, plan: Plan) -> None:
        self.notify(f"{plan.title}: done", title="Links")
        self._force_lint = True
        self.poll(force=True)

    def _apply_failed(self, plan: Plan, message: str) -> None:
        self.notify(message, title=plan.title, severity="error", timeout=12)
        self._force_lint = True
        self.poll(force=True)

    def _nothing_changed(self, message: str) -> None:
        self.notify(message, title="Nothing changed", severity="error", timeout=10)

    def _need(self, kinds: tuple[str, ...] = ()) -> Interface | None:
        interface = self.selected()
        if interface is None:
            self.notify("No link selected (under --root, use zsn link ... --config-only).",
                        severity="warning")
            return None
        if kinds and interface.kind not in kinds:
            self.notify(f"{interface.name} is a {interface.kind}; this needs a "
                        f"{' or '.join(kinds)}.", severity="warning")
            return None
        return interface

    def action_create(self) -> None:
        from zsn.tui.screens.ask import ChooseScreen

        def chosen(kind: str | None) -> None:
            if kind is not None:
                self._create_form(kind)

        self.app.push_screen(ChooseScreen("Create", [
            ("bond", "Bond: members as one link"), ("vlan", "VLAN on a link"),
            ("bridge", "Bridge: ports in one segment")]), chosen)

    def _create_form(self, kind: str, values: dict[str, str] | None = None) -> None:
        from zsn.tui.screens.link_form import LinkFormScreen

        selected = self.selected()
        initial = dict(values or {})
        if kind == "vlan" and selected is not None and "parent" not in initial:
            initial["parent"] = selected.name
        options = self._options()

        def build(fields: dict[str, str]) -> Plan:
            return create_plan(self._link_context(), kind, fields, options)

        def done(result: tuple[dict[str, str], Plan | SessionLinkError] | None) -> None:
            if result is None:
                return
            fields, outcome = result
            if isinstance(outcome, SessionLinkError):
                self._confirm_session(outcome, lambda link: self._offer(
                    lambda opts: create_plan(self._link_context(), kind, fields, opts), link))
            else:
                self._show_plan(outcome)

        self.app.push_screen(LinkFormScreen(kind, build, initial), done)

    def action_mtu(self) -> None:
        from zsn.tui.screens.ask import AskScreen

        interface = self._need()
        if interface is None:
            return

        def answered(text: str | None) -> None:
            if text is None:
                return
            try:
                mtu = validate.whole_number(text, "MTU")
            except ZsnError as exc:
                self._nothing_changed(str(exc))
                return
            if mtu is not None:
                name = interface.name
                self._offer(lambda options: actions.plan_set_mtu(self._link_context(), name, mtu,
                                                                 options))

        self.app.push_screen(AskScreen(f"MTU of {interface.name}",
                                       f"New MTU for {interface.name} (now {interface.mtu}):",
                                       str(interface.mtu)), answered)

    def action_add_member(self) -> None:
        from zsn.tui.screens.ask import AskScreen

        interface = self._need()
        if interface is None:
            return
        master = interface.name if interface.kind in ("bond", "bridge") else interface.master
        if master is None:
            self.notify("Highlight a bond or bridge (or one of its members).",
                        severity="warning")
            return

        def answered(text: str | None) -> None:
            if text:
                member = text.strip()
                self._offer(lambda options: actions.plan_add_member(
                    self._link_context(), master, member, options))

        self.app.push_screen(AskScreen(f"Add to {master}", f"Link to add to {master}:"),
                             answered)

    def action_remove_member(self) -> None:
        interface = self._need()
        if interface is None:
            return
        if interface.master is None:
            self.notify(f"{interface.name} is not a member of a bond or bridge.",
                        severity="warning")
            return
        master, name = interface.master, interface.name
        self._offer(lambda options: actions.plan_remove_member(self._link_context(), master, name,
                                                               options))

    def action_delete(self) -> None:
        interface = self._need(("bond", "vlan", "bridge"))
        if interface is not None:
            name = interface.name
            self._offer(lambda options: actions.plan_delete(self._link_context(), name, options))

    def action_save(self) -> None:
        interface = self._need(("bond", "vlan", "bridge"))
        if interface is not None:
            name = interface.name
            self._offer(lambda _options: actions.plan_save(self._link_context(), name))

    def action_lint(self) -> None:
        from zsn.tui.screens.findings import FindingsScreen

        findings = list(self._view.findings) if self._view else []

        def chosen(finding: Finding | None) -> None:
            if finding is not None and finding.fix_plan is not None:
                fix = finding.fix_plan
                self._offer(lambda _options: fix())

        self.app.push_screen(FindingsScreen(findings, "No findings: bonds, VLANs, bridges "
                                            "and the config look right."), chosen)

    def action_refresh_now(self) -> None:
        self._force_lint = True
        self.poll(force=True)


def create_plan(context: actions.Context, kind: str, fields: dict[str, str],
                options: Options) -> Plan:
    """The plan for the create form's fields (text as typed)."""
    mtu = validate.whole_number(fields.get("mtu", ""), "MTU")
    if kind == "bond":
        return actions.plan_create_bond(
            context, fields["name"], fields["mode"] or "balance-rr",
            validate.name_list(fields["members"], "members") if fields["members"] else [],
            miimon=validate.whole_number(fields["miimon"], "miimon"),
            xmit_hash_policy=fields["xmit_hash_policy"] or None,
            lacp_rate=fields["lacp_rate"] or None, mtu=mtu, options=options)
    if kind == "vlan":
        vlan_id = validate.whole_number(fields["id"], "VLAN id")
        if vlan_id is None:
            raise ValidationError("a VLAN needs an id (1-4094)")
        name = fields["name"] or f"{fields['parent']}.{vlan_id}"
        return actions.plan_create_vlan(context, name, fields["parent"], vlan_id, mtu=mtu,
                                        options=options)
    stp = fields.get("stp", "").lower()
    if stp not in ("", "yes", "no", "on", "off"):
        raise ValidationError(f"STP {fields['stp']!r}: say yes or no")
    ports = validate.name_list(fields["ports"], "ports") if fields["ports"] else []
    return actions.plan_create_bridge(context, fields["name"], ports,
                                      stp=stp in ("yes", "on"), mtu=mtu, options=options)


def _config_cells(config: Any) -> dict[str, Cell]:
    """A link only the config defines (offline, under --root)."""
    detail = config.mode or (f"vlan {config.vlan_id} on {config.parent}" if config.parent
                             else "")
    members = ",".join(config.members)
    return {column.key: Cell("") for column in COLUMNS} | {
        "name": Cell(config.name, "bold"), "kind": Cell(config.kind),
        "state": Cell("config", "text-warning"),
        "mtu": Cell(str(config.mtu) if config.mtu else "-"),
        "detail": Cell(detail + (f" {members}" if members else "")),
        "addresses": Cell(config.source),
    }
