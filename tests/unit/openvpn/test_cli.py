"""`zsn vpn ...` under a --root tree: names, plans, dry runs, import and lint.

Unit control against a real systemd is in tests/integration/test_openvpn_systemd.py.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from zsn.cli import main
from zsn.system.host import Host

SAMPLES = Path(__file__).parents[2] / "fixtures/openvpn/configs"


def vpn(root: Host, *args: str) -> int:
    return main(["--root", str(root.root), "vpn", *args])


def test_hook_install_then_remove_round_trips_the_config(
        root: Host, capsys: pytest.CaptureFixture[str]) -> None:
    config = root.path("/etc/openvpn/client/office.conf")
    original = (SAMPLES / "client.conf").read_text()
    config.write_text(original)
    assert vpn(root, "hook", "install", "office", "--dry-run") == 0
    assert "+up /etc/openvpn/zsn-resolved-hook" in capsys.readouterr().out
    assert config.read_text() == original
    assert vpn(root, "hook", "install", "office", "--route-all-dns") == 0
    assert "up \"/etc/openvpn/zsn-resolved-hook --route-all-dns\"\n" in config.read_text()
    assert root.path("/etc/openvpn/zsn-resolved-hook").stat().st_mode & 0o777 == 0o755
    capsys.readouterr()
    assert vpn(root, "hook", "remove", "client/office") == 0
    # script-security stays (other scripts may need it); everything else is as it was.
    assert config.read_text() == original + "script-security 2\n"
    assert "note: takes effect when openvpn-client@office.service restarts" in \
        capsys.readouterr().err
    assert vpn(root, "hook", "remove", "office", "--dry-run") == 0
    assert "does not run zsn's DNS hook" in capsys.readouterr().out


def test_names_resolve_by_kind_and_unit_and_ambiguity_is_refused(
        root: Host, capsys: pytest.CaptureFixture[str]) -> None:
    root.path("/etc/openvpn/client/home.conf").write_text("client\nremote a.example\n")
    root.path("/etc/openvpn/server/home.conf").write_text("server 10.8.0.0 255.255.255.0\n")
    assert vpn(root, "management", "home") == 2
    assert capsys.readouterr().err == ("zsn vpn: invalid: 'home' names 2 connections; say "
                                       "which: client/home, server/home\n")
    assert vpn(root, "management", "server/home", "--dry-run") == 0
    assert "+management /run/openvpn-server/home.sock unix" in capsys.readouterr().out
    assert vpn(root, "management", "openvpn-client@home.service") == 0
    assert root.path("/etc/openvpn/client/home.conf").read_text().endswith(
        "management /run/openvpn-client/home.sock unix\n")
    assert vpn(root, "start", "bogus/home") == 2
    assert "'bogus' is not a kind of connection" in capsys.readouterr().err


def test_start_refuses_a_config_that_does_not_parse(
        root: Host, capsys: pytest.CaptureFixture[str]) -> None:
    root.path("/etc/openvpn/client/broken.conf").write_text("client\n<ca>\nxx\n")
    assert vpn(root, "start", "broken", "--dry-run") == 1
    assert "<ca> block is never closed" in capsys.readouterr().err


def test_import_takes_the_file_name_and_refuses_a_bad_one(
        root: Host, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    profile = tmp_path / "Office VPN.ovpn"
    profile.write_bytes((SAMPLES / "client.conf").read_bytes())
    assert vpn(root, "import", str(profile)) == 2
    assert "'Office VPN' is not a usable connection name" in capsys.readouterr().err
    assert vpn(root, "import", str(profile), "--name", "office") == 0
    target = root.path("/etc/openvpn/client/office.conf")
    assert target.read_bytes() == profile.read_bytes()
    assert target.stat().st_mode & 0o777 == 0o600
    assert "copy it to /etc/openvpn/client/ as well" in capsys.readouterr().err


def test_lint_json_and_exit_status(root: Host, capsys: pytest.CaptureFixture[str]) -> None:
    root.path("/etc/openvpn/client/a.conf").write_text("client\nremote a.example\nca ca.crt\n")
    assert vpn(root, "lint", "--json") == 1  # OVPN002 is an error
    findings = json.loads(capsys.readouterr().out)
    assert {f["id"] for f in findings} == {"OVPN002", "OVPN004"}
    assert all(f["unit"] == "openvpn-client@a.service" for f in findings)
    root.path("/etc/openvpn/client/ca.crt").write_text("x")
    assert vpn(root, "lint") == 0
    assert "zsn vpn hook install client/a" in capsys.readouterr().out
