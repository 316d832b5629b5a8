"""WireGuard pane actions: onboarding, peer changes, the client QR, lint with safe fixes.

Every action builds a plan in a worker thread (files are read, the live device
looked up), shows it, and applies it only after the user confirms. The pane
keeps polling, so a change shows up in the tables on the next refresh.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from time import monotonic
from typing import TYPE_CHECKING, Any

from textual.binding import Binding, BindingType

from zsn.format import short_key
from zsn.system import files
from zsn.system.host import Host
from zsn.tui.panes.base import GoneRows
from zsn.tui.widgets.safe import SafeStatic
from zsn.wireguard.model import InterfaceState, PeerState, WireGuardSnapshot

if TYPE_CHECKING:  # the action modules load on first use, not at start-up
    from zsn.lint import Finding
    from zsn.plan import Plan
    from zsn.wireguard import onboarding

LINT_SECONDS = 10.0
"""How often the pane looks whether lint's files changed (stat only) and lints if so."""
LINT_ANYWAY_SECONDS = 60.0
"""How often it lints anyway: the kernel's tables and the clock (expiries) change
findings without a file changing (lint reads and checks every config: with a 200-peer
config, every 10 s was 0.6 ms of CPU a second)."""
LINT_FIRST_AFTER = 0.5
"""Seconds after the pane starts before the first lint."""

# Most important first: the footer shows as many as fit, `?` and ctrl+p all of them.
ACTION_BINDINGS: list[BindingType] = [
    Binding("a", "add_peer", "Add peer"),
    Binding("v", "show_client", "QR code"),
    Binding("x", "remove_peer", "Remove"),
    Binding("e", "disable_peer", "Disable"),
    Binding("l", "show_findings", "Lint"),
    Binding("E", "enable_peer", "Enable…"),
    Binding("n", "rename_peer", "Rename"),
    Binding("s", "routed_subnets", "Subnets behind"),
    Binding("U", "interface_up", "Bring up…"),
    Binding("D", "interface_down", "Bring down"),
    Binding("N", "create_interface", "New interface…"),
    Binding("C", "client_to_client", "Client-to-client"),
    Binding("K", "link_interfaces", "Link interfaces…"),
    Binding("G", "gateway", "Gateway (NAT)…"),
    Binding("P", "access_rules", "Access rules"),
    Binding("g", "peer_groups", "Groups…"),
    Binding("R", "add_rule", "Add rule…"),
    Binding("d", "delete_rule", "Delete"),
    Binding("left_square_bracket", "move_rule(-1)", "Up", key_display="["),
    Binding("right_square_bracket", "move_rule(1)", "Down", key_display="]"),
    Binding("w", "explain", "Explain…"),
    Binding("T", "add_test", "Add test…"),
    Binding("F", "flip_default", "Default"),
]

PEER_ACTIONS = frozenset({"show_client", "remove_peer", "disable_peer", "rename_peer",
                          "routed_subnets", "peer_groups"})
"""The actions on the highlighted peer."""
INTERFACE_ACTIONS = frozenset({"interface_down", "client_to_client", "link_interfaces",
                               "gateway"})
"""The actions on the highlighted running interface."""
CONFIG_ACTIONS = frozenset({"add_peer", "interface_up", "enable_peer"})
"""The actions that need a config in /etc/wireguard (a stopped interface, a disabled peer)."""
RULE_ACTIONS = frozenset({"add_rule", "delete_rule", "move_rule", "explain", "add_test",
                          "flip_default"})
"""The actions of the access-rules view (`P`), on the highlighted interface's policy."""
RULE_KEYS = ("R", "d", "left_square_bracket", "right_square_bracket", "w", "F", "T", "P")
"""What the footer shows first while the access rules are shown."""

