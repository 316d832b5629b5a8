"""Numbers as ZFS prints them, and `zpool list` / `zfs list` in text and 2.3 JSON."""

from __future__ import annotations

import contextlib

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests.unit.zfs.conftest import LAB, OTHERS, POOL_LIST_OUTPUT, VM, read
from zsn.errors import ParseError
from zsn.zfs import listing, units
from zsn.zfs.names import POOL_COLUMNS


@pytest.mark.parametrize(("text", "expected"), [
    ("123456", 123456), ("0B", 0), ("1.66T", int(round(1.66 * 1024 ** 4))),
    ("29.9M", int(round(29.9 * 1024 ** 2))), ("7,34T", int(round(7.34 * 1024 ** 4))),
    ("2.72K", int(round(2.72 * 1024))), ("-", None), ("", None)])
def test_sizes(text: str, expected: int | None) -> None:
    assert units.size(text) == expected


@pytest.mark.parametrize(("text", "expected"), [
    ("00:00:06", 6), ("0 days 01:01:21", 3681), ("1 days 00:00:01", 86401),
    ("14h7m", 14 * 3600 + 420), ("0h3m", 180), ("soon", None)])
def test_durations(text: str, expected: int | None) -> None:
    assert units.duration(text) == expected


def test_ratios_and_percents_with_and_without_units() -> None:
    assert units.ratio("1.00") == units.ratio("1.00x") == 1.0
    assert units.percent("8%") == units.percent("8") == 8
    assert units.percent("-") is None
    with pytest.raises(ParseError):
        units.ratio("lots")


@given(st.integers(min_value=0, max_value=2 ** 64))
def test_exact_sizes_round_trip(number: int) -> None:
    assert units.size(str(number)) == number


@given(st.text(max_size=12))
def test_size_raises_only_parse_errors(text: str) -> None:
    with contextlib.suppress(ParseError):
        units.size(text)


def test_zpool_list_as_zsn_asks_for_it() -> None:
    full, raidz = listing.parse_pools_text(read(POOL_LIST_OUTPUT))
    assert full == {"name": "full", "health": "ONLINE", "size": 352321536,
                    "allocated": 626688, "free": 351694848, "fragmentation": 0,
                    "capacity": 0, "dedup_ratio": 1.0, "ashift": 12, "freeing": 0,
                    "leaked": 0, "readonly": False}
    assert raidz["ashift"] == 0
    # The columns zsn asked for before freeing, leaked and readonly.
    older = listing.parse_pools_text(read(LAB / "zpool-list-Hp-o.txt"), POOL_COLUMNS[:-3])
    assert older[0] == {key: value for key, value in full.items()
                        if key not in ("freeing", "leaked", "readonly")}


def zfs_exporter_reading(text: str) -> dict[str, dict[str, str]]:
    """``zpool get -Hpo name,property,value``, as zfs_exporter reads it: pool -> property
    -> value."""
    found: dict[str, dict[str, str]] = {}
    for row in listing.parse_text_rows(text, ("name", "property", "value"), "zpool get"):
        found.setdefault(row["name"], {})[row["property"]] = row["value"]
    return found


def test_zfs_exporters_pool_properties_have_the_values_it_reads() -> None:
    """zsn's one `zpool list` and zfs_exporter's `zpool get` of its default properties,
    run one after the other on idle pools, agree on every one of them."""
    listed = {row["name"]: row for row in listing.parse_pools_text(read(POOL_LIST_OUTPUT))}
    got = zfs_exporter_reading(read(LAB / "zpool-get-Hpo.zfs_exporter-defaults.txt"))
    assert set(got) == set(listed) == {"full", "rz"}
    for pool, values in got.items():
        row = listed[pool]
        for prop in ("allocated", "free", "freeing", "leaked", "size", "fragmentation"):
            assert row[prop] == int(values[prop]), (pool, prop)
        assert row["dedup_ratio"] == float(values["dedupratio"])
        assert row["health"] == values["health"]
        assert row["readonly"] is (values["readonly"] == "on")


def test_space_being_freed_and_a_read_only_pool() -> None:
    full, rz = listing.parse_pools_text(read(
        LAB / "zpool-list-Hp-o.freeing-leaked-readonly.freeing-and-readonly.txt"))
    assert (full["freeing"], full["readonly"]) == (20807680, False)
    assert (rz["freeing"], rz["readonly"], rz["leaked"]) == (0, True, 0)
    # zfs_exporter's reading a moment later: less left to free, the same read-only pool.
    got = zfs_exporter_reading(read(
        LAB / "zpool-get-Hpo.zfs_exporter-defaults.freeing-and-readonly.txt"))
    assert 0 < int(got["full"]["freeing"]) < full["freeing"]
    assert (got["rz"]["readonly"], got["full"]["readonly"]) == ("on", "off")


