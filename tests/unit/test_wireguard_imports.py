"""``zsn wg import`` on data each tool wrote itself (fixtures/wireguard/imports/SOURCES.md):
PiVPN's install and client scripts, wg-easy v14 run as its UI drives it, a wg-easy
v15 database made by its migrations, a folder written by wg-quick save."""

from __future__ import annotations

import json
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from zsn.system.host import Host
from zsn.wireguard import lint
from zsn.wireguard.config import parse
from zsn.wireguard.expiry import expiries
from zsn.wireguard.keys import public_key_from_private

IMPORTS = Path(__file__).parent.parent / "fixtures" / "wireguard" / "imports"
REPO = Path(__file__).resolve().parents[2]


def zsn(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "zsn", "--root", str(root), *args],
                          capture_output=True, text=True, timeout=60, check=False, cwd=REPO)


def tree(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*"))
            if p.is_file()}


def keys_of(config_text: str) -> dict[str | None, str]:
    return {peer.name: peer.get("PublicKey") or "" for peer in parse(config_text).all_peers}


def put(root: Path, source: Path) -> str:
    """`source` copied under `root` (a PATH is looked up under --root); its path there."""
    target = root / "srv/import" / source.name
    if source.is_dir():
        shutil.copytree(source, target)
    else:
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(source, target)
    return "/" + str(target.relative_to(root))


def client_key(text: str) -> str:
    config = parse(text)
    assert config.interface is not None
    return public_key_from_private(config.interface.get("PrivateKey") or "")


# -- PiVPN ------------------------------------------------------------------------------


@pytest.mark.parametrize("install", ["v4.6-ipv6", "ci-ipv4"])
def test_a_pivpn_install_is_taken_over_where_it_is(tmp_path: Path, install: str) -> None:
    root = tmp_path / "root"
    shutil.copytree(IMPORTS / "pivpn" / install, root)
    server_before = (root / "etc/wireguard/wg0.conf").read_bytes()
    dry = zsn(root, "wg", "import", "pivpn", "--dry-run")
    assert dry.returncode == 0, dry.stderr
    assert "PrivateKey = (hidden)" in dry.stdout and "PrivateKey = " not in \
        dry.stdout.replace("PrivateKey = (hidden)", "")
    result = zsn(root, "wg", "import", "pivpn")
    assert result.returncode == 0, result.stderr
    # PiVPN's server config is zsn's as it is: not a byte changed.
    assert (root / "etc/wireguard/wg0.conf").read_bytes() == server_before
    server = parse(server_before.decode())
    names = {peer.name: peer for peer in server.all_peers}
    assert set(names) == {"alice-phone", "bob.laptop", "carol@tablet"}
    assert names["bob.laptop"].disabled and not names["alice-phone"].disabled
    # Each client config PiVPN made is where zsn shows it, unchanged, its key the peer's.
    for name, peer in names.items():
        copied = (root / f"etc/wireguard/clients/wg0/{name}.conf").read_text()
        assert copied == (root / f"etc/wireguard/configs/{name}.conf").read_text()
        assert client_key(copied) == peer.get("PublicKey")
    shown = zsn(root, "peer", "show", "wg0", "alice-phone")
    assert shown.returncode == 0 and "Endpoint = pivpn." in shown.stdout
    host = json.loads((root / "etc/zsn/wireguard.json").read_text())["wg0"]["endpoint_host"]
    assert host in ("pivpn.example.com", "pivpn.test")
    # Importing again finds everything in place.
    again = zsn(root, "wg", "import", "pivpn")
    assert again.returncode == 0 and "nothing to write" in again.stderr


def test_an_openvpn_pivpn_or_a_missing_one_is_refused(tmp_path: Path) -> None:
    assert zsn(tmp_path, "wg", "import", "pivpn").returncode == 2
    folder = tmp_path / "etc/pivpn/wireguard"
    folder.mkdir(parents=True)
    (folder / "setupVars.conf").write_text("VPN=openvpn\npivpnDEV=tun0\n")
    result = zsn(tmp_path, "wg", "import", "pivpn")
    assert result.returncode == 2 and "openvpn install, not WireGuard" in result.stderr


# -- wg-easy ----------------------------------------------------------------------------


