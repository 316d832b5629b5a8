"""A tunnel zsn brings up outlives the session it was brought up from (issue 34, item 2).

Over a real SSH session (Debian's sshd in one namespace, ssh in another:
tests/lab/sshd.py), on a box without systemd: `zsn wg up` runs wg-quick, whose
wireguard-go is the tunnel. Before, wireguard-go ran in zsn's process group and session:
the hangup of the session's terminal killed it when the connection dropped or the tmux
window closed, and its socket was left behind, which `zsn wg up` then took for a
running interface ("already up"). Now wg-quick runs in a session of its own; a socket
with no daemon behind it is named stale and `zsn wg up` removes it and starts the
daemon.
"""

from __future__ import annotations

import os
import shlex
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.lab import sshd
from tests.lab.netns import new_private_key, processes, run, wait_for
from tests.lab.sshd import REPO, SshLab, kill_all
from tests.needs import needs_tools

pytestmark = pytest.mark.lab
SOCKETS = Path("/run/wireguard")


@pytest.fixture(scope="module")
def ssh_lab() -> Iterator[SshLab]:
    needs_tools("wg-quick", "wireguard-go", "tmux")
    with sshd.built(17) as built:
        yield built


@pytest.fixture
def tunnel(ssh_lab: SshLab) -> Iterator[str]:
    """A WireGuard config the session's zsn brings up (one peer, no route it could cut)."""
    from zsn.wireguard.keys import public_key_from_private

    name = ssh_lab.lab.name("wt")
    config = ssh_lab.folder("/etc/wireguard") / f"{name}.conf"
    config.write_text(f"[Interface]\nAddress = 10.97.17.1/24\nListenPort = 51817\n"
                      f"PrivateKey = {new_private_key()}\n\n[Peer]\n"
                      f"PublicKey = {public_key_from_private(new_private_key())}\n"
                      f"AllowedIPs = 10.97.17.2/32\n")
    config.chmod(0o600)
    try:
        yield name
    finally:
        for pid in _daemons(name):
            os.kill(pid, signal.SIGKILL)
        run(["ip", "-n", ssh_lab.server, "link", "del", name], check=False)
        (SOCKETS / f"{name}.sock").unlink(missing_ok=True)
        config.unlink(missing_ok=True)


def _daemons(name: str) -> list[int]:
    """The wireguard-go processes serving `name`."""
    return [pid for pid, argv in processes() if argv[:2] == [b"wireguard-go", name.encode()]]


def _answers(ssh_lab: SshLab, name: str) -> bool:
    """The tunnel runs: its daemon answers `wg show` and its link is in the namespace."""
    shown = ssh_lab.in_server(["wg", "show", name, "listen-port"], check=False)
    link = run(["ip", "-n", ssh_lab.server, "link", "show", name], check=False)
    return shown.returncode == 0 and shown.stdout.strip() == "51817" and link.returncode == 0


def _zsn_line(*args: str) -> str:
    return f"cd {shlex.quote(str(REPO))} && " + shlex.join([sys.executable, "-m", "zsn", *args])


def test_the_tunnel_outlives_the_ssh_connection_dropping(ssh_lab: SshLab, tunnel: str) -> None:
    # A terminal session, as an admin's (`ssh -t`): its hangup is what killed the daemon.
    session = sshd.Session(subprocess.Popen(
        ssh_lab.ssh_argv(_zsn_line("wg", "up", tunnel) + "; exec sleep 3600", "-tt",
                         *sshd.KEEPALIVE),
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE))
    try:
        wait_for(lambda: _answers(ssh_lab, tunnel), 60, f"{tunnel} up from the session")
        (daemon,) = _daemons(tunnel)
        assert os.getsid(daemon) != os.getsid(session.process.pid)
        session_side = ssh_lab.session_processes()
        assert session_side, "the session's processes on the server"
        session.process.kill()  # the connection drops: sshd hangs the terminal up
        wait_for(lambda: not set(session_side) & set(ssh_lab.session_processes()), 30,
                 "the session's processes to end")
    finally:
        session.close()
    assert _daemons(tunnel) == [daemon] and _answers(ssh_lab, tunnel)
    again = ssh_lab.zsn("wg", "up", tunnel)
    assert again.returncode == 2 and f"{tunnel} is already up" in again.stderr, again


def test_the_tunnel_outlives_its_tmux_window(ssh_lab: SshLab, tunnel: str) -> None:
    server = f"zsn-{tunnel}"  # the lab's own tmux server (its socket name)
    started = ssh_lab.run("tmux -L {} new-session -d -s s {}".format(
        server, shlex.quote(_zsn_line("wg", "up", tunnel) + "; exec sleep 3600")))
    assert started.returncode == 0, started.stderr
    try:
        wait_for(lambda: _answers(ssh_lab, tunnel), 60, f"{tunnel} up from the tmux window")
        (daemon,) = _daemons(tunnel)
        closed = ssh_lab.run(f"tmux -L {server} kill-server")  # the window's terminal hangs up
        assert closed.returncode == 0, closed.stderr
    finally:
        ssh_lab.run(f"tmux -L {server} kill-server")
    assert _daemons(tunnel) == [daemon] and _answers(ssh_lab, tunnel)


def test_a_socket_without_its_daemon_is_stale_and_up_starts_one(
        ssh_lab: SshLab, tunnel: str) -> None:
    assert ssh_lab.zsn("wg", "up", tunnel).returncode == 0
    (daemon,) = _daemons(tunnel)
    kill_all([daemon])
    wait_for(lambda: not _daemons(tunnel), 30, "the daemon to end")
    socket = SOCKETS / f"{tunnel}.sock"
    assert socket.exists(), "wireguard-go killed hard leaves its socket"
    exported = ssh_lab.zsn("--export", "wireguard")
    assert exported.returncode == 3 and "stale socket, no daemon behind it" in exported.stderr
    up = ssh_lab.zsn("wg", "up", tunnel, "--dry-run")
    assert up.returncode == 0 and f"remove {socket}: a stale socket" in up.stdout, up
    assert ssh_lab.zsn("wg", "up", tunnel).returncode == 0
    wait_for(lambda: _answers(ssh_lab, tunnel), 30, f"{tunnel} up again")
    assert len(_daemons(tunnel)) == 1
