"""What wg and wg-quick refuse, found by lint (WG011) before `wg-quick up` fails:
keys that are not 32-byte base64 (the field notes' placeholders), empty keys, ports
and keepalives that are not numbers, lines whose spaces are not ASCII."""

from __future__ import annotations

from pathlib import Path

import pytest

from zsn.errors import ValidationError
from zsn.system.host import Host
from zsn.wireguard import interfaces, lint, onboarding
from zsn.wireguard.config import parse
from zsn.wireguard.refusals import refusals

FIXTURES = Path(__file__).parents[1] / "fixtures" / "wireguard"


def _refused(name: str) -> list[tuple[int, str]]:
    config = parse((FIXTURES / name).read_text(), name)
    return [(refusal.line + 1, refusal.message) for refusal in refusals(config)]


@pytest.mark.parametrize("name", ["manpage-client-gateway.conf", "manpage-policy-routing.conf",
                                  "manpage-server-multipeer.conf", "zcapwg1.conf"])
def test_configs_wg_takes_have_no_refusals(name: str) -> None:
    assert _refused(name) == []


def test_placeholder_keys_of_the_field_notes_are_refused() -> None:
    assert _refused("notes-server-wg0.conf") == [
        (6, "PrivateKey is not a 32-byte base64 key"),
        (11, "PublicKey is not a 32-byte base64 key")]


def test_no_break_spaces_hide_the_key_from_wg_quick() -> None:
    """The blog's indentation mixes U+00A0 with spaces: wg-quick passes "Address" on to
    wg, which refuses the line (checked with wg-quick strip | wg setconf)."""
    found = _refused("notes-client1-two-interfaces.conf")
    assert found[0][0] == 5
    assert found[0][1].startswith("key '\\xa0 \\xa0Address' is not Address")


def _server(tmp_path: Path, listen_port: str) -> Host:
    host = Host(tmp_path)
    interfaces.plan_create_interface(host, "wg0", ["10.66.0.1/24"], 51820,
                                     "vpn.example.com").apply()
    path = host.path("/etc/wireguard/wg0.conf")
    path.write_text(path.read_text().replace("ListenPort = 51820", f"ListenPort = {listen_port}"))
    return host


@pytest.mark.parametrize(("port", "problem"), [
    ("", "ListenPort is empty"), ("51820x", "'51820x' is not a port number"),
    ("70000", "'70000' is above 65535")])
def test_lint_says_the_port_is_invalid(tmp_path: Path, port: str, problem: str) -> None:
    host = _server(tmp_path, port)
    found = [f for f in lint.lint(host) if f.id == "WG011"]
    assert len(found) == 1 and problem in found[0].message and found[0].line == 4
    assert found[0].severity == "error"


def test_peer_add_says_the_port_is_invalid_not_missing(tmp_path: Path) -> None:
    host = _server(tmp_path, "51820x")
    with pytest.raises(ValidationError, match=r"wg0.conf:4: ListenPort '51820x' is not a "
                                              r"port number"):
        onboarding.plan_add_peer(host, onboarding.PeerRequest("wg0", "laptop",
                                                              endpoint="vpn.example.com"))


def test_an_empty_key_is_refused(tmp_path: Path) -> None:
    host = _server(tmp_path, "51820")
    path = host.path("/etc/wireguard/wg0.conf")
    lines = path.read_text().splitlines(keepends=True)
    path.write_text("".join("PrivateKey =\n" if line.startswith("PrivateKey") else line
                            for line in lines))
    found = [f.message for f in lint.lint(host) if f.id == "WG011"]
    assert found == ["PrivateKey is empty: 'wg-quick up' fails here"]
