"""Kernel dumps: one peer's allowed IPs split over several netlink messages are merged.

The kernel module is not available on the test machines, so the messages are
encoded and decoded by pyroute2's own `wgmsg`, as they travel on the socket.
"""

from __future__ import annotations

import base64
import socket

from pyroute2.netlink.generic.wireguard import wgmsg

from zsn.wireguard.kernel import parse_messages

KEY_A = base64.b64encode(bytes(range(32))).decode()
KEY_B = base64.b64encode(bytes(range(1, 33))).decode()


def allowed(address: str, mask: int) -> dict[str, object]:
    family = socket.AF_INET6 if ":" in address else socket.AF_INET
    return {"attrs": [["WGALLOWEDIP_A_FAMILY", family],
                      ["WGALLOWEDIP_A_IPADDR", socket.inet_pton(family, address)],
                      ["WGALLOWEDIP_A_CIDR_MASK", mask]]}


def wire(attrs: list[list[object]]) -> wgmsg:
    message = wgmsg()
    message["cmd"] = 0
    message["version"] = 1
    message["attrs"] = attrs
    message.encode()
    received = wgmsg(message.data)
    received.decode()
    return received


def test_split_allowed_ips_are_merged_in_order() -> None:
    first = wire([
        ["WGDEVICE_A_IFNAME", "wg0"], ["WGDEVICE_A_LISTEN_PORT", 51820],
        ["WGDEVICE_A_PUBLIC_KEY", {"value": KEY_A}],
        ["WGDEVICE_A_PEERS", [{"attrs": [
            ["WGPEER_A_PUBLIC_KEY", {"value": KEY_B}],
            ["WGPEER_A_ENDPOINT", {"addr": "192.0.2.7", "port": 51820}],
            ["WGPEER_A_LAST_HANDSHAKE_TIME", {"tv_sec": 1700000000, "tv_nsec": 5}],
            ["WGPEER_A_RX_BYTES", 1000], ["WGPEER_A_TX_BYTES", 2000],
            ["WGPEER_A_PERSISTENT_KEEPALIVE_INTERVAL", 25],
            ["WGPEER_A_ALLOWEDIPS", [allowed("10.0.0.2", 32), allowed("10.1.0.0", 16)]],
        ]}]],
    ])
    continued = wire([
        ["WGDEVICE_A_IFNAME", "wg0"],
        ["WGDEVICE_A_PEERS", [{"attrs": [
            ["WGPEER_A_PUBLIC_KEY", {"value": KEY_B}],
            ["WGPEER_A_ALLOWEDIPS", [allowed("fd00::2", 128)]],
        ]}]],
    ])
    device = parse_messages([first, continued], names={KEY_B: "branch office"})
    assert device.public_key == KEY_A and device.listen_port == 51820
    [peer] = device.peers
    assert peer.allowed_ips == ("10.0.0.2/32", "10.1.0.0/16", "fd00::2/128")
    assert peer.endpoint == "192.0.2.7:51820"
    assert peer.latest_handshake == 1700000000
    assert (peer.rx_bytes, peer.tx_bytes, peer.persistent_keepalive) == (1000, 2000, 25)
    assert peer.name == "branch office"


def test_zero_handshake_and_ipv6_endpoint() -> None:
    message = wire([
        ["WGDEVICE_A_IFNAME", "wg0"],
        ["WGDEVICE_A_PEERS", [{"attrs": [
            ["WGPEER_A_PUBLIC_KEY", {"value": KEY_B}],
            ["WGPEER_A_ENDPOINT", {"addr": "2001:db8::1", "port": 443}],
            ["WGPEER_A_LAST_HANDSHAKE_TIME", {"tv_sec": 0, "tv_nsec": 0}],
        ]}]],
    ])
    [peer] = parse_messages([message]).peers
    assert peer.latest_handshake is None
    assert peer.endpoint == "[2001:db8::1]:443"