@pytest.mark.parametrize(("text", "expected"), [("on", True), ("off", False), ("-", None)])
def test_on_off(text: str, expected: bool | None) -> None:
    assert units.on_off(text) is expected


def test_on_off_refuses_anything_else() -> None:
    with pytest.raises(ParseError):
        units.on_off("yes")


def test_zpool_list_defaults_and_other_tools_columns() -> None:
    small, tank = listing.parse_pools_text(read(VM / "zpool-list-Hp.txt"),
                                           listing.DEFAULT_POOL_COLUMNS)
    assert (tank["name"], tank["size"], tank["fragmentation"]) == ("tank", 503316480, 2)
    columns = ("name", "health", "size", "alloc", "free", "fragmentation", "capacity",
               "dedupratio")
    for name in ("freebsd14", "freenas-legacy", "unavail"):
        [path] = OTHERS.glob(f"zpool-list-Hp-o-*.{name}.telegraf.txt")
        rows = listing.parse_pools_text(read(path), columns)
        assert rows and all(row["health"] for row in rows)
    legacy = listing.parse_pools_text(read(next(OTHERS.glob("*freenas-legacy*"))), columns)
    assert legacy[0]["dedup_ratio"] is not None  # "1.83x" with -p on old FreeNAS


def test_zpool_list_v_skips_vdev_rows_and_space_padded_headings() -> None:
    rows = listing.parse_pools_text(read(LAB / "zpool-list-Hpv.all-classes.txt"),
                                    listing.DEFAULT_POOL_COLUMNS)
    assert [row["name"] for row in rows] == ["full", "rz"]


def test_a_row_with_the_wrong_field_count_is_an_error() -> None:
    with pytest.raises(ParseError, match="3 fields where 12 were asked for"):
        listing.parse_pools_text("a\tb\tc\n")


def test_zfs_list_text() -> None:
    columns = ("name", "used", "available", "referenced", "compressratio", "recordsize",
               "compression", "atime", "xattr", "mountpoint")
    datasets = listing.parse_datasets_text(read(VM / "zfs-list-Hp-o.txt"), columns)
    db = next(d for d in datasets if d.name == "tank/db")
    assert (db.recordsize, db.compression, db.atime, db.xattr, db.mountpoint) == (
        16384, "zstd", "off", "sa", "/run/tank/db")
    assert db.pool == "tank" and db.parent == "tank"


def test_zfs_list_with_every_column_zsn_asks_for() -> None:
    columns = ("name", "type", "used", "available", "referenced", "compressratio",
               "recordsize", "compression", "atime", "relatime", "xattr", "mountpoint",
               "creation", "zsn:use")
    datasets = listing.parse_datasets_text(read(LAB / "zfs-list-Hp-o.200-datasets.txt"),
                                           columns)
    assert len(datasets) == 203
    first = datasets[0]
    assert (first.name, first.type, first.relatime, first.created, first.use) == (
        "p1", "filesystem", "off", 1795596478, None)


def test_zfs_list_defaults_and_freebsd() -> None:
    rows = listing.parse_datasets_text(read(OTHERS / next(
        p.name for p in OTHERS.glob("zfs-list-Hp-o-name-avail*"))),
        ("name", "available", "used", "usedsnap", "usedds"))
    assert rows and rows[0].available is not None


def test_json_pools_and_datasets() -> None:
    [tank] = listing.parse_pools_json(read(OTHERS / "zpool-list-j.openzfs-man.json"))
    assert tank["name"] == "tank" and tank["health"] == "ONLINE"
    assert tank["size"] == 111 * 1024 ** 3 and tank["capacity"] == 27
    assert tank["dedup_ratio"] == 1.0 and tank["fragmentation"] == 0
    datasets = listing.parse_datasets_json(read(OTHERS / "zfs-list-j.openzfs-man.json"))
    assert [d.name for d in datasets] == ["pool", "pool/home", "pool/home/bob"]  # no snapshot
    assert datasets[1].mountpoint == "/mnt/home" and datasets[0].used == 290 * 1024
