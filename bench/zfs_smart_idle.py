"""The ZFS pane's idle CPU with SMART on and off, 24 disks (issue 38, Speed).

Goal: reading SMART for 24 disks costs the TUI nothing visible: it runs off the refresh
path, and the pane's idle CPU with SMART on stays within 0.1 points of it off.

Layout: one kernel-lab guest (tests/lab/kernel.py: Debian's kernel under QEMU TCG, one
vCPU) with 24 emulated disks, 18 NVMe (QEMU ``-device nvme``, which answers SMART's
health log itself, hw/nvme/ctrl.c) and 6 SATA (``ide-hd`` on an AHCI controller, ATA
SMART from hw/ide/core.c), and one pool of 12 two-way mirrors over them (each SATA disk
mirrored with an NVMe one). smartctl is
not a stand-in: it is the lab's real smartmontools 7.3 (the host's, shared into the
guest), reading each emulated disk as it would a real one, the same program and disks
whose outputs tests/fixtures/zfs-disks-lab captured (smartctl-j-nvme.ZLABNVME0.json,
smartctl-j-sat.ZLABSATA0.json).

Rounds, SMART off and on interleaved (off, on, on, off, off, on ...), each a fresh zsn
(``python -m zsn --refresh 1``, the ZFS tab shown) on its own pseudo-terminal of
120x40 (`_lab.spawn_on_pty`, as from a shell; everything it writes is read):

- off: smartctl hidden (``/dev/null`` bound over ``/usr/sbin/smartctl``, so zsn finds
  none and reads no SMART) and no SMART record;
- on: the record removed first, so the pane reads all 24 disks when it starts.

Once the pool is on screen (on: and all 24 readings are in zsn's record), zsn settles
`SETTLE` seconds, then the CPU time (user + system) of zsn and everything it runs (its
`zpool iostat` streams; the zpool reads and smartctl runs it reaped count in its
children's times) is read over --seconds. Printed: each round's idle CPU % of one core,
the medians per mode and their difference in points against the 0.1 goal.

SMART is read once per disk per 10 minutes (`zsn.zfs.diskwatch.READ_EVERY`), so an idle
window after the start has none; the reading's own cost is measured apart: zsn's
`DiskReader.read` of the 24 disks with no record (24 smartctl runs, 4 at once, and their
JSON decoded), CPU of the process and its children, several times, and printed
amortised over the 10 minutes (points of one core).

Run as root on the host (boots one guest under the lab's lock; ~15 minutes under TCG):

    .venv/bin/python bench/zfs_smart_idle.py [--rounds 3] [--seconds 45]

``--refresh-path`` boots nothing: it times, in this process, what the SMART readings add
to a refresh of the vdev tree (`zsn.zfs.view.vdev_rows` of the pane tests' tank with the
real readings of tests/tui/test_zfs_disks.py, judged as the disk watch judges them,
against no readings), per leaf and for 24 leaves at one refresh a second.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

POOL = "smart24"
DISKS = 24
GOAL_POINTS = 0.1
SETTLE = 10.0
SMARTCTL = "/usr/sbin/smartctl"
RECORD = Path("/var/lib/zsn/zfs/smart.json")
COLUMNS, ROWS = 120, 40
_ESCAPES = re.compile(rb"\x1b\[[0-9;?<>=$]*[A-Za-z~]|\x1b\][^\x07]*\x07")


def sh(*argv: str, check: bool = True) -> str:
    return subprocess.run(argv, check=check, capture_output=True, text=True,
                          timeout=600).stdout


# -- in the guest -----------------------------------------------------------------------
def build_pool() -> list[str]:
    """The pool over the 24 NVMe disks, 12 mirrors; its leaves as zsn names them."""
    subprocess.run(["modprobe", "zfs"], check=True)
    sh("udevadm", "settle", check=False)
    nvme = sorted((f"/dev/{name}" for name in os.listdir("/dev")
                   if re.fullmatch(r"nvme\d+n1", name)), key=lambda d: int(d[9:-2]))
    sata = sorted(f"/dev/{name}" for name in os.listdir("/dev")
                  if re.fullmatch(r"sd[a-z]", name))
    disks = [disk for pair in zip(nvme, [*sata, *[None] * len(nvme)], strict=False)
             for disk in pair if disk is not None]
    if len(disks) != DISKS:
        raise SystemExit(f"{len(disks)} disks in the guest, not {DISKS}: {disks}")
    vdevs: list[str] = []
    for pair in range(0, DISKS, 2):
        vdevs += ["mirror", disks[pair], disks[pair + 1]]
    sh("zpool", "create", "-f", "-o", "ashift=12", "-m", f"/run/{POOL}", POOL, *vdevs)
    from zsn.system.host import Host
    from zsn.zfs.facts import leaf_paths
    from zsn.zfs.live import read_zfs

    snapshot = read_zfs(Host(), datasets=False)
    return list(leaf_paths(snapshot.pools))


def smart_hidden(hidden: bool) -> None:
    mounted = SMARTCTL in sh("findmnt", "-rn", "-o", "TARGET", check=False).split()
    if hidden and not mounted:
        sh("mount", "--bind", "/dev/null", SMARTCTL)
    elif not hidden and mounted:
        sh("umount", SMARTCTL)


def readings_recorded() -> int:
    try:
        records = json.loads(RECORD.read_text())
    except (OSError, ValueError):
        return 0
    return sum(1 for disk in records.get("disks", {}).values() if disk.get("last"))


def tree_cpu(pid: int) -> tuple[float, float]:
    """CPU seconds of zsn and everything it runs (reaped children in its children's
    times), and of zsn's own process."""
    import psutil

    zsn = psutil.Process(pid)
    total = own = 0.0
    for process in [zsn, *zsn.children(recursive=True)]:
        try:
            times = process.cpu_times()
        except psutil.NoSuchProcess:
            continue
        total += times.user + times.system + times.children_user + times.children_system
        if process.pid == pid:
            own = times.user + times.system
    return total, own


