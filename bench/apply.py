"""`zsn apply` of a file that already matches the machine (issue 39's speed goal), as
figures.

A running wireguard-go interface with 1,000 peers and its config (`_lab.big_interface`);
the file is the machine's own `zsn state export wireguard`, so `zsn apply` reads the
machine, plans, and finds nothing to change. Goal: its wall time <= 1.5x that of
`zsn --export wireguard` on the same box (an idempotent run costs about one read).
Both are whole processes, interleaved round by round.

Run as root from the repository root: python3 bench/apply.py [--runs 20] [--peers 1000]
"""

from __future__ import annotations

import argparse
import resource
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from _lab import REPO, big_interface, interleaved, isolate, require

INTERFACE = "zbnapply0"
GOAL_RATIO = 1.5


def zsn(*argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "zsn", *argv], cwd=REPO, check=True,
                          capture_output=True, text=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--peers", type=int, default=1000)
    args = parser.parse_args()
    require(["wireguard-go", "wg", "ip", "unshare", "mount"])
    isolate()
    interface, _peers = big_interface(INTERFACE, args.peers)
    try:
        state = Path(tempfile.mkdtemp(prefix="zsn-bench-")) / "state.yaml"
        state.write_text(zsn("state", "export", "wireguard").stdout)
        planned = zsn("apply", str(state)).stdout
        if not planned.endswith("(nothing to change)\n"):
            sys.exit(f"bench: the export applied plans something:\n{planned}")
        print(f"the file: {state.stat().st_size} bytes, {args.peers} peers; applied, it "
              "plans nothing")
        cpu: dict[str, list[float]] = {"export": [], "apply": []}

        def counted(label: str, *argv: str) -> None:
            before = resource.getrusage(resource.RUSAGE_CHILDREN)
            zsn(*argv)
            after = resource.getrusage(resource.RUSAGE_CHILDREN)
            cpu[label].append(after.ru_utime + after.ru_stime - before.ru_utime
                              - before.ru_stime)

        figures = interleaved([("zsn --export wireguard",
                                lambda: counted("export", "--export", "wireguard")),
                               ("zsn apply (nothing to change)",
                                lambda: counted("apply", "apply", str(state)))], args.runs)
        for label, stats in figures.items():
            print(f"{label:32} {stats.ms()}")
        ratio = figures["zsn apply (nothing to change)"].median / \
            figures["zsn --export wireguard"].median
        print(f"apply / export: {ratio:.2f}x (goal <= {GOAL_RATIO}x): "
              f"{'met' if ratio <= GOAL_RATIO else 'NOT met'}")
        # CPU time (user + system) of each whole process: what a busy machine's wait
        # for a core does not inflate.
        medians = {label: statistics.median(values) for label, values in cpu.items()}
        print(f"CPU time, median: export {medians['export'] * 1e3:.0f} ms, apply "
              f"{medians['apply'] * 1e3:.0f} ms: {medians['apply'] / medians['export']:.2f}x")
    finally:
        interface.stop()


if __name__ == "__main__":
    main()
