"""ifupdown: Debian's default interfaces file (sources interfaces.d), ifenslave's and
bridge-utils' example stanzas; edits keep tabs, comments and other stanzas."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.unit.links.conftest import LINK_FIXTURES
from zsn.errors import ValidationError
from zsn.links.persist import LinkConfig, Remove, Upsert
from zsn.links.persist.ifupdown import IFUPDOWN
from zsn.links.persist.owner import detect_owner
from zsn.system.host import Host

DEBIAN = (LINK_FIXTURES / "ifupdown/interfaces.debian").read_text()
BOND = (LINK_FIXTURES / "ifupdown/ifenslave-two_ethernet.stanza").read_text()
BRIDGE = (LINK_FIXTURES / "ifupdown/bridge-utils-example.stanza").read_text()
LOOPBACK = "auto lo\niface lo inet loopback\n"


def root(tmp_path: Path, main: str, drop_ins: dict[str, str] | None = None) -> Host:
    (tmp_path / "etc/network/interfaces.d").mkdir(parents=True)
    (tmp_path / "etc/network/interfaces").write_text(main)
    for name, text in (drop_ins or {}).items():
        (tmp_path / "etc/network/interfaces.d" / name).write_text(text)
    return Host(tmp_path)


def test_reads_stanzas_from_sourced_files(tmp_path: Path) -> None:
    host = root(tmp_path, DEBIAN, {"bond": BOND, "bridge": BRIDGE})
    assert detect_owner(host).name == "ifupdown"
    configs = IFUPDOWN.read(host).configs
    assert configs["bond0"] == LinkConfig("bond0", "bond", ("eth0", "eth1"),
                                          mode="active-backup", miimon=100)
    assert configs["br0"] == LinkConfig("br0", "bridge", ("eth0", "eth1"), stp=False)
    assert configs["bond0"].source == "/etc/network/interfaces.d/bond"


def test_new_bond_goes_into_its_own_drop_in(tmp_path: Path) -> None:
    host = root(tmp_path, DEBIAN)
    bond = LinkConfig("bond0", "bond", ("eth1", "eth2"), mtu=9000, mode="balance-rr",
                      miimon=100)
    vlan = LinkConfig("bond0.10", "vlan", parent="bond0", vlan_id=10, mtu=9000)
    plan = IFUPDOWN.plan(host, [Upsert(bond), Upsert(vlan)], IFUPDOWN.read(host))
    edits = {e.path.name: e for e in plan.edits}
    assert set(edits) == {"zsn-bond0", "zsn-bond0_10"}  # source-directory-safe names
    assert edits["zsn-bond0"].new_text == (
        "auto bond0\niface bond0 inet manual\n    bond-slaves eth1 eth2\n"
        "    bond-mode balance-rr\n    bond-miimon 100\n    mtu 9000\n")
    assert edits["zsn-bond0_10"].new_text == (
        "auto bond0.10\niface bond0.10 inet manual\n    mtu 9000\n")
    assert any("ifenslave" in note for note in plan.notes)
    for edit in plan.edits:
        edit.apply()
    assert (tmp_path / "etc/network/interfaces").read_text() == DEBIAN
    assert IFUPDOWN.read(host).configs == {"bond0": bond, "bond0.10": vlan}


def test_without_sourcing_new_stanzas_go_at_the_end_of_interfaces(tmp_path: Path) -> None:
    host = root(tmp_path, LOOPBACK)
    plan = IFUPDOWN.plan(host, [Upsert(LinkConfig("br1", "bridge", (), stp=True))],
                         IFUPDOWN.read(host))
    assert plan.edits[0].new_text == LOOPBACK + (
        "\nauto br1\niface br1 inet manual\n    bridge_ports none\n    bridge_stp on\n")


def test_edits_keep_the_stanza_tabs_and_spelling(tmp_path: Path) -> None:
    host = root(tmp_path, LOOPBACK + "\n# the NAS uplink\n" + BOND + "\n" + BRIDGE)
    current = IFUPDOWN.read(host)
    plan = IFUPDOWN.plan(host, [
        Upsert(LinkConfig("bond0", "bond", ("eth0", "eth1", "eth2"), mtu=9000),
               frozenset({"members", "mtu"})),
        Upsert(LinkConfig("br0", "bridge", ("eth0",)), frozenset({"members"})),
    ], current)
    new = plan.edits[0].new_text
    assert "\tbond-slaves eth0 eth1 eth2\n" in new
    assert "\tbond-primary eth0 eth1\n\tmtu 9000\n" in new  # appended with the stanza's tab
    assert "\tbridge_ports eth0\n" in new  # underscore spelling kept
    assert "# the NAS uplink\n" in new and "\taddress 192.168.1.2/24\n" in new


def test_remove_takes_the_stanza_and_its_auto_line(tmp_path: Path) -> None:
    host = root(tmp_path, LOOPBACK + "auto bond0 br0\n" + BOND.replace("auto bond0\n", "")
                + "\n" + BRIDGE.replace("auto br0\n", ""))
    plan = IFUPDOWN.plan(host, [Remove("bond0")], IFUPDOWN.read(host))
    new = plan.edits[0].new_text
    assert "bond0" not in new and "auto br0\n" in new and "iface br0 inet static" in new


def test_removing_zsn_own_drop_in_deletes_it(tmp_path: Path) -> None:
    host = root(tmp_path, DEBIAN, {"zsn-br1": "auto br1\niface br1 inet manual\n"
                                              "    bridge_ports none\n"})
    plan = IFUPDOWN.plan(host, [Remove("br1")], IFUPDOWN.read(host))
    assert [(e.path.name, e.remove) for e in plan.edits] == [("zsn-br1", True)]


def test_vlan_names_ifupdown_cannot_express_are_refused(tmp_path: Path) -> None:
    host = root(tmp_path, LOOPBACK)
    ok = IFUPDOWN.plan(host, [Upsert(LinkConfig("vlan7", "vlan", parent="eth0", vlan_id=7))],
                       IFUPDOWN.read(host))
    assert "    vlan-raw-device eth0\n" in ok.edits[0].new_text
    with pytest.raises(ValidationError, match="call it eth0.7"):
        IFUPDOWN.plan(host, [Upsert(LinkConfig("storage", "vlan", parent="eth0", vlan_id=7))],
                      IFUPDOWN.read(host))


def test_member_with_its_own_addresses_is_warned_about(tmp_path: Path) -> None:
    host = root(tmp_path, LOOPBACK + "auto eth1\niface eth1 inet dhcp\n")
    plan = IFUPDOWN.plan(host, [Upsert(LinkConfig("bond0", "bond", ("eth1",)))],
                         IFUPDOWN.read(host))
    assert any("'iface eth1 inet dhcp'" in warning for warning in plan.warnings)


# -- dialects: the installed implementation decides ------------------------------------
CORPUS = LINK_FIXTURES.parent / "corpus" / "ifupdown"


def installed(tmp_path: Path, corpus_file: str, marker: str, package: str = "",
              version: str = "") -> Host:
    (tmp_path / "etc/network").mkdir(parents=True)
    (tmp_path / "etc/network/interfaces").write_text((CORPUS / corpus_file).read_text())
    (tmp_path / marker).parent.mkdir(parents=True, exist_ok=True)
    (tmp_path / marker).touch()
    if package:
        (tmp_path / "var/lib/dpkg").mkdir(parents=True)
        (tmp_path / "var/lib/dpkg/status").write_text(
            f"Package: {package}\nStatus: install ok installed\nVersion: {version}\n")
    return Host(tmp_path)


def test_ifupdown2_bonds_without_inet_method_are_read(tmp_path: Path) -> None:
    """Proxmox's ifupdown2 takes 'iface bond0' with bond-slaves and no family: those
    bonds were dropped without a word."""
    host = installed(tmp_path, "ifupdown2/bond.eni", "usr/share/ifupdown2/__init__.py")
    persisted = IFUPDOWN.read(host)
    assert persisted.dialect == "ifupdown2"
    assert persisted.configs["bond1"] == LinkConfig(
        "bond1", "bond", ("swp_BB_",), mode="active-backup", miimon=255,
        xmit_hash_policy="layer3+4")
    assert sorted(persisted.configs) == ["bond0", "bond1", "bond2", "bond3", "bond5", "bond6"]


def test_ifupdown_ng_bond_and_bridge_by_use_and_requires(tmp_path: Path) -> None:
    host = installed(tmp_path, "ifupdown-ng/bonded-bridge.interfaces",
                     "etc/network/ifupdown-ng.conf")
    configs = IFUPDOWN.read(host).configs
    # ifupdown-ng's bond executor enslaves bond-members only; a bridge's requires are its
    # ports (lifecycle.c): bond0 has no member, br0 has bond0.
    assert configs["bond0"] == LinkConfig("bond0", "bond", (), mode="802.3ad",
                                          xmit_hash_policy="layer2+3")
    assert configs["br0"] == LinkConfig("br0", "bridge", ("bond0",), stp=False)


def test_debian_ifupdown_refuses_a_stanza_without_method_and_zsn_says_so(
        tmp_path: Path) -> None:
    host = installed(tmp_path, "ifupdown2/bond.eni", "lib/ifupdown/settle-dad.sh")
    persisted = IFUPDOWN.read(host)
    first = next(u for u in persisted.unread if u.kind == "ifupdown-refuses")
    assert first.describe() == (
        "/etc/network/interfaces:9: 'iface mgmt': an unknown or no address family, and no "
        "inherits; Debian's ifupdown refuses the whole file")


@pytest.mark.parametrize(("corpus_file", "marker", "stanza"), [
    ("debian-ifupdown/testcase.17", "lib/ifupdown/settle-dad.sh",
     "auto zsnb0\niface zsnb0 inet manual\n    bond-slaves eth5 eth6\n"),
    ("debian-ifupdown/testcase.17", "usr/share/ifupdown2/__init__.py",
     "auto zsnb0\niface zsnb0\n    bond-slaves eth5 eth6\n"),
    ("debian-ifupdown/testcase.17", "etc/network/ifupdown-ng.conf",
     "auto zsnb0\niface zsnb0\n    use bond\n    bond-members eth5 eth6\n"),
])
def test_new_stanzas_are_written_in_the_installed_dialect(
        tmp_path: Path, corpus_file: str, marker: str, stanza: str) -> None:
    host = installed(tmp_path, corpus_file, marker)
    plan = IFUPDOWN.plan(host, [Upsert(LinkConfig("zsnb0", "bond", ("eth5", "eth6"),
                                                  mode="802.3ad"))], IFUPDOWN.read(host))
    [edit] = plan.edits
    assert stanza in edit.new_text
    assert edit.new_text.startswith((CORPUS / corpus_file).read_text())


def test_ifupdown_ng_before_0_12_stops_at_a_source_pattern(tmp_path: Path) -> None:
    """Debian 12's ifupdown-ng 0.11.4 opens 'source /etc/network/interfaces.d/*' as one
    file name and, failing, reads nothing (checked with its ifquery)."""
    host = installed(tmp_path, "debian-ifupdown/testcase.17", "etc/network/ifupdown-ng.conf",
                     "ifupdown-ng", "0.11.4~rc1-1+b2")
    interfaces = host.path("/etc/network/interfaces")
    interfaces.write_text(DEBIAN + interfaces.read_text())
    [unread] = IFUPDOWN.read(host).unread
    assert unread.kind == "ifupdown-refuses" and unread.line == 3
    assert "expands no wildcards" in unread.message


def test_a_proxmox_bond_can_be_set_from_the_command_line(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The whole path: `link set` finds the ifupdown2 bond (it said the bond did not
    exist) and plans its MTU in the stanza, every other line kept."""
    from zsn import cli

    host = installed(tmp_path, "ifupdown2/bond.eni", "usr/share/ifupdown2/__init__.py")
    assert cli.main(["--root", str(host.root), "link", "set", "bond1", "--mtu", "9000",
                     "--config-only", "--dry-run"]) == 0
    out = capsys.readouterr().out
    assert "+      mtu 9000\n" in out and "written for ifupdown2" in out


CORPUS = Path(__file__).parents[2] / "fixtures" / "corpus" / "ifupdown"


def test_legacy_slaves_make_the_bond_and_bond_master_stanzas_are_members(
        tmp_path: Path) -> None:
    """ifenslave's pre-up hook: ``IF_BOND_SLAVES=${IF_BOND_SLAVES:-$IF_SLAVES}``; a
    stanza with bond-master is a member even when it sets bond-mode (Debian's wiki and
    ifenslave's own examples)."""
    wiki = (CORPUS / "debian-wiki/Bonding-example-1").read_text()
    configs = IFUPDOWN.read(root(tmp_path / "wiki", wiki)).configs
    assert configs["bond0"].members == ("eth0", "eth1")
    hotplug = (CORPUS / "debian-packages/ifenslave-ethernet+hotplug_wifi").read_text()
    configs = IFUPDOWN.read(root(tmp_path / "hotplug", hotplug)).configs
    assert set(configs) == {"bond0"}  # wlan0 (bond-master bond0, bond-mode 1) joins it
    assert configs["bond0"].members == ("eth0", "wlan0")


def test_bridge_utils_all_is_an_expression_zsn_does_not_expand(tmp_path: Path) -> None:
    text = (CORPUS / "debian-packages/bridge-utils-interfaces.networkmanager").read_text()
    persisted = IFUPDOWN.read(root(tmp_path, text))
    assert "br0" not in persisted.configs
    [unread] = [u for u in persisted.unread if u.kind == "port-expression"]
    assert unread.names == ("br0",) and unread.line == 8 and unread.blocking


def test_an_option_given_twice_in_a_stanza_is_joined_as_debian_ifupdown_joins_it(
        tmp_path: Path) -> None:
    """config.c joins a repeated option's values with a newline; bridge-utils splits
    the ports at any blank (issue 33's example: bridge_ports given twice)."""
    text = ("auto br0\niface br0 inet manual\n    bridge_ports eth0\n"
            "    bridge_ports eth1\n")
    persisted = IFUPDOWN.read(root(tmp_path, text))
    assert persisted.configs["br0"].members == ("eth0", "eth1")
    assert not [u for u in persisted.unread if u.blocking]


def test_a_hidden_file_a_source_glob_matches_is_not_read(tmp_path: Path) -> None:
    """glob(3), Python's glob and wordexp(3) match no leading dot with a wildcard."""
    host = root(tmp_path, DEBIAN, {".bond.swp": BOND, "bridge": BRIDGE})
    assert set(IFUPDOWN.read(host).configs) == {"br0"}
