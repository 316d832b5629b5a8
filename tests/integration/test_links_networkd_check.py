"""LINK010 from networkd itself: the installed systemd-networkd, run by `zsn link lint`
on a copy of the config in private namespaces, names the lines it ignores. The
configs are systemd's own test files, written for newer networkd versions than
Debian 12's 252."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

from tests.lab.networkd import require_networkd

CORPUS = Path(__file__).parents[1] / "fixtures" / "corpus" / "networkd" / "conf"


def lint(root: Path) -> list[dict[str, object]]:
    result = subprocess.run([sys.executable, "-m", "zsn", "--root", str(root), "link", "lint",
                             "--json"], capture_output=True, text=True, timeout=60, check=False)
    assert result.returncode in (0, 1), result.stderr
    findings: list[dict[str, object]] = json.loads(result.stdout)
    return findings


def test_networkd_names_the_keys_it_ignores(tmp_path: Path) -> None:
    require_networkd()
    folder = tmp_path / "etc/systemd/network"
    folder.mkdir(parents=True)
    for name in ("25-bond-property.netdev", "25-bridge.netdev"):
        shutil.copyfile(CORPUS / name, folder / name)
    found = [(f["path"], f["line"], f["message"]) for f in lint(tmp_path) if f["id"] == "LINK010"]
    assert found == [
        ("/etc/systemd/network/25-bond-property.netdev", 9, "systemd-networkd: Unknown key "
         "'ARPMissedMax' in section [Bond], ignoring."),
        ("/etc/systemd/network/25-bridge.netdev", 14, "systemd-networkd: Unknown key "
         "'IGMPVersion' in section [Bridge], ignoring.")]


def test_a_vlan_networkd_will_not_create_is_said_by_both(tmp_path: Path) -> None:
    require_networkd()
    folder = tmp_path / "etc/systemd/network"
    folder.mkdir(parents=True)
    shutil.copyfile(CORPUS / "21-vlan.netdev", folder / "21-vlan.netdev")
    found = {(f["id"], f["path"]) for f in lint(tmp_path)}
    assert ("LINK010", "/etc/systemd/network/21-vlan.netdev") in found
    assert ("LINK009", "/etc/systemd/network/21-vlan.netdev") in found
