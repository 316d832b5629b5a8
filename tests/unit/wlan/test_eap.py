"""802.1X profiles: iwd's and wpa_supplicant's own files (tests/fixtures/corpus/eap,
SOURCES.md) read byte-exact and judged on their server check; what zsn writes for each
backend, read back; the request's refusals; no password in any plan."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.lab.pki import make_pki
from tests.unit.wlan.conftest import make_root, tree
from zsn.eap import iwd as eap_iwd
from zsn.eap.events import WRONG_CREDENTIALS, iwd_reason
from zsn.eap.iwd import Files
from zsn.eap.profile import EapProfile
from zsn.eap.request import EapSecret, make_request
from zsn.eap.supplicant import network_values, profile_of_values, wired_config
from zsn.errors import ParseError, ValidationError, ZsnError
from zsn.system import journal
from zsn.system.host import Host
from zsn.system.journal import JournalLine
from zsn.system.wpa_config import parse_wpa_config
from zsn.wlan import enterprise
from zsn.wlan.enterprise import netctl_profile
from zsn.wlan.lint import lint_snapshot
from zsn.wlan.live import read_wlan

CORPUS = Path(__file__).parents[2] / "fixtures" / "corpus" / "eap"
IWD_FILES = sorted((CORPUS / "iwd").glob("*.8021x"))
PASSWORD = "s3cret pass word"
FILES = Files("/etc/zsn/eap/x/ca.pem", "/etc/zsn/eap/x/client.pem",
              "/etc/zsn/eap/x/client.key")


@pytest.mark.parametrize("path", IWD_FILES, ids=lambda p: p.name)
def test_iwd_upstream_files_read_byte_exact(path: Path) -> None:
    text = path.read_text()
    settings = eap_iwd.parse_settings(text)
    assert settings.render() == text
    profile = eap_iwd.profile_of(settings)
    assert profile is not None and profile.method == settings.get("Security", "EAP-Method")
    # None of iwd's test profiles names the server: each would take any server that
    # the CA signed (or, without a CA, any server at all).
    assert profile.server_checked == (profile.method not in ("PEAP", "TTLS", "TLS"))


def test_iwd_profiles_say_what_they_check() -> None:
    def read(name: str) -> EapProfile | None:
        return eap_iwd.profile_of(eap_iwd.parse_settings((CORPUS / "iwd" / name).read_text()))

    assert read("testEAP__peap__ssidEAP-PEAP-MSCHAPv2.8021x") == EapProfile(
        "PEAP", "mschapv2-phase2@example.com", "MSCHAPV2", "/tmp/certs/cert-ca.pem", None)
    ttls = read("testEAP__ttls__ssidEAP-TTLS-Tunneled-PAP.8021x")
    assert ttls == EapProfile("TTLS", "ttls@example.com", "Tunneled-PAP", None, None)
    assert ttls.missing == "no CA certificate and no server name"
    embedded = read("testEAP__tls__ssidEAP-TLS-embedded.8021x")
    assert embedded is not None and embedded.ca_cert == "embed:cert_ca"


def test_iwd_settings_refuse_what_is_not_a_settings_file() -> None:
    with pytest.raises(ParseError, match="a setting before any"):
        eap_iwd.parse_settings("EAP-Method=PEAP\n")
    with pytest.raises(ParseError, match="not Key=Value"):
        eap_iwd.parse_settings("[Security]\nEAP-Method\n")
    assert eap_iwd.unescape(eap_iwd.escape(" a\\b\nc")) == " a\\b\nc"


def test_wpa_supplicant_documentation_blocks() -> None:
    found = {}
    for name in ("wpa2-eap-ccmp.conf", "ieee8021x.conf"):
        (block,) = parse_wpa_config((CORPUS / "wpa_supplicant" / name).read_text()).networks
        found[name] = profile_of_values(block.values)
    assert found == {
        "wpa2-eap-ccmp.conf": EapProfile("TLS", None, None, "/etc/cert/ca.pem", None),
        "ieee8021x.conf": EapProfile("PEAP", "user name", "MSCHAPV2", "/etc/cert/ca.pem",
                                     None)}
    doc = parse_wpa_config((CORPUS / "wpa_supplicant" / "wpa_supplicant.conf").read_text())
    profiles = [profile_of_values(block.values) for block in doc.networks]
    methods = sorted({p.method for p in profiles if p is not None})
    assert {"PEAP", "TTLS", "TLS", "FAST", "SIM", "LEAP"} <= set(methods)
    assert not [p for p in profiles if p is not None and p.needs_server_check
                and p.server_checked]  # the examples pin a CA, never a server name


def _root_with_upstream_profiles(tmp_path: Path) -> Path:
    root = make_root(tmp_path, netctl=False)
    iwd_dir = root / "var/lib/iwd"
    iwd_dir.mkdir(parents=True)
    for path in IWD_FILES:
        target = iwd_dir / path.name.rsplit("__", 1)[1]
        target.write_text(path.read_text())
        os.chmod(target, 0o600)
    keyfiles = root / "etc/NetworkManager/system-connections"
    keyfiles.mkdir(parents=True)
    (keyfiles / "Test_Wired_TLS_New").write_text(
        (CORPUS / "networkmanager" / "Test_Wired_TLS_New").read_text())
    os.chmod(keyfiles / "Test_Wired_TLS_New", 0o600)  # else NetworkManager leaves it out
    (root / "etc/wpa_supplicant").mkdir(parents=True)
    for name in ("wpa2-eap-ccmp.conf", "ieee8021x.conf"):
        (root / "etc/wpa_supplicant" / name).write_text(
            (CORPUS / "wpa_supplicant" / name).read_text())
        os.chmod(root / "etc/wpa_supplicant" / name, 0o600)
    return root


def test_lint_flags_every_profile_without_a_server_check(tmp_path: Path) -> None:
    root = _root_with_upstream_profiles(tmp_path)
    host = Host(root)
    findings = [f for f in lint_snapshot(host, read_wlan(host)) if f.id == "WLAN010"]
    subjects = sorted(f.subject or "" for f in findings)
    assert "/etc/wpa_supplicant/ieee8021x.conf" in subjects
    assert "/var/lib/iwd/ssidEAP-PEAP-MSCHAPv2.8021x" in subjects
    assert "/var/lib/iwd/ssidEAP-PWD.8021x" not in subjects  # EAP-pwd has no certificate
    nm = next(f for f in findings if "Test_Wired_TLS_New" in (f.subject or ""))
    assert "a wired connection (TLS)" in nm.message and "(no server name)" in nm.message
    peap = next(f for f in findings if f.subject == "/var/lib/iwd/ssidEAP-PEAP-MSCHAPv2.8021x")
    assert "(no server name)" in peap.message and "rogue access point" in peap.message
    assert "EAP-PEAP-ServerDomainMask" in peap.fix


def _request(method: str, **extra: object) -> object:
    secrets = {"password": EapSecret(PASSWORD)} if method != "tls" else {}
    certs = {"client_cert": "/c.pem", "client_key": "/c.key"} if method == "tls" else {}
    values: dict[str, object] = {"ca_cert": "/ca.pem", "server_domain": "radius.example.org",
                                 **secrets, **certs, **extra}
    return make_request(method, "alice@example.org", **values)  # type: ignore[arg-type]


def test_iwd_file_for_each_method_reads_back() -> None:
    peap = _request("peap", anonymous_identity="anonymous@example.org")
    text = eap_iwd.render(peap, FILES)  # type: ignore[arg-type]
    assert text == (
        "[Security]\nEAP-Method=PEAP\nEAP-Identity=anonymous@example.org\n"
        "EAP-PEAP-CACert=/etc/zsn/eap/x/ca.pem\n"
        "EAP-PEAP-ServerDomainMask=radius.example.org\nEAP-PEAP-Phase2-Method=MSCHAPV2\n"
        "EAP-PEAP-Phase2-Identity=alice@example.org\n"
        f"EAP-PEAP-Phase2-Password={PASSWORD}\n")
    ttls = eap_iwd.render(_request("ttls"), FILES, hidden=True)  # type: ignore[arg-type]
    assert "EAP-TTLS-Phase2-Method=Tunneled-PAP\n" in ttls and ttls.endswith(
        "\n[Settings]\nHidden=true\n")
    tls = eap_iwd.render(_request("tls"), FILES)  # type: ignore[arg-type]
    assert "EAP-TLS-ClientKey=/etc/zsn/eap/x/client.key\n" in tls
    assert eap_iwd.profile_of(eap_iwd.parse_settings(tls)) == EapProfile(
        "TLS", "alice@example.org", None, FILES.ca_cert, "radius.example.org")


def test_wired_config_and_netctl_profile_read_back(tmp_path: Path) -> None:
    request = _request("ttls", phase2="mschapv2")
    text = wired_config(request, FILES)  # type: ignore[arg-type]
    (block,) = parse_wpa_config(text).networks
    assert block.values["key_mgmt"] == "IEEE8021X" and block.values["eapol_flags"] == "0"
    assert parse_wpa_config(text).settings["ap_scan"] == "0"
    assert profile_of_values(block.values) == EapProfile(
        "TTLS", "alice@example.org", "MSCHAPV2", FILES.ca_cert, "radius.example.org")
    profile = netctl_profile("wlan0", b"corp net", False, request, FILES)  # type: ignore[arg-type]
    path = tmp_path / "profile"
    path.write_text(profile)
    # What netctl hands wpa_supplicant: the array's elements, as bash reads them.
    lines = subprocess.run(["bash", "-c", f'source "{path}"; printf "%s\\n" '
                            '"${WPAConfigSection[@]}"'], capture_output=True, text=True,
                           check=True).stdout.splitlines()
    values = network_values(request, FILES, wired=False)  # type: ignore[arg-type]
    assert lines == ['ssid="corp net"', *(f"{v.key}={v.text}" for v in values)]


@pytest.mark.parametrize("kwargs, field, words", [
    ({"ca_cert": None}, "ca_cert", "no server check (no CA certificate): anyone with a rogue"),
    ({"server_domain": None}, "server_domain", "no server check (no server name)"),
    ({"password": None}, "password", "PEAP needs the password"),
    ({"phase2": "pap"}, "phase2", "PEAP takes phase 2 mschapv2, gtc, not 'pap'"),
    ({"server_domain": "bad name"}, None, "is not a server name"),
    ({"ca_cert": "ca.pem"}, "ca_cert", "give the file's absolute path"),
    ({"anonymous_identity": "a'b"}, None, "contains a single quote"),
])
def test_refusals_name_their_field(kwargs: dict[str, object], field: str | None,
                                   words: str) -> None:
    with pytest.raises(ValidationError, match=words.replace("(", r"\(").replace(")", r"\)")
                       ) as caught:
        _request("peap", **kwargs)
    assert field is None or caught.value.field == field


def test_no_server_check_only_when_asked_and_eduroam() -> None:
    unchecked = make_request("ttls", "bob@example.org", password=EapSecret(PASSWORD),
                             no_server_check=True)
    assert not unchecked.server_checked and unchecked.phase2 == "pap"
    eduroam = make_request(None, "alice@uni.example", password=EapSecret(PASSWORD),
                           ca_cert="/ca.pem", server_domain="radius.uni.example",
                           eduroam=True)
    assert (eduroam.method, eduroam.phase2, eduroam.anonymous_identity) == (
        "peap", "mschapv2", "anonymous@uni.example")
    with pytest.raises(ValidationError, match="eduroam identities are user@realm"):
        make_request(None, "alice", password=EapSecret(PASSWORD), eduroam=True,
                     no_server_check=True)
    with pytest.raises(ValidationError, match="EAP-TLS needs the client certificate"):
        make_request("tls", "host1", ca_cert="/ca.pem", server_domain="r.example")
    assert PASSWORD not in repr(eduroam) and PASSWORD not in str(eduroam.password)


@pytest.fixture
def pki_files(tmp_path: Path) -> Path:
    pki = make_pki(["radius.example.org"])
    folder = tmp_path / "given"
    folder.mkdir()
    for name, text in (("ca.pem", pki.ca_cert), ("client.pem", pki.client_cert),
                       ("client.key", pki.client_key), ("pw", PASSWORD + "\n"),
                       ("not-a-cert.pem", "hello\n")):
        (folder / name).write_text(text)
    return folder


def test_cli_plans_hide_the_password_and_copy_the_certificates(
        tmp_path: Path, pki_files: Path, wifi: Callable[..., int],
        capsys: pytest.CaptureFixture[str]) -> None:
    root = make_root(tmp_path)
    before = tree(root)
    common = ["--ca-cert", str(pki_files / "ca.pem"), "--server-domain", "radius.example.org"]
    assert wifi(root, "connect", "corp", "--eap", "peap", "--identity", "alice@example.org",
                "--password-file", str(pki_files / "pw"), *common, "--dry-run") == 0
    out = capsys.readouterr().out
    assert PASSWORD not in out and "'password=(hidden)" in out
    assert "create " + str(root / "etc/zsn/eap/netctl-wlan0-corp/ca.pem") in out
    assert wifi(root, "connect", "corp", "--eap", "tls", "--identity", "host1",
                "--client-cert", str(pki_files / "client.pem"), "--client-key",
                str(pki_files / "client.key"), *common, "--dry-run") == 0
    out = capsys.readouterr().out
    assert "client.key (mode 0600)" in out and "PRIVATE KEY" not in out
    assert wifi(root, "connect", "corp", "--eap", "tls", "--identity", "host1",
                "--client-cert", str(pki_files / "not-a-cert.pem"), "--client-key",
                str(pki_files / "client.key"), *common) == 2
    assert "holds no PEM certificate" in capsys.readouterr().err
    assert wifi(root, "connect", "corp", "--eap", "ttls", "--identity", "bob@example.org",
                "--password-file", str(pki_files / "pw")) == 2
    err = capsys.readouterr().err
    assert "--ca-cert: no server check" in err and len(err.strip().splitlines()) == 1
    assert tree(root) == before  # nothing written by any of it


FIXTURES = Path(__file__).parents[2] / "fixtures" / "wlan"


def _iwd_log(name: str) -> list[str]:
    return (FIXTURES / f"iwd-log.eap-{name}.txt").read_text().splitlines()


def test_iwd_log_tells_a_refused_certificate_from_refused_credentials() -> None:
    """iwd's own lines from the kernel lab (SOURCES.md): one bad_certificate alert for a
    wrong CA and a name mismatch, which zsn does not tell apart; a close_notify, then
    eapFail, when the server refused the password."""
    assert iwd_reason(_iwd_log("wrong-password")) == WRONG_CREDENTIALS
    refused = iwd_reason(_iwd_log("wrong-ca"))
    assert refused is not None and "(iwd: bad_certificate)" in refused
    assert "iwd does not say which" in refused
    assert iwd_reason(_iwd_log("server-name-mismatch")) == refused
    assert iwd_reason([]) is None
    assert iwd_reason(["Error loading /var/lib/iwd//corp-tls.8021x"]) is None


def test_iwd_failure_reads_only_the_attempts_journal_lines(
        monkeypatch: pytest.MonkeyPatch) -> None:
    lines = _iwd_log("wrong-ca")
    entries = [JournalLine(1_000_000 * 100, 6, "iwd", line) for line in lines]
    later = [JournalLine(1_000_000 * 200, 6, "iwd", line)
             for line in _iwd_log("wrong-password")]
    calls: list[str] = []

    def synchronize(host: Host) -> None:
        calls.append("sync")

    def unit_lines(host: Host, unit: str, lines: int) -> list[JournalLine]:
        calls.append(unit)
        return entries + later
    monkeypatch.setattr(journal, "synchronize", synchronize)
    monkeypatch.setattr(journal, "unit_lines", unit_lines)
    assert enterprise.iwd_logged_reason(Host(), 150.0) == WRONG_CREDENTIALS
    assert calls == ["sync", "iwd.service"]  # journald has stored iwd's last lines first
    assert "bad_certificate" in (enterprise.iwd_logged_reason(Host(), 90.0) or "")

    def no_journald(host: Host) -> None:
        raise ZsnError("journalctl failed: no journald to sync")
    monkeypatch.setattr(journal, "synchronize", no_journald)
    assert "bad_certificate" in (enterprise.iwd_logged_reason(Host(), 90.0) or "")

    def unreadable(host: Host, unit: str, lines: int) -> list[JournalLine]:
        raise ZsnError("journalctl: no journal")
    monkeypatch.setattr(journal, "unit_lines", unreadable)
    assert enterprise.iwd_logged_reason(Host(), 90.0) is None
