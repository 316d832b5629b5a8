"""The WireGuard section on a config tree under --root (no live device): the plans a
file makes, that a second apply plans nothing, that an export applied plans nothing,
byte-exact edits of a real config, refusals that change nothing."""

from __future__ import annotations

import json
import shutil
import stat
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from zsn.cli import main
from zsn.wireguard.config import parse

FIXTURES = Path(__file__).parents[2] / "fixtures" / "wireguard"
ALICE = "8DtMxP7orKTjWmrj/T/GQHVamZNprolZYctPJWWkzEE="
BOB = "U8rvHcQ8SouCvbNH+EItFBTisPYHSV/+f+0VROrzuQY="
CAROL = "xTIBA5rboUvnH4htodjb6e697QjLERt1NAB4mZqp8Dg="
SERVER_KEY = "0EERySwwME/UXHGdbYYo2lZbGszSZV83hLjwWXQQYEI="


@pytest.fixture
def root(tmp_path: Path) -> Path:
    (tmp_path / "root/etc/wireguard").mkdir(parents=True)
    shutil.copy(FIXTURES / "zcapwg1.conf", tmp_path / "root/etc/wireguard/wg0.conf")
    (tmp_path / "root/etc/wireguard/wg0.conf").chmod(0o600)
    return tmp_path / "root"


def _tree(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*"))
            if p.is_file()}


