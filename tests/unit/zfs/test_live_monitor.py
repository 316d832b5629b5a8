"""Reading ZFS (empty states, JSON and text, the pane's cheap polling) and the iostat
streams (restart, deadline, a vanished pool), against fake programs replaying captures
and against this host's real zpool, which has no kernel module to talk to."""

from __future__ import annotations

import shutil
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.needs import needs_tools
from tests.unit.zfs.conftest import LAB, OTHERS, POOL_LIST, POOL_LIST_OUTPUT, FakeZfs, read
from zsn.system import commands
from zsn.system.host import Host
from zsn.zfs import live
from zsn.zfs.live import MODULE_NOT_LOADED, ZfsReader, read_zfs
from zsn.zfs.monitor import IostatMonitor
from zsn.zfs.names import POOL_COLUMNS

REPO = Path(__file__).resolve().parents[3]
DATASETS = ("zfs list -Hp -t filesystem,volume -o name,type,used,available,referenced,"
            "compressratio,recordsize,compression,atime,relatime,xattr,"
            "mountpoint,creation,zsn:use")


def test_without_the_module_there_is_nothing_to_read(tmp_path: Path) -> None:
    snapshot = read_zfs(Host(tmp_path))
    assert snapshot.unavailable == MODULE_NOT_LOADED and not snapshot.errors


def test_the_real_zpool_of_a_host_without_the_module(tmp_path: Path) -> None:
    """zfsutils-linux is installed here, the zfs module is not (the host's kernel)."""
    needs_tools("zpool")
    if Path("/sys/module/zfs").exists():
        pytest.skip("this host has the zfs module loaded")
    (tmp_path / "sys/module/zfs").mkdir(parents=True)  # pretend: zpool itself must say it
    result = commands.run([live.find_program("zpool") or "zpool", "list", "-Hp"],
                          check=False, env=live.ENV)
    assert result.returncode == 1
    assert result.stderr == read(OTHERS / "zpool-list.module-not-loaded.stderr."
                                          "zfsutils-2.1.11-debian12.txt")
    snapshot = read_zfs(Host(tmp_path))
    assert snapshot.unavailable == MODULE_NOT_LOADED and snapshot.pools == ()
    assert read_zfs(Host()).unavailable == MODULE_NOT_LOADED


def test_zpool_not_installed(fake_zfs: FakeZfs, monkeypatch: pytest.MonkeyPatch,
                             tmp_path: Path) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))
    monkeypatch.setattr(live, "SBIN_DIRS", ())
    snapshot = read_zfs(Host(fake_zfs.root))
    assert snapshot.unavailable is None
    assert snapshot.errors == ("zpool is not installed (Debian: apt install zfsutils-linux)",)


def test_two_pools_with_their_datasets(fake_zfs: FakeZfs) -> None:
    fake_zfs.standard()
    fake_zfs.answer(DATASETS, read(LAB / "zfs-list-Hp-o.200-datasets.txt"))
    snapshot = read_zfs(Host(fake_zfs.root))
    assert snapshot.errors == () and snapshot.version == "2.1.11-1+deb12u1"
    assert len(snapshot.datasets) == 203
    full = snapshot.pool("full")
    assert full is not None and full.size == 352321536 and full.ashift == 12
    assert len(full.vdevs) == 16 and full.vdevs[0].name == "full"
    calls = fake_zfs.calls()
    assert sorted((c["program"], c["argv"][0]) for c in calls) == [
        ("zfs", "list"), ("zpool", "list"), ("zpool", "status")]
    assert all(c["lc_all"] == "C" for c in calls)


def test_the_export_starts_its_commands_before_loading_the_parsers() -> None:
    """`zsn --export zfs` loads the parsers, the model and the advisor while zpool and
    zfs run: importing the export section must not load them."""
    code = ("import sys, zsn.zfs.export\n"
            "print(sorted(m for m in sys.modules if m.startswith('zsn.zfs.')))")
    result = commands.run([sys.executable, "-c", code], env={"PYTHONPATH": str(REPO)})
    # names: the property names to ask for (and name checks), a few regular expressions
    assert result.stdout.split() == ["['zsn.zfs.export',", "'zsn.zfs.live',", "'zsn.zfs.names']"]


def test_started_reads_finish_with_the_same_snapshot(fake_zfs: FakeZfs) -> None:
    fake_zfs.standard()
    fake_zfs.answer(DATASETS, read(LAB / "zfs-list-Hp-o.200-datasets.txt"))
    started = live.start_everything(Host(fake_zfs.root), now=1795367000.0, iostat=False)
    snapshot, facts, outputs = started.finish()
    assert snapshot == read_zfs(Host(fake_zfs.root), clock=lambda: 1795367000.0)
    assert facts.now == 1795367000.0 and outputs == {}