def thread_cpu(pid: int, tid_file: Path) -> float | None:
    """CPU seconds of zsn's disk watch thread (its native id written by _smart_probe.py),
    from the scheduler's own nanosecond count."""
    try:
        tid = int(tid_file.read_text())
        return int(Path(f"/proc/{pid}/task/{tid}/schedstat").read_text().split()[0]) / 1e9
    except (OSError, ValueError):
        return None


def one_round(smart: bool, seconds: float) -> dict[str, Any]:
    import _lab

    smart_hidden(not smart)
    RECORD.unlink(missing_ok=True)
    tid_file = Path(tempfile.mkdtemp()) / "disk-thread"
    os.environ["ZSN_BENCH_DISK_THREAD"] = str(tid_file)
    child = _lab.spawn_on_pty([sys.executable, str(REPO / "bench" / "_smart_probe.py"),
                               "--refresh", "1"], ROWS, COLUMNS)
    try:
        child.read(3)
        os.write(child.master, b"3")  # the ZFS tab
        if child.read(120, lambda out: POOL.encode() in _ESCAPES.sub(b"", out)) is None:
            raise TimeoutError("the pool never shown")
        if smart:
            deadline = time.monotonic() + 300
            while readings_recorded() < DISKS:
                if time.monotonic() > deadline:
                    raise TimeoutError(f"{readings_recorded()} SMART readings recorded")
                child.read(1)
        child.read(SETTLE)
        before, own_before = tree_cpu(child.process.pid)
        watch_before = thread_cpu(child.process.pid, tid_file)
        started = time.monotonic()
        child.read(seconds)
        after, own_after = tree_cpu(child.process.pid)
        watch_after = thread_cpu(child.process.pid, tid_file)
        wall = time.monotonic() - started
        screen = _ESCAPES.sub(b"", bytes(child.output[-20000:])).decode(errors="replace")
    finally:
        child.stop()
    return {"smart": smart, "cpu_percent": 100 * (after - before) / wall,
            "zsn_percent": 100 * (own_after - own_before) / wall, "seconds": wall,
            "watch_percent": (None if watch_before is None or watch_after is None
                              else 100 * (watch_after - watch_before) / wall),
            "smart_on_screen": bool(re.search(r"ok \d+°", screen))}


