"""Verify after apply, for links: read the links again and compare them with what
the plan meant (a bond's mode and members, every member's MTU, a VLAN's parent, id
and state, a port's bridge, a link gone). The kernel accepts some settings and then
does otherwise (a member whose driver refuses the bond's MTU, a VLAN left down under
a parent without carrier): this is where the user hears of it."""

from __future__ import annotations

from dataclasses import dataclass

from zsn.links.live import read_links
from zsn.links.model import Interface
from zsn.plan import Check
from zsn.system.host import Host


@dataclass(frozen=True)
class Expected:
    """What one link must be after the change; ``None`` fields are not the change's."""

    name: str
    exists: bool = True
    kind: str | None = None
    master: str | None | bool = False
    """The master's name, None for none, False when the change does not set it."""
    mtu: int | None = None
    up: bool | None = None
    mode: str | None = None
    members: frozenset[str] | None = None
    """Members (bond) or ports (bridge) it must have at least."""
    parent: str | None = None
    vlan_id: int | None = None


def differences(expected: Expected, links: dict[str, Interface]) -> list[str]:
    link = links.get(expected.name)
    name = expected.name
    if not expected.exists:
        return [f"{name} still exists"] if link is not None else []
    if link is None:
        return [f"{name} does not exist"]
    found = []
    if expected.kind is not None and link.kind != expected.kind:
        found.append(f"{name} is a {link.kind}, not a {expected.kind}")
    if expected.master is not False and link.master != expected.master:
        found.append(f"{name}'s master is {link.master or 'none'}, not "
                     f"{expected.master or 'none'}")
    if expected.mtu is not None and link.mtu != expected.mtu:
        found.append(f"{name} has MTU {link.mtu}, not {expected.mtu}")
    if expected.up is not None and link.admin_up != expected.up:
        found.append(f"{name} is {'up' if link.admin_up else 'down'}, not "
                     f"{'up' if expected.up else 'down'}")
    if expected.up and link.admin_up and link.operstate == "down" and link.carrier:
        # Without carrier (no cable, a partner that is down) it is the wire's state,
        # not the change's: only a link that has carrier and stays down differs.
        found.append(f"{name} is up and has carrier, but its state is down")
    if expected.mode is not None and link.bond is not None and link.bond.mode != expected.mode:
        found.append(f"{name}'s mode is {link.bond.mode}, not {expected.mode}")
    members = {other.name: other for other in links.values() if other.master == name}
    if expected.members is not None:
        missing = sorted(expected.members - set(members))
        if missing:
            found.append(f"{name} lacks {'ports' if link.kind == 'bridge' else 'members'} "
                         f"{', '.join(missing)}")
    if link.kind == "bond":
        for member in members.values():
            if member.mtu != link.mtu:
                found.append(f"member {member.name} has MTU {member.mtu}, {name} {link.mtu}")
    if expected.parent is not None and link.parent != expected.parent:
        found.append(f"{name} sits on {link.parent or 'nothing'}, not {expected.parent}")
    if expected.vlan_id is not None and link.vlan_id != expected.vlan_id:
        found.append(f"{name} has VLAN id {link.vlan_id}, not {expected.vlan_id}")
    return found


def check(host: Host, expected: list[Expected]) -> Check:
    """The plan's check: links as `expected`, read afresh."""

    def read_back() -> list[str]:
        snapshot, _details = read_links(host)
        links = snapshot.by_name()
        return [found for each in expected for found in differences(each, links)]

    names = ", ".join(each.name for each in expected)
    return Check(f"links {names}", read_back)