ACTION_HELP = """
#### Managing peers
- `a` add a peer: a form with the next free address, profile, DNS, keepalive,
  preshared key and endpoint pre-filled; it shows the plan, then the client config
  and its QR code (`c` copies it to your terminal's clipboard over SSH).
- `v` show a peer's client config and QR again; `x` remove; `e` disable (the block
  stays in the file, commented out with `#[disabled]`); `E` enable a disabled peer;
  `n` rename (the client config moves to the new name); `s` set the subnets behind a
  peer (site-to-site).
- `l` lint findings; `f` there applies a safe fix, on the findings that have one.
  Every change shows its plan first.

#### Interfaces and routing
- `N` create a server interface (key generated, config 0600); `U` bring one up
  (the `wg-quick@` unit over D-Bus where systemd runs, else wg-quick; wireguard-go
  when the kernel has no WireGuard module, as the plan says), `D` bring the
  highlighted one down.
- `C` let its clients reach each other (forwarding, FORWARD rules in PostUp/PostDown,
  client configs widened to the subnet); `K` route it to another interface;
  `G` gateway: NAT out of the default-route interface (found through netlink,
  editable). Client configs that change must be re-imported on the devices (`v`).

#### Access rules
- `P` shows the highlighted interface's access rules instead of its peers: the rules
  in order with the packets each decided (the kernel's counters), the default last,
  and the policy's tests with their state; `P` again shows the peers.
- There: `R` adds a rule (`allow|deny FROM -> TO [PORT]`, before the highlighted
  one), `d` deletes the highlighted rule or test, `[` / `]` move a rule up / down,
  `w` explains a pair (the verdict and the rule that decides it), `T` adds a test,
  `F` flips the default between allow and deny. A change that breaks a test is
  refused, naming it.
- `g` on a peer sets its groups (one plan: into the new ones, out of the others).
"""


