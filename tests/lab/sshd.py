"""A real SSH session a change can cut: Debian's sshd in one network namespace, the
ssh client in another, zsn run inside the session as an admin runs it.

The server namespace's uplink is one end of a veth pair, the client namespace the
other. The session comes from an address of its own on the client's side
(``client_alias``), which the server reaches through a gateway route (or its default
route, as a scenario chooses): a rollback has to bring such a route back, the kernel
never does. sshd runs in a private mount namespace where temporary folders stand in
for ``/run/zsn`` (the pending store) and the config folders zsn may write
(``BOUND``), so nothing reaches the host; every process of the session, the guardian
included, sees them. `Session` is one ssh connection; `probe` tells whether a new
one could connect now (a TCP connect that completes).

sshd runs without PAM, and then it refuses a locked account even for a key ("User
root not allowed because account is locked": a shadow password starting with ``!``).
The kernel lab guest's init locks every account (virtme-ng binds over /etc/shadow a
copy made of ``NAME:!:`` lines), so sshd reads a shadow of its own, every account's
password unusable (``*``) but none locked. A lab whose login is refused all the same
fails as it is built, with the client's and sshd's words, not scenario by scenario.
"""

from __future__ import annotations

import json
import os
import shlex
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tests.lab.kernel import IN_GUEST
from tests.lab.mounts import private_argv
from tests.lab.netns import Lab, require_lab, run, stop_process, wait_for
from tests.needs import needs_tools

REPO = Path(__file__).resolve().parents[2]
SSHD = "/usr/sbin/sshd"
BOUND = ("/run/zsn", "/etc/netplan", "/etc/systemd/network", "/etc/network",
         "/etc/wireguard")
"""System folders the session sees as the lab's own (empty) folders."""
CONNECT_TIMEOUT = 60 if IN_GUEST else 5
"""A guest's sshd answers some 14 times slower than the host's."""
KEEPALIVE = ("-o", f"ServerAliveInterval={2 if IN_GUEST else 1}", "-o",
             "ServerAliveCountMax=2")
"""The client gives up on a session whose server stops answering after 2-4 s (4-8 s in
a guest, whose sshd may take a second to answer). ssh counts them from the key
exchange on: a login slower than that is given up too, "Connection to ... timed out"
(an INFO line: not shown at LogLevel ERROR; sshd logs the close as ``[preauth]``)."""
KEX = "curve25519-sha256"
"""Not the default post-quantum hybrid (sntrup761), a fifth of a login's time on the
host and more on the kernel lab guest's emulated CPU: the lab tests paths, not key
exchange."""
WATCH_PORT = 9
"""Where the prober connects: a port nothing listens on in the server's namespace, so
the kernel answers each connect with a reset and sshd forks no process for it."""


