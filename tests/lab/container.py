"""A real systemd booted with systemd-nspawn, inside a network namespace the test made.

The cached rootfs (tests/lab/rootfs.py) is the read-only lower layer of an overlay,
so each container starts clean and leaves the cache untouched. The container's
/run/dbus, /run/openvpn-client and /run/wireguard (UAPI sockets) are host
directories bound in, and the same
directories are bind-mounted onto the overlay on the host, so `Host(root)` finds
the container's system bus and management sockets where `--root` expects them.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from tests.lab.netns import Lab, run
from tests.lab.rootfs import ensure_rootfs
from zsn.system.dbus import SYSTEMD, SYSTEMD_MANAGER, SYSTEMD_PATH, SystemBus, run_sync
from zsn.system.host import Host

SHARED_RUN_DIRS = ("dbus", "openvpn-client", "wireguard", "zsn")


@dataclass(frozen=True)
class Container:
    name: str
    root: Path
    host: Host
    log: Path
    init: int = 0
    """The container's PID 1 (its systemd), as this machine numbers it: nsenter it."""

    def run_inside(self, argv: list[str], timeout: float = 120) -> subprocess.CompletedProcess[str]:
        """`argv` inside the container (its mount, PID, network, IPC and UTS namespaces)."""
        return subprocess.run(["nsenter", "-t", str(self.init), "-m", "-p", "-n", "-i", "-u",
                               *argv], capture_output=True, text=True, timeout=timeout,
                              check=False)


def python_binds() -> list[str]:
    """nspawn options that show the container this machine's Python, zsn's venv and the
    checkout at their own paths, read-only, so zsn (and a guardian unit) runs inside."""
    import sys

    venv, checkout = Path(sys.prefix), Path(__file__).resolve().parents[2]
    interpreter = Path(os.path.realpath(sys.executable))
    base = Path(sys.base_prefix)
    version = f"python{sys.version_info[0]}.{sys.version_info[1]}"
    trees = {venv, checkout, interpreter, base / "lib" / version}
    if base != Path("/usr"):
        trees = {venv, checkout, base}  # a Python of its own (pyenv): all of it
    kept = sorted(tree for tree in trees if not any(other in tree.parents for other in trees))
    return [f"--bind-ro={tree}" for tree in kept]


def _system_state(host: Host) -> str:
    async def read(bus: SystemBus) -> str:
        props = await bus.get_all(SYSTEMD, SYSTEMD_PATH, SYSTEMD_MANAGER)
        return str(props.get("SystemState", ""))

    return run_sync(host, read, timeout=3)


@contextlib.contextmanager
def booted_container(lab: Lab, netns: str, *, boot_timeout: float = 90,
                     extra: tuple[str, ...] = ()) -> Iterator[Container]:
    rootfs = ensure_rootfs()
    name = lab.name("ct")
    work = Path(tempfile.mkdtemp(prefix=f"{name}-", dir="/var/tmp"))
    merged = work / "root"
    mounts: list[Path] = []
    process: subprocess.Popen[bytes] | None = None
    log = work / "nspawn.log"
    try:
        for sub in ("upper", "work", "root"):
            (work / sub).mkdir()
        run(["mount", "-t", "overlay", "overlay", "-o",
           f"lowerdir={rootfs},upperdir={work / 'upper'},workdir={work / 'work'}", str(merged)])
        mounts.append(merged)
        binds: list[str] = []
        for sub in SHARED_RUN_DIRS:
            shared = work / f"run-{sub}"
            shared.mkdir(mode=0o755)
            target = merged / "run" / sub
            target.mkdir(parents=True, exist_ok=True)
            run(["mount", "--bind", str(shared), str(target)])
            mounts.append(target)
            binds.append(f"--bind={shared}:/run/{sub}")
        with open(log, "wb") as out:
            process = subprocess.Popen(
                ["systemd-nspawn", "--boot", "--register=no", "--keep-unit",
                 "--console=passive", f"--directory={merged}", f"--machine={name}",
                 f"--network-namespace-path=/run/netns/{netns}", "--bind=/dev/net/tun",
                 # Creating a tun device needs CAP_NET_ADMIN, which nspawn drops unless
                 # told; the container only ever sees the test's own namespace.
                 "--capability=CAP_NET_ADMIN", *binds, *extra],
                stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        host = Host(merged)
        deadline = time.monotonic() + boot_timeout
        state = ""
        while state not in ("running", "degraded"):
            if process.poll() is not None:
                raise RuntimeError(f"container exited at boot: {log.read_text()[-2000:]}")
            if time.monotonic() > deadline:
                raise TimeoutError(f"container not booted in {boot_timeout} s (state {state!r})"
                                   f": {log.read_text()[-2000:]}")
            with contextlib.suppress(Exception):
                state = _system_state(host)
            time.sleep(0.3)
        yield Container(name, merged, host, log, _init_of(process.pid))
    finally:
        if process is not None and process.poll() is None:
            # SIGTERM makes nspawn ask the container's systemd to power off cleanly.
            os.kill(process.pid, signal.SIGTERM)
            try:
                process.wait(30)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait(10)
        for mount in reversed(mounts):
            run(["umount", "--lazy", str(mount)], check=False)
        shutil.rmtree(work, ignore_errors=True)


def _init_of(nspawn: int) -> int:
    """The container's PID 1: nspawn's child (nspawn itself stays in this machine's
    namespaces)."""
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            with contextlib.suppress(OSError, ValueError, IndexError):
                stat = (entry / "stat").read_text()
                if int(stat.rsplit(")", 1)[1].split()[1]) == nspawn:
                    return int(entry.name)
    return 0
