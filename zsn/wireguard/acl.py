"""WireGuard access rules as plans: groups, rules, the default and the policy's tests
(``zsn wg acl ...``, the pane's policy view), and the part of every peer change that
keeps the kernel's sets in step.

Each change computes the whole new `Policy` and hands it to `plan_policy` (what a
desired-state diff calls too): the policy is checked against the interface's peers,
its tests are run (a change that breaks one is refused, naming it), and the plan
writes the policy file (``/etc/wireguard/acl/IFACE.acl``), the compiled table a boot
loads (``IFACE.nft.json``, by the interface's ``PostUp``; ``PostDown`` removes it) and,
when the interface runs, changes the kernel's table: set elements only when just
the members changed (a peer moved between groups is one small transaction), else the
whole table, atomically. The kernel's table before the change is the undo: a try puts
it back as it was (`TableRestorer`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from functools import partial
from typing import Any, NamedTuple

from zsn.errors import ParseError, ValidationError, ZsnError, about_input
from zsn.formats.jsondoc import intent_of
from zsn.meaning import OwnFile
from zsn.plan import Check, FileEdit, LiveStep, Plan
from zsn.system import files, nftables
from zsn.system.host import Host
from zsn.tries.undo import Outcome, Undo
from zsn.wireguard import policy as acl_policy
from zsn.wireguard.acl_table import (
    POST_DOWN,
    POST_UP,
    TableSpec,
    compile_table,
    differences,
    element_updates,
    file_text,
    hooks_missing,
    read_live,
    removal,
    render,
    table_name,
)
from zsn.wireguard.acl_view import PolicyFile, read_policy
from zsn.wireguard.config import WgConfig
from zsn.wireguard.policy import (
    Group,
    Policy,
    PolicyTest,
    Rule,
    compiled_path,
    peers_of,
    policy_path,
)
from zsn.wireguard.server import ServerConfig

TABLE_UNDO = "nft-table"
POLICY_FILE = OwnFile("zsn's access rules, read back by zsn.wireguard.policy.render")


# -- the kernel's table ------------------------------------------------------------


def _put_table(interface: str, spec: TableSpec | None) -> None:
    nftables.run_batch(render(spec) if spec is not None else removal(interface))


@dataclass(frozen=True)
class TableUndo:
    """The interface's table as `table` again (None: no table): its typed contents (sets
    of networks, rules of known shapes, checked by `TableSpec.from_dict`), never an nft
    command."""

    interface: str
    table: dict[str, Any] | None

    def __post_init__(self) -> None:
        try:
            table_name(self.interface)
            spec = None if self.table is None else TableSpec.from_dict(self.table)
        except ValidationError as exc:
            raise ValueError(str(exc)) from None
        if spec is not None and spec.interface != self.interface:
            raise ValueError("the record's table is of another interface")

    @property
    def spec(self) -> TableSpec | None:
        return None if self.table is None else TableSpec.from_dict(self.table)

    @property
    def name(self) -> str:
        return f"nft-table {self.interface}"


def table_undo(interface: str, spec: TableSpec | None) -> Undo:
    """The interface's table as `spec` again (None: no table)."""
    return Undo(TABLE_UNDO, TableUndo(interface, None if spec is None else spec.as_dict()))


CHANGED_BY_HAND = "not as zsn writes it"
"""What `TableRestorer.observe` says of a table changed by hand (it cannot be read)."""