def read_cost(leaves: list[str], times: int = 3) -> dict[str, Any]:
    """CPU of one `DiskReader.read` of the 24 disks with no record (SMART of all read),
    each run right after the calibration workloads, so both meet the same host load (a
    guest's CPU times grow when the host's other work takes its vCPU's turn)."""
    from zsn.system.host import Host
    from zsn.zfs.diskwatch import READ_EVERY, DiskReader

    smart_hidden(False)
    costs = []
    for _ in range(times):
        calibrated = calibration(rounds=1)
        RECORD.unlink(missing_ok=True)
        before = [resource.getrusage(who) for who in (resource.RUSAGE_SELF,
                                                      resource.RUSAGE_CHILDREN)]
        started = time.monotonic()
        reading = DiskReader(Host()).read(leaves)
        wall = time.monotonic() - started
        after = [resource.getrusage(who) for who in (resource.RUSAGE_SELF,
                                                     resource.RUSAGE_CHILDREN)]
        cpu = [a.ru_utime + a.ru_stime - b.ru_utime - b.ru_stime
               for a, b in zip(after, before, strict=True)]
        read = sum(1 for report in reading.reports.values()
                   if report.smart is not None and report.smart.state == "ok")
        costs.append({"process": cpu[0], "smartctl": cpu[1], "wall": wall, "read": read,
                      "calibration": calibrated})
    total = statistics.median(c["process"] + c["smartctl"] for c in costs)
    return {"runs": costs, "median_cpu": total, "every": READ_EVERY,
            "amortised_points": 100 * total / READ_EVERY}


def calibration(rounds: int = 3) -> dict[str, float]:
    """CPU seconds of two fixed workloads, run in the guest and on the host alike, so
    the guest's figures can be put at this host's speed: Python (zsn's part of a reading:
    50 processes started and reaped, 2 x 2,000 smartctl JSON documents decoded) and C
    (smartctl's part: `smartctl -P showall`, its drive database parsed and printed, 5
    times)."""
    from zsn.zfs.smart import parse

    fixtures = REPO / "tests" / "fixtures" / "zfs-disks-lab"
    documents = [(fixtures / name).read_bytes() for name in
                 ("smartctl-j-nvme.ZLABNVME0.json", "smartctl-j-sat.ZLABSATA0.json")]

    def cpu() -> float:
        return sum(usage.ru_utime + usage.ru_stime for usage in
                   (resource.getrusage(resource.RUSAGE_SELF),
                    resource.getrusage(resource.RUSAGE_CHILDREN)))

    figures: dict[str, list[float]] = {"python": [], "c": []}
    for _ in range(rounds):
        started = cpu()
        for _ in range(50):
            subprocess.run(["true"], check=True)
        for _ in range(2000):
            for document in documents:
                parse(document, "calibration", read_at=0.0)
        figures["python"].append(cpu() - started)
        started = cpu()
        for _ in range(5):
            subprocess.run([SMARTCTL, "-P", "showall"], check=True, stdout=subprocess.DEVNULL)
        figures["c"].append(cpu() - started)
    return {kind: statistics.median(values) for kind, values in figures.items()}


