"""Every link change as a `Plan`: checked against the live links first, then live
steps (netlink, each with its undo) and, with ``persist``, the config files.

A failure part-way undoes what was done (`zsn.plan.Plan.apply`). Bad input gets one
specific reason and changes nothing (`ValidationError`). A change that touches the
links carrying this SSH session needs ``confirm_ssh`` naming the link
(`SessionLinkError` says which; the CLI offers ``--try`` too: `zsn.headless`). Every
live plan carries the links' state before it (`zsn.links.checkpoint`: a try's undo)
and what they must be after it (`zsn.links.verify`: verify after apply).

The pane's forms and the CLI's options say what to do with one request type per
action (`CreateBond` ... `SaveLink`), read from their text by `request_from_fields`
and planned by `plan`: each input is read, and each refusal worded, once.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from functools import partial
from typing import NamedTuple

from zsn.errors import ValidationError, about_input
from zsn.links import bonding, validate, verify
from zsn.links.checkpoint import capture, create, describe_create
from zsn.links.live import read_links
from zsn.links.model import KINDS_ZSN_MANAGES, Interface, LinksSnapshot, dependents
from zsn.links.persist import LinkConfig, Persisted, Remove, Upsert, config_of
from zsn.links.persist.owner import detect_owner, plan_persist, read_persistent
from zsn.plan import LiveStep, Plan
from zsn.system import netlink, rtnetlink
from zsn.system.host import Host
from zsn.tries.session import SessionPath, find_session, guard
from zsn.wording import Action, Phrase

PERSIST_KEY = "persist_mode"
"""The pane's action that chooses live, live + config or config only."""


@dataclass(frozen=True)
class Options:
    persist: bool = False
    """Also write the persistent config (or show NetworkManager's commands)."""
    config_only: bool = False
    """Write the persistent config and touch no live link."""
    confirm_ssh: str | None = None
    """The SSH session's link, named by the user to allow touching it."""
    guard_session: bool = True
    """Refuse here a change that could cut the SSH session off (`SessionLinkError`);
    the CLI guards every domain's changes itself, with ``--try`` (`apply_change`)."""


@dataclass
class Context:
    """What a plan is checked against: the live links, the default route, the session."""

    host: Host
    snapshot: LinksSnapshot
    default_route: set[int] = field(default_factory=set)
    session: SessionPath | None = None
    _persisted: Persisted | None = None

    @classmethod
    def read(cls, host: Host, environ: Mapping[str, str] | None = None) -> Context:
        snapshot, _details = read_links(host)
        if not snapshot.live:
            return cls(host, snapshot)
        return cls(host, snapshot, rtnetlink.default_route_interfaces(),
                   find_session(host, os.environ if environ is None else environ))

    @property
    def links(self) -> dict[str, Interface]:
        return self.snapshot.by_name()

    def persisted(self) -> Persisted:
        if self._persisted is None:
            _owner, self._persisted = read_persistent(self.host, detect_owner(self.host))
        return self._persisted

    def find(self, name: str, what: str = "interface") -> Interface:
        interface = self.links.get(name)
        if interface is None:
            known = ", ".join(sorted(self.links)) or "none"
            raise ValidationError(f"no {what} named {name!r} here (known: {known})")
        return interface


# -- live steps ------------------------------------------------------------------------

COVERED: tuple[()] = ()
"""A step's `LiveStep.restore`: the plan's checkpoint puts its links back."""


def _enslave_bond(member: str, bond: str, was_up: bool) -> LiveStep:
    def run() -> None:
        netlink.set_link(member, state="down")  # an up link cannot be enslaved (EPERM)
        netlink.set_link(member, master=bond)
        netlink.set_link(member, state="up")

    def undo() -> None:
        netlink.set_link(member, master=None)
        netlink.set_link(member, state="up" if was_up else "down")

    return LiveStep(f"enslave {member} to {bond} (down, master {bond}, up)", run, undo,
                    COVERED)


def _release_bond(member: str, bond: str, was_up: bool) -> LiveStep:
    def run() -> None:
        netlink.set_link(member, master=None)
        netlink.set_link(member, state="up" if was_up else "down")

    def undo() -> None:
        netlink.set_link(member, state="down")
        netlink.set_link(member, master=bond)
        netlink.set_link(member, state="up")

    return LiveStep(f"release {member} from {bond}", run, undo, COVERED)


