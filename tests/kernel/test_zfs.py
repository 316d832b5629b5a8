"""Real OpenZFS (Debian 12's zfs-dkms, 2.1) in the QEMU kernel lab (group ``zfs``).

A mirror of two device-mapper ``delay`` disks over loop devices over files in a tmpfs
(0 ms normally, 100 ms per I/O to catch a scrub or a resilver in progress), a spare
disk for a replace, and two small pools for the advisor: one made with ashift=9 and
2.1's defaults on a loop device that says it is solid-state, one made the notes' way.
zsn runs as a process (`zsn zfs ...`, `zsn --export zfs`) and, for the pane, in a
Pilot test with its real `zpool iostat` streams. Pools on QEMU's emulated NVMe and SATA
disks (one behind dm-crypt, one whose SMART says FAILED, one the kernel puts to sleep)
show each leaf's disk and its SMART in `zsn zfs disks`, the advisor and the metrics.
"""

from __future__ import annotations

import json
import re
import shlex
import statistics
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

import pytest

from tests.lab.kernel import modprobe
from tests.needs import needs_tools

REPO = Path(__file__).resolve().parents[2]
BASE = Path("/run/zsnlab-zfs")
MIB = 1024 ** 2
SECTORS = 200 * MIB // 512
TANK = "zlabtank"
BAD = "zlabbad"
GOOD = "zlabgood"


