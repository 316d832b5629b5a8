"""netctl profiles (Debian's shipped examples) and NetworkManager's nmcli commands."""

from __future__ import annotations

import shlex
import shutil
from pathlib import Path

import pytest

from tests.unit.links.conftest import LINK_FIXTURES
from zsn.links.persist import LinkConfig, Owner, Remove, Upsert, nmcli
from zsn.links.persist.netctl import NETCTL
from zsn.links.persist.owner import detect_owner

EXAMPLES = LINK_FIXTURES / "netctl"


def netctl_root(tmp_path: Path) -> Path:
    folder = tmp_path / "etc/netctl"
    folder.mkdir(parents=True)
    for name in ("bonding", "bridge", "vlan-static"):
        shutil.copy(EXAMPLES / name, folder / name)
    return tmp_path


def test_reads_the_example_profiles(tmp_path: Path) -> None:
    from zsn.system.host import Host

    host = Host(netctl_root(tmp_path))
    assert detect_owner(host).name == "netctl"
    configs = NETCTL.read(host).configs
    assert configs["bond0"] == LinkConfig("bond0", "bond", ("eth0", "eth2"))  # Mode commented
    assert configs["br0"] == LinkConfig("br0", "bridge", ("eth0", "eth1", "tap0"), stp=False)
    assert configs["eth0.11"] == LinkConfig("eth0.11", "vlan", parent="eth0", vlan_id=11)


def test_edits_an_example_keeping_its_comments_and_address(tmp_path: Path) -> None:
    from zsn.system.host import Host

    host = Host(netctl_root(tmp_path))
    original = (EXAMPLES / "bonding").read_text()
    plan = NETCTL.plan(host, [Upsert(LinkConfig("bond0", "bond", ("eth0", "eth2", "eth3"),
                                                mtu=9000), frozenset({"members", "mtu"}))],
                       NETCTL.read(host))
    new = plan.edits[0].new_text
    assert new.startswith(original.replace("BindsToInterfaces=(eth0 eth2)",
                                           "BindsToInterfaces=(eth0 eth2 eth3)"))
    assert 'Address="10.0.0.1/8"\n#Mode=balance-rr\n' in new
    assert new.endswith("ExecUpPost='ip link set dev bond0 type bond miimon 100; "
                        "ip link set dev bond0 mtu 9000'\n")
    for edit in plan.edits:
        edit.apply()
    assert NETCTL.read(host).configs["bond0"].mtu == 9000


def test_new_profile_and_removal(tmp_path: Path) -> None:
    from zsn.system.host import Host

    host = Host(netctl_root(tmp_path))
    plan = NETCTL.plan(host, [Upsert(LinkConfig("bond1", "bond", ("eth4", "eth5"),
                                                mode="802.3ad", lacp_rate="fast"))],
                       NETCTL.read(host))
    assert plan.edits[0].path.name == "bond1" and plan.edits[0].previous is None
    text = plan.edits[0].new_text
    assert "Connection=bond\n" in text and "BindsToInterfaces=(eth4 eth5)\n" in text
    assert "Mode=802.3ad\n" in text and "IP=no\n" in text and "lacp_rate fast" in text
    assert any("netctl enable bond1" in note for note in plan.notes)
    removal = NETCTL.plan(host, [Remove("eth0.11")], NETCTL.read(host))
    assert [(e.path.name, e.remove) for e in removal.edits] == [("vlan-static", True)]


def test_own_exec_up_post_commands_are_kept(tmp_path: Path) -> None:
    from zsn.system.host import Host

    folder = tmp_path / "etc/netctl"
    folder.mkdir(parents=True)
    (folder / "br9").write_text("Interface=br9\nConnection=bridge\nBindsToInterfaces=()\n"
                                "ExecUpPost='logger br9 up; ip link set dev br9 mtu 1400'\n")
    host = Host(tmp_path)
    plan = NETCTL.plan(host, [Upsert(LinkConfig("br9", "bridge", mtu=9000),
                                     frozenset({"mtu"}))], NETCTL.read(host))
    assert plan.edits[0].new_text.endswith(
        "ExecUpPost='logger br9 up; ip link set dev br9 type bridge stp_state 0; "
        "ip link set dev br9 mtu 9000'\n")


OWNER = Owner("networkmanager", "NetworkManager runs and manages eth1", ("eth1",))


def test_nmcli_commands_for_each_change() -> None:
    bond = LinkConfig("bond0", "bond", ("eth1", "eth2"), mtu=9000, mode="802.3ad",
                      miimon=100, lacp_rate="fast")
    plan = nmcli.plan([Upsert(bond),
                       Upsert(LinkConfig("bond0.10", "vlan", parent="bond0", vlan_id=10))],
                      OWNER)
    assert not plan.edits and "writes no config files" in plan.warnings[0]
    words = [shlex.split(command) for command in plan.commands]
    assert words[0] == ["nmcli", "connection", "add", "type", "bond", "con-name", "bond0",
                        "ifname", "bond0", "bond.options",
                        "mode=802.3ad,miimon=100,lacp_rate=fast", "ethernet.mtu", "9000",
                        "ipv4.method", "disabled", "ipv6.method", "disabled"]
    assert words[1][:9] == ["nmcli", "connection", "add", "type", "ethernet", "con-name",
                            "bond0-port-eth1", "ifname", "eth1"]
    assert words[1][9:] == ["master", "bond0", "slave-type", "bond"]
    assert "vlan.parent" in words[3] and "10" in words[3]


