"""WLAN lint rules and the ``wlan`` export section, on --root trees and snapshots; no
secret leaves unless asked for."""

from __future__ import annotations

import json
import os
import stat
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.schema import check_export
from tests.unit.wlan.conftest import fixture_text, make_root
from zsn import cli
from zsn.lint import Finding
from zsn.system.host import Host
from zsn.wlan.lint import RULES, lint, lint_snapshot
from zsn.wlan.model import KnownNetwork, Link, Rfkill, ScanEntry, WlanInterface, WlanSnapshot
from zsn.wlan.secrets import derive_psk
from zsn.wlan.wifiqr import WifiCode, escape, wifi_code

PASSPHRASE = "hidden treasure 42"


def _profile(root: Path, name: str, text: str, mode: int = 0o600) -> Path:
    path = root / "etc/netctl" / name
    path.write_text(text)
    os.chmod(path, mode)
    return path


def _ids(findings: list[Finding]) -> list[str]:
    return sorted(f.id for f in findings)


def test_profile_findings(tmp_path: Path) -> None:
    root = make_root(tmp_path, soft_blocked=True)
    readable = _profile(root, "wlan0-cafe", "Interface=wlan0\nConnection=wireless\n"
                        f"Security=wpa\nESSID=cafe\nKey='{PASSPHRASE}'\n", mode=0o644)
    _profile(root, "eth0-wifi", "Interface=eth0\nConnection=wireless\nSecurity=none\n"
             "ESSID=open-one\n")
    _profile(root, "broken", "Interface=wlan0\nESSID=$(whoami)\n")
    findings = lint(Host(root))
    assert _ids(findings) == ["WLAN000", "WLAN002", "WLAN006", "WLAN009"]
    by_id = {f.id: f for f in findings}
    assert "expansion" in by_id["WLAN000"].message and by_id["WLAN000"].line == 2
    assert by_id["WLAN002"].fix == "chmod 600 /etc/netctl/wlan0-cafe"
    assert by_id["WLAN006"].fix == "rfkill unblock wifi"
    assert "Interface=eth0 is not wireless" in by_id["WLAN009"].message
    assert by_id["WLAN009"].line == 1
    plan_builder = by_id["WLAN002"].fix_plan
    assert plan_builder is not None
    plan_builder().apply()
    assert stat.S_IMODE(readable.stat().st_mode) == 0o600
    for finding in findings:
        assert PASSPHRASE not in finding.describe()


def test_wpa_supplicant_config_findings(tmp_path: Path) -> None:
    root = make_root(tmp_path, netctl=False)
    config = root / "etc/wpa_supplicant/wpa_supplicant-wlan0.conf"
    config.parent.mkdir(parents=True)
    # The captured config, with the psk of network 0 as a passphrase (as wpa_cli
    # set_network psk '"..."' stores it) and readable by everyone.
    text = fixture_text("wpa_supplicant.conf.saved.txt").replace(
        "\tpsk=<removed>\n\tmesh_fwding=1\n}\n\nnetwork={\n\tssid=\"office-sae\"",
        f"\tpsk=\"{PASSPHRASE}\"\n\tmesh_fwding=1\n}}\n\nnetwork={{\n\tssid=\"office-sae\"", 1)
    config.write_text(text)
    os.chmod(config, 0o644)
    findings = lint(Host(root))
    assert _ids(findings) == ["WLAN002", "WLAN003"]
    (plaintext,) = [f for f in findings if f.id == "WLAN003"]
    assert "home-wpa2" in plaintext.message and plaintext.line == 6
    assert "wpa_passphrase home-wpa2" in plaintext.fix
    assert all(PASSPHRASE not in f.describe() for f in findings)