def _add_port(port: str, bridge: str) -> LiveStep:
    return LiveStep(f"add port {port} to {bridge}",
                    lambda: netlink.set_link(port, master=bridge),
                    lambda: netlink.set_link(port, master=None), COVERED)


def _remove_port(port: str, bridge: str) -> LiveStep:
    return LiveStep(f"remove port {port} from {bridge}",
                    lambda: netlink.set_link(port, master=None),
                    lambda: netlink.set_link(port, master=bridge), COVERED)


def _state(name: str, up: bool) -> LiveStep:
    return LiveStep(f"bring {name} {'up' if up else 'down'}",
                    lambda: netlink.set_link(name, state="up" if up else "down"),
                    lambda: netlink.set_link(name, state="down" if up else "up"), COVERED)


def _mtu(name: str, old: int, new: int) -> LiveStep:
    verb = "raise" if new > old else "lower"
    return LiveStep(f"{verb} {name} MTU {old} -> {new}",
                    lambda: netlink.set_link(name, mtu=new),
                    lambda: netlink.set_link(name, mtu=old), COVERED)


# -- checks ----------------------------------------------------------------------------


def _check_new_name(context: Context, name: str, options: Options) -> None:
    validate.interface_name(name)
    if not options.config_only and name in context.links:
        existing = context.links[name]
        raise ValidationError(f"{name} exists already (a {existing.kind})")


def _check_member(context: Context, name: str, master: str, warnings: list[str]) -> Interface:
    """A link about to become a bond member or bridge port (live checks)."""
    member = context.find(name)
    if member.master is not None:
        raise ValidationError(f"{name} is already enslaved to {member.master}")
    if member.kind == "loopback":
        raise ValidationError(f"{name} is the loopback device")
    if member.name == master:
        raise ValidationError(f"{name} cannot be a member of itself")
    routable = [a for a in member.addresses if not a.startswith("fe80:")]
    if member.addresses and member.admin_up and member.index in context.default_route:
        raise ValidationError(
            f"{name} is up with {', '.join(routable or member.addresses)} and carries the "
            "default route: "
            f"as a member of {master} it would lose them and cut this host off (move the "
            f"address and route to {master} first)")
    if routable:
        warnings.append(f"{name}'s addresses ({', '.join(routable)}) stop working once it is "
                        f"a member of {master}")
    return member


def _check_session(context: Context, plan: Plan, options: Options) -> None:
    if options.guard_session and not options.config_only:
        guard(plan, context.session, options.confirm_ssh, False)


def _mode_options(mode: str, xmit_hash_policy: str | None, lacp_rate: str | None) -> None:
    if xmit_hash_policy is not None:
        with about_input("xmit_hash_policy"):
            validate.xmit_hash_policy(xmit_hash_policy)
            if mode not in bonding.HASHED_MODES:
                raise ValidationError(f"a hash policy applies to "
                                      f"{', '.join(bonding.HASHED_MODES)}, not {mode}")
    if lacp_rate is not None:
        with about_input("lacp_rate"):
            validate.lacp_rate(lacp_rate)
            if mode != "802.3ad":
                raise ValidationError(f"the LACP rate applies to 802.3ad only, not {mode}")


def _need_live(context: Context, options: Options) -> None:
    if not context.snapshot.live and not options.config_only:
        raise ValidationError(Phrase(
            f"{context.host.root} is not this machine's root: edit its config only (",
            Action(PERSIST_KEY, "--config-only"), "); live links are this machine's"))


def _check_mtu(mtu: int | None) -> None:
    if mtu is not None:
        with about_input("mtu"):
            validate.mtu(mtu)


def _raise_first(mtu: int, parent: str, parent_mtu: int) -> Phrase:
    return Phrase(f"MTU {mtu} is above {parent}'s {parent_mtu}: raise {parent} first (",
                  Action("mtu", f"zsn link set {parent} --mtu {mtu}"), ")")


# -- plans -----------------------------------------------------------------------------


