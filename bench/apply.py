"""`zsn apply` of a file that already matches the machine (issue 39's speed goal), as
figures.

A running wireguard-go interface with 1,000 peers and its config (`_lab.big_interface`);
the file is the machine's own `zsn state export wireguard`, so `zsn apply` reads the
machine, plans, and finds nothing to change. Goal: its time <= 1.5x that of
`zsn --export wireguard` on the same box (an idempotent run costs about one read).
Both are whole processes, interleaved round by round, bytecode written first (as for an
installed zsn: `_lab.compile_repo`). ``--against TREE`` runs both from another checkout
too, in the same rounds: before and after under one load.

Run as root from the repository root: python3 bench/apply.py [--runs 20] [--peers 1000]
[--against TREE]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from _lab import (
    REPO,
    big_interface,
    compile_repo,
    interleaved,
    isolate,
    repo_env,
    require,
    zsn_from,
)

INTERFACE = "zbnapply0"
GOAL_RATIO = 1.5
WARMUP = 3
"""Rounds `interleaved` runs before it times any (their CPU times are left out too)."""


def zsn(*argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "zsn", *argv], cwd=REPO, check=True,
                          capture_output=True, text=True, env=repo_env())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--peers", type=int, default=1000)
    parser.add_argument("--against", metavar="TREE",
                        help="also time both commands from this checkout, same rounds")
    args = parser.parse_args()
    require(["wireguard-go", "wg", "ip", "unshare", "mount"])
    isolate()
    compile_repo(*([args.against] if args.against else []))
    interface, _peers = big_interface(INTERFACE, args.peers)
    try:
        state = Path(tempfile.mkdtemp(prefix="zsn-bench-")) / "state.yaml"
        state.write_text(zsn("state", "export", "wireguard").stdout)
        planned = zsn("apply", str(state)).stdout
        if not planned.endswith("(nothing to change)\n"):
            sys.exit(f"bench: the export applied plans something:\n{planned}")
        print(f"the file: {state.stat().st_size} bytes, {args.peers} peers; applied, it "
              "plans nothing")
        # each as the `zsn` script starts it (`from zsn.cli import main`), from its tree
        trees = [("", str(REPO)), *([(f" ({args.against})", args.against)]
                                    if args.against else [])]
        cpu: dict[str, list[float]] = {}
        actions = []
        for suffix, tree in trees:
            for verb, argv in (("export", ["--export", "wireguard"]),
                               ("apply", ["apply", str(state)])):
                label = f"{verb}{suffix}"
                command = zsn_from(tree, *argv)
                cpu[label] = []
                actions.append((label, lambda command=command, label=label:
                                _counted(command, cpu[label])))
        figures = interleaved(actions, args.runs, warmup=WARMUP)
        cpu = {label: values[WARMUP:] for label, values in cpu.items()}
        for label, stats in figures.items():
            print(f"{label:42} {stats.ms()}")
        for label, values in cpu.items():
            print(f"{label:42} CPU median {statistics.median(values) * 1e3:6.0f} ms   "
                  f"min {min(values) * 1e3:6.0f} ms")
        for suffix, _tree in trees:
            wall = figures[f"apply{suffix}"].median / figures[f"export{suffix}"].median
            work = statistics.median(cpu[f"apply{suffix}"]) / \
                statistics.median(cpu[f"export{suffix}"])
            least = min(cpu[f"apply{suffix}"]) / min(cpu[f"export{suffix}"])
            print(f"apply / export{suffix}: wall {wall:.2f}x, CPU time {work:.2f}x (least "
                  f"{least:.2f}x) (goal <= {GOAL_RATIO}x): "
                  f"{'met' if max(wall, work) <= GOAL_RATIO else 'NOT met'}")
        print(f"load average after: {' '.join(f'{each:.2f}' for each in os.getloadavg())}")
    finally:
        interface.stop()


def _counted(command: list[str], cpu: list[float]) -> None:
    """Run `command` (its output to /dev/null) and note its CPU time (user + system, from
    wait4: what a busy machine's wait for a core does not inflate)."""
    process = subprocess.Popen(command, cwd=REPO, env=repo_env(), stdout=subprocess.DEVNULL)
    _, status, usage = os.wait4(process.pid, 0)
    if os.waitstatus_to_exitcode(status) != 0:
        sys.exit(f"bench: {command} exited with {os.waitstatus_to_exitcode(status)}")
    cpu.append(usage.ru_utime + usage.ru_stime)


if __name__ == "__main__":
    main()
