"""Scrub history: the pool's history (the kernel lab's real `zpool history -il`,
tests/fixtures/zfs-scrubs-lab), what `zpool status` says of a finished scrub (the lab's
captures), zsn's record under a tree of its own, the trend, the faces' data."""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from pathlib import Path

import pytest

from tests.unit.zfs.conftest import POOL_LIST, VM, FakeZfs, read
from zsn.exporter.prometheus import render
from zsn.system.commands import CommandResult
from zsn.system.host import Host
from zsn.zfs import listing, status
from zsn.zfs import scrub_history as scrubs
from zsn.zfs.model import Pool
from zsn.zfs.scrub_history import ScrubReader, ScrubRun, ScrubWatch
from zsn.zfs.scrub_history_export import entries, metrics
from zsn.zfs.view import scrub_lines, scrub_summary

SCRUBS = Path(__file__).parents[2] / "fixtures" / "zfs-scrubs-lab"


def lab_pool(state: str) -> Pool:
    """scrublab as zsn reads it in `state` (its status, with zpool list's sizes)."""
    [pool] = status.parse_text(read(SCRUBS / f"zpool-status-p.{state}.txt"))
    [sized] = listing.parse_pools_text(read(SCRUBS / "zpool-list-Hp.txt"),
                                       listing.DEFAULT_POOL_COLUMNS)
    return pool._replace(allocated=sized["allocated"])


def history() -> list[ScrubRun]:
    return scrubs.parse_history(read(SCRUBS / "zpool-history-il.txt"))


class History:
    """Answers `zpool history -il POOL` with the lab's capture; counts the calls."""

    def __init__(self, text: str | None = None, code: int = 0, stderr: str = "") -> None:
        self.text = read(SCRUBS / "zpool-history-il.txt") if text is None else text
        self.code, self.stderr = code, stderr
        self.calls: list[Sequence[str]] = []

    def __call__(self, argv: Sequence[str]) -> CommandResult:
        self.calls.append(list(argv))
        return CommandResult(tuple(argv), self.code, self.text, self.stderr, 0.1)


def reader(host: Host, runner: History, keeps: bool = True) -> ScrubReader:
    return ScrubReader(host, runner=runner, program=lambda: "/usr/sbin/zpool",
                       keeps=lambda _: keeps)


@pytest.fixture
def host(tmp_path: Path) -> Host:
    root = tmp_path / "root"
    root.mkdir()
    return Host.at(root)


def test_the_history_gives_every_finished_scrub_and_only_those() -> None:
    runs = history()
    # four scrubs finished: two at once, one paused and resumed, the last; the canceled
    # one and the resilver (func=2) are left out
    statuses = [lab_pool(f"scrub-{n}-finished") for n in (1, 2, 4, 5)]
    assert len(runs) == len(statuses)
    for run, pool in zip(runs, statuses, strict=True):
        scan = pool.scan
        assert scan is not None and scan.ended is not None
        assert abs(run.ended - scan.ended) <= scrubs.MATCH_SECONDS, (run, scan)
        assert run.seconds is not None and scan.duration_seconds is not None
        assert abs(run.seconds - scan.duration_seconds) <= 1, (run, scan)
        assert run.errors == 0 and run.examined is None and run.seen_in == ("history",)
    # the paused one took longest: its pause counts, as in zpool status
    assert max(runs, key=lambda run: run.seconds or 0) == runs[2]


def test_the_plain_history_and_a_refusal_give_nothing() -> None:
    assert scrubs.parse_history(read(SCRUBS / "zpool-history.txt")) == []  # no -i: commands
    assert scrubs.parse_history(read(SCRUBS / "zpool-history-i.txt")) == history()


