from __future__ import annotations

import os
from pathlib import Path

from zsn.openvpn.connections import ConfigFile, Kind, config_path
from zsn.openvpn.lint import lint
from zsn.system.host import Host

SAMPLES = Path(__file__).parents[2] / "fixtures/openvpn/configs"


def put(host: Host, kind: Kind, name: str, text: str, mode: int = 0o600) -> ConfigFile:
    config = ConfigFile(kind, name, config_path(kind, name))
    path = host.path(config.path)
    path.write_text(text)
    os.chmod(path, mode)
    return config


def ids(host: Host) -> set[tuple[str, str]]:
    return {(f.id, (f.subject or "").split("@")[1]) for f in lint(host)}


def test_server_config_in_the_client_folder(root: Host) -> None:
    put(root, "client", "s", (SAMPLES / "server.conf").read_text())
    found = [f for f in lint(root) if f.id == "OVPN001"]
    assert found and "openvpn-server@s" in found[0].fix


def test_missing_and_world_readable_key_files(root: Host) -> None:
    put(root, "client", "c", "client\nca ca.crt\nkey c.key\nup /x\nscript-security 2\n")
    key = root.path("/etc/openvpn/client/c.key")
    key.write_text("k")
    os.chmod(key, 0o644)
    findings = {f.id: f for f in lint(root)}
    assert "ca.crt does not exist" in findings["OVPN002"].message
    assert findings["OVPN003"].fix == "chmod 600 /etc/openvpn/client/c.key"


def test_inline_key_in_a_world_readable_config(root: Host) -> None:
    put(root, "client", "c", "client\n<key>\nK\n</key>\n", mode=0o644)
    assert ("OVPN003", "c.service") in ids(root)


def test_dns_leak_warning_when_no_hook(root: Host) -> None:
    put(root, "client", "c", "client\nredirect-gateway def1\n")
    (finding,) = [f for f in lint(root) if f.id == "OVPN004"]
    assert finding.severity == "warning"


def test_script_security_too_low(root: Host) -> None:
    put(root, "client", "c", "client\nup /etc/openvpn/update-resolv-conf\n")
    (finding,) = [f for f in lint(root) if f.id == "OVPN005"]
    assert finding.fix == "add 'script-security 2'"


def test_unparseable_config_is_a_finding(root: Host) -> None:
    put(root, "client", "bad", "client\n<ca>\n")
    (finding,) = lint(root)
    assert finding.id == "OVPN000" and "never closed" in finding.message


def test_hooked_config_with_dropped_privileges(root: Host) -> None:
    put(root, "client", "c", "client\nscript-security 2\nup /etc/openvpn/zsn-resolved-hook\n"
        "down /etc/openvpn/zsn-resolved-hook\nuser nobody\n")
    assert {f.id for f in lint(root)} == {"OVPN006"}


def test_a_tls_server_without_dh_is_refused_by_openvpn_2_6(tmp_path: Path) -> None:
    """OpenVPN's sample server.conf of today names no dh (2.7 uses ECDH); Debian 12's
    2.6.14 refuses to start it: 'You must define DH file (--dh)'."""
    sample = (Path(__file__).parents[2] / "fixtures" / "corpus" / "openvpn" / "current"
              / "server.conf").read_text()
    host = Host(tmp_path)
    (tmp_path / "var/lib/dpkg").mkdir(parents=True)
    status = tmp_path / "var/lib/dpkg/status"
    status.write_text("Package: openvpn\nStatus: install ok installed\n"
                      "Version: 2.6.14-0+deb12u2\n")
    (tmp_path / "etc/openvpn/server").mkdir(parents=True)
    (tmp_path / "etc/openvpn/server/home.conf").write_text(sample)
    [finding] = [f for f in lint(host) if f.id == "OVPN011"]
    assert finding.severity == "error" and "OpenVPN 2.6.14 refuses" in finding.message
    status.write_text(status.read_text().replace("2.6.14-0+deb12u2", "2.7.0-1"))
    assert "OVPN011" not in {f.id for f in lint(host)}
