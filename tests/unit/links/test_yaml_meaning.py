"""YAML edits keep meaning: each netplan edit is read back as data and compared with
what was asked; anchors, aliases, merge keys (and anything else) that would make it
mean more are refused, naming the line, and the file stays as it was."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from tests.terminal_scan import raw_controls
from zsn import cli
from zsn.links.persist.yamledit import UnsafeEdit, YamlDocument

ALIASED = """\
network:
  version: 2
  ethernets:
    eth1: &e
      dhcp4: false
    eth2: *e
"""
MERGED = """\
network:
  version: 2
  ethernets:
    base: &base {mtu: 1500}
    eth1:
      <<: *base
      dhcp4: false
"""


def test_an_insertion_between_an_anchor_and_its_alias_is_refused() -> None:
    # Without the check the bond block lands between eth1's node and "eth2: *e",
    # and eth2 becomes part of it.
    document = YamlDocument(ALIASED, "/etc/netplan/01.yaml")
    with pytest.raises(UnsafeEdit, match=r"^/etc/netplan/01.yaml:4: setting "
                                         r"network.bonds.bond0 .* an anchor \(&e\)"):
        document.set(("network", "bonds", "bond0"), {"interfaces": ["eth1", "eth2"]})
    assert document.text == ALIASED


def test_an_edit_of_an_anchored_node_would_change_its_aliases_too() -> None:
    document = YamlDocument(ALIASED, "/etc/netplan/01.yaml")
    with pytest.raises(UnsafeEdit, match="01.yaml:4"):
        document.set(("network", "ethernets", "eth1", "mtu"), 9000)
    with pytest.raises(UnsafeEdit):
        document.delete(("network", "ethernets", "eth1", "dhcp4"))
    assert document.text == ALIASED


def test_a_merge_key_is_named() -> None:
    document = YamlDocument(MERGED, "x.yaml")
    with pytest.raises(UnsafeEdit, match=r"x.yaml:4: .* an anchor"):
        document.delete(("network", "ethernets", "base"))
    assert document.text == MERGED


def test_an_edit_that_keeps_the_meaning_goes_through() -> None:
    document = YamlDocument(ALIASED, "x.yaml")
    document.set(("network", "ethernets", "eth3"), {})  # beside them: means just that
    data = yaml.safe_load(document.text)
    assert data["network"]["ethernets"]["eth3"] == {} and data["network"]["ethernets"][
        "eth2"] == {"dhcp4": False}
    flow = YamlDocument("network: {version: 2, bonds: {bond0: {interfaces: [eth1]}}}\n")
    flow.set(("network", "bonds", "bond0", "mtu"), 9000)
    assert yaml.safe_load(flow.text)["network"]["bonds"]["bond0"] == {
        "interfaces": ["eth1"], "mtu": 9000}


def test_the_command_refuses_with_the_line_and_changes_nothing(
        capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    netplan = tmp_path / "etc/netplan"
    netplan.mkdir(parents=True)
    (netplan / "01.yaml").write_text(ALIASED)
    code = cli.main(["--root", str(tmp_path), "link", "create", "bond", "bond0", "--mode",
                     "active-backup", "--members", "eth1,eth2", "--config-only", "--dry-run"])
    out, err = capsys.readouterr()
    assert code == 2 and out == "" and err.count("\n") == 1
    assert "/etc/netplan/01.yaml:4: setting network.bonds.bond0" in err
    assert raw_controls(err) == []
    assert (netplan / "01.yaml").read_text() == ALIASED
