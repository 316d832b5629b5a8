"""Kernel WireGuard devices through generic netlink (pyroute2's `WireGuard`).

A dump can split one device over several messages; a continued peer then appears
again with only its public key and the rest of its allowed IPs, so peers are
merged by key in the order they arrive.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from zsn.errors import ParseError
from zsn.system.netlink import pyroute2_module, translate_netlink_errors
from zsn.wireguard.model import DeviceState, PeerState


def _key(value: Any) -> str | None:
    """A key attribute as base64 text (pyroute2 gives base64 bytes, sometimes wrapped)."""
    if value is None:
        return None
    if isinstance(value, dict) or hasattr(value, "get"):
        value = value.get("value")
    if isinstance(value, bytes):
        try:
            value = value.decode("ascii")
        except UnicodeDecodeError:
            raise ParseError("the kernel gave a WireGuard key that is not base64 text") from None
    text = str(value)
    return None if text == "A" * 43 + "=" else text  # all-zero key means "none"


def _endpoint(value: Any) -> str | None:
    if not value:
        return None
    addr, port = value.get("addr"), value.get("port")
    if not addr or addr in ("0.0.0.0", "::") or not port:
        return None
    return f"[{addr}]:{port}" if ":" in addr else f"{addr}:{port}"


def parse_messages(
    messages: Iterable[Any], names: Mapping[str, str] | None = None
) -> DeviceState:
    """Fold the messages of one `WG_CMD_GET_DEVICE` dump into a `DeviceState`."""
    private_key = public_key = None
    listen_port = fwmark = None
    order: list[str] = []
    fields: dict[str, dict[str, Any]] = {}
    for message in messages:
        private_key = _key(message.get_attr("WGDEVICE_A_PRIVATE_KEY")) or private_key
        public_key = _key(message.get_attr("WGDEVICE_A_PUBLIC_KEY")) or public_key
        listen_port = message.get_attr("WGDEVICE_A_LISTEN_PORT") or listen_port
        fwmark = message.get_attr("WGDEVICE_A_FWMARK") or fwmark
        for peer in message.get_attr("WGDEVICE_A_PEERS") or ():
            key = _key(peer.get_attr("WGPEER_A_PUBLIC_KEY"))
            if key is None:
                continue
            entry = fields.get(key)
            if entry is None:
                entry = fields[key] = {"allowed": []}
                order.append(key)
            for attr, name in (
                ("WGPEER_A_PRESHARED_KEY", "psk"),
                ("WGPEER_A_ENDPOINT", "endpoint"),
                ("WGPEER_A_LAST_HANDSHAKE_TIME", "handshake"),
                ("WGPEER_A_RX_BYTES", "rx"),
                ("WGPEER_A_TX_BYTES", "tx"),
                ("WGPEER_A_PERSISTENT_KEEPALIVE_INTERVAL", "keepalive"),
            ):
                value = peer.get_attr(attr)
                if value is not None:
                    entry[name] = value
            for allowed in peer.get_attr("WGPEER_A_ALLOWEDIPS") or ():
                if allowed.get("addr"):
                    entry["allowed"].append(allowed["addr"])
    peers = []
    for key in order:
        entry = fields[key]
        handshake = entry.get("handshake")
        seconds = handshake.get("tv_sec") if handshake else 0
        peers.append(
            PeerState(
                public_key=key,
                preshared_key=_key(entry.get("psk")),
                endpoint=_endpoint(entry.get("endpoint")),
                allowed_ips=tuple(entry["allowed"]),
                latest_handshake=seconds or None,
                rx_bytes=entry.get("rx", 0),
                tx_bytes=entry.get("tx", 0),
                persistent_keepalive=entry.get("keepalive") or None,
                name=(names or {}).get(key),
            )
        )
    return DeviceState(private_key, public_key, listen_port, fwmark or None, tuple(peers))


def get_device(ifname: str, names: Mapping[str, str] | None = None) -> DeviceState:
    """Read a kernel WireGuard device (needs root and the wireguard module)."""
    wireguard_class = pyroute2_module("netlink.generic.wireguard").WireGuard
    with translate_netlink_errors(f"reading WireGuard device {ifname}"):
        wg = wireguard_class()
        try:
            return parse_messages(wg.info(ifname), names)
        finally:
            wg.close()