def test_a_finished_scrub_in_status_is_a_run_with_its_bytes() -> None:
    pool = lab_pool("scrub-4-finished")
    run = scrubs.from_status(pool)
    assert run is not None and run.bytes_from == "allocated" and run.examined == pool.allocated
    paused = lab_pool("scrub-4-paused")
    assert scrubs.from_status(paused) is None
    assert paused.scan is not None and paused.scan.total
    watching = ScrubReader(Host.at("/"), keeps=lambda _: False)
    watching.watch_running([paused])
    seen = scrubs.from_status(pool, watching._seen_totals["scrublab"])
    assert seen is not None and seen.bytes_from == "scan" and seen.examined == paused.scan.total
    assert seen.rate is not None and seen.seconds and seen.rate * seen.seconds == seen.examined
    assert scrubs.from_status(lab_pool("scrub-3-canceled")) is None
    assert scrubs.from_status(lab_pool("after-replace")) is None  # a resilver
    [vm] = status.parse_text(read(VM / "zpool-status-p-P.scrub-finished.txt"))
    old = scrubs.from_status(vm)
    assert old is not None and old.seconds == 15 and old.examined is None


def test_history_and_status_of_one_scrub_merge_into_one_run() -> None:
    runs = history()
    seen = scrubs.from_status(lab_pool("scrub-5-finished"))
    assert seen is not None
    merged = scrubs.merge(runs, [seen])
    assert len(merged) == len(runs)
    last = merged[-1]
    assert last.seen_in == ("history", "status") and last.ended == runs[-1].ended
    assert last.examined == seen.examined and last.bytes_from == "allocated"
    better = seen.__class__(**{**seen.__dict__, "bytes_from": "scan", "examined": 123})
    assert scrubs.merge(merged, [better])[-1].examined == 123  # zpool's count wins
    assert scrubs.merge(merged, [seen]) == merged  # seen again: nothing new
    many = [ScrubRun(1_700_000_000.0 + day * 86400, 60) for day in range(40)]
    assert len(scrubs.merge([], many)) == scrubs.MAX_RUNS


def test_the_trend_shows_a_longer_scrub() -> None:
    runs = history()[:3]  # the third was paused for a while
    found = scrubs.trend(runs)
    assert found is not None and found.before == 2
    assert found.duration_change is not None and found.duration_change > 0
    text = scrub_summary(runs)
    assert text.startswith("last scrub ") and "longer than the median of the 2 before" in text
    last = scrubs.trend(history())
    assert last is not None and last.duration_change is not None and last.duration_change < 0
    assert "shorter than the median of the 3 before" in scrub_summary(history())
    assert scrub_summary(runs[:1]).endswith(": the first zsn knows of")
    assert scrub_summary([]) == "no finished scrub recorded"
    lines = scrub_lines("scrublab", history(), history()[-1].ended + 60)
    assert lines[0].startswith("scrublab: last scrub")
    assert "took" in lines[1] and len(lines) == 2 + len(history())
    assert lines[2].endswith("(1m 00s ago)")


def test_the_reader_merges_history_and_status_and_keeps_the_record(host: Host) -> None:
    pool = lab_pool("scrub-5-finished")
    zpool = History()
    found = reader(host, zpool).read([pool])
    assert zpool.calls == [["/usr/sbin/zpool", "history", "-il", "scrublab"]]
    runs = found.of("scrublab")
    assert len(runs) == len(history()) and runs[-1].seen_in == ("history", "status")
    records, note = scrubs.load(host)
    assert note is None and tuple(records.pools["scrublab"]) == runs
    assert scrubs.parse_records(scrubs.render(records), "again") == records
    # without root (or under --root): no history read, the record as it is
    again = reader(host, History(code=1), keeps=False).read([pool], history=True)
    assert again.of("scrublab") == runs


def test_a_refused_history_is_a_note(host: Host) -> None:
    refusal = read(SCRUBS / "zpool-history-il.as-nobody.txt.stderr")
    found = reader(host, History("", 1, refusal)).read([lab_pool("scrub-1-finished")])
    assert any(note.startswith("zpool history scrublab: ") for note in found.notes)
    assert len(found.of("scrublab")) == 1  # what status says is still kept


