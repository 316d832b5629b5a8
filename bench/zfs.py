"""ZFS in the QEMU kernel lab: `zsn --export zfs` against the zpool/zfs commands it
replaces, and the ZFS pane's idle CPU with its iostat children.

Layout (issue 13): 3 pools of 4 two-way mirrors (24 file vdevs, sparse files in a
tmpfs) and 200 datasets. Goals and figures:

- `zsn --export zfs`, the whole process, at most 1.5x the time of running
  `zpool list -Hp`, `zpool status -p` and `zfs list -Hp` one after another, measured
  in the same hyperfine run. zsn runs from a copy of the package in the guest's tmpfs
  with Debian's python3 (as an installed zsn would; the export needs no third-party
  module), the commands from the same root.
- The pane at 1 s refresh, idle, in a 120x40 tmux: CPU % (of one core) of zsn plus
  its `zpool iostat` children, sampled with psutil over 30 s after a 20 s warm-up.

Run as root on the host (boots one guest under the lab's lock, ~10 minutes):

    .venv/bin/python bench/zfs.py
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

BASE = Path("/run/zsnbench")
POOLS = ("bench1", "bench2", "bench3")
DATASETS = 200
MIRRORS = 4
GOAL = 1.5
BASELINE = "zpool list -Hp >/dev/null; zpool status -p >/dev/null; zfs list -Hp >/dev/null"


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
    for number in range(DATASETS - len(POOLS)):
        sh("zfs", "create", f"{POOLS[number % len(POOLS)]}/ds{number}")


def local_zsn() -> Path:
    """zsn's package copied into the tmpfs: what an installed zsn reads at start-up."""
    target = BASE / "py"
    shutil.copytree(REPO / "zsn", target / "zsn",
                    ignore=shutil.ignore_patterns("__pycache__", "tui"))
    return target


def export_versus_commands(results: Path) -> dict[str, object]:
    path = local_zsn()
    zsn = f"env PYTHONPATH={path} /usr/bin/python3 -m zsn --export zfs"
    check = subprocess.run(["sh", "-c", zsn], capture_output=True, text=True, timeout=120)
    document = json.loads(check.stdout)["zfs"]
    report = results / "hyperfine.json"
    subprocess.run(["hyperfine", "--warmup", "3", "--runs", "20", "--export-json",
                    str(report), "--command-name", "zsn --export zfs", zsn,
                    "--command-name", "zpool list; zpool status; zfs list", BASELINE],
                   check=True, timeout=1200)
    means = {r["command"]: r["mean"] for r in json.loads(report.read_text())["results"]}
    return {"zsn_seconds": means["zsn --export zfs"],
            "commands_seconds": means["zpool list; zpool status; zfs list"],
            "exit_code": check.returncode, "pools": len(document["pools"]),
            "vdevs": sum(1 for p in document["pools"] for v in p["vdevs"]
                         if v["kind"] in ("file", "disk")),
            "datasets": len(document["datasets"])}


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

        def tree_cpu() -> tuple[float, int]:
            total = 0.0
            streams = 0
            for process in [zsn, *zsn.children(recursive=True)]:
                try:
                    times = process.cpu_times()
                    total += times.user + times.system + times.children_user + \
                        times.children_system
                    if "iostat" in process.cmdline():
                        streams += 1
                except psutil.NoSuchProcess:
                    pass
            return total, streams

        before, streams = tree_cpu()
        started = time.monotonic()
        time.sleep(seconds)
        after, _ = tree_cpu()
        wall = time.monotonic() - started
        screen = sh("tmux", "capture-pane", "-p", "-t", session)
    finally:
        subprocess.run(["tmux", "kill-session", "-t", session], check=False)
    return {"cpu_percent": 100 * (after - before) / wall, "iostat_streams": streams,
            "seconds": wall, "screen_has_pools": all(p in screen for p in POOLS)}


def in_guest(results: Path) -> None:
    build_layout()
    try:
        figures = {"export": export_versus_commands(results), "pane": pane_idle()}
    finally:
        for pool in POOLS:
            subprocess.run(["zpool", "destroy", "-f", pool], check=False)
        subprocess.run(["umount", "-l", str(BASE)], check=False)
    (results / "figures.json").write_text(json.dumps(figures, indent=2))


def main() -> int:
    if "--in-guest" in sys.argv:
        in_guest(Path(sys.argv[sys.argv.index("--in-guest") + 1]))
        return 0
    from tests.lab.kernel import boot

    results = Path(tempfile.mkdtemp(prefix="zsn-bench-zfs-"))
    os.chmod(results, 0o755)
    run = boot(f"{sys.executable} bench/zfs.py --in-guest {results}", results, "bench zfs",
               timeout=1800)
    figures_path = results / "figures.json"
    if run.returncode != 0 or not figures_path.exists():
        print(run.tail(40))
        return 1
    figures = json.loads(figures_path.read_text())
    export = figures["export"]
    ratio = export["zsn_seconds"] / export["commands_seconds"]
    print(f"layout: {export['pools']} pools, {export['vdevs']} vdevs, "
          f"{export['datasets']} datasets (guest kernel {run.boot.kernel}, TCG)")
    print(f"zsn --export zfs: {export['zsn_seconds'] * 1000:.0f} ms; zpool list + zpool "
          f"status + zfs list: {export['commands_seconds'] * 1000:.0f} ms; ratio "
          f"{ratio:.2f} (goal <= {GOAL}) {'OK' if ratio <= GOAL else 'OVER'}")
    pane = figures["pane"]
    print(f"pane idle at 1 s: {pane['cpu_percent']:.1f}% of one core for zsn and its "
          f"{pane['iostat_streams']} zpool iostat children over {pane['seconds']:.0f} s "
          f"(pools on screen: {pane['screen_has_pools']})")
    return 0 if ratio <= GOAL else 1


if __name__ == "__main__":
    raise SystemExit(main())
