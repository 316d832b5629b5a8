"""Shared set-up for the links benchmarks: many veth interfaces in a private namespace.

The benchmark re-runs itself under ``unshare --mount --net`` (see _lab.isolate), so
zsn on its live root sees exactly the benchmark's links, and they vanish with the
namespace even if the benchmark is killed.
"""

from __future__ import annotations

import json
import subprocess

import _lab

PREFIX = "zbl"


def veths(count: int) -> list[str]:
    """`count` veth interfaces (count/2 pairs, both ends here), up; their names.

    IPv6 is off on them: a new link sends router solicitations, DAD and MLD reports
    for its first ~15 s, and "idle" means what a quiet host's links do, nothing."""
    subprocess.run(["sysctl", "-q", "-w", "net.ipv6.conf.default.disable_ipv6=1"], check=True)
    pairs = count // 2
    batch = "".join(f"link add {PREFIX}{n}a type veth peer name {PREFIX}{n}b\n"
                    f"link set {PREFIX}{n}a up\nlink set {PREFIX}{n}b up\n"
                    for n in range(pairs))
    subprocess.run(["ip", "-batch", "-"], input=batch, text=True, check=True)
    names = [link["ifname"] for link in json.loads(
        subprocess.run(["ip", "-j", "link", "show"], capture_output=True, text=True,
                       check=True).stdout) if link["ifname"].startswith(PREFIX)]
    if len(names) != pairs * 2:
        raise RuntimeError(f"{len(names)} veths made, expected {pairs * 2}")
    print(f"set-up: {len(names)} veth interfaces ({pairs} pairs) in a private namespace")
    return names


__all__ = ["_lab", "veths"]