def apply(root: Path, text: str, *options: str,
          capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    state = root.parent / "state.yaml"
    state.write_text(text)
    status = main(["--root", str(root), "apply", str(state), *options])
    out, err = capsys.readouterr()
    return status, out, err


def export(root: Path, capsys: pytest.CaptureFixture[str], *sections: str) -> str:
    assert main(["--root", str(root), "state", "export", *sections]) == 0
    return capsys.readouterr().out


def test_a_new_interface_with_peers_then_nothing_to_do(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    root = tmp_path / "empty"
    (root / "etc").mkdir(parents=True)
    state = f"""version: 1
wireguard:
  interfaces:
    - name: wg7
      addresses: [10.70.0.1/24]
      listen_port: 51870
      endpoint: vpn.example.com
      peers:
        - {{name: alice, public_key: "{ALICE}", allowed_ips: [10.70.0.2/32]}}
        - {{name: site, public_key: "{BOB}", allowed_ips: [10.70.0.3/32, 10.99.0.0/16],
            endpoint: "203.0.113.9:51820", keepalive: 25}}
"""
    status, out, _ = apply(root, state, "--dry-run", capsys=capsys)
    assert status == 0 and "create WireGuard interface wg7" in out
    assert "peers of wg7: add alice; add site" in out
    assert not (root / "etc/wireguard").exists()
    assert apply(root, state, capsys=capsys)[0] == 0
    config = parse((root / "etc/wireguard/wg7.conf").read_text())
    assert [peer.name for peer in config.peers] == ["alice", "site"]
    assert config.peers[1].get("Endpoint") == "203.0.113.9:51820"
    assert stat.S_IMODE((root / "etc/wireguard/wg7.conf").stat().st_mode) == 0o600
    status, out, _ = apply(root, state, capsys=capsys)
    assert (status, out) == (0, f"Plan: apply {root.parent / 'state.yaml'}\n"
                                "  (nothing to change)\n")
    exported = export(root, capsys)
    assert "endpoint: vpn.example.com" in exported
    assert apply(root, exported, capsys=capsys)[1].endswith("(nothing to change)\n")


def test_the_export_of_a_real_config_applies_as_nothing(
        root: Path, capsys: pytest.CaptureFixture[str]) -> None:
    before = _tree(root)
    exported = export(root, capsys, "wireguard")
    assert f'public_key: "{SERVER_KEY}"' not in exported  # the private key: never
    assert "PresharedKey" not in exported and "7GLHKJg7" not in exported
    status, out, _ = apply(root, exported, capsys=capsys)
    assert status == 0 and out.endswith("(nothing to change)\n")
    assert _tree(root) == before


def test_peer_changes_edit_only_their_lines(root: Path,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    original = (root / "etc/wireguard/wg0.conf").read_text()
    state = f"""version: 1
wireguard:
  interfaces:
    - name: wg0
      peers:
        - {{public_key: "{BOB}", allowed_ips: [10.77.0.3/32, 10.98.0.0/16], keepalive: 15}}
        - {{name: carol, public_key: "{CAROL}", allowed_ips: [10.77.0.4/32]}}
"""
    assert apply(root, state, capsys=capsys)[0] == 0
    text = (root / "etc/wireguard/wg0.conf").read_text()
    expected = original.replace("AllowedIPs = 10.77.0.3/32, 10.99.0.0/16",
                                "AllowedIPs = 10.77.0.3/32, 10.98.0.0/16").replace(
        "PersistentKeepalive = 25", "PersistentKeepalive = 15")
    expected += f"\n# carol\n[Peer]\nPublicKey = {CAROL}\nAllowedIPs = 10.77.0.4/32\n"
    assert text == expected
    assert "7GLHKJg7uk7yzrPNjvkVbgkn3j3OegRccK4wkseN0Rk=" in text  # alice's PSK untouched


def test_exclusive_removes_the_peers_not_named(root: Path,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    state = f"""version: 1
wireguard:
  interfaces:
    - name: wg0
      exclusive: true
      peers:
        - {{public_key: "{BOB}", name: bob}}
"""
    status, out, _ = apply(root, state, "--dry-run", capsys=capsys)
    assert "peers of wg0: remove alice-laptop; bob: name (was bob-site)" in out
    assert apply(root, state, capsys=capsys)[0] == 0
    config = parse((root / "etc/wireguard/wg0.conf").read_text())
    assert [(p.name, p.get("PublicKey")) for p in config.all_peers] == [("bob", BOB)]
    assert "# Name = bob" in (root / "etc/wireguard/wg0.conf").read_text()


@pytest.mark.parametrize(("state", "refusal"), [
    (f"version: 1\nwireguard:\n  interfaces:\n    - name: wg0\n      public_key: \"{ALICE}\"\n",
     "wg0's public key here is"),
    ("version: 1\nwireguard:\n  interfaces:\n    - name: wg9\n",
     "wg9 does not exist: give its addresses and listen_port"),
    (f"version: 1\nwireguard:\n  interfaces:\n    - name: wg0\n      peers:\n"
     f"        - {{public_key: \"{CAROL}\", allowed_ips: [10.77.0.2/32]}}\n",
     "overlaps 10.77.0.2/32 of peer 'alice-laptop'"),
    (f"version: 1\nwireguard:\n  interfaces:\n    - name: wg0\n      peers:\n"
     f"        - {{public_key: \"{CAROL}\", name: alice-laptop, allowed_ips: [10.7.0.2/32]}}\n",
     "already has a peer named 'alice-laptop'"),
    (f"version: 1\nwireguard:\n  interfaces:\n    - name: wg0\n      peers:\n"
     f"        - {{public_key: \"{CAROL}\"}}\n", "give its allowed_ips"),
    ("version: 1\nwireguard:\n  interfaces:\n    - name: wg0\n      private_key: x\n",
     "unknown key 'private_key'"),
    ("version: 1\nwireguard:\n  interfaces:\n    - name: wg0\n      peers:\n"
     "        - {public_key: nope}\n", "peers[0]: public key must be 44 base64"),
    ("version: 1\nwireguard:\n  interfaces:\n    - name: wg0\n    - name: wg0\n",
     "interface 'wg0' given twice"),
    ("version: 2\n", "version: '2' is not a schema"),
    ("wireguard: {}\n", "no 'version: 1'"),
    ("version: 1\nwireguard: {}\nwireguard: {}\n", "key 'wireguard' given twice"),
    ("version: 1\nwiregard: {}\n", "unknown key 'wiregard' (did you mean 'wireguard'?)"),
])
def test_bad_input_is_one_line_exit_2_and_changes_nothing(
        root: Path, capsys: pytest.CaptureFixture[str], state: str, refusal: str) -> None:
    before = _tree(root)
    status, out, err = apply(root, state, capsys=capsys)
    assert status == 2, err
    assert refusal in err and err.count("\n") == 1 and err.startswith("zsn apply: invalid: ")
    assert out == "" and _tree(root) == before


def test_addresses_of_an_interface_that_is_down_are_edited_in_place(
        root: Path, capsys: pytest.CaptureFixture[str]) -> None:
    state = ("version: 1\nwireguard:\n  interfaces:\n    - name: wg0\n"
             "      addresses: [10.78.0.1/24]\n      listen_port: 51902\n")
    assert apply(root, state, capsys=capsys)[0] == 0
    text = (root / "etc/wireguard/wg0.conf").read_text()
    assert "Address = 10.78.0.1/24\nListenPort = 51902\n" in text
    assert apply(root, state, capsys=capsys)[1].endswith("(nothing to change)\n")


def test_json_outcome_of_a_dry_run(root: Path, capsys: pytest.CaptureFixture[str]) -> None:
    import json

    state = (f"version: 1\nwireguard:\n  interfaces:\n    - name: wg0\n      peers:\n"
             f"        - {{public_key: \"{CAROL}\", allowed_ips: [10.77.0.9/32]}}\n")
    status, out, _ = apply(root, state, "--dry-run", "--diff", "--json", capsys=capsys)
    outcome = json.loads(out)
    assert status == 0 and outcome["changed"] and not outcome["applied"]
    assert outcome["diffs"][0]["path"].endswith("/etc/wireguard/wg0.conf")
    assert f"+PublicKey = {CAROL}" in outcome["diffs"][0]["diff"]
    assert "PresharedKey = (hidden)" not in outcome["diffs"][0]["diff"]  # not in the hunk
    assert outcome["try"] is None and outcome["parts"] == ["peers of wg0: add xTIBA5rb…"]


def _peers_file(*keys: str) -> str:
    peers = "".join(f"        - {{public_key: \"{key}\", allowed_ips: [10.77.0.{9 + n}/32]}}\n"
                    for n, key in enumerate(keys))
    return f"version: 1\nwireguard:\n  interfaces:\n    - name: wg0\n      peers:\n{peers}"


def _wait_until(predicate: Callable[[], bool], seconds: float, what: str) -> None:
    deadline = time.monotonic() + seconds
    while not predicate():
        assert time.monotonic() < deadline, f"not {what} after {seconds} s"
        time.sleep(0.05)


def test_a_tried_apply_is_confirmed_or_rolled_back_by_its_guardian(
        root: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from zsn.system.host import Host
    from zsn.tries import lifecycle
    from zsn.tries.store import ROLLED_BACK, Store

    conf = root / "etc/wireguard/wg0.conf"
    original = conf.read_text()
    try:
        status, out, _ = apply(root, _peers_file(CAROL), "--try", "60", capsys=capsys)
        assert status == 0 and CAROL in conf.read_text()
        kept = out.splitlines()[-1]
        assert kept.startswith("zsn confirm ")
        assert main(["--root", str(root), *kept.split()[1:]]) == 0
        capsys.readouterr()
        assert CAROL in conf.read_text() and not Store(Host(root)).waiting()
        changed = conf.read_text()

        # a window of one second that nobody confirms: the guardian puts the file back
        status, out, _ = apply(root, _peers_file(CAROL, BOB.replace("U8", "V8")), "--json",
                               "--try", "1", capsys=capsys)
        outcome = json.loads(out)
        assert status == 0 and outcome["applied"] and outcome["try"]["seconds"] == 1
        assert outcome["parts"] == ["peers of wg0: add V8rvHcQ8…"]
        _wait_until(lambda: conf.read_text() == changed, 30, "rolled back")
        _wait_until(lambda: not Store(Host(root)).waiting(), 30, "settled")
        assert Store(Host(root)).load(outcome["try"]["id"]).state == ROLLED_BACK
    finally:
        for change in Store(Host(root)).waiting():  # no guardian outlives its test
            lifecycle.roll_back(Host(root), change.id)
    assert original != changed
