"""The QEMU kernel lab: tests that need kernel modules this machine's kernel lacks.

Debian's own kernel (the newest ``/boot/vmlinuz-*-amd64`` with zfs.ko from
zfs-dkms: wireguard, bonding, 8021q, dummy, mac80211_hwsim, zfs) is booted with
virtme-ng under QEMU in software emulation, with the host's root shared read-only
(``/etc``, ``/var``, ``/tmp`` are writable overlays dropped at power-off). A *group*
is one guest test file, ``tests/kernel/test_GROUP.py``: one boot runs the whole file
under pytest with the project's venv, and the host-side test
``tests/integration/test_kernel_lab.py::test_kernel_group[GROUP]`` fails with the
names of the guest's failing tests and the tail of its output. A boot costs about
15 s; the guest CPU is some 14 times slower than the host, so a group imports its
heavy Python once and keeps its tests few and meaningful.

Adding a group (links, wlan, zfs ...):
1. Write ``tests/kernel/test_GROUP.py``. It runs as root inside the guest with
   ``LAB=1``; the host never collects it (``tests/kernel/conftest.py``). Use
   `modprobe` below, `tests.lab.netns.Lab` (the ``lab`` fixture) for namespaces and
   veths, and `tests.needs` for the tools it runs.
2. Add the Debian packages it runs to ``LAB_PACKAGES`` in ``scripts/test.sh``.
That is all: the host-side test is parametrized over the files in ``tests/kernel/``.
Run one group with ``pytest tests/integration/test_kernel_lab.py -k GROUP``.

Guests share the machine's cores through lock files, one slot per host core
(`LOCK_SLOTS`): a guest holds one slot per vCPU, so two 1-vCPU guests run at once and
a 2-vCPU bench has the machine to itself. In a test session the groups are queued at
collection (`tests.lab.guests`) and run beside the host tests; every boot has a
deadline that kills QEMU with it.
"""

from __future__ import annotations

import fcntl
import os
import re
import shlex
import shutil
import subprocess
import sys
import time
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO

import pytest

from tests.needs import unavailable

REPO = Path(__file__).resolve().parents[2]
GUEST_TESTS = REPO / "tests" / "kernel"
# scripts/test.sh installs virtme-ng here (a host tool with a venv of its own).
LAB_VENV = Path(os.environ.get("ZSN_LAB_VENV", "/var/cache/zsn-lab/virtme-ng"))
LOCK_FILE = Path("/run/lock/zsn-kernel-lab.lock")
LOCK_SLOTS = 2
"""Guest vCPUs the machine runs at once (CI's two cores): slot 1 is `LOCK_FILE`, slot N
``zsn-kernel-lab.N.lock`` beside it."""
LOCK_WAIT = 1800.0
"""How long a boot waits for other guests to leave it the slots it needs."""
BOOT_TIMEOUT = 1200.0
"""Boot to power-off, guest tests included; QEMU is killed past it. The longest group
(zfs_send) takes about 550 s on CI's box and 1.8 times that on a box shared with other
work: a bound against a hang, not a goal."""
GUEST_MEMORY = "2G"
GUEST_CPUS = 1
"""One vCPU for tests. With two, a busy host (CI's two cores beside other work)
preempts one vCPU while the other spins on it in the guest kernel: a group took 2.6-3.6
times as long beside one CPU hog; with one vCPU, 1.1 times."""
HOST_SHARE = "/run/zsn-host"
"""Where the guest mounts the host's root a second time, cached, for Python."""
IN_GUEST = os.environ.get("LAB") == "1"


@dataclass(frozen=True)
class GuestDisk:
    """A disk QEMU emulates for a group's guest: NVMe (`nvme`) or SATA on an AHCI
    controller (`sata`), both with SMART (QEMU hw/nvme/ctrl.c, hw/ide/core.c). Its
    backing file is a sparse file in the boot's results folder. `options` are the
    device's extra QEMU properties (``smart_critical_warning=4``: an NVMe disk whose
    SMART says it is failing)."""

    kind: str
    serial: str
    mib: int = 128
    options: str = ""


GROUP_DISKS: dict[str, tuple[GuestDisk, ...]] = {
    "zfs": (
        GuestDisk("nvme", "ZLABNVME0"),
        GuestDisk("nvme", "ZLABNVME1", options="smart_critical_warning=4"),
        GuestDisk("sata", "ZLABSATA0", 160),
        GuestDisk("sata", "ZLABSATA1", 160),
        GuestDisk("sata", "ZLABSATA2"),
    ),
}
"""The emulated disks each group's guest boots with (the zfs group's, for the pools of
tests/kernel/zfs_disks.py: partitions, dm-crypt, multipath, a disk put to sleep)."""


