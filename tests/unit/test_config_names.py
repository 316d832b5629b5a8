"""Peer names from wg-quick configs, in the comment styles seen in the wild."""

from __future__ import annotations

from pathlib import Path

import pytest

from zsn.errors import ParseError
from zsn.wireguard import config

WG = Path(__file__).parent.parent / "fixtures" / "wireguard"


def test_fixture_config_round_trips_and_names_both_styles() -> None:
    text = (WG / "zcapwg1.conf").read_text()
    parsed = config.parse(text)
    assert parsed.render() == text
    assert list(parsed.peer_names().values()) == ["alice-laptop", "bob-site"]
    assert parsed.interface is not None
    assert parsed.interface.get_all("Address") == ["10.77.0.1/24", "fd77::1/64"]
    assert parsed.peers[0].get_all("allowedips") == ["10.77.0.2/32", "fd77::2/128"]


@pytest.mark.parametrize(
    ("comment", "name"),
    [("# alice", "alice"), ("#alice", "alice"), ("# Name = alice", "alice"),
     ("# name: alice", "alice"), ("# friendly_name = alice", "alice"),
     ("## alice phone", "alice phone")],
)
def test_comment_above_peer(comment: str, name: str) -> None:
    text = f"[Interface]\nPrivateKey = x\n\n{comment}\n[Peer]\nPublicKey = K\n"
    assert config.parse(text).peer_names() == {"K": name}


def test_a_blank_line_between_comment_and_peer_means_no_name() -> None:
    text = "[Interface]\nPrivateKey = x\n# alice\n\n[Peer]\nPublicKey = K\n"
    assert config.parse(text).peer_names() == {}


def test_errors_name_the_line() -> None:
    with pytest.raises(ParseError, match="wg0.conf:3: expected 'Key = value'"):
        config.parse("[Interface]\nPrivateKey = x\nthis is not valid\n", "wg0.conf")
    with pytest.raises(ParseError, match="line 1: unknown section"):
        config.parse("[Peers]\n")
    with pytest.raises(ParseError, match="outside any"):
        config.parse("PublicKey = x\n")
