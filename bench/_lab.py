"""Shared set-up for the benchmarks: a private namespace and a big wireguard-go interface.

Every benchmark re-executes itself under ``unshare --mount --net``: wireguard-go's
UAPI sockets live in one directory shared by every network namespace (and by other
people's test labs), so the benchmark mounts its own tmpfs on ``/run/wireguard``
and ``/etc/wireguard``. zsn (live root ``/``) and ``wg`` then see exactly the
benchmark's interface and config, nothing else, and whatever the benchmark creates
disappears with the namespace even if it is killed.
"""

from __future__ import annotations

import atexit
import base64
import contextlib
import ctypes
import fcntl
import ipaddress
import os
import pty
import random
import select
import shutil
import signal
import statistics
import struct
import subprocess
import sys
import termios
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from zsn.wireguard import uapi  # noqa: E402  (needs the repo on sys.path first)

ISOLATED_ENV = "ZSN_BENCH_ISOLATED"
PRIVATE_DIRS = ("/run/wireguard", "/etc/wireguard", "/var/lib/zsn")
"""Private tmpfs each: the benchmark's interfaces and configs, and the peer history a
polling zsn (the TUI, zsn serve) writes for them, never the machine's own."""
PEER_COUNT = 5000
_PR_SET_PDEATHSIG = 1


def require(tools: Sequence[str]) -> None:
    problems = [f"missing tool: {tool}" for tool in tools if shutil.which(tool) is None]
    if os.geteuid() != 0:
        problems.append("needs root (network/mount namespaces, wireguard-go)")
    if not Path("/dev/net/tun").exists():
        problems.append("/dev/net/tun is missing")
    if problems:
        sys.exit("bench: " + "; ".join(problems))


def isolate(extra: Sequence[str] = ()) -> None:
    """Re-run this script in private mount and network namespaces (see module doc);
    `extra` folders get a private tmpfs too (a mount point this creates on the
    machine, e.g. /var/lib/zsn, is removed again at exit)."""
    if os.environ.get(ISOLATED_ENV) != "1":
        env = dict(os.environ, **{ISOLATED_ENV: "1"})
        argv = ["unshare", "--mount", "--net", "--propagation", "private",
                sys.executable, *sys.argv]
        os.execvpe("unshare", argv, env)
    for directory in (*PRIVATE_DIRS, *extra):
        if not os.path.isdir(directory):
            os.makedirs(directory)
            atexit.register(_remove_mount_point, directory)
        subprocess.run(["mount", "-t", "tmpfs", "-o", "mode=0700", "zsn-bench", directory],
                       check=True)
    subprocess.run(["ip", "link", "set", "lo", "up"], check=True)


def _remove_mount_point(directory: str) -> None:
    subprocess.run(["umount", directory], check=False, capture_output=True)
    with contextlib.suppress(OSError):
        os.rmdir(directory)


def repo_env() -> dict[str, str]:
    """Environment for child processes that must import zsn from this checkout.

    Bytecode is written and used, as for an installed zsn (pip compiles it): with
    PYTHONDONTWRITEBYTECODE set (some sandboxes do), every start would compile
    zsn's modules from source, ~20 ms that no installed copy pays.
    """
    env = dict(os.environ)
    env["PYTHONPATH"] = str(REPO) + (os.pathsep + env["PYTHONPATH"] if "PYTHONPATH" in env else "")
    env.pop(ISOLATED_ENV, None)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    return env


def compile_repo(*others: str) -> None:
    """Write zsn's bytecode before timing anything (see `repo_env`), also for the trees
    compared with `--against`."""
    for root in (str(REPO), *others):
        subprocess.run([sys.executable, "-m", "compileall", "-q", f"{root}/zsn"],
                       check=True, stdout=subprocess.DEVNULL, env=repo_env())


def zsn_from(tree: str, *args: str) -> list[str]:
    """argv that runs zsn with `args` from another checkout `tree` (e.g. an export of
    main: ``git archive main | tar -x -C /tmp/main``), to compare in the same run: as
    ``python -m zsn`` runs it."""
    code = (f"import runpy, sys; sys.path.insert(0, {tree!r}); sys.argv[1:] = {list(args)!r}; "
            "runpy.run_module('zsn', run_name='__main__', alter_sys=True)")
    return [sys.executable, "-c", code]


def _die_with_parent() -> None:
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)


