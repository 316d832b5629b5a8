"""The links' section of the desired-state file, planned (`zsn.links.desired` declares
it): the live links read into the section (`describe`), and the plans `zsn link ...`
makes that make them as a section says (`plans`; see `zsn.links.desired`)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import replace
from typing import Any

from zsn.errors import ValidationError
from zsn.links import actions, bonding
from zsn.links.desired_spec import BondSpec, BridgeSpec, LinksSection, VlanSpec
from zsn.links.model import KINDS_ZSN_MANAGES, Interface, LinksSnapshot
from zsn.links.persist import config_of
from zsn.plan import Plan
from zsn.system.host import Host
from zsn.wording import Phrase

# -- the machine as it is ----------------------------------------------------------

OTHER_KINDS = ("device", "veth")
"""Links whose MTU the section carries (a bond member's follows its bond)."""


def describe(host: Host) -> tuple[dict[str, Any], list[str]]:
    """The section as the live links are (`zsn.links.desired.describe`)."""
    if not host.is_live:
        return {}, []
    context = actions.Context.read(host)
    interfaces = context.snapshot.interfaces
    found: dict[str, Any] = {"bonds": [], "vlans": [], "bridges": [], "mtu": {}}
    for interface in interfaces:
        if interface.kind in KINDS_ZSN_MANAGES:
            config = config_of(interface, interfaces)
            if interface.kind == "bond":
                bond = {"name": config.name, "mode": config.mode, "members": list(config.members),
                        "miimon": config.miimon}
                bond |= {key: value for key, value in (
                    ("xmit_hash_policy", config.xmit_hash_policy),
                    ("lacp_rate", config.lacp_rate)) if value is not None}
                found["bonds"].append(bond | {"mtu": config.mtu})
            elif interface.kind == "vlan":
                found["vlans"].append({"name": config.name, "parent": config.parent,
                                       "id": config.vlan_id, "mtu": config.mtu})
            else:
                found["bridges"].append({"name": config.name, "ports": list(config.members),
                                         "stp": bool(config.stp), "mtu": config.mtu})
        elif interface.kind in OTHER_KINDS and interface.master_kind != "bond":
            found["mtu"][interface.name] = interface.mtu
    return found, list(context.snapshot.errors)


# -- plans ---------------------------------------------------------------------------


class _Links:
    """The live links as the plans so far leave them: each plan is checked against it,
    as the command would be against the links it finds."""

    def __init__(self, host: Host, options: actions.Options) -> None:
        self.context = actions.Context.read(host)
        self.options = options

    def get(self, name: str) -> Interface | None:
        return self.context.links.get(name)

    def plan(self, request: actions.LinkRequest,
             change: Callable[[dict[str, Interface]], None]) -> Plan:
        """`request` planned against the links now, then `change` made to this view."""
        plan = actions.plan(self.context, request, self.options)
        plan.notes = [_in_file_words(note) for note in plan.notes]
        links = dict(self.context.links)
        change(links)
        old = self.context.snapshot
        self.context = replace(self.context, snapshot=LinksSnapshot(
            tuple(links.values()), old.taken_at, old.errors, live=old.live))
        return plan


def _in_file_words(note: str) -> str:
    """A command's note as the file says it: ``persist: true``, not ``--persist``."""
    if not isinstance(note, Phrase):
        return note
    return note.worded(lambda action: "persist: true in the section"
                       if action.name == actions.PERSIST_KEY else action.command)


def _new_link(name: str, kind: str, mtu: int | None) -> Interface:
    return Interface(index=0, name=name, kind=kind, admin_up=True, operstate="up",
                     carrier=None, mtu=mtu or 1500, min_mtu=None, max_mtu=None, mac=None)


def _set(name: str, **changes: Any) -> Callable[[dict[str, Interface]], None]:
    def change(links: dict[str, Interface]) -> None:
        if name in links:
            links[name] = replace(links[name], **changes)
    return change


def _created(name: str, kind: str, mtu: int | None, members: list[str]
             ) -> Callable[[dict[str, Interface]], None]:
    def change(links: dict[str, Interface]) -> None:
        links[name] = _new_link(name, kind, mtu)
        for member in members:
            _set(member, master=name, master_kind=kind)(links)
    return change


def _deleted(name: str) -> Callable[[dict[str, Interface]], None]:
    def change(links: dict[str, Interface]) -> None:
        links.pop(name, None)
        for other in list(links.values()):
            if other.master == name:
                links[other.name] = replace(other, master=None, master_kind=None)
    return change


def plans(host: Host, section: LinksSection) -> Iterator[Plan]:
    if not host.is_live:
        raise ValidationError(f"{host.root} is not this machine's root: the links section "
                              "is made live (edit a tree's config with zsn link "
                              "--config-only)")
    links = _Links(host, actions.Options(persist=section.persist, guard_session=False))
    named = set(section.names())
    if section.exclusive:
        yield from _delete_others(links, named)
    for bond in section.bonds:
        yield from _bond(links, bond)
    for bridge in section.bridges:
        yield from _bridge(links, bridge)
    for vlan in section.vlans:
        yield from _vlan(links, vlan)
    for name, mtu in section.mtu.items():
        link = links.get(name)
        if link is None:
            raise ValidationError(f"no link named {name!r} here (its MTU is given)")
        if link.mtu != mtu:
            yield links.plan(actions.SetMtu(name, mtu), _set(name, mtu=mtu))
    if section.persist:
        for name in sorted(named):
            yield links.plan(actions.SaveLink(name), lambda _links: None)


def _delete_others(links: _Links, named: set[str]) -> Iterator[Plan]:
    doomed = [link for link in links.context.snapshot.interfaces
              if link.kind in KINDS_ZSN_MANAGES and link.name not in named]
    # VLANs first: a bond or bridge with a VLAN on it is not deleted
    for link in sorted(doomed, key=lambda each: each.kind != "vlan"):
        yield links.plan(actions.DeleteLink(link.name), _deleted(link.name))


def _same_kind(link: Interface, kind: str) -> None:
    if link.kind != kind:
        raise ValidationError(f"{link.name} is a {link.kind} here, not a {kind}: delete it "
                              "first, or name it in its own kind")


def _members(links: _Links, name: str, have: tuple[str, ...], wanted: list[str]
             ) -> Iterator[Plan]:
    for member in have:
        if member not in wanted:
            yield links.plan(actions.RemoveMember(name, member),
                             _set(member, master=None, master_kind=None))
    kind = links.get(name)
    for member in wanted:
        if member not in have:
            yield links.plan(actions.AddMember(name, member),
                             _set(member, master=name,
                                  master_kind=kind.kind if kind else None))


def _mtu_plan(links: _Links, name: str, have: int, mtu: int | None) -> Iterator[Plan]:
    if mtu is not None and have != mtu:
        yield links.plan(actions.SetMtu(name, mtu), _set(name, mtu=mtu))


def _bond(links: _Links, bond: BondSpec) -> Iterator[Plan]:
    link = links.get(bond.name)
    if link is None:
        yield links.plan(actions.CreateBond(bond.name, bond.mode, tuple(bond.members),
                                            bond.miimon, bond.xmit_hash_policy,
                                            bond.lacp_rate, bond.mtu),
                         _created(bond.name, "bond", bond.mtu, bond.members))
        return
    _same_kind(link, "bond")
    config = config_of(link, links.context.snapshot.interfaces)
    wanted = {"mode": bond.mode, "miimon": bond.miimon if bond.miimon is not None
              else bonding.DEFAULT_MIIMON, "xmit_hash_policy": bond.xmit_hash_policy,
              "lacp_rate": bond.lacp_rate}
    for key, value in wanted.items():
        have = getattr(config, key)
        if value is not None and have != value and link.bond is not None:
            raise ValidationError(f"bond {bond.name} runs with {key} {have}, not {value}: "
                                  "zsn does not change that in place (delete the bond, or "
                                  "let the section make it again: exclusive)")
    yield from _members(links, bond.name, config.members, bond.members)
    yield from _mtu_plan(links, bond.name, link.mtu, bond.mtu)


def _bridge(links: _Links, bridge: BridgeSpec) -> Iterator[Plan]:
    link = links.get(bridge.name)
    if link is None:
        yield links.plan(actions.CreateBridge(bridge.name, tuple(bridge.ports),
                                              bool(bridge.stp), bridge.mtu),
                         _created(bridge.name, "bridge", bridge.mtu, bridge.ports))
        return
    _same_kind(link, "bridge")
    if bridge.stp is not None and bool(link.stp) != bridge.stp:
        raise ValidationError(f"bridge {bridge.name} runs with spanning tree "
                              f"{'on' if link.stp else 'off'}: zsn does not change that in "
                              "place (delete the bridge to make it again)")
    have = tuple(each.name for each in links.context.snapshot.interfaces
                 if each.master == bridge.name)
    yield from _members(links, bridge.name, have, bridge.ports)
    yield from _mtu_plan(links, bridge.name, link.mtu, bridge.mtu)


def _vlan(links: _Links, vlan: VlanSpec) -> Iterator[Plan]:
    link = links.get(vlan.name)
    if link is None:
        yield links.plan(actions.CreateVlan(vlan.name, vlan.parent, vlan.id, vlan.mtu),
                         lambda known: known.__setitem__(vlan.name, replace(
                             _new_link(vlan.name, "vlan", vlan.mtu), parent=vlan.parent,
                             vlan_id=vlan.id)))
        return
    _same_kind(link, "vlan")
    if (link.parent, link.vlan_id) != (vlan.parent, vlan.id):
        raise ValidationError(f"VLAN {vlan.name} is id {link.vlan_id} on {link.parent}, not "
                              f"id {vlan.id} on {vlan.parent}: delete it to make it again")
    yield from _mtu_plan(links, vlan.name, link.mtu, vlan.mtu)
