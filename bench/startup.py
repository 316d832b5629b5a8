"""TUI start to first frame: zsn next to a minimal Textual app (one Static), as a ratio.

Goal (issue 2): zsn <= 1.3x the minimal app. Run as root (the live case starts a
wireguard-go interface in a private namespace):

    python3 bench/startup.py [--runs N] [--peers N]

Each app runs as a child process on its own pseudo-terminal of 80x24, exactly as
from a shell: the clock starts just before the process is spawned (so interpreter
start and every import count) and stops when the terminal has received the first
full-screen frame, i.e. Textual's first paint has reached the last row (the cursor
move to row 24 that follows its move to row 1). Both apps are judged by that same
byte-level criterion. The child is then killed.
"""

from __future__ import annotations

import argparse
import os
import re
import sys
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field

import _lab

IFACE = "zbnstart0"
ROWS, COLUMNS = 24, 80
GOAL_RATIO = 1.3
TIMEOUT = 30.0
_FIRST_ROW = b"\x1b[1;1H"
_LAST_ROW = f"\x1b[{ROWS};1H".encode()
_ESCAPES = re.compile(rb"\x1b\[[0-9;?<>=$]*[A-Za-z~]|\x1b\][^\x07]*\x07")

Probe = Callable[[bytes], bool]


def first_frame(output: bytes) -> bool:
    start = output.find(_FIRST_ROW)
    return start >= 0 and output.find(_LAST_ROW, start) >= 0


def shows(text: str) -> Probe:
    """True once `text` is on the terminal (escape sequences removed)."""
    wanted = text.encode()
    return lambda output: wanted in _ESCAPES.sub(b"", output)


@dataclass
class Case:
    label: str
    argv: list[str]
    probes: dict[str, Probe]
    times: dict[str, list[float]] = field(default_factory=dict)

    def run_once(self) -> None:
        child = _lab.spawn_on_pty(self.argv, ROWS, COLUMNS)
        pending = dict(self.probes)
        try:
            while pending:
                def seen(output: bytes) -> bool:
                    return any(probe(output) for probe in pending.values())

                when = child.read(TIMEOUT, seen)
                if when is None:
                    raise TimeoutError(f"{self.label}: never saw {', '.join(pending)}")
                output = bytes(child.output)
                for name, probe in list(pending.items()):
                    if probe(output):
                        self.times.setdefault(name, []).append(when)
                        del pending[name]
        finally:
            child.stop()


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--runs", type=int, default=15, help="runs per app (default 15)")
    parser.add_argument("--peers", type=int, default=_lab.PEER_COUNT)
    parser.add_argument("--no-live", action="store_true",
                        help="skip the case with a live 5,000-peer interface (no root needed)")
    args = parser.parse_args()
    interface = None
    if not args.no_live:
        _lab.require(["wireguard-go", "ip", "unshare", "mount"])
        _lab.isolate()
        interface, _ = _lab.big_interface(IFACE, args.peers)
    _lab.compile_repo()
    try:
        return run_benchmarks(args.runs, not args.no_live)
    finally:
        if interface is not None:
            interface.stop()


def run_benchmarks(runs: int, live: bool) -> int:
    python = sys.executable
    frame = {"first frame": first_frame}
    with tempfile.TemporaryDirectory(prefix="zsn-bench-root-") as empty_root:
        cases = [
            Case("minimal Textual app", [python, str(_lab.REPO / "bench/_minimal_app.py")],
                 dict(frame)),
            Case("same widgets, Textual only", [python, str(_lab.REPO / "bench/_widgets_app.py")],
                 dict(frame)),
            Case("zsn --root EMPTY", [python, "-m", "zsn", "--root", empty_root],
                 frame | {"pane polled": shows("No WireGuard interfaces")}),
        ]
        if live:
            cases.append(Case(f"zsn (root /, {IFACE} live)", [python, "-m", "zsn"],
                              frame | {"peers shown": shows("peer-0")}))
        print(f"python: {python}; terminal {COLUMNS}x{ROWS}; {runs} runs per case after one "
              f"warm-up, interleaved; load average {os.getloadavg()[0]:.2f}")
        for case in cases:
            case.run_once()
            case.times.clear()
        _lab.interleaved([(case.label, case.run_once) for case in cases], runs, warmup=0)
        print()
        for case in cases:
            for name in case.probes:
                stats = _lab.Stats.of(case.times[name])
                print(f"{case.label + ': ' + name:46} {stats.ms()}")
        base = _lab.Stats.of(cases[0].times["first frame"]).median
        print()
        print(f"ratio to the minimal app's first frame (medians; goal <= {GOAL_RATIO}x):")
        for case in cases[1:]:
            for name in case.probes:
                if case.label.startswith("same widgets") and name != "first frame":
                    continue
                ratio = _lab.Stats.of(case.times[name]).median / base
                goal = "" if name != "first frame" or not case.label.startswith("zsn") else \
                    ("   meets goal" if ratio <= GOAL_RATIO else "   MISSES goal")
                print(f"  {case.label + ': ' + name:44} {ratio:5.2f}x{goal}")
        print(f"load average at the end: {os.getloadavg()[0]:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
