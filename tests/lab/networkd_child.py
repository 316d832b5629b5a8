"""The side of tests/lab/networkd.py that runs inside the namespaces: veths to match,
networkd until it settles, then the kernel's links and networkd's state files as JSON.
It imports nothing but zsn.system.networkd_sandbox, so it starts quickly."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from zsn.system import networkd_sandbox

QUIET = 1.0
FINAL_STATES = {"configured", "unmanaged", "failed", "linger"}


def _ip_json(*args: str) -> list[dict[str, Any]]:
    data: list[dict[str, Any]] = json.loads(subprocess.run(
        ["ip", "-j", *args], capture_output=True, text=True, check=True, timeout=10).stdout)
    return data


def _states() -> dict[str, dict[str, str]]:
    found: dict[str, dict[str, str]] = {}
    for link in _ip_json("link"):
        path = Path(f"/run/systemd/netif/links/{link['ifindex']}")
        values: dict[str, str] = {}
        if path.is_file():
            for line in path.read_text().splitlines():
                key, _, value = line.partition("=")
                values[key] = value
        found[link["ifname"]] = values
    return found


class _Settled:
    """Every link in a final state, or configuring while networkd says nothing."""

    def __init__(self) -> None:
        self.seen = -1
        self.quiet_since = time.monotonic()

    def __call__(self) -> bool:
        size = os.path.getsize("/run/zsn-networkd.log")
        if size != self.seen:
            self.seen, self.quiet_since = size, time.monotonic()
        quiet = time.monotonic() - self.quiet_since >= QUIET
        return all(values.get("ADMIN_STATE") in FINAL_STATES or
                   (values.get("ADMIN_STATE") == "configuring" and quiet)
                   for name, values in _states().items()
                   if not name.startswith("zp") and name != "lo")


def child(scratch: Path, names: list[str]) -> None:
    networkd_sandbox.hide_and_bind(scratch)
    for number, name in enumerate(names):
        subprocess.run(["ip", "link", "add", name, "type", "veth", "peer", "name",
                        f"zp{number}"], check=True, timeout=10)
        subprocess.run(["ip", "link", "set", f"zp{number}", "up"], check=True, timeout=10)
    seen: dict[str, Any] = {}

    def collect() -> None:
        seen.update(links=_ip_json("-d", "link"), states=_states())

    lines = networkd_sandbox.run_networkd(_Settled(), collect)
    json.dump({"log": lines, **seen}, sys.stdout)


if __name__ == "__main__":
    child(Path(sys.argv[1]), sys.argv[2:])
