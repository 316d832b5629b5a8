"""systemd-networkd: netplan's own generated files read back, and edits that keep
every other line."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.unit.links.conftest import LINK_FIXTURES
from zsn.errors import ValidationError
from zsn.formats.unitfile import UnitFile
from zsn.links.persist import LinkConfig, Remove, Upsert
from zsn.links.persist.networkd import NETWORKD, SCHEMA, parse_timespan_ms
from zsn.links.persist.owner import detect_owner
from zsn.system.host import Host

GENERATED = LINK_FIXTURES / "networkd" / "generated"
ETC = "etc/systemd/network"


@pytest.fixture
def host(tmp_path: Path) -> Host:
    """netplan's output for bond0 (802.3ad) + VLAN bond0.10 + bridge br10, in /etc."""
    target = tmp_path / ETC
    shutil.copytree(GENERATED, target)
    return Host(tmp_path)


def text(host: Host, name: str) -> str:
    return host.path(f"/{ETC}/{name}").read_text()


def test_reads_what_netplan_generated(host: Host) -> None:
    assert detect_owner(host).name == "networkd"
    configs = NETWORKD.read(host).configs
    assert configs["bond0"] == LinkConfig("bond0", "bond", ("eth1", "eth2"), mtu=9000,
                                          mode="802.3ad", miimon=100, lacp_rate="fast")
    assert configs["bond0.10"] == LinkConfig("bond0.10", "vlan", parent="bond0", vlan_id=10)
    assert configs["br10"] == LinkConfig("br10", "bridge", ("bond0.10",), stp=False)


def test_timespans() -> None:
    assert parse_timespan_ms("100ms") == 100
    assert parse_timespan_ms("1s") == 1000 and parse_timespan_ms("2") == 2000
    assert parse_timespan_ms("soon") is None


def test_add_and_remove_a_member(host: Host) -> None:
    current = NETWORKD.read(host)
    bond = current.configs["bond0"]
    plan = NETWORKD.plan(host, [Upsert(LinkConfig("bond0", "bond", ("eth1", "eth3")),
                                       frozenset({"members"}))], current)
    edits = {e.path.name: e for e in plan.edits}
    assert set(edits) == {"10-netplan-eth2.network", "10-zsn-eth3.network"}
    assert edits["10-zsn-eth3.network"].new_text == (
        "[Match]\nName=eth3\n\n[Network]\nBond=bond0\n")
    eth2 = edits["10-netplan-eth2.network"].new_text
    assert eth2 == text(host, "10-netplan-eth2.network").replace("Bond=bond0\n", "")
    for edit in plan.edits:
        edit.apply()
    after = NETWORKD.read(host).configs["bond0"]
    assert after.members == ("eth1", "eth3") and after.mode == bond.mode


def test_set_mtu_changes_netdev_and_link_section(host: Host) -> None:
    current = NETWORKD.read(host)
    plan = NETWORKD.plan(host, [Upsert(LinkConfig("bond0", "bond", mtu=1500),
                                       frozenset({"mtu"}))], current)
    edits = {e.path.name: e.new_text for e in plan.edits}
    assert edits["10-netplan-bond0.netdev"] == text(host, "10-netplan-bond0.netdev").replace(
        "MTUBytes=9000", "MTUBytes=1500")
    assert edits["10-netplan-bond0.network"] == text(host, "10-netplan-bond0.network").replace(
        "MTUBytes=9000", "MTUBytes=1500")


def test_new_bond_vlan_and_bridge_files(host: Host) -> None:
    current = NETWORKD.read(host)
    plan = NETWORKD.plan(host, [
        Upsert(LinkConfig("bond1", "bond", ("eth5", "eth6"), mtu=9000, mode="balance-rr")),
        Upsert(LinkConfig("bond1.20", "vlan", parent="bond1", vlan_id=20, mtu=9000)),
    ], current)
    edits = {e.path.name: e.new_text for e in plan.edits}
    assert edits["30-zsn-bond1.netdev"] == (
        "[NetDev]\nName=bond1\nKind=bond\nMTUBytes=9000\n\n"
        "[Bond]\nMode=balance-rr\nMIIMonitorSec=100ms\n")
    assert edits["10-zsn-bond1.network"] == (
        "[Match]\nName=bond1\n\n[Link]\nMTUBytes=9000\n\n[Network]\nVLAN=bond1.20\n")
    assert edits["30-zsn-bond1.20.netdev"] == (
        "[NetDev]\nName=bond1.20\nKind=vlan\nMTUBytes=9000\n\n[VLAN]\nId=20\n")
    assert edits["10-zsn-eth5.network"] == "[Match]\nName=eth5\n\n[Network]\nBond=bond1\n"
    for edit in plan.edits:
        edit.apply()
    configs = NETWORKD.read(host).configs
    assert configs["bond1"].members == ("eth5", "eth6")
    assert configs["bond1.20"].parent == "bond1"


