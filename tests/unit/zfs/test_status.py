"""`zpool status` text (every version's captures) and 2.3 JSON into the same pools."""

from __future__ import annotations

import contextlib
import time
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests.unit.zfs.conftest import LAB, OTHERS, VM, read
from zsn.errors import ParseError
from zsn.zfs import status
from zsn.zfs.model import Scan

TEXT_CAPTURES = sorted([*OTHERS.glob("zpool-status*.txt"), *VM.glob("zpool-status*.txt"),
                        *LAB.glob("zpool-status*.txt")])
FRAGMENTS = {"zpool-status-scrub-in-progress.fragment.openzfs-man.txt"}


def local(text: str) -> float:
    return time.mktime(time.strptime(text, "%a %b %d %H:%M:%S %Y"))


@pytest.mark.parametrize("path", TEXT_CAPTURES, ids=lambda p: p.name)
def test_every_capture_parses_into_pools_with_a_tree(path: Path) -> None:
    if path.name in FRAGMENTS:  # scan lines only: no pool to show
        with pytest.raises(ParseError, match="no 'pool:' line"):
            status.parse_text(read(path))
        return
    pools = status.parse_text(read(path))
    if path.name == "zpool-status-x.healthy.txt":  # "all pools are healthy"
        assert pools == []
        return
    assert pools
    for pool in pools:
        assert pool.vdevs[0].name == pool.name and pool.vdevs[0].kind == "pool"
        names = {v.name for v in pool.vdevs}
        assert all(v.parent is None or v.parent in names for v in pool.vdevs)
        assert all(v.state in status.STATES or v.kind == "group" for v in pool.vdevs)


def test_every_vdev_class_and_its_members() -> None:
    full, raidz = status.parse_text(read(LAB / "zpool-status-p-P.all-classes.txt"))
    tree = [(v.name, v.group, v.depth, v.parent, v.kind, v.state) for v in full.vdevs]
    assert tree == [
        ("full", "data", 0, None, "pool", "ONLINE"),
        ("mirror-0", "data", 1, "full", "mirror", "ONLINE"),
        ("/run/vdev/a", "data", 2, "mirror-0", "file", "ONLINE"),
        ("/run/vdev/b", "data", 2, "mirror-0", "file", "ONLINE"),
        ("dedup", "dedup", 0, None, "group", ""),
        ("/run/vdev/h", "dedup", 1, "dedup", "file", "ONLINE"),
        ("special", "special", 0, None, "group", ""),
        ("mirror-2", "special", 1, "special", "mirror", "ONLINE"),
        ("/run/vdev/f", "special", 2, "mirror-2", "file", "ONLINE"),
        ("/run/vdev/g", "special", 2, "mirror-2", "file", "ONLINE"),
        ("logs", "logs", 0, None, "group", ""),
        ("/run/vdev/c", "logs", 1, "logs", "file", "ONLINE"),
        ("cache", "cache", 0, None, "group", ""),
        ("/run/vdev/d", "cache", 1, "cache", "file", "ONLINE"),
        ("spares", "spares", 0, None, "group", ""),
        ("/run/vdev/e", "spares", 1, "spares", "file", "AVAIL"),
    ]
    assert raidz.vdev("raidz1-0").kind == "raidz1"  # type: ignore[union-attr]
    assert full.scan is None and raidz.scan is None


def test_an_offlined_member_degrades_its_mirror_and_the_pool() -> None:
    [pool] = status.parse_text(read(LAB / "zpool-status-p-P.all-classes-offline.txt"))
    assert pool.health == "DEGRADED"
    assert [(v.name, v.state) for v in pool.vdevs[:4]] == [
        ("full", "DEGRADED"), ("mirror-0", "DEGRADED"), ("/run/vdev/a", "ONLINE"),
        ("/run/vdev/b", "OFFLINE")]
    assert pool.status.startswith("One or more devices has been taken offline")
    assert "zpool online" in pool.action


def test_scrub_in_progress_2_1() -> None:
    [pool] = status.parse_text(read(VM / "zpool-status-p-P.scrub-in-progress.txt"))
    scan = pool.scan
    assert scan is not None
    assert (scan.function, scan.state) == ("scrub", "scanning")
    assert scan.started == local("Tue Nov 24 18:20:07 2026")
    assert scan.percent == 46.28 and scan.eta_seconds == 6
    assert scan.total == 193 * 1024 ** 2 and scan.issued == int(89.2 * 1024 ** 2)
    assert scan.rate == int(round(14.9 * 1024 ** 2)) and scan.repaired == 0


