"""The types of the links' section of the desired-state file (`zsn.links.desired`,
docs/state.md), each checked as `zsn link ...` checks the same value typed."""

from __future__ import annotations

from dataclasses import dataclass, field

from zsn.desired.spec import checked, repeated
from zsn.links import validate


def _name(name: str) -> str:
    return checked(validate.interface_name, name)


def _mtu(mtu: int | None) -> None:
    if mtu is not None:
        checked(validate.mtu, mtu)


@dataclass
class BondSpec:
    name: str
    mode: str
    members: list[str]
    miimon: int | None = None
    xmit_hash_policy: str | None = None
    lacp_rate: str | None = None
    mtu: int | None = None

    def __post_init__(self) -> None:
        _name(self.name)
        checked(validate.bond_mode, self.mode)
        for member in self.members:
            _name(member)
        if not self.members:
            raise ValueError("a bond needs at least one member")
        if self.miimon is not None:
            checked(validate.miimon, self.miimon)
        if self.xmit_hash_policy is not None:
            checked(validate.xmit_hash_policy, self.xmit_hash_policy)
        if self.lacp_rate is not None:
            checked(validate.lacp_rate, self.lacp_rate)
        _mtu(self.mtu)


@dataclass
class VlanSpec:
    name: str
    parent: str
    id: int
    mtu: int | None = None

    def __post_init__(self) -> None:
        _name(self.name)
        _name(self.parent)
        checked(validate.vlan_id, self.id)
        _mtu(self.mtu)


@dataclass
class BridgeSpec:
    name: str
    ports: list[str] = field(default_factory=list)
    stp: bool | None = None
    mtu: int | None = None

    def __post_init__(self) -> None:
        _name(self.name)
        for port in self.ports:
            _name(port)
        _mtu(self.mtu)


@dataclass
class LinksSection:
    bonds: list[BondSpec] = field(default_factory=list)
    vlans: list[VlanSpec] = field(default_factory=list)
    bridges: list[BridgeSpec] = field(default_factory=list)
    mtu: dict[str, int] = field(default_factory=dict)
    """Other links (a NIC, a veth) by name: their MTU."""
    exclusive: bool = False
    """Bonds, VLANs and bridges the section does not name are deleted."""
    persist: bool = False
    """Write the persistent config too (netplan, networkd, ifupdown, netctl)."""

    def __post_init__(self) -> None:
        names = self.names()
        twice = repeated(names)
        if twice:
            raise ValueError(f"link {twice[0]!r} given twice")
        for name, mtu in self.mtu.items():
            _name(name)
            checked(validate.mtu, mtu)
            if name in names:
                raise ValueError(f"{name}'s MTU goes with its own entry (mtu: {mtu})")

    def names(self) -> list[str]:
        """The bonds', VLANs' and bridges' names, in the section's order."""
        return [*(b.name for b in self.bonds), *(v.name for v in self.vlans),
                *(b.name for b in self.bridges)]
