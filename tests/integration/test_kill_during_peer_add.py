"""kill -9 at every write step of `zsn peer add` (issue 10, item 5).

strace kills the process on entry to its Nth fsync or Nth rename (``-e inject``
with ``signal=KILL``; the syscall never runs): one run per step, every fsync and
every rename of the clean run, so no write step is left out and none depends on
timing. After each kill: no torn file, any temporary file left is 0600 (it may
hold a private key), and a retry of the same command finishes the job, leaving
no temporary file and a client config whose key is the server's peer. No code in
zsn exists for this test.
"""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from tests.needs import needs_tools
from zsn.system.host import Host
from zsn.wireguard import interfaces
from zsn.wireguard.config import parse
from zsn.wireguard.keys import public_key_from_private

SYSCALLS = {"fsync": "fsync", "rename": "rename,renameat,renameat2"}
REPO = Path(__file__).resolve().parents[2]


def zsn_argv(root: Path) -> list[str]:
    return [sys.executable, "-m", "zsn", "--root", str(root), "peer", "add", "wg0", "alice"]


def run(argv: list[str]) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1"}  # no .pyc renames of its own
    return subprocess.run(argv, capture_output=True, text=True, timeout=120, check=False,
                          cwd=REPO, env=env)


def killed_at(root: Path, syscall: str, nth: int) -> bool:
    """Run peer add, killed on entry to its `nth` `syscall`; False when it finished first."""
    result = run(["strace", "-f", "-qq", "-o", "/dev/null", "-e", f"trace={SYSCALLS[syscall]}",
                  "-e", f"inject={SYSCALLS[syscall]}:signal=KILL:when={nth}", *zsn_argv(root)])
    if result.returncode == 0:
        return False
    assert result.returncode in (-9, 137), result.stderr
    return True


def temp_files(root: Path) -> list[Path]:
    return [p for p in root.rglob("*") if p.name.endswith(".tmp")]


def check_nothing_torn(root: Path, original: str) -> None:
    server = root / "etc/wireguard/wg0.conf"
    text = server.read_text()
    peers = [p.name for p in parse(text).peers]
    assert text == original or peers == ["alice"], text
    backup = root / "etc/wireguard/wg0.conf.zsn-bak"
    assert not backup.exists() or backup.read_text() == original
    client = root / "etc/wireguard/clients/wg0/alice.conf"
    if client.exists():
        config = parse(client.read_text())
        assert config.interface is not None and config.interface.get("PrivateKey")
        assert config.peers and config.peers[0].get("Endpoint")
    for leftover in temp_files(root):
        assert stat.S_IMODE(leftover.stat().st_mode) == 0o600, leftover


def check_done(root: Path) -> None:
    server = parse((root / "etc/wireguard/wg0.conf").read_text())
    [alice] = [p for p in server.peers if p.name == "alice"]
    client = parse((root / "etc/wireguard/clients/wg0/alice.conf").read_text())
    assert client.interface is not None
    private = client.interface.get("PrivateKey")
    assert private and public_key_from_private(private) == alice.get("PublicKey")
    assert temp_files(root) == []


def test_a_kill_at_any_write_step_of_peer_add_leaves_nothing_a_retry_cannot_finish(
        tmp_path: Path) -> None:
    needs_tools("strace")
    fresh = tmp_path / "fresh"
    interfaces.plan_create_interface(Host(fresh), "wg0", ["10.66.0.1/24"], 51820,
                                     "vpn.example.com").apply()
    original = (fresh / "etc/wireguard/wg0.conf").read_text()
    outcomes: dict[str, str] = {}
    for syscall in SYSCALLS:
        nth = 1
        while True:
            root = tmp_path / f"{syscall}-{nth}"
            shutil.copytree(fresh, root)
            if not killed_at(root, syscall, nth):
                check_done(root)
                break
            check_nothing_torn(root, original)
            retry = run(zsn_argv(root))
            if retry.returncode == 0:
                outcomes[f"{syscall} #{nth}"] = "retry finished it"
            else:
                # Killed after the server config committed: the first run did the job.
                assert retry.returncode == 2, retry.stderr
                assert "already has a peer named 'alice'" in retry.stderr
                assert "zsn peer show wg0 alice" in retry.stderr
                outcomes[f"{syscall} #{nth}"] = "already done"
            check_done(root)
            nth += 1
    # Three atomic writes (client config, backup, server config): each fsyncs its
    # file and its directory and renames once. Only a kill on the last step (the
    # directory's fsync after the server config's rename) finds the job done.
    assert len(outcomes) == 9, outcomes
    assert [step for step, outcome in outcomes.items() if outcome == "already done"] == \
        ["fsync #6"], outcomes


@pytest.mark.parametrize("umask", [0o000, 0o022])
def test_temporary_files_are_private_from_the_start_whatever_the_umask(
        tmp_path: Path, umask: int) -> None:
    needs_tools("strace")
    interfaces.plan_create_interface(Host(tmp_path), "wg0", ["10.66.0.1/24"], 51820,
                                     "vpn.example.com").apply()
    # Killed on its first fsync: the client config's temporary file is written, its
    # private key in it, and never renamed.
    old = os.umask(umask)
    try:
        assert killed_at(tmp_path, "fsync", 1)
    finally:
        os.umask(old)
    [leftover] = temp_files(tmp_path)
    assert "PrivateKey = " in leftover.read_text()
    assert stat.S_IMODE(leftover.stat().st_mode) == 0o600
    assert run(zsn_argv(tmp_path)).returncode == 0
    assert temp_files(tmp_path) == []