def test_a_refused_command_is_an_error_and_the_rest_is_shown(fake_zfs: FakeZfs) -> None:
    fake_zfs.answer(POOL_LIST, read(POOL_LIST_OUTPUT))
    # libzfs_error_init()'s message for EACCES (lib/libzfs/os/linux/libzfs_util_os.c)
    fake_zfs.answer("zpool status -p -P",
                    stderr="Permission denied the ZFS utilities must be run as root.\n", rc=1)
    snapshot = read_zfs(Host(fake_zfs.root), datasets=False)
    assert snapshot.errors == ("zpool was refused access to /dev/zfs (permission denied): "
                               "run zsn as root",)
    assert [p.name for p in snapshot.pools] == ["full", "rz"]


def test_garbage_output_is_an_error_not_a_traceback(fake_zfs: FakeZfs) -> None:
    fake_zfs.answer(POOL_LIST, "full\t1\t2\n")
    fake_zfs.answer("zpool status -p -P", "  pool: full\n state: ONLINE\nconfig:\n\n"
                    "\tNAME STATE READ WRITE CKSUM\n\t???\n")
    snapshot = read_zfs(Host(fake_zfs.root), datasets=False)
    assert len(snapshot.errors) == 1 and snapshot.errors[0].startswith(
        "zpool output not understood: ")


def test_openzfs_2_3_is_read_as_json_and_a_refusal_falls_back_to_text(
        fake_zfs: FakeZfs) -> None:
    (fake_zfs.root / "sys/module/zfs/version").write_text("2.3.1-1\n")
    fake_zfs.answer("zpool list -j --json-int -o " + ",".join(POOL_COLUMNS),
                    read(OTHERS / "zpool-list-j.openzfs-man.json"))
    fake_zfs.answer("zpool status -j --json-int -P",
                    read(OTHERS / "zpool-status-j.raidz1-dedup-special.openzfs-man.json"))
    snapshot = read_zfs(Host(fake_zfs.root), datasets=False)
    assert [p.name for p in snapshot.pools] == ["tank"] and snapshot.errors == ()
    assert snapshot.pools[0].size == 111 * 1024 ** 3 and len(snapshot.pools[0].vdevs) == 11
    # a userland older than the module refuses -j: the same read again, in text
    fake_zfs.answer("zpool status -j --json-int -P", stderr=read(LAB / "status-j.stderr.txt"),
                    rc=2)
    fake_zfs.standard()
    snapshot = read_zfs(Host(fake_zfs.root), datasets=False)
    assert [p.name for p in snapshot.pools] == ["full", "rz"] and snapshot.errors == ()


def test_the_pane_reader_reads_kstat_states_between_full_reads(fake_zfs: FakeZfs) -> None:
    fake_zfs.standard()
    fake_zfs.answer(DATASETS, "")
    state = fake_zfs.root / "proc/spl/kstat/zfs/full/state"
    state.parent.mkdir()
    state.write_text("ONLINE\n")
    now = [100.0]
    reader = ZfsReader(Host(fake_zfs.root), full_every=5, datasets_every=30,
                       clock=lambda: now[0])
    reader.read()
    first = len(fake_zfs.calls())
    now[0] += 1
    reader.read()
    assert len(fake_zfs.calls()) == first, "no command between full reads"
    state.write_text("DEGRADED\n")  # the kstat changed: read everything at once
    now[0] += 1
    reader.read()
    assert len(fake_zfs.calls()) == first + 2  # list and status, not datasets
    now[0] += 5
    reader.read()
    assert len(fake_zfs.calls()) == first + 4
    reader.invalidate(datasets=True)
    reader.read()
    assert len(fake_zfs.calls()) == first + 7


# -- the iostat streams ------------------------------------------------------------
def stream_answer(fake: FakeZfs, pool: str, capture: Path, every: float = 0.05,
                  **extra: Any) -> None:
    lines = read(capture).splitlines(keepends=True)
    fake.answer(f"zpool iostat -HpvlyP -T u {pool} 1", stream=lines, every=every, **extra)


def wait_for(predicate: Callable[[], object], seconds: float = 10.0) -> None:
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        if predicate():
            return
        time.sleep(0.05)
    raise AssertionError("not reached")