def groups() -> list[str]:
    """The guest test groups: one per ``tests/kernel/test_GROUP.py``."""
    return sorted(path.stem.removeprefix("test_") for path in GUEST_TESTS.glob("test_*.py"))


def _version_key(version: str) -> tuple[tuple[int, str], ...]:
    return tuple((int(part), "") if part.isdigit() else (-1, part)
                 for part in re.split(r"(\d+)", version) if part)


def lab_kernel() -> tuple[Path, str] | None:
    """The newest Debian amd64 kernel whose modules include zfs.ko (zfs-dkms skips RT ones)."""
    candidates = []
    for image in Path("/boot").glob("vmlinuz-*-amd64"):
        version = image.name.removeprefix("vmlinuz-")
        if Path(f"/lib/modules/{version}/updates/dkms/zfs.ko").is_file():
            candidates.append((image, version))
    return max(candidates, key=lambda c: _version_key(c[1]), default=None)


def vng_path() -> Path | None:
    installed = LAB_VENV / "bin" / "vng"
    if installed.is_file() and os.access(installed, os.X_OK):
        return installed
    found = shutil.which("vng")
    return Path(found) if found else None


def require_kernel_lab() -> tuple[Path, str, Path]:
    """The kernel image, its version and `vng`; skipped (a failure under CI) without them."""
    problems = []
    if os.geteuid() != 0:
        problems.append("root is needed")
    if shutil.which("qemu-system-x86_64") is None:
        problems.append("qemu-system-x86_64 is missing (Debian qemu-system-x86)")
    vng = vng_path()
    if vng is None:
        problems.append(f"vng is missing (virtme-ng in {LAB_VENV}, or on PATH)")
    kernel = lab_kernel()
    if kernel is None:
        problems.append("no /boot/vmlinuz-*-amd64 has updates/dkms/zfs.ko "
                        "(Debian linux-image-amd64, linux-headers-amd64, zfs-dkms)")
    if problems:
        unavailable("kernel lab unavailable: " + "; ".join(problems)
                    + " (bash scripts/test.sh installs it)")
    assert vng is not None and kernel is not None
    return kernel[0], kernel[1], vng


@dataclass
class Boot:
    """One guest's timings, shown in the test run's summary."""

    label: str
    kernel: str
    boot_to_exit: float
    lock_wait: float
    started: float
    """When QEMU started, in `time.monotonic` seconds (the summary shows overlaps)."""
    guest_tests: float | None = None
    counts: str = ""


BOOTS: list[Boot] = []
"""Every boot of this pytest run (tests/conftest.py prints them at the end)."""
_LIVE: set[subprocess.Popen[str]] = set()
"""QEMU processes running now (`kill_guests` ends them when the session stops early)."""


def kill_guests() -> None:
    """End every guest this process started that is still running (its boot returns
    with what the guest printed so far)."""
    for process in list(_LIVE):
        with suppress(ProcessLookupError):
            os.killpg(process.pid, 9)


def _slot_file(slot: int) -> Path:
    return LOCK_FILE if slot == 1 else LOCK_FILE.with_name(f"zsn-kernel-lab.{slot}.lock")


def _take_slots(needed: int) -> list[IO[str]]:
    """Lock `needed` free slots at once, or none (a half-taken set is given back, so two
    2-vCPU boots never hold one slot each and wait on each other)."""
    held: list[IO[str]] = []
    for slot in range(1, LOCK_SLOTS + 1):
        handle = open(_slot_file(slot), "w")  # noqa: SIM115 - kept open while held
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            handle.close()
            continue
        held.append(handle)
        if len(held) == needed:
            return held
    for taken in held:
        taken.close()  # closing drops the flock
    return []


@contextmanager
def _lab_lock(wait: float, cpus: int = GUEST_CPUS) -> Iterator[float]:
    """Hold one guest slot per vCPU; yields the seconds spent waiting for them."""
    LOCK_FILE.parent.mkdir(parents=True, exist_ok=True)
    needed = min(cpus, LOCK_SLOTS)
    started = time.monotonic()
    while not (held := _take_slots(needed)):
        if time.monotonic() - started > wait:
            raise TimeoutError(f"other kernel lab guests held the {LOCK_SLOTS} slots "
                               f"({LOCK_FILE} ...) for over {wait:.0f} s")
        time.sleep(1)
    try:
        yield time.monotonic() - started
    finally:
        for handle in held:
            handle.close()