def test_snapshot_findings() -> None:
    snapshot = WlanSnapshot(
        interfaces=(
            WlanInterface("wlan0", "iwd", also_managed_by=("wpa_supplicant",)),
            WlanInterface("wlan1", "wpa_supplicant", saves_config=False,
                          config_path="/etc/wpa_supplicant/wpa_supplicant-wlan1.conf",
                          rfkill=Rfkill(soft=False, hard=True), phy="phy1"),
        ),
        networks=(
            KnownNetwork(b"cafe-open", "wpa_supplicant", "2", "open", True, interface="wlan1"),
            KnownNetwork(b"hidden-wpa2", "iwd", "/x", "WPA2/WPA3", True, hidden=True),
            KnownNetwork(b"old", "wpa_supplicant", "3", "WEP", False, interface="wlan1"),
        ),
        taken_at=0.0)
    findings = lint_snapshot(Host(Path("/nonexistent-root")), snapshot)
    assert _ids(findings) == ["WLAN001", "WLAN004", "WLAN005", "WLAN006", "WLAN007",
                              "WLAN008"]
    by_id = {f.id: f for f in findings}
    assert by_id["WLAN001"].fix.startswith("keep one: systemctl disable --now "
                                           "wpa_supplicant@wlan0")
    assert by_id["WLAN004"].fix == "zsn wifi autoconnect cafe-open off"
    assert "update_config=1" in by_id["WLAN005"].fix
    assert "hardware switch" in by_id["WLAN006"].message
    assert set(RULES) >= {f.id for f in findings}


def test_export_has_no_secret_unless_asked(tmp_path: Path, wifi: Callable[..., int],
                                           capsys: pytest.CaptureFixture[str]) -> None:
    root = make_root(tmp_path)
    _profile(root, "wlan0-office", "Interface=wlan0\nConnection=wireless\nSecurity=wpa\n"
             f"ESSID=office-sae\nKey='{PASSPHRASE}'\n")
    psk = derive_psk("correct horse battery", b"home-wpa2")
    _profile(root, "wlan0-home", f"Interface=wlan0\nConnection=wireless\nSecurity=wpa\n"
             f"ESSID=home-wpa2\nKey=\\\"{psk}\nHidden=yes\n")
    assert cli.main(["--root", str(root), "--export", "wlan"]) == 0
    out = capsys.readouterr().out
    assert PASSPHRASE not in out and psk not in out
    check_export(json.loads(out))
    data = json.loads(out)["wlan"]
    (wlan0,) = data["interfaces"]
    assert (wlan0["name"], wlan0["backend"], wlan0["connected"], wlan0["mac"],
            wlan0["rfkill"]) == ("wlan0", "netctl", False, "02:00:00:00:00:00",
                                 {"soft": False, "hard": False})
    assert [(p["ssid"], p["security"], p["hidden"], p["autoconnect"]) for p in
            data["profiles"]] == [("home-wpa2", "WPA2", True, False),
                                  ("office-sae", "WPA2/WPA3", False, False)]
    assert cli.main(["--root", str(root), "--export", "wlan", "--include-secrets"]) == 0
    with_secrets = json.loads(capsys.readouterr().out)
    check_export(with_secrets)
    secrets = {p["ssid"]: p["secret"] for p in with_secrets["wlan"]["profiles"]}
    assert secrets == {"home-wpa2": {"psk": psk}, "office-sae": {"passphrase": PASSPHRASE}}
    assert cli.main(["--root", str(root), "--export", "wlan", "--format", "prometheus"]) == 0
    metrics = capsys.readouterr().out
    assert 'zsn_wlan_interface_info{interface="wlan0",backend="netctl",state="disconnected"} 1' \
        in metrics
    assert 'zsn_wlan_profiles{backend="netctl"} 2' in metrics
    assert PASSPHRASE not in metrics and psk not in metrics


