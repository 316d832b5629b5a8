"""`zsn zfs ...` and `zsn --export zfs` as processes, against fake zpool/zfs
programs replaying real captures: argv, exit statuses, plans, JSON and Prometheus."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families

from tests.schema import check_export
from tests.unit.zfs.conftest import FIXTURES, LAB, POOL_LIST, POOL_LIST_OUTPUT, VM, FakeZfs, read
from tests.unit.zfs.test_disk_health import STATUS
from tests.unit.zfs.test_disks import machine

DATASETS = ("zfs list -Hp -t filesystem,volume -o name,type,used,available,referenced,"
            "compressratio,recordsize,compression,atime,relatime,xattr,mountpoint,creation,"
            "zsn:use")


def zsn(fake: FakeZfs, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "zsn", "--root", str(fake.root), *args],
                          capture_output=True, text=True, timeout=60, check=False)


def scrub_states(fake: FakeZfs, state: str) -> None:
    """The lab's tank in `state` (zpool status -p -P), sized by the lab's zpool list."""
    fake.answer(POOL_LIST, read(POOL_LIST_OUTPUT).replace(
                    "full\t", "tank\t").split("\n")[0] + "\n")
    fake.answer("zpool status -p -P", read(VM / f"zpool-status-p-P.{state}.txt"))


def test_list_and_status(fake_zfs: FakeZfs) -> None:
    fake_zfs.standard()
    fake_zfs.answer(DATASETS, read(LAB / "zfs-list-Hp-o.200-datasets.txt").replace("p1", "full"))
    listed = zsn(fake_zfs, "zfs", "list")
    assert listed.returncode == 0, listed.stderr
    lines = listed.stdout.splitlines()
    assert lines[0].split() == ["POOL", "HEALTH", "SIZE", "ALLOC", "FREE", "FRAG", "CAP",
                                "DEDUP", "SCAN"]
    assert lines[1].split()[:3] == ["full", "ONLINE", "336.0"]
    assert "never scrubbed" in lines[1]
    shown = zsn(fake_zfs, "zfs", "status", "full")
    assert shown.returncode == 0, shown.stderr
    assert "    mirror-0" in shown.stdout and "  logs" in shown.stdout
    assert "/run/vdev/e" in shown.stdout and "AVAIL" in shown.stdout
    as_json = json.loads(zsn(fake_zfs, "zfs", "status", "--json").stdout)
    assert [p["name"] for p in as_json] == ["full", "rz"]


def test_status_of_a_pool_that_is_not_there_and_a_bad_name(fake_zfs: FakeZfs) -> None:
    fake_zfs.standard()
    missing = zsn(fake_zfs, "zfs", "status", "tank")
    assert (missing.returncode, missing.stderr.strip()) == (
        2, "zsn zfs: invalid: no pool named 'tank' (pools: full, rz)")
    bad = zsn(fake_zfs, "zfs", "scrub", "-x")
    assert bad.returncode == 2
    bad = zsn(fake_zfs, "zfs", "scrub", "tank/a")
    assert (bad.returncode, bad.stderr.strip()) == (
        2, "zsn zfs: invalid: 'tank/a' is not a pool name (a pool name has no '/' or '@')")
    assert not any(c["argv"][0] == "scrub" for c in fake_zfs.calls())


def test_without_the_module(fake_zfs: FakeZfs) -> None:
    (fake_zfs.root / "sys/module/zfs/version").unlink()
    (fake_zfs.root / "sys/module/zfs").rmdir()
    (fake_zfs.root / "proc/spl/kstat/zfs").rmdir()
    result = zsn(fake_zfs, "zfs", "list")
    assert result.returncode == 1
    assert result.stderr.strip() == ("zsn zfs: error: ZFS is not available: the ZFS kernel "
                                     "module is not loaded (load it as root with 'modprobe "
                                     "zfs'; Debian: apt install zfs-dkms)")
    exported = zsn(fake_zfs, "--export")
    assert exported.returncode == 0 and "zfs" not in json.loads(exported.stdout)
    named = zsn(fake_zfs, "--export", "zfs")
    assert named.returncode == 0
    check_export(json.loads(named.stdout))
    section = json.loads(named.stdout)["zfs"]
    assert section["available"] is False and "not loaded" in section["reason"]
    assert "errors" not in section


def test_scrub_start_pause_stop_as_plans(fake_zfs: FakeZfs) -> None:
    scrub_states(fake_zfs, "healthy")
    plan = zsn(fake_zfs, "zfs", "scrub", "tank", "--dry-run")
    assert plan.returncode == 0, plan.stderr
    assert plan.stdout.startswith("Plan: start scrub on tank\n  1. zpool scrub tank\n")
    assert "expect heavy I/O" in plan.stdout
    assert not any(c["argv"][0] == "scrub" for c in fake_zfs.calls())
    fake_zfs.answer("zpool scrub tank")
    done = zsn(fake_zfs, "zfs", "scrub", "tank")
    assert done.returncode == 0 and "done: zpool scrub tank" in done.stderr
    scrubs = [c for c in fake_zfs.calls() if c["argv"][0] == "scrub"]
    assert [c["argv"] for c in scrubs] == [["scrub", "tank"]] and scrubs[0]["lc_all"] == "C"
    refused = zsn(fake_zfs, "zfs", "scrub", "tank", "--pause")
    assert (refused.returncode, refused.stderr.strip()) == (
        2, "zsn zfs: invalid: no scrub is running on tank")
    scrub_states(fake_zfs, "scrub-in-progress")
    again = zsn(fake_zfs, "zfs", "scrub", "tank")
    assert again.returncode == 2 and "already running on tank (46.3% done)" in again.stderr
    assert "Plan: pause scrub on tank" in zsn(fake_zfs, "zfs", "scrub", "tank", "--pause",
                                              "--dry-run").stdout
    stop = zsn(fake_zfs, "zfs", "scrub", "tank", "--stop", "--dry-run").stdout
    assert "1. zpool scrub -s tank" in stop and "throws the scrub's progress away" in stop
    scrub_states(fake_zfs, "scrub-paused")
    assert "resume the paused scrub on tank" in zsn(fake_zfs, "zfs", "scrub", "tank",
                                                   "--dry-run").stdout


def test_a_refused_scrub_reports_zpools_reason(fake_zfs: FakeZfs) -> None:
    scrub_states(fake_zfs, "healthy")
    fake_zfs.answer("zpool scrub tank", stderr=read(LAB / "nobody-scrub.stderr.txt").replace(
        "full", "tank"), rc=1)
    result = zsn(fake_zfs, "zfs", "scrub", "tank")
    assert result.returncode == 1
    assert "zpool failed: cannot scrub tank: permission denied" in result.stderr


def test_set_a_property_with_its_preview_and_undo(fake_zfs: FakeZfs) -> None:
    get = "zfs get -Hp -r -t filesystem,volume -o name,value,source compression tank"
    fake_zfs.answer(get, "tank\toff\tdefault\ntank/db\tzstd\tlocal\ntank/media\toff\t"
                         "inherited from tank\n")
    plan = zsn(fake_zfs, "zfs", "set", "tank", "compression=LZ4", "--dry-run")
    assert plan.returncode == 0, plan.stderr
    assert plan.stdout.splitlines() == [
        "Plan: set compression=lz4 on tank",
        "  1. zfs set compression=lz4 tank",
        "  note: currently compression=off (default)",
        "  note: existing blocks keep their compression; only new writes use lz4",
        "  note: also changes 1 dataset(s) that inherit it: tank/media",
        "  note: keep their own value: tank/db (zstd, local)"]
    bad = zsn(fake_zfs, "zfs", "set", "tank", "compression=bogus")
    assert bad.returncode == 2 and "'bogus' is not a compression value zsn sets" in bad.stderr
    bad = zsn(fake_zfs, "zfs", "set", "tank", "recordsize=3000")
    assert bad.returncode == 2 and "a power of two from 512 to 16M" in bad.stderr
    bad = zsn(fake_zfs, "zfs", "set", "tank", "mountpoint=/x")
    assert bad.returncode == 2 and "zsn sets compression, atime, xattr, recordsize" in bad.stderr
    bad = zsn(fake_zfs, "zfs", "set", "tank@snap", "atime=off")
    assert bad.returncode == 2 and "snapshot or bookmark" in bad.stderr
    # zfs refuses it after all: the error says so, nothing is left half done
    fake_zfs.answer("zfs set compression=lz4 tank", stderr=read(LAB / "set-bad.stderr.txt"),
                    rc=1)
    failed = zsn(fake_zfs, "zfs", "set", "tank", "compression=lz4")
    assert failed.returncode == 1 and "cannot set property for 'full'" in failed.stderr


def test_clear_errors(fake_zfs: FakeZfs) -> None:
    scrub_states(fake_zfs, "cksum-repaired")
    plan = zsn(fake_zfs, "zfs", "clear", "tank", "--dry-run").stdout
    assert "1. zpool clear tank" in plan and "counters (" in plan
    device = zsn(fake_zfs, "zfs", "clear", "tank", "/dev/mapper/disk-a", "--dry-run")
    assert "1. zpool clear tank /dev/mapper/disk-a" in device.stdout
    missing = zsn(fake_zfs, "zfs", "clear", "tank", "/dev/sdz")
    assert missing.returncode == 2 and "has no device '/dev/sdz'" in missing.stderr


def test_iostat_prints_each_block_as_it_arrives(fake_zfs: FakeZfs) -> None:
    fake_zfs.standard()
    lines = read(LAB / "zpool-iostat-Hpvly-l-Tu.full.1s-x3.txt").splitlines(keepends=True)
    fake_zfs.answer("zpool iostat -HpvlyP -T u full 1 3", stream=lines, every=0.01)
    result = zsn(fake_zfs, "zfs", "iostat", "full", "--count", "3", "--json")
    assert result.returncode == 0, result.stderr
    blocks = [json.loads(line) for line in result.stdout.splitlines()]
    assert [b["time"] for b in blocks] == [1795596113, 1795596114, 1795596115]
    leaves = {v["name"]: v for v in blocks[0]["vdevs"]}
    assert leaves["/run/vdev/a"]["write_ops"] == 274 and leaves["/run/vdev/c"]["group"] == "logs"
    text = zsn(fake_zfs, "zfs", "iostat", "full", "--count", "3")
    assert text.returncode == 0
    assert "\n    /run/vdev/a " in text.stdout and "22.8 MiB/s" in text.stdout


def test_iostat_that_dies_early_is_an_error(fake_zfs: FakeZfs) -> None:
    fake_zfs.standard()
    fake_zfs.answer("zpool iostat -HpvlyP -T u full 1 3", stderr="internal error\n", rc=1)
    result = zsn(fake_zfs, "zfs", "iostat", "full", "--count", "3")
    assert result.returncode == 1
    assert result.stderr.strip() == ("zsn zfs: error: zpool iostat full: zpool exited with "
                                     "status 1: internal error")
    assert zsn(fake_zfs, "zfs", "iostat", "full", "--interval", "0").returncode == 2


def export_fakes(fake: FakeZfs) -> None:
    fake.standard()
    fake.answer(DATASETS, read(LAB / "zfs-list-Hp-o.200-datasets.txt").replace("p1", "full"))
    (fake.root / "etc/zfs").mkdir(parents=True, exist_ok=True)
    (fake.root / "etc/zfs/zpool.cache").write_bytes(
        (LAB / "etc-zfs-zpool.cache.full-rz-small.bin").read_bytes())
    fake.answer("zpool iostat -HpvlP", read(LAB / "zpool-iostat-Hpvly-l-Tu.full.1s-x3.txt")
                .split("1795596114")[0].split("1795596113\n")[1])


def test_export_section(fake_zfs: FakeZfs) -> None:
    export_fakes(fake_zfs)
    result = zsn(fake_zfs, "--export", "zfs")
    assert result.returncode == 0, result.stderr
    check_export(json.loads(result.stdout))
    section = json.loads(result.stdout)["zfs"]
    assert section["available"] is True and section["version"] == "2.1.11-1+deb12u1"
    full = section["pools"][0]
    assert (full["name"], full["health"], full["size"], full["scan"]) == (
        "full", "ONLINE", 352321536, None)
    assert full["io"]["write_ops_per_second"] == 3015
    leaf = next(v for v in full["vdevs"] if v["name"] == "/run/vdev/a")
    assert (leaf["state"], leaf["parent"], leaf["read_errors"]) == ("ONLINE", "mirror-0", 0)
    assert leaf["io"]["write_bytes_per_second"] == 23942484
    assert {v["group"] for v in full["vdevs"]} == {"data", "dedup", "special", "logs",
                                                    "cache", "spares"}
    assert len(section["datasets"]) == 203
    ids = {(f["id"], f["subject"]) for f in section["findings"]}
    assert ("ZFS005", "full") in ids  # 2.1's atime=on, relatime=off on the pool root
    assert all(f.get("source") for f in section["findings"])


def test_the_export_runs_four_commands_and_reads_ashift_from_the_cache_file(
        fake_zfs: FakeZfs) -> None:
    """zpool list, zpool status, zfs list (with every property the advisor reads) and
    the since-import zpool iostat: no zdb (the cache file has each vdev's ashift), no
    dmsetup (no dm-crypt device here)."""
    export_fakes(fake_zfs)
    result = zsn(fake_zfs, "--export", "zfs")
    assert result.returncode == 0, result.stderr
    ran = sorted(" ".join([call["program"], *call["argv"][:2]])
                 for call in fake_zfs.calls())
    assert ran == ["zfs list -Hp", "zpool iostat -HpvlP", "zpool list -Hp",
                   "zpool status -p"]
    assert all(call["lc_all"] == "C" for call in fake_zfs.calls())
    section = json.loads(result.stdout)["zfs"]
    assert "notes" not in section  # the cache file was read
    assert not [f for f in section["findings"] if f["id"] == "ZFS001" and f["subject"] == "full"]


def test_prometheus_metrics_parse(fake_zfs: FakeZfs) -> None:
    export_fakes(fake_zfs)
    result = zsn(fake_zfs, "--export", "zfs", "--format", "prometheus")
    assert result.returncode == 0, result.stderr
    families = {f.name: f for f in text_string_to_metric_families(result.stdout)}
    state = {(s.labels["pool"], s.labels["state"]): s.value
             for s in families["zsn_zfs_pool_state"].samples}
    assert state[("full", "online")] == 1 and state[("full", "degraded")] == 0
    assert {s.labels["pool"]: s.value for s in families["zfs_pool_health"].samples}["full"] == 0
    # The rest of zfs_exporter's default pool properties, its names and values.
    for name, value in (("zfs_pool_freeing_bytes", 0), ("zfs_pool_leaked_bytes", 0),
                        ("zfs_pool_readonly", 0)):
        assert {s.labels["pool"]: s.value for s in families[name].samples} == {
            "full": value, "rz": value}, name
    writes = {s.labels["vdev"]: s.value
              for s in families["zsn_zfs_vdev_write_ops_per_second"].samples}
    assert writes["full"] == 3015 and writes["/run/vdev/b"] == 274
    errors = families["zsn_zfs_vdev_errors"].samples  # the parser drops "_total"
    assert {s.labels["type"] for s in errors} == {"read", "write", "checksum"}
    assert families["zsn_zfs_scan_active"].samples[0].value == 0
    success = families["zsn_collector_success"].samples
    assert [(s.labels, s.value) for s in success] == [({"collector": "zfs"}, 1)]


def test_export_of_something_unreadable_is_exit_3_partial(fake_zfs: FakeZfs) -> None:
    export_fakes(fake_zfs)
    fake_zfs.answer("zpool status -p -P", stderr="internal error: out of memory\n", rc=1)
    result = zsn(fake_zfs, "--export", "zfs")
    assert result.returncode == 3
    section = json.loads(result.stdout)["zfs"]
    assert section["errors"] == ["zpool status failed: internal error: out of memory"]
    assert "zsn: zfs: zpool status failed" in result.stderr


def test_advise(fake_zfs: FakeZfs) -> None:
    export_fakes(fake_zfs)
    result = zsn(fake_zfs, "zfs", "advise", "--json")
    assert result.returncode == 0, result.stderr
    findings = json.loads(result.stdout)
    # lz4 was set at create; rz's raidz was made on files with ashift left to ZFS: 9; the
    # tree has no scrub timer and no cron job: nothing scrubs either pool
    assert {f["id"] for f in findings} == {"ZFS001", "ZFS005", "ZFS006", "ZFS022"}
    assert sorted(f["subject"] for f in findings if f["id"] == "ZFS022") == ["full", "rz"]
    assert [f["subject"] for f in findings if f["id"] == "ZFS001"] == ["rz"]
    text = zsn(fake_zfs, "zfs", "advise").stdout
    assert "ZFS005 warning [full]: atime is on without relatime" in text
    assert "fix: zfs set atime=off full (or relatime=on)" in text


@pytest.mark.parametrize("args", [["zfs", "--help"], ["zfs", "iostat", "--help"]])
def test_help(fake_zfs: FakeZfs, args: list[str]) -> None:
    result = zsn(fake_zfs, *args)
    assert result.returncode == 0 and "usage: zsn zfs" in result.stdout


def test_a_hanging_zpool_is_bounded(fake_zfs: FakeZfs, monkeypatch: pytest.MonkeyPatch) -> None:
    from zsn.system.host import Host
    from zsn.zfs import live

    fake_zfs.standard()
    fake_zfs.answer("zpool status -p -P", sleep=30)
    monkeypatch.setattr(live, "COMMAND_TIMEOUT", 1.0)
    snapshot = live.read_zfs(Host(fake_zfs.root), datasets=False)
    assert snapshot.errors == ("zpool: no answer within 1 s",)
    assert [p.name for p in snapshot.pools] == ["full", "rz"]  # what list said
    assert Path(fake_zfs.script).exists()


def test_dataset_counters_come_from_the_objset_kstats(tmp_path: Path) -> None:
    """Each ``== PATH`` part of the capture is one kstat file of the lab's tank."""
    from zsn.system.host import Host
    from zsn.zfs.export import dataset_counters

    for part in read(VM / "proc-spl-kstat-zfs-tank-objset.txt").split("== ")[1:]:
        path, _, text = part.partition("\n")
        target = tmp_path / path.lstrip("/")
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text)
    kstats = tmp_path / "proc/spl/kstat/zfs/tank"
    (kstats / "objset-0x99").write_bytes(b"name type data\ndataset_name 7 tank/\xff\n")
    (kstats / "state").write_text("ONLINE\n")
    counters = dataset_counters(Host(tmp_path), ["tank", "gone"])
    assert counters == {
        "tank": {"reads": 0, "writes": 0, "read_bytes": 0, "written_bytes": 0},
        "tank/media": {"reads": 0, "writes": 560, "read_bytes": 0, "written_bytes": 587202560},
        "tank/db": {"reads": 0, "writes": 2000, "read_bytes": 0, "written_bytes": 32768000}}