def test_wg_easy_v14_needs_its_endpoint_then_keeps_every_key_and_address(
        tmp_path: Path) -> None:
    source = IMPORTS / "wg-easy" / "v14.0.0"
    data = json.loads((source / "wg0.json").read_text())
    folder = put(tmp_path, source)
    refused = zsn(tmp_path, "wg", "import", "wg-easy", f"{folder}/wg0.json")
    assert refused.returncode == 2 and "--endpoint" in refused.stderr
    assert not (tmp_path / "etc").exists()
    result = zsn(tmp_path, "wg", "import", "wg-easy", folder, "--env", f"{folder}/environment")
    assert result.returncode == 0, result.stderr
    config = parse((tmp_path / "etc/wireguard/wg0.conf").read_text())
    assert config.interface is not None
    assert public_key_from_private(config.interface.get("PrivateKey") or "") == \
        data["server"]["publicKey"]
    assert config.interface.get("Address") == "10.8.0.1/24"
    peers = {peer.get("PublicKey"): peer for peer in config.all_peers}
    for client in data["clients"].values():
        peer = peers[client["publicKey"]]
        assert peer.get("PresharedKey") == client["preSharedKey"]
        assert peer.get_all("AllowedIPs") == [f"{client['address']}/32"]
        assert peer.disabled is (not client["enabled"])
    names = {peer.name for peer in config.all_peers}
    assert names == {"alice-phone", "Bob-s-iPad", "carol"}  # "alice phone", "Bob's iPad"
    assert "client \"Bob's iPad\" is named 'Bob-s-iPad'" in result.stderr
    # The client config is the one wg-easy handed out: the device needs no new one.
    alice = (tmp_path / "etc/wireguard/clients/wg0/alice-phone.conf").read_text()
    assert "Endpoint = vpn.example.com:51820" in alice and "DNS = 10.8.0.1" in alice
    assert "PersistentKeepalive = 25" in alice
    assert lint.lint(Host(tmp_path)) == [] or all(
        f.severity != "error" for f in lint.lint(Host(tmp_path)))


def test_wg_easy_v15_keeps_ipv6_expiry_and_disabled_clients(tmp_path: Path) -> None:
    source = IMPORTS / "wg-easy" / "v15" / "wg-easy.db"
    before = source.read_bytes()
    result = zsn(tmp_path, "wg", "import", "wg-easy", put(tmp_path, source))
    assert result.returncode == 0, result.stderr
    assert source.read_bytes() == before  # read from a copy
    text = (tmp_path / "etc/wireguard/wg0.conf").read_text()
    config = parse(text)
    with sqlite3.connect(source) as db:
        rows = db.execute("SELECT name, public_key, pre_shared_key, ipv4_address, "
                          "ipv6_address, enabled FROM clients_table").fetchall()
        server_key = db.execute("SELECT public_key FROM interfaces_table").fetchone()[0]
    assert config.interface is not None
    assert public_key_from_private(config.interface.get("PrivateKey") or "") == server_key
    assert config.interface.get("Address") == "10.8.0.1/24, fdcc:ad94:bacf:61a4::cafe:1/112"
    peers = {peer.get("PublicKey"): peer for peer in config.all_peers}
    for _name, key, psk, v4, v6, enabled in rows:
        assert peers[key].get("PresharedKey") == psk
        assert peers[key].get_all("AllowedIPs") == [f"{v4}/32", f"{v6}/128"]
        assert peers[key].disabled is (not enabled)
    [carol] = [peer for peer in config.all_peers if peer.name == "carol"]
    assert carol.disabled
    assert "#[disabled] # Expires = 2030-06-30T00:00:00Z" in text
    assert expiries(parse(text.replace("#[disabled] ", ""))) != {}
    assert "used only if it ran AmneziaWG" in result.stderr  # its migrations' defaults
    bob = (tmp_path / "etc/wireguard/clients/wg0/Bob-s-iPad.conf").read_text()
    assert "Endpoint = vpn.example.com:51820" in bob
    assert "Address = 10.8.0.3/24, fdcc:ad94:bacf:61a4::cafe:3/112" in bob


