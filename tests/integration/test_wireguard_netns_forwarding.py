"""Client-to-client in a network namespace that is not the host's (issue 9, item 9).

zsn runs live (no --root) inside a lab namespace, as `ip netns exec NS zsn ...`
would; its /etc/wireguard and /etc/sysctl.d are the test's folders, bind-mounted in
a private mount namespace. Forwarding is per namespace: it must be switched on in
the lab namespace only, and nothing may be written to /etc/sysctl.d, which the
host's init applies at boot to the host's namespace.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.lab.mounts import private_argv
from tests.lab.netns import Lab, run
from tests.needs import needs_tools, unavailable

pytestmark = pytest.mark.lab

REPO = Path(__file__).resolve().parents[2]
SYSCTL_FILE = "99-zsn-wireguard.conf"


def _forwarding(namespace: str | None) -> str:
    where = ["ip", "netns", "exec", namespace] if namespace else []
    return run([*where, "cat", "/proc/sys/net/ipv4/ip_forward"]).stdout.strip()


def test_client_to_client_in_a_lab_namespace_sets_forwarding_there_and_writes_no_sysctl_file(
        lab: Lab, tmp_path: Path) -> None:
    needs_tools("iptables", "unshare", "mount")
    for folder in ("/etc/wireguard", "/etc/sysctl.d"):
        if not Path(folder).is_dir():
            unavailable(f"{folder} is needed as a mount point")
    host_sysctl = sorted(Path("/etc/sysctl.d").iterdir())
    host_forwarding = _forwarding(None)
    root = tmp_path / "root"
    (root / "etc/sysctl.d").mkdir(parents=True)
    interface = lab.name("c2c")
    created = subprocess.run([sys.executable, "-m", "zsn", "--root", str(root), "wg", "create",
                              interface, "--address", "10.73.0.1/24", "--port", "51873"],
                             capture_output=True, text=True, timeout=60, cwd=REPO, check=False)
    assert created.returncode == 0, created.stderr
    namespace = lab.namespace("fw")
    assert _forwarding(namespace) == "0"

    argv = ["ip", "netns", "exec", namespace, *private_argv(
        {str(root / "etc/wireguard"): "/etc/wireguard",
         str(root / "etc/sysctl.d"): "/etc/sysctl.d"},
        [sys.executable, "-m", "zsn", "wg", "clients", interface])]
    result = subprocess.run(argv, capture_output=True, text=True, timeout=60, cwd=REPO,
                            check=False)
    assert result.returncode == 0, result.stderr
    assert f"zsn runs in the network namespace '{namespace}' (ip netns)" in result.stderr
    assert "nothing persists" in result.stderr
    assert "done: enable net.ipv4.ip_forward now" in result.stderr

    assert _forwarding(namespace) == "1", "set live in the lab namespace"
    assert _forwarding(None) == host_forwarding, "the host's namespace untouched"
    assert not (root / "etc/sysctl.d" / SYSCTL_FILE).exists(), "no sysctl.d file written"
    assert sorted(Path("/etc/sysctl.d").iterdir()) == host_sysctl
    server = (root / "etc/wireguard" / f"{interface}.conf").read_text()
    assert "PostUp = iptables -A FORWARD -i %i -o %i -j ACCEPT" in server
