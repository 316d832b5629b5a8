"""A prune pass in the QEMU kernel lab: `zsn zfs snapshots run` against
`sanoid --prune-snapshots` (Debian's sanoid 2.1.0) on the same pool, with the same
policy, in the same run (goal, issue 37: zsn <= 1.0x sanoid's time).

Layout: pool `bprune` on a file in a tmpfs, DATASETS datasets `bprune/dNNN`, each with
SNAPSHOTS hourly snapshots in sanoid's names (`autosnap_YYYY-MM-DD_HH:MM:SS_hourly`),
one per hour: taken with the guest's clock set to each hour, all datasets' at once (one
`zfs snapshot` call per hour). The clock is then set ten minutes past the last hour.

The policy is one sanoid.conf: `[bprune]` recursive, process_children_only, a template
keeping KEEP hourlies (no other class, autosnap off: a prune pass only). sanoid reads
it; zsn imports the same file (`zsn zfs policy import sanoid`), so both prune the
SNAPSHOTS - KEEP oldest hourlies of every dataset (sanoid: older than KEEP hours and
more than KEEP of them; zsn: beyond the KEEP newest), and each run's result is checked:
KEEP left on every dataset, the same names.

Each tool runs on the same pool state: a pool checkpoint is taken before, and after
each run the pool is exported and imported again rewound to it. Rounds alternate the
order; each time is the whole process (sanoid with a fresh cache, so it lists the
snapshots as a first run after its cache expired does; zsn reading its policy file,
listing, planning and destroying). Medians are compared.

Run as root on the host (boots one guest with two vCPUs, or `--cpus 1`, under the lab's lock):

    .venv/bin/python bench/zfs_prune.py [--datasets 200] [--snapshots 100] [--keep 90] \
        [--rounds 2] [--cpus 2]
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
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
VDEV_DIR = Path("/run/zsn-bench-prune")
POOL = "bprune"
ENV = {"LC_ALL": "C", "TZ": "UTC", "PATH": "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:"
                                           "/sbin:/bin"}
HOUR = 3600
START = 1795300000 // HOUR * HOUR
"""The first snapshot's hour (a fixed one: the names are the same each run)."""


def sh(*argv: str, check: bool = True) -> str:
    result = subprocess.run(argv, capture_output=True, text=True, check=False,
                            env={**os.environ, **ENV})
    if check and result.returncode != 0:
        raise SystemExit(f"{' '.join(argv[:6])}: {result.returncode}: {result.stderr[-400:]}")
    return result.stdout


def set_clock(when: int) -> None:
    sh("date", "-s", f"@{when}")


def stamp(when: int) -> str:
    return time.strftime("%Y-%m-%d_%H:%M:%S", time.gmtime(when))


def build(datasets: int, snapshots: int) -> list[str]:
    sh("modprobe", "zfs")
    VDEV_DIR.mkdir(parents=True, exist_ok=True)
    sh("mount", "-t", "tmpfs", "-o", "size=1200m", "tmpfs", str(VDEV_DIR))
    sh("truncate", "-s", "1G", str(VDEV_DIR / "vdev"))
    sh("zpool", "create", "-f", "-o", "ashift=12", "-m", "none", POOL, str(VDEV_DIR / "vdev"))
    names = [f"{POOL}/d{i:03d}" for i in range(datasets)]
    for name in names:
        sh("zfs", "create", name)
    for hour in range(snapshots):
        when = START + hour * HOUR
        set_clock(when)
        sh("zfs", "snapshot", *(f"{name}@autosnap_{stamp(when)}_hourly" for name in names))
    set_clock(START + (snapshots - 1) * HOUR + 600)
    return names


SANOID_CONF = """\
[{pool}]
\tuse_template = bench
\trecursive = yes
\tprocess_children_only = yes

[template_bench]
\tfrequently = 0
\thourly = {keep}
\tdaily = 0
\tweekly = 0
\tmonthly = 0
\tyearly = 0
\tautosnap = no
\tautoprune = yes
"""


def counts(names: list[str]) -> dict[str, int]:
    listed = sh("zfs", "list", "-H", "-o", "name", "-t", "snapshot", "-r", POOL)
    found = dict.fromkeys(names, 0)
    for line in listed.splitlines():
        found[line.split("@")[0]] = found.get(line.split("@")[0], 0) + 1
    return found


def checkpoint() -> None:
    """A checkpoint of the pool (once a rewound one's discard has finished)."""
    for _ in range(600):
        result = subprocess.run(["zpool", "checkpoint", POOL], capture_output=True, text=True,
                                check=False, env={**os.environ, **ENV})
        if result.returncode == 0:
            return
        time.sleep(0.5)
    raise SystemExit(f"zpool checkpoint {POOL}: {result.stderr[-300:]}")


def rewind() -> None:
    """The pool as it was at the checkpoint (which the rewind uses up), checkpointed again."""
    sh("zpool", "export", POOL)
    sh("zpool", "import", "--rewind-to-checkpoint", "-d", str(VDEV_DIR), POOL)
    checkpoint()


def timed(argv: list[str]) -> float:
    started = time.perf_counter()
    result = subprocess.run(argv, capture_output=True, text=True, check=False, cwd=REPO,
                            env={**os.environ, **ENV})
    seconds = time.perf_counter() - started
    if result.returncode != 0:
        raise SystemExit(f"{' '.join(argv[:4])}: exit {result.returncode}: "
                         f"{(result.stderr or result.stdout)[-600:]}")
    return seconds