def _finish(context: Context, plan: Plan, touched: list[str], changes: list[Upsert | Remove],
            involved: list[str], options: Options,
            expected: list[verify.Expected] | None = None) -> Plan:
    """Session check, then the persistent config's edits, after the live steps: a live
    step that fails writes no file, a write that fails undoes the live steps. A live
    change records its links as they are (a try's undo) and what they must become
    (verify after apply)."""
    if any(isinstance(step, LiveStep) for step in plan.steps):
        plan.touches = frozenset(touched)
        plan.checkpoint.append(capture(context.snapshot.interfaces, {*touched, *involved}))
        if expected:
            plan.checks.append(verify.check(context.host, expected))
    _check_session(context, plan, options)
    if options.config_only:
        plan.notes.append("config only: no live link is touched")
    if options.persist or options.config_only:
        persisted = plan_persist(context.host, changes, involved)
        plan.steps.extend(replace(edit, persistent=not options.config_only)
                          for edit in persisted.edits)
        plan.warnings.extend(persisted.warnings)
        plan.notes.extend(persisted.notes)
        if persisted.commands:
            plan.notes.extend(f"run: {command}" for command in persisted.commands)
            plan.output = "".join(f"{command}\n" for command in persisted.commands)
        elif not persisted.edits:
            plan.notes.append(f"the {persisted.owner} config already says so")
    elif context.snapshot.live:
        plan.notes.append(Phrase("live only: the change is gone after a reboot (",
                                 Action(PERSIST_KEY, "add --persist"), ")"))
    return plan


def plan_create_bond(context: Context, name: str, mode: str, members: list[str], *,
                     miimon: int | None = None, xmit_hash_policy: str | None = None,
                     lacp_rate: str | None = None, mtu: int | None = None,
                     options: Options = Options()) -> Plan:
    _need_live(context, options)
    with about_input("name"):
        _check_new_name(context, name, options)
    with about_input("mode"):
        validate.bond_mode(mode)
    _mode_options(mode, xmit_hash_policy, lacp_rate)
    if miimon is not None:
        with about_input("miimon"):
            validate.miimon(miimon)
    _check_mtu(mtu)
    if not members:
        raise ValidationError("a bond needs at least one member (eth1,eth2)", field="members")
    config = LinkConfig(name, "bond", tuple(members), mtu=mtu, mode=mode,
                        miimon=miimon if miimon is not None else bonding.DEFAULT_MIIMON,
                        xmit_hash_policy=xmit_hash_policy, lacp_rate=lacp_rate)
    plan = Plan(f"create bond {name} ({mode}: {', '.join(members)})")
    if len(members) == 1:
        plan.warnings.append(f"{name} has one member: no redundancy (LINK004)")
    if mode in bonding.STATIC_LAG_MODES:
        plan.warnings.append(f"{mode} needs the switch ports grouped (a static LAG), or each "
                             "member on its own switch/VLAN; balance-rr also reorders packets "
                             "(LINK001)")
    if not options.config_only:
        plan.steps.append(LiveStep(describe_create(config), partial(create, config),
                                   lambda: netlink.delete_link(name), COVERED))
        for member_name in members:
            with about_input("members"):
                member = _check_member(context, member_name, name, plan.warnings)
            if mtu is not None and member.max_mtu and mtu > member.max_mtu:
                raise ValidationError(f"MTU {mtu} is above {member_name}'s maximum "
                                      f"{member.max_mtu}", field="mtu")
            plan.steps.append(_enslave_bond(member_name, name, member.admin_up))
        plan.steps.append(_state(name, True))
    expected = [verify.Expected(name, kind="bond", mode=mode, members=frozenset(members),
                                up=True, mtu=mtu),
                *(verify.Expected(member, master=name) for member in members)]
    return _finish(context, plan, list(members), [Upsert(config)], [name, *members], options,
                   expected)