@dataclass
class GuestRun:
    returncode: int
    output: str
    boot: Boot

    def tail(self, lines: int = 60) -> str:
        return "\n".join(self.output.rstrip().splitlines()[-lines:])


def _mounts_script() -> str:
    """Shell lines that remount the venv, its Python's stdlib and the checkout from a
    second, cached 9p share of the host's root: plain 9p (no cache) makes importing
    pyroute2 and friends take three times as long. Only these trees are rebound, so
    /usr stays the writable overlay tests may change. The host must not change them
    while a guest runs (the cache never revalidates)."""
    venv = Path(sys.prefix)
    stdlib = Path(sys.base_prefix) / "lib" / f"python{sys.version_info[0]}.{sys.version_info[1]}"
    lines = [
        f"mkdir -p {HOST_SHARE}",
        f"mount -t 9p -o ro,trans=virtio,version=9p2000.L,msize=524288,cache=loose "
        f"hostro {HOST_SHARE}",
    ]
    trees = sorted({venv, stdlib, REPO})
    for tree in trees:
        if any(other in tree.parents for other in trees):
            continue  # inside a tree bound already (a .venv in the checkout)
        quoted = shlex.quote(str(tree))
        lines.append(f"mkdir -p {quoted} && mount --bind {HOST_SHARE}{quoted} {quoted}")
    return "\n".join(lines)


def disk_options(disks: tuple[GuestDisk, ...], folder: Path) -> str:
    """QEMU's options for `disks`, their sparse backing files made in `folder`."""
    if not disks:
        return ""
    folder.mkdir(parents=True, exist_ok=True)
    options = []
    if any(disk.kind == "sata" for disk in disks):
        options.append("-device ich9-ahci,id=zlabahci")
    port = 0
    for number, disk in enumerate(disks):
        image = folder / f"{disk.serial}.img"
        with open(image, "wb") as backing:
            backing.truncate(disk.mib << 20)
        drive = f"zlabdisk{number}"
        options.append(f"-drive file={image},if=none,id={drive},format=raw,cache=unsafe")
        extra = f",{disk.options}" if disk.options else ""
        if disk.kind == "nvme":
            options.append(f"-device nvme,serial={disk.serial},drive={drive}{extra}")
        else:
            options.append(f"-device ide-hd,drive={drive},bus=zlabahci.{port},"
                           f"serial={disk.serial},rotation_rate=7200{extra}")
            port += 1
    return " " + " ".join(options)


def boot(script: str, results: Path, label: str, timeout: float = BOOT_TIMEOUT,
         lock_wait: float = LOCK_WAIT, cpus: int = GUEST_CPUS,
         disks: tuple[GuestDisk, ...] = ()) -> GuestRun:
    """Boot the lab kernel, run `script` (bash, as root, cwd the checkout) and power off.

    `results` is shared read-write with the guest (and exists on both sides at the same
    path); the script's exit status is the run's. The host's Python venv, its stdlib
    and the checkout are already mounted for speed; PATH, LANG, HOME and LAB=1 are set,
    as is CI when the host has it.
    """
    image, version, vng = require_kernel_lab()
    results.mkdir(parents=True, exist_ok=True)
    environment = {
        "LAB": "1", "PATH": "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
        "LANG": "C.UTF-8", "HOME": "/root", "PYTHONDONTWRITEBYTECODE": "1",
    }
    if os.environ.get("CI"):
        environment["CI"] = os.environ["CI"]
    exports = " ".join(f"{key}={shlex.quote(value)}" for key, value in environment.items())
    guest_script = results / "guest.sh"
    guest_script.write_text(
        "set -u\n"
        f"export {exports}\n"
        f"{_mounts_script()}\n"
        f"cd {shlex.quote(str(REPO))}\n"
        'echo "guest: $(uname -r), script started $(cut -d" " -f1 /proc/uptime) s after boot"\n'
        f"{script}\n"
    )
    argv = [
        "timeout", "-k", "10", str(int(timeout)), str(vng),
        "--disable-kvm", "--force-9p", "-m", GUEST_MEMORY, "--cpus", str(cpus),
        "-r", str(image),
        # KVM cannot run inside software emulation: keep its modules from loading.
        "--append", "module_blacklist=kvm,kvm_amd,kvm_intel",
        f"--rwdir={results}",
        "--qemu-opts=-virtfs local,path=/,mount_tag=hostro,security_model=none,readonly=on"
        + disk_options(disks, results / "disks"),
        "--exec", f"bash {shlex.quote(str(guest_script))}",
    ]
    env = {**os.environ, "PATH": f"{vng.parent}{os.pathsep}{os.environ.get('PATH', '')}"}
    with _lab_lock(lock_wait, cpus) as waited:
        started = time.monotonic()
        process = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                   stderr=subprocess.STDOUT, text=True, errors="replace",
                                   env=env, cwd=REPO, start_new_session=True)
        _LIVE.add(process)
        try:
            output, _ = process.communicate(timeout=timeout + 30)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, 9)
            output, _ = process.communicate(timeout=30)
        finally:
            _LIVE.discard(process)
        elapsed = time.monotonic() - started
    if process.returncode == 124:
        output += f"\n[kernel lab: guest killed after {timeout:.0f} s]"
    run = GuestRun(process.returncode, output, Boot(label, version, elapsed, waited, started))
    BOOTS.append(run.boot)
    return run


