"""``zsn wifi`` on a --root tree: bad input refused with its reason and nothing changed;
netctl profiles written, enabled and forgotten offline as ``netctl`` would."""

from __future__ import annotations

import json
import os
import stat
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.unit.wlan.conftest import make_root, tree
from zsn.system.host import Host
from zsn.wlan import netctl
from zsn.wlan.secrets import derive_psk

PASSPHRASE = "correct horse battery"


@pytest.fixture
def root(tmp_path: Path) -> Path:
    return make_root(tmp_path)


def _secret_file(tmp_path: Path) -> Path:
    path = tmp_path / "passphrase"
    path.write_text(PASSPHRASE + "\n")
    return path


@pytest.mark.parametrize("args, reason", [
    (["connect", "x" * 33, "--hidden"], "is 33 bytes long; 802.11 allows at most 32"),
    (["connect", "home", "--hidden", "--passphrase-file", "SHORT"],
     "has 7 characters; WPA needs 8 to 63"),
    (["connect", "home", "--hidden", "--passphrase-file", "LONG"],
     "64 characters but not all hex digits"),
    (["connect", 'say "hi"', "--hidden"], "contains a double quote: netctl profiles are bash"),
    (["connect", "it's", "--hidden"], "contains a single quote"),
    (["connect", "two\nlines", "--hidden"], "contains a line break"),
    (["connect", "home", "--iface", "eth0"], "eth0 is not a wireless interface"),
    (["connect", "home", "--iface", "wlan9"], "no interface 'wlan9'"),
    (["connect", "home"], "home is not in range of wlan0"),
    (["forget", "home"], "knows no network home"),
])
def test_bad_input_is_refused_and_changes_nothing(
        args: list[str], reason: str, root: Path, tmp_path: Path, wifi: Callable[..., int],
        capsys: pytest.CaptureFixture[str]) -> None:
    files = {"SHORT": tmp_path / "short", "LONG": tmp_path / "long"}
    files["SHORT"].write_text("7 chars\n")
    files["LONG"].write_text("z" * 64 + "\n")
    args = [str(files[a]) if a in files else a for a in args]
    before = tree(root)
    assert wifi(root, *args) == 2
    err = capsys.readouterr().err
    assert reason in err and err.count("\n") == 1, err
    assert "7 chars" not in err and "z" * 20 not in err
    assert tree(root) == before


def test_no_daemon_says_how_to_start_one(tmp_path: Path, wifi: Callable[..., int],
                                         capsys: pytest.CaptureFixture[str]) -> None:
    root = make_root(tmp_path, netctl=False)
    (root / "usr/libexec").mkdir(parents=True)
    (root / "usr/libexec/iwd").write_text("")
    assert wifi(root, "connect", "home", "--hidden") == 2
    assert "no Wi-Fi daemon manages wlan0: start iwd ('systemctl enable --now iwd')" in \
        capsys.readouterr().err
    os.unlink(root / "usr/libexec/iwd")
    (root / "usr/sbin").mkdir(parents=True)
    (root / "usr/sbin/wpa_supplicant").write_text("")
    assert wifi(root, "disconnect") == 2
    assert "systemctl enable --now wpa_supplicant@wlan0" in capsys.readouterr().err


def test_connect_plan_hides_the_key_then_undoes_the_profile_when_netctl_cannot_start(
        root: Path, tmp_path: Path, wifi: Callable[..., int],
        capsys: pytest.CaptureFixture[str]) -> None:
    secret = _secret_file(tmp_path)
    psk = derive_psk(PASSPHRASE, b"home wpa2")
    assert wifi(root, "connect", "home wpa2", "--hidden", "--passphrase-file", str(secret),
                "--dry-run") == 0
    out = capsys.readouterr().out
    assert "create " + str(root / "etc/netctl/wlan0-home wpa2") + " (mode 0600)" in out
    assert "+Key=(hidden)" in out and "+ESSID='home wpa2'" in out and "+Hidden=yes" in out
    assert PASSPHRASE not in out and psk not in out
    assert not (root / "etc/netctl/wlan0-home wpa2").exists()
    # No systemd under this root: the profile is written, starting it fails, the
    # profile is taken back.
    assert wifi(root, "connect", "home wpa2", "--hidden", "--passphrase-file",
                str(secret)) == 1
    err = capsys.readouterr().err
    assert "netctl needs systemd to start netctl@wlan0\\x2dhome\\x20wpa2.service" in err
    assert "undone: create" in err and PASSPHRASE not in err and psk not in err
    assert not (root / "etc/netctl/wlan0-home wpa2").exists()


