"""Interfaces from the captured dump: names for indexes, the tree, the stack below."""

from __future__ import annotations

from tests.unit.links.conftest import captured_interfaces
from zsn.links.model import lower_stack, tree


def test_interfaces_carry_bond_member_vlan_and_port_state() -> None:
    links = {i.name: i for i in captured_interfaces()}
    assert links["ad0"].bond is not None and links["ad0"].bond.mode == "802.3ad"
    assert links["ad0"].bond.has_partner is True
    assert links["adnp"].bond.has_partner is False  # type: ignore[union-attr]
    assert links["rr0"].bond.has_partner is None  # type: ignore[union-attr]
    assert links["ab0"].bond.active_member == "eth6x"  # type: ignore[union-attr]
    assert links["eth7x"].member.state == "backup"  # type: ignore[union-attr]
    assert (links["rr0.10"].parent, links["rr0.10"].vlan_id) == ("rr0", 10)
    assert links["rr0.10"].addresses[0] == "10.0.10.1/24"
    assert links["eth1x"].peer_elsewhere and links["eth1x"].peer is None
    assert links["vethbr"].peer == "vethbr-p" and links["vethbr"].port_state == "listening"
    assert links["br0"].stp is True and links["br0"].state_text == "no-carrier"
    assert links["lo"].kind == "loopback" and links["dum0"].kind == "dummy"


def test_member_down_capture() -> None:
    links = {i.name: i for i in captured_interfaces(".member-down")}
    assert links["eth2x"].member.mii_status == "down"  # type: ignore[union-attr]
    assert links["eth2x"].state_text == "down"
    assert links["ab0"].bond.active_member == "eth7x"  # type: ignore[union-attr]


def test_tree_hangs_members_ports_vlans_and_peers_under_their_link() -> None:
    lines = [row.prefix + row.interface.name + (f" ({row.relation})" if row.relation else "")
             for row in tree(captured_interfaces())]
    assert lines == [
        "lo",
        "rr0", "├ eth1x (member)", "├ eth2x (member)", "└ rr0.10 (vlan)",
        "ad0", "├ eth3x (member)", "└ eth4x (member)",
        "adnp", "└ eth5x (member)",
        "ab0", "├ eth6x (member)", "└ eth7x (member)",
        "br0", "├ vethbr (port)", "│ └ vethbr-p (peer)", "└ dum1 (port)",
        "dum0",
    ]


def test_every_interface_appears_once_even_with_a_veth_loop() -> None:
    interfaces = captured_interfaces()
    rows = tree(interfaces)
    assert sorted(r.interface.name for r in rows) == sorted(i.name for i in interfaces)


def test_lower_stack_of_a_vlan_reaches_the_bond_members() -> None:
    interfaces = captured_interfaces()
    assert lower_stack(interfaces, {"rr0.10"}) == {"rr0.10", "rr0", "eth1x", "eth2x"}
    assert lower_stack(interfaces, {"br0"}) == {"br0", "vethbr", "dum1"}