def test_removing_a_bridge_detaches_its_port(host: Host) -> None:
    current = NETWORKD.read(host)
    plan = NETWORKD.plan(host, [Remove("br10")], current)
    removed = [e.path.name for e in plan.edits if e.remove]
    assert removed == ["10-netplan-br10.netdev"]
    edited = {e.path.name: e.new_text for e in plan.edits if not e.remove}
    assert "Bridge=br10" not in edited["10-netplan-bond0.10.network"]
    assert any("10-netplan-br10.network still matches br10" in w for w in plan.warnings)


def test_a_wildcard_network_file_is_taken_over_with_a_warning(tmp_path: Path) -> None:
    wired = "# DHCP on every wired link\n[Match]\nName=en*\n\n[Network]\nDHCP=yes\n"
    (tmp_path / ETC).mkdir(parents=True)
    (tmp_path / ETC / "20-wired.network").write_text(wired)
    host = Host(tmp_path)
    plan = NETWORKD.plan(host, [Upsert(LinkConfig("br0", "bridge", ("enp1s0",)))],
                         NETWORKD.read(host))
    assert "10-zsn-enp1s0.network takes enp1s0 over from /etc/systemd/network/20-wired" \
           ".network" in " ".join(plan.warnings)
    assert all(e.path.name != "20-wired.network" for e in plan.edits)


def test_comments_and_unknown_keys_stay(tmp_path: Path) -> None:
    own = ("# uplink, do not touch the DNS\n[Match]\nName=eno1\n\n[Network]\n"
           "DNS=192.0.2.53 ; resolver\n# Bond added by hand below\n")
    (tmp_path / ETC).mkdir(parents=True)
    (tmp_path / ETC / "05-eno1.network").write_text(own)
    host = Host(tmp_path)
    plan = NETWORKD.plan(host, [Upsert(LinkConfig("bond0", "bond", ("eno1",)))],
                         NETWORKD.read(host))
    edit = next(e for e in plan.edits if e.path.name == "05-eno1.network")
    assert edit.new_text == own.replace("; resolver\n", "; resolver\nBond=bond0\n")


def test_netdev_outside_etc_is_not_edited(tmp_path: Path) -> None:
    lib = tmp_path / "usr/lib/systemd/network"
    lib.mkdir(parents=True)
    shutil.copy(GENERATED / "10-netplan-br10.netdev", lib)
    host = Host(tmp_path)
    with pytest.raises(ValidationError, match="only /etc/systemd/network"):
        NETWORKD.plan(host, [Remove("br10")], NETWORKD.read(host))


def test_unit_file_editing() -> None:
    unit = UnitFile("[Match]\nName=a\n\n[Network]\nVLAN=a.1 a.2\nVLAN=a.3\n", SCHEMA)
    assert unit.values("Network", "VLAN") == ["a.1", "a.2", "a.3"]
    assert unit.remove("Network", "VLAN", "a.2")
    assert unit.text == "[Match]\nName=a\n\n[Network]\nVLAN=a.1\nVLAN=a.3\n"
    unit.set("Link", "MTUBytes", "9000")
    assert unit.text.endswith("\n\n[Link]\nMTUBytes=9000\n")


# -- drop-ins, folders and masks (systemd's own test configs) ---------------------------
CORPUS = LINK_FIXTURES.parent / "corpus" / "networkd" / "conf"
VLAN_FILES = ("21-vlan.netdev", "21-vlan.netdev.d/override.conf", "21-vlan.network",
              "21-vlan-test1.network", "21-vlan-test1.network.d/override.conf")


def vlan_tree(root: Path, folder: str) -> Host:
    for name in VLAN_FILES:
        target = root / folder / name
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(CORPUS / name, target)
    (root / ETC).mkdir(parents=True, exist_ok=True)
    return Host(root)


def test_drop_ins_give_the_vlan_its_id_mtu_and_parent(tmp_path: Path) -> None:
    """21-vlan.netdev says only Name= and Kind=; its drop-in sets Id=99 and MTUBytes=2000,
    and test1's .network drop-in adds VLAN=vlan99 (the export showed none of these)."""
    host = vlan_tree(tmp_path, "run/systemd/network")
    persisted = NETWORKD.read(host)
    assert persisted.configs["vlan99"] == LinkConfig("vlan99", "vlan", parent="test1",
                                                     vlan_id=99, mtu=2000)
    assert persisted.unread == []