class TableRestorer:
    """Puts an interface's table back as it was: zsn renders it from the record's
    typed contents (sets of networks, rules of known shapes), so a record names no
    program and no nft command."""

    params = TableUndo

    def describe(self, params: TableUndo) -> str:
        if params.table is None:
            return f"remove the access rules of {params.interface} from nftables"
        return f"put back the access rules of {params.interface} in nftables as they were"

    def objects(self, params: TableUndo) -> tuple[str, ...]:
        return (params.name,)

    def observe(self, host: Host, params: TableUndo) -> dict[str, object]:
        try:
            live = read_live(params.interface)
        except ParseError:
            return {params.name: CHANGED_BY_HAND}
        return {params.name: None if live is None else live.spec.as_dict()}

    def wanted(self, params: TableUndo) -> dict[str, object]:
        return {params.name: params.table}

    def restore(self, host: Host, params: TableUndo, leave: frozenset[str],
                force: bool) -> Outcome:
        wanted = params.spec
        outcome = Outcome()
        if params.name in leave:
            return outcome
        try:
            live = read_live(params.interface)
        except ParseError:
            live = None  # changed by hand since: put back what the record holds
            unchanged = False
        else:
            unchanged = (live.spec if live is not None else None) == wanted
        if unchanged:
            return outcome
        _put_table(params.interface, wanted)
        outcome.done.append(self.describe(params).replace("put back ", "", 1))
        return outcome

    def commands(self, host: Host, params: TableUndo) -> list[str]:
        if params.table is None:
            return [f"nft delete table inet zsn_{params.interface}"]
        return [f"zsn wg acl load {params.interface}  # loads the policy file again"]


TABLE = TableRestorer()


# -- plans -------------------------------------------------------------------------


def add_hooks(config: WgConfig) -> None:
    """The PostUp that loads the table and the PostDown that removes it, in `config`."""
    interface = config.interface
    if interface is None:
        raise ValidationError(f"{config.source}: no [Interface] section")
    ups = {entry.value.strip() for entry in interface.entries_for("PostUp")}
    if POST_UP not in ups:
        config.append_entry(interface, "PostUp", POST_UP)
    interface = config.interface
    assert interface is not None
    downs = {entry.value.strip() for entry in interface.entries_for("PostDown")}
    if POST_DOWN not in downs:
        config.append_entry(interface, "PostDown", POST_DOWN)


class PolicySteps(NamedTuple):
    steps: list[FileEdit | LiveStep]
    checks: list[Check]
    notes: list[str]


def policy_steps(host: Host, server: ServerConfig, stored: PolicyFile, policy: Policy,
                 config: WgConfig, policy_tests: bool = True) -> PolicySteps:
    """The steps that make `policy` the interface's, with `config` the interface's
    config as the plan leaves it (its PostUp/PostDown added to it here, if missing).
    A policy that fails one of its tests is refused, unless `policy_tests` is False."""
    nftables.require_nft()
    peers = peers_of(host, server.name, config)
    acl_policy.check_policy(policy, peers)
    failures = acl_policy.failing_tests(policy, peers) if policy_tests else []
    if failures:
        raise ValidationError(f"refused: the change breaks the access rules' {failures[0]}")
    spec = compile_table(policy, peers)
    steps: list[FileEdit | LiveStep] = []
    text = acl_policy.render(policy)
    if stored.snapshot is None or stored.snapshot.text != text:
        steps.append(FileEdit(stored.path, stored.snapshot, text, mode=files.PRIVATE_FILE_MODE,
                              private_dir=True, intent=POLICY_FILE))
    boot = compiled_path(host, server.name)
    boot_snapshot = files.read_tracked(boot) if files.exists(boot) else None
    boot_text = file_text(spec)
    if boot_snapshot is None or boot_snapshot.text != boot_text:
        steps.append(FileEdit(boot, boot_snapshot, boot_text, mode=files.PRIVATE_FILE_MODE,
                              private_dir=True, shown_in_full=False,
                              intent=intent_of({"nftables": render(spec)})))
    if hooks_missing(config):
        add_hooks(config)
    notes: list[str] = []
    checks: list[Check] = []
    if server.live() is None:
        notes.append(f"{server.name} is not running: its access rules are loaded when it "
                     "comes up")
        return PolicySteps(steps, checks, notes)
    step = _live_step(server.name, spec, notes)
    if step is not None:
        steps.append(step)
    checks.append(Check(f"access rules of {server.name} in nftables",
                        partial(_live_differences, server.name, spec)))
    return PolicySteps(steps, checks, notes)


