"""`zsn --export` with a 5,000-peer interface: wall time and peak memory of the process.

Goals: under 0.3 s (issue 2); `zsn --export wireguard` at most 5x `wg show all dump`
in the same run (issue 9). Run as root:

    python3 bench/export.py [--runs N] [--peers N] [--against TREE]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import _lab

IFACE = "zbnexp0"
GOAL_SECONDS = 0.3
WG_RATIO_GOAL = 5.0


@dataclass
class Child:
    """Wall time and peak RSS of each run of one command, stdout written to a file."""

    argv: list[str]
    out_path: str
    seconds: list[float] = field(default_factory=list)
    peak_kib: list[int] = field(default_factory=list)
    exit_codes: set[int] = field(default_factory=set)

    def run_once(self) -> None:
        with open(self.out_path, "wb") as out:
            started = time.perf_counter()
            process = subprocess.Popen(self.argv, stdout=out, stderr=subprocess.DEVNULL,
                                       env=_lab.repo_env(), cwd=_lab.REPO)
            # wait4 gives this child's own rusage; ru_maxrss is its RSS high-water mark.
            _, status, usage = os.wait4(process.pid, 0)
            self.seconds.append(time.perf_counter() - started)
        process.returncode = os.waitstatus_to_exitcode(status)
        self.exit_codes.add(process.returncode)
        self.peak_kib.append(usage.ru_maxrss)


def check_json(path: str, peers: int) -> str:
    with open(path, encoding="utf-8") as handle:
        document = json.load(handle)
    interfaces = document["wireguard"]["interfaces"]
    ours = next(i for i in interfaces if i["name"] == IFACE)
    named = sum(1 for p in ours["peers"] if p["name"])
    if len(ours["peers"]) != peers:
        raise RuntimeError(f"export has {len(ours['peers'])} peers, expected {peers}")
    return f"{len(ours['peers'])} peers, {named} named, {os.path.getsize(path):,} bytes"


def check_prometheus(path: str, peers: int) -> str:
    with open(path, encoding="utf-8") as handle:
        text = handle.read()
    samples = text.count("wireguard_received_bytes_total{")
    if samples != peers:
        raise RuntimeError(f"prometheus export has {samples} peers, expected {peers}")
    return f"{samples} peers per metric family, {len(text):,} bytes"


def offline_tree(tmp: str) -> str:
    """A --root tree holding a link to the interface's socket and its config: zsn reads the
    same device and names, but a root other than / never touches netlink."""
    root = Path(tmp) / "root"
    (root / "run/wireguard").mkdir(parents=True)
    (root / "etc/wireguard").mkdir(parents=True)
    (root / f"run/wireguard/{IFACE}.sock").symlink_to(f"/run/wireguard/{IFACE}.sock")
    shutil.copy2(f"/etc/wireguard/{IFACE}.conf", root / f"etc/wireguard/{IFACE}.conf")
    return str(root)


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--runs", type=int, default=20, help="timed runs per command (default 20)")
    parser.add_argument("--peers", type=int, default=_lab.PEER_COUNT)
    parser.add_argument("--against", metavar="TREE",
                        help="also time `--export wireguard` from this checkout, same rounds")
    args = parser.parse_args()
    _lab.require(["wireguard-go", "ip", "unshare", "mount"])
    _lab.isolate()
    _lab.compile_repo(*([args.against] if args.against else []))
    interface, _ = _lab.big_interface(IFACE, args.peers)
    try:
        return run_benchmarks(args.runs, args.peers, args.against)
    finally:
        interface.stop()


def run_benchmarks(runs: int, peers: int, against: str | None = None) -> int:
    python = sys.executable
    with tempfile.TemporaryDirectory(prefix="zsn-bench-") as tmp:
        commands: list[tuple[str, Child, Callable[[str, int], str] | None]] = [
            ("zsn --export", Child([python, "-m", "zsn", "--export"], f"{tmp}/a.json"),
             check_json),
            ("zsn --export wireguard",
             Child([python, "-m", "zsn", "--export", "wireguard"], f"{tmp}/w.json"),
             check_json),
            ("wg show all dump", Child(["wg", "show", "all", "dump"], f"{tmp}/wg.txt"), None),
            ("zsn --export --format prometheus",
             Child([python, "-m", "zsn", "--export", "--format", "prometheus"],
                   f"{tmp}/b.prom"), check_prometheus),
            ("zsn --export --root TREE (no netlink)",
             Child([python, "-m", "zsn", "--export", "--root", offline_tree(tmp)],
                   f"{tmp}/g.json"), check_json),
            *([(f"zsn --export wireguard from {against}",
                Child(_lab.zsn_from(against, "--export", "wireguard"), f"{tmp}/h.json"),
                check_json)] if against else []),
            ("python3 -c pass (baseline)", Child([python, "-c", "pass"], f"{tmp}/c"), None),
            ("python3 -c 'import zsn.cli'",
             Child([python, "-c", "import zsn.cli"], f"{tmp}/d"), None),
            ("python3 -c 'import pyroute2'",
             Child([python, "-c", "import pyroute2"], f"{tmp}/e"), None),
            ("python3 -c 'import ...x25519'",
             Child([python, "-c", "import cryptography.hazmat.primitives.asymmetric.x25519"],
                   f"{tmp}/f"), None),
        ]
        print(f"each command: {runs} runs after 2 warm-ups, interleaved; wall time from "
              "spawn to exit (interpreter start, imports, live read of root /, encoding, "
              "writing stdout to a file); peak = the child's ru_maxrss (wait4)")
        for _ in range(2):
            for _, child, _ in commands:
                child.run_once()
        for child in (c for _, c, _ in commands):
            child.seconds.clear()
            child.peak_kib.clear()
        _lab.interleaved([(label, child.run_once) for label, child, _ in commands], runs,
                         warmup=0)
        print()
        for label, child, check in commands:
            stats = _lab.Stats.of(child.seconds)
            peak = sorted(child.peak_kib)[len(child.peak_kib) // 2] / 1024
            print(f"{label:38} {stats.ms()}")
            print(f"{'':38} peak RSS median {peak:6.1f} MiB (max "
                  f"{max(child.peak_kib) / 1024:.1f} MiB); exit codes {sorted(child.exit_codes)}")
            if check is not None:
                print(f"{'':38} output: {check(child.out_path, peers)}")
        print()
        for label, child, check in commands:
            if check is None or "TREE" in label:
                continue
            median = _lab.Stats.of(child.seconds).median
            verdict = "meets goal" if median < GOAL_SECONDS else "MISSES goal"
            print(f"goal < {GOAL_SECONDS:.1f} s: {label:38} {median:.3f} s   {verdict}")
        by_label = {label: child for label, child, _ in commands}
        for label in by_label:
            if not label.startswith("zsn --export wireguard"):
                continue
            ratios = [a / b for a, b in zip(by_label[label].seconds,
                                            by_label["wg show all dump"].seconds, strict=True)]
            ratio = _lab.Stats.of(ratios).median
            verdict = "meets goal" if ratio <= WG_RATIO_GOAL else "MISSES goal"
            print(f"goal <= {WG_RATIO_GOAL:.0f}x: {label} / wg show all dump, "
                  f"median of per-round ratios {ratio:.2f}x   {verdict}")
    in_process_phases(runs)
    return 0


def in_process_phases(runs: int) -> None:
    """Where an export's time goes once everything is imported (this process, warm)."""
    from zsn.exporter import document as export
    from zsn.system.host import Host

    host = Host()
    result = export.collect(host, [])
    phases: list[tuple[str, Callable[[], object]]] = [
        ("export.collect (live read + dicts)", lambda: export.collect(host, [])),
        ("export.to_json (indent=2)", lambda: export.to_json(result)),
        ("json.dumps compact, for comparison", lambda: json.dumps(result.document)),
        ("export.to_prometheus", lambda: export.to_prometheus(result)),
    ]
    stats = _lab.interleaved(phases, runs)
    print("\nin-process phases (imports already done; not part of the goal):")
    for label, _ in phases:
        print(f"  {label:36} {stats[label].ms()}")


if __name__ == "__main__":
    sys.exit(main())
