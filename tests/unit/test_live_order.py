"""Peers come in a stable order: the config's, then the others by name (unnamed by key).

wireguard-go answers a UAPI `get` in Go map order, which changes from one read
to the next (and between launches): without this the TUI's rows would jump and
repaint every second.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.unit.links.conftest import captured_bytes
from zsn.errors import NetlinkError
from zsn.system import rtnetlink
from zsn.system.netlink import Link
from zsn.wireguard import live, uapi
from zsn.wireguard.live import LiveCache

WG = Path(__file__).parent.parent / "fixtures" / "wireguard"
TWO_PEERS = WG / "uapi-get.wireguard-go-0.0.20220316.two-peers.txt"
ALICE = "8DtMxP7orKTjWmrj/T/GQHVamZNprolZYctPJWWkzEE="
BOB = "U8rvHcQ8SouCvbNH+EItFBTisPYHSV/+f+0VROrzuQY="


def test_peers_follow_the_config_whatever_order_the_device_lists_them(tmp_path: Path) -> None:
    path = tmp_path / "zcapwg1.conf"
    shutil.copyfile(WG / "zcapwg1.conf", path)
    cache = LiveCache()
    peers = uapi.parse_get(TWO_PEERS.read_text(), names=cache.for_config(path)).peers
    stranger = peers[0]._replace(public_key="A" * 43 + "=", name=None)
    named_stranger = peers[0]._replace(public_key="B" * 43 + "=", name=None)
    for listed in [(stranger, peers[1], named_stranger, peers[0]),
                   (peers[0], named_stranger, stranger, peers[1])]:
        ordered = cache.in_config_order("zcapwg1", path, listed)
        assert [p.public_key for p in ordered] == [ALICE, BOB, stranger.public_key,
                                                   named_stranger.public_key]
    assert [p.name for p in ordered[:2]] == ["alice-laptop", "bob-site"]


def test_without_a_config_peers_are_ordered_by_name_then_key(tmp_path: Path) -> None:
    # Unnamed peers (nothing in a config) come last, by key.
    peers = uapi.parse_get(TWO_PEERS.read_text()).peers
    zed = peers[0]._replace(public_key="Z" * 43 + "=", name="zed")
    amy = peers[1]._replace(public_key="Y" * 43 + "=", name="amy")
    ordered = LiveCache().in_config_order("x", tmp_path / "missing.conf",
                                          (zed, peers[1], amy, peers[0]))
    assert [p.public_key for p in ordered] == [amy.public_key, zed.public_key, ALICE, BOB]


def test_the_disabled_peers_and_the_configs_come_from_the_files(tmp_path: Path) -> None:
    """PiVPN's CI config (one peer disabled with its `#[disabled]` marker, one not): the
    pane offers `E` (enable) only when a config has a disabled peer, and `U` (bring up)
    only for a config that is not running."""
    from zsn.system import files
    from zsn.system.host import Host
    from zsn.wireguard.live import configured_interfaces

    pivpn = WG / "imports" / "pivpn" / "ci-ipv4" / "etc" / "wireguard" / "wg0.conf"
    assert LiveCache().disabled(pivpn) == 1
    assert LiveCache().disabled(WG / "zcapwg1.conf") == 0
    (tmp_path / "etc/wireguard").mkdir(parents=True)
    assert configured_interfaces(Host(tmp_path)) == ()
    shutil.copyfile(pivpn, tmp_path / "etc/wireguard/wg0.conf")
    (tmp_path / f"etc/wireguard/wg0.conf{files.BACKUP_SUFFIX}").write_text("")  # not listed
    assert configured_interfaces(Host(tmp_path)) == ("wg0",)


class _Watcher:
    """A `LinkWatcher` whose netlink events the test sends."""

    def __init__(self) -> None:
        self.events = [True]  # a real watcher says True when it starts listening

    def changed(self) -> bool:
        return self.events.pop(0) if self.events else False


def test_the_link_table_is_read_again_only_when_the_kernel_tells_of_a_change(
        monkeypatch: pytest.MonkeyPatch) -> None:
    records = rtnetlink.decode_links(captured_bytes("rtm-getlink.bin"))
    dumps: list[str] = []

    def dump() -> dict[str, Link]:
        dumps.append("links")
        if len(dumps) == 3:
            raise NetlinkError("cannot dump links: no buffer space")
        return {r.name: Link(r.index, r.name, r.kind, r.operstate, r.mtu, r.mac, ())
                for r in records}

    monkeypatch.setattr(live, "list_links", dump)
    watcher = _Watcher()
    cache = LiveCache(link_watcher=watcher)  # type: ignore[arg-type]
    first = cache.links()
    assert cache.links() is first and cache.links() is first and dumps == ["links"]
    watcher.events.append(True)  # a link or an address changed
    assert cache.links() == first and dumps == ["links"] * 2
    watcher.events.append(True)
    with pytest.raises(NetlinkError):
        cache.links()
    assert cache.links() == first and dumps == ["links"] * 4  # the failed dump, again