def _profile(root: Path, name: str, text: str, mode: int = 0o600) -> Path:
    path = root / "etc/netctl" / name
    path.write_text(text)
    os.chmod(path, mode)
    return path


HOME = ("Description='Automatically generated profile by wifi-menu'\nInterface=wlan0\n"
        "Connection=wireless\nSecurity=wpa\nESSID=home-wpa2\nIP=dhcp\n"
        f"Key=\\\"{derive_psk(PASSPHRASE, b'home-wpa2')}\n")


def test_autoconnect_enables_the_profile_as_netctl_enable_does(
        root: Path, wifi: Callable[..., int], capsys: pytest.CaptureFixture[str]) -> None:
    _profile(root, "wlan0-home-wpa2", HOME)
    unit = "netctl@wlan0\\x2dhome\\x2dwpa2.service"
    link = root / "etc/systemd/system/multi-user.target.wants" / unit
    assert wifi(root, "autoconnect", "home-wpa2", "on") == 0
    assert link.is_symlink() and os.readlink(link) == netctl.TEMPLATE_UNIT
    dropin = root / "etc/systemd/system" / f"{unit}.d/profile.conf"
    assert dropin.read_text() == (
        "[Unit]\nDescription=Automatically generated profile by wifi-menu\n"
        "BindsTo=sys-subsystem-net-devices-wlan0.device\n"
        "After=sys-subsystem-net-devices-wlan0.device\n")
    assert "systemd reads the change when it starts" in capsys.readouterr().err
    assert wifi(root, "list", "--json") == 0
    (profile,) = json.loads(capsys.readouterr().out)["profiles"]
    assert profile["autoconnect"] and profile["at_boot"] and profile["backend"] == "netctl"
    assert wifi(root, "autoconnect", "home-wpa2", "off") == 0
    assert not link.exists() and not link.is_symlink() and not dropin.exists()
    assert dropin.with_name("profile.conf.zsn-bak").exists()


def test_forget_keeps_the_profile_as_a_backup(root: Path, wifi: Callable[..., int]) -> None:
    path = _profile(root, "wlan0-home-wpa2", HOME)
    assert wifi(root, "forget", "home-wpa2", "--dry-run") == 0
    assert path.exists()
    assert wifi(root, "forget", "home-wpa2") == 0
    assert not path.exists()
    backup = path.with_name("wlan0-home-wpa2.zsn-bak")
    assert backup.read_text() == HOME and stat.S_IMODE(backup.stat().st_mode) == 0o600


def test_qr_of_a_netctl_profile_holding_only_the_psk(
        root: Path, wifi: Callable[..., int], capsys: pytest.CaptureFixture[str],
        tmp_path: Path) -> None:
    from tests.qr import decode_half_blocks

    _profile(root, "wlan0-home-wpa2", HOME)
    assert wifi(root, "qr", "home-wpa2") == 0
    captured = capsys.readouterr()
    psk = derive_psk(PASSPHRASE, b"home-wpa2")
    lines = [line.removeprefix("\x1b[38;5;16;48;5;231m").removesuffix("\x1b[0m")
             for line in captured.out.splitlines()]
    assert decode_half_blocks(lines, tmp_path).strip() == f"WIFI:T:WPA;S:home-wpa2;P:{psk};;"
    assert psk not in captured.err and "only the PSK is stored" in captured.err


def test_iwd_plans_say_when_iwd_sets_no_addresses(tmp_path: Path) -> None:
    from zsn.wlan.actions import iwd_configures_addresses

    root = make_root(tmp_path)
    assert not iwd_configures_addresses(Host(root))
    (root / "etc/iwd").mkdir(parents=True)
    (root / "etc/iwd/main.conf").write_text("[General]\nEnableNetworkConfiguration=true\n")
    assert iwd_configures_addresses(Host(root))