def _live_differences(interface: str, spec: TableSpec) -> list[str]:
    live = read_live(interface)
    return differences(live.spec if live is not None else None, spec)


def _live_step(interface: str, spec: TableSpec, notes: list[str]) -> LiveStep | None:
    table = f"table inet {table_name(interface)}"
    try:
        live = read_live(interface)
    except ParseError as exc:
        notes.append(f"{exc}: zsn replaces it; a try could not put it back")
        return LiveStep(f"replace nftables {table} (one transaction)",
                        partial(_put_table, interface, spec), None, None)
    before = live.spec if live is not None else None
    if before == spec:
        return None
    restore = (table_undo(interface, before),)
    undo = partial(_put_table, interface, before)
    if before is not None and before.same_shape(spec):
        updates = element_updates(before, spec)
        count = sum(len(command[verb]["element"]["elem"]) for command in updates
                    for verb in command)
        return LiveStep(f"update {count} set element{'s' if count != 1 else ''} of nftables "
                        f"{table} (one transaction)",
                        partial(nftables.run_batch, updates), undo, restore)
    verb = "replace" if before is not None else "load"
    return LiveStep(f"{verb} nftables {table}: {_count(spec)} (one transaction)",
                    partial(_put_table, interface, spec), undo, restore)


def _count(spec: TableSpec) -> str:
    elements = sum(len(each.elements) for each in spec.sets)
    return f"{len(spec.sets)} sets ({elements} elements), {len(spec.rules) + 2} rules"


def plan_policy(host: Host, interface: str, policy: Policy, title: str | None = None) -> Plan:
    """Make `policy` the access rules of `interface`: what every ``zsn wg acl`` change
    plans, and what a desired-state diff calls with the policy it wants."""
    server = ServerConfig.load(host, interface)
    return _planned(host, server, PolicyFile.load(host, server), policy, title)


def _planned(host: Host, server: ServerConfig, stored: PolicyFile, policy: Policy,
             title: str | None) -> Plan:
    if policy.interface != server.name:
        raise ValidationError(f"a policy of {policy.interface} cannot be {server.name}'s")
    config = server.edited()
    found = policy_steps(host, server, stored, policy, config)
    plan = Plan(title or f"access rules of {server.name}")
    if hooks_missing(server.config):  # policy_steps added them to `config`
        plan.steps.append(server.edit(config))
    plan.steps.extend(found.steps)
    plan.checks.extend(found.checks)
    plan.notes.extend(found.notes)
    return plan


def _change(host: Host, interface: str, title: str,
            change: Any) -> Plan:
    """A plan for `change(policy) -> policy` applied to the interface's policy."""
    with about_input("interface"):
        server = ServerConfig.load(host, interface)
    stored = PolicyFile.load(host, server)
    return _planned(host, server, stored, change(stored.policy), title)


def plan_load(host: Host, interface: str) -> Plan:
    """The policy file as it is, loaded again (the kernel's table, the boot file and
    the PostUp/PostDown lines made to agree with it)."""
    return _change(host, interface, f"load the access rules of {interface}",
                   lambda policy: policy)


def plan_default(host: Host, interface: str, verdict: str) -> Plan:
    with about_input("verdict"):
        checked = acl_policy.check_verdict(verdict)
    return _change(host, interface, f"{interface}: what matches no rule is "
                   f"{'allowed' if checked == 'allow' else 'denied'}",
                   lambda policy: policy._replace(default=checked))


