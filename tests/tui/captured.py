"""The WireGuard snapshot the pane tests show, made from real wireguard-go captures
(no Textual here: forked first reads import it too)."""

from __future__ import annotations

from pathlib import Path

from zsn.wireguard import config, uapi
from zsn.wireguard.model import InterfaceState, WireGuardSnapshot

FIXTURES = Path(__file__).parent.parent / "fixtures" / "wireguard"
# The UI clock is pinned 42 s after the captured handshake, so ages are stable.
CAPTURED_HANDSHAKE = 1795367367


def fixed_snapshot(clock_offset: int = 42) -> WireGuardSnapshot:
    names = config.parse((FIXTURES / "zcapwg1.conf").read_text()).peer_names()
    server = uapi.parse_get(
        (FIXTURES / "uapi-get.wireguard-go-0.0.20220316.two-peers.txt").read_text(), names=names)
    client = uapi.parse_get(
        (FIXTURES / "uapi-get.wireguard-go-0.0.20220316.client-keepalive.txt").read_text())
    return WireGuardSnapshot(
        interfaces=(
            InterfaceState("zcapwg1", "userspace", "17teO74WVdzYvLcf6VJ12u9p/4FxswL/4aT5gNYpZzM=",
                           server.private_key, server.listen_port, None,
                           ("10.77.0.1/24", "fd77::1/64"), "/etc/wireguard/zcapwg1.conf",
                           server.peers),
            InterfaceState("zcapwg2", "userspace", "8DtMxP7orKTjWmrj/T/GQHVamZNprolZYctPJWWkzEE=",
                           client.private_key, client.listen_port, None, ("10.77.0.2/24",),
                           None, client.peers),
        ),
        taken_at=CAPTURED_HANDSHAKE + clock_offset,
    )