def b64(raw: bytes) -> str:
    return base64.b64encode(raw).decode("ascii")


def clamp(raw: bytes) -> bytes:
    key = bytearray(raw)
    key[0] &= 248
    key[31] = (key[31] & 127) | 64
    return bytes(key)


@dataclass
class Peer:
    name: str
    public_key: bytes
    allowed_ip: str
    endpoint: str | None
    keepalive: int | None
    preshared_key: bytes | None


def make_peers(count: int = PEER_COUNT, seed: int = 2) -> list[Peer]:
    """`count` peers with random (not derived) public keys and one distinct /32 each.

    Every third peer has an endpoint (TEST-NET-3 addresses, never reached: the link
    stays down), every fifth a persistent keepalive, every tenth a preshared key.
    """
    rng = random.Random(seed)
    base = int(ipaddress.IPv4Address("10.64.0.2"))
    peers = []
    for index in range(count):
        peers.append(Peer(
            name=f"peer-{index:05d}",
            public_key=rng.randbytes(32),
            allowed_ip=f"{ipaddress.IPv4Address(base + index)}/32",
            endpoint=f"203.0.113.{index % 250 + 1}:{20000 + index}" if index % 3 == 0 else None,
            keepalive=25 if index % 5 == 0 else None,
            preshared_key=rng.randbytes(32) if index % 10 == 0 else None,
        ))
    return peers


@dataclass
class WgGoInterface:
    """A wireguard-go interface with many peers, stopped (process killed, link deleted) by
    `stop`, which also runs at exit."""

    name: str
    private_key: bytes = field(default_factory=lambda: clamp(os.urandom(32)))
    listen_port: int = 51820
    process: subprocess.Popen[bytes] | None = None

    @property
    def socket(self) -> Path:
        return Path(f"/run/wireguard/{self.name}.sock")

    def start(self) -> None:
        if not self.name.startswith("zbn") or len(self.name) > 15:
            raise ValueError(f"interface name {self.name!r}: zbn prefix, at most 15 characters")
        atexit.register(self.stop)
        self.process = subprocess.Popen(
            ["wireguard-go", "-f", self.name],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
            preexec_fn=_die_with_parent,  # only sets PDEATHSIG: wireguard-go dies with us
        )
        deadline = time.monotonic() + 10
        while not self.socket.exists():
            if self.process.poll() is not None:
                error = self.process.stderr.read().decode(errors="replace") if \
                    self.process.stderr else ""
                raise RuntimeError(f"wireguard-go exited: {error.strip()}")
            if time.monotonic() > deadline:
                raise TimeoutError(f"{self.socket} did not appear within 10 s")
            time.sleep(0.02)

    def load(self, peers: Sequence[Peer]) -> float:
        """Set the device key, port and every peer in one UAPI set; return its seconds."""
        lines = [f"private_key={self.private_key.hex()}", f"listen_port={self.listen_port}",
                 "replace_peers=true"]
        for peer in peers:
            lines.append(f"public_key={peer.public_key.hex()}")
            if peer.preshared_key:
                lines.append(f"preshared_key={peer.preshared_key.hex()}")
            if peer.endpoint:
                lines.append(f"endpoint={peer.endpoint}")
            if peer.keepalive:
                lines.append(f"persistent_keepalive_interval={peer.keepalive}")
            lines.append(f"allowed_ip={peer.allowed_ip}")
        started = time.perf_counter()
        uapi.set_device(self.socket, lines, timeout=120)
        return time.perf_counter() - started

    def write_config(self, directory: Path, peers: Sequence[Peer]) -> Path:
        """A wg-quick config for this interface with a ``# name`` comment above each peer."""
        out = ["[Interface]", f"PrivateKey = {b64(self.private_key)}",
               f"ListenPort = {self.listen_port}", "Address = 10.64.0.1/16", ""]
        for peer in peers:
            out += [f"# {peer.name}", "[Peer]", f"PublicKey = {b64(peer.public_key)}"]
            if peer.preshared_key:
                out.append(f"PresharedKey = {b64(peer.preshared_key)}")
            out.append(f"AllowedIPs = {peer.allowed_ip}")
            if peer.endpoint:
                out.append(f"Endpoint = {peer.endpoint}")
            if peer.keepalive:
                out.append(f"PersistentKeepalive = {peer.keepalive}")
            out.append("")
        path = directory / f"{self.name}.conf"
        path.write_text("\n".join(out), encoding="utf-8")
        path.chmod(0o600)
        return path

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(5)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(5)
        self.process = None
        subprocess.run(["ip", "link", "del", self.name], capture_output=True, check=False)