def plan_create_vlan(context: Context, name: str, parent: str, vlan_id: int, *,
                     mtu: int | None = None, options: Options = Options()) -> Plan:
    _need_live(context, options)
    with about_input("name"):
        _check_new_name(context, name, options)
    with about_input("parent"):
        validate.interface_name(parent, "parent")
    with about_input("vlan_id"):
        validate.vlan_id(vlan_id)
    _check_mtu(mtu)
    plan = Plan(f"create VLAN {name} (id {vlan_id} on {parent})")
    if not options.config_only:
        with about_input("parent"):
            link = context.find(parent, "parent")
            if link.master is not None:
                raise ValidationError(f"{parent} is a member of {link.master}: put the VLAN "
                                      f"on {link.master}")
        for other in dependents(context.snapshot.interfaces, parent):
            if other.vlan_id == vlan_id:
                raise ValidationError(f"{parent} already has VLAN {vlan_id}: {other.name}",
                                      field="vlan_id")
        if mtu is not None and mtu > link.mtu:
            raise ValidationError(_raise_first(mtu, parent, link.mtu), field="mtu")
        if link.kind == "bond" and not any(i.master == parent
                                           for i in context.snapshot.interfaces):
            plan.warnings.append(f"{parent} has no member yet: the VLAN copies its MAC "
                                 "00:00:00:00:00:00; add a member first (bonding.rst 6)")
    config = LinkConfig(name, "vlan", parent=parent, vlan_id=vlan_id, mtu=mtu)
    if not options.config_only:
        plan.steps.append(LiveStep(describe_create(config), partial(create, config),
                                   lambda: netlink.delete_link(name), COVERED))
        plan.steps.append(_state(name, True))
    expected = [verify.Expected(name, kind="vlan", parent=parent, vlan_id=vlan_id, up=True,
                                mtu=mtu)]
    return _finish(context, plan, [name], [Upsert(config)], [name, parent], options, expected)


def plan_create_bridge(context: Context, name: str, ports: list[str], *, stp: bool = False,
                       mtu: int | None = None, options: Options = Options()) -> Plan:
    _need_live(context, options)
    with about_input("name"):
        _check_new_name(context, name, options)
    _check_mtu(mtu)
    config = LinkConfig(name, "bridge", tuple(ports), mtu=mtu, stp=stp)
    plan = Plan(f"create bridge {name}" + (f" ({', '.join(ports)})" if ports else ""))
    if not options.config_only:
        plan.steps.append(LiveStep(describe_create(config), partial(create, config),
                                   lambda: netlink.delete_link(name), COVERED))
        for port in ports:
            with about_input("ports"):
                _check_member(context, port, name, plan.warnings)
            plan.steps.append(_add_port(port, name))
        plan.steps.append(_state(name, True))
    expected = [verify.Expected(name, kind="bridge", members=frozenset(ports), up=True,
                                mtu=mtu),
                *(verify.Expected(port, master=name) for port in ports)]
    return _finish(context, plan, list(ports), [Upsert(config)], [name, *ports], options,
                   expected)


def _master_config(context: Context, name: str, options: Options) -> tuple[LinkConfig,
                                                                           Interface | None]:
    """A bond or bridge as it is live (or, with --config-only, as its config says)."""
    if options.config_only and name not in context.links:
        config = context.persisted().configs.get(name)
        if config is None or config.kind not in ("bond", "bridge"):
            raise ValidationError(f"no bond or bridge named {name!r} in the config")
        return config, None
    master = context.find(name)
    if master.kind not in ("bond", "bridge"):
        raise ValidationError(f"{name} is a {master.kind}, not a bond or bridge")
    return config_of(master, context.snapshot.interfaces), master


def plan_add_member(context: Context, master_name: str, member: str,
                    options: Options = Options()) -> Plan:
    _need_live(context, options)
    with about_input("member"):
        validate.interface_name(member, "member")
    before, master = _master_config(context, master_name, options)
    if member in before.members:
        raise ValidationError(f"{member} is already {_role(before)} of {master_name}",
                              field="member")
    after = replace(before, members=(*before.members, member))
    plan = Plan(f"add {member} to {before.kind} {master_name}")
    if master is not None and not options.config_only:
        with about_input("member"):
            link = _check_member(context, member, master_name, plan.warnings)
        if before.kind == "bond":
            if link.max_mtu and master.mtu > link.max_mtu:
                raise ValidationError(f"{master_name}'s MTU {master.mtu} is above {member}'s "
                                      f"maximum {link.max_mtu}", field="member")
            plan.steps.append(_enslave_bond(member, master_name, link.admin_up))
        else:
            plan.steps.append(_add_port(member, master_name))
    return _finish(context, plan, [member],
                   [Upsert(after, frozenset({"members"}), before if master else None)],
                   [master_name, member], options,
                   [verify.Expected(master_name, members=frozenset({member})),
                    verify.Expected(member, master=master_name)])


