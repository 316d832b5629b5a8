"""Network namespaces, veth pairs and wireguard-go instances for integration tests.

Everything gets a unique name (wireguard-go's UAPI sockets are shared by every
namespace) and is removed at teardown, in reverse order, even when a test fails.
"""

from __future__ import annotations

import base64
import contextlib
import os
import secrets
import shutil
import subprocess
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from tests.needs import unavailable

REQUIRED_TOOLS = ("ip", "wireguard-go", "wg", "ping")


def require_lab(tools: tuple[str, ...] = REQUIRED_TOOLS) -> None:
    """Skip (or, under CI, fail) when the lab cannot run here."""
    missing = [tool for tool in tools if shutil.which(tool) is None]
    problems = []
    if os.geteuid() != 0:
        problems.append("root is needed for network namespaces")
    if missing:
        problems.append(f"missing tools: {', '.join(missing)}")
    if not Path("/dev/net/tun").exists():
        problems.append("/dev/net/tun is missing")
    if problems:
        unavailable("lab unavailable: " + "; ".join(problems))


def run(
    argv: list[str], timeout: float = 15, check: bool = True
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(argv, capture_output=True, text=True, timeout=timeout, check=check)


def new_private_key() -> str:
    raw = bytearray(secrets.token_bytes(32))
    raw[0] &= 248
    raw[31] = (raw[31] & 127) | 64
    return base64.b64encode(bytes(raw)).decode()


def wait_for(predicate: Callable[[], bool], timeout: float, what: str,
             interval: float = 0.05) -> None:
    """`predicate` true within `timeout` s, asked every `interval` s (longer for one
    that costs: a full read of a daemon on the kernel lab's slow guest)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(interval)
    raise TimeoutError(f"timed out after {timeout} s waiting for {what}")


def stop_process(process: subprocess.Popen[bytes] | subprocess.Popen[str],
                 grace: float = 10) -> None:
    """Terminate a daemon a test started; kill it if it does not go within `grace` s."""
    if process.poll() is not None:
        return
    process.terminate()
    try:
        process.wait(grace)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait(5)


def processes() -> Iterator[tuple[int, list[bytes]]]:
    """Every process's pid and argv (NUL-split, as /proc has it), skipping any that exit
    while read: for finding daemons a test did not start itself."""
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            argv = (entry / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        yield int(entry.name), argv


def kill_leftover_wireguard(names: list[str]) -> None:
    """wireguard-go daemons zsn started (through wg-quick) for the interfaces `names`,
    if they outlived their namespace, and their sockets."""
    for pid, argv in processes():
        words = [word.decode(errors="replace") for word in argv if word]
        if len(words) >= 2 and words[0].endswith("wireguard-go") and words[-1] in names:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, 15)
    for name in names:
        Path(f"/var/run/wireguard/{name}.sock").unlink(missing_ok=True)


@dataclass
class Lab:
    tag: str = field(default_factory=lambda: "zt" + secrets.token_hex(3))
    _cleanups: list[Callable[[], object]] = field(default_factory=list)
    _daemons: dict[str, subprocess.Popen[bytes]] = field(default_factory=dict)

    def name(self, suffix: str) -> str:
        name = f"{self.tag}{suffix}"
        assert len(name) <= 15, name
        return name

    def defer(self, cleanup: Callable[[], object]) -> None:
        self._cleanups.append(cleanup)

    def namespace(self, suffix: str) -> str:
        name = self.name(suffix)
        run(["ip", "netns", "add", name])
        self.defer(lambda: run(["ip", "netns", "del", name], check=False))
        run(["ip", "-n", name, "link", "set", "lo", "up"])
        return name

    def veth(self, ns_a: str | None, addr_a: str, ns_b: str, addr_b: str,
             suffix: str = "") -> None:
        """A veth pair from `ns_a` (None: this namespace) to `ns_b`; `suffix` tells a lab's
        several pairs apart."""
        a, b = self.name(f"va{suffix}"), self.name(f"vb{suffix}")
        run(["ip", "link", "add", a, "type", "veth", "peer", "name", b])
        for dev, ns, addr in ((a, ns_a, addr_a), (b, ns_b, addr_b)):
            ip = ["ip"]
            if ns is not None:
                run(["ip", "link", "set", dev, "netns", ns])
                ip = ["ip", "-n", ns]
            run([*ip, "addr", "add", addr, "dev", dev])
            run([*ip, "link", "set", dev, "up"])

    def veth_between(self, suffix: str, ns_a: str, ns_b: str) -> tuple[str, str]:
        """A veth pair with one end in `ns_a` and the other in `ns_b`, left unconfigured;
        removed at teardown (the names: ``a`` and ``b`` before `suffix`)."""
        a, b = self.name(f"a{suffix}"), self.name(f"b{suffix}")
        run(["ip", "link", "add", a, "type", "veth", "peer", "name", b])
        self.defer(lambda: run(["ip", "link", "del", a], check=False))
        run(["ip", "link", "set", a, "netns", ns_a])
        run(["ip", "link", "set", b, "netns", ns_b])
        return a, b

    def wireguard_go(self, ns: str, ifname: str) -> Path:
        """Start wireguard-go for `ifname` inside `ns`; return its UAPI socket."""
        socket_path = Path("/var/run/wireguard") / f"{ifname}.sock"
        process = subprocess.Popen(
            ["ip", "netns", "exec", ns, "wireguard-go", "-f", ifname],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            env={**os.environ, "WG_PROCESS_FOREGROUND": "1"},
        )
        self._daemons[ifname] = process

        def stop() -> None:
            self.stop_daemon(ifname)

        self.defer(stop)
        wait_for(socket_path.exists, 10, f"{socket_path}")
        return socket_path

    def stop_daemon(self, ifname: str) -> None:
        # The socket goes first: wireguard-go closes its listener at once on SIGTERM but
        # leaves the file, and a socket nobody answers is a stale tunnel to every zsn
        # reading beside this test (the background labs, a scrape), not a stopped one.
        Path(f"/var/run/wireguard/{ifname}.sock").unlink(missing_ok=True)
        process = self._daemons.pop(ifname, None)
        if process is not None and process.poll() is None:
            process.terminate()
            try:
                process.wait(timeout=5)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(timeout=5)

    def file(self, path: Path, text: str, mode: int = 0o600) -> Path:
        """Write a file on the real system for the test, removed at teardown."""
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
        os.chmod(path, mode)
        self.defer(lambda: path.unlink(missing_ok=True))
        return path

    def close(self) -> None:
        errors = []
        for cleanup in reversed(self._cleanups):
            try:
                cleanup()
            except Exception as exc:  # noqa: BLE001 - clean up everything, report after
                errors.append(exc)
        self._cleanups.clear()
        if errors:
            raise errors[0]