def test_a_broken_or_unsafe_record_is_a_note(host: Host) -> None:
    path = host.path(scrubs.STATE_FILE)
    path.parent.mkdir(parents=True)
    path.write_text('{"version": 1, "pools": {"tank": [{"ended": "soon"}]}}')
    records, note = scrubs.load(host)
    assert records.pools == {} and note is not None and "starting afresh" in note
    path.write_text(scrubs.render(scrubs.ScrubRecords(pools={"t": history()})))
    assert scrubs.load(host)[0].pools["t"] == history()
    os.chmod(path, 0o666)
    records, note = scrubs.load(host)
    assert records.pools == {} and note is not None and str(path) in note


def test_the_watch_reads_in_its_own_thread(host: Host) -> None:
    import threading

    zpool = History()
    read_done = threading.Event()
    inner = reader(host, zpool)

    class Signalling(ScrubReader):
        def read(self, pools: Sequence[Pool], *, history: bool = True) -> scrubs.ScrubHistory:
            found = inner.read(pools, history=history)
            read_done.set()
            return found

    watch = ScrubWatch(host, reader=Signalling(host))
    try:
        assert watch.latest() == scrubs.EMPTY
        watch.want([lab_pool("scrub-5-finished")])
        assert read_done.wait(10)
        for _ in range(100):
            if watch.latest().of("scrublab"):
                break
            read_done.wait(0.05)
        assert len(watch.latest().of("scrublab")) == len(history())
        calls = len(zpool.calls)
        watch.want([lab_pool("scrub-5-finished")])  # the same: no history read again
        assert len(zpool.calls) == calls
    finally:
        watch.stop()


def test_the_json_and_the_metrics() -> None:
    runs = tuple(history())
    pool = lab_pool("scrub-5-finished")
    found = entries([pool], scrubs.ScrubHistory({"scrublab": runs}))
    assert [entry["pool"] for entry in found] == ["scrublab"]
    assert len(found[0]["runs"]) == len(runs) and found[0]["trend"]["before"] == 3
    text = render(metrics(found))
    assert f'zsn_zfs_scrub_last_duration_seconds{{pool="scrublab"}} {runs[-1].seconds}' in text
    assert "zsn_zfs_scrub_last_rate_bytes_per_second{" not in text  # no bytes in a history
    assert 'zsn_zfs_scrub_last_duration_change_ratio{pool="scrublab"}' in text
    json.dumps(found)


def test_zsn_zfs_scrubs_reads_the_record_under_root(fake_zfs: FakeZfs) -> None:
    import subprocess
    import sys

    fake_zfs.answer(POOL_LIST, read(SCRUBS / "zpool-list-Hp-o.txt"))
    fake_zfs.answer("zpool status -p -P", read(SCRUBS / "zpool-status-p-P.scrub-5-finished.txt"))
    path = fake_zfs.root / scrubs.STATE_FILE.lstrip("/")
    path.parent.mkdir(parents=True)
    path.write_text(scrubs.render(scrubs.ScrubRecords(pools={"scrublab": history()[:-1]})))

    def zsn(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "zsn", "--root", str(fake_zfs.root),
                               *args], capture_output=True, text=True, timeout=60)

    shown = zsn("zfs", "scrubs", "--json")
    assert shown.returncode == 0, shown.stderr
    [entry] = json.loads(shown.stdout)
    assert len(entry["runs"]) == len(history())  # the record's, and status's last one
    assert entry["runs"][-1]["seen_in"] == ["status"]
    assert entry["runs"][-1]["bytes_from"] == "allocated"
    assert not any(call["argv"][0] == "history" for call in fake_zfs.calls())
    text = zsn("zfs", "scrubs", "scrublab")
    assert text.returncode == 0 and "scrublab: last scrub" in text.stdout
    assert "~" in text.stdout
    missing = zsn("zfs", "scrubs", "tank")
    assert missing.returncode == 2 and "no pool named 'tank'" in missing.stderr