def test_a_wg_easy_database_from_a_newer_wg_easy_is_refused(tmp_path: Path) -> None:
    copy = tmp_path / "srv/wg-easy.db"
    copy.parent.mkdir()
    shutil.copyfile(IMPORTS / "wg-easy" / "v15" / "wg-easy.db", copy)
    with sqlite3.connect(copy) as db:
        db.execute("INSERT INTO __drizzle_migrations (hash, created_at) VALUES ('f00', 1)")
    result = zsn(tmp_path, "wg", "import", "wg-easy", "/srv/wg-easy.db")
    assert result.returncode == 2 and "newer than zsn knows" in result.stderr
    with sqlite3.connect(copy) as db:
        db.execute("DELETE FROM __drizzle_migrations WHERE hash = 'f00'")
        db.execute("UPDATE interfaces_table SET private_key = '---default---'")
    result = zsn(tmp_path, "wg", "import", "wg-easy", "/srv/wg-easy.db")
    assert result.returncode == 2 and "setup never finished" in result.stderr
    assert not (tmp_path / "etc/wireguard").exists()


# -- plain wg-quick ----------------------------------------------------------------------


def test_a_wg_quick_folder_moves_in_with_peers_named_after_their_client_configs(
        tmp_path: Path) -> None:
    source = IMPORTS / "wg-quick" / "etc-wireguard"
    result = zsn(tmp_path, "wg", "import", "wg-quick", put(tmp_path, source))
    assert result.returncode == 0, result.stderr
    written = (tmp_path / "etc/wireguard/wg0.conf").read_text()
    original = (source / "wg0.conf").read_text()
    # The same file with one name comment above each peer that has a client config.
    assert [line for line in written.splitlines() if line not in original.splitlines()] == \
        ["# alice", "# bob"]
    keys = keys_of(written)
    for name in ("alice", "bob"):
        client = (tmp_path / f"etc/wireguard/clients/wg0/{name}.conf").read_text()
        assert client == (source / f"{name}.conf").read_text()
        assert client_key(client) == keys[name]
    assert "link-local addresses (fe80::)" in result.stderr
    assert not (tmp_path / "etc/wireguard/alice.conf").exists()


def test_a_wg_quick_folder_in_place_gets_names_as_a_diff(tmp_path: Path) -> None:
    shutil.copytree(IMPORTS / "wg-quick" / "etc-wireguard", tmp_path / "etc/wireguard")
    before = tree(tmp_path)
    dry = zsn(tmp_path, "wg", "import", "wg-quick", "--dry-run")
    assert dry.returncode == 0, dry.stderr
    assert "+# alice" in dry.stdout and tree(tmp_path) == before
    assert zsn(tmp_path, "wg", "import", "wg-quick").returncode == 0
    assert {peer.name for peer in parse(
        (tmp_path / "etc/wireguard/wg0.conf").read_text()).peers} == {"alice", "bob"}


def test_a_line_wg_quick_folder_cannot_read_is_refused_naming_it(tmp_path: Path) -> None:
    folder = tmp_path / "old"
    shutil.copytree(IMPORTS / "wg-quick" / "etc-wireguard", folder)
    (folder / "wg1.conf").write_text("[Interface]\nListenPort = 51821\n[Bogus]\n")
    result = zsn(tmp_path, "wg", "import", "wg-quick", "/old")
    assert result.returncode == 1 or result.returncode == 2
    assert "wg1.conf:3" in result.stderr and "unknown section" in result.stderr
    assert not (tmp_path / "etc/wireguard").exists()


def test_an_existing_different_config_is_never_overwritten(tmp_path: Path) -> None:
    (tmp_path / "etc/wireguard").mkdir(parents=True)
    (tmp_path / "etc/wireguard/wg0.conf").write_text("[Interface]\nListenPort = 1\n")
    folder = put(tmp_path, IMPORTS / "wg-quick" / "etc-wireguard")
    result = zsn(tmp_path, "wg", "import", "wg-quick", folder)
    assert result.returncode == 2 and "exists and differs" in result.stderr
    assert (tmp_path / "etc/wireguard/wg0.conf").read_text() == "[Interface]\nListenPort = 1\n"
    moved = zsn(tmp_path, "wg", "import", "wg-quick", folder, "--interface", "wg7")
    assert moved.returncode == 0, moved.stderr
    assert keys_of((tmp_path / "etc/wireguard/wg7.conf").read_text())["alice"]
    assert (tmp_path / "etc/wireguard/clients/wg7/bob.conf").exists()
