"""Run one command with a private /run/wireguard that holds only the sockets a test
chooses, and measure it.

wireguard-go's UAPI sockets live in one directory shared by every namespace and by
everyone testing on the machine: a hostile socket put there would reach other
people's exports, and theirs would reach ours. `run_isolated` starts this module
under ``unshare --mount`` (a private mount namespace): /run/wireguard becomes an
empty tmpfs, the real sockets the test names are bind-mounted into it, hostile
servers (`tests.lab.hostile`) bind theirs there, and the command runs. Nothing
outside the namespace sees any of it, and it all goes when the command ends.

The result carries the command's exit status, output, wall time and peak RSS
(from ``wait4``'s rusage, so it is the command's own, not the helper's).
"""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from tests.needs import needs_tools

SOCKET_DIR = Path("/run/wireguard")
_REPO = Path(__file__).resolve().parents[2]
MEMORY_LIMIT = 2 << 30
"""Address space the measured command may use."""


@dataclass(frozen=True)
class Measured:
    returncode: int
    stdout: str
    stderr: str
    seconds: float
    max_rss_bytes: int


def run_isolated(argv: list[str], *, keep: list[Path], hostile: dict[str, str],
                 timeout: float = 120.0) -> Measured:
    """Run `argv` seeing only the sockets in `keep` and hostile servers ``{name: mode}``
    (``name`` becomes ``/run/wireguard/NAME.sock``)."""
    needs_tools("unshare", "mount")
    spec = {"argv": argv, "keep": [p.name for p in keep], "hostile": hostile,
            "timeout": timeout}
    result = subprocess.run(
        ["unshare", "--mount", "--propagation", "private", sys.executable, "-m",
         "tests.lab.isolated", json.dumps(spec)],
        cwd=_REPO, capture_output=True, text=True, timeout=timeout + 30, check=False,
    )
    if result.returncode != 0:
        raise RuntimeError(f"isolated run failed: {result.stderr.strip()}")
    data = json.loads(result.stdout)
    return Measured(data["returncode"], data["stdout"], data["stderr"], data["seconds"],
                    data["max_rss_kib"] * 1024)


def _mount(*args: str) -> None:
    subprocess.run(["mount", *args], check=True, capture_output=True)


def _limit_memory() -> None:
    # A command that does read without bound fails with MemoryError here instead of
    # taking the machine (everyone's tests) down with it.
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_LIMIT, MEMORY_LIMIT))


def _measure(argv: list[str], timeout: float) -> dict[str, object]:
    started = time.monotonic()
    process = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               stdin=subprocess.DEVNULL, preexec_fn=_limit_memory)
    output: dict[str, bytes] = {}

    def drain(name: str, stream: object) -> None:
        output[name] = stream.read()  # type: ignore[attr-defined]

    readers = [threading.Thread(target=drain, args=(name, stream))
               for name, stream in (("stdout", process.stdout), ("stderr", process.stderr))]
    for reader in readers:
        reader.start()
    killer = threading.Timer(timeout, process.kill)
    killer.start()
    try:
        _pid, status, usage = os.wait4(process.pid, 0)
    finally:
        killer.cancel()
    process.returncode = os.waitstatus_to_exitcode(status)
    for reader in readers:
        reader.join(timeout=10)
    return {
        "returncode": process.returncode,
        "stdout": output.get("stdout", b"").decode("utf-8", "replace"),
        "stderr": output.get("stderr", b"").decode("utf-8", "replace"),
        "seconds": time.monotonic() - started,
        "max_rss_kib": usage.ru_maxrss,
    }


def main(spec: dict[str, object]) -> None:
    view = Path(tempfile.mkdtemp(prefix="zsn-wg-view-"))
    servers: list[subprocess.Popen[bytes]] = []
    try:
        _mount("--bind", str(SOCKET_DIR), str(view))
        _mount("-t", "tmpfs", "-o", "mode=0755", "tmpfs", str(SOCKET_DIR))
        for name in spec["keep"]:  # type: ignore[attr-defined]
            (SOCKET_DIR / name).touch()
            _mount("--bind", str(view / name), str(SOCKET_DIR / name))
        for name, mode in spec["hostile"].items():  # type: ignore[attr-defined]
            path = SOCKET_DIR / f"{name}.sock"
            servers.append(subprocess.Popen(
                [sys.executable, "-m", "tests.lab.hostile", mode, str(path)], cwd=_REPO,
                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
            deadline = time.monotonic() + 10
            while not path.exists():
                if time.monotonic() > deadline:
                    raise RuntimeError(f"hostile server {name} did not start")
                time.sleep(0.02)
        measured = _measure(list(spec["argv"]), float(spec["timeout"]))  # type: ignore[call-overload,arg-type]
    finally:
        for server in servers:
            server.kill()
            server.wait(timeout=5)
        subprocess.run(["umount", str(view)], check=False, capture_output=True)
        view.rmdir()
    print(json.dumps(measured))


if __name__ == "__main__":
    main(json.loads(sys.argv[1]))