@dataclass
class SshLab:
    lab: Lab
    server: str
    client: str
    uplink: str
    """The server's end of the path (what the scenarios change)."""
    far: str
    server_ip: str
    client_ip: str
    client_alias: str
    """The session's source address: routed by the server through `client_ip`."""
    work: Path
    folders: dict[str, Path] = field(default_factory=dict)
    """System folder -> the lab's folder the session sees there."""
    sshd: subprocess.Popen[bytes] | None = None
    target: tuple[str, str] = ("", "")
    """(server address, client source) sessions and probes use: IPv4 unless a scenario
    switches to IPv6."""

    def __post_init__(self) -> None:
        self.target = (self.server_ip, self.client_alias)

    # -- the session ---------------------------------------------------------------

    def ssh_argv(self, command: str, *options: str) -> list[str]:
        return ["ip", "netns", "exec", self.client, "ssh", "-F", "/dev/null",
                "-i", str(self.work / "client_key"), "-o", "IdentitiesOnly=yes",
                "-o", "UserKnownHostsFile=/dev/null", "-o", "StrictHostKeyChecking=no",
                "-o", f"KexAlgorithms={KEX}",
                "-o", "BatchMode=yes", "-o", "LogLevel=ERROR", "-o",
                f"ConnectTimeout={CONNECT_TIMEOUT}",
                "-b", self.target[1], *options, f"root@{self.target[0]}", command]

    def run(self, command: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
        """One command over a new session (what a user types after reconnecting)."""
        return subprocess.run(self.ssh_argv(command), capture_output=True, text=True,
                              timeout=timeout, check=False)

    def zsn(self, *args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
        return self.run(zsn_command(*args), timeout)

    def session(self, command: str, bulk: bool = False) -> Session:
        """A session that runs `command`, then stays open (reading its input) until it
        is cut or closed; `bulk` keeps the client sending data all along."""
        line = f"{command}; echo ZSN-EXIT=$?; exec cat >/dev/null"
        stdin: int | None = None
        if bulk:
            stdin = os.open("/dev/zero", os.O_RDONLY)
        process = subprocess.Popen(self.ssh_argv(line, *KEEPALIVE),
                                   stdin=stdin if bulk else subprocess.PIPE,
                                   stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        if stdin is not None:
            os.close(stdin)
        return Session(process)

    # -- the path --------------------------------------------------------------------

    def probe(self, timeout: float = 1.0, size: int | None = None) -> bool:
        """Whether a TCP connect to sshd completes within `timeout` s (with `size`:
        whether a ping of `size` bytes, unfragmented, gets through)."""
        server, source = self.target
        if size is not None:
            return run(["ip", "netns", "exec", self.client, "ping", "-M", "do", "-s",
                        str(size), "-c", "1", "-W", str(max(1, round(timeout))), "-I",
                        source, server], check=False).returncode == 0
        return run(["ip", "netns", "exec", self.client, sys.executable, "-m",
                    "tests.lab.probe", "once", server, "22", source, str(timeout)],
                   timeout=timeout + 30, check=False).returncode == 0

    @contextmanager
    def watch(self, size: int | None = None) -> Iterator[Watch]:
        """A prober in the client's namespace, connecting every 50 ms (with `size`:
        pinging with packets that big): when did the path come back."""
        server, source = self.target
        argv = ["ip", "netns", "exec", self.client, sys.executable, "-m", "tests.lab.probe",
                "watch", server, str(WATCH_PORT), source, "0.3"]
        if size is not None:
            argv = ["ip", "netns", "exec", self.client, "ping", "-D", "-O", "-n", "-i",
                    "0.05", "-W", "0.3", "-M", "do", "-s", str(size), "-I", source, server]
        process = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                   text=True)
        try:
            yield Watch(process)
        finally:
            stop_process(process)

    def snapshot(self) -> dict[str, object]:
        """The server's links, addresses and routes (``ip -j``), to compare."""
        def ip(*args: str) -> object:
            return json.loads(run(["ip", "-n", self.server, "-j", *args]).stdout)

        links = [{key: link.get(key) for key in ("ifname", "mtu", "master", "flags")}
                 for link in ip("-d", "link", "show")]  # type: ignore[attr-defined]
        addresses = sorted((a["ifname"], i["local"], i["prefixlen"])
                           for a in ip("addr", "show")  # type: ignore[attr-defined]
                           for i in a["addr_info"] if i.get("scope") != "link")
        routes = [ip("-4", "route", "show", "table", "all"),
                  ip("-6", "route", "show", "table", "main")]
        return {"links": links, "addresses": addresses, "routes": _stable(routes)}

    def sysctl(self, key: str, value: str) -> None:
        run(["ip", "netns", "exec", self.server, "sysctl", "-q", "-w", f"{key}={value}"])

    def sshd_said(self, lines: int = 20) -> str:
        """The end of sshd's log (INFO: logins accepted or refused, and why; a
        connection closed before login says ``[preauth]``)."""
        said = (self.work / "sshd.log").read_text(errors="replace").strip().splitlines()
        return "\n".join(said[-lines:])

    def folder(self, system_path: str) -> Path:
        return self.folders[system_path]

    def changes(self) -> list[dict[str, object]]:
        """The pending store as the session sees it."""
        found = []
        for path in sorted(self.folder("/run/zsn").glob("changes/*/change.json")):
            with suppress(OSError, ValueError):
                found.append(json.loads(path.read_text()))
        return found

    def change(self, timeout: float = 30) -> dict[str, object]:
        """The one change on record (waits for it to be written)."""
        wait_for(lambda: len(self.changes()) == 1, timeout, "the change's record")
        return self.changes()[0]

    def applied(self) -> bool:
        """Whether zsn finished applying the change on record."""
        return any(change.get("applied") for change in self.changes())

    def wait_state(self, states: tuple[str, ...], timeout: float) -> dict[str, Any]:
        def reached() -> bool:
            return any(c.get("state") in states for c in self.changes())

        wait_for(reached, timeout, f"a change {states}")
        return next(c for c in self.changes() if c.get("state") in states)

    def console(self, *args: str) -> subprocess.CompletedProcess[str]:
        """zsn at the server's console: in its namespaces, not over the network."""
        return self.in_server([sys.executable, "-m", "zsn", *args], check=False)

    def in_server(self, argv: list[str], check: bool = True,
                  timeout: float = 60) -> subprocess.CompletedProcess[str]:
        """`argv` at the server's console (its network and sshd's mount namespace, where
        the lab's folders stand in for the system's)."""
        listener = _listener_pid(self.sshd.pid) if self.sshd is not None else None
        assert listener is not None, "sshd is not running"
        result = subprocess.run(["nsenter", "-t", str(listener), "-m", "-n", *argv],
                                capture_output=True, text=True, timeout=timeout, cwd=REPO,
                                check=False)
        if check and result.returncode != 0:
            raise AssertionError(f"{argv}: {result.stdout}{result.stderr}")
        return result

    def forget_changes(self) -> None:
        """Between scenarios: no change left pending, no record left."""
        for change in self.changes():
            if change.get("state") in ("pending", "arming"):
                self.console("rollback", str(change["id"]))
        run(["rm", "-rf", str(self.folder("/run/zsn") / "changes")])

    def session_processes(self) -> list[int]:
        """Every process below sshd's listener: the sessions, whatever they run."""
        assert self.sshd is not None
        listener = _listener_pid(self.sshd.pid)
        return _descendants(listener) if listener else []


def _stable(value: object) -> object:
    """Routes without what changes by itself (an RA route's expiry)."""
    if isinstance(value, list):
        return [_stable(item) for item in value]
    if isinstance(value, dict):
        return {k: _stable(v) for k, v in value.items() if k not in ("expires",)}
    return value


def zsn_command(*args: str, wrapper: tuple[str, ...] = ()) -> str:
    """The shell line that runs zsn with `args` in a session (under `wrapper`, e.g.
    strace)."""
    return f"cd {shlex.quote(str(REPO))} && " + shlex.join(
        [*wrapper, sys.executable, "-m", "zsn", *args])


@dataclass
class Session:
    process: subprocess.Popen[bytes]
    said: tuple[str, str] | None = None
    """What the session printed (stdout, stderr), once closed."""

    def died(self, timeout: float) -> bool:
        """Whether the client gave the session up (cut: no answer to its keepalives)."""
        try:
            self.process.wait(timeout)
        except subprocess.TimeoutExpired:
            return False
        return self.process.returncode == 255

    def ended(self) -> bool:
        return self.process.poll() is not None

    def close(self) -> tuple[str, str]:
        """Stop the client; what the session printed (the same on every call)."""
        if self.said is not None:
            return self.said
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(10)
        out = self.process.stdout.read() if self.process.stdout else b""
        err = self.process.stderr.read() if self.process.stderr else b""
        for stream in (self.process.stdin, self.process.stdout, self.process.stderr):
            if stream is not None:
                stream.close()
        self.said = out.decode(errors="replace"), err.decode(errors="replace")
        return self.said


@dataclass
class Watch:
    process: subprocess.Popen[str]
    events: list[tuple[str, float]] = field(default_factory=list)
    unread: bytes = b""
    """What the prober wrote past the last whole line (read from its pipe's descriptor:
    a text stream's own buffer would hide lines already read from `select`)."""

    def first_up_after(self, moment: float, timeout: float) -> float | None:
        """time.time() of the first successful connect after `moment` (None: none in
        `timeout` s)."""
        assert self.process.stdout is not None
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for state, when in self.events:
                if state == "up" and when >= moment:
                    return when
            line = self._readline(deadline - time.monotonic())
            if line is None:
                return None
            self.events.extend(_event(line))
        return None

    def _readline(self, timeout: float) -> str | None:
        """The prober's next line; None when none comes within `timeout` s (or it ended)."""
        import select

        assert self.process.stdout is not None
        descriptor = self.process.stdout.fileno()
        stop = time.monotonic() + timeout
        while b"\n" not in self.unread:
            ready, _, _ = select.select([descriptor], [], [], max(0.0, stop - time.monotonic()))
            if not ready:
                return None
            chunk = os.read(descriptor, 4096)
            if not chunk:
                return None
            self.unread += chunk
        line, _, self.unread = self.unread.partition(b"\n")
        return line.decode()


def _event(line: str) -> list[tuple[str, float]]:
    """``up TIME``/``down TIME`` from tests.lab.probe; from ``ping -D -O``: a reply
    (``[TIME] N bytes from``) is up, ``[TIME] no answer yet`` down."""
    line = line.strip()
    if line.startswith(("up ", "down ")):
        state, _, when = line.partition(" ")
        return [(state, float(when))]
    if line.startswith("[") and "]" in line:
        when, _, rest = line[1:].partition("]")
        return [("up" if "bytes from" in rest else "down", float(when))]
    return []


def _listener_pid(sshd_wrapper: int) -> int | None:
    """sshd itself: the wrapper (ip netns exec / unshare / mounts) execs into it."""
    for pid in [sshd_wrapper, *_descendants(sshd_wrapper)]:
        with suppress(OSError):
            if Path(f"/proc/{pid}/exe").resolve() == Path(SSHD).resolve():
                return pid
    return None


def _descendants(pid: int) -> list[int]:
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        with suppress(OSError):
            stat = (entry / "stat").read_text()
            parent = int(stat.rsplit(")", 1)[1].split()[1])
            children.setdefault(parent, []).append(int(entry.name))
    found: list[int] = []
    pending = list(children.get(pid, []))
    while pending:
        child = pending.pop()
        found.append(child)
        pending.extend(children.get(child, []))
    return found


def namespace_pids(namespace: str) -> list[int]:
    """The processes in network namespace `namespace` (none once it is gone)."""
    listed = run(["ip", "netns", "pids", namespace], check=False)
    return [int(pid) for pid in listed.stdout.split()] if listed.returncode == 0 else []


def kill_all(pids: list[int]) -> None:
    for pid in pids:
        with suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)


def require_ssh_lab() -> None:
    needs_tools("ip", "ssh", "ssh-keygen", "nsenter", "unshare", "ethtool", "ping", SSHD)


def build(lab: Lab, number: int, shadow: str | None = None,
          private: tuple[str, ...] = ()) -> SshLab:
    """The lab: namespaces, the veth path, addresses, routes, keys, sshd started and a
    login over it checked. `number` (1-200) keeps several labs' subnets apart;
    `shadow` replaces the accounts sshd reads (a test of a refused login); `private`
    names more system folders the session sees as the lab's own (``/run/wireguard``:
    the sockets of its wireguard-go daemons, so several labs can each run a ``wg0``)."""
    require_ssh_lab()
    server, client = lab.namespace("s"), lab.namespace("c")
    # Daemons a session started detached (wireguard-go, from wg-quick) outlive sshd and
    # would keep the namespace alive after `ip netns del`.
    lab.defer(lambda: kill_all(namespace_pids(server)))
    uplink, far = lab.name("up"), lab.name("fa")
    net = f"10.{200 + number // 100}.{number % 100}"
    server_ip, client_ip, alias = f"{net}.1", f"{net}.2", f"10.{210 + number // 100}." \
                                                          f"{number % 100}.2"
    run(["ip", "-n", server, "link", "add", uplink, "type", "veth", "peer", "name", far,
         "netns", client])
    run(["ip", "-n", server, "addr", "add", f"{server_ip}/24", "dev", uplink])
    run(["ip", "-n", client, "addr", "add", f"{client_ip}/24", "dev", far])
    run(["ip", "-n", client, "addr", "add", f"{alias}/32", "dev", "lo"])
    for ns, dev in ((server, uplink), (client, far)):
        run(["ip", "-n", ns, "link", "set", dev, "up"])
    # A veth hands segmentation-offloaded super-packets over whatever the MTU of the
    # end that receives them; a NIC drops a frame above its MTU. With offloads off on
    # the client's end, each frame is checked against the server's MTU like a NIC's.
    run(["ip", "netns", "exec", client, "ethtool", "-K", far, "tso", "off", "gso", "off"])
    run(["ip", "-n", server, "route", "add", f"{alias.rsplit('.', 1)[0]}.0/24", "via",
         client_ip, "dev", uplink])
    work = Path(run(["mktemp", "-d", "/tmp/zsn-sshlab-XXXXXX"]).stdout.strip())
    lab.defer(lambda: run(["rm", "-rf", str(work)], check=False))
    ssh_lab = SshLab(lab, server, client, uplink, far, server_ip, client_ip, alias, work)
    _keys(work)
    for system_path in (*BOUND, *private):
        Path(system_path).mkdir(parents=True, exist_ok=True)  # a mount point must exist
        folder = work / ("bound" + system_path.replace("/", "-"))
        folder.mkdir(mode=0o755)
        ssh_lab.folders[system_path] = folder
    _start_sshd(ssh_lab, _shadow(work, shadow))
    _check_login(ssh_lab)
    return ssh_lab


@contextmanager
def built(number: int) -> Iterator[SshLab]:
    """A lab of its own (`build`), closed afterwards: a test module's fixture."""
    require_lab(("ip", "ping"))
    lab = Lab()
    try:
        yield build(lab, number)
    finally:
        lab.close()


def _keys(work: Path) -> None:
    for name in ("host_key", "client_key"):
        run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(work / name)])
    (work / "authorized_keys").write_text((work / "client_key.pub").read_text())


