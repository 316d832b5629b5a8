"""The links a change touches, recorded before it, and put back as they were.

A tried link change (``zsn link ... --try``) is undone from its record, maybe by a
guardian after zsn was killed half-way, so the undo is the state each link had, not
the reverse of each step: which links existed (and how to make one again: kind, bond
mode, VLAN parent and id, STP), each one's master, MTU, up/down and addresses, and
the routes out through them (a link that goes down or away takes its routes along;
the kernel never brings back a gateway route by itself). `RESTORER` compares the
record with the live links and does only what differs, in an order the kernel
accepts: links the change made go first (upper ones first), links it removed come
back (lower ones first), then masters, MTUs (lowered from the top, raised from the
bottom), up/down, addresses, routes. What it cannot put back is reported with the
``ip`` commands that would.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, replace
from functools import partial

from zsn.errors import ZsnError
from zsn.links import bonding
from zsn.links.live import read_links
from zsn.links.model import KINDS_ZSN_MANAGES, Interface
from zsn.links.persist import LinkConfig, config_of
from zsn.system import netlink
from zsn.system.host import Host
from zsn.tries import params as checked
from zsn.tries.restores import RouteData, restore_routes
from zsn.tries.undo import Outcome, Undo


@dataclass(frozen=True)
class LinkRecipe:
    """How to make a bond, VLAN or bridge again (`LinkConfig` without its members and
    source), as a record keeps it: checked values only."""

    name: str
    kind: str
    parent: str | None = None
    vlan_id: int | None = None
    mtu: int | None = None
    mode: str | None = None
    miimon: int | None = None
    xmit_hash_policy: str | None = None
    lacp_rate: str | None = None
    stp: bool | None = None

    def __post_init__(self) -> None:
        checked.interface(self.name)
        checked.choice(self.kind, KINDS_ZSN_MANAGES, "kind")
        if self.parent is not None:
            checked.interface(self.parent, "parent")
        if self.vlan_id is not None:
            checked.whole(self.vlan_id, 1, 4094, "VLAN id")
        if self.mtu is not None:
            checked.whole(self.mtu, 68, 65535, "MTU")
        if self.mode is not None:
            checked.choice(self.mode, bonding.MODES, "bond mode")
        if self.miimon is not None:
            checked.whole(self.miimon, 0, 2**31 - 1, "miimon")
        if self.xmit_hash_policy is not None:
            checked.choice(self.xmit_hash_policy, bonding.XMIT_HASH_POLICIES,
                           "xmit_hash_policy")
        if self.lacp_rate is not None:
            checked.choice(self.lacp_rate, bonding.LACP_RATES, "lacp_rate")

    @classmethod
    def of(cls, config: LinkConfig) -> LinkRecipe:
        return cls(config.name, config.kind, config.parent, config.vlan_id, config.mtu,
                   config.mode, config.miimon, config.xmit_hash_policy, config.lacp_rate,
                   config.stp)

    def config(self) -> LinkConfig:
        return LinkConfig(self.name, self.kind, (), self.parent, self.vlan_id, self.mtu,
                          self.mode, self.miimon, self.xmit_hash_policy, self.lacp_rate,
                          self.stp)


@dataclass(frozen=True)
class LinkState:
    """One link as a rollback must leave it."""

    name: str
    exists: bool
    kind: str = ""
    config: LinkRecipe | None = None
    """How to make it again (a bond, VLAN or bridge); None for links zsn cannot make."""
    master: str | None = None
    mtu: int | None = None
    up: bool | None = None
    addresses: tuple[str, ...] = ()
    """Its addresses except link-local ones (those come back with the link)."""

    def __post_init__(self) -> None:
        checked.interface(self.name)
        checked.one_line(self.kind, "kind", 32)
        if self.master is not None:
            checked.interface(self.master, "master")
        if self.mtu is not None:
            checked.whole(self.mtu, 0, 2**31 - 1, "MTU")
        for address in self.addresses:
            checked.interface_address(address)
        if self.config is not None and self.config.name != self.name:
            raise ValueError(f"the recipe of {self.name} makes {self.config.name}")


@dataclass(frozen=True)
class LinksUndo:
    links: tuple[LinkState, ...]
    routes: tuple[RouteData, ...] = ()


def _routable(addresses: Iterable[str]) -> tuple[str, ...]:
    return tuple(address for address in addresses if not address.startswith("fe80:"))


def state_of(interface: Interface, interfaces: tuple[Interface, ...]) -> LinkState:
    config = None
    if interface.kind in KINDS_ZSN_MANAGES:
        config = LinkRecipe.of(replace(config_of(interface, interfaces), members=()))
    return LinkState(interface.name, True, interface.kind, config, interface.master,
                     interface.mtu, interface.admin_up, _routable(interface.addresses))


def capture(interfaces: tuple[Interface, ...], names: Iterable[str]) -> Undo:
    """The undo of a change to `names`: each as it is now (absent ones: to be removed
    again if the change makes them), with the routes out through them."""
    by_name = {interface.name: interface for interface in interfaces}
    wanted = sorted(set(names))
    states = [state_of(by_name[name], interfaces) if name in by_name
              else LinkState(name, False) for name in wanted]
    present = {name for name in wanted if name in by_name}
    routes = netlink.read_routes(present) if present else []
    return Undo("links", LinksUndo(tuple(states),
                                   tuple(RouteData.of(route) for route in routes)))


# -- making links (the plans' steps and the restorer's) ---------------------------------


def bond_attributes(config: LinkConfig) -> dict[str, int]:
    attributes = {"bond_mode": bonding.MODES[config.mode or "balance-rr"],
                  "bond_miimon": config.miimon if config.miimon is not None
                  else bonding.DEFAULT_MIIMON}
    if config.xmit_hash_policy:
        attributes["bond_xmit_hash_policy"] = bonding.XMIT_HASH_POLICIES[config.xmit_hash_policy]
    if config.lacp_rate:
        attributes["bond_ad_lacp_rate"] = bonding.LACP_RATES[config.lacp_rate]
    return attributes


def create(config: LinkConfig) -> None:
    """Make the link `config` describes (not its members)."""
    extra: dict[str, object] = {"mtu": config.mtu} if config.mtu is not None else {}
    if config.kind == "bond":
        netlink.create_link(config.name, "bond", **bond_attributes(config), **extra)
    elif config.kind == "vlan":
        netlink.create_link(config.name, "vlan", link=config.parent,
                            vlan_id=config.vlan_id, **extra)
    else:
        netlink.create_link(config.name, "bridge", br_stp_state=int(bool(config.stp)),
                            **extra)


def describe_create(config: LinkConfig) -> str:
    if config.kind == "bond":
        mode, *rest = config.bond_settings()
        settings = [mode[1], *(f"{name} {value}" for name, value in rest)]
    elif config.kind == "vlan":
        settings = [f"on {config.parent}", f"id {config.vlan_id}"]
    else:
        settings = [f"stp {'on' if config.stp else 'off'}"]
    if config.mtu is not None:
        settings.append(f"mtu {config.mtu}")
    return f"create {config.kind} {config.name} ({', '.join(settings)})"


def create_command(config: LinkConfig) -> str:
    """The ``ip link add`` that makes `config`'s link."""
    mtu = f" mtu {config.mtu}" if config.mtu is not None else ""
    if config.kind == "bond":
        words = " ".join(f"{name} {value}" for name, value in config.bond_settings())
        return f"ip link add {config.name}{mtu} type bond {words}"
    if config.kind == "vlan":
        return (f"ip link add link {config.parent} name {config.name}{mtu} type vlan "
                f"id {config.vlan_id}")
    return f"ip link add {config.name}{mtu} type bridge stp_state {int(bool(config.stp))}"


