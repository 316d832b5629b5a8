"""Links pane: every interface as a tree (bond > members, bridge > ports, parent > VLANs,
veth > peer) with state, MTU, live rates and a trend line; actions as plans.

Reads come from `zsn.links.lint.LinkWatch` (the whole table only when netlink
reports a change, the counters every refresh, the config and its advice when they may
have changed); rows from `zsn.links.view`, which has no Textual. A poll in which
nothing changed builds no new rows, so `LiveTable` repaints nothing. Changes are
`zsn.links.actions` requests, the same the CLI makes.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any, ClassVar

from textual.app import ComposeResult
from textual.binding import Binding, BindingType

from zsn.links import actions, view
from zsn.links.actions import Options
from zsn.links.lint import LinksView, LinkWatch
from zsn.links.model import Interface
from zsn.links.text import describe
from zsn.lint import Finding
from zsn.plan import LiveStep, Plan, Planned, SessionPlan
from zsn.system.host import Host
from zsn.tui.panes.base import GONE_NOTICE_SECONDS, GoneRows, LivePane, NotNow
from zsn.tui.widgets.details import DetailsBox
from zsn.tui.widgets.status import StatusLine
from zsn.tui.widgets.table import LiveTable

MODES = ("live", "persist", "config")
LINK_ACTIONS: dict[str, tuple[str, ...]] = {
    "mtu": (), "remove_member": (), "add_member": ("bond", "bridge"),
    "delete": ("bond", "vlan", "bridge"), "save": ("bond", "vlan", "bridge"),
}
"""The actions on the highlighted link, and the kinds each needs (any: empty)."""
MODE_TEXT = {"live": "live only", "persist": "live + config", "config": "config only"}


class LinksPane(LivePane[LinksView]):
    PANE_HELP: ClassVar[str] = """\
### Links
Every network interface, as a tree: a bond over its members, a bridge over its
ports, a parent over its VLANs, a veth over its peer. The box below shows the
highlighted link: addresses, bond settings, each member's MII status, failures and
LACP partner, counters, and the advice (lint) about it.