def test_scrub_in_progress_2_2_without_an_estimate() -> None:
    [pool] = status.parse_text(read(
        OTHERS / "zpool-status-scrub-in-progress.2.2plus-format.zpool-status-exporter.txt"))
    scan = pool.scan
    assert scan is not None and scan.state == "scanning"
    assert scan.examined == 704 * 1024 ** 3 and scan.total == int(round(1.66 * 1024 ** 4))
    assert scan.issued == 0 and scan.percent == 0.0 and scan.eta_seconds is None


def test_paused_finished_canceled_and_resilvering() -> None:
    def scan(name: str) -> Scan:
        [pool] = status.parse_text(read(VM / name))
        assert pool.scan is not None
        return pool.scan

    paused = scan("zpool-status-p-P.scrub-paused.txt")
    assert (paused.state, paused.percent, paused.eta_seconds) == ("paused", 48.37, None)
    assert paused.started == local("Tue Nov 24 18:20:07 2026")
    done = scan("zpool-status-p-P.scrub-finished.txt")
    assert (done.state, done.errors, done.duration_seconds) == ("finished", 0, 15)
    assert done.ended == local("Tue Nov 24 18:20:22 2026")
    canceled = scan("zpool-status-p-P.scrub-canceled.txt")
    assert (canceled.function, canceled.state) == ("scrub", "canceled")
    resilver = scan("zpool-status-p-P.replacing.txt")
    assert (resilver.function, resilver.state, resilver.percent) == ("resilver", "scanning",
                                                                    73.89)
    assert resilver.repaired == int(round(29.9 * 1024 ** 2))
    after = scan("zpool-status-p-P.after-replace.txt")
    assert (after.function, after.state) == ("resilver", "finished")


def test_replacing_shows_the_resilvering_member() -> None:
    [pool] = status.parse_text(read(VM / "zpool-status-p-P.replacing.txt"))
    replacing = pool.vdev("replacing-1")
    assert replacing is not None and replacing.kind == "replacing"
    new = pool.vdev("/dev/mapper/disk-f")
    assert new is not None and new.parent == "replacing-1" and new.note == "(resilvering)"


def test_checksum_errors_are_exact_with_p() -> None:
    [pool] = status.parse_text(read(VM / "zpool-status-p-P.cksum-repaired.txt"))
    disk = pool.vdev("/dev/mapper/disk-a")
    assert disk is not None and disk.checksum_errors and disk.checksum_errors > 0
    [human] = status.parse_text(read(
        OTHERS / "zpool-status-cksum-2.72K-after-scrub.freebsd-handbook.txt"))
    assert max(v.checksum_errors or 0 for v in human.vdevs) == int(2.72 * 1024)


def test_notes_after_the_counts_are_kept() -> None:
    [pool] = status.parse_text(read(
        OTHERS / "zpool-status-degraded-mirror-unavail-cksum-100980.zpool-status-exporter.txt"))
    missing = pool.vdev("12345678901234567890")
    assert missing is not None and missing.state == "UNAVAIL"
    assert missing.checksum_errors == 100980
    assert missing.note.startswith("was /dev/disk/by-id/")


def test_space_indented_copies_and_a_spare_in_use() -> None:
    [pool] = status.parse_text(read(
        OTHERS / "zpool-status-resilver-healing-replacing-in-progress.openzfs-docs.txt"))
    spare = [v for v in pool.vdevs if v.group == "spares"]
    assert [(v.name, v.state, v.note) for v in spare[1:]] == [
        ("draid1-0-0", "INUSE", "currently in use")]
    assert pool.vdev("draid1:4d:11c:1s-0").kind == "draid1"  # type: ignore[union-attr]


def test_permanent_errors_are_counted() -> None:
    [pool] = status.parse_text(read(
        OTHERS / "zpool-status-data-corruption-nonroot-errlist-denied.zpool-status-exporter.txt"))
    assert pool.data_errors == 1
    [solaris] = status.parse_text(read(
        OTHERS / "zpool-status-unavail-permanent-errors.solaris.jc.txt"))
    assert solaris.data_errors == 3 and solaris.health == "UNAVAIL"