def test_blocks_arrive_and_stop_ends_the_child(fake_zfs: FakeZfs) -> None:
    stream_answer(fake_zfs, "full", LAB / "zpool-iostat-Hpvly-l-Tu.full.1s-x3.txt",
                  sleep=0, every=0.02)
    fake_zfs.answers["zpool iostat -HpvlyP -T u full 1"]["stdout"] = ""
    fake_zfs.script.write_text(__import__("json").dumps(fake_zfs.answers))
    monitor = IostatMonitor(str(fake_zfs.bin / "zpool"), 1.0)
    try:
        monitor.watch(["full"], rows={"full": 10})
        wait_for(lambda: (monitor.poll()["full"].latest or None) is not None
                 and monitor.poll()["full"].latest.timestamp == 1795596115)  # type: ignore[union-attr]
        latest = monitor.poll()["full"].latest
        assert latest is not None and latest.row("/run/vdev/a").write_ops == 57  # type: ignore[union-attr]
        assert monitor.history.writes("full", "/run/vdev/a")[-1] == 1687225
    finally:
        monitor.stop()
    assert monitor.pools == []


def test_a_dead_stream_is_restarted_and_its_reason_shown(fake_zfs: FakeZfs) -> None:
    fake_zfs.answer("zpool iostat -HpvlyP -T u nosuch 1",
                    stderr=read(LAB / "zpool-iostat.no-such-pool.stderr.txt"), rc=1)
    monitor = IostatMonitor(str(fake_zfs.bin / "zpool"), 1.0)
    try:
        monitor.watch(["nosuch"])
        wait_for(lambda: monitor.poll()["nosuch"].error is not None)
        assert monitor.poll()["nosuch"].error == \
            "zpool exited with status 1: Unable to parse pools/vdevs list."
        wait_for(lambda: bool(monitor.poll()) and len(fake_zfs.calls()) >= 2, 5)  # restarted
    finally:
        monitor.stop()


def test_a_pool_that_vanishes_is_reported_by_the_deadline(fake_zfs: FakeZfs) -> None:
    stream_answer(fake_zfs, "rz", LAB / "zpool-iostat-Hpvly-l-Tu.pool-exported.stdout.txt",
                  every=0.05, stderr=read(LAB / "zpool-iostat-Hpvly-l-Tu.pool-exported."
                                                "stderr.txt"), sleep=0)
    fake_zfs.answers["zpool iostat -HpvlyP -T u rz 1"]["stdout"] = ""
    fake_zfs.answers["zpool iostat -HpvlyP -T u rz 1"]["sleep"] = 0
    # after its output the fake keeps the pipe open, as the real one does
    fake_zfs.answers["zpool iostat -HpvlyP -T u rz 1"]["stream"].append("")
    fake_zfs.answers["zpool iostat -HpvlyP -T u rz 1"]["every"] = 0.05
    fake_zfs.script.write_text(__import__("json").dumps(fake_zfs.answers))
    hold = fake_zfs.bin / "zpool"
    hold.write_text(hold.read_text().replace("sys.exit(answer.get(\"rc\", 0))",
                                             "sys.stderr.flush(); time.sleep(30)"))
    monitor = IostatMonitor(str(hold), 1.0, deadline=1.0)
    try:
        monitor.watch(["rz"])
        wait_for(lambda: monitor.poll()["rz"].error is not None)
        state = monitor.poll()["rz"]
        assert state.error == "pool rz is gone (zpool iostat: no such pool)"
        assert state.latest is not None  # the last block seen stays for the pane
    finally:
        monitor.stop()


def test_a_garbage_spewing_stream_is_killed_and_shown(fake_zfs: FakeZfs) -> None:
    fake_zfs.answer("zpool iostat -HpvlyP -T u full 1", stream=["garbage\n"] * 400,
                    every=0.01)
    monitor = IostatMonitor(str(fake_zfs.bin / "zpool"), 1.0, deadline=1.0)
    try:
        monitor.watch(["full"])
        wait_for(lambda: (monitor.poll()["full"].error or "").endswith("stopped it"))
        assert monitor.poll()["full"].error == \
            "zpool printed nothing zsn understands for 1 s; stopped it"
    finally:
        monitor.stop()


def test_watching_fewer_pools_stops_their_streams(fake_zfs: FakeZfs) -> None:
    for pool in ("a", "b"):
        fake_zfs.answer(f"zpool iostat -HpvlyP -T u {pool} 1", sleep=30)
    monitor = IostatMonitor(str(fake_zfs.bin / "zpool"), 1.0)
    try:
        monitor.watch(["a", "b"])
        assert monitor.pools == ["a", "b"]
        monitor.watch(["b"])
        assert monitor.pools == ["b"]
    finally:
        monitor.stop()
    assert shutil.which("zpool") is not None
