"""Network namespaces and veth pairs for labs, each named uniquely with the `zov` prefix."""

from __future__ import annotations

import contextlib
import os
import subprocess
import uuid
from collections.abc import Iterator
from dataclasses import dataclass


def unique(kind: str) -> str:
    """`zov<kind><6 hex>`: unique, short enough for an interface name (15 chars)."""
    return f"zov{kind}{uuid.uuid4().hex[:6]}"


def sh(*argv: str, timeout: float = 20, check: bool = True) -> subprocess.CompletedProcess[str]:
    return subprocess.run(argv, capture_output=True, text=True, timeout=timeout, check=check)


@dataclass(frozen=True)
class NsPair:
    """Two namespaces joined by a veth pair: server side 10.86.x.1, client side .2."""

    server_ns: str
    client_ns: str
    server_ip: str
    client_ip: str


@contextlib.contextmanager
def namespace_pair() -> Iterator[NsPair]:
    server_ns, client_ns = unique("s"), unique("c")
    veth_a, veth_b = unique("a"), unique("b")
    octet = int(uuid.uuid4().hex[:2], 16) % 250 + 1
    pair = NsPair(server_ns, client_ns, f"10.86.{octet}.1", f"10.86.{octet}.2")
    try:
        sh("ip", "netns", "add", server_ns)
        sh("ip", "netns", "add", client_ns)
        sh("ip", "link", "add", veth_a, "type", "veth", "peer", "name", veth_b)
        sh("ip", "link", "set", veth_a, "netns", server_ns)
        sh("ip", "link", "set", veth_b, "netns", client_ns)
        sides = ((server_ns, veth_a, pair.server_ip), (client_ns, veth_b, pair.client_ip))
        for ns, dev, ip in sides:
            sh("ip", "-n", ns, "addr", "add", f"{ip}/24", "dev", dev)
            sh("ip", "-n", ns, "link", "set", dev, "up")
            sh("ip", "-n", ns, "link", "set", "lo", "up")
        yield pair
    finally:
        for ns in (server_ns, client_ns):
            if os.path.exists(f"/run/netns/{ns}"):
                # Processes still inside would keep the namespace alive: end them first.
                pids = sh("ip", "netns", "pids", ns, check=False).stdout.split()
                for pid in pids:
                    with contextlib.suppress(ProcessLookupError, ValueError):
                        os.kill(int(pid), 9)
                sh("ip", "netns", "del", ns, check=False)
        sh("ip", "link", "del", veth_a, check=False)
