"""The WLAN pane with 100 access points in range: CPU and terminal bytes per second.

Issue 12: a scan list of 100 BSSs, rendered and refreshed, with its CPU share and
the bytes per second it sends to the terminal. The pane is fed a *recorded*
snapshot: ``zsn --export wlan`` taken in the kernel lab from a wpa_supplicant station
that saw 100 hostapd access points on mac80211_hwsim radios (4 radios x 25 BSSes,
open, WPA2 and WPA3, one hidden per radio), kept in
tests/fixtures/wlan/export.hwsim-100-bss.json. ``--record`` boots the lab to make it
again.

    python3 bench/wlan_scan_render.py [--seconds 30] [--refresh 1] [--record]

zsn runs as a child on a pseudo-terminal (80x24, then 120x40) with its WLAN tab
shown and the default refresh (1 s). After the first frame and a 3 s settle, the
script counts for --seconds: the bytes zsn writes to the terminal and the CPU time
the child uses (user + system, from /proc), for a static scan (the same snapshot on
every refresh) and a changing one (10 access points move 1-3 dB per refresh, so
cells change and rows reorder).
"""

from __future__ import annotations

import argparse
import fcntl
import os
import pty
import select
import shutil
import signal
import struct
import subprocess
import sys
import tempfile
import termios
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
RECORDED = REPO / "tests/fixtures/wlan/export.hwsim-100-bss.json"
SETTLE = 3.0


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def measure(mode: str, size: tuple[int, int], seconds: float, refresh: float
            ) -> tuple[float, float]:
    """(CPU %, bytes/s) of zsn showing the recorded scan at `size` columns x lines."""
    columns, rows = size
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", rows, columns, 0, 0))
    env = {**os.environ, "TERM": "xterm-256color", "COLORTERM": "truecolor",
           "LANG": "C.UTF-8", "PYTHONPATH": str(REPO)}
    process = subprocess.Popen(
        [sys.executable, str(REPO / "bench/_wlan_pane_app.py"), str(RECORDED), mode,
         str(refresh)], stdin=slave, stdout=slave, stderr=slave, start_new_session=True,
        env=env, cwd=REPO)
    os.close(slave)
    try:
        output = b""
        deadline = time.monotonic() + 60
        while b"lab-" not in output:  # an SSID of the recorded scan is on screen
            if time.monotonic() > deadline:
                raise TimeoutError(f"no scan list on screen: {output[-300:]!r}")
            if select.select([master], [], [], 0.5)[0]:
                output += os.read(master, 65536)
        settle_until = time.monotonic() + SETTLE
        while time.monotonic() < settle_until:
            if select.select([master], [], [], 0.1)[0]:
                os.read(master, 65536)
        written = 0
        cpu_before = cpu_seconds(process.pid)
        started = time.monotonic()
        while (elapsed := time.monotonic() - started) < seconds:
            if select.select([master], [], [], max(0.0, min(0.5, seconds - elapsed)))[0]:
                written += len(os.read(master, 65536))
        cpu = cpu_seconds(process.pid) - cpu_before
        wall = time.monotonic() - started
        return 100 * cpu / wall, written / wall
    finally:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait()
        os.close(master)


def record() -> int:
    from tests.lab.kernel import boot

    with tempfile.TemporaryDirectory(prefix="zsn-bench-wlan-") as directory:
        results = Path(directory)
        run = boot(f"{sys.executable} bench/_wlan_guest.py record {results}", results,
                   "bench wlan record")
        if run.returncode != 0 or not (results / "export.json").exists():
            print(run.tail(40), file=sys.stderr)
            return 1
        shutil.copy(results / "export.json", RECORDED)
        print(f"recorded {RECORDED} ({(results / 'record.txt').read_text().strip()})")
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--seconds", type=float, default=30.0)
    parser.add_argument("--refresh", type=float, default=1.0)
    parser.add_argument("--record", action="store_true",
                        help="boot the kernel lab and record the 100-BSS snapshot again")
    args = parser.parse_args()
    if args.record:
        return record()
    import json

    scan = json.loads(RECORDED.read_text())["wlan"]["interfaces"][0]["scan"]
    print(f"recorded snapshot: {len(scan)} access points ({sum(e['hidden'] for e in scan)} "
          f"hidden); refresh {args.refresh:g} s; {args.seconds:g} s measured per case "
          f"after {SETTLE:g} s; load average {os.getloadavg()[0]:.2f}")
    for size in ((80, 24), (120, 40)):
        for mode in ("static", "changing"):
            cpu, rate = measure(mode, size, args.seconds, args.refresh)
            print(f"  {size[0]}x{size[1]} {mode:9s} CPU {cpu:5.1f} %   terminal "
                  f"{rate / 1024:7.2f} KiB/s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