# -- putting them back ------------------------------------------------------------------


def _depth(name: str, parents: Mapping[str, str | None]) -> int:
    depth, seen = 0, {name}
    while parents.get(name):
        name = str(parents[name])
        if name in seen:
            break
        seen.add(name)
        depth += 1
    return depth


def _aspect(name: str, what: str) -> str:
    return f"link {name} {what}"


class _Restore:
    def __init__(self, host: Host, wanted: list[LinkState], leave: frozenset[str]):
        self.host = host
        self.leave = leave
        self.wanted = [state for state in wanted
                       if _aspect(state.name, "exists") not in leave]
        self.outcome = Outcome()
        self.now: dict[str, Interface] = {}
        self.read()

    def read(self) -> None:
        snapshot, _details = read_links(self.host)
        self.now = snapshot.by_name()

    def kept(self, name: str, what: str) -> bool:
        """Whether the aspect changed since the try: left as it is."""
        return _aspect(name, what) in self.leave

    def step(self, what: str, command: str, action: Callable[[], object]) -> None:
        try:
            action()
        except ZsnError as exc:
            self.outcome.left.append(f"{what}: {exc}")
            self.outcome.commands.append(command)
            return
        self.outcome.done.append(what)

    def parents(self) -> dict[str, str | None]:
        found: dict[str, str | None] = {name: link.parent for name, link in self.now.items()}
        for state in self.wanted:
            if state.config is not None and state.config.parent:
                found[state.name] = state.config.parent
        return found

    def run(self) -> Outcome:
        parents = self.parents()
        made = [s for s in self.wanted if not s.exists and s.name in self.now]
        for state in sorted(made, key=lambda s: -_depth(s.name, parents)):
            self.step(f"deleted {state.name} (the change made it)", f"ip link del {state.name}",
                      partial(netlink.delete_link, state.name))
        gone = [s for s in self.wanted if s.exists and s.name not in self.now]
        for state in sorted(gone, key=lambda s: _depth(s.name, parents)):
            recipe = state.config
            if recipe is None:
                self.outcome.left.append(f"{state.name} ({state.kind}) is gone and zsn "
                                         "cannot make one again")
                continue
            config = recipe.config()
            self.step(f"made {state.name} again ({describe_create(config)[7:]})",
                      create_command(config), partial(create, config))
        self.read()
        self.masters()
        self.read()
        self.mtus(parents)
        self.read()
        self.states_and_addresses()
        return self.outcome

    def present(self) -> list[LinkState]:
        return [s for s in self.wanted if s.exists and s.name in self.now]

    def masters(self) -> None:
        for state in self.present():
            current = self.now[state.name].master
            if current == state.master or self.kept(state.name, "master"):
                continue
            name = state.name
            if state.master is None:
                self.step(f"{name} out of {current}", f"ip link set {name} nomaster",
                          partial(netlink.set_link, name, master=None))
                continue
            master = state.master
            into_bond = self.now.get(master) is not None and self.now[master].kind == "bond"

            def enslave(name: str = name, master: str = master, bond: bool = into_bond) -> None:
                if bond:  # the kernel enslaves only a link that is down (EPERM)
                    netlink.set_link(name, state="down")
                netlink.set_link(name, master=master)

            self.step(f"{name} back in {master}", f"ip link set {name} master {master}",
                      enslave)

    def mtus(self, parents: Mapping[str, str | None]) -> None:
        """A VLAN's MTU may not exceed its parent's: lower from the top down, raise from
        the bottom up. A bond's members follow the bond."""
        bonds = {name for name, link in self.now.items() if link.kind == "bond"}
        changes = [s for s in self.present() if s.mtu is not None
                   and s.mtu != self.now[s.name].mtu and s.master not in bonds
                   and not self.kept(s.name, "mtu")]
        lower = sorted((s for s in changes if s.mtu is not None
                        and s.mtu < self.now[s.name].mtu),
                       key=lambda s: -_depth(s.name, parents))
        higher = sorted((s for s in changes if s not in lower),
                        key=lambda s: _depth(s.name, parents))
        for state in [*lower, *higher]:
            name, mtu = state.name, state.mtu
            self.step(f"{name} MTU {self.now[name].mtu} -> {mtu}",
                      f"ip link set {name} mtu {mtu}",
                      partial(netlink.set_link, name, mtu=mtu))

    def states_and_addresses(self) -> None:
        for state in self.present():
            link = self.now[state.name]
            name = state.name
            if state.up is not None and link.admin_up != state.up \
                    and not self.kept(name, "up"):
                word = "up" if state.up else "down"
                self.step(f"{name} {word}", f"ip link set {name} {word}",
                          partial(netlink.set_link, name, state=word))
            for address in state.addresses:
                if address not in link.addresses and not self.kept(name, f"address {address}"):
                    self.step(f"{address} on {name}", f"ip addr add {address} dev {name}",
                              partial(netlink.add_address, name, address))

    def differences(self) -> list[str]:
        """What still differs once everything was tried (read afresh), but for what
        was left alone on purpose (changed since the try)."""
        self.read()
        found = []
        for state in self.wanted:
            link = self.now.get(state.name)
            if not state.exists:
                if link is not None:
                    found.append(f"{state.name} still exists")
                continue
            if link is None:
                found.append(f"{state.name} is missing")
                continue
            if link.master != state.master and not self.kept(state.name, "master"):
                found.append(f"{state.name} has master {link.master or 'none'}, not "
                             f"{state.master or 'none'}")
            if state.mtu is not None and link.mtu != state.mtu \
                    and not self.kept(state.name, "mtu"):
                found.append(f"{state.name} has MTU {link.mtu}, not {state.mtu}")
            if state.up is not None and link.admin_up != state.up \
                    and not self.kept(state.name, "up"):
                found.append(f"{state.name} is {'up' if link.admin_up else 'down'}")
            missing = [a for a in state.addresses if a not in link.addresses
                       and not self.kept(state.name, f"address {a}")]
            if missing:
                found.append(f"{state.name} lacks {', '.join(missing)}")
        return found