def plan_group_add(host: Host, interface: str, group: str, peers: list[str],
                   move: bool = False) -> Plan:
    """Add `peers` to `group` (made when it does not exist); `move`: take them out of
    their other groups in the same plan (a peer moved between groups)."""
    with about_input("group"):
        acl_policy.check_group_name(group)
    if not peers:
        raise ValidationError("name at least one peer", field="peers")

    def change(policy: Policy) -> Policy:
        current = policy.group(group)
        members = list(current.members) if current else []
        added = [peer for peer in peers if peer not in members]
        if not added and not move:
            raise ValidationError(f"{', '.join(peers)} already in {group}", field="peers")
        updated = Group(group, (*members, *added))
        groups = [updated if each.name == group else
                  Group(each.name, tuple(m for m in each.members if m not in peers))
                  if move else each for each in policy.groups]
        if current is None:
            groups.append(updated)
        return policy._replace(groups=tuple(groups))

    verb = "move" if move else "add"
    return _change(host, interface, f"{verb} {', '.join(peers)} to group {group} of "
                   f"{interface}", change)


def plan_peer_groups(host: Host, interface: str, peer: str, groups: list[str]) -> Plan:
    """Make `groups` the groups `peer` is in, in one plan: into each (made when new), out
    of every other (an emptied group stays: rules may name it)."""
    with about_input("groups"):
        for group in groups:
            acl_policy.check_group_name(group)

    def change(policy: Policy) -> Policy:
        kept = [Group(each.name, tuple(m for m in each.members if m != peer)
                      if each.name not in groups else
                      each.members if peer in each.members else (*each.members, peer))
                for each in policy.groups]
        known = {each.name for each in kept}
        kept += [Group(group, (peer,)) for group in dict.fromkeys(groups) if group not in known]
        return policy._replace(groups=tuple(kept))

    shown = ", ".join(groups) if groups else "no group"
    return _change(host, interface, f"{peer} on {interface}: in {shown}", change)


def plan_group_remove(host: Host, interface: str, group: str, peers: list[str]) -> Plan:
    """Take `peers` out of `group`; without peers, remove the group (refused while a
    rule or test names it)."""

    def change(policy: Policy) -> Policy:
        current = policy.group(group)
        if current is None:
            raise ValidationError(f"{interface} has no group {group!r}", field="group")
        if not peers:
            if group in policy.names():
                raise ValidationError(f"a rule or test names {group}: remove it first")
            return policy._replace(groups=tuple(g for g in policy.groups if g.name != group))
        missing = [peer for peer in peers if peer not in current.members]
        if missing:
            raise ValidationError(f"{missing[0]} is not in {group}", field="peers")
        updated = Group(group, tuple(m for m in current.members if m not in peers))
        return policy._replace(groups=tuple(updated if g.name == group else g
                                            for g in policy.groups))

    what = f"take {', '.join(peers)} out of group {group}" if peers \
        else f"remove group {group}"
    return _change(host, interface, f"{what} of {interface}", change)


def _position(position: int | None, count: int) -> int:
    """A 1-based position among `count` rules (None: the end)."""
    if position is None:
        return count + 1
    if not 1 <= position <= count + 1:
        raise ValidationError(f"position {position} is outside 1-{count + 1}",
                              field="position")
    return position


def plan_rule_add(host: Host, interface: str, verdict: str, source: str, destination: str,
                  port: str | None = None, position: int | None = None) -> Plan:
    with about_input("port"):
        rule = acl_policy.parse_rule(verdict, source, destination, port)

    def change(policy: Policy) -> Policy:
        at = _position(position, len(policy.rules))
        rules = list(policy.rules)
        rules.insert(at - 1, rule)
        return policy._replace(rules=tuple(rules))

    where = f" as rule {position}" if position else ""
    return _change(host, interface, f"{interface}: add '{rule}'{where}", change)


def _number(number: int, items: tuple[Any, ...], what: str) -> int:
    if not 1 <= number <= len(items):
        raise ValidationError(f"there is no {what} {number}" + (
            f" (1-{len(items)})" if items else f" (no {what}s)"), field="number")
    return number