def unlocked_shadow(passwd: str) -> str:
    """A shadow file for the accounts of `passwd`: no password works (``*``), no
    account is locked (``!``), nothing expires."""
    names = [line.split(":", 1)[0] for line in passwd.splitlines() if ":" in line]
    return "".join(f"{name}:*:::::::\n" for name in names)


def _shadow(work: Path, shadow: str | None) -> Path:
    """sshd's /etc/shadow (`shadow`, or every account unlocked), mode 0600."""
    path = work / "shadow"
    path.touch(mode=0o600)
    path.write_text(shadow if shadow is not None
                    else unlocked_shadow(Path("/etc/passwd").read_text()))
    return path


def _start_sshd(lab: SshLab, shadow: Path) -> None:
    Path("/run/sshd").mkdir(mode=0o755, exist_ok=True)  # sshd's privilege separation dir
    config = lab.work / "sshd_config"
    config.write_text("\n".join([
        "ListenAddress 0.0.0.0", "ListenAddress ::", "Port 22",
        f"HostKey {lab.work / 'host_key'}",
        f"PidFile {lab.work / 'sshd.pid'}",
        f"AuthorizedKeysFile {lab.work / 'authorized_keys'}", "StrictModes no",
        "PermitRootLogin prohibit-password", "UsePAM no", "PasswordAuthentication no",
        "KbdInteractiveAuthentication no", "PrintMotd no", "PrintLastLog no",
        "LogLevel INFO", "MaxStartups 100:30:200",
        "SetEnv PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", ""]))
    binds = {str(folder): system for system, folder in lab.folders.items()}
    binds[str(shadow)] = "/etc/shadow"
    log = open(lab.work / "sshd.log", "wb")  # noqa: SIM115 - closed with the lab
    lab.sshd = subprocess.Popen(
        ["ip", "netns", "exec", lab.server,
         *private_argv(binds, [SSHD, "-D", "-e", "-f", str(config)])],
        stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT, cwd=REPO)
    sshd = lab.sshd

    def stop() -> None:
        kill_all(lab.session_processes())  # sessions outlive their listener otherwise
        stop_process(sshd)
        log.close()

    lab.lab.defer(stop)
    wait_for(lambda: lab.probe(1.0) or sshd.poll() is not None, 30, "sshd to answer")
    if sshd.poll() is not None:
        raise RuntimeError(f"sshd exited: {(lab.work / 'sshd.log').read_text()[-2000:]}")


class LoginRefused(RuntimeError):
    """The lab's sshd answers but will not let the lab's key in."""


def _check_login(lab: SshLab) -> None:
    """One login with the lab's key: a lab whose every session would be refused fails
    here, with the reasons, rather than each scenario waiting out its deadlines."""
    result = lab.run("true", timeout=CONNECT_TIMEOUT + 30)
    if result.returncode == 0:
        return
    raise LoginRefused(
        f"ssh root@{lab.target[0]} with the lab's key failed (exit {result.returncode}): "
        f"{result.stderr.strip()}\nsshd said:\n{lab.sshd_said()}")
