"""The UAPI parser on replies captured from wireguard-go (see fixtures/wireguard/SOURCES.md)."""

from __future__ import annotations

from pathlib import Path

import pytest

from zsn.errors import ParseError, SocketError
from zsn.wireguard import config, uapi

WG = Path(__file__).parent.parent / "fixtures" / "wireguard"
TWO_PEERS = WG / "uapi-get.wireguard-go-0.0.20220316.two-peers.txt"


def test_two_peers_match_wg_show_dump_of_the_same_moment() -> None:
    device = uapi.parse_get(TWO_PEERS.read_text())
    dump = (WG / "wg-show-dump.wireguard-tools-1.0.20210914.two-peers.txt").read_text()
    head, *peer_lines = dump.splitlines()
    private, public, port, fwmark = head.split("\t")
    assert device.private_key == private
    assert device.listen_port == int(port)
    assert device.fwmark is None and fwmark == "off"
    by_key = {p.public_key: p for p in device.peers}
    assert len(by_key) == len(peer_lines) == 2
    for line in peer_lines:
        key, psk, endpoint, allowed, handshake, rx, tx, keepalive = line.split("\t")
        peer = by_key[key]
        assert peer.preshared_key == (None if psk == "(none)" else psk)
        assert peer.endpoint == (None if endpoint == "(none)" else endpoint)
        assert ",".join(peer.allowed_ips) == allowed
        assert peer.latest_handshake == (int(handshake) or None)
        assert (peer.rx_bytes, peer.tx_bytes) == (int(rx), int(tx))
        assert peer.persistent_keepalive == (None if keepalive == "off" else int(keepalive))


def test_names_from_the_config_are_attached_by_public_key() -> None:
    names = config.parse((WG / "zcapwg1.conf").read_text()).peer_names()
    device = uapi.parse_get(TWO_PEERS.read_text(), names=names)
    assert [p.name for p in device.peers] == ["alice-laptop", "bob-site"]


def test_never_handshaked_peer_has_no_handshake_and_no_psk() -> None:
    device = uapi.parse_get(TWO_PEERS.read_text())
    never = device.peers[1]
    assert never.latest_handshake is None
    assert never.preshared_key is None
    assert never.endpoint is None
    assert never.allowed_ips == ("10.77.0.3/32", "10.99.0.0/16")


def test_fresh_device_has_no_keys_and_no_peers() -> None:
    fresh = WG / "uapi-get.wireguard-go-0.0.20220316.fresh-device.txt"
    device = uapi.parse_get(fresh.read_text())
    assert device.private_key is None and device.peers == ()
    assert device.listen_port == 59884


def test_negative_errno_from_wireguard_go_is_an_error() -> None:
    reply = (WG / "uapi-set-error.wireguard-go-0.0.20220316.bad-key.txt").read_text()
    with pytest.raises(SocketError, match="Invalid argument .errno -22"):
        uapi.check_errno(reply, "wg0")


BORINGTUN = WG / "uapi-get.boringtun-0.7.1.handshaked.txt"
BORINGTUN_CAPTURED_AT = 1795368636


def test_boringtun_reports_its_public_key_and_a_handshake_age() -> None:
    device = uapi.parse_get(BORINGTUN.read_text(), now=BORINGTUN_CAPTURED_AT)
    assert device.private_key is None
    assert device.public_key == "86HowwcTsuB7UPkVhtvZc9CWzbkCW37VTfDeHDtZWnA="
    [peer] = device.peers
    # An age of 4 s, turned into the Unix time of the handshake.
    assert peer.latest_handshake == BORINGTUN_CAPTURED_AT - 4
    assert peer.preshared_key is None
    assert (peer.rx_bytes, peer.tx_bytes, peer.persistent_keepalive) == (168, 168, 25)
    assert peer.endpoint == "192.168.77.1:51901"


def test_positive_errno_from_boringtun_is_an_error() -> None:
    reply = (WG / "uapi-set-error.boringtun-0.7.1.bad-key.txt").read_text()
    with pytest.raises(SocketError, match="errno 22"):
        uapi.check_errno(reply, "wg0")


def test_reply_without_errno_is_refused() -> None:
    reply = (WG / "uapi-unknown-op.wireguard-go-0.0.20220316.txt").read_text()
    assert reply == ""
    truncated = TWO_PEERS.read_text().split("errno=")[0]
    with pytest.raises(SocketError, match="without errno"):
        uapi.parse_get(truncated, "wg0")


def test_garbage_line_names_its_line() -> None:
    text = TWO_PEERS.read_text().replace("tx_bytes=348", "tx_bytes=lots")
    with pytest.raises(ParseError, match=r"wg0:9: bad value for tx_bytes"):
        uapi.parse_get(text, "wg0")