def plan_rule_remove(host: Host, interface: str, number: int) -> Plan:
    def change(policy: Policy) -> Policy:
        index = _number(number, policy.rules, "rule") - 1
        return policy._replace(rules=policy.rules[:index] + policy.rules[index + 1:])

    return _change(host, interface, f"{interface}: remove rule {number}", change)


def plan_rule_move(host: Host, interface: str, number: int, position: int) -> Plan:
    def change(policy: Policy) -> Policy:
        index = _number(number, policy.rules, "rule") - 1
        rules = list(policy.rules)
        rule = rules.pop(index)
        rules.insert(_position(position, len(rules)) - 1, rule)
        return policy._replace(rules=tuple(rules))

    return _change(host, interface, f"{interface}: move rule {number} to {position}", change)


def plan_test_add(host: Host, interface: str, text: str) -> Plan:
    with about_input("test"):
        test = acl_policy.parse_test_text(text)
    return _change(host, interface, f"{interface}: add test '{test}'",
                   lambda policy: policy._replace(tests=(*policy.tests, test)))


def plan_test_remove(host: Host, interface: str, number: int) -> Plan:
    def change(policy: Policy) -> Policy:
        index = _number(number, policy.tests, "test") - 1
        return policy._replace(tests=policy.tests[:index] + policy.tests[index + 1:])

    return _change(host, interface, f"{interface}: remove test {number}", change)


def with_rule(policy: Policy, rule: Rule) -> Policy:
    """`policy` with `rule` at the end, unless it has it."""
    return policy if rule in policy.rules else policy._replace(rules=(*policy.rules, rule))


# -- peer changes ------------------------------------------------------------------


def peer_change_steps(host: Host, server: ServerConfig, edited: WgConfig,
                      renamed: Mapping[str, str] | None = None,
                      removed: frozenset[str] = frozenset(),
                      policy_tests: bool = True) -> PolicySteps:
    """What a change to the interface's peers (`edited`: its config after the change)
    does to its access rules: members renamed or removed in the policy file, the sets
    in the kernel updated in the same plan. Nothing when the interface has no policy."""
    path = policy_path(host, server.name)
    if not files.exists(path):
        return PolicySteps([], [], [])
    stored = PolicyFile.load(host, server)
    policy = stored.policy
    renamed = dict(renamed or {})
    for name in removed:
        naming = [str(number) for number, rule in enumerate(policy.rules, start=1)
                  if name in (rule.source.value, rule.destination.value)]
        if naming:
            raise ValidationError(f"rule {naming[0]} of {server.name}'s access rules names "
                                  f"{name}: remove or change it first "
                                  f"(zsn wg acl rule remove {server.name} {naming[0]})")
    if renamed or removed:
        policy = _renamed(policy, renamed, removed)
    return policy_steps(host, server, stored, policy, edited, policy_tests)


def _renamed(policy: Policy, renamed: Mapping[str, str], removed: frozenset[str]) -> Policy:
    def selector(each: acl_policy.Selector) -> acl_policy.Selector:
        if each.kind in ("name", "behind") and each.value in renamed:
            return each._replace(value=renamed[each.value])
        return each

    groups = tuple(Group(group.name, tuple(renamed.get(member, member)
                                           for member in group.members
                                           if member not in removed))
                   for group in policy.groups)
    rules = tuple(rule._replace(source=selector(rule.source),
                                destination=selector(rule.destination))
                  for rule in policy.rules)
    tests = tuple(PolicyTest(selector(test.source), selector(test.destination), test.port,
                             test.expected) for test in policy.tests)
    return policy._replace(groups=groups, rules=rules, tests=tests)


def refuse_group_name(host: Host, interface: str, name: str) -> None:
    """A new peer may not take the name of a group of the interface's policy."""
    try:
        policy = read_policy(host, interface)
    except ZsnError:
        return  # the change that reads the policy reports it
    if policy is not None and policy.group(name) is not None:
        raise ValidationError(f"{interface}'s access rules have a group named {name!r}: "
                              "give the peer another name", field="name")