def test_an_mtu_edit_lands_in_the_drop_in_that_sets_it(tmp_path: Path) -> None:
    host = vlan_tree(tmp_path, ETC)
    plan = NETWORKD.plan(host, [Upsert(LinkConfig("vlan99", "vlan", mtu=1400),
                                       frozenset({"mtu"}))], NETWORKD.read(host))
    [edit] = plan.edits
    assert edit.path == host.path(f"/{ETC}/21-vlan.netdev.d/override.conf")
    assert edit.new_text == (CORPUS / "21-vlan.netdev.d/override.conf").read_text().replace(
        "MTUBytes=2000", "MTUBytes=1400")
    assert any(f"/{ETC}/21-vlan.netdev.d/override.conf" in note and "MTUBytes=1400" in note
               for note in plan.notes)


def test_a_setting_in_run_is_overridden_by_a_drop_in_in_etc_that_sorts_last(
        tmp_path: Path) -> None:
    host = vlan_tree(tmp_path, "run/systemd/network")
    plan = NETWORKD.plan(host, [Upsert(LinkConfig("vlan99", "vlan", mtu=1400),
                                       frozenset({"mtu"}))], NETWORKD.read(host))
    [edit] = plan.edits
    assert edit.path == host.path(f"/{ETC}/21-vlan.netdev.d/zsn.conf") and edit.previous is None
    assert edit.new_text == "[NetDev]\nMTUBytes=1400\n"
    for step in plan.edits:
        step.apply()
    assert NETWORKD.read(host).configs["vlan99"].mtu == 1400


def test_etc_shadows_run_and_a_mask_hides_a_drop_in(tmp_path: Path) -> None:
    host = vlan_tree(tmp_path, "usr/lib/systemd/network")
    shadow = host.path(f"/{ETC}/21-vlan.netdev.d/override.conf")
    shadow.parent.mkdir(parents=True)
    shadow.write_text("[VLAN]\nId=98\n")
    assert NETWORKD.read(host).configs["vlan99"] == LinkConfig(
        "vlan99", "vlan", parent="test1", vlan_id=98)
    shadow.unlink()
    shadow.symlink_to("/dev/null")
    persisted = NETWORKD.read(host)
    assert "vlan99" not in persisted.configs  # networkd does not create a VLAN without Id
    assert [(u.kind, u.names) for u in persisted.unread] == [
        ("networkd-ignores", ("vlan99",)), ("networkd-ignores", ("vlan99",))]


def test_a_value_networkd_would_not_read_is_reported(tmp_path: Path) -> None:
    host = vlan_tree(tmp_path, ETC)
    drop_in = host.path(f"/{ETC}/21-vlan.netdev.d/override.conf")
    drop_in.write_text(drop_in.read_text().replace("MTUBytes=2000", "MTUBytes=2000 bytes"))
    [unread] = NETWORKD.read(host).unread
    assert unread.describe() == (f"/{ETC}/21-vlan.netdev.d/override.conf:2: MTUBytes=2000 "
                                 "bytes is not a size networkd reads")
    assert unread.blocking and unread.names == ("vlan99",)


def test_mtu_suffixes_and_time_spans_as_systemd_reads_them() -> None:
    from zsn.links.persist.networkd import parse_mtu

    assert parse_mtu("9000") == 9000 and parse_mtu("9K") == 9216 and parse_mtu("1.5K") == 1536
    assert parse_mtu("9000 bytes") is None
    assert parse_timespan_ms("1min 30s") == 90_000 and parse_timespan_ms("250ms") == 250


def test_files_in_run_only_make_networkd_the_owner(tmp_path: Path) -> None:
    """netplan writes /run/systemd/network, systemd's test suite too: nothing in /etc."""
    host = vlan_tree(tmp_path, "run/systemd/network")
    assert detect_owner(host).name == "networkd"


def test_systemds_own_files_in_usr_lib_do_not_make_networkd_the_owner(tmp_path: Path) -> None:
    """Every machine with systemd has its examples in /usr/lib/systemd/network; an
    ifupdown box stays ifupdown's (zsn once planned networkd files for it)."""
    vendor = tmp_path / "usr/lib/systemd/network"
    vendor.mkdir(parents=True)
    for shipped in (LINK_FIXTURES / "networkd/vendor").iterdir():
        shutil.copyfile(shipped, vendor / shipped.name)
    (tmp_path / "etc/network").mkdir(parents=True)
    (tmp_path / "etc/network/interfaces").write_text("auto lo\niface lo inet loopback\n")
    assert detect_owner(Host(tmp_path)).name == "ifupdown"
