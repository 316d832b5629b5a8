"""A WireGuard pane fed with a fixed snapshot made from real wireguard-go captures."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from zsn.system.host import Host
from zsn.tui.app import ZsnApp
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


@pytest.fixture
def fixed_app(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> ZsnApp:
    snapshot = fixed_snapshot()
    monkeypatch.setattr("zsn.tui.panes.wireguard.read_wireguard", lambda host, names: snapshot)
    # Nothing to record: the root does not exist (history has its own tests).
    monkeypatch.setattr("zsn.tui.panes.wireguard.record_history",
                        lambda recorder, snapshot: snapshot)
    monkeypatch.setattr("zsn.tui.panes.wireguard.now", lambda: CAPTURED_HANDSHAKE + 42)
    # A fixed (non-existent) root: it shows in the header, so it must not vary.
    return ZsnApp(Host(Path("/srv/zsn-test-root")), theme="zsn-night", refresh=3600)


@pytest.fixture
def root(tmp_path: Path) -> Path:
    """A --root tree with zcapwg1's config (0600, in a 0700 folder), for actions."""
    directory = tmp_path / "etc/wireguard"
    directory.mkdir(parents=True, mode=0o700)
    shutil.copyfile(FIXTURES / "zcapwg1.conf", directory / "zcapwg1.conf")
    os.chmod(directory / "zcapwg1.conf", 0o600)
    return tmp_path
