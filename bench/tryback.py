"""Time from a try's deadline to the restored path (issue 19). Run as root:

    python3 bench/tryback.py [--rounds N] [--kernel]

Goal: the median over the lock-out scenarios <= 2 s beyond SECONDS, that is, the
first successful TCP connect to the SSH server at most 2 s after the deadline.

Each round runs the never-confirmed lock-out scenarios of
tests/integration/test_tryback_ssh.py (a real sshd in one namespace, the client in
another, zsn inside the session, the change cutting it; SECONDS = 6), and with
``--kernel`` those of the kernel lab guest too (tests/kernel/test_tryback.py: the
bond, the session's VLAN deleted, a Wi-Fi disconnect; one boot, SECONDS = 12, the guest's
clock). A prober in the client's namespace starts a TCP connect every 50 ms (200 ms
in the guest), several in flight (tests/lab/probe.py), once zsn began the change, so
a SYN lost to the cut path never hides the moment it comes back; the figure is the
time of the first connect that completes after the deadline the change's record
holds, minus that deadline. Both clocks are the same machine's wall clock (the guest's
for the guest). The scenarios record the figure next to their junit report.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
FIGURES = "tryback-figures.jsonl"
GOAL = 2.0
KERNEL = " (kernel lab)"


def host_round(folder: Path) -> list[tuple[str, float]]:
    report = folder / "junit.xml"
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-k",
         "never_confirmed", f"--junitxml={report}", "tests/integration/test_tryback_ssh.py"],
        cwd=REPO, capture_output=True, text=True, check=False)
    if result.returncode != 0:
        print(result.stdout[-3000:], file=sys.stderr)
        raise SystemExit("the host scenarios failed: no figure")
    return read(folder)


def kernel_round(folder: Path) -> list[tuple[str, float]]:
    from tests.lab.kernel import run_group

    outcome = run_group("tryback", folder)
    if outcome.failures or outcome.run.returncode != 0:
        print(outcome.run.tail(), file=sys.stderr)
        raise SystemExit("the kernel lab scenarios failed: no figure")
    return read(folder)


def read(folder: Path) -> list[tuple[str, float]]:
    lines = (folder / FIGURES).read_text().splitlines()
    return [(item["scenario"], float(item["deadline_to_path"]))
            for item in map(json.loads, lines)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=3, help="host rounds (default 3)")
    parser.add_argument("--kernel", action="store_true",
                        help="also the kernel lab guest's scenarios (one boot)")
    parser.add_argument("--keep", type=Path, metavar="DIR",
                        help="keep each round's junit report, figures and (guest) sshd log "
                             "in DIR")
    args = parser.parse_args()
    figures: dict[str, list[float]] = {}
    load_before = os.getloadavg()[0]
    with tempfile.TemporaryDirectory(prefix="zsn-bench-tryback-") as temporary:
        work = args.keep or Path(temporary)
        for number in range(args.rounds):
            folder = work / f"host-{number}"
            folder.mkdir(parents=True)
            for scenario, seconds in host_round(folder):
                figures.setdefault(scenario, []).append(seconds)
        if args.kernel:
            folder = work / "kernel"
            for scenario, seconds in kernel_round(folder):
                figures.setdefault(f"{scenario}{KERNEL}", []).append(seconds)
    width = max(len(name) for name in figures)
    print(f"{'scenario':<{width}}  deadline -> first connect (s), per round")
    for scenario, values in figures.items():
        print(f"{scenario:<{width}}  " + "  ".join(f"{value:5.3f}" for value in values))
    print()
    guest = {name: values for name, values in figures.items() if name.endswith(KERNEL)}
    if guest:
        host = {name: values for name, values in figures.items() if name not in guest}
        print(summary("host", host))
        print(summary("kernel lab guest", guest))
    print(summary("all", figures))
    print(f"load average (1 min) {load_before:.1f} before, {os.getloadavg()[0]:.1f} after")


def summary(label: str, figures: dict[str, list[float]]) -> str:
    every = [value for values in figures.values() for value in values]
    median = statistics.median(every)
    # Inclusive: the 90th percentile of a few runs lies between them, never beyond the max.
    p90 = statistics.quantiles(every, n=10, method="inclusive")[-1] if len(every) > 1 \
        else every[0]
    return (f"{label}: {len(figures)} scenarios, {len(every)} runs: median {median:.3f} s, "
            f"p90 {p90:.3f} s, max {max(every):.3f} s beyond SECONDS (goal <= {GOAL:g} s: "
            f"{'met' if median <= GOAL else 'NOT met'})")

if __name__ == "__main__":
    main()
