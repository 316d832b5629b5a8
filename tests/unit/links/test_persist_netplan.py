"""netplan: read the field notes' file, edit it keeping every other byte, and let
`netplan generate` judge the result."""

from __future__ import annotations

import difflib
import os
import shutil
from pathlib import Path

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.needs import needs_tools
from tests.unit.links.conftest import LINK_FIXTURES
from zsn.errors import ValidationError
from zsn.links.persist import LinkConfig, Remove, Upsert
from zsn.links.persist.netplan import NETPLAN
from zsn.links.persist.owner import detect_owner
from zsn.links.persist.yamledit import YamlDocument
from zsn.system.host import Host

NOTES = (LINK_FIXTURES / "netplan-01-netcfg.yaml").read_text()


def netplan_root(tmp_path: Path, files: dict[str, str]) -> Host:
    for path, text in files.items():
        target = tmp_path / path.lstrip("/")
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text)
        target.chmod(0o600)
    return Host(tmp_path)


def only_insertions(before: str, after: str) -> list[str]:
    """The lines `after` adds; fails if any line of `before` changed or went."""
    matcher = difflib.SequenceMatcher(a=before.splitlines(True), b=after.splitlines(True),
                                      autojunk=False)
    added = []
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        assert tag in ("equal", "insert"), (tag, before.splitlines()[i1:i2])
        added += after.splitlines(True)[j1:j2] if tag == "insert" else []
    return added


def test_reads_the_notes_bridges_and_vlans(tmp_path: Path) -> None:
    host = netplan_root(tmp_path, {"/etc/netplan/01-netcfg.yaml": NOTES})
    assert detect_owner(host).name == "netplan"
    configs = NETPLAN.read(host).configs
    assert configs["br0"] == LinkConfig("br0", "bridge", ("eno1", "eno2"), stp=True)
    assert configs["br0.100"] == LinkConfig("br0.100", "vlan", parent="br0", vlan_id=100)
    assert configs["br200"].members == ("br0.200",)
    assert configs["br0"].source == "/etc/netplan/01-netcfg.yaml"


def test_new_bond_goes_into_the_only_file_and_keeps_every_other_byte(tmp_path: Path) -> None:
    needs_tools("netplan")
    host = netplan_root(tmp_path, {"/etc/netplan/01-netcfg.yaml": NOTES})
    bond = LinkConfig("bond0", "bond", ("eno3", "eno4"), mtu=9000, mode="balance-rr",
                      miimon=100)
    plan = NETPLAN.plan(host, [Upsert(bond)], NETPLAN.read(host))
    assert [str(edit.path) for edit in plan.edits] == [str(tmp_path / "etc/netplan/01-netcfg.yaml")]
    added = only_insertions(NOTES, plan.edits[0].new_text)
    assert "".join(added) == (
        "    eno3: {}\n    eno4: {}\n"
        "  bonds:\n    bond0:\n      interfaces: [eno3, eno4]\n      mtu: 9000\n"
        "      parameters:\n        mode: balance-rr\n        mii-monitor-interval: 100\n")
    assert not plan.warnings  # netplan generate accepted it
    plan.edits[0].apply()
    assert NETPLAN.read(host).configs["bond0"] == bond


def test_changing_and_removing_definitions(tmp_path: Path) -> None:
    needs_tools("netplan")
    host = netplan_root(tmp_path, {"/etc/netplan/01-netcfg.yaml": NOTES})
    current = NETPLAN.read(host)
    br0 = current.configs["br0"]
    plan = NETPLAN.plan(host, [
        Upsert(LinkConfig("br0", "bridge", ("eno1",), mtu=9000), frozenset({"members", "mtu"})),
        Remove("br200"),
    ], current)
    text = plan.edits[0].new_text
    diff = "".join(difflib.unified_diff(NOTES.splitlines(True), text.splitlines(True), n=0))
    assert "-        - eno2\n" in diff and "+      mtu: 9000\n" in diff
    assert "-    br200:\n" in diff and "-      addresses: [ 10.0.200.1/24 ]\n" in diff
    assert "gateway4" in text and "nameservers" in text  # untouched keys stay
    plan.edits[0].apply()
    after = NETPLAN.read(host).configs
    assert after["br0"].members == ("eno1",) and after["br0"].mtu == 9000
    assert after["br0"].stp == br0.stp and "br200" not in after


