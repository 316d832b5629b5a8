"""ZFS in the QEMU kernel lab: `zsn --export zfs` against the zpool/zfs commands it
replaces, and the ZFS pane's idle CPU with its iostat children.

Layout (issue 13): 3 pools of 4 two-way mirrors (24 file vdevs, sparse files in a
tmpfs) and 200 datasets. Goals and figures:

- `zsn --export zfs`, the whole process, at most 1.5x the time of running
  `zpool list -Hp`, `zpool status -p` and `zfs list -Hp` one after another, in the same
  run: wall clock from spawn to exit, one of each per round in rotating order, medians.
  zsn runs as an installed zsn would: a copy of the package in the guest's tmpfs,
  compiled to bytecode, started by Debian's python3 from `/` (the export needs no
  third-party module). With ``--against REF`` the same rounds also time zsn as it is at
  git REF (e.g. ``main``), copied and compiled alike. Measured twice: with the lab's
  uncached 9p /usr, then with the cached share of the same /usr (a page cache, as on
  a real machine) for both zsn and the commands.
- The pane at 1 s refresh, idle, in a 120x40 tmux: CPU % (of one core) of zsn plus
  its `zpool iostat` children, sampled with psutil over 30 s after a 20 s warm-up.

Run as root on the host (boots one guest under the lab's lock, ~5 minutes):

    .venv/bin/python bench/zfs.py [--against main] [--runs 20]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

BASE = Path("/run/zsnbench")
HOST_SHARE = "/run/zsn-host"
"""Where the lab's guest mounts the host's root a second time, cached (tests/lab/kernel.py)."""
POOLS = ("bench1", "bench2", "bench3")
DATASETS = 200
MIRRORS = 4
GOAL = 1.5
BASELINE = "zpool list -Hp >/dev/null; zpool status -p >/dev/null; zfs list -Hp >/dev/null"
COMMANDS = "zpool list; zpool status; zfs list"
FOUR = "(zsn's 4 commands at once)"
PYTHON = "(python3 -c pass)"


def sh(*argv: str) -> str:
    return subprocess.run(argv, check=True, capture_output=True, text=True,
                          timeout=300).stdout


def build_layout() -> None:
    subprocess.run(["modprobe", "zfs"], check=True)
    BASE.mkdir(parents=True, exist_ok=True)
    sh("mount", "-t", "tmpfs", "-o", "size=1800m", "tmpfs", str(BASE))
    (BASE / "vdev").mkdir()
    for pool in POOLS:
        vdevs: list[str] = []
        for mirror in range(MIRRORS):
            pair = [str(BASE / "vdev" / f"{pool}-{mirror}-{side}") for side in "ab"]
            for path in pair:
                sh("truncate", "-s", "64M", path)
            vdevs += ["mirror", *pair]
        sh("zpool", "create", "-f", "-o", "ashift=12", "-O", "compression=lz4",
           "-m", f"{BASE}/{pool}", pool, *vdevs)
    names = [f"{POOLS[number % len(POOLS)]}/ds{number}"
             for number in range(DATASETS - len(POOLS))]
    # Side by side: creations that run together share a transaction group's sync.
    with ThreadPoolExecutor(8) as creating:
        list(creating.map(lambda name: sh("zfs", "create", name), names))


def installed_copy(source: Path, target: Path) -> Path:
    """zsn's package copied into the tmpfs and compiled: what an installed zsn reads
    at start-up (pip compiles a package it installs)."""
    shutil.copytree(source, target / "zsn", ignore=shutil.ignore_patterns("__pycache__", "tui"))
    sh("/usr/bin/python3", "-m", "compileall", "-q", str(target / "zsn"))
    return target


def zsn_command(path: Path) -> str:
    # From /: started from the checkout, `python3 -m` would import the checkout's zsn.
    return f"cd / && env PYTHONPATH={path} /usr/bin/python3 -m zsn --export zfs"


def timed_rounds(commands: dict[str, str], rounds: int, warmup: int = 2) -> dict[str, Any]:
    """Wall time of each shell command from spawn to exit, one of each per round in
    rotating order (the host's load, shared with other work, hits them alike)."""
    names = list(commands)
    times: dict[str, list[float]] = {name: [] for name in names}
    for number in range(warmup + rounds):
        for name in names[number % len(names):] + names[:number % len(names)]:
            started = time.perf_counter()
            subprocess.run(["sh", "-c", commands[name]], stdout=subprocess.DEVNULL,
                           stderr=subprocess.DEVNULL, check=False, timeout=300)
            if number >= warmup:
                times[name].append(time.perf_counter() - started)
    timings = {}
    for name, values in times.items():
        values.sort()
        timings[name] = {"median": statistics.median(values), "min": values[0],
                         "p90": values[min(len(values) - 1, int(0.9 * len(values)))]}
    return timings


def export_versus_commands(results: Path, runs: int, against: str | None) -> dict[str, Any]:
    commands = {"zsn --export zfs": zsn_command(installed_copy(REPO / "zsn", BASE / "py"))}
    if against:
        commands[f"zsn --export zfs ({against})"] = zsn_command(
            installed_copy(results / "against" / "zsn", BASE / "py-against"))
    commands[COMMANDS] = BASELINE
    # References, to say where zsn's time goes: the four commands the export runs, all
    # at once and nothing else (how much the guest's two vCPUs overlap them), and the
    # interpreter starting and stopping.
    columns = ("name,size,allocated,free,fragmentation,capacity,dedupratio,health,ashift,"
               "freeing,leaked,readonly")
    properties = ("name,type,used,available,referenced,compressratio,recordsize,compression,"
                  "atime,relatime,xattr,mountpoint,creation,zsn:use")
    commands[FOUR] = (f"zpool list -Hp -o {columns} >/dev/null & zpool status -p -P >/dev/null & "
                      f"zfs list -Hp -t filesystem,volume -o {properties} >/dev/null & "
                      "zpool iostat -HpvlP >/dev/null & wait")
    commands[PYTHON] = "/usr/bin/python3 -c pass"
    check = subprocess.run(["sh", "-c", commands["zsn --export zfs"]], capture_output=True,
                           text=True, timeout=120)
    document = json.loads(check.stdout)["zfs"]
    timings = {"uncached": timed_rounds(commands, runs)}
    # The lab shares the host's /usr over 9p without a cache: every stat and open of a
    # program, library or stdlib module goes to the host (importing a small stdlib
    # module took 20-80 ms). A real machine has them in its page cache: the lab's
    # cached share of the same /usr, bound over it, is measured too.
    sh("mount", "--bind", f"{HOST_SHARE}/usr", "/usr")
    timings["cached"] = timed_rounds(commands, runs)
    return {"timings": timings, "exit_code": check.returncode,
            "errors": document.get("errors", []), "pools": len(document["pools"]),
            "vdevs": sum(1 for p in document["pools"] for v in p["vdevs"]
                         if v["kind"] in ("file", "disk")),
            "datasets": len(document["datasets"]),
            "findings": len(document["findings"])}


def pane_idle(seconds: float = 30.0, warmup: float = 20.0) -> dict[str, object]:
    import psutil

    session = "zsnbenchzfs"
    command = f"cd {REPO} && exec {sys.executable} -m zsn --refresh 1"
    sh("tmux", "new-session", "-d", "-s", session, "-x", "120", "-y", "40", command)
    try:
        pane_pid = int(sh("tmux", "list-panes", "-t", session, "-F", "#{pane_pid}").strip())
        time.sleep(8)
        sh("tmux", "send-keys", "-t", session, "3")
        time.sleep(warmup)
        zsn = psutil.Process(pane_pid)

        def tree_cpu() -> tuple[float, float, int]:
            """CPU seconds of zsn and everything it ran (the reaped zpool reads count in
            its children's times), of zsn's own process, and the iostat streams."""
            total = own = 0.0
            streams = 0
            for process in [zsn, *zsn.children(recursive=True)]:
                try:
                    times = process.cpu_times()
                    total += times.user + times.system + times.children_user + \
                        times.children_system
                    if process.pid == zsn.pid:
                        own = times.user + times.system
                    if "iostat" in process.cmdline():
                        streams += 1
                except psutil.NoSuchProcess:
                    pass
            return total, own, streams

        before, own_before, streams = tree_cpu()
        started = time.monotonic()
        time.sleep(seconds)
        after, own_after, _ = tree_cpu()
        wall = time.monotonic() - started
        screen = sh("tmux", "capture-pane", "-p", "-t", session)
    finally:
        subprocess.run(["tmux", "kill-session", "-t", session], check=False)
    return {"cpu_percent": 100 * (after - before) / wall,
            "zsn_percent": 100 * (own_after - own_before) / wall, "iostat_streams": streams,
            "seconds": wall, "screen_has_pools": all(p in screen for p in POOLS)}


def in_guest(results: Path, runs: int, against: str | None) -> None:
    started = time.monotonic()
    build_layout()
    print(f"layout built in {time.monotonic() - started:.0f} s", flush=True)
    try:
        figures = {"export": export_versus_commands(results, runs, against),
                   "pane": pane_idle()}
    finally:
        for pool in POOLS:
            subprocess.run(["zpool", "destroy", "-f", pool], check=False)
        subprocess.run(["umount", "-l", str(BASE)], check=False)
    (results / "figures.json").write_text(json.dumps(figures, indent=2))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--against", metavar="REF",
                        help="also time zsn as it is at this git ref, in the same run")
    parser.add_argument("--runs", type=int, default=15, help="rounds (default: 15)")
    parser.add_argument("--in-guest", metavar="DIR", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.in_guest:
        in_guest(Path(args.in_guest), args.runs, args.against)
        return 0
    from tests.lab.kernel import boot

    results = Path(tempfile.mkdtemp(prefix="zsn-bench-zfs-"))
    os.chmod(results, 0o755)
    if args.against:
        archive = subprocess.run(["git", "-C", str(REPO), "archive", args.against, "zsn"],
                                 check=True, capture_output=True).stdout
        (results / "against").mkdir()
        subprocess.run(["tar", "-x", "-C", str(results / "against")], input=archive,
                       check=True)
    against = f" --against {args.against}" if args.against else ""
    run = boot(f"{sys.executable} bench/zfs.py --runs {args.runs}{against} --in-guest {results}",
               results, "bench zfs", timeout=2400, cpus=2)  # its figures are 2 vCPUs' (idle host)
    figures_path = results / "figures.json"
    if run.returncode != 0 or not figures_path.exists():
        print(run.tail(40))
        return 1
    figures = json.loads(figures_path.read_text())
    export = figures["export"]
    print(f"layout: {export['pools']} pools, {export['vdevs']} vdevs, "
          f"{export['datasets']} datasets, {export['findings']} findings "
          f"(guest kernel {run.boot.kernel}, TCG, 2 vCPUs); export errors: "
          f"{export['errors'] or 'none'}")
    ratios = []
    for mode, timings in export["timings"].items():
        baseline = timings[COMMANDS]["median"]
        print(f"\n/usr {mode} ({args.runs} rounds){'':<17} {'median':>8} {'min':>8} "
              f"{'p90':>8}  x commands")
        for name, timing in timings.items():
            print(f"{name:<40} {timing['median'] * 1000:6.0f}ms {timing['min'] * 1000:6.0f}ms "
                  f"{timing['p90'] * 1000:6.0f}ms  {timing['median'] / baseline:.2f}")
        ratios.append(timings["zsn --export zfs"]["median"] / baseline)
        print(f"zsn --export zfs / (zpool list + zpool status + zfs list): {ratios[-1]:.2f} "
              f"(goal <= {GOAL}) {'OK' if ratios[-1] <= GOAL else 'OVER'}")
    pane = figures["pane"]
    print(f"pane idle at 1 s: {pane['cpu_percent']:.1f}% of one core for zsn and its "
          f"{pane['iostat_streams']} zpool iostat children over {pane['seconds']:.0f} s, of "
          f"which zsn itself {pane['zsn_percent']:.1f}% (pools on screen: "
          f"{pane['screen_has_pools']})")
    return 0 if max(ratios) <= GOAL else 1


if __name__ == "__main__":
    raise SystemExit(main())
