"""What the ZFS pane shows, without Textual: the scan line's parts, the vdev rows with
their read and write trends, latencies as read/write pairs. Real captures throughout."""

from __future__ import annotations

from tests.unit.zfs.conftest import VM, read
from zsn.zfs import iostat, status, view
from zsn.zfs.iostat import History
from zsn.zfs.model import Pool

NOW = 1795367000.0  # shortly after the lab's scrub captures


def tank(state: str) -> Pool:
    """tank as `zpool status` named its members when the iostat captures were made."""
    return next(p for p in status.parse_text(read(VM / f"zpool-status.{state}.txt"))
                if p.name == "tank")


def test_the_scan_line_drops_whole_parts_to_fit() -> None:
    scrubbing = tank("scrub-in-progress")
    full = view.scan_line(scrubbing, NOW)
    assert full.startswith("tank: scrub in progress, 45.77% done, 88.2 MiB of 193.0 MiB, ")
    assert "ETA 7s" in full and "0 B repaired" in full and "started Nov 24" in full
    parts = [text for text, _ in view.scan_parts(scrubbing, NOW)]
    for width in range(20, len(full) + 1):
        line = view.scan_line(scrubbing, NOW, width)
        assert line.startswith("tank: scrub in progress")
        assert len(line) <= width or line == "tank: scrub in progress"
        assert all(piece in parts for piece in line.split(", "))  # nothing cut
    # the least important go first: the start date, the sizes, the rate
    assert view.scan_line(scrubbing, NOW, 78) == (
        "tank: scrub in progress, 45.77% done, at 14.7 MiB/s, ETA 7s, 0 B repaired")
    assert view.scan_line(scrubbing, NOW, 60) == (
        "tank: scrub in progress, 45.77% done, ETA 7s, 0 B repaired")


def test_at_80_columns_the_running_scan_shows_everything_on_two_lines() -> None:
    scrubbing = tank("scrub-in-progress")
    assert view.scan_lines(scrubbing, NOW, 78) == [
        "tank: scrub in progress, 45.77% done, 88.2 MiB of 193.0 MiB, at 14.7 MiB/s",
        "  ETA 7s, 0 B repaired, started Nov 24 18:20"]


def test_an_eta_follows_from_the_rate_when_zpool_gives_none() -> None:
    """Below 10 MiB/s issued zpool prints "no estimated completion time"."""
    scan = tank("scrub-in-progress").scan
    assert scan is not None and scan.eta_seconds == 7
    slow = scan._replace(eta_seconds=None)
    assert slow.total is not None and slow.issued is not None and slow.rate
    assert view.eta(slow) == (round((slow.total - slow.issued) / slow.rate), True)
    assert view.eta_text(slow) == "~7s"
    assert view.scan_cell(slow, NOW) == ("scrub 45.8% ~7s", "accent", "scrub 45.8%")


def test_the_scan_line_of_a_finished_and_a_never_scrubbed_pool() -> None:
    finished = tank("scrub-finished")
    assert finished.scan is not None and finished.scan.ended is not None
    line = view.scan_line(finished, finished.scan.ended + 3 * 86400)
    assert line.startswith("tank: last scrub finished ") and "(3d 00h ago)" in line
    assert line.endswith(", 0 errors")
    never = tank("healthy")
    assert view.scan_line(never, NOW) == "tank: never scrubbed (s starts a scrub)"
    assert view.scan_line(never, NOW, 30) == "tank: never scrubbed"


def test_vdev_rows_have_a_read_and_a_write_trend() -> None:
    """Since import (the first block) the pool had read; then only writes."""
    blocks = iostat.parse_blocks(read(VM / "zpool-iostat-Hpv-l.tank.1s-x3.txt"), "tank")
    history = History()
    for block in blocks:
        history.add(block)
    pool = tank("healthy")
    rows = view.vdev_cells(pool, {row.name: row for row in blocks[-1].rows},
                          lambda name: history.reads("tank", name),
                          lambda name: history.writes("tank", name))
    row = rows["tank\0tank"]
    reads, writes = row["read_trend"], row["write_trend"]
    assert reads.text.strip()[0] == "█" and set(reads.text.strip()[1:]) == {"▁"}
    assert writes.text.strip()[-1] == "█" and "▁" not in writes.text  # writes all along
    assert len(reads.text) == view.SPARK_WIDTH and reads.short is not None
    assert len(reads.short) == view.SPARK_SHORT and reads.short.endswith(reads.text[-3:])
    assert row["wait"].text.count("/") == 1 and row["disk_wait"].text.count("/") == 1


def test_latencies_are_read_write_pairs() -> None:
    [block] = iostat.parse_blocks(
        read(VM / "zpool-iostat-Hpvly.tank.1s-x3.txt"), "tank")[-1:]
    rows = view.vdev_cells(tank("healthy"), {row.name: row for row in block.rows},
                          lambda name: [], lambda name: [])
    disk = rows["tank\0disk-a"]
    assert disk["wait"].text.startswith("-/") and disk["wait"].text.endswith(" ms")
    assert disk["disk_wait"].text.startswith("-/")
    # no I/O row (the stream has not spoken yet): one dash, not "-/-"
    quiet = view.vdev_cells(tank("healthy"), None, lambda name: [], lambda name: [])
    assert quiet["tank\0disk-a"]["wait"].text == "-"


def test_names_and_paths_may_be_cut_rather_than_drop_columns() -> None:
    assert [c.key for c in view.VDEV_COLUMNS if c.truncate] == ["name"]
    assert [c.key for c in view.DATASET_COLUMNS if c.truncate] == ["name", "mountpoint"]
    assert not any(c.truncate for c in view.POOL_COLUMNS)  # a pool name is short