def test_netplan_generate_refuses_and_nothing_is_planned(tmp_path: Path) -> None:
    needs_tools("netplan")
    host = netplan_root(tmp_path, {"/etc/netplan/01-netcfg.yaml": NOTES})
    # eno1 is a port of br0 already: netplan will not make it a bond member too.
    bond = LinkConfig("bond0", "bond", ("eno1", "eno3"), mode="active-backup")
    with pytest.raises(ValidationError, match="netplan generate refuses"):
        NETPLAN.plan(host, [Upsert(bond)], NETPLAN.read(host))
    assert (tmp_path / "etc/netplan/01-netcfg.yaml").read_text() == NOTES


def test_unrelated_definition_in_several_files_goes_to_zsn_own_file(tmp_path: Path) -> None:
    host = netplan_root(tmp_path, {
        "/etc/netplan/01-netcfg.yaml": NOTES,
        "/etc/netplan/02-wifi.yaml": "network:\n  version: 2\n  wifis: {}\n"})
    vlan = LinkConfig("eno3.7", "vlan", parent="eno3", vlan_id=7)
    plan = NETPLAN.plan(host, [Upsert(vlan)], NETPLAN.read(host))
    assert [e.path.name for e in plan.edits] == ["90-zsn.yaml"]
    assert plan.edits[0].previous is None and plan.edits[0].mode == 0o600
    network = yaml.safe_load(plan.edits[0].new_text)["network"]
    assert network["vlans"] == {"eno3.7": {"id": 7, "link": "eno3"}}
    assert network["ethernets"] == {"eno3": {}}  # netplan wants the parent defined


def test_a_definition_in_lib_is_not_edited(tmp_path: Path) -> None:
    host = netplan_root(tmp_path, {"/lib/netplan/00-vendor.yaml": NOTES})
    with pytest.raises(ValidationError, match="only /etc/netplan"):
        NETPLAN.plan(host, [Remove("br100")], NETPLAN.read(host))


def test_same_name_in_run_shadows_etc(tmp_path: Path) -> None:
    host = netplan_root(tmp_path, {
        "/etc/netplan/01-netcfg.yaml": NOTES,
        "/run/netplan/01-netcfg.yaml": "network:\n  version: 2\n  bridges: {brX: {}}\n"})
    assert set(NETPLAN.read(host).configs) == {"brX"}


def test_a_broken_file_is_a_problem_not_a_crash(tmp_path: Path) -> None:
    host = netplan_root(tmp_path, {"/etc/netplan/01.yaml": "network:\n  bonds: [\n"})
    problems = NETPLAN.read(host).problems
    assert problems and "01.yaml" in problems[0]


names = st.from_regex(r"[a-z][a-z0-9]{0,5}", fullmatch=True)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.tuples(st.sampled_from(["bond", "vlan", "bridge"]), names,
                          st.lists(names, max_size=3, unique=True),
                          st.integers(1, 4094), st.one_of(st.none(), st.integers(1280, 9000))),
                max_size=4, unique_by=lambda t: t[1]))
def test_any_definitions_read_back_as_written_and_keep_the_notes(definitions: list) -> None:  # type: ignore[type-arg]
    document = YamlDocument(NOTES, "test")
    expected = {}
    for kind, name, members, vlan_id, mtu in definitions:
        name = f"z{name}"
        config = LinkConfig(name, kind, tuple(f"m{m}" for m in members) if kind != "vlan"
                            else (), parent="eno1" if kind == "vlan" else None,
                            vlan_id=vlan_id if kind == "vlan" else None, mtu=mtu,
                            mode="802.3ad" if kind == "bond" else None,
                            miimon=100 if kind == "bond" else None,
                            stp=False if kind == "bridge" else None)
        from zsn.links.persist.netplan import SECTIONS, from_config, to_config

        document.set(("network", SECTIONS[kind], name), from_config(config, None))
        expected[name] = config
        reread = to_config(name, kind, yaml.safe_load(document.text)["network"][
            SECTIONS[kind]][name], "")
        assert reread == config
    only_insertions(NOTES, document.text)


def test_real_netplan_layout_round_trips_through_generate(tmp_path: Path) -> None:
    needs_tools("netplan")
    host = netplan_root(tmp_path, {"/etc/netplan/01-netcfg.yaml": NOTES})
    plan = NETPLAN.plan(host, [Upsert(LinkConfig("br0.300", "vlan", parent="br0",
                                                 vlan_id=300, mtu=1400))],
                        NETPLAN.read(host))
    plan.edits[0].apply()
    assert os.stat(plan.edits[0].path).st_mode & 0o777 == 0o600
    shutil.rmtree(tmp_path / "run", ignore_errors=True)
    from zsn.system.commands import run

    run(["netplan", "generate", "--root-dir", str(tmp_path)])
    netdev = (tmp_path / "run/systemd/network/10-netplan-br0.300.netdev").read_text()
    assert "Id=300" in netdev and "MTUBytes=1400" in netdev