def test_prometheus_signal_and_bitrate_of_a_connected_link() -> None:
    from zsn.exporter.prometheus import render
    from zsn.wlan.export import interface_to_dict, prometheus

    link = Link("COMPLETED", True, b"home-wpa2", "02:00:00:00:01:00", -30, 2412, 36000)
    scan = (ScanEntry(b"home-wpa2", "02:00:00:00:01:00", -30, 2412, "WPA2", True, True),)
    data = {"interfaces": [interface_to_dict(WlanInterface("wlan0", "wpa_supplicant", link,
                                                           scan=scan))]}
    text = render(prometheus(data))
    labels = 'interface="wlan0",ssid="home-wpa2",bssid="02:00:00:00:01:00"'
    assert f"zsn_wlan_signal_dbm{{{labels}}} -30" in text
    assert f"zsn_wlan_bitrate_bits_per_second{{{labels}}} 36000000" in text
    assert f"zsn_wlan_frequency_hertz{{{labels}}} 2412000000" in text
    assert 'zsn_wlan_connected{interface="wlan0"} 1' in text


def test_prometheus_text_parses() -> None:
    from prometheus_client.parser import text_string_to_metric_families

    from zsn.exporter.prometheus import render
    from zsn.wlan.export import interface_to_dict, prometheus

    link = Link("connected", True, b'we"ird\\name', None, -55.5, 5180, 866700)
    text = render(prometheus({"interfaces": [interface_to_dict(
        WlanInterface("wlan0", "iwd", link))], "profiles": [], "findings": []}))
    families = {f.name: f for f in text_string_to_metric_families(text)}
    (sample,) = families["zsn_wlan_signal_dbm"].samples
    assert sample.value == -55.5 and sample.labels["ssid"] == 'we"ird\\\\name'


@pytest.mark.parametrize("code, payload", [
    (WifiCode(b"home-wpa2", "WPA2", "correct horse battery", False),
     "WIFI:T:WPA;S:home-wpa2;P:correct horse battery;;"),
    (WifiCode(b'a;b,c:d"e\\f', "WPA2", 'p;a,s:s"\\', True),
     'WIFI:T:WPA;S:a\\;b\\,c\\:d\\"e\\\\f;P:p\\;a\\,s\\:s\\"\\\\;H:true;;'),
    (WifiCode(b"cafe-open", "open", None, False), "WIFI:T:nopass;S:cafe-open;;"),
    (WifiCode(b"office-sae", "WPA3", "sesame street 99", False),
     "WIFI:T:SAE;S:office-sae;P:sesame street 99;;"),
])
def test_wifi_payloads_escape_what_zxing_requires(code: WifiCode, payload: str) -> None:
    assert code.payload() == payload
    assert code.secret is None or code.secret not in repr(code)


def test_escape() -> None:
    assert escape(r'\;,:"') == r'\\\;\,\:\"'


def test_wifi_code_from_a_captured_iwd_profile(tmp_path: Path) -> None:
    root = tmp_path / "root"
    (root / "var/lib/iwd").mkdir(parents=True)
    (root / "var/lib/iwd/hidden-wpa2.psk").write_text(fixture_text("iwd-hidden-wpa2.psk.txt"))
    network = KnownNetwork(b"hidden-wpa2", "iwd", "/net/connman/iwd/68696464656e2d77706132_psk",
                           "WPA2/WPA3", True, hidden=True,
                           path="/var/lib/iwd/hidden-wpa2.psk")
    code = wifi_code(Host(root), network)
    # The capture replaced the secret by "<removed>": that is what the file holds.
    assert code.payload() == "WIFI:T:WPA;S:hidden-wpa2;P:<removed>;H:true;;"
    assert not code.secret_is_psk


def test_wifi_qr_decodes_with_zbar(tmp_path: Path) -> None:
    from tests.qr import decode_half_blocks
    from zsn.qr import make_qr

    code = WifiCode(b"cafe;x,y:z", "WPA2", "pa:ss\"word\\", True)
    drawn = make_qr(code.payload(), columns=80, lines=40)
    assert drawn.fits
    assert decode_half_blocks(drawn.half_blocks(), tmp_path).strip() == code.payload()
