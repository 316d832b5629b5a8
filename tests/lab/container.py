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

SHARED_RUN_DIRS = ("dbus", "openvpn-client", "wireguard")


@dataclass(frozen=True)
class Container:
    name: str
    root: Path
    host: Host
    log: Path


def _system_state(host: Host) -> str:
    async def read(bus: SystemBus) -> str:
        props = await bus.get_all(SYSTEMD, SYSTEMD_PATH, SYSTEMD_MANAGER)
        return str(props.get("SystemState", ""))

    return run_sync(host, read, timeout=3)


@contextlib.contextmanager
def booted_container(lab: Lab, netns: str, *,
                     boot_timeout: float = 90) -> Iterator[Container]:
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
                 "--capability=CAP_NET_ADMIN", *binds],
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
        yield Container(name, merged, host, log)
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
