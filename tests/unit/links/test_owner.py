"""Which system owns the network config under a root, in the reference's order."""

from __future__ import annotations

from pathlib import Path

from zsn.links.persist.owner import detect_owner, read_persistent
from zsn.system.host import Host


def write(root: Path, path: str, text: str = "") -> None:
    target = root / path
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(text)


def test_order_netplan_networkd_ifupdown_netctl(tmp_path: Path) -> None:
    host = Host(tmp_path)
    assert detect_owner(host).name == "none"
    write(tmp_path, "etc/netctl/bond0", "Interface=bond0\nConnection=bond\n")
    assert detect_owner(host).name == "netctl"
    write(tmp_path, "etc/network/interfaces", "auto lo\niface lo inet loopback\n")
    assert detect_owner(host).name == "ifupdown"
    write(tmp_path, "etc/systemd/network/10-eth0.network", "[Match]\nName=eth0\n")
    assert detect_owner(host).name == "networkd"
    write(tmp_path, "lib/netplan/00-vendor.yaml", "network: {version: 2}\n")
    assert detect_owner(host).name == "netplan"


def test_a_hidden_network_file_does_not_make_networkd_the_owner(tmp_path: Path) -> None:
    # networkd's conf_files_list passes over hidden names: a copy set aside as
    # .10-eth0.network is no config of its, and ifupdown's stays the one in use.
    write(tmp_path, "etc/network/interfaces", "auto lo\niface lo inet loopback\n")
    write(tmp_path, "etc/systemd/network/.10-eth0.network", "[Match]\nName=eth0\n")
    assert detect_owner(Host(tmp_path)).name == "ifupdown"


def test_networkd_enabled_without_files_counts(tmp_path: Path) -> None:
    write(tmp_path, "etc/systemd/system/multi-user.target.wants/systemd-networkd.service")
    assert detect_owner(Host(tmp_path)).name == "networkd"


def test_nothing_to_read_without_an_owner(tmp_path: Path) -> None:
    owner, persisted = read_persistent(Host(tmp_path))
    assert owner.name == "none" and persisted.configs == {}
