"""`zpool iostat -Hpvly -l [-T u]` rows and blocks, the since-import form, the history."""

from __future__ import annotations

import contextlib

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests.unit.zfs.conftest import LAB, VM, read
from zsn.errors import ParseError
from zsn.zfs import iostat, status
from zsn.zfs.iostat import BlockAssembler, History


def test_rows_of_2_1_with_latencies() -> None:
    blocks = iostat.parse_blocks(read(VM / "zpool-iostat-Hpvly.tank.1s-x3.txt"), "tank")
    assert len(blocks) == 3 and all(len(b.rows) == 7 for b in blocks)
    disk = blocks[0].row("disk-a")
    assert disk is not None
    assert (disk.write_ops, disk.write_bytes, disk.read_ops) == (243, 20691053, 0)
    assert (disk.total_wait_read, disk.total_wait_write) == (None, 1556347)
    assert disk.allocated == 0 and blocks[0].rows[0].allocated == 179900416
    assert disk.rebuild_wait is None


def test_a_2_2_row_has_the_rebuild_column() -> None:
    row = iostat.parse_row("tank\t1\t2\t3\t4\t5\t6\t7\t8\t9\t10\t11\t12\t13\t14\t15\t16\t17")
    assert (row.scrub_wait, row.trim_wait, row.rebuild_wait) == (15, 16, 17)


def test_the_timestamped_stream_with_every_group() -> None:
    blocks = iostat.parse_blocks(read(LAB / "zpool-iostat-Hpvly-l-Tu.full.1s-x3.txt"), "full")
    assert [b.timestamp for b in blocks] == [1795596113, 1795596114, 1795596115]
    first = blocks[0]
    assert [(r.name, r.group_index) for r in first.rows] == [
        ("full", 0), ("mirror-0", 0), ("/run/vdev/a", 0), ("/run/vdev/b", 0),
        ("/run/vdev/h", 1), ("mirror-2", 2), ("/run/vdev/f", 2), ("/run/vdev/g", 2),
        ("/run/vdev/c", 3), ("/run/vdev/d", 4)]
    # every row but the spare matches a vdev of `zpool status -P` by name
    full, _ = status.parse_text(read(LAB / "zpool-status-p-P.all-classes.txt"))
    assert {r.name for r in first.rows} == {v.name for v in full.vdevs
                                            if v.kind != "group" and v.group != "spares"}
    leaves = [first.row(leaf) for leaf in ("/run/vdev/a", "/run/vdev/b")]
    assert all(leaf is not None and leaf.write_ops > 0 for leaf in leaves)


def test_a_block_is_handed_out_as_soon_as_it_is_complete() -> None:
    lines = read(LAB / "zpool-iostat-Hpvly-l-Tu.full.1s-x3.txt").splitlines()
    assembler = BlockAssembler("full")
    out = [(i, len(assembler.feed(line))) for i, line in enumerate(lines)]
    handed = [i for i, count in out if count]
    # the first block waits for the next timestamp; later ones go at their last row
    assert handed == [16, 30, 45]
    assert lines[16] == "1795596114" and lines[30].startswith("/run/vdev/d")
    assert assembler.finish() == []


def test_with_the_row_count_known_the_first_block_is_not_late() -> None:
    lines = read(LAB / "zpool-iostat-Hpvly-l-Tu.full.1s-x3.txt").splitlines()
    assembler = BlockAssembler("full")
    assembler.expect(10)
    handed = [i for i, line in enumerate(lines) if assembler.feed(line)]
    assert handed == [15, 30, 45]


def test_half_second_intervals() -> None:
    blocks = iostat.parse_blocks(read(LAB / "zpool-iostat-HpvlyP-Tu.p1.half-second-x3.txt"),
                                 "p1")
    assert len(blocks) == 3 and all(len(b.rows) == 13 for b in blocks)


def test_a_pool_that_goes_away_prints_only_timestamps() -> None:
    blocks = iostat.parse_blocks(read(LAB / "zpool-iostat-Hpvly-l-Tu.pool-exported.stdout.txt"),
                                 "rz")
    assert len(blocks) == 2
    lines = read(LAB / "zpool-iostat-Hpvly-l-Tu.pool-exported.stdout.txt").splitlines()
    assert iostat.is_timestamp(lines[-1])  # then nothing: stderr says "no pools available"
    assert "no pools available" in read(
        LAB / "zpool-iostat-Hpvly-l-Tu.pool-exported.stderr.txt")


def test_since_import_for_every_pool_at_once() -> None:
    blocks = iostat.parse_pools(read(LAB / "zpool-iostat-Hpv-l.since-import.three-pools.txt"),
                                ["p1", "p2", "p3"])
    assert sorted(blocks) == ["p1", "p2", "p3"]
    assert all(len(b.rows) == 13 and b.rows[0].name == b.pool for b in blocks.values())


@pytest.mark.parametrize("line", [
    "tank\t1\t2", "tank\tx\t0\t0\t0\t0\t0", "\t1\t2\t3\t4\t5\t6",
    "Unable to parse pools/vdevs list."])
def test_garbage_rows_are_parse_errors(line: str) -> None:
    with pytest.raises(ParseError):
        iostat.parse_row(line)
    assert not iostat.looks_like_row(line) or line.startswith("\t")


def test_a_block_must_start_with_the_pool() -> None:
    assembler = BlockAssembler("tank")
    assembler.feed("1795596113")
    with pytest.raises(ParseError, match="starts with 'mirror-0'"):
        assembler.feed("mirror-0\t0\t0\t0\t0\t0\t0")


def test_history_keeps_the_last_samples_and_drops_vdevs_that_left() -> None:
    history = History(length=2)
    blocks = iostat.parse_blocks(read(VM / "zpool-iostat-Hpvly.tank.1s-x3.txt"), "tank")
    for block in blocks:
        history.add(block)
    assert history.writes("tank", "disk-a") == [22797827, 22896609]
    shrunk = type(blocks[0])("tank", blocks[0].rows[:4], None)
    history.add(shrunk)
    assert history.writes("tank", "disk-c") == []
    history.forget("tank")
    assert history.reads("tank", "disk-a") == []


@given(st.lists(st.text(alphabet="tank\t0123456789-\n mirror", max_size=60), max_size=30))
def test_the_assembler_raises_only_parse_errors(lines: list[str]) -> None:
    assembler = BlockAssembler("tank")
    for line in lines:
        with contextlib.suppress(ParseError):
            assembler.feed(line)
    assembler.finish()


@given(st.lists(st.tuples(*[st.integers(0, 10 ** 12)] * 6), min_size=1, max_size=8))
def test_rows_render_and_parse_back(values: list[tuple[int, ...]]) -> None:
    text = "\n".join("\t".join(["tank" if i == 0 else f"/dev/sd{chr(97 + i)}",
                                *map(str, row), *["-"] * 10])
                     for i, row in enumerate(values))
    [block] = iostat.parse_blocks(text, "tank")
    assert [(r.allocated, r.free, r.read_ops, r.write_ops, r.read_bytes, r.write_bytes)
            for r in block.rows] == values