def in_guest(results: Path, datasets: int, snapshots: int, keep: int, rounds: int) -> None:
    figures: dict[str, Any] = {"datasets": datasets, "snapshots": snapshots, "keep": keep,
                               "sanoid": [], "zsn": []}
    real = time.time()
    started = time.monotonic()
    try:
        names = build(datasets, snapshots)
        figures["build_seconds"] = round(time.monotonic() - started, 1)
        print(f"layout: {datasets} datasets x {snapshots} hourly snapshots in "
              f"{figures['build_seconds']} s", flush=True)
        config = VDEV_DIR / "sanoid"
        config.mkdir()
        (config / "sanoid.conf").write_text(SANOID_CONF.format(pool=POOL, keep=keep))
        zsn = [sys.executable, "-m", "zsn"]
        subprocess.run([*zsn, "zfs", "policy", "import", "sanoid",
                        str(config / "sanoid.conf")], check=True, cwd=REPO,
                       capture_output=True, env={**os.environ, **ENV})
        checkpoint()
        expected = {name: keep for name in names}
        sanoid_run = ["sanoid", "--configdir", str(config), "--prune-snapshots",
                      "--cache-dir", str(config / "cache"), "--run-dir", str(config / "run")]
        zsn_run = [*zsn, "zfs", "snapshots", "run"]
        kept: dict[str, set[str]] = {}
        for number in range(rounds):
            order = [("sanoid", sanoid_run), ("zsn", zsn_run)]
            if number % 2:
                order.reverse()
            for tool, argv in order:
                shutil.rmtree(config / "cache", ignore_errors=True)
                seconds = timed(argv)
                found = counts(names)
                if found != expected:
                    wrong = {k: v for k, v in found.items() if v != keep}
                    raise SystemExit(f"{tool} left {len(wrong)} datasets with another count: "
                                     f"{dict(list(wrong.items())[:3])}")
                kept[tool] = set(sh("zfs", "list", "-H", "-o", "name", "-t", "snapshot", "-r",
                                    POOL).split())
                figures[tool].append(round(seconds, 3))
                print(f"round {number + 1}: {tool} {seconds:.2f} s", flush=True)
                rewind()
        figures["same_snapshots_kept"] = kept["sanoid"] == kept["zsn"]
    finally:
        set_clock(int(real + time.monotonic() - started))
        sh("zpool", "destroy", "-f", POOL, check=False)
        sh("umount", "-l", str(VDEV_DIR), check=False)
    (results / "figures.json").write_text(json.dumps(figures))


def report(found: dict[str, Any], kernel: str, cpus: int | None) -> int:
    sanoid, zsn = statistics.median(found["sanoid"]), statistics.median(found["zsn"])
    destroyed = found["datasets"] * (found["snapshots"] - found["keep"])
    vcpus = f"{cpus} vCPU{'s' if cpus != 1 else ''}" if cpus else "vCPUs as run"
    print(f"guest kernel {kernel}, TCG, {vcpus}; {found['datasets']} datasets x "
          f"{found['snapshots']} hourly snapshots, keep {found['keep']}: {destroyed} "
          f"destroyed per pass; {len(found['zsn'])} rounds, medians")
    print(f"  sanoid --prune-snapshots  {sanoid:8.2f} s   (rounds: {found['sanoid']})")
    print(f"  zsn zfs snapshots run     {zsn:8.2f} s   (rounds: {found['zsn']})")
    print(f"  zsn / sanoid: {zsn / sanoid:.3f}x (goal <= 1.0x); the same snapshots kept: "
          f"{found['same_snapshots_kept']}")
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--datasets", type=int, default=200)
    parser.add_argument("--snapshots", type=int, default=100)
    parser.add_argument("--keep", type=int, default=90)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--cpus", type=int, default=2,
                        help="the guest's vCPUs (1 takes one of the lab's two slots, so it "
                             "runs beside other guests)")
    parser.add_argument("--in-guest", metavar="DIR", help=argparse.SUPPRESS)
    parser.add_argument("--report", metavar="FIGURES_JSON",
                        help="print the figures a guest run wrote (no boot)")
    args = parser.parse_args()
    if args.in_guest:
        in_guest(Path(args.in_guest), args.datasets, args.snapshots, args.keep, args.rounds)
        return 0
    if args.report:
        return report(json.loads(Path(args.report).read_text()), "(as recorded)", None)
    if shutil.which("sanoid") is None:
        sys.exit("bench: sanoid is missing (apt install sanoid)")
    sys.path.insert(0, str(REPO))
    from tests.lab.kernel import boot

    results = Path(tempfile.mkdtemp(prefix="zsn-bench-prune-"))
    os.chmod(results, 0o755)
    run = boot(f"{sys.executable} bench/zfs_prune.py --datasets {args.datasets} "
               f"--snapshots {args.snapshots} --keep {args.keep} --rounds {args.rounds} "
               f"--in-guest {results}", results, "bench zfs prune", timeout=5400, cpus=args.cpus,
               lock_wait=4 * 3600)
    figures = results / "figures.json"
    if run.returncode != 0 or not figures.exists():
        print(run.tail(40))
        return 1
    print("\n".join(line for line in run.tail(200).splitlines()
                    if line.startswith(("layout", "round"))))
    return report(json.loads(figures.read_text()), run.boot.kernel, args.cpus)


if __name__ == "__main__":
    sys.exit(main())
