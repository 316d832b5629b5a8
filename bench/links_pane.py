"""The Links pane idle with 500 interfaces at a 1 s refresh: CPU and terminal bytes/s,
next to the WireGuard pane idle with a 500-peer interface and a minimal Textual app.

Goal (issue 11): under 1 % CPU, and at most the WireGuard pane's idle bytes/s. Run as
root:

    python3 bench/links_pane.py [--links N] [--peers N] [--seconds S]

zsn runs as a child on its own 100x30 pseudo-terminal (TERM=xterm-256color), in a
private namespace holding only the benchmark's links. For each case the pane is
opened, left to settle (first reads, rows added 200 per frame), then for `--seconds`
the child's CPU time (user + system, all threads, from /proc via psutil) and the
bytes it wrote to the terminal are counted. Nothing moves on the links meanwhile,
so what is measured is the cost of polling and repainting an idle table.
"""

from __future__ import annotations

import argparse
import os
import re
import select
import sys
import tempfile
import time

import _lab
import _links_lab

ROWS, COLUMNS = 30, 100
_ESCAPES = re.compile(rb"\x1b\[[0-9;?<>=$]*[A-Za-z~]|\x1b\][^\x07]*\x07")


def measure(label: str, keys: bytes, ready_text: str, settle: float, seconds: float,
            argv: list[str] | None = None) -> None:
    import psutil

    child = _lab.spawn_on_pty(argv or [sys.executable, "-m", "zsn", "--refresh", "1"],
                              ROWS, COLUMNS)
    process, master = child.process, child.master
    output = bytearray()

    def pump(until: float) -> int:
        count = 0
        while True:
            left = until - time.monotonic()
            if left <= 0:
                return count
            ready, _, _ = select.select([master], [], [], left)
            if ready:
                try:
                    chunk = os.read(master, 65536)
                except OSError:
                    chunk = b""
                if not chunk:
                    raise RuntimeError(f"{label}: zsn exited")
                count += len(chunk)
                output.extend(chunk[-4096:])
                del output[:-65536]

    try:
        pump(time.monotonic() + 3)
        os.write(master, keys)
        deadline = time.monotonic() + 60
        while ready_text.encode() not in _ESCAPES.sub(b"", bytes(output)):
            if time.monotonic() > deadline:
                raise TimeoutError(f"{label}: never showed {ready_text!r}")
            pump(time.monotonic() + 0.2)
        pump(time.monotonic() + settle)
        child = psutil.Process(process.pid)
        before = child.cpu_times()
        started = time.monotonic()
        written = pump(started + seconds)
        elapsed = time.monotonic() - started
        after = child.cpu_times()
        cpu = (after.user + after.system - before.user - before.system) / elapsed * 100
        print(f"  {label:44} CPU {cpu:5.2f} %   terminal {written / elapsed:8.1f} bytes/s"
              f"   ({elapsed:.0f} s idle)")
    finally:
        child.stop()


def links_tab_key() -> bytes:
    """The number key of the Links tab (its place in the domain registry)."""
    from zsn.domains import REGISTRY

    return str(REGISTRY.index("zsn.links") + 1).encode()


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--links", type=int, default=500)
    parser.add_argument("--peers", type=int, default=500)
    parser.add_argument("--seconds", type=float, default=30.0)
    parser.add_argument("--settle", type=float, default=8.0)
    args = parser.parse_args()
    _lab.require(["ip", "unshare", "mount", "wireguard-go"])
    _lab.isolate()
    names = _links_lab.veths(args.links)
    interface, _peers = _lab.big_interface("zbnpane0", args.peers)
    try:
        print(f"\nidle panes at --refresh 1, terminal {COLUMNS}x{ROWS} "
              f"(load average {os.getloadavg()[0]:.2f}):")
        measure(f"Links pane, {len(names) + 2} links", links_tab_key(), names[0],
                args.settle, args.seconds)
        measure(f"WireGuard pane, {args.peers} peers", b"", "peer-0", args.settle,
                args.seconds)
        measure("minimal Textual app (reference)", b"", "minimal textual app", args.settle,
                args.seconds, [sys.executable, str(_lab.REPO / "bench/_minimal_app.py")])
        with tempfile.TemporaryDirectory(prefix="zsn-bench-root-") as empty:
            measure("zsn --root EMPTY, no pane data (reference)", b"",
                    "No WireGuard interfaces", args.settle, args.seconds,
                    [sys.executable, "-m", "zsn", "--refresh", "1", "--root", empty])
    finally:
        interface.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