def in_guest(results: Path, rounds: int, seconds: float) -> None:
    sys.path.insert(0, str(REPO / "bench"))
    leaves = build_pool()
    figures: dict[str, Any] = {"leaves": len(leaves), "rounds": []}
    try:
        order = [False, True, True, False] * ((rounds + 1) // 2)
        for smart in order[:2 * rounds]:
            figures["rounds"].append(one_round(smart, seconds))
            print(f"round: {figures['rounds'][-1]}", flush=True)
        figures["read"] = read_cost(leaves)
        figures["smartctl"] = sh(SMARTCTL, "-V").splitlines()[0]
    finally:
        smart_hidden(False)
        subprocess.run(["zpool", "destroy", "-f", POOL], check=False)
        (results / "figures.json").write_text(json.dumps(figures, indent=2))


# -- on the host ------------------------------------------------------------------------
def refresh_path(calls: int = 2000, rounds: int = 7) -> None:
    from tests.tui.test_zfs_disks import lab_disks
    from tests.tui.test_zfs_pane import fixed_snapshot
    from zsn.zfs import view
    from zsn.zfs.disk_health import EMPTY, health

    pool = fixed_snapshot("scrub-finished").pool("tank")
    assert pool is not None
    plain = lab_disks()
    readings = {"judged by the watch": plain._replace(verdicts={
        name: health(report) for name, report in plain.reports.items()}),
        "judged at each refresh": plain, "no SMART": EMPTY}

    def no_samples(name: str) -> list[int]:
        return []

    times: dict[str, list[float]] = {label: [] for label in readings}
    for _ in range(rounds):  # interleaved: the box's load hits each alike
        for label, reading in readings.items():
            started = time.perf_counter()
            for _ in range(calls):
                view.vdev_rows(pool, {}, no_samples, no_samples, reading)
            times[label].append((time.perf_counter() - started) / calls)
    timed = {label: statistics.median(values) for label, values in times.items()}
    leaves = sum(1 for vdev in pool.vdevs if vdev.is_leaf)
    print(f"vdev tree of tank ({leaves} leaves), median of {rounds} x {calls} refreshes, "
          f"interleaved; "
          f"load average {os.getloadavg()[0]:.2f}")
    for label in ("judged at each refresh", "judged by the watch"):
        extra = (timed[label] - timed["no SMART"]) / leaves
        print(f"  {label:24} {timed[label] * 1e6:7.1f} us ({timed['no SMART'] * 1e6:.1f} "
              f"without SMART): {extra * 1e6:5.1f} us a leaf, 24 leaves at one refresh a "
              f"second {extra * 24 * 100:.4f} points")


SATA = 6
"""Disks on QEMU's AHCI controller (one PCI slot, six ports); the others NVMe (a PCI
slot each: 24 of them and the lab's own devices would not fit one bus)."""


def guest_disks() -> tuple[Any, ...]:
    from tests.lab.kernel import GuestDisk

    return (*(GuestDisk("nvme", f"ZSMARTN{number:02d}") for number in range(DISKS - SATA)),
            *(GuestDisk("sata", f"ZSMARTS{number:02d}") for number in range(SATA)))


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=3, help="rounds of each mode")
    parser.add_argument("--seconds", type=float, default=45.0, help="idle window per round")
    parser.add_argument("--in-guest", metavar="DIR", help=argparse.SUPPRESS)
    parser.add_argument("--refresh-path", action="store_true",
                        help="only time what SMART adds to a refresh, here (no guest)")
    args = parser.parse_args()
    if args.refresh_path:
        refresh_path()
        return 0
    if args.in_guest:
        in_guest(Path(args.in_guest), args.rounds, args.seconds)
        return 0
    from tests.lab.kernel import boot

    sys.path.insert(0, str(REPO / "bench"))
    import _lab

    _lab.compile_repo()  # the checkout is read-only in the guest: its bytecode made here
    results = Path(tempfile.mkdtemp(prefix="zsn-bench-smart-"))
    os.chmod(results, 0o755)
    disks = guest_disks()
    run = boot(f"{sys.executable} bench/zfs_smart_idle.py --rounds {args.rounds} "
               f"--seconds {args.seconds:g} --in-guest {results}", results, "bench smart",
               timeout=3600, disks=disks)
    path = results / "figures.json"
    if run.returncode != 0 or not path.exists():
        print(run.tail(60))
        return 1
    found = json.loads(path.read_text())
    found["host_calibration"] = calibration()
    report(found, run.boot.kernel, args.seconds)
    (results / "figures.json").write_text(json.dumps(found, indent=2))
    print(f"(figures: {results / 'figures.json'})")
    return 0