def observe_links(host: Host, states: Iterable[LinkState]) -> dict[str, object]:
    """Each aspect of `states` a rollback restores, as the links are now."""
    snapshot, _details = read_links(host)
    now = snapshot.by_name()
    found: dict[str, object] = {}
    for state in states:
        link = now.get(state.name)
        found[_aspect(state.name, "exists")] = link is not None
        if link is not None and state.exists:
            found.update(_aspects(state, link.master, link.mtu, link.admin_up,
                                  set(link.addresses)))
    return found


def _aspects(state: LinkState, master: str | None, mtu: int | None, up: bool | None,
             addresses: set[str]) -> dict[str, object]:
    """The aspects of an existing link a rollback restores (`state` says which), with
    the values given."""
    found: dict[str, object] = {_aspect(state.name, "master"): master}
    if state.mtu is not None:
        found[_aspect(state.name, "mtu")] = mtu
    if state.up is not None:
        found[_aspect(state.name, "up")] = up
    for address in state.addresses:
        found[_aspect(state.name, f"address {address}")] = address in addresses
    return found


class LinksRestorer:
    params = LinksUndo

    def describe(self, params: LinksUndo) -> str:
        made = [s.name for s in params.links if not s.exists]
        kept = [s.name for s in params.links if s.exists]
        parts = []
        if kept:
            parts.append(f"{', '.join(kept)} as they were (master, MTU, up/down, addresses)")
        if made:
            parts.append(f"remove {', '.join(made)}")
        routes = len(params.routes)
        if routes:
            parts.append(f"their {routes} route{'s' if routes != 1 else ''}")
        return "links: " + "; ".join(parts)

    def objects(self, params: LinksUndo) -> tuple[str, ...]:
        return tuple(f"link {state.name}" for state in params.links)

    def observe(self, host: Host, params: LinksUndo) -> dict[str, object]:
        return observe_links(host, params.links)

    def wanted(self, params: LinksUndo) -> dict[str, object]:
        found: dict[str, object] = {}
        for state in params.links:
            found[_aspect(state.name, "exists")] = state.exists
            if state.exists:
                found.update(_aspects(state, state.master, state.mtu, state.up,
                                      set(state.addresses)))
        return found

    def restore(self, host: Host, params: LinksUndo, leave: frozenset[str],
                force: bool) -> Outcome:
        run = _Restore(host, list(params.links), leave)
        outcome = run.run()
        outcome.extend(restore_routes([item.route() for item in params.routes]))
        reported = " ".join(outcome.left)
        outcome.left.extend(difference for difference in run.differences()
                            if difference.split(" ", 1)[0] not in reported)
        return outcome

    def commands(self, host: Host, params: LinksUndo) -> list[str]:
        found = [f"ip link del {s.name}" for s in params.links if not s.exists]
        for state in params.links:
            if not state.exists:
                continue
            if state.config is not None:
                found.append(f"{create_command(state.config.config())}  "
                             f"# if {state.name} is missing")
            found.append(f"ip link set {state.name} "
                         + (f"master {state.master}" if state.master else "nomaster"))
            if state.mtu is not None:
                found.append(f"ip link set {state.name} mtu {state.mtu}")
            if state.up is not None:
                found.append(f"ip link set {state.name} {'up' if state.up else 'down'}")
            found.extend(f"ip addr add {a} dev {state.name}" for a in state.addresses)
        found.extend(item.route().command() for item in params.routes)
        return found


RESTORER = LinksRestorer()
