"""A real OpenSSH server as a remote host (a `zsn zfs send` target), in a network namespace.

`SshServer` runs Debian's sshd from a config of its own (throwaway host key, pid file
and authorized keys under its work folder, no PAM, root by key only, PATH with the
sbin directories for remote commands), listening on one address inside a namespace
the test made. `client_key` makes the key pair the client offers. sshd refuses root
while root's password field in /etc/shadow is locked (``!``) unless PAM runs;
`unlock_root_for_keys` bind-mounts a copy with ``*`` over it, which only a throwaway
system (the kernel lab's guest) may do.
"""

from __future__ import annotations

import os
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

from tests.lab.netns import stop_process
from tests.needs import needs_tools

SBIN_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"


def run(*argv: str, timeout: float = 30) -> subprocess.CompletedProcess[str]:
    result = subprocess.run(argv, capture_output=True, text=True, timeout=timeout, check=False)
    if result.returncode != 0:
        raise AssertionError(f"{' '.join(argv)}: {result.returncode}: {result.stderr.strip()}")
    return result


def client_key(ssh_dir: Path) -> Path:
    """An ed25519 key pair in `ssh_dir` (id_ed25519, as ssh looks for it); the public
    key's path."""
    ssh_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
    key = ssh_dir / "id_ed25519"
    if not key.exists():
        run("ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "zsn-test", "-f", str(key))
    return key.with_suffix(".pub")


CLIENT_CONFIG = Path("/etc/ssh/ssh_config.d/zsn-lab.conf")
"""Where `use_client_files` names the client's files for every ssh root runs."""


def use_client_files(directory: Path) -> None:
    """Make root's ssh offer `directory`/id_ed25519 and trust `directory`/known_hosts:
    a drop-in of the system-wide client config, since root's home (the host's, shared
    read-only in the kernel lab) may have no ~/.ssh to hold them. Throwaway systems only
    (the guest's /etc is an overlay dropped at power-off); `forget_client_files` undoes it."""
    CLIENT_CONFIG.write_text(f"IdentityFile {directory / 'id_ed25519'}\n"
                             f"UserKnownHostsFile {directory / 'known_hosts'}\n")


def forget_client_files() -> None:
    CLIENT_CONFIG.unlink(missing_ok=True)


def unlock_root_for_keys(work: Path) -> None:
    """Root's shadow entry with ``*`` instead of a lock: sshd (without PAM) lets root in
    by key. Throwaway systems only (the bind mount hides the real file)."""
    shadow = Path("/etc/shadow").read_text()
    lines = [line if not line.startswith("root:") else
             "root:*:" + line.split(":", 2)[2] for line in shadow.splitlines()]
    copy = work / "shadow"
    copy.write_text("\n".join(lines) + "\n")
    os.chmod(copy, 0o640)
    run("mount", "--bind", str(copy), "/etc/shadow")


@dataclass
class SshServer:
    """sshd in `namespace` (None: this one), on `addresses` (port 22)."""

    namespace: str | None
    addresses: list[str]
    work: Path
    authorized: list[str] = field(default_factory=list)
    process: subprocess.Popen[bytes] | None = None

    def start(self) -> SshServer:
        needs_tools("sshd", "ssh", "ssh-keygen")
        self.work.mkdir(parents=True, exist_ok=True)
        Path("/run/sshd").mkdir(mode=0o755, exist_ok=True)  # sshd's privilege separation
        host_key = self.work / "host_key"
        if not host_key.exists():
            run("ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(host_key))
        (self.work / "authorized_keys").write_text("\n".join(self.authorized) + "\n")
        config = self.work / "sshd_config"
        config.write_text("".join(f"ListenAddress {address}\n" for address in self.addresses) + (
            f"HostKey {host_key}\n"
            f"PidFile {self.work / 'sshd.pid'}\n"
            f"AuthorizedKeysFile {self.work / 'authorized_keys'}\n"
            "StrictModes no\nPermitRootLogin prohibit-password\nUsePAM no\n"
            "PasswordAuthentication no\nKbdInteractiveAuthentication no\n"
            f"SetEnv PATH={SBIN_PATH}\nMaxStartups 50\nMaxSessions 50\n"
            # The default first key exchange (sntrup761, post-quantum) takes tens of
            # seconds of emulated CPU in the kernel lab; X25519 takes a fraction.
            "KexAlgorithms curve25519-sha256,curve25519-sha256@libssh.org\n"))
        inside = ["ip", "netns", "exec", self.namespace] if self.namespace else []
        self.process = subprocess.Popen(
            [*inside, "/usr/sbin/sshd", "-D", "-f", str(config), "-E",
             str(self.work / "sshd.log")],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        return self

    def known_hosts_line(self, address: str) -> str:
        return f"{address} {(self.work / 'host_key.pub').read_text().strip()}"

    def wait_ready(self, destination: str, seconds: float = 120) -> None:
        """Until `destination` takes a command (sshd is up, the key is accepted)."""
        end = time.monotonic() + seconds
        result: subprocess.CompletedProcess[str] | None = None
        while time.monotonic() < end:
            try:
                result = subprocess.run(["ssh", "-o", "BatchMode=yes", "-o", "ConnectTimeout=5",
                                         destination, "true"], capture_output=True, text=True,
                                        timeout=max(5.0, end - time.monotonic()), check=False)
            except subprocess.TimeoutExpired:
                break
            if result.returncode == 0:
                return
            time.sleep(0.5)
        raise AssertionError(f"sshd at {destination} not ready: "
                             f"{result.stderr.strip() if result else ''}; log: {self.log()}")

    def log(self) -> str:
        path = self.work / "sshd.log"
        return path.read_text()[-2000:] if path.exists() else ""

    def stop(self) -> None:
        if self.process is not None:
            stop_process(self.process)
