"""Keys checked against the real `wg pubkey`; QR codes decoded back with the real zbarimg."""

from __future__ import annotations

import base64
import shutil
import subprocess
import sys
from pathlib import Path

from tests.needs import needs_tools
from tests.qr import decode_half_blocks
from zsn.qr import make_qr
from zsn.system.host import Host
from zsn.wireguard import interfaces, onboarding
from zsn.wireguard.keys import (
    KeyPair,
    generate_preshared_key,
    generate_private_key,
    is_valid_key,
    public_key_from_private,
)
from zsn.wireguard.onboarding import render_client_config
from zsn.wireguard.qr import qr_payload


def _require(tool: str) -> str:
    needs_tools(tool)
    path = shutil.which(tool)
    assert path is not None
    return path


def test_generated_keys_match_wg_pubkey() -> None:
    wg = _require("wg")
    for _ in range(25):
        private = generate_private_key()
        raw = base64.b64decode(private)
        assert raw[0] & 7 == 0 and raw[31] & 128 == 0 and raw[31] & 64  # clamped like genkey
        real = subprocess.run([wg, "pubkey"], input=private + "\n", capture_output=True,
                              text=True, timeout=5, check=True).stdout.strip()
        assert public_key_from_private(private) == real


def test_wg_genkey_keys_give_the_same_public_key() -> None:
    wg = _require("wg")
    private = subprocess.run([wg, "genkey"], capture_output=True, text=True, timeout=5,
                             check=True).stdout.strip()
    real = subprocess.run([wg, "pubkey"], input=private + "\n", capture_output=True, text=True,
                          timeout=5, check=True).stdout.strip()
    assert public_key_from_private(private) == real


def test_preshared_keys_are_accepted_by_wg() -> None:
    psk = generate_preshared_key()
    assert is_valid_key(psk) and psk != generate_preshared_key()


def test_key_pair_repr_hides_the_private_key() -> None:
    pair = KeyPair.generate()
    assert pair.private_key not in repr(pair) and pair.public_key in repr(pair)


def _client_config(dns: list[str], allowed: list[str]) -> str:
    pair, server = KeyPair.generate(), KeyPair.generate()
    return render_client_config(
        name="alice-phone", interface="wg0", private_key=pair.private_key,
        addresses=["10.66.0.2/32", "fd66::2/128"], dns=dns, server_public_key=server.public_key,
        preshared_key=generate_preshared_key(), allowed_ips=allowed,
        endpoint="vpn.example.com:51820", keepalive=25).render()


def test_qr_of_a_client_config_decodes_back_to_it(tmp_path: Path) -> None:
    text = _client_config(["10.66.0.1"], ["0.0.0.0/0", "::/0"])
    payload = qr_payload(text)
    code = make_qr(payload)
    decoded = decode_half_blocks(code.half_blocks(), tmp_path)
    assert decoded.rstrip("\n") == payload.rstrip("\n")
    assert "PrivateKey = " in decoded and "# " not in decoded


def test_long_configs_drop_to_level_l_and_stilldecode_half_blocks(tmp_path: Path) -> None:
    many = [f"10.{i}.0.0/16" for i in range(40)]
    payload = qr_payload(_client_config(["10.66.0.1", "10.66.0.2", "example.lan"], many))
    code = make_qr(payload, columns=200, lines=200)
    roomy = make_qr(payload, columns=400, lines=400)
    assert code.error == "L" or roomy.error in "HQM"
    small = make_qr("short", columns=80, lines=22)
    assert small.error == "H" and small.fits
    assert decode_half_blocks(code.half_blocks(), tmp_path).rstrip("\n") == payload.rstrip("\n")


def test_a_code_that_cannot_fit_says_so() -> None:
    payload = qr_payload(_client_config([], ["10.66.0.0/24"]))
    code = make_qr(payload, columns=80, lines=20)
    assert not code.fits and code.error == "L"
    assert "does not fit" in code.describe()


def test_peer_show_qr_into_a_file_is_plain_text_that_scans_on_a_dark_terminal(
        tmp_path: Path) -> None:
    root = tmp_path / "root"
    host = Host(root)
    interfaces.plan_create_interface(host, "wg0", ["10.66.0.1/24"], 51820,
                                     "vpn.example.com").apply()
    plan, client = onboarding.plan_add_peer(host, onboarding.PeerRequest("wg0", "alice"))
    plan.apply()
    saved = tmp_path / "alice-qr.txt"
    with saved.open("w") as stdout:  # not a terminal
        shown = subprocess.run([sys.executable, "-m", "zsn", "--root", str(root), "peer", "show",
                                "wg0", "alice", "--qr"], stdout=stdout, stderr=subprocess.PIPE,
                               text=True, timeout=60, check=True,
                               cwd=Path(__file__).parents[2])
    text = saved.read_text()
    assert "\x1b" not in text, "no colour codes in a file"
    assert set(text) <= set("█▀▄ \n")
    lines = text.splitlines()
    assert lines[0] == "█" * len(lines[0]), "the light quiet zone is drawn"
    decoded = decode_half_blocks(lines, tmp_path, blocks_are_light=True)
    assert decoded.rstrip("\n") == qr_payload(client.text).rstrip("\n")
    assert "plain text without colour codes" in shown.stderr