@pytest.mark.parametrize("fixture", [
    "zpool-status-scrub-in-progress.2.2plus-format.zpool-status-exporter.txt",
    "zpool-status-scrub-canceled.zpool-status-exporter.txt",
    "zpool-status-resilvered-complete.zpool-status-exporter.txt",
    "zpool-status-scrub-in-progress.0.7-format-de-locale.check_zpool_scrub.txt",
])
def test_an_export_with_a_scan_matches_the_schema(fake_zfs: FakeZfs, fixture: str) -> None:
    """A pool with a scrub or resilver (its real scan lines, given to the lab's pool)
    exports as the published schema says; every scrubbed pool has one."""
    scan = read(FIXTURES / "zfs" / fixture).split("  scan: ", 1)[1].split("config:", 1)[0]
    export_fakes(fake_zfs)
    status = read(LAB / "zpool-status-p-P.all-classes.txt").replace(
        " state: ONLINE\n", f" state: ONLINE\n  scan: {scan}", 1)
    fake_zfs.answer("zpool status -p -P", status)
    result = zsn(fake_zfs, "--export", "zfs")
    assert result.returncode == 0, result.stderr
    document = json.loads(result.stdout)
    assert document["zfs"]["pools"][0]["scan"] is not None
    check_export(document)


def test_disks_under_a_root_map_each_leaf_without_asking_smart(fake_zfs: FakeZfs) -> None:
    """`zsn zfs disks` on the sysfs tree of test_disks: each leaf's layers and disk; SMART
    is never read under --root (its devices are the live system's), and that is said."""
    machine(fake_zfs.root)
    fake_zfs.answer(POOL_LIST, read(POOL_LIST_OUTPUT).replace("full\t", "tank\t")
                    .split("\n")[0] + "\n")
    fake_zfs.answer("zpool status -p -P", STATUS.format(cksum=0))
    found = zsn(fake_zfs, "zfs", "disks", "--json")
    assert found.returncode == 0, found.stderr
    assert "SMART is read on the live system only, not under --root" in found.stderr
    entries = json.loads(found.stdout)
    assert [(e["vdev"], e["disk"], [layer["kind"] for layer in e["layers"]], e["state"])
            for e in entries] == [
        ("/dev/mapper/luks-tank0", "sda", ["crypt", "partition", "disk"], "never"),
        ("/dev/nvme0n1p1", "nvme0n1", ["partition", "disk"], "never")]
    text = zsn(fake_zfs, "zfs", "disks", "tank")
    assert "WD-WCC4M0001" in text.stdout and "luks-tank0 (dm-crypt LUKS2) → sda1 → sda" in \
        text.stdout
    missing = zsn(fake_zfs, "zfs", "disks", "nosuch")
    assert missing.returncode == 2 and "no pool named 'nosuch'" in missing.stderr
    exported = json.loads(zsn(fake_zfs, "--export", "zfs").stdout)
    check_export(exported)
    assert [e["disk"] for e in exported["zfs"]["disks"]] == ["sda", "nvme0n1"]