def test_socket_paths_finds_sockets_under_root(tmp_path: Path) -> None:
    from zsn.system.host import Host

    (tmp_path / "run" / "wireguard").mkdir(parents=True)
    (tmp_path / "run" / "wireguard" / "wg0.sock").touch()
    (tmp_path / "run" / "wireguard" / "wg0.name").touch()
    assert uapi.socket_paths(Host(tmp_path)) == {"wg0": tmp_path / "run/wireguard/wg0.sock"}


def test_exchange_on_missing_socket_says_gone(tmp_path: Path) -> None:
    with pytest.raises(SocketError, match="socket is gone"):
        uapi.exchange(tmp_path / "wg9.sock", "get=1\n\n")


def test_a_socket_gone_since_the_listing_is_no_interface_a_stale_one_is_named(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # wg(8) passes over a socket that vanished while it looked (wg-quick down meanwhile);
    # one whose daemon died is a tunnel that is down and says so.
    import socket

    from zsn.system.host import Host
    from zsn.wireguard import live

    folder = tmp_path / "run" / "wireguard"
    folder.mkdir(parents=True)
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as dead:
        dead.bind(str(folder / "wgdead.sock"))  # bound, never listening: refused
    listed = {"wggone": folder / "wggone.sock", "wgdead": folder / "wgdead.sock"}
    monkeypatch.setattr(uapi, "socket_paths", lambda host: listed)
    snapshot = live.read_wireguard(Host(tmp_path))
    assert [i.name for i in snapshot.interfaces] == ["wgdead"]
    assert snapshot.interfaces[0].stale
    assert [e for e in snapshot.errors if "wggone" in e] == []
    assert any("wgdead" in e and "stale socket" in e for e in snapshot.errors)


def test_set_refuses_blank_lines_that_would_end_the_request_early(tmp_path: Path) -> None:
    with pytest.raises(ValueError):
        uapi.set_device(tmp_path / "x.sock", ["listen_port=1", "", "fwmark=1"])


def test_a_poller_reuses_unchanged_peers_and_rereads_changed_ones() -> None:
    cache = uapi.PeerCache()
    names = config.parse((WG / "zcapwg1.conf").read_text()).peer_names()
    reply = TWO_PEERS.read_text()
    first = uapi.parse_get(reply, names=names, cache=cache)
    busier = reply.replace("tx_bytes=348", "tx_bytes=4096")
    second = uapi.parse_get(busier, names=names, cache=cache)
    assert second.peers[1] is first.peers[1]  # idle peer: same object, not re-parsed
    assert second.peers[0] is not first.peers[0]
    assert second.peers[0].tx_bytes == 4096
    renamed = {key: f"{name}-2" for key, name in names.items()}
    third = uapi.parse_get(busier, names=renamed, cache=cache)
    assert [p.name for p in third.peers] == ["alice-laptop-2", "bob-site-2"]


def test_a_moving_peer_read_from_its_changed_lines_equals_a_whole_parse() -> None:
    # A moving peer's block differs in its handshake and counter lines only: read from
    # those, it must equal the peer parsed anew; any other line changed is read whole.
    cache = uapi.PeerCache()
    reply = TWO_PEERS.read_text()
    uapi.parse_get(reply, cache=cache)
    moved = reply.replace("last_handshake_time_sec=1795367367",
                          "last_handshake_time_sec=1795367399").replace(
        "tx_bytes=348", "tx_bytes=4096")
    roamed = moved.replace("endpoint=192.168.77.2:51902", "endpoint=192.168.77.9:4000")
    widened = roamed.replace("allowed_ip=fd77::2/128", "allowed_ip=fd77::/64")
    broken = widened.replace("tx_bytes=4096", "tx_bytes=-1")
    for changed in (moved, roamed, widened, moved):
        assert uapi.parse_get(changed, cache=cache) == uapi.parse_get(changed)
    assert uapi.parse_get(moved, cache=cache).peers[0].latest_handshake == 1795367399
    with pytest.raises(ParseError):
        uapi.parse_get(broken, cache=cache)


def test_a_reordered_reply_reads_the_same_as_wireguard_gos_layout() -> None:
    # Same lines, another order: the line-by-line path must agree with the fast one.
    reply = TWO_PEERS.read_text()
    reordered = reply.replace("tx_bytes=348\nrx_bytes=436\n", "rx_bytes=436\ntx_bytes=348\n")
    assert reordered != reply
    assert uapi.parse_get(reordered) == uapi.parse_get(reply)


def test_a_malformed_private_key_is_not_quoted_in_the_error() -> None:
    reply = TWO_PEERS.read_text()
    secret = reply.split("private_key=")[1].split("\n")[0]
    broken = reply.replace(secret, secret[:-1] + "z")
    with pytest.raises(ParseError) as caught:
        uapi.parse_get(broken, "wg0")
    assert "not a 64-digit hex key" in str(caught.value)
    assert secret[:20] not in str(caught.value)
