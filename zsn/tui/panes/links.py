"""Links pane: every interface as a tree (bond > members, bridge > ports, parent > VLANs,
veth > peer) with state, MTU, live rates and a trend line; actions as plans.

Reads come from `zsn.links.live.LinkMonitor` (the whole table only when netlink
reports a change, the counters every refresh); rows from `zsn.links.view`, which has
no Textual. A poll in which nothing changed builds no new rows, so `LiveTable`
repaints nothing.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, ClassVar

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.widgets import Static

from zsn.errors import ValidationError, ZsnError, about_input
from zsn.links import actions, validate, view
from zsn.links.actions import Options, SessionLinkError
from zsn.links.lint import lint_links
from zsn.links.live import BondDetails, LinkMonitor
from zsn.links.model import Interface, LinksSnapshot
from zsn.links.persist import Owner, Persisted, detect_owner, read_persistent
from zsn.links.text import describe
from zsn.lint import Finding
from zsn.plan import LiveStep, Plan
from zsn.tui.panes.base import GONE_NOTICE_SECONDS, GoneRows, LivePane
from zsn.tui.widgets.status import StatusLine
from zsn.tui.widgets.table import LiveTable
from zsn.tui.wording import say

LINT_SECONDS = 30.0
"""Config and lint are read again at least this often (the config may change on disk)."""
MODES = ("live", "persist", "config")
Planned = tuple[Callable[[Options], Plan], Plan | SessionLinkError]
"""What a dialog made: how to plan again (with the SSH link confirmed), and the plan
or the question about that link."""
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


class LinksPane(LivePane):
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

    def __init__(self, host: Any, refresh_seconds: float, **kwargs: Any) -> None:
        super().__init__(host, refresh_seconds, **kwargs)
        self._monitor = LinkMonitor() if host.is_live else None
        self._view: LinksView | None = None
        self._lint_at = 0.0
        self._lint: tuple[Owner | None, Persisted, tuple[Finding, ...], tuple[str, ...]] = (
            None, Persisted(), (), ())
        self._lint_version = -1
        self._force_lint = False
        self._rows = view.TableRows()
        self._details_shown: str | None = None
        self.mode: str | None = None
        self.gone = GoneRows(lambda message: self.notify(
            message, severity="warning", timeout=GONE_NOTICE_SECONDS), "Link ")

    def compose(self) -> ComposeResult:
        yield StatusLine()
        yield LiveTable(view.COLUMNS, id="links-table", title="Links",
                        empty_text="No links to show.")
        details = Static("", id="links-details")
        details.border_title = "Details"
        yield details

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
        text = "\n".join(lines)
        if text != self._details_shown:  # a Static's update re-lays out the screen
            self._details_shown = text
            self.query_one("#links-details", Static).update(Text(text))

    def on_live_table_highlighted(self, event: LiveTable.Highlighted) -> None:
        if self._view is not None:
            self._update_details()

    def _show_mode(self) -> None:
        owner = self._view.owner.name if self._view and self._view.owner else "none"
        mode = self._mode()
        self.query_one("#links-table", LiveTable).border_subtitle = (
            f"changes: {MODE_TEXT[mode]}" + (f" ({owner})" if mode != "live" else "")
            + " · p switches")

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

    def plan_done(self, plan: Plan) -> None:
        """Links or the config changed: read the config and lint again with the table."""
        self._force_lint = True

    def _offer(self, build: Callable[[Options], Plan], confirm: str | None = None,
               removes: str | None = None) -> None:
        """Build the plan in a thread; ask for the SSH link's name when the change
        touches it; then show the plan and apply it on `y` (`LivePane.run_plan`)."""
        options = self._options(confirm)

        def job() -> Plan | SessionLinkError:
            try:
                return build(options)
            except SessionLinkError as exc:
                return exc

        def built(result: Plan | SessionLinkError) -> None:
            if isinstance(result, SessionLinkError):
                self._confirm_session(result, lambda link: self._offer(build, link, removes))
                return
            self._show_plan(result, removes)

        self.run_in_thread(job, built, self._nothing_changed)

    def _show_plan(self, plan: Plan, removes: str | None = None) -> None:
        def confirmed(_plan: Plan) -> None:
            if removes is not None and any(isinstance(step, LiveStep) for step in plan.steps):
                self.gone.expect(removes)  # its row goes quietly; "Done" says why

        self.run_plan(lambda: plan, confirmed=confirmed)

    def _confirm_session(self, error: SessionLinkError, go: Callable[[str], None]) -> None:
        from zsn.tui.screens.ask import AskScreen

        def confirm(text: str) -> str:
            if text.strip() != error.link:
                raise ValidationError(f"type {error.link} exactly to go ahead (esc cancels)")
            return error.link

        def answered(link: str | None) -> None:
            if link is None:
                self.notify(f"Nothing changed: {error.link} was not confirmed.",
                            severity="warning")
            else:
                go(link)

        self.app.push_screen(AskScreen(
            f"{error.link} carries your SSH session",
            f"{say(error, self)}. Type {error.link} to go ahead, esc to cancel:", "",
            confirm), answered)

    def _planning(self, build: Callable[[Options], Plan]) -> Planned:
        """`build` with the pane's options, in a dialog's worker thread: a refusal keeps
        the dialog open; touching the SSH link is a question for after it closed."""
        try:
            return build, build(self._options())
        except SessionLinkError as exc:
            return build, exc

    def _planned(self, result: Planned | None) -> None:
        """A dialog's callback: show the plan, or ask for the SSH link's name and plan
        again with it (None: cancelled)."""
        if result is None:
            return
        build, outcome = result
        if isinstance(outcome, SessionLinkError):
            self._confirm_session(outcome, lambda link: self._offer(build, link))
        else:
            self._show_plan(outcome)

    def _nothing_changed(self, message: str) -> None:
        self.notify(message, title="Nothing changed", severity="error", timeout=10)

    def _need(self, kinds: tuple[str, ...] = ()) -> Interface | None:
        interface = self.selected()
        if interface is None:
            self.notify("No live link selected (under --root, use zsn link ... "
                        "--config-only).", severity="warning")
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

    def _create_form(self, kind: str) -> None:
        from zsn.tui.screens.link_form import LinkFormScreen

        selected = self.selected()
        initial = {"parent": selected.name} if kind == "vlan" and selected is not None else {}
        options = self._options()

        def build(fields: dict[str, str]) -> Plan:
            return create_plan(self._link_context(), kind, fields, options)

        def done(result: tuple[dict[str, str], Plan | SessionLinkError] | None) -> None:
            if result is not None:
                fields, outcome = result
                self._planned((lambda opts: create_plan(self._link_context(), kind, fields,
                                                        opts), outcome))

        self.app.push_screen(LinkFormScreen(kind, build, initial), done)

    def action_mtu(self) -> None:
        from zsn.tui.screens.ask import AskScreen

        interface = self._need()
        if interface is None:
            return

        name = interface.name

        def build(text: str) -> Planned:
            mtu = validate.whole_number(text, "MTU")
            if mtu is None:
                raise ValidationError("type the new MTU")
            return self._planning(lambda options: actions.plan_set_mtu(
                self._link_context(), name, mtu, options))

        self.app.push_screen(AskScreen(f"MTU of {name}", f"New MTU for {name} (now "
                                       f"{interface.mtu}):", str(interface.mtu), build,
                                       field="mtu"), self._planned)

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

        def build(text: str) -> Planned:
            member = text.strip()
            return self._planning(lambda options: actions.plan_add_member(
                self._link_context(), master, member, options))

        self.app.push_screen(AskScreen(f"Add to {master}", f"Link to add to {master}:", "",
                                       build, field="member"), self._planned)

    def action_remove_member(self) -> None:
        interface = self._need()
        if interface is None:
            return
        if interface.master is None:
            self.notify(f"{interface.name} is not a member of a bond or bridge.",
                        severity="warning")
            return
        master, name = interface.master, interface.name
        self._offer(lambda options: actions.plan_remove_member(self._link_context(), master,
                                                               name, options))

    def action_delete(self) -> None:
        interface = self._need(("bond", "vlan", "bridge"))
        if interface is not None:
            name = interface.name
            self._offer(lambda options: actions.plan_delete(self._link_context(), name,
                                                            options), removes=name)

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

        self.app.push_screen(FindingsScreen(findings, empty_text=(
            "No findings: bonds, VLANs, bridges and the config look right.")), chosen)

    def action_refresh_now(self) -> None:
        self._force_lint = True
        self.poll(force=True)


def _number(fields: dict[str, str], key: str, what: str) -> int | None:
    with about_input(key):
        return validate.whole_number(fields.get(key, ""), what)


def create_plan(context: actions.Context, kind: str, fields: dict[str, str],
                options: Options) -> Plan:
    """The plan for the create form's fields (text as typed; keys as the plan
    functions' arguments, so a refusal marks its field)."""
    mtu = _number(fields, "mtu", "MTU")
    if kind == "bond":
        return actions.plan_create_bond(
            context, fields["name"], fields["mode"] or "balance-rr",
            validate.name_list(fields["members"], "members") if fields["members"] else [],
            miimon=_number(fields, "miimon", "miimon"),
            xmit_hash_policy=fields["xmit_hash_policy"] or None,
            lacp_rate=fields["lacp_rate"] or None, mtu=mtu, options=options)
    if kind == "vlan":
        vlan_id = _number(fields, "vlan_id", "VLAN id")
        if vlan_id is None:
            raise ValidationError("a VLAN needs an id (1-4094)", field="vlan_id")
        name = fields["name"] or f"{fields['parent']}.{vlan_id}"
        return actions.plan_create_vlan(context, name, fields["parent"], vlan_id, mtu=mtu,
                                        options=options)
    stp = fields.get("stp", "").lower()
    if stp not in ("", "yes", "no", "on", "off"):
        raise ValidationError(f"{fields['stp']!r}: say yes or no", field="stp")
    ports = validate.name_list(fields["ports"], "ports") if fields["ports"] else []
    return actions.plan_create_bridge(context, fields["name"], ports,
                                      stp=stp in ("yes", "on"), mtu=mtu, options=options)