def sh(*argv: str, check: bool = True, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    result = subprocess.run(argv, capture_output=True, text=True, timeout=timeout, check=False,
                            env={"LC_ALL": "C", "PATH": "/usr/sbin:/usr/bin:/sbin:/bin"})
    if check and result.returncode != 0:
        raise AssertionError(f"{' '.join(argv)}: {result.returncode}: {result.stderr}")
    return result


def zsn(*args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    result = subprocess.run([sys.executable, "-m", "zsn", *args], capture_output=True,
                            text=True, timeout=300, check=False, cwd=REPO)
    if check and result.returncode != 0:
        raise AssertionError(f"zsn {' '.join(args)}: {result.returncode}: {result.stderr}")
    return result


def wait_for(what: str, predicate: Callable[[], Any], seconds: float = 120,
             every: float = 0.5) -> Any:
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        found = predicate()
        if found:
            return found
        time.sleep(every)
    raise AssertionError(f"{what}: not within {seconds:g} s")


@dataclass
class Disks:
    loops: dict[str, str] = field(default_factory=dict)
    """Disk letter -> loop device."""

    def path(self, letter: str) -> str:
        return f"/dev/mapper/zlab-{letter}"

    def delay(self, milliseconds: int, *letters: str) -> None:
        for letter in letters:
            table = f"0 {SECTORS} delay {self.loops[letter]} 0 {milliseconds}"
            sh("dmsetup", "suspend", f"zlab-{letter}")
            sh("dmsetup", "reload", f"zlab-{letter}", "--table", table)
            sh("dmsetup", "resume", f"zlab-{letter}")


def _pool_export() -> dict[str, Any]:
    return dict(json.loads(zsn("--export", "zfs").stdout)["zfs"])


def _pool(name: str) -> dict[str, Any]:
    return next(p for p in _pool_export()["pools"] if p["name"] == name)


def _status(name: str) -> dict[str, Any]:
    [pool] = json.loads(zsn("zfs", "status", name, "--json").stdout)
    return dict(pool)


@pytest.fixture(scope="module")
def disks() -> Iterator[Disks]:
    needs_tools("zpool", "zfs", "dmsetup", "losetup", "dd")
    for module in ("zfs", "dm-delay", "loop"):
        modprobe(module)
    BASE.mkdir(parents=True, exist_ok=True)
    sh("mount", "-t", "tmpfs", "-o", "size=1100m", "tmpfs", str(BASE))
    built = Disks()
    try:
        for letter in ("a", "b", "c"):
            backing = BASE / letter
            sh("truncate", "-s", str(SECTORS * 512), str(backing))
            built.loops[letter] = sh("losetup", "-f", "--show", str(backing)).stdout.strip()
            sh("dmsetup", "create", f"zlab-{letter}", "--table",
               f"0 {SECTORS} delay {built.loops[letter]} 0 0")
        sh("udevadm", "settle", check=False)
        sh("zpool", "create", "-f", "-o", "ashift=12", "-O", "compression=lz4", "-O",
           "atime=off", "-O", "xattr=sa", "-m", f"{BASE}/{TANK}", TANK, "mirror",
           built.path("a"), built.path("b"))
        yield built
    finally:
        for pool in (TANK, BAD, GOOD):
            sh("zpool", "destroy", "-f", pool, check=False)
        for letter in built.loops:
            sh("dmsetup", "remove", "--retry", f"zlab-{letter}", check=False)
        for loop in built.loops.values():
            sh("losetup", "-d", loop, check=False)
        sh("umount", "-l", str(BASE), check=False)


@pytest.fixture
def write_load() -> Iterator[None]:
    """dd writing random data with fsync, over and over, until the test ends."""
    stop = threading.Event()

    def load() -> None:
        while not stop.is_set():
            sh("dd", "if=/dev/urandom", f"of={BASE}/{TANK}/load", "bs=1M", "count=24",
               "conv=fsync", check=False)

    thread = threading.Thread(target=load, daemon=True)
    thread.start()
    try:
        time.sleep(1)
        yield
    finally:
        stop.set()
        thread.join(timeout=120)


def test_a_dd_load_shows_per_vdev_write_rates(disks: Disks, write_load: None) -> None:
    result = zsn("zfs", "iostat", TANK, "--count", "4", "--json")
    blocks = [json.loads(line) for line in result.stdout.splitlines()]
    assert len(blocks) == 4 and all(b["pool"] == TANK for b in blocks)
    busy = [{v["name"]: v for v in b["vdevs"]} for b in blocks]
    leaves = (disks.path("a"), disks.path("b"))
    assert any(all(rows[leaf]["write_ops"] > 0 and rows[leaf]["write_bytes"] > 0
                   for leaf in leaves) for rows in busy), blocks
    assert all("mirror-0" in rows for rows in busy)
    text = zsn("zfs", "iostat", TANK, "--count", "2").stdout
    assert f"    {disks.path('a')}" in text and "MiB/s" in text
    pool = _pool(TANK)
    assert pool["io"]["write_bytes_per_second"] > 0  # averaged since import, under load
    for leaf in leaves:
        vdev = next(v for v in pool["vdevs"] if v["name"] == leaf)
        assert vdev["io"]["write_ops_per_second"] > 0 and vdev["state"] == "ONLINE"
    metrics = zsn("--export", "zfs", "--format", "prometheus").stdout
    assert f'zsn_zfs_pool_state{{pool="{TANK}",state="online"}} 1' in metrics
    assert f'zfs_pool_health{{pool="{TANK}"}} 0' in metrics
    assert f'zsn_zfs_vdev_write_ops_per_second{{pool="{TANK}",vdev="{leaves[0]}"}}' in metrics


def test_a_scrub_started_by_zsn_is_seen_in_progress_then_finished(disks: Disks) -> None:
    (BASE / TANK / "load").unlink(missing_ok=True)
    sh("dd", "if=/dev/urandom", f"of={BASE}/{TANK}/data", "bs=1M", "count=40", "conv=fsync")
    # 300 ms per I/O: the scrub outlasts the zsn runs that watch and pause it on a
    # loaded machine (at 100 ms it ended between the read that saw it and the pause)
    disks.delay(300, "a", "b")
    try:
        plan = zsn("zfs", "scrub", TANK, "--dry-run")
        assert f"Plan: start scrub on {TANK}" in plan.stdout
        zsn("zfs", "scrub", TANK)
        running = wait_for("a scrub in progress", lambda: (
            scan if (scan := _status(TANK)["scan"]) and scan["state"] == "scanning" else None),
            30)
        assert running["function"] == "scrub" and running["started"]
        assert running["percent"] is None or running["percent"] < 100
        paused = zsn("zfs", "scrub", TANK, "--pause")
        assert "done: zpool scrub -p" in paused.stderr
        assert _status(TANK)["scan"]["state"] == "paused"
        zsn("zfs", "scrub", TANK)  # resumes
    finally:
        disks.delay(0, "a", "b")
    finished = wait_for("the scrub to finish", lambda: (
        scan if (scan := _status(TANK)["scan"]) and scan["state"] == "finished" else None))
    assert finished["function"] == "scrub" and finished["errors"] == 0
    pool = _pool(TANK)
    assert pool["last_scrub"] and abs(pool["last_scrub"] - time.time()) < 600
    refused = zsn("zfs", "scrub", TANK, "--stop", check=False)
    assert refused.returncode == 2 and "no scrub is running or paused" in refused.stderr


def _finished_scrub_after(moment: float) -> dict[str, Any] | None:
    scan = _status(TANK)["scan"]
    if scan and scan["function"] == "scrub" and scan["state"] == "finished" \
            and scan["ended"] and scan["ended"] > moment:
        return dict(scan)
    return None


def test_a_slower_scrub_shows_in_the_scrub_history(disks: Disks) -> None:
    """Two real scrubs, the second with the disks slowed (the notes' "after a change"):
    both in `zsn zfs scrubs` from the pool's history and zsn's record, each with the
    duration zpool status gave, and the second's trend says it took longer."""
    data = BASE / TANK / "scrubbed"
    if not data.exists():
        sh("dd", "if=/dev/urandom", f"of={data}", "bs=1M", "count=24", "conv=fsync")
    seen = []
    for milliseconds in (0, 50):
        begun = time.time() - 1
        disks.delay(milliseconds, "a", "b")
        try:
            zsn("zfs", "scrub", TANK)
            seen.append(wait_for("the scrub to finish",
                                 partial(_finished_scrub_after, begun), 300))
        finally:
            disks.delay(0, "a", "b")
        _pool_export()  # a zsn that sees it finished records it (the export, as root)
    [entry] = json.loads(zsn("zfs", "scrubs", TANK, "--json").stdout)
    runs = entry["runs"]
    for scan, run in zip(seen, runs[-2:], strict=True):
        assert abs(run["ended"] - scan["ended"]) <= 2, (scan, run)
        assert abs(run["seconds"] - scan["duration_seconds"]) <= 2, (scan, run)
        assert run["seen_in"] == ["history", "status"], run
        assert run["examined"] and run["rate"] and run["errors"] == 0, run
    assert runs[-1]["seconds"] > runs[-2]["seconds"], runs
    # The trend is the last scrub against the median of up to five before it, whichever
    # test of the group scrubbed this pool then (a schedule's scrub ran on more data).
    trend = entry["trend"]
    earlier = runs[-6:-1]
    median = statistics.median(run["seconds"] for run in earlier if run["seconds"] is not None)
    assert trend["before"] == len(earlier) >= 1, trend
    assert abs(trend["duration_change_percent"]
               - 100 * (runs[-1]["seconds"] - median) / median) < 0.01, (trend, runs)
    record = json.loads(Path("/var/lib/zsn/zfs/scrubs.json").read_text())
    assert len(record["pools"][TANK]) >= 2
    text = zsn("zfs", "scrubs", TANK).stdout
    assert f"than the median of the {len(earlier)} before" in text \
        or f"as long as the {len(earlier)} before" in text, text
    metrics = zsn("--export", "zfs", "--format", "prometheus").stdout
    assert f'zsn_zfs_scrub_last_duration_seconds{{pool="{TANK}"}} {runs[-1]["seconds"]}' \
        in metrics, metrics


async def test_an_offlined_member_degrades_the_pool_in_the_pane_and_export(
        disks: Disks) -> None:
    from tests.pilot import row_texts, wait_until
    from zsn.system.host import Host
    from zsn.tui.app import PaneSwitcher, ZsnApp
    from zsn.tui.widgets.table import LiveTable

    sh("zpool", "offline", TANK, disks.path("b"))
    try:
        pool = _pool(TANK)
        assert pool["health"] == "DEGRADED"
        states = {v["name"]: v["state"] for v in pool["vdevs"]}
        assert states == {"mirror-0": "DEGRADED", disks.path("a"): "ONLINE",
                          disks.path("b"): "OFFLINE"}
        app = ZsnApp(Host(), theme="zsn-night", refresh=1.0)
        async with app.run_test(size=(100, 30)) as pilot:
            await pilot.pause()
            app.query_one("#panes", PaneSwitcher).active = "tab-zfs"

            def cells(table: str) -> list[list[str]]:
                return row_texts(app.query_one(table, LiveTable))

            def tank_row() -> list[str] | None:
                return next((row for row in cells("#zfs-pools") if row[0] == TANK), None)

            await wait_until(pilot, lambda: tank_row() is not None, "the pool", 120)
            table = app.query_one("#zfs-pools", LiveTable)
            table.focus()
            table.move_cursor(TANK)
            await pilot.pause()
            await wait_until(pilot, lambda: any(
                row[0].strip() == "zlab-b" and row[1] == "OFFLINE" for row in cells("#zfs-vdevs")),
                "the OFFLINE member", 120)
            assert tank_row()[1] == "DEGRADED"  # type: ignore[index]
            mirror = next(row for row in cells("#zfs-vdevs") if row[0].strip() == "mirror-0")
            assert mirror[1] == "DEGRADED"
            # the live stream reports the surviving member
            await wait_until(pilot, lambda: any(
                row[0].strip() == "zlab-a" and row[3] != "-" for row in cells("#zfs-vdevs")),
                "live I/O of zlab-a", 120)
    finally:
        sh("zpool", "online", TANK, disks.path("b"))
    wait_for("the pool back ONLINE", lambda: _status(TANK)["health"] == "ONLINE", 60)


async def test_a_property_set_in_the_pane_shows_its_new_value_within_one_refresh(
        disks: Disks) -> None:
    """`e` on a dataset, compression=zstd, `y`: the notice reads the value back, and the
    table shows it in the first read after the change (the one that may have been under
    way is followed by a fresh one), not 30 s later when datasets are due."""
    from textual.widgets import OptionList

    from tests.pilot import row_texts, wait_until
    from zsn.system.host import Host
    from zsn.tui.app import PaneSwitcher, ZsnApp
    from zsn.tui.panes.zfs import ZfsPane
    from zsn.tui.screens.plan import PlanScreen
    from zsn.tui.widgets.table import LiveTable
    from zsn.zfs.view import DATASET_COLUMNS

    compress = [column.key for column in DATASET_COLUMNS].index("compression")
    sh("zfs", "set", "compression=lz4", TANK)
    app = ZsnApp(Host(), theme="zsn-night", refresh=1.0)
    try:
        async with app.run_test(size=(100, 30)) as pilot:
            await pilot.pause()
            app.query_one("#panes", PaneSwitcher).active = "tab-zfs"
            await wait_until(pilot, lambda: TANK in app.query_one(
                "#zfs-pools", LiveTable).shown_keys, "the pool", 120)
            app.query_one("#zfs-pools", LiveTable).move_cursor(TANK)
            await pilot.press("d")
            datasets = app.query_one("#zfs-datasets", LiveTable)
            await wait_until(pilot, lambda: datasets.get_row(TANK) is not None, "datasets", 120)
            datasets.move_cursor(TANK)

            def shown() -> str:
                return next(row[compress] for row in row_texts(datasets)
                            if row[0] == TANK)

            assert shown() == "lz4"
            await pilot.press("e")
            await wait_until(pilot, lambda: bool(app.screen.query("#ask-choices")),
                             "the properties", 60)
            await pilot.press("enter")  # compression
            await wait_until(pilot, lambda: "zstd" in str(app.screen.query_one(
                "#ask-choices", OptionList).get_option_at_index(1).prompt), "the values", 60)
            await pilot.press("down", "enter")  # zstd
            await wait_until(pilot, lambda: isinstance(app.screen, PlanScreen), "the plan", 60)
            await pilot.press("y")
            pane = app.query_one(ZfsPane)
            await wait_until(pilot, lambda: any(n.message.startswith("Done") for n in
                                                app._notifications), "Done", 120)
            shown_at_done = pane.snapshot_count
            done = next(n.message for n in app._notifications if n.message.startswith("Done"))
            assert done == (f"Done: set compression=zstd on {TANK}\n{TANK}: was "
                            "compression=lz4 (local), now compression=zstd (local)")
            await wait_until(pilot, lambda: shown() == "zstd", "zstd in the table", 60)
            # the read under way at "Done" (it may predate the change), then a fresh one
            assert pane.snapshot_count - shown_at_done <= 2
            assert sh("zfs", "get", "-Hpo", "value", "compression", TANK).stdout.strip() \
                == "zstd"
    finally:
        sh("zfs", "set", "compression=lz4", TANK)


def test_a_replace_shows_a_resilver(disks: Disks) -> None:
    disks.delay(100, "a", "b", "c")
    try:
        sh("zpool", "replace", TANK, disks.path("b"), disks.path("c"))
        resilvering = wait_for("the resilver", lambda: (
            pool if (pool := _status(TANK))["scan"] and pool["scan"]["function"] == "resilver"
            and pool["scan"]["state"] == "scanning" else None), 30, every=0.2)
        names = {v["name"]: v for v in resilvering["vdevs"]}
        assert any(v["kind"] == "replacing" for v in resilvering["vdevs"])
        new = names[disks.path("c")]
        assert new["parent"].startswith("replacing-") and new["note"] == "(resilvering)"
        exported = _pool(TANK)
        assert exported["scan"]["function"] == "resilver"
    finally:
        disks.delay(0, "a", "b", "c")
    done = wait_for("the resilver to finish", lambda: (
        pool if (pool := _status(TANK))["scan"]["state"] == "finished"
        and not any(v["kind"] == "replacing" for v in pool["vdevs"]) else None))
    assert done["scan"]["function"] == "resilver"
    assert disks.path("c") in {v["name"] for v in done["vdevs"]}


def test_the_advisor_fires_on_ashift_9_and_compression_off(disks: Disks) -> None:
    backing = BASE / "bad.img"
    sh("truncate", "-s", str(96 * MIB), str(backing))
    loop = sh("losetup", "-f", "--show", str(backing)).stdout.strip()
    disks.loops["bad"] = loop
    # a loop device says it spins; this one says it is solid-state, as SSDs do
    Path(f"/sys/block/{Path(loop).name}/queue/rotational").write_text("0\n")
    sh("zpool", "create", "-f", "-o", "ashift=9", "-m", f"{BASE}/{BAD}", BAD, loop)
    findings = json.loads(zsn("zfs", "advise", "--json").stdout)
    mine = {(f["id"], f["severity"]) for f in findings if f["subject"] == BAD}
    assert ("ZFS001", "warning") in mine and ("ZFS004", "warning") in mine
    assert ("ZFS005", "warning") in mine and ("ZFS006", "info") in mine
    ashift = next(f for f in findings if f["id"] == "ZFS001" and f["subject"] == BAD)
    assert "ashift=9" in ashift["message"] and "solid-state" in ashift["message"]
    assert ashift["source"].startswith("field note 001")
    exported = {(f["id"], f["subject"]) for f in _pool_export()["findings"]}
    assert ("ZFS004", BAD) in exported


def test_the_advisor_is_quiet_on_a_pool_made_by_the_notes_advice(disks: Disks) -> None:
    backing = BASE / "good.img"
    sh("truncate", "-s", str(96 * MIB), str(backing))
    sh("zpool", "create", "-f", "-o", "ashift=12", "-O", "compression=lz4", "-O",
       "atime=off", "-O", "xattr=sa", "-m", f"{BASE}/{GOOD}", GOOD, str(backing))
    sh("zfs", "create", "-o", "recordsize=1M", f"{GOOD}/media")
    sh("zfs", "create", "-o", "recordsize=16K", f"{GOOD}/db")
    findings = json.loads(zsn("zfs", "advise", "--json").stdout)
    assert [f for f in findings if (f["subject"] or "").split("/")[0] == GOOD] == []
    plan = zsn("zfs", "set", f"{GOOD}/media", "compression=zstd", "--dry-run").stdout
    assert "existing blocks keep their compression; only new writes use zstd" in plan
    zsn("zfs", "set", f"{GOOD}/media", "compression=zstd")
    assert sh("zfs", "get", "-Hp", "-o", "value", "compression",
              f"{GOOD}/media").stdout.strip() == "zstd"


# -- the disks under the pools: QEMU's NVMe and SATA disks, their SMART --------------------
# The guest boots with them (tests/lab/kernel.py GROUP_DISKS["zfs"]): ZLABNVME0 and ZLABSATA0
# carry zlabsmart (the SATA disk behind dm-crypt), ZLABNVME1 (critical warning 4: SMART
# FAILED) and ZLABSATA1 carry zlabfail, by their by-id names; ZLABSATA2 carries zlabsleep
# and is put to sleep by the kernel's runtime power management.
SMART_POOL, FAIL_POOL, SLEEP_POOL = "zlabsmart", "zlabfail", "zlabsleep"
RECORDS = Path("/var/lib/zsn/zfs/smart.json")


def by_id(serial: str) -> str:
    kind = "nvme-QEMU_NVMe_Ctrl_" if serial.startswith("ZLABNVME") else "ata-QEMU_HARDDISK_"
    return f"/dev/disk/by-id/{kind}{serial}"


def kernel_name(serial: str) -> str:
    return Path(by_id(serial)).resolve().name


@dataclass
class QemuDisks:
    names: dict[str, str]
    """Serial -> kernel name."""
    crypt: str = "/dev/mapper/zlabcrypt"

    def entries(self, *pool: str) -> dict[tuple[str, str], dict[str, Any]]:
        """`zsn zfs disks --json`, by pool and disk."""
        found = json.loads(zsn("zfs", "disks", *pool, "--json").stdout)
        return {(entry["pool"], entry["disk"]): entry for entry in found}


@pytest.fixture(scope="module")
def qemu_disks() -> Iterator[QemuDisks]:
    needs_tools("zpool", "dmsetup", "smartctl", "udevadm")
    for module in ("zfs", "dm-crypt"):
        modprobe(module)
    sh("udevadm", "settle", check=False)
    serials = ("ZLABNVME0", "ZLABNVME1", "ZLABSATA0", "ZLABSATA1", "ZLABSATA2")
    wait_for("udev's by-id names of the QEMU disks",
             lambda: all(Path(by_id(serial)).exists() for serial in serials), 60)
    disks = QemuDisks({serial: kernel_name(serial) for serial in serials})
    sata0 = disks.names["ZLABSATA0"]
    sectors = int(Path(f"/sys/block/{sata0}/size").read_text())
    RECORDS.unlink(missing_ok=True)
    try:
        # plain dm-crypt as cryptsetup makes it (its uuid says CRYPT-PLAIN-NAME)
        sh("dmsetup", "create", "zlabcrypt", "--uuid", "CRYPT-PLAIN-zlabcrypt", "--table",
           f"0 {sectors} crypt aes-xts-plain64 {'0' * 64} 0 /dev/{sata0} 0")
        sh("udevadm", "settle", check=False)
        sh("zpool", "create", "-f", "-m", "none", SMART_POOL, "mirror",
           f"/dev/{disks.names['ZLABNVME0']}", disks.crypt)
        sh("zpool", "create", "-f", "-m", "none", FAIL_POOL, "mirror", by_id("ZLABNVME1"),
           by_id("ZLABSATA1"))
        sh("zpool", "create", "-f", "-m", "none", SLEEP_POOL, f"/dev/{disks.names['ZLABSATA2']}")
        yield disks
    finally:
        for pool in (SMART_POOL, FAIL_POOL, SLEEP_POOL):
            sh("zpool", "destroy", "-f", pool, check=False)
        sh("dmsetup", "remove", "--retry", "zlabcrypt", check=False)
        RECORDS.unlink(missing_ok=True)


def test_every_leaf_maps_to_its_disk_and_its_smart(qemu_disks: QemuDisks) -> None:
    names = qemu_disks.names
    found = qemu_disks.entries()
    nvme = found[(SMART_POOL, names["ZLABNVME0"])]
    assert nvme["vdev"] == f"/dev/{names['ZLABNVME0']}p1"  # ZFS partitioned the whole disk
    assert [layer["kind"] for layer in nvme["layers"]] == ["partition", "disk"]
    assert (nvme["transport"], nvme["rotational"], nvme["serial"], nvme["model"]) == (
        "nvme", False, "ZLABNVME0", "QEMU NVMe Ctrl")
    assert nvme["by_id"] == by_id("ZLABNVME0") and nvme["capacity"] == 128 * MIB
    assert (nvme["smart_device"], nvme["smart_type"]) == (
        f"/dev/{names['ZLABNVME0'][:-2]}", "nvme")
    assert (nvme["state"], nvme["health"]) == ("ok", "ok")
    assert nvme["smart"]["temperature"] == 50 and nvme["smart"]["critical_warning"] == 0
    assert nvme["smart"]["power_on_hours"] is not None
    sata = found[(SMART_POOL, names["ZLABSATA0"])]
    assert sata["vdev"] == qemu_disks.crypt
    assert [(layer["kind"], layer["label"]) for layer in sata["layers"]][0] == (
        "crypt", "zlabcrypt (dm-crypt PLAIN)")
    assert [layer["kind"] for layer in sata["layers"]] == ["crypt", "disk"]
    assert (sata["transport"], sata["rotational"], sata["serial"], sata["smart_type"]) == (
        "sata", True, "ZLABSATA0", "sat")
    assert (sata["smart"]["model"], sata["smart"]["temperature"], sata["health"]) == (
        "QEMU HARDDISK", 31, "ok")
    assert sata["smart"]["rotation_rate"] == 7200 and sata["smart"]["reallocated"] == 0
    failing = found[(FAIL_POOL, names["ZLABNVME1"])]
    assert failing["vdev"] == by_id("ZLABNVME1") + "-part1"
    assert failing["health"] == "failing" and failing["smart"]["passed"] is False
    assert "NVMe critical warning 0x04 (reliability degraded)" in failing["reasons"]
    assert found[(FAIL_POOL, names["ZLABSATA1"])]["health"] == "ok"
    text = zsn("zfs", "disks", FAIL_POOL).stdout
    line = next(line for line in text.splitlines() if f" {names['ZLABNVME1']} " in line)
    assert "ZLABNVME1" in line and "failing" in line and "50°C" in line


def test_the_advisor_and_the_metrics_read_smart(qemu_disks: QemuDisks) -> None:
    names = qemu_disks.names
    advice = zsn("zfs", "advise", "--json", check=False)
    assert advice.returncode == 1, advice.stderr  # an error finding
    findings = json.loads(advice.stdout)
    failing = [f for f in findings if f["id"] == "ZFS015"]
    assert [f["subject"] for f in failing] == [FAIL_POOL]
    assert f"/dev/{names['ZLABNVME1']} (QEMU NVMe Ctrl, serial ZLABNVME1)" in \
        failing[0]["message"]
    assert "reliability degraded" in failing[0]["message"]
    assert failing[0]["fix"].startswith(f"zpool replace {FAIL_POOL} {by_id('ZLABNVME1')}")
    metrics = zsn("--export", "zfs", "--format", "prometheus").stdout
    nvme1 = names["ZLABNVME1"][:-2]
    labels = f'device="{nvme1}",pool="{FAIL_POOL}",vdev="{by_id("ZLABNVME1")}-part1"'
    assert f"smartctl_device_smart_status{{{labels}}} 0" in metrics
    assert f"smartctl_device_critical_warning{{{labels}}} 4" in metrics
    assert f'smartctl_device_temperature{{{labels},temperature_type="current"}} 50' in metrics
    sata0 = names["ZLABSATA0"]
    assert (f'smartctl_device_smart_status{{device="{sata0}",pool="{SMART_POOL}",'
            f'vdev="{qemu_disks.crypt}"}} 1') in metrics
    exported = _pool_export()["disks"]
    assert {(e["pool"], e["disk"]) for e in exported} >= {
        (SMART_POOL, names["ZLABNVME0"]), (SMART_POOL, sata0), (FAIL_POOL, names["ZLABNVME1"])}


def test_smart_is_read_at_most_every_ten_minutes(qemu_disks: QemuDisks) -> None:
    first = qemu_disks.entries(SMART_POOL)
    read_at = {key: entry["smart"]["read_at"] for key, entry in first.items()}
    again = qemu_disks.entries(SMART_POOL)
    assert {key: entry["smart"]["read_at"] for key, entry in again.items()} == read_at
    assert all(entry["smart"]["age_seconds"] > 0 for entry in again.values())


def test_a_disk_the_kernel_put_to_sleep_is_not_woken(qemu_disks: QemuDisks) -> None:
    name = qemu_disks.names["ZLABSATA2"]
    power = Path(f"/sys/block/{name}/device/power")
    (power / "autosuspend_delay_ms").write_text("100\n")
    (power / "control").write_text("auto\n")
    try:
        wait_for("the disk runtime-suspended", lambda: (
            power / "runtime_status").read_text().strip() == "suspended", 60)
        RECORDS.unlink(missing_ok=True)  # due now
        [entry] = qemu_disks.entries(SLEEP_POOL).values()
        assert (entry["disk"], entry["state"], entry["health"]) == (name, "standby", "asleep")
        assert entry["asleep_by_kernel"] and entry["smart"] is None
        assert "runtime power management" in entry["attempt"]["message"]
        assert (power / "runtime_status").read_text().strip() == "suspended"
    finally:
        (power / "control").write_text("on\n")


# Scrub schedules: Debian 12's OpenZFS 2.1.11 ships zfs-scrub-{weekly,monthly}@.timer and
# zfs-scrub@.service in /lib/systemd/system (the host's root, shared); the guest's /etc
# is a writable overlay, and no systemd runs in it: zsn links the timer into
# timers.target.wants, as systemctl enable would.
def test_a_schedule_makes_a_timer_systemd_accepts_whose_service_scrubs(disks: Disks) -> None:
    from zsn.formats.unitfile import UnitFile

    needs_tools("systemd-analyze")
    timer = f"zfs-scrub-monthly@{TANK}.timer"
    zsn("zfs", "scrub", "schedule", TANK, "--every", "month", "--at", "3rd Sat 02:00")
    assert Path(f"/etc/systemd/system/timers.target.wants/{timer}").resolve() == \
        Path("/lib/systemd/system/zfs-scrub-monthly@.timer").resolve()
    dropin = Path(f"/etc/systemd/system/{timer}.d/zsn.conf").read_text()
    assert "OnCalendar=\nOnCalendar=Sat *-*-15..21 02:00:00\n" in dropin
    verified = sh("systemd-analyze", "verify", "--man=no", timer, check=False)
    assert verified.returncode == 0, verified.stdout + verified.stderr
    shown = json.loads(zsn("zfs", "scrub", "schedule", "--json").stdout)
    [entry] = [p for p in shown["pools"] if p["pool"] == TANK and p["kind"] == "scrub"]
    assert [(t["unit"], t["when"]) for t in entry["timers"]] == [
        (timer, "3rd Sat of the month 02:00")] and not entry["cron"]
    if shown["cron"] is not None:  # Debian's cron job: the pool opted out of it
        assert sh("zfs", "get", "-H", "-o", "value", "org.debian:periodic-scrub",
                  TANK).stdout.strip() == "disable"
    # the service's command as systemd runs it for the instance (%i: the pool)
    service = UnitFile(Path("/lib/systemd/system/zfs-scrub@.service").read_text())
    command = service.get("Service", "ExecStart")
    assert command is not None
    before = time.time()
    sh(*shlex.split(command.replace("%i", TANK)), timeout=300)
    history = [line for line in sh("zpool", "history", TANK).stdout.splitlines() if line]
    assert history[-1].endswith(f" zpool scrub -w {TANK}"), history[-3:]
    scan = _status(TANK)["scan"]
    assert (scan["function"], scan["state"]) == ("scrub", "finished")
    assert scan["ended"] >= int(before) - 1
    zsn("zfs", "scrub", "schedule", TANK, "--off")
    assert not Path(f"/etc/systemd/system/timers.target.wants/{timer}").exists()
    assert not Path(f"/etc/systemd/system/{timer}.d/zsn.conf").exists()


def test_stagger_spreads_the_pools_on_one_sata_controller(qemu_disks: QemuDisks) -> None:
    """zlabsmart, zlabfail and zlabsleep each have a disk on the guest's one AHCI
    controller: three slots, none shared (read from sysfs, no disk woken: a dry run)."""
    result = zsn("zfs", "scrub", "schedule", "--stagger", "--dry-run")
    calendar = result.stdout.split("scrub calendar:\n", 1)[1].splitlines()
    rows = {line.split()[0]: re.split(r"\s{2,}", line) for line in calendar[1:]}
    pools = (SMART_POOL, FAIL_POOL, SLEEP_POOL)
    assert len({rows[pool][1] for pool in pools}) == 3, calendar
    for pool in pools:
        assert set(rows[pool][3].split(", ")) >= set(pools) - {pool}, calendar