class FindingsLine(SafeStatic):
    """One line under the status: the lint summary, repainted only when it changes."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__("", **kwargs)
        self.display = False
        self._text = ""

    def show_text(self, text: str) -> None:
        if text != self._text:
            self._text = text
            self.update(text)
            self.display = bool(text)


class WireGuardActions:
    """Mixed into `WireGuardPane`; uses its `host`, selection and `poll`."""

    host: Host
    app: Any
    gone: GoneRows
    selected_interface: Callable[[], InterfaceState | None]
    selected_peer: Callable[[], PeerState | None]
    poll: Callable[..., None]
    run_in_thread: Callable[..., None]
    run_plan: Callable[..., None]
    show_plan: Callable[..., None]
    notify: Callable[..., None]
    query_one: Callable[..., Any]
    set_interval: Callable[..., Any]
    set_timer: Callable[..., Any]

    _snapshot: WireGuardSnapshot | None
    _lint_stamp: files.Stamp | None = None
    _linted_at = float("-inf")

    def start_findings(self) -> None:
        # The first lint waits a moment: its thread (imports, every config read)
        # would otherwise take turns with the first frame for the interpreter.
        self.set_timer(LINT_FIRST_AFTER, self.refresh_findings)
        self.set_interval(LINT_SECONDS, partial(self.refresh_findings, when_changed=True))

    # -- plumbing ----------------------------------------------------------------
    def plan_done(self, plan: Plan) -> None:
        """A change may fix or cause findings: read them again."""
        self.refresh_findings()

    def config_interfaces(self) -> list[str]:
        from zsn.wireguard.live import configured_interfaces

        return list(configured_interfaces(self.host) or ())

    def _interface_name(self) -> str | None:
        interface = self.selected_interface()
        if interface is not None:
            return interface.name
        names = self.config_interfaces()
        if not names:
            self.notify("No WireGuard interface here: N creates one.", severity="warning")
            return None
        return names[0]

    def _peer_ref(self) -> tuple[str, str] | None:
        """(interface, peer name or public key) of the highlighted peer."""
        interface, peer = self.selected_interface(), self.selected_peer()
        if interface is None or peer is None:
            self.notify("Highlight a peer first.", severity="warning")
            return None
        return interface.name, peer.name or peer.public_key

    # -- actions -----------------------------------------------------------------
    def action_add_peer(self) -> None:
        from zsn.tui.screens.onboarding import OnboardPeerScreen

        names = self.config_interfaces()
        if not names:
            self.notify("No /etc/wireguard/*.conf to add a peer to: create an interface "
                        "with 'zsn wg create'.", severity="warning", timeout=8)
            return

        def submitted(result: tuple[Plan, onboarding.ClientConfig] | None) -> None:
            if result is not None:
                plan, client = result
                self.run_plan(lambda: plan, lambda _: self._show_client(client, plan.notes))

        self.app.push_screen(OnboardPeerScreen(self.host, names, self._interface_name()),
                             submitted)

    def _show_client(self, client: onboarding.ClientConfig, notes: list[str]) -> None:
        from zsn.tui.screens.client_config import ClientConfigScreen
        from zsn.tui.wording import say

        self.app.push_screen(ClientConfigScreen(f"{client.name} on {client.interface}",
                                                client.text, [say(n, self.app) for n in notes]))

    def action_show_client(self) -> None:
        from zsn.wireguard import onboarding

        ref = self._peer_ref()
        if ref is not None:
            self.run_in_thread(lambda: onboarding.show_client_config(self.host, *ref),
                            lambda client: self._show_client(client, []))

    def action_remove_peer(self) -> None:
        from zsn.wireguard import actions

        ref = self._peer_ref()
        if ref is not None:
            self.run_plan(lambda: actions.plan_remove_peer(self.host, *ref))

    def action_disable_peer(self) -> None:
        from zsn.wireguard import actions

        ref = self._peer_ref()
        if ref is not None:
            self.run_plan(lambda: actions.plan_disable_peer(self.host, *ref))

    def action_enable_peer(self) -> None:
        from zsn.tui.screens.ask import ChooseScreen
        from zsn.wireguard import actions
        from zsn.wireguard.config import config_path, parse

        interface = self._interface_name()
        if interface is None:
            return

        def disabled_peers() -> list[tuple[str, str]]:
            path = config_path(self.host, interface)
            config = parse(files.read_tracked(path).text, str(path))
            return [(p.name or p.get("PublicKey") or "", p.name or p.get("PublicKey") or "")
                    for p in config.all_peers if p.disabled]

        def chosen(name: str | None) -> None:
            if name:
                self.run_plan(lambda: actions.plan_enable_peer(self.host, interface, name))

        def show(choices: list[tuple[str, str]]) -> None:
            if not choices:
                self.notify(f"{interface} has no disabled peers.")
                return
            self.app.push_screen(ChooseScreen(f"Enable a peer of {interface}", choices), chosen)

        self.run_in_thread(disabled_peers, show)

    def action_rename_peer(self) -> None:
        from zsn.tui.screens.ask import AskScreen
        from zsn.wireguard import actions

        ref = self._peer_ref()
        peer = self.selected_peer()
        if ref is None or peer is None:
            return
        shown = peer.name or short_key(peer.public_key, 12)
        self.app.push_screen(AskScreen(
            f"Rename {shown}", "New name:", peer.name or "",
            lambda new_name: actions.plan_rename_peer(self.host, *ref, new_name),
            field="new_name"), self.show_plan)

    def action_routed_subnets(self) -> None:
        from zsn.tui.screens.ask import AskScreen
        from zsn.wireguard import actions

        ref = self._peer_ref()
        peer = self.selected_peer()
        if ref is None or peer is None:
            return
        current = [n for n in peer.allowed_ips if not n.endswith(("/32", "/128"))]

        def build(text: str) -> Plan:
            subnets = [s.strip() for s in text.replace(",", " ").split() if s.strip()]
            return actions.plan_set_routed_subnets(self.host, *ref, subnets)

        self.app.push_screen(AskScreen(f"Subnets behind {peer.name or short_key(ref[1], 12)}",
                                       "Networks routed to this peer (site-to-site), "
                                       "comma-separated; empty for none:",
                                       ", ".join(current), build, field="subnets"),
                             self.show_plan)

    # -- interfaces and routing -----------------------------------------------------
    def _highlighted_interface(self) -> str | None:
        interface = self.selected_interface()
        if interface is None:
            self.notify("Highlight an interface first.", severity="warning")
            return None
        return interface.name

    def action_create_interface(self) -> None:
        from zsn.tui.screens.create_interface import CreateInterfaceScreen

        self.app.push_screen(CreateInterfaceScreen(self.host), self.show_plan)

    def action_interface_up(self) -> None:
        from zsn.tui.screens.ask import ChooseScreen
        from zsn.wireguard import interfaces

        running = {i.name for i in (self._snapshot.interfaces if self._snapshot else ())
                   if i.running}
        choices = [(name, name) for name in self.config_interfaces() if name not in running]
        if not choices:
            self.notify("Every interface with a config is already up.")
            return

        def chosen(name: str | None) -> None:
            if name:
                self.run_plan(lambda: interfaces.plan_up(self.host, name))

        self.app.push_screen(ChooseScreen("Bring up", choices), chosen)

    def action_interface_down(self) -> None:
        from zsn.wireguard import interfaces

        name = self._highlighted_interface()
        if name is not None:
            # Brought down on purpose: "Done" says so, no "disappeared" notice too.
            self.run_plan(lambda: interfaces.plan_down(self.host, name),
                          confirmed=lambda plan: self.gone.expect(name))

    def action_client_to_client(self) -> None:
        from zsn.wireguard import routing

        name = self._highlighted_interface()
        if name is not None:
            self.run_plan(lambda: routing.plan_client_to_client(self.host, name))

    def action_link_interfaces(self) -> None:
        from zsn.tui.screens.ask import ChooseScreen
        from zsn.wireguard import routing

        name = self._highlighted_interface()
        if name is None:
            return
        choices = [(other, other) for other in self.config_interfaces() if other != name]
        if not choices:
            self.notify("There is no other interface to route to.")
            return

        def chosen(other: str | None) -> None:
            if other:
                self.run_plan(lambda: routing.plan_link_interfaces(self.host, name, other))

        self.app.push_screen(ChooseScreen(f"Route {name} to", choices), chosen)

    def action_gateway(self) -> None:
        from zsn.tui.screens.ask import AskScreen
        from zsn.wireguard import routing
        from zsn.wireguard.device import default_route_device

        name = self._highlighted_interface()
        if name is None:
            return

        def ask(detected: str | None, problem: str = "") -> None:
            if detected:
                prompt = "Outgoing interface (found from the default route):"
            elif problem:
                prompt = (f"The default route could not be read ({problem}). Type the "
                          "interface the clients' traffic leaves by (e.g. eth0):")
            else:
                prompt = ("There is no default route here. Type the interface the "
                          "clients' traffic leaves by (e.g. eth0):")
            self.app.push_screen(AskScreen(
                f"Gateway: NAT clients of {name}", prompt, detected or "",
                lambda egress: routing.plan_gateway(self.host, name, egress.strip() or None),
                field="egress"), self.show_plan)

        self.run_in_thread(default_route_device, ask, lambda problem: ask(None, problem))

    # -- access rules --------------------------------------------------------------
    rules_shown: bool
    show_rules: Callable[[bool], None]
    highlighted_rule: Callable[[], tuple[str, int | None] | None]
    """("rule", number) or ("test", number) of the highlighted row of the access-rules
    view (("rule", None): the default), None when there is none."""

    def action_access_rules(self) -> None:
        name = self._highlighted_interface()
        if name is not None:
            self.show_rules(not self.rules_shown)

    def _rule_plan(self, build: Callable[[str], Plan]) -> None:
        name = self._highlighted_interface()
        if name is not None:
            self.run_plan(lambda: build(name))

    def action_add_rule(self) -> None:
        from zsn.tui.screens.ask import AskScreen
        from zsn.wireguard import acl
        from zsn.wireguard.policy import parse_rule_text

        name = self._highlighted_interface()
        if name is None:
            return
        row = self.highlighted_rule()
        position = row[1] if row is not None and row[0] == "rule" else None

        def build(text: str) -> Plan:
            rule = parse_rule_text(text.strip())
            return acl.plan_rule_add(self.host, name, rule.verdict, str(rule.source),
                                     str(rule.destination),
                                     str(rule.port) if rule.port else None, position)

        where = f"placed before rule {position}" if position else "placed last"
        self.app.push_screen(AskScreen(
            f"Add a rule to {name}", f"allow|deny FROM -> TO [PORT[/tcp|udp]] ({where}):",
            "", build, field="rule"), self.show_plan)

    def action_delete_rule(self) -> None:
        from zsn.wireguard import acl

        row = self.highlighted_rule()
        if row is None or row[1] is None:
            self.notify("Highlight a rule or a test first (the default stays: F flips it).",
                        severity="warning")
            return
        kind, number = row[0], row[1]
        if kind == "rule":
            self._rule_plan(lambda name: acl.plan_rule_remove(self.host, name, number))
        else:
            self._rule_plan(lambda name: acl.plan_test_remove(self.host, name, number))

    def action_move_rule(self, step: int) -> None:
        from zsn.wireguard import acl

        row = self.highlighted_rule()
        if row is None or row[0] != "rule" or row[1] is None:
            self.notify("Highlight a rule first.", severity="warning")
            return
        number = row[1]
        self._rule_plan(lambda name: acl.plan_rule_move(self.host, name, number,
                                                        max(1, number + step)))

    def action_explain(self) -> None:
        from zsn.tui.screens.ask import AskScreen
        from zsn.wireguard.acl_view import explain

        name = self._highlighted_interface()
        if name is None:
            return

        def build(text: str) -> str:
            words = text.replace("->", " ").split()
            if len(words) not in (2, 3):
                from zsn.errors import ValidationError

                raise ValidationError("give SRC -> DST [PORT/PROTO]", field="pair")
            policy, decisions = explain(self.host, name, words[0], words[1],
                                        words[2] if len(words) == 3 else None)
            return "\n".join(decision.describe(policy) for decision in decisions)

        def answered(text: str | None) -> None:
            if text:
                self.notify(text, title=f"Explain on {name}", timeout=20)

        self.app.push_screen(AskScreen(f"Explain a pair on {name}",
                                       "SRC -> DST [PORT/PROTO] (addresses, peers, groups):",
                                       "", build, field="pair"), answered)

    def action_add_test(self) -> None:
        from zsn.tui.screens.ask import AskScreen
        from zsn.wireguard import acl

        name = self._highlighted_interface()
        if name is None:
            return
        self.app.push_screen(AskScreen(
            f"Add a test to {name}", "SRC -> DST[:PORT/PROTO] allow|deny (checked on every "
            "change):", "", lambda text: acl.plan_test_add(self.host, name, text.strip()),
            field="test"), self.show_plan)

    def action_flip_default(self) -> None:
        from zsn.wireguard import acl
        from zsn.wireguard.acl_view import read_policy

        def build(name: str) -> Plan:
            current = read_policy(self.host, name)
            flipped = "allow" if current is not None and current.default == "deny" else "deny"
            return acl.plan_default(self.host, name, flipped)

        self._rule_plan(build)

    def action_peer_groups(self) -> None:
        from zsn.tui.screens.ask import AskScreen
        from zsn.wireguard import acl

        ref = self._peer_ref()
        interface, peer = self.selected_interface(), self.selected_peer()
        if ref is None or interface is None or peer is None:
            return
        if peer.name is None:
            self.notify("Only a named peer can be in a group: n names it.",
                        severity="warning")
            return
        current = interface.groups.get(peer.public_key, ())
        name = peer.name

        def build(text: str) -> Plan:
            groups = [group.strip() for group in text.replace(",", " ").split()]
            return acl.plan_peer_groups(self.host, ref[0], name, groups)

        self.app.push_screen(AskScreen(
            f"Groups of {name}", "Its access-rule groups, comma-separated (new ones are "
            "made; empty: none):", ", ".join(current), build, field="groups"),
            self.show_plan)

    # -- lint ----------------------------------------------------------------------
    def refresh_findings(self, when_changed: bool = False) -> None:
        """Lint again (in a thread); `when_changed`: only if lint's files changed or the
        last lint is `LINT_ANYWAY_SECONDS` old."""
        def lint_in_thread() -> list[Finding] | None:
            from zsn.wireguard import lint  # loaded in the worker, off the UI thread

            stamp = lint.inputs_stamp(self.host)  # before: a change meanwhile is seen next
            started = monotonic()
            if when_changed and stamp == self._lint_stamp \
                    and started - self._linted_at < LINT_ANYWAY_SECONDS:
                return None
            findings = lint.lint(self.host)
            self._lint_stamp, self._linted_at = stamp, started
            return findings

        self.run_in_thread(lint_in_thread, self._show_findings_line)

    def _show_findings_line(self, findings: list[Finding] | None) -> None:
        if findings is None:
            return  # nothing lint reads changed
        self.findings = findings
        text = ""
        if findings:
            errors = sum(1 for f in findings if f.severity == "error")
            first = findings[0]
            text = (f"Lint: {len(findings)} finding(s), {errors} error(s); l shows them. "
                    f"{first.id}: {first.message}")
        self.query_one("#wg-findings", FindingsLine).show_text(text)

    def action_show_findings(self) -> None:
        from zsn.tui.screens.findings import FindingsScreen
        from zsn.wireguard import lint

        def chosen(finding: Finding | None) -> None:
            if finding is not None and finding.fix_plan is not None:
                self.run_plan(finding.fix_plan)

        self.run_in_thread(lambda: lint.lint(self.host),
                        lambda findings: self.app.push_screen(FindingsScreen(findings), chosen))