def _role(config: LinkConfig) -> str:
    return "a port" if config.kind == "bridge" else "a member"


def plan_remove_member(context: Context, master_name: str, member: str,
                       options: Options = Options()) -> Plan:
    _need_live(context, options)
    with about_input("member"):
        validate.interface_name(member, "member")
    before, master = _master_config(context, master_name, options)
    if member not in before.members:
        raise ValidationError(f"{member} is not {_role(before)} of {master_name} "
                              f"({', '.join(before.members) or 'it has none'})",
                              field="member")
    after = replace(before, members=tuple(m for m in before.members if m != member))
    plan = Plan(f"remove {member} from {before.kind} {master_name}")
    if before.kind == "bond" and not after.members:
        plan.warnings.append(f"{master_name} is left without members: it stops passing "
                             "traffic")
    if master is not None and not options.config_only:
        link = context.find(member)
        plan.steps.append(_release_bond(member, master_name, link.admin_up)
                          if before.kind == "bond" else _remove_port(member, master_name))
    return _finish(context, plan, [member, master_name],
                   [Upsert(after, frozenset({"members"}), before if master else None)],
                   [master_name, member], options, [verify.Expected(member, master=None)])


def plan_set_mtu(context: Context, name: str, mtu: int, options: Options = Options()) -> Plan:
    """Raise the link itself (a bond's members follow it); lowering lowers the VLANs
    stacked on it first, deepest first, as the kernel would do anyway."""
    _need_live(context, options)
    validate.interface_name(name)
    _check_mtu(mtu)
    plan = Plan(f"set {name} MTU to {mtu}")
    changes: list[Upsert | Remove] = []
    touched = [name]
    if options.config_only and name not in context.links:
        config = context.persisted().configs.get(name)
        if config is None:
            raise ValidationError(f"no bond, VLAN or bridge named {name!r} in the config")
        changes.append(Upsert(replace(config, mtu=mtu),
                              frozenset({"mtu"})))
        return _finish(context, plan, touched, changes, [name], options)
    link = context.find(name)
    interfaces = context.snapshot.interfaces
    if link.master is not None and link.master_kind == "bond":
        raise ValidationError(f"{name} is a member of {link.master}: set {link.master}'s MTU "
                              "(its members follow it)")
    if link.max_mtu and mtu > link.max_mtu or link.min_mtu and mtu < link.min_mtu:
        raise ValidationError(f"MTU {mtu} is outside {name}'s range {link.min_mtu or 0}-"
                              f"{link.max_mtu}", field="mtu")
    if link.parent is not None:
        parent = context.links.get(link.parent)
        if parent is not None and mtu > parent.mtu:
            raise ValidationError(_raise_first(mtu, link.parent, parent.mtu), field="mtu")
    if link.kind == "bond":
        for member in (i for i in interfaces if i.master == name):
            if member.max_mtu and mtu > member.max_mtu:
                raise ValidationError(f"MTU {mtu} is above member {member.name}'s maximum "
                                      f"{member.max_mtu}", field="mtu")
            touched.append(member.name)
    if mtu == link.mtu:
        plan.notes.append(f"{name} has MTU {mtu} already")
    lowered = _stacked_above(interfaces, name, mtu) if mtu < link.mtu else []
    for vlan in lowered:
        plan.steps.append(_mtu(vlan.name, vlan.mtu, mtu))
        touched.append(vlan.name)
        vlan_before = config_of(vlan, interfaces)
        changes.append(Upsert(replace(vlan_before, mtu=mtu), frozenset({"mtu"}), vlan_before))
    if mtu != link.mtu:
        plan.steps.append(_mtu(name, link.mtu, mtu))
    if link.kind in KINDS_ZSN_MANAGES:
        before = config_of(link, interfaces)
        changes.append(Upsert(replace(before, mtu=mtu),
                              frozenset({"mtu"}), before))
    elif options.persist:
        plan.warnings.append(f"zsn persists the MTU of bonds, VLANs and bridges; {name} is a "
                             f"{link.kind}: set it in its own config")
    expected = [verify.Expected(each, mtu=mtu) for each in (name, *(v.name for v in lowered))]
    return _finish(context, plan, touched, changes, [name], options, expected)


