"""Snapshots of WireGuard's live state: frozen, cheap to build, safe to hand between threads.

NamedTuples rather than frozen dataclasses: as immutable, and a NamedTuple class costs
a sixth of a frozen dataclass to create, paid by every start (the export, the TUI's
first read). Change one with ``_replace``.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Literal, NamedTuple

Implementation = Literal["kernel", "userspace"]


class PeerState(NamedTuple):
    """One peer as the device reports it.

    A NamedTuple rather than a frozen dataclass: just as immutable, and about four
    times cheaper to build, which matters when a server with thousands of peers is
    read every second.
    """

    public_key: str
    preshared_key: str | None
    """Base64, ``None`` when the peer has no preshared key. A secret."""
    endpoint: str | None
    allowed_ips: tuple[str, ...]
    latest_handshake: int | None
    """Unix time of the latest handshake, ``None`` when there never was one."""
    rx_bytes: int
    tx_bytes: int
    persistent_keepalive: int | None
    """Seconds, ``None`` when off."""
    name: str | None = None


class DeviceState(NamedTuple):
    """What the device itself reports (UAPI or netlink), before zsn adds names and addresses."""

    private_key: str | None
    public_key: str | None
    listen_port: int | None
    fwmark: int | None
    peers: tuple[PeerState, ...]


class InterfaceState(NamedTuple):
    """One interface as zsn shows it: the device, its addresses and its config."""

    name: str
    implementation: Implementation
    public_key: str | None
    private_key: str | None
    """A secret: exported only with ``--include-secrets``."""
    listen_port: int | None
    fwmark: int | None
    addresses: tuple[str, ...]
    config_path: str | None
    peers: tuple[PeerState, ...]
    in_namespace: bool = True
    """False for a userspace device whose link lives in another network namespace."""
    instance: str = ""
    """Which run of the device this is (its ifindex, or its UAPI socket's identity):
    a device that was restarted counts from zero again."""
    expiries: Mapping[str, int] = MappingProxyType({})
    """Unix time each peer with an ``# Expires =`` line in the config expires, by key."""
    disabled_peers: int = 0
    """Peers the config keeps disabled (``#[disabled]``): not in the device."""
    groups: Mapping[str, tuple[str, ...]] = MappingProxyType({})
    """Each peer's access-rule groups (`zsn.wireguard.policy`), by public key."""
    stale: bool = False
    """A userspace device's socket with no daemon behind it: the interface is down."""

    @property
    def running(self) -> bool:
        return not self.stale


class PeerSession(NamedTuple):
    """One peer's life as the history knows it (`zsn.wireguard.recorder`)."""

    connected: bool
    since: int | None
    """When the current session began (its first handshake)."""
    last_seen: int | None
    """When the peer was last heard from (a handshake or bytes received)."""
    endpoint: str | None
    """Where it was last seen from."""
    total_rx: int
    total_tx: int
    """Bytes received/sent since zsn first saw the peer, across restarts."""


class WireGuardSnapshot(NamedTuple):
    """Every interface visible from here, read at one time."""

    interfaces: tuple[InterfaceState, ...]
    errors: tuple[str, ...] = ()
    taken_at: float = 0.0
    """`time.time()` when the snapshot was read; rates are computed between two snapshots."""
    read_only_reason: str | None = None
    """Why part of the state could not be read (e.g. not root), shown instead of empty tables."""
    notes: tuple[str, ...] = ()
    sessions: Mapping[tuple[str, str], PeerSession] = MappingProxyType({})
    """History per (interface, public key), when a recorder ran on this snapshot."""
    history_note: str | None = None
    """Why history is not being recorded (off in the settings, store not writable)."""
    configs: tuple[str, ...] | None = None
    """The interfaces with a config in /etc/wireguard, running or not (None: not
    read, or the directory could not be listed, e.g. not root). Read by the pane only:
    its keys follow it; the exports have no use for it."""


# WireGuard rejects a session 180 s after its last handshake (REJECT_AFTER_TIME);
# a peer whose handshake is older than that has no working session.
HANDSHAKE_STALE_AFTER = 180
CONNECTED_MARGIN = 90
"""Seconds past `HANDSHAKE_STALE_AFTER` before a peer counts as disconnected.

A live peer re-keys 120 s after its last handshake (REKEY_AFTER_TIME), when it next
sends (with keepalive 25 s: by ~145 s). When that handshake's packets are lost,
WireGuard retries every 5 s for REKEY_ATTEMPT_TIME = 90 s before it gives up: a peer
whose rekey needed retries is back within 180 + 90 s at worst. So a disconnect is
only recorded once no handshake came for 270 s, when WireGuard itself has stopped
trying; a peer with keepalive never flaps, and a peer that went away is reported
4.5 minutes after its last handshake.
"""
CONNECTED_WITHIN = HANDSHAKE_STALE_AFTER + CONNECTED_MARGIN

HandshakeState = Literal["never", "fresh", "stale"]


def handshake_state(latest: int | None, now: float) -> HandshakeState:
    if not latest:
        return "never"
    return "stale" if now - latest > HANDSHAKE_STALE_AFTER else "fresh"
