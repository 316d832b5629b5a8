"""The pool cache file, read by zsn instead of starting `zdb -C`: a real capture of
/etc/zfs/zpool.cache (OpenZFS 2.1) against what zdb printed of it at the same moment."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.unit.zfs.conftest import LAB, read
from tests.unit.zfs.zdb_text import nvlist_of
from zsn.errors import ParseError, ZsnError
from zsn.system.host import Host
from zsn.zfs import cachefile, status
from zsn.zfs.facts import gather
from zsn.zfs.lint import advise
from zsn.zfs.model import ZfsSnapshot

CACHE = LAB / "etc-zfs-zpool.cache.full-rz-small.bin"


def without_skipped(value: object) -> object:
    """The decoded lists without the values zsn does not decode (None)."""
    if isinstance(value, dict):
        return {k: without_skipped(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [without_skipped(v) for v in value]
    return value


def test_the_cache_file_holds_what_zdb_printed_of_it() -> None:
    decoded = cachefile.unpack(CACHE.read_bytes())
    assert list(decoded) == ["full", "rz", "small"]
    assert without_skipped(decoded) == nvlist_of(read(LAB / "zdb-C.full-rz-small.txt"))


def test_each_top_level_vdev_has_its_ashift() -> None:
    tops = cachefile.top_vdevs(cachefile.unpack(CACHE.read_bytes()))
    assert [(t.pool, t.name, t.ashift, t.is_log) for t in tops] == [
        ("full", "mirror-0", 12, False), ("full", "/run/vdev3/c", 12, True),
        ("full", "mirror-2", 12, False), ("full", "/run/vdev3/h", 12, False),
        ("rz", "raidz1-0", 9, False), ("small", "/dev/loop0", 9, False)]
    assert tops[4].leaves == ("/run/vdev3/i", "/run/vdev3/j", "/run/vdev3/k")
    assert all(t.whole_disks == () for t in tops)  # files and a loop device: no partitions
    # the names are the ones zpool status gives the same vdevs
    pools = status.parse_text(read(LAB / "zpool-status-p-P.full-rz-small.txt"))
    names = {(p.name, v.name) for p in pools for v in p.vdevs}
    assert all((t.pool, t.name) in names for t in tops)


def root_with(tmp_path: Path, data: bytes | None) -> Host:
    (tmp_path / "etc/zfs").mkdir(parents=True)
    if data is not None:
        (tmp_path / "etc/zfs/zpool.cache").write_bytes(data)
    return Host(tmp_path)


def test_the_advisor_reads_ashift_from_the_host_cache_file(tmp_path: Path) -> None:
    host = root_with(tmp_path, CACHE.read_bytes())
    pools = status.parse_text(read(LAB / "zpool-status-p-P.full-rz-small.txt"))
    facts = gather(host, pools, dmsetup_output=None, now=0)
    assert {t.pool for t in facts.top_vdevs} == {"full", "rz", "small"}
    found = [(f.id, f.subject, f.severity) for f in advise(ZfsSnapshot(pools=tuple(pools)),
                                                           facts) if f.id == "ZFS001"]
    # ashift 9 on files and on a loop device whose sysfs this root lacks: info, not more
    assert found == [("ZFS001", "rz", "info"), ("ZFS001", "small", "info")]


def test_no_cache_file_is_no_vdev_ashift_and_no_note(tmp_path: Path) -> None:
    facts = gather(root_with(tmp_path, None), [], dmsetup_output=None, now=0)
    assert facts.top_vdevs == () and facts.notes == ()
    assert cachefile.read(root_with(tmp_path / "other", None)) == []


def test_a_damaged_cache_file_is_a_note(tmp_path: Path) -> None:
    facts = gather(root_with(tmp_path, CACHE.read_bytes()[:-100]), [], dmsetup_output=None,
                   now=0)
    assert facts.top_vdevs == ()
    assert facts.notes == ("per-vdev ashift unknown: pool cache file: a list without its "
                           "end at byte 7084 of 7084",)


def test_not_a_regular_file(tmp_path: Path) -> None:
    host = root_with(tmp_path, None)
    os.mkfifo(tmp_path / "etc/zfs/zpool.cache")
    with pytest.raises(ZsnError, match="not a regular file"):
        cachefile.read(host)


@pytest.mark.parametrize(("data", "reason"), [
    (b"", "too short"),
    (b"\x01\x01\x00\x00" + bytes(20), "encoding 1 (XDR is 1, written by OpenZFS before 0.8)"),
    (CACHE.read_bytes()[:12], "a list without its end"),
    (CACHE.read_bytes() + b"\x00\x00\x00\x00", "data after the end of the list"),
    (bytes(cachefile.MAX_SIZE + 1), "larger than 4 MiB"),
])
def test_what_is_not_a_cache_file(data: bytes, reason: str) -> None:
    with pytest.raises(ParseError, match=reason.replace("(", r"\(").replace(")", r"\)")):
        cachefile.unpack(data)