@dataclass
class GroupResult:
    group: str
    run: GuestRun
    failures: list[str] = field(default_factory=list)
    counts: dict[str, int] = field(default_factory=dict)

    def check(self) -> None:
        """Fail with the guest's failing tests and the tail of its output."""
        if self.run.returncode == 0 and not self.failures and self.counts.get("tests"):
            return
        problem = (f"{len(self.failures)} guest test(s) failed:\n  " + "\n  ".join(self.failures)
                   if self.failures else
                   f"the guest exited with status {self.run.returncode}"
                   + ("" if self.counts else " and no test report"))
        pytest.fail(f"kernel group {self.group}: {problem}\n--- guest output (tail) ---\n"
                    f"{self.run.tail()}", pytrace=False)


def run_group(group: str, results: Path, timeout: float = BOOT_TIMEOUT) -> GroupResult:
    """Boot once and run ``tests/kernel/test_GROUP.py`` under pytest in the guest."""
    path = GUEST_TESTS / f"test_{group}.py"
    report = results / "junit.xml"
    python = shlex.quote(sys.executable)
    # The guest's pytest stops before QEMU is killed, so a hung test still reports.
    script = (
        f"timeout -k 5 {int(timeout) - 60} {python} -m pytest -q -ra -p no:cacheprovider "
        f"--junitxml={shlex.quote(str(report))} {shlex.quote(str(path))}\n"
    )
    run = boot(script, results, f"group {group}", timeout,
               disks=GROUP_DISKS.get(group, ()))
    failures, counts, seconds = _read_junit(report)
    summary = ", ".join(f"{n} {what}" for what, n in counts.items() if n and what != "tests")
    run.boot.guest_tests, run.boot.counts = seconds, summary
    return GroupResult(group, run, failures, counts)


def _read_junit(path: Path) -> tuple[list[str], dict[str, int], float | None]:
    """Failing test ids with their first message line, the counts and the guest pytest time."""
    try:
        root = ET.parse(path).getroot()
    except (OSError, ET.ParseError):
        return [], {}, None
    suite = root if root.tag == "testsuite" else root.find("testsuite")
    if suite is None:
        return [], {}, None
    failures = []
    for case in suite.iter("testcase"):
        for outcome in ("failure", "error"):
            element = case.find(outcome)
            if element is not None:
                message = (element.get("message") or "").strip().splitlines()
                first = message[0][:200] if message else outcome
                failures.append(f"{case.get('classname')}::{case.get('name')} ({first})")
    tests = int(suite.get("tests", 0))
    bad = int(suite.get("failures", 0)) + int(suite.get("errors", 0))
    skipped = int(suite.get("skipped", 0))
    counts = {"tests": tests, "passed": tests - bad - skipped, "failed": bad,
              "skipped": skipped}
    seconds = float(suite.get("time", 0)) or None
    return failures, counts, seconds


def modprobe(module: str, *parameters: str) -> None:
    """Load a kernel module in the guest; a module that does not load fails the test."""
    result = subprocess.run(["modprobe", module, *parameters], capture_output=True, text=True,
                            timeout=60, check=False)
    if result.returncode != 0:
        pytest.fail(f"modprobe {module} failed: {result.stderr.strip() or result.returncode}")