# -- every device type, merge order, files netplan refuses (netplan's own examples) ------
EXAMPLES = LINK_FIXTURES.parent / "corpus" / "netplan" / "examples"


def example_root(tmp_path: Path, *names: str) -> Host:
    return netplan_root(tmp_path, {f"/etc/netplan/{name}": (EXAMPLES / name).read_text()
                                   for name in names})


def test_a_vlan_on_a_tunnel_declares_no_ethernet(tmp_path: Path) -> None:
    """vxlan1 is a tunnel: a VLAN on it must not declare it again under ethernets:
    (netplan refuses a name defined twice)."""
    needs_tools("netplan")
    host = example_root(tmp_path, "vxlan.yaml")
    persisted = NETPLAN.read(host)
    assert persisted.devices["vxlan1"].kind == "tunnel"
    assert persisted.devices["vrf1005"].kind == "vrf"
    plan = NETPLAN.plan(host, [Upsert(LinkConfig("vxlan1.5", "vlan", parent="vxlan1",
                                                 vlan_id=5))], persisted)
    [edit] = plan.edits
    added = only_insertions((EXAMPLES / "vxlan.yaml").read_text(), edit.new_text)
    assert "".join(added) == "  vlans:\n    vxlan1.5:\n      id: 5\n      link: vxlan1\n"
    assert not plan.warnings


def test_a_tunnel_is_not_edited_as_a_bond(tmp_path: Path) -> None:
    host = example_root(tmp_path, "vxlan.yaml")
    with pytest.raises(ValidationError, match=r"vxlan1 is defined as a tunnel in "
                                              r"/etc/netplan/vxlan.yaml; zsn makes it no bond"):
        NETPLAN.plan(host, [Upsert(LinkConfig("vxlan1", "bond", ("eth9",)))],
                     NETPLAN.read(host))


def test_a_new_vlan_comes_after_its_parents_declaration(tmp_path: Path) -> None:
    """In a file with a Wi-Fi access point, netplan 0.106 refuses a vlans: block ahead of
    the ethernets: block that declares its parent."""
    needs_tools("netplan")
    host = example_root(tmp_path, "wireless.yaml")
    plan = NETPLAN.plan(host, [Upsert(LinkConfig("eth9.7", "vlan", parent="eth9",
                                                 vlan_id=7))], NETPLAN.read(host))
    text = plan.edits[0].new_text
    assert text.index("  ethernets:\n    eth9: {}") < text.index("  vlans:\n    eth9.7:")
    assert not plan.warnings


def test_a_file_netplan_already_refuses_is_not_blamed_on_the_edit(tmp_path: Path) -> None:
    needs_tools("netplan")
    host = example_root(tmp_path, "dummy-devices.yaml")  # 'dummy-devices' came after 0.106
    with pytest.raises(ValidationError, match=r"netplan already refuses the files as they "
                                              r"are, before zsn's change: .*dummy-devices"):
        NETPLAN.plan(host, [Upsert(LinkConfig("bond9", "bond", ("eth8", "eth9")))],
                     NETPLAN.read(host))


def test_member_lists_of_several_files_are_joined_and_edited_where_they_are(
        tmp_path: Path) -> None:
    """netplan joins a bond's interfaces from every file (checked with netplan get)."""
    host = netplan_root(tmp_path, {
        "/etc/netplan/10-bond.yaml": (EXAMPLES / "bonding.yaml").read_text(),
        "/etc/netplan/20-more.yaml": "network:\n  ethernets:\n    enp5s0: {}\n  bonds:\n"
                                     "    bond0:\n      interfaces: [enp5s0]\n"})
    persisted = NETPLAN.read(host)
    assert persisted.configs["bond0"].members == ("enp3s0", "enp4s0", "enp5s0")
    plan = NETPLAN.plan(host, [Upsert(LinkConfig("bond0", "bond", ("enp3s0", "enp5s0")),
                                      frozenset({"members"}))], persisted)
    [edit] = plan.edits
    assert edit.path.name == "10-bond.yaml" and "        - enp4s0\n" not in edit.new_text
