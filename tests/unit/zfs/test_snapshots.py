"""Snapshots: `zfs list -t snapshot` as OpenZFS 2.1 prints it (tests/fixtures/zfs-send-lab),
`zsn zfs snapshots` and `zsn zfs snapshot` against fake programs replaying it."""

from __future__ import annotations

import json
import re
import time

import pytest

from tests.unit.zfs.conftest import FIXTURES, FakeZfs, read
from tests.unit.zfs.test_cli_export import zsn
from zsn.errors import ParseError, ValidationError
from zsn.zfs import snapshots
from zsn.zfs.names import validate_snapshot_name

SEND = FIXTURES / "zfs-send-lab"
LIST = ("zfs list -Hp -t snapshot -o name,guid,createtxg,creation,used,referenced,userrefs "
        "-s createtxg")


def test_every_snapshot_with_guid_txg_and_holds() -> None:
    found = snapshots.parse(read(SEND / "zfs-list-snapshots-all.out"))
    assert [s.full_name for s in found] == [
        "src/data@a", "src/data/child@a", "src/data@b", "src/data@c", "src/data/child@c",
        "src/my data@2026-11-26 10:00:00", "src/secret@s1"]
    first = found[0]
    assert first == snapshots.Snapshot("src/data", "a", 6796290560385635377, 13, 1795688502,
                                       65536, 8495104, 2)
    # the same guid on the target: the received copy of the same snapshot
    target = snapshots.parse(read(SEND / "zfs-list-snapshots-target.out"))
    assert {s.guid for s in target if s.dataset == "dst/data"} == {
        s.guid for s in found if s.dataset == "src/data" and s.name in ("a", "b")}
    grouped = snapshots.by_dataset(found)
    assert [s.name for s in grouped["src/data"]] == ["a", "b", "c"]


def test_an_empty_listing_and_the_human_table() -> None:
    assert snapshots.parse("") == []
    # the human table has no tabs: no row is taken from it
    assert snapshots.parse(read(SEND / "zfs-list-snapshots-human.out")) == []
    with pytest.raises(ParseError, match="not a snapshot's name"):
        snapshots.parse("src/data\t1\t2\t3\t4\t5\t0\n")
    with pytest.raises(ParseError, match="has no guid"):
        snapshots.parse("src/data@a\t-\t2\t3\t4\t5\t0\n")


@pytest.mark.parametrize(("text", "reason"), [
    ("tank/data", "is not a snapshot"), ("tank/data@", "after '@' is empty"),
    ("tank/data@a@b", "more than one '@'"), ("tank/data@a/b", "has a '/' after the '@'"),
    ("tank/data@a$b", "the character '$'"), ("@a", "a dataset name is needed"),
    ("tank/da\x1bta@x", "the character '\\x1b'")])
def test_bad_snapshot_names(text: str, reason: str) -> None:
    with pytest.raises(ValidationError, match=re.escape(reason)):
        validate_snapshot_name(text)


def test_good_snapshot_names() -> None:
    assert validate_snapshot_name("src/my data@2026-11-26 10:00:00") == (
        "src/my data", "2026-11-26 10:00:00")


def test_zsn_zfs_snapshots(fake_zfs: FakeZfs) -> None:
    fake_zfs.answer(LIST, read(SEND / "zfs-list-snapshots-all.out"))
    fake_zfs.answer(LIST + " src/data", read(SEND / "zfs-list-snapshots-dataset.out"))
    fake_zfs.answer(LIST + " -r src/data", read(SEND / "zfs-list-snapshots-r.out"))
    fake_zfs.answer(LIST + " src/nosuch", stderr=read(
        SEND / "zfs-list-snapshots-no-dataset.err"), rc=1)
    fake_zfs.answer(LIST + " dst", "")
    table = zsn(fake_zfs, "zfs", "snapshots")
    assert table.returncode == 0, table.stderr
    lines = table.stdout.splitlines()
    assert lines[0].split() == ["SNAPSHOT", "CREATED", "USED", "REFER", "HOLDS"]
    created = time.strftime("%Y-%m-%d %H:%M", time.localtime(1795688502))
    assert lines[1].split() == ["src/data@a", *created.split(), "64.0", "KiB", "8.1", "MiB",
                                "2"]
    assert any(line.startswith("src/my data@2026-11-26 10:00:00") for line in lines)
    one = zsn(fake_zfs, "zfs", "snapshots", "src/data", "--json")
    assert [s["name"] for s in json.loads(one.stdout)] == ["src/data@a", "src/data@b",
                                                           "src/data@c"]
    assert json.loads(one.stdout)[0]["holds"] == 2
    tree = zsn(fake_zfs, "zfs", "snapshots", "src/data", "-r", "--json")
    assert len(json.loads(tree.stdout)) == 5
    missing = zsn(fake_zfs, "zfs", "snapshots", "src/nosuch")
    assert (missing.returncode, missing.stderr.strip()) == (
        2, "zsn zfs: invalid: no filesystem or volume named 'src/nosuch'")
    none = zsn(fake_zfs, "zfs", "snapshots", "dst")
    assert none.returncode == 0 and "dst has no snapshots" in none.stderr
    bad = zsn(fake_zfs, "zfs", "snapshots", "src/da%ta")
    assert bad.returncode == 2 and "the character '%'" in bad.stderr


def test_zsn_zfs_snapshot_plans_and_refuses_an_existing_name(fake_zfs: FakeZfs) -> None:
    fake_zfs.answer(LIST + " src/data", read(SEND / "zfs-list-snapshots-dataset.out"))
    fake_zfs.answer(LIST + " -r src/data", read(SEND / "zfs-list-snapshots-r.out"))
    fake_zfs.answer("zfs snapshot -r src/data@d", "")
    plan = zsn(fake_zfs, "zfs", "snapshot", "src/data@d", "--dry-run")
    assert plan.returncode == 0, plan.stderr
    assert plan.stdout.splitlines()[:2] == ["Plan: snapshot src/data@d",
                                            "  1. snapshot src/data@d"]
    assert not any(c["argv"][0] == "snapshot" for c in fake_zfs.calls())
    taken = zsn(fake_zfs, "zfs", "snapshot", "src/data@d", "-r")
    assert taken.returncode == 0, taken.stderr
    assert "done: snapshot -r src/data@d" in taken.stderr
    assert {"program": "zfs", "argv": ["snapshot", "-r", "src/data@d"], "lc_all": "C"} in \
        fake_zfs.calls()
    exists = zsn(fake_zfs, "zfs", "snapshot", "src/data@c")
    assert (exists.returncode, exists.stderr.strip()) == (
        2, "zsn zfs: invalid: src/data@c exists already; pick another name")
    # a descendant's snapshot of that name stops a recursive one (ZFS would refuse it)
    fake_zfs.answer(LIST + " -r src", read(SEND / "zfs-list-snapshots-all.out"))
    child = zsn(fake_zfs, "zfs", "snapshot", "src@c", "--recursive")
    assert child.returncode == 2 and "src/data@c exists already" in child.stderr