def _stacked_above(interfaces: tuple[Interface, ...], name: str, mtu: int) -> list[Interface]:
    """VLANs on `name` (and on those) with an MTU above `mtu`, deepest first."""
    found: list[Interface] = []
    for vlan in (i for i in interfaces if i.parent == name):
        found = _stacked_above(interfaces, vlan.name, mtu) + found
        if vlan.mtu > mtu:
            found.append(vlan)
    return found


def plan_delete(context: Context, name: str, options: Options = Options()) -> Plan:
    _need_live(context, options)
    validate.interface_name(name)
    plan = Plan(f"delete {name}")
    if options.config_only and name not in context.links:
        if name not in context.persisted().configs:
            raise ValidationError(f"no bond, VLAN or bridge named {name!r} in the config")
        return _finish(context, plan, [name], [Remove(name)], [name], options)
    link = context.find(name)
    interfaces = context.snapshot.interfaces
    if link.kind not in KINDS_ZSN_MANAGES:
        raise ValidationError(f"{name} is a {link.kind}: zsn deletes only bonds, VLANs and "
                              "bridges")
    on_top = [i.name for i in interfaces if i.parent == name]
    if on_top:
        raise ValidationError(f"{name} has VLAN {', '.join(on_top)} on it: delete "
                              f"{'it' if len(on_top) == 1 else 'them'} first")
    before = config_of(link, interfaces)
    members = [i for i in interfaces if i.master == name]
    touched = [name, *(m.name for m in members)]
    if link.addresses:
        routable = [a for a in link.addresses if not a.startswith("fe80:")]
        if routable:
            plan.warnings.append(f"its addresses go with it: {', '.join(routable)}")
    if not options.config_only:
        if link.master is not None:
            plan.steps.append(_remove_port(name, link.master) if link.master_kind == "bridge"
                              else _release_bond(name, link.master, link.admin_up))
        for member in members:
            plan.steps.append(_release_bond(member.name, name, member.admin_up)
                              if link.kind == "bond" else _remove_port(member.name, name))
        plan.steps.append(LiveStep(f"delete {link.kind} {name}",
                                   lambda: netlink.delete_link(name),
                                   _recreate(before, link), COVERED))
    return _finish(context, plan, touched, [Remove(name, before)], [name], options,
                   [verify.Expected(name, exists=False),
                    *(verify.Expected(member.name, master=None) for member in members)])


def _recreate(config: LinkConfig, link: Interface) -> Callable[[], None]:
    """Undo of a deletion: the same link with its settings, addresses and state (its
    members come back through their own steps' undos)."""
    def run() -> None:
        create(replace(config, members=()))
        for address in link.addresses:
            if not address.startswith("fe80:"):
                netlink.add_address(link.name, address)
        if link.admin_up:
            netlink.set_link(link.name, state="up")

    return run



def plan_save(context: Context, name: str) -> Plan:
    """Write the live link `name` (a bond, VLAN or bridge) into the persistent config,
    as it runs now: what the LINK007 "exists live only" advice asks for."""
    validate.interface_name(name)
    if not context.snapshot.live:
        raise ValidationError(f"{context.host.root} is not this machine's root: there is no "
                              "live link to save")
    link = context.find(name)
    if link.kind not in KINDS_ZSN_MANAGES:
        raise ValidationError(f"{name} is a {link.kind}: zsn persists bonds, VLANs and bridges")
    config = config_of(link, context.snapshot.interfaces)
    plan = Plan(f"save {name} to the persistent config ({config.describe()})")
    return _finish(context, plan, [], [Upsert(config, before=config)],
                   [name, *config.members, *([config.parent] if config.parent else [])],
                   Options(persist=True))


# -- requests: what the pane's forms and the CLI's options ask for ------------------------


class CreateBond(NamedTuple):
    name: str
    mode: str
    members: tuple[str, ...]
    miimon: int | None = None
    xmit_hash_policy: str | None = None
    lacp_rate: str | None = None
    mtu: int | None = None


