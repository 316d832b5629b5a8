"""An idle TUI on a real terminal: bytes written per second and CPU, zsn next to htop.

Goal (issue 9): idle, zsn writes at most what htop writes on the same screen, and
uses under 1 % of a core with 200 peers. Run as root:

    python3 bench/idle.py [--seconds 20] [--peers 200,5000] [--size 80x24]

For each peer count a wireguard-go interface with that many peers (and their
config, so they have names) is started in a private namespace; zsn (live root,
default 1 s refresh) runs on its own pseudo-terminal of the given size, exactly as
from a shell. Once its peers are on screen and it has settled (two refreshes, so
rates have their first values), every byte it writes to the terminal is counted
for --seconds, and its CPU time (user + system, from /proc through psutil) is
read before and after. htop runs on the same terminal size for the same time, at
its default delay (1.5 s) and at 1 s like zsn. The peers never handshake (their
endpoints are TEST-NET addresses), so nothing on zsn's screen should change:
what it writes is pure overhead. RSS is printed too. With ``ZSN_BENCH_CAPTURE=DIR``
each case's idle output is written to DIR (a file per case) for a look at its bytes.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import _lab
import psutil

IFACE = "zbnidle0"
SETTLE_SECONDS = 3.0
_ESCAPES = re.compile(rb"\x1b\[[0-9;?<>=$]*[A-Za-z~]|\x1b\][^\x07]*\x07")


@dataclass
class Idle:
    label: str
    bytes_per_second: float
    cpu_percent: float
    rss_mib: float
    main_thread_percent: float = 0.0
    """The process's first thread's share (Textual's loop, for zsn): the rest is
    its other threads, those that ended meanwhile included."""


def measure(label: str, argv: list[str], rows: int, columns: int, seconds: float,
            ready: bytes | None, keys: bytes = b"") -> Idle:
    """`keys` are typed once the first frame is drawn (e.g. a tab's number)."""
    child = _lab.spawn_on_pty(argv, rows, columns)
    try:
        if keys:
            child.read(3)
            os.write(child.master, keys)
        if ready is not None:
            def shown(output: bytes) -> bool:
                return ready in _ESCAPES.sub(b"", output)

            if child.read(60, shown) is None:
                raise TimeoutError(f"{label}: {ready!r} never shown")
        child.read(SETTLE_SECONDS)
        process = psutil.Process(child.process.pid)
        before = process.cpu_times()
        main_before = _main_thread_seconds(process)
        written = len(child.output)
        started = time.perf_counter()
        child.read(seconds)
        elapsed = time.perf_counter() - started
        after = process.cpu_times()
        main_after = _main_thread_seconds(process)
        rss = process.memory_info().rss
        capture = os.environ.get("ZSN_BENCH_CAPTURE")
        if capture:  # what the idle window sent, one file per case
            name = "".join(c if c.isalnum() else "-" for c in label.lower())
            Path(capture, f"{name}.out").write_bytes(bytes(child.output[written:]))
    finally:
        child.stop()
    cpu = (after.user + after.system) - (before.user + before.system)
    return Idle(label, (len(child.output) - written) / elapsed, 100 * cpu / elapsed,
                rss / 2**20, 100 * (main_after - main_before) / elapsed)


def _main_thread_seconds(process: psutil.Process) -> float:
    main = next(thread for thread in process.threads() if thread.id == process.pid)
    return main.user_time + main.system_time


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--seconds", type=float, default=20.0)
    parser.add_argument("--peers", default="200,5000",
                        help="comma-separated peer counts (default 200,5000)")
    parser.add_argument("--size", default="80x24", help="terminal COLUMNSxROWS")
    args = parser.parse_args()
    columns, rows = (int(part) for part in args.size.split("x"))
    _lab.require(["wireguard-go", "ip", "unshare", "mount", "htop"])
    _lab.isolate()
    _lab.compile_repo()
    python = sys.executable
    results: list[Idle] = []
    print(f"terminal {columns}x{rows}, {args.seconds:g} s each after {SETTLE_SECONDS:g} s "
          f"to settle; load average {os.getloadavg()[0]:.2f}")
    for count in (int(part) for part in args.peers.split(",")):
        interface, _ = _lab.big_interface(IFACE, count)
        try:
            results.append(measure(f"zsn, {count} peers", [python, "-m", "zsn"], rows,
                                   columns, args.seconds, b"peer-00000"))
        finally:
            interface.stop()
            os.remove(f"/etc/wireguard/{IFACE}.conf")
    htop = shutil.which("htop") or "htop"
    results.append(measure("htop (default delay 1.5 s)", [htop], rows, columns,
                           args.seconds, b"Load average"))
    results.append(measure("htop -d 10 (1 s, like zsn)", [htop, "-d", "10"], rows, columns,
                           args.seconds, b"Load average"))
    print()
    print(f"{'':34} {'bytes/s':>10} {'CPU %':>8} {'RSS MiB':>8}")
    for result in results:
        print(f"{result.label:34} {result.bytes_per_second:10.1f} "
              f"{result.cpu_percent:8.2f} {result.rss_mib:8.1f}")
    reference = next(r for r in results if r.label.startswith("htop (default"))
    print()
    print("ratio of bytes/s to htop's (default delay); goal <= 1.0 and CPU < 1 % at 200 peers:")
    for result in results:
        if result.label.startswith("zsn"):
            ratio = result.bytes_per_second / reference.bytes_per_second \
                if reference.bytes_per_second else float("inf")
            print(f"  {result.label:32} {ratio:6.2f}x")
    print(f"load average at the end: {os.getloadavg()[0]:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