Changes are plans: `c` creates a bond, VLAN or bridge, `m` sets the MTU (raising
the bond or parent first, lowering VLANs first), `a` adds a member or port to the
highlighted bond or bridge, `x` removes the highlighted member, `d` deletes, `s`
saves a live link into the config. `p` chooses what changes touch: the live links
only, live and the persistent config (netplan, networkd, ifupdown, netctl; with
NetworkManager, the nmcli commands), or the config only. Changing the link your
SSH session runs over asks you to type its name first.
"""

    # Most important first: the footer shows as many as fit.
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("c", "create", "Create…"),
        Binding("m", "mtu", "MTU…"),
        Binding("d", "delete", "Delete"),
        Binding("a", "add_member", "Add member…"),
        Binding("x", "remove_member", "Remove member"),
        Binding("l", "lint", "Lint"),
        Binding("s", "save", "Save to config"),
        Binding("p", "persist_mode", "Live/config"),
        Binding("r", "refresh_now", "Refresh", show=False),
    ]

    def __init__(self, host: Host, refresh_seconds: float, **kwargs: Any) -> None:
        super().__init__(host, refresh_seconds, **kwargs)
        self._watch = LinkWatch(host)
        self._view: LinksView | None = None
        self._rows = view.TableRows()
        self.mode: str | None = None
        self.gone = GoneRows(lambda message: self.notify(
            message, severity="warning", timeout=GONE_NOTICE_SECONDS), "Link ")

    def compose(self) -> ComposeResult:
        yield StatusLine()
        yield LiveTable(view.COLUMNS, id="links-table", title="Links",
                        empty_text="No links to show.")
        yield DetailsBox("Details", id="links-details")

    def on_unmount(self) -> None:
        self._watch.close()

    # -- data (reader thread) --------------------------------------------------------
    def fetch(self) -> LinksView:
        return self._watch.read()

    # -- showing (UI thread) -------------------------------------------------------------
    def show(self, links: LinksView) -> None:
        old = self._view
        if old is not None and links.snapshot is old.snapshot and links.findings is \
                old.findings and links.persisted is old.persisted and links.errors == old.errors:
            return  # an idle poll: nothing to show again
        self._view = links
        if self.mode is None and links.owner is not None:
            self.mode = "persist" if links.owner.name != "none" else "live"
            self._show_mode()
        self._show_status(links)
        with self.app.batch_update():
            rows = self._rows.rows(links.snapshot, tuple(links.persisted.configs.values()))
            self.query_one("#links-table", LiveTable).update(self.gone.merge(rows))
            self._update_details()

    def _show_status(self, links: LinksView) -> None:
        lines = list(dict.fromkeys(links.errors))[:4]
        if not links.snapshot.live:
            owner = links.owner.name if links.owner else "unknown"
            lines.insert(0, f"{self.host.root} is not this machine's root: the rows are what "
                         f"its config ({owner}) defines; change them with "
                         "zsn --root DIR link ... --config-only.")
            self.set_status(lines, "info")
            return
        self.set_status(lines, "warning")

    def selected(self) -> Interface | None:
        if self._view is None:
            return None
        row = self.query_one("#links-table", LiveTable).cursor_row
        if row is None or row.state == "gone" or not isinstance(row.data, tuple):
            return None
        interface = row.data[0]
        return interface if isinstance(interface, Interface) else None

    def _update_details(self) -> None:
        links = self._view
        key = self.query_one("#links-table", LiveTable).cursor_key
        lines: list[str] = []
        if links is not None and key is not None:
            interface = links.snapshot.by_name().get(key)
            if interface is not None:
                lines = describe(interface, links.snapshot, links.details)
            elif key in links.persisted.configs:
                config = links.persisted.configs[key]
                lines = [f"{key}: {config.describe()} ({config.source})"]
            lines += [f"{f.id} {f.severity}: {f.message} -> {f.fix}"
                      for f in links.findings if f.subject == key]
        self.query_one("#links-details", DetailsBox).show_lines(lines)

    def on_live_table_highlighted(self, event: LiveTable.Highlighted) -> None:
        if self._view is not None:
            self._update_details()
        self.state_changed()

    def urgent_keys(self) -> tuple[str, ...]:
        """A member: remove it; a bond or bridge: add one, delete it."""
        interface = self.selected()
        if interface is None:
            return ()
        if interface.master is not None:
            return ("x",)
        if interface.kind in ("bond", "bridge"):
            return ("a", "d")
        if interface.kind == "vlan":
            return ("d",)
        return ()

    def not_now(self, action: str, parameters: tuple[object, ...]) -> NotNow | None:
        """Under --root only creating (in the config) and lint; a change to a link
        needs one highlighted, of the kind it changes."""
        if action not in LINK_ACTIONS and action != "persist_mode" or self._view is None:
            return None
        if not self._view.snapshot.live:
            return NotNow("Under --root only the config can change: c creates, zsn link "
                          "... --config-only changes.", hidden=True)
        if action == "persist_mode":
            return None
        interface = self.selected()
        if interface is None:
            return NotNow("Highlight a link first.")
        needed = LINK_ACTIONS[action]
        if action == "add_member" and interface.master is not None:
            return None  # added to its bond or bridge
        if needed and interface.kind not in needed:
            return NotNow(f"{interface.name} is a {interface.kind}; this needs a "
                          f"{' or '.join(needed)}.", hidden=True)
        if action == "remove_member" and interface.master is None:
            return NotNow(f"{interface.name} is not a member of a bond or bridge.",
                          hidden=True)
        return None

    def _show_mode(self) -> None:
        owner = self._view.owner.name if self._view and self._view.owner else "none"
        mode = self._mode()
        self.query_one("#links-table", LiveTable).set_note(
            f"changes: {MODE_TEXT[mode]}" + (f" ({owner})" if mode != "live" else "")
            + " · p switches")

    def _mode(self) -> str:
        if self._view is not None and not self._view.snapshot.live:
            return "config"
        return self.mode or "live"

    # -- actions -------------------------------------------------------------------
    def action_persist_mode(self) -> None:
        self.mode = MODES[(MODES.index(self._mode()) + 1) % len(MODES)]
        self._show_mode()
        self.notify(f"Changes now: {MODE_TEXT[self.mode]}", timeout=3)

    def _options(self, confirm: str | None = None) -> Options:
        mode = self._mode()
        return Options(persist=mode == "persist", config_only=mode == "config",
                       confirm_ssh=confirm)

    def plan_done(self, plan: Plan) -> None:
        """Links or the config changed: read the config and lint again with the table."""
        self._watch.stale()

    def _planner(self, request: actions.LinkRequest) -> SessionPlan:
        """How to plan `request` with the pane's options, given the SSH link once the
        user named it: read the links when planning, in a worker thread."""
        options = self._options()

        def build(link: str | None) -> Plan:
            return actions.plan(actions.Context.read(self.host), request,
                                replace(options, confirm_ssh=link))

        return build

    def _offer(self, request: actions.LinkRequest, removes: str | None = None) -> None:
        def confirmed(plan: Plan) -> None:
            if removes is not None and any(isinstance(step, LiveStep) for step in plan.steps):
                self.gone.expect(removes)  # its row goes quietly; "Done" says why

        self.offer_plan(self._planner(request), confirmed=confirmed)

    def _from_dialog(self, action: str, fields: dict[str, str]) -> Planned:
        """A dialog's build (its worker thread): the request from what was typed."""
        return self.plan_in_dialog(self._planner(actions.request_from_fields(action, fields)))

    def _need(self, action: str) -> Interface | None:
        """The highlighted link `action` can change, else None, saying why."""
        why = self.not_now(action, ())
        if why is not None:
            self.notify(why.reason, severity="warning")
            return None
        return self.selected()

    def action_create(self) -> None:
        from zsn.tui.screens.ask import ChooseScreen

        def chosen(kind: str | None) -> None:
            if kind is not None:
                self._create_form(kind)

        self.app.push_screen(ChooseScreen("Create", [
            ("bond", "Bond: members as one link"), ("vlan", "VLAN on a link"),
            ("bridge", "Bridge: ports in one segment")]), chosen)

    def _create_form(self, kind: str) -> None:
        from zsn.tui.screens.link_form import LinkFormScreen

        selected = self.selected()
        initial = {"parent": selected.name} if kind == "vlan" and selected is not None else {}
        self.app.push_screen(LinkFormScreen(
            kind, lambda fields: self._from_dialog(kind, fields), initial), self.show_planned)

    def action_mtu(self) -> None:
        from zsn.tui.screens.ask import AskScreen

        interface = self._need("mtu")
        if interface is None:
            return
        name = interface.name
        self.app.push_screen(AskScreen(
            f"MTU of {name}", f"New MTU for {name} (now {interface.mtu}):",
            str(interface.mtu), lambda text: self._from_dialog(
                "set", {"name": name, "mtu": text.strip()}), field="mtu"), self.show_planned)

    def action_add_member(self) -> None:
        from zsn.tui.screens.ask import AskScreen

        interface = self._need("add_member")
        if interface is None:
            return
        master = interface.name if interface.kind in ("bond", "bridge") else interface.master
        assert master is not None  # a bond, a bridge or one of their members
        self.app.push_screen(AskScreen(
            f"Add to {master}", f"Link to add to {master}:", "",
            lambda text: self._from_dialog(
                "add-member", {"master": master, "member": text.strip()}),
            field="member"), self.show_planned)

    def action_remove_member(self) -> None:
        interface = self._need("remove_member")
        if interface is None or interface.master is None:
            return
        self._offer(actions.RemoveMember(interface.master, interface.name))

    def action_delete(self) -> None:
        interface = self._need("delete")
        if interface is not None:
            self._offer(actions.DeleteLink(interface.name), removes=interface.name)

    def action_save(self) -> None:
        interface = self._need("save")
        if interface is not None:
            self._offer(actions.SaveLink(interface.name))

    def action_lint(self) -> None:
        from zsn.tui.screens.findings import FindingsScreen

        findings = list(self._view.findings) if self._view else []

        def chosen(finding: Finding | None) -> None:
            if finding is not None and finding.fix_plan is not None:
                fix = finding.fix_plan
                self.offer_plan(lambda _link: fix())

        self.app.push_screen(FindingsScreen(findings, empty_text=(
            "No findings: bonds, VLANs, bridges and the config look right.")), chosen)

    def action_refresh_now(self) -> None:
        self._watch.stale()
        self.poll(force=True)
