"""systemd-networkd's own reading of a config tree, for tests: the real networkd run as
zsn's lint source runs it (zsn/system/networkd_sandbox.py: a private mount and
network namespace, the tree bind-mounted over networkd's folders, a fresh /run, a
read-only /sys), with links to match and the kernel's links dumped at the end.

For every link name given, a veth of that name is created first (its peer ``zpN``,
up, so the link has a carrier), and networkd runs until every link has a final
administrative state (``configured``, ``unmanaged``, ``failed``, ``linger``; one still
``configuring``, waiting for an address or a lease, once networkd has logged nothing
for a second) and every netdev it loaded was created or failed.

    run_networkd(root, ["dummy98", "test1"]) -> NetworkdRun

What comes back is networkd's log (`warnings` name file and line), which ``.network``
file each link got (``NETWORK_FILE=`` of its state file), the netdevs it loaded, and
the kernel's links. This host's kernel has bridges and veths but no bonding or
8021q: those netdevs are loaded but fail to be created here (the kernel lab has them).
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tests.needs import unavailable
from zsn.system import networkd_sandbox

_LOADED_RE = re.compile(r'^(\S+): loaded "(\S+)"$')


def require_networkd() -> None:
    problem = networkd_sandbox.can_run()
    if problem is None and shutil.which("ip") is None:
        problem = "ip is needed"
    if problem is not None:
        unavailable(f"networkd sandbox unavailable: {problem}")


@dataclass
class NetworkdRun:
    log: list[str]
    links: list[dict[str, Any]]
    states: dict[str, dict[str, str]] = field(default_factory=dict)
    """Link name -> its /run/systemd/netif/links state file (ADMIN_STATE, NETWORK_FILE)."""

    @property
    def warnings(self) -> list[networkd_sandbox.Complaint]:
        return networkd_sandbox.parse_log(self.log)

    @property
    def loaded(self) -> dict[str, str]:
        """Netdev name -> kind, for every .netdev networkd loaded."""
        return {m.group(1): m.group(2) for line in self.log if (m := _LOADED_RE.match(line))}

    def link(self, name: str) -> dict[str, Any] | None:
        return next((link for link in self.links if link.get("ifname") == name), None)


def run_networkd(root: Path, links: list[str], timeout: float = 40) -> NetworkdRun:
    """networkd on the config folders under `root`, with veths named `links`."""
    require_networkd()
    argv = networkd_sandbox.sandbox_argv(root)
    argv[argv.index("zsn.system.networkd_sandbox")] = "tests.lab.networkd_child"
    result = subprocess.run([*argv, *links], capture_output=True, text=True, timeout=timeout,
                            check=False, cwd=Path(__file__).parents[2])
    if result.returncode != 0:
        raise RuntimeError(f"networkd sandbox failed ({result.returncode}): "
                           f"{result.stderr[-2000:]}")
    data = json.loads(result.stdout)
    return NetworkdRun(data["log"], data["links"], data["states"])
