"""`live` readers for tests/tui/test_startup.py's first reads. No Textual here: a
forked first read runs them in a child of a fresh interpreter too."""

from __future__ import annotations

import os
from types import MappingProxyType

from tests.tui.captured import fixed_snapshot
from zsn.system.host import Host
from zsn.wireguard.model import WireGuardSnapshot

RELEASE: list[int] = []
"""A pipe `read_when_released` waits on (a forked child shares it): read end, write end."""
APP_PROCESS: list[int] = []
"""The process that started the read, when set: `read_in_a_child` refuses to run there."""


def read_fixture(host: Host) -> WireGuardSnapshot:
    """The captured server and client."""
    return fixed_snapshot()


def read_when_released(host: Host) -> WireGuardSnapshot:
    os.read(RELEASE[0], 1)
    return fixed_snapshot()


def read_and_fail(host: Host) -> WireGuardSnapshot:
    raise RuntimeError("the daemon is not there")


def read_big_server(host: Host) -> WireGuardSnapshot:
    """The captured server with 500 peers: its real peer under other keys and names."""
    snapshot = fixed_snapshot()
    server = snapshot.interfaces[0]
    peers = tuple(server.peers[0]._replace(public_key=f"{index:043d}=", name=f"peer-{index:03d}")
                  for index in range(500))
    return snapshot._replace(interfaces=(server._replace(peers=peers),))


def read_in_a_child(host: Host) -> WireGuardSnapshot:
    """The fixture, read with the reader's own imports (the UAPI and netlink code)."""
    if os.getpid() in APP_PROCESS:
        raise RuntimeError("read in the app's own process")
    from zsn.wireguard import live  # noqa: F401 - what a real reader imports

    return fixed_snapshot()


def read_in_this_process(host: Host) -> WireGuardSnapshot:
    if os.getpid() not in APP_PROCESS:
        raise RuntimeError("read in another process")
    return fixed_snapshot()


def read_and_write_to_the_terminal(host: Host) -> WireGuardSnapshot:
    print("\x1b[2Jwritten by the reader")
    os.write(1, b"\x1b[2Jwritten by the reader to its standard output\n")
    os.write(2, b"\x1b[2Jwritten by the reader to its standard error\n")
    return fixed_snapshot()


def read_with_groups(host: Host) -> WireGuardSnapshot:
    """The fixture with an access group (a read-only mapping)."""
    snapshot = fixed_snapshot()
    server = snapshot.interfaces[0]._replace(groups=MappingProxyType({"staff": ("alice",)}))
    return snapshot._replace(interfaces=(server, *snapshot.interfaces[1:]))