def test_nmcli_modify_and_delete() -> None:
    before = LinkConfig("br0", "bridge", ("eth1",), mtu=1500)
    after = LinkConfig("br0", "bridge", ("eth2",), mtu=9000)
    plan = nmcli.plan([Upsert(after, frozenset({"members", "mtu"}), before),
                       Remove("br0", after)], OWNER)
    assert plan.commands == [
        "nmcli connection modify br0 ethernet.mtu 9000",
        "nmcli connection add type ethernet con-name br0-port-eth2 ifname eth2 master br0 "
        "slave-type bridge",
        "nmcli connection delete br0-port-eth1",
        "nmcli connection delete br0-port-eth2",
        "nmcli connection delete br0",
    ]


def test_an_edit_keeps_the_lines_it_does_not_need(tmp_path: Path) -> None:
    """vlan-static says BindsToInterfaces=eth0 (a plain word): an MTU edit leaves that
    line as it is (it was rewritten as (eth0)), and every other byte too."""
    from zsn.system.host import Host

    host = Host(netctl_root(tmp_path))
    original = (EXAMPLES / "vlan-static").read_text()
    plan = NETCTL.plan(host, [Upsert(LinkConfig("eth0.11", "vlan", mtu=1400),
                                     frozenset({"mtu"}))], NETCTL.read(host))
    [edit] = plan.edits
    assert edit.new_text == original + "ExecUpPost='ip link set dev eth0.11 mtu 1400'\n"
    again = NETCTL.plan(host, [Upsert(LinkConfig("eth0.11", "vlan", parent="eth0",
                                                 vlan_id=11), frozenset({"parent", "vlan_id"}))],
                        NETCTL.read(host))
    assert again.edits == []


def test_a_profile_that_needs_bash_is_reported_not_guessed(tmp_path: Path) -> None:
    from zsn.errors import ZsnError
    from zsn.links.persist.owner import plan_persist
    from zsn.system.host import Host

    host = Host(netctl_root(tmp_path))
    bridge = host.path("/etc/netctl/bridge")
    bridge.write_text(bridge.read_text().replace("BindsToInterfaces=(eth0 eth1 tap0)",
                                                 'BindsToInterfaces=($PORTS)'))
    persisted = NETCTL.read(host)
    assert "br0" not in persisted.configs
    [unread] = persisted.unread
    assert (unread.path, unread.line, unread.kind, unread.blocking) == (
        "/etc/netctl/bridge", 4, "bash-code", True)
    with pytest.raises(ZsnError, match=r"zsn does not understand /etc/netctl/bridge:4: "):
        plan_persist(host, [Upsert(LinkConfig("bond0", "bond", mtu=9000),
                                   frozenset({"mtu"}))], ["bond0"])


ARCHWIKI = Path(__file__).parents[2] / "fixtures" / "corpus" / "netctl" / "archwiki"


def test_a_bridge_with_a_hook_is_read_and_its_hook_kept_as_written(tmp_path: Path) -> None:
    """The ArchWiki's bridge that takes eth0's MAC in ExecUpPost with $(cat ...): the
    data is read, the hook is never run nor rewritten, and only a change that needs the
    hook's value is refused, naming its line."""
    from zsn.errors import ValidationError
    from zsn.links.persist.owner import plan_persist
    from zsn.system.host import Host

    folder = tmp_path / "etc/netctl"
    folder.mkdir(parents=True)
    shutil.copy(ARCHWIKI / "bridge-mac-of-eth0", folder / "bridge")
    host = Host(tmp_path)
    persisted = NETCTL.read(host)
    assert persisted.configs["br0"] == LinkConfig("br0", "bridge", ("eth0", "tap0"), stp=False)
    [unread] = persisted.unread
    assert (unread.line, unread.kind, unread.blocking, unread.names) == (6, "hook", False,
                                                                         ("br0",))
    with pytest.raises(ValidationError, match=r"/etc/netctl/bridge:6: ExecUpPost uses an "):
        NETCTL.plan(host, [Upsert(LinkConfig("br0", "bridge", mtu=1400),
                                  frozenset({"mtu"}))], persisted)
    text = (folder / "bridge").read_text()
    plan = plan_persist(host, [Upsert(LinkConfig("br0", "bridge", ("eth0",)),
                                      frozenset({"members"}))], ["br0"])
    [edit] = plan.edits
    assert edit.new_text == text.replace("BindsToInterfaces=(eth0 tap0)",
                                         "BindsToInterfaces=(eth0)")


def test_a_backup_of_a_profile_is_no_profile(tmp_path: Path) -> None:
    """netctl's list_profiles skips NAME~ (and hidden files): an editor's backup of the
    bond profile does not stand for it."""
    from zsn.system.host import Host

    host = Host(netctl_root(tmp_path))
    backup = host.path("/etc/netctl/a-bond~")
    backup.write_text((EXAMPLES / "bonding").read_text().replace("(eth0 eth2)", "(eth9)"))
    assert NETCTL.read(host).configs["bond0"].members == ("eth0", "eth2")
