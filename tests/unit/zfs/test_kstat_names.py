"""Kernel benchmark tables, bracketed choices, pool configs, kstat tables; name rules."""

from __future__ import annotations

import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests.unit.zfs.conftest import LAB, OTHERS, VM, read
from tests.unit.zfs.zdb_text import nvlist_of
from zsn.errors import ValidationError
from zsn.zfs import cachefile, kstat
from zsn.zfs.names import validate_dataset_name, validate_pool_name


def test_benchmarks_of_the_lab_and_of_a_real_machine() -> None:
    lab = kstat.parse_bench(read(VM / "proc-spl-kstat-zfs-fletcher_4_bench.txt"))
    assert lab.columns == ("native", "byteswap")
    assert lab.fastest == {"native": "superscalar", "byteswap": "superscalar"}
    assert lab.speeds["avx2"]["native"] == 1261042795
    real = kstat.parse_bench(read(OTHERS / "proc-spl-kstat-zfs-fletcher_4_bench.telegraf.txt"))
    assert real.fastest["native"] == "avx2"
    raidz = kstat.parse_bench(read(VM / "proc-spl-kstat-zfs-vdev_raidz_bench.txt"))
    assert len(raidz.columns) == 10 and raidz.fastest["gen_pq"] == "avx2"


def test_bracketed_choices() -> None:
    lines = read(VM / "sys-module-zfs-parameters-impls.txt").splitlines()
    fletcher = lines[0].split(": ", 1)[1]
    assert kstat.parse_choice(fletcher) == (
        "fastest", ("fastest", "scalar", "superscalar", "superscalar4", "sse2", "ssse3", "avx2"))
    assert kstat.parse_choice("cycle [fastest] generic x86_64 aesni")[0] == "fastest"
    assert kstat.parse_choice("none mq-deadline") == (None, ("none", "mq-deadline"))


def test_named_tables() -> None:
    simd = kstat.parse_table(read(OTHERS / "proc-spl-kstat-zfs-simd.telegraf.txt"))
    # the simd kstat has no header line of its own in this capture: its first row is skipped
    assert simd["kfpu_internal"] == "1" and simd["avx2"] == "1"
    arc = kstat.parse_table(read(LAB / "proc-spl-kstat-zfs-arcstats.txt"))
    assert arc["c_max"] == "1030207488"
    objset = kstat.parse_table(read(VM / "proc-spl-kstat-zfs-tank-objset.txt").split("== ")[1])
    assert objset["dataset_name"] == "tank" and objset["nwritten"].isdigit()


def test_pool_configs_give_each_top_level_vdev_its_ashift() -> None:
    tops = cachefile.top_vdevs(nvlist_of(read(LAB / "zdb-C.full.txt")))
    assert [(t.pool, t.name, t.ashift, t.is_log) for t in tops] == [
        ("full", "mirror-0", 12, False), ("full", "/run/vdev/c", 12, True),
        ("full", "mirror-2", 12, False), ("full", "/run/vdev/h", 12, False)]
    [small] = cachefile.top_vdevs(nvlist_of(read(VM / "zdb-C.small.txt")))
    assert (small.name, small.ashift, small.leaves) == ("/run/vdev/small.img", 9,
                                                        ("/run/vdev/small.img",))
    three = cachefile.top_vdevs(nvlist_of(read(LAB / "zdb-C.three-pools.txt")))
    assert {t.pool for t in three} == {"p1", "p2", "p3"} and len(three) == 12


@pytest.mark.parametrize("name", ["tank", "Tank-2", "my pool", "a.b:c_d", "z" * 239])
def test_good_pool_names(name: str) -> None:
    assert validate_pool_name(name) == name


@pytest.mark.parametrize(("name", "reason"), [
    ("", "a pool name is needed"), ("2tank", "must start with a letter"),
    ("-o", "must start with a letter"), ("mirror", "reserved"), ("raidz", "reserved"),
    ("tank/a", "not a pool name"), ("ta$nk", "the character '$'"),
    ("tank\n", "the character '\\n'"), ("z" * 240, "240 characters long")])
def test_bad_pool_names(name: str, reason: str) -> None:
    with pytest.raises(ValidationError, match=re.escape(reason)):
        validate_pool_name(name)


@pytest.mark.parametrize(("name", "reason"), [
    ("tank/", "ends with '/'"), ("tank//a", "empty component"), ("tank/..", "'..' component"),
    ("tank/a@snap", "snapshot or bookmark"), ("/tank/a", "is a path"),
    ("tank/a%b", "the character '%'"), ("1tank/a", "must start with a letter"),
    ("t/" + "/".join(["a"] * 50), "nested 50 deep")])
def test_bad_dataset_names(name: str, reason: str) -> None:
    with pytest.raises(ValidationError, match=reason):
        validate_dataset_name(name)


@given(st.text(max_size=80))
def test_names_are_either_valid_or_refused_with_a_reason(text: str) -> None:
    for check in (validate_pool_name, validate_dataset_name):
        try:
            assert check(text) == text
        except ValidationError as exc:
            assert str(exc)
