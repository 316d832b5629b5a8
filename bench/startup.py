"""TUI start to first frame: zsn next to a minimal Textual app (one Static), as a ratio.

Goals (issues 2 and 9): first frame <= 1.3x the minimal app, with a live interface
too; with a 5,000-peer interface, the peer table's first rows <= 1.5x the minimal
app's first frame. Run as root (the live cases start wireguard-go interfaces in a
private namespace):

    python3 bench/startup.py [--runs N] [--peers N] [--small N] [--no-live] [--against TREE]

Each app runs as a child process on its own pseudo-terminal of 80x24, exactly as
from a shell: the clock starts just before the process is spawned (so interpreter
start and every import count) and stops when the terminal has received the first
full-screen frame, i.e. Textual's first paint has reached the last row (the cursor
move to row 24 that follows its move to row 1), or when a text is on screen
("peer-0": the first peer rows). Every app is judged by the same byte-level
criterion. The app's resident memory is read once every probe was seen; the child
is then killed. Three phases, each against its own minimal-app runs: no live
interface, a small live interface (20 peers), a 5,000-peer one.
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import sys
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field

import _lab
import psutil

IFACE = "zbnstart0"
ROWS, COLUMNS = 24, 80
GOAL_RATIO = 1.3
PEERS_GOAL_RATIO = 1.5
SMALL_PEERS = 20
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
    rss: list[int] = field(default_factory=list)
    """The app's resident memory once every probe was seen."""

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
            self.rss.append(psutil.Process(child.process.pid).memory_info().rss)
        finally:
            child.stop()


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--runs", type=int, default=15, help="runs per app (default 15)")
    parser.add_argument("--peers", type=int, default=_lab.PEER_COUNT)
    parser.add_argument("--small", type=int, default=SMALL_PEERS,
                        help=f"peers of the small live interface (default {SMALL_PEERS})")
    parser.add_argument("--against", metavar="TREE",
                        help="also start zsn from this checkout in every phase, same rounds")
    parser.add_argument("--no-live", action="store_true",
                        help="skip the cases with live interfaces (no root needed)")
    args = parser.parse_args()
    if not args.no_live:
        _lab.require(["wireguard-go", "ip", "unshare", "mount"])
        _lab.isolate()
    _lab.compile_repo(*([args.against] if args.against else []))
    python = sys.executable
    print(f"python: {python}; terminal {COLUMNS}x{ROWS}; {args.runs} runs per case after "
          "one warm-up, interleaved")
    with tempfile.TemporaryDirectory(prefix="zsn-bench-root-") as empty_root:
        cases = [
            minimal_case(),
            Case("same widgets, Textual only", [python, str(_lab.REPO / "bench/_widgets_app.py")],
                 {"first frame": first_frame}),
            Case("zsn --root EMPTY", [python, "-m", "zsn", "--root", empty_root],
                 {"first frame": first_frame, "pane polled": shows("No WireGuard interfaces")}),
        ]
        if args.against:
            cases.append(Case(f"zsn from {args.against} --root EMPTY",
                              _lab.zsn_from(args.against, "--root", empty_root),
                              {"first frame": first_frame,
                               "pane polled": shows("No WireGuard interfaces")}))
        if args.no_live:
            run_phase("no live interface", cases, args.runs)
            return 0
        small, _ = _lab.big_interface(IFACE, args.small)
        try:
            cases.append(Case(f"zsn, live {IFACE} ({args.small} peers)", [python, "-m", "zsn"],
                              {"first frame": first_frame, "peers shown": shows("peer-0")}))
            cases += against_cases(args.against, args.small)
            run_phase(f"a small live interface ({args.small} peers)", cases, args.runs)
        finally:
            small.stop()
            os.remove(f"/etc/wireguard/{IFACE}.conf")
    big, _ = _lab.big_interface(IFACE, args.peers)
    try:
        run_phase(f"a big live interface ({args.peers} peers)", [
            minimal_case(),
            Case(f"zsn, live {IFACE} ({args.peers} peers)", [python, "-m", "zsn"],
                 {"first frame": first_frame, "peers shown": shows("peer-0")}),
            *against_cases(args.against, args.peers),
        ], args.runs)
    finally:
        big.stop()
    return 0


def against_cases(tree: str | None, peers: int) -> list[Case]:
    if tree is None:
        return []
    return [Case(f"zsn from {tree} ({peers} peers)", _lab.zsn_from(tree),
                 {"first frame": first_frame, "peers shown": shows("peer-0")})]


def minimal_case() -> Case:
    return Case("minimal Textual app", [sys.executable, str(_lab.REPO / "bench/_minimal_app.py")],
                {"first frame": first_frame})


def run_phase(title: str, cases: list[Case], runs: int) -> None:
    print(f"\n== {title}; load average {os.getloadavg()[0]:.2f}")
    for case in cases:
        case.run_once()
        case.times.clear()
        case.rss.clear()
    _lab.interleaved([(case.label, case.run_once) for case in cases], runs, warmup=0)
    for case in cases:
        for name in case.probes:
            stats = _lab.Stats.of(case.times[name])
            print(f"{case.label + ': ' + name:50} {stats.ms()}")
        rss = statistics.median(case.rss) / 2**20
        print(f"{case.label + ': RSS':50} median {rss:8.1f} MiB")
    base = _lab.Stats.of(cases[0].times["first frame"]).median
    print(f"ratio to the minimal app's first frame (medians; goals: first frame <= "
          f"{GOAL_RATIO}x, peers shown <= {PEERS_GOAL_RATIO}x):")
    for case in cases[1:]:
        for name in case.probes:
            if case.label.startswith("same widgets") and name != "first frame":
                continue
            ratio = _lab.Stats.of(case.times[name]).median / base
            goal = {"first frame": GOAL_RATIO, "peers shown": PEERS_GOAL_RATIO}.get(name)
            verdict = "" if goal is None or not case.label.startswith("zsn") else \
                ("   meets goal" if ratio <= goal else "   MISSES goal")
            print(f"  {case.label + ': ' + name:48} {ratio:5.2f}x{verdict}")
    print(f"load average at the end: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    sys.exit(main())