def test_scan_fragment_and_old_formats() -> None:
    lines = read(OTHERS / "zpool-status-scrub-in-progress.fragment.openzfs-man.txt").splitlines()
    scan = status.parse_scan([line.strip().removeprefix("scan: ") for line in lines[1:4]])
    assert scan is not None and scan.percent == 16.91 and scan.eta_seconds == 4
    assert scan.total == 405 * 1024 ** 2
    [old] = status.parse_text(read(
        OTHERS / "zpool-status-scrub-in-progress.0.7-format-de-locale.check_zpool_scrub.txt"))
    assert old.scan is not None and old.scan.percent == 72.38
    assert old.scan.eta_seconds == 14 * 3600 + 12 * 60
    days = status.parse_scan(["scrub in progress since Thu Aug 17 10:25:48 2017",
                              "461G scanned at 120M/s, 258G issued at 67.2M/s, 496G total",
                              "0B repaired, 52.05% done, 0 days 01:01:21 to go"])
    assert days is not None and days.eta_seconds == 3681


def test_percent_past_100_is_clamped() -> None:
    scan = status.parse_scan(["scrub in progress since Tue Nov 24 18:20:07 2026",
                              "193M scanned, 195M issued, 193M total",
                              "0B repaired, 101.00% done, 00:00:00 to go"])
    assert scan is not None and scan.percent == 100.0


def test_json_2_3_matches_the_tree_shape_of_text() -> None:
    [pool] = status.parse_json(read(
        OTHERS / "zpool-status-j.raidz1-dedup-special.openzfs-man.json"))
    assert pool.name == "tank" and pool.health == "ONLINE"
    groups = [(v.name, v.group, v.depth, v.kind) for v in pool.vdevs if v.depth <= 1]
    assert groups == [("tank", "data", 0, "pool"), ("raidz1-0", "data", 1, "raidz"),
                      ("dedup", "dedup", 0, "group"), ("mirror-2", "dedup", 1, "mirror"),
                      ("special", "special", 0, "group"),
                      ("/dev/disk/by-partuuid/25d418f8-92bd-4327-b59f-7ef5d5f50d81", "special",
                       1, "disk")]
    leaf = pool.vdevs[2]
    assert leaf.parent == "raidz1-0" and leaf.state == "ONLINE"  # the man page's HEALTHY
    assert (leaf.read_errors, leaf.write_errors, leaf.checksum_errors) == (0, 0, 0)


def test_json_scan_stats() -> None:
    # The shape zpool status -j prints (reference zfs.md); numbers as --json-int gives them.
    document = ('{"pools": {"tank": {"name": "tank", "state": "ONLINE", "vdevs": {"tank": {}},'
                ' "scan_stats": {"function": "SCRUB", "state": "SCANNING", "start_time": '
                '1795367000, "to_examine": 1000, "examined": 600, "issued": 250, '
                '"processed": 0, "scrub_pause": 0}}}}')
    [pool] = status.parse_json(document)
    assert pool.scan is not None
    assert (pool.scan.function, pool.scan.state, pool.scan.percent) == ("scrub", "scanning", 25.0)


def test_json_that_is_not_json() -> None:
    with pytest.raises(ParseError, match="zpool status -j: not valid JSON"):
        status.parse_json("invalid option 'j'")


@given(st.text(alphabet=st.sampled_from(
    list("\t  :/-abcdefgmnoprstuvxyzNAMESTOLIDEGR0123456789\n")), max_size=400))
def test_garbage_raises_only_parse_errors(text: str) -> None:
    with contextlib.suppress(ParseError):
        status.parse_text(text)


@given(st.lists(st.sampled_from(TEXT_CAPTURES), min_size=1, max_size=3))
def test_concatenated_outputs_give_every_pool(paths: list[Path]) -> None:
    texts = [read(p) for p in paths if p.name not in FRAGMENTS]
    expected = sum(len(status.parse_text(t)) for t in texts)
    assert len(status.parse_text("\n".join(texts))) == expected


def test_a_json_scan_state_zsn_does_not_know_is_unknown() -> None:
    scan = status._json_scan({"function": "SCRUB", "state": "REBUILDING"})
    assert scan is not None and (scan.state, scan.text) == (
        "unknown", "function scrub, state rebuilding")