def big_interface(name: str, count: int = PEER_COUNT) -> tuple[WgGoInterface, list[Peer]]:
    """Start `name`, load `count` peers, write /etc/wireguard/NAME.conf, check the count."""
    interface = WgGoInterface(name)
    interface.start()
    peers = make_peers(count)
    seconds = interface.load(peers)
    interface.write_config(Path("/etc/wireguard"), peers)
    loaded = len(uapi.get_device(interface.socket).peers)
    if loaded != count:
        raise RuntimeError(f"{name}: {loaded} peers loaded, expected {count}")
    print(f"set-up: {name} (wireguard-go) with {count} peers, loaded by one UAPI set "
          f"in {seconds:.2f} s; /etc/wireguard/{name}.conf names every peer")
    return interface, peers


# -- a terminal ------------------------------------------------------------------

TERMINAL_ENV = {"TERM": "xterm-256color", "COLORTERM": "truecolor", "LANG": "C.UTF-8"}


@dataclass
class PtyChild:
    """A program on its own pseudo-terminal, as from a shell over SSH; everything it
    writes to the terminal is read (and counted) here."""

    process: subprocess.Popen[bytes]
    master: int
    started: float
    output: bytearray = field(default_factory=bytearray)

    def read(self, seconds: float, until: Callable[[bytes], bool] | None = None) -> float | None:
        """Read for `seconds`, or until `until(output)`; return the time (from spawn) at
        which `until` held, None when it did not."""
        deadline = time.perf_counter() + seconds
        while True:
            left = deadline - time.perf_counter()
            if left <= 0:
                return None
            ready, _, _ = select.select([self.master], [], [], min(left, 0.5))
            if not ready:
                continue
            try:
                chunk = os.read(self.master, 65536)
            except OSError:  # the child closed the terminal
                chunk = b""
            if not chunk:
                raise RuntimeError(f"{self.process.args!r} exited: "
                                   f"{bytes(self.output[-300:])!r}")
            self.output += chunk
            if until is not None and until(bytes(self.output)):
                return time.perf_counter() - self.started

    def stop(self) -> None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.process.pid, signal.SIGKILL)
        self.process.wait()
        os.close(self.master)


def spawn_on_pty(argv: list[str], rows: int = 24, columns: int = 80) -> PtyChild:
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", rows, columns, 0, 0))
    started = time.perf_counter()
    process = subprocess.Popen(argv, stdin=slave, stdout=slave, stderr=slave,
                               start_new_session=True, env=repo_env() | TERMINAL_ENV,
                               cwd=REPO)
    os.close(slave)
    return PtyChild(process, master, started)


# -- statistics ---------------------------------------------------------------

def percentile(values: Sequence[float], fraction: float) -> float:
    """Nearest-rank percentile (p90 of 50 runs is the 45th smallest)."""
    ordered = sorted(values)
    rank = max(1, min(len(ordered), round(fraction * len(ordered) + 0.5)))
    return ordered[rank - 1]


@dataclass(frozen=True)
class Stats:
    runs: int
    median: float
    p90: float
    minimum: float

    @classmethod
    def of(cls, values: Sequence[float]) -> Stats:
        return cls(len(values), statistics.median(values), percentile(values, 0.9), min(values))

    def ms(self) -> str:
        return (f"median {self.median * 1e3:8.2f} ms   p90 {self.p90 * 1e3:8.2f} ms   "
                f"min {self.minimum * 1e3:8.2f} ms   (n={self.runs})")


def interleaved(actions: Sequence[tuple[str, Callable[[], object]]], runs: int,
                warmup: int = 3) -> dict[str, Stats]:
    """Time every action `runs` times, one of each per round (order rotating each round),
    so that load from other processes on a shared machine hits every action alike."""
    for _ in range(warmup):
        for _, action in actions:
            action()
    times: dict[str, list[float]] = {label: [] for label, _ in actions}
    for round_number in range(runs):
        shift = round_number % len(actions)
        for label, action in [*actions[shift:], *actions[:shift]]:
            started = time.perf_counter()
            action()
            times[label].append(time.perf_counter() - started)
    return {label: Stats.of(values) for label, values in times.items()}