def report(figures: dict[str, Any], kernel: str, seconds: float) -> None:
    print(f"guest kernel {kernel}, TCG, 1 vCPU; pool {POOL}: 12 mirrors of "
          f"{figures['leaves']} disks ({DISKS - SATA} NVMe, {SATA} SATA: QEMU's); "
          f"{figures.get('smartctl', '?')}; "
          f"host load average at the end {os.getloadavg()[0]:.2f}")
    print(f"\nidle window {seconds:g} s per round after {SETTLE:g} s to settle; "
          "CPU % of one core, zsn and its children (zsn's own process)")
    by_mode: dict[bool, list[float]] = {False: [], True: []}
    for number, found in enumerate(figures["rounds"], 1):
        by_mode[found["smart"]].append(found["cpu_percent"])
        watch = found.get("watch_percent")
        print(f"  round {number:2}  SMART {'on ' if found['smart'] else 'off'}  "
              f"{found['cpu_percent']:6.2f} %  ({found['zsn_percent']:5.2f} %)"
              + ("" if watch is None else f"  disk watch thread {watch:.3f} %")
              + ("  SMART on screen" if found["smart_on_screen"] else ""))
    off, on = (statistics.median(by_mode[mode]) for mode in (False, True))
    spread = max(max(v) - min(v) for v in by_mode.values())
    print(f"\nmedian idle CPU: SMART off {off:.2f} %, SMART on {on:.2f} %; difference "
          f"{on - off:+.2f} points (goal: within {GOAL_POINTS}; "
          f"{'met' if abs(on - off) <= GOAL_POINTS else 'missed'}); largest spread of one "
          f"mode's rounds {spread:.2f} points")
    read = figures["read"]
    runs = ", ".join(f"{r['process'] + r['smartctl']:.2f} s ({r['read']} read, "
                     f"{r['wall']:.1f} s wall)" for r in read["runs"])
    print(f"one reading of all {DISKS} disks (zsn's DiskReader, no record): CPU {runs}; "
          f"median {read['median_cpu']:.2f} s every {read['every']:.0f} s = "
          f"{read['amortised_points']:.3f} points of one core")
    host = figures.get("host_calibration")
    if not host:
        return
    by_mode_watch = {mode: [r["watch_percent"] for r in figures["rounds"]
                            if r["smart"] is mode and r.get("watch_percent") is not None]
                     for mode in (False, True)}
    if all(by_mode_watch.values()):
        off_watch, on_watch = (statistics.median(by_mode_watch[m]) for m in (False, True))
        print(f"\nthe disk watch thread in the idle windows (it maps the disks every "
              f"60 s in both modes): off {off_watch:.3f} %, on {on_watch:.3f} % of the "
              f"guest's core (medians)")
    print("\neach reading next to the calibration run just before it (the guest against "
          "this host, CPU of the same work), and the reading at this host's speed:")
    at_host = []
    for run in read["runs"]:
        guest = run["calibration"]
        slower = {kind: guest[kind] / host[kind] for kind in ("python", "c")}
        # zsn's share at Python's factor; smartctl's between the two factors (its runs
        # are process start and kernel work as much as its own C code)
        low = run["process"] / slower["python"] + run["smartctl"] / slower["python"]
        high = run["process"] / slower["python"] + run["smartctl"] / slower["c"]
        at_host.append((low, high))
        print(f"  zsn {run['process']:.2f} s + smartctl {run['smartctl']:.2f} s; guest "
              f"slower by {slower['python']:.1f}x (Python) / {slower['c']:.1f}x (smartctl "
              f"-P showall): at host speed {low:.3f}-{high:.3f} s = "
              f"{100 * low / read['every']:.3f}-{100 * high / read['every']:.3f} points")
    low = statistics.median(pair[0] for pair in at_host)
    high = statistics.median(pair[1] for pair in at_host)
    print(f"median at host speed: {100 * low / read['every']:.3f}-"
          f"{100 * high / read['every']:.3f} points every {read['every']:.0f} s (goal: "
          f"within {GOAL_POINTS})")


if __name__ == "__main__":
    sys.exit(main())