class CreateVlan(NamedTuple):
    name: str
    parent: str
    vlan_id: int
    mtu: int | None = None


class CreateBridge(NamedTuple):
    name: str
    ports: tuple[str, ...] = ()
    stp: bool = False
    mtu: int | None = None


class SetMtu(NamedTuple):
    name: str
    mtu: int


class AddMember(NamedTuple):
    master: str
    member: str


class RemoveMember(NamedTuple):
    master: str
    member: str


class DeleteLink(NamedTuple):
    name: str


class SaveLink(NamedTuple):
    name: str


LinkRequest = (CreateBond | CreateVlan | CreateBridge | SetMtu | AddMember | RemoveMember
               | DeleteLink | SaveLink)

ACTIONS = ("bond", "vlan", "bridge", "set", "add-member", "remove-member", "delete",
           "persist")
"""What `request_from_fields` reads: a kind to create, or the CLI's verb."""


def _number(fields: Mapping[str, str], key: str) -> int | None:
    with about_input(key):
        return validate.whole_number(fields.get(key, ""))


def _needed(fields: Mapping[str, str], key: str, reason: str) -> int:
    value = _number(fields, key)
    if value is None:
        raise ValidationError(reason, field=key)
    return value


def _names(fields: Mapping[str, str], key: str) -> tuple[str, ...]:
    text = fields.get(key, "")
    return tuple(validate.name_list(text, key)) if text else ()


def _yes(fields: Mapping[str, str], key: str) -> bool:
    answer = fields.get(key, "").lower()
    if answer not in ("", "yes", "no", "on", "off"):
        raise ValidationError(f"{fields[key]!r}: say yes or no", field=key)
    return answer in ("yes", "on")


def request_from_fields(action: str, fields: Mapping[str, str]) -> LinkRequest:
    """The request for `action` (one of `ACTIONS`) from text as typed: a form's fields
    or the CLI's options, keyed alike (the CLI option's ``dest`` is the form field's
    key). Empty is "not given"; a refusal names its field."""
    text = {key: value for key, value in fields.items() if value}
    name = text.get("name", "")
    if action == "bond":
        return CreateBond(name, text.get("mode", "balance-rr"), _names(text, "members"),
                          _number(text, "miimon"), text.get("xmit_hash_policy"),
                          text.get("lacp_rate"), _number(text, "mtu"))
    if action == "vlan":
        vlan_id = _needed(text, "vlan_id", "a VLAN needs an id (1-4094)")
        parent = text.get("parent", "")
        return CreateVlan(name or f"{parent}.{vlan_id}", parent, vlan_id, _number(text, "mtu"))
    if action == "bridge":
        return CreateBridge(name, _names(text, "ports"), _yes(text, "stp"),
                            _number(text, "mtu"))
    if action == "set":
        return SetMtu(name, _needed(text, "mtu", "type the new MTU"))
    if action in ("add-member", "remove-member"):
        kind = AddMember if action == "add-member" else RemoveMember
        return kind(text.get("master", ""), text.get("member", ""))
    if action == "delete":
        return DeleteLink(name)
    if action == "persist":
        return SaveLink(name)
    raise ValueError(f"no link action {action!r}")


def plan(context: Context, request: LinkRequest, options: Options = Options()) -> Plan:
    """The plan for `request`, checked against `context`."""
    match request:
        case CreateBond():
            return plan_create_bond(
                context, request.name, request.mode, list(request.members),
                miimon=request.miimon, xmit_hash_policy=request.xmit_hash_policy,
                lacp_rate=request.lacp_rate, mtu=request.mtu, options=options)
        case CreateVlan():
            return plan_create_vlan(context, request.name, request.parent, request.vlan_id,
                                    mtu=request.mtu, options=options)
        case CreateBridge():
            return plan_create_bridge(context, request.name, list(request.ports),
                                      stp=request.stp, mtu=request.mtu, options=options)
        case SetMtu():
            return plan_set_mtu(context, request.name, request.mtu, options)
        case AddMember():
            return plan_add_member(context, request.master, request.member, options)
        case RemoveMember():
            return plan_remove_member(context, request.master, request.member, options)
        case DeleteLink():
            return plan_delete(context, request.name, options)
        case SaveLink():
            return plan_save(context, request.name)
