"""A change killed between its file step and its live step is finished by running it
again (issue 19, item 5): `zsn peer add` on a running interface (wireguard-go in a
namespace, its config in a folder bound over /etc/wireguard) killed by strace at each
fsync and rename it makes, then run again. Before, a kill right after the server
config was saved left the peer in the file but not on the interface, and the retry
was refused as a duplicate; now every retry ends with the peer in the config, on the
running interface, and its client config in place."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.lab.mounts import private_argv
from tests.lab.netns import Lab, require_lab
from tests.needs import needs_tools
from zsn.wireguard import uapi
from zsn.wireguard.config import parse

pytestmark = pytest.mark.lab
REPO = Path(__file__).resolve().parents[2]
SYSCALLS = {"fsync": "fsync", "rename": "rename,renameat,renameat2"}


@pytest.fixture
def wg_lab() -> Iterator[Lab]:
    require_lab()
    needs_tools("strace", "unshare")
    lab = Lab()
    try:
        yield lab
    finally:
        lab.close()


def zsn(lab: Lab, ns: str, folder: Path, *args: str,
        strace: list[str] | None = None) -> subprocess.CompletedProcess[str]:
    argv = [*(strace or []), sys.executable, "-m", "zsn", *args]
    return subprocess.run(["ip", "netns", "exec", ns,
                           *private_argv({str(folder): "/etc/wireguard"}, argv)],
                          capture_output=True, text=True, timeout=120, cwd=REPO, check=False)


def test_a_peer_add_killed_at_any_write_step_is_finished_by_running_it_again(
        wg_lab: Lab, tmp_path: Path) -> None:
    lab = wg_lab
    ns = lab.namespace("n")
    name = lab.name("w")
    socket = lab.wireguard_go(ns, name)
    outcomes: dict[str, str] = {}
    for syscall in SYSCALLS:
        nth = 1
        while True:
            folder = tmp_path / f"{syscall}-{nth}"
            folder.mkdir(mode=0o700)
            created = zsn(lab, ns, folder, "wg", "create", name, "--address", "10.66.9.1/24",
                          "--port", "51999", "--endpoint", "vpn.example.com")
            assert created.returncode == 0, created.stderr
            for peer in uapi.get_device(socket).peers:  # the last round's alice
                uapi.set_device(socket, [f"public_key={_hex(peer.public_key)}",
                                         "remove=true"])
            killed = zsn(lab, ns, folder, "peer", "add", name, "alice", strace=[
                "strace", "-f", "-qq", "-o", "/dev/null", "-e", f"trace={SYSCALLS[syscall]}",
                "-e", f"inject={SYSCALLS[syscall]}:signal=KILL:when={nth}"])
            if killed.returncode == 0:
                break  # past the last write step: nothing left to kill
            assert killed.returncode in (-9, 137), killed.stderr
            saved = any(peer.name == "alice"
                        for peer in parse((folder / f"{name}.conf").read_text()).peers)
            retry = zsn(lab, ns, folder, "peer", "add", name, "alice")
            assert retry.returncode == 0, f"{syscall} #{nth}: {retry.stderr}"
            server = parse((folder / f"{name}.conf").read_text())
            [alice] = [peer for peer in server.peers if peer.name == "alice"]
            live = {peer.public_key for peer in uapi.get_device(socket).peers}
            assert alice.get("PublicKey") in live, f"{syscall} #{nth}: alice is not live"
            assert "PrivateKey = " in retry.stdout  # the client config, printed again
            outcomes[f"{syscall} #{nth}"] = "finished" if saved else "added"
            nth += 1
    # Killed after the server config's rename (at its directory's fsync), the peer is
    # in the file but not live: the retry finishes the add on the running interface.
    assert [step for step, outcome in outcomes.items() if outcome == "finished"] == \
        ["fsync #6"], outcomes
    assert len(outcomes) == 9, outcomes


def _hex(key: str) -> str:
    import base64

    return base64.b64decode(key).hex()
