"""Trees zsn did not make, under --root: nothing outside the tree is read, quoted or
written, whatever links the tree holds, and a dry run writes nothing at all."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import pytest

from tests.needs import needs_tools
from tests.terminal_scan import raw_controls
from zsn import cli

SECRET = "root:$6$the-outside-password-hash:19000:0:99999:7:::"
NETPLAN = """\
network:
  version: 2
  ethernets:
    eth1: {}
    eth2: {}
"""


def snapshot_of(*places: Path) -> dict[str, tuple[str, int, int]]:
    """Every file under `places`: content hash, mode, mtime (links: their target)."""
    found: dict[str, tuple[str, int, int]] = {}
    for place in places:
        for folder, dirs, names in os.walk(place):
            for name in dirs + names:
                path = Path(folder, name)
                st = path.lstat()
                digest = os.readlink(path) if path.is_symlink() else (
                    hashlib.sha256(path.read_bytes()).hexdigest() if path.is_file() else "")
                found[str(path)] = (digest, st.st_mode, st.st_mtime_ns)
    return found


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    """Beside the tree: what stands for the host's own files."""
    place = tmp_path / "host"
    place.mkdir()
    (place / "shadow").write_text(SECRET + "\n")
    (place / "01-netcfg.yaml").write_text(NETPLAN + "# " + SECRET + "\n")
    (place / "interfaces.d").mkdir()
    (place / "interfaces.d" / "bond").write_text(
        f"# {SECRET}\nauto bondx\niface bondx inet manual\n  bond-slaves eth1\n"
        "  bond-mode active-backup\n")
    return place


@pytest.fixture
def root(tmp_path: Path) -> Path:
    tree = tmp_path / "tree"
    (tree / "etc/netplan").mkdir(parents=True)
    return tree


def zsn(capsys: pytest.CaptureFixture[str], root: Path, *argv: str) -> tuple[int, str, str]:
    try:
        code = cli.main(["--root", str(root), *argv])
    except SystemExit as exited:
        code = exited.code if isinstance(exited.code, int) else 1
    out, err = capsys.readouterr()
    assert raw_controls(out + err) == []
    return code, out, err


@pytest.mark.parametrize("dry_run", [True, False])
def test_a_netplan_file_linked_out_of_the_tree_is_never_edited(
        capsys: pytest.CaptureFixture[str], root: Path, outside: Path, dry_run: bool) -> None:
    needs_tools("netplan")
    (root / "etc/netplan/01-netcfg.yaml").symlink_to(outside / "01-netcfg.yaml")
    before = snapshot_of(outside, root)
    code, out, err = zsn(capsys, root, "link", "create", "bond", "bond0", "--mode",
                         "active-backup", "--members", "eth1,eth2", "--config-only",
                         *(["--dry-run"] if dry_run else []))
    assert code == 1 and out == ""
    assert "01-netcfg.yaml: a symbolic link to" in err and "not in the tree" in err
    assert SECRET not in out + err
    assert snapshot_of(outside, root) == before


def test_a_link_inside_the_tree_is_edited_through_with_its_backup(
        capsys: pytest.CaptureFixture[str], root: Path, outside: Path) -> None:
    needs_tools("netplan")
    (root / "srv").mkdir()
    (root / "srv/01-netcfg.yaml").write_text(NETPLAN)
    os.chmod(root / "srv/01-netcfg.yaml", 0o600)
    (root / "etc/netplan/01-netcfg.yaml").symlink_to("/srv/01-netcfg.yaml")
    args = ("link", "create", "bond", "bond0", "--mode", "active-backup", "--members",
            "eth1,eth2", "--config-only")
    before = snapshot_of(outside, root)
    code, out, err = zsn(capsys, root, *args, "--dry-run")
    assert code == 0, err
    assert "edit " in out and "bond0" in out
    assert snapshot_of(outside, root) == before  # a dry run writes nothing
    code, _, err = zsn(capsys, root, *args)
    assert code == 0, err
    assert (root / "etc/netplan/01-netcfg.yaml").is_symlink()
    assert "bond0" in (root / "srv/01-netcfg.yaml").read_text()
    assert (root / "srv/01-netcfg.yaml.zsn-bak").read_text() == NETPLAN
    assert snapshot_of(outside) == {k: v for k, v in before.items()
                                    if k.startswith(str(outside))}


def test_a_link_climbing_out_with_dot_dot_stops_at_the_root(
        capsys: pytest.CaptureFixture[str], root: Path, outside: Path) -> None:
    needs_tools("netplan")
    climb = "../" * 12 + str(outside.relative_to("/")) + "/01-netcfg.yaml"
    (root / "etc/netplan/01-netcfg.yaml").symlink_to(climb)
    code, out, err = zsn(capsys, root, "link", "create", "bridge", "br0", "--config-only",
                         "--dry-run")
    assert code == 1 and SECRET not in out + err
    assert "not in the tree" in err


def test_netplan_quotes_only_the_tree(capsys: pytest.CaptureFixture[str], root: Path,
                                      outside: Path) -> None:
    """netplan's error quotes the offending line: it may only be a line of the tree."""
    needs_tools("netplan")
    (root / "etc/netplan/01-netcfg.yaml").write_text(
        NETPLAN + "  bonds:\n    bond1:\n      interfaces: [eth9]\n")
    (root / "etc/netplan/02-shadow.yaml").symlink_to(outside / "shadow")
    code, out, err = zsn(capsys, root, "link", "create", "bridge", "br0", "--config-only",
                         "--dry-run")
    assert code == 1 and SECRET not in out + err and err.count("\n") == 1


def test_an_ifupdown_source_directory_linked_out_is_not_read(
        capsys: pytest.CaptureFixture[str], root: Path, outside: Path) -> None:
    (root / "etc/netplan").rmdir()
    (root / "etc/network").mkdir()
    (root / "etc/network/interfaces").write_text(
        "source-directory /etc/network/interfaces.d\nauto lo\niface lo inet loopback\n")
    (root / "etc/network/interfaces.d").symlink_to(outside / "interfaces.d")
    for argv in (["link", "lint", "--json"], ["--export", "links"]):
        code, out, err = zsn(capsys, root, *argv)
        assert "bondx" not in out + err and SECRET not in out + err
        assert code in (0, 1, 2, 3), err
