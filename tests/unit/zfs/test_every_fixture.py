"""Every capture in tests/fixtures/zfs and tests/fixtures/zfs-vm goes through the parser
zsn would use for it: what zsn reads parses, and the forms zsn never asks for (human
tables, histograms, queue depths) are refused rather than misread."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.unit.zfs.conftest import OTHERS, VM, read
from tests.unit.zfs.zdb_text import nvlist_of
from zsn.errors import ParseError
from zsn.system.commands import CommandResult
from zsn.zfs import cachefile, iostat, kstat, listing, status
from zsn.zfs.live import MODULE_NOT_LOADED, explain_failure


def parses(parse: Callable[[str], object]) -> Callable[[Path], None]:
    def check(path: Path) -> None:
        assert parse(read(path)) not in (None, [], {})
    return check


def refused(parse: Callable[[str], object]) -> Callable[[Path], None]:
    def check(path: Path) -> None:
        with pytest.raises(ParseError):
            parse(read(path))
    return check


def nothing(parse: Callable[[str], object]) -> Callable[[Path], None]:
    """Human tables have no tabs: the scripted-output parser finds no row in them."""
    def check(path: Path) -> None:
        assert parse(read(path)) == []
    return check


def not_read(reason: str) -> Callable[[Path], None]:
    def check(path: Path) -> None:
        assert reason and path.exists()
    return check


def module_message(path: Path) -> None:
    result = CommandResult(("zpool", "list"), 1, "", read(path), 0.0)
    assert explain_failure(result) == MODULE_NOT_LOADED


def status_any(text: str) -> object:
    return status.parse_json(text) if text.lstrip().startswith("{") else status.parse_text(text)


def iostat_tank(text: str) -> object:
    return iostat.parse_blocks(text, "tank")


TELEGRAF_COLUMNS = ("name", "health", "size", "alloc", "free", "fragmentation", "capacity",
                    "dedupratio")
HANDLERS: list[tuple[str, Callable[[Path], None]]] = [
    (r"zpool-status-scrub-in-progress\.fragment\..*", refused(status.parse_text)),
    (r"zpool-status.*", parses(lambda text: status_any(text) or ["all healthy"])),
    (r"zpool-list-j\..*", parses(listing.parse_pools_json)),
    (r"zpool-list-Hp-o-.*", parses(lambda t: listing.parse_pools_text(t, TELEGRAF_COLUMNS))),
    (r"zpool-list-Hp.*", parses(lambda t: listing.parse_pools_text(
        t, listing.DEFAULT_POOL_COLUMNS))),
    (r"zpool-list.module-not-loaded.*", module_message),
    (r"zpool-list.*", nothing(lambda t: listing.parse_pools_text(
        t, listing.DEFAULT_POOL_COLUMNS))),
    (r"zfs-list-j\..*", parses(listing.parse_datasets_json)),
    (r"zfs-list-Hp-o-name-avail.*", parses(lambda t: listing.parse_datasets_text(
        t, ("name", "available", "used", "usedsnap", "usedds")))),
    (r"zfs-list-Hp-o\.txt", parses(lambda t: listing.parse_datasets_text(
        t, ("name", "used", "available", "referenced", "compressratio", "recordsize",
            "compression", "atime", "xattr", "mountpoint")))),
    (r"zfs-list-Hp-t-snapshot\.txt", parses(lambda t: listing.parse_datasets_text(
        t, ("name", "used", "referenced", "creation")))),
    (r"zfs-list.module-not-loaded.*", module_message),
    (r"zpool-iostat-Hpv(ly|-l)\..*", parses(iostat_tank)),
    (r"zpool-iostat-Hp\.all-pools\.txt", parses(lambda t: iostat.parse_pools(
        t, ("small", "tank")))),
    (r"zpool-iostat-(Hpvqy|Hp-q)\..*", refused(iostat_tank)),  # queue depths: not read
    (r"zpool-iostat-(Hp-w|Hpv-w|wvHp)\..*", refused(iostat_tank)),  # histograms: not read
    (r"zpool-iostat.*", refused(iostat_tank)),  # human tables
    (r"proc-spl-kstat-zfs-.*_bench\..*", parses(kstat.parse_bench)),
    (r"proc-spl-kstat-zfs-(arcstats|simd|POOL-iostats|POOL-objset|POOL-io|tank-iostats).*",
     parses(kstat.parse_table)),
    (r"proc-spl-kstat-zfs-tank-objset\.txt", parses(
        lambda t: [kstat.parse_table(part) for part in t.split("== ")[1:]])),
    (r"proc-spl-kstat-zfs-(POOL|tank)-state\..*", parses(
        lambda t: re.fullmatch(r"[A-Z]+\n", t))),
    (r"proc-spl-kstat-zfs-POOL-guid\..*", not_read("zsn names pools, it needs no guid")),
    (r"zdb-C\..*", parses(lambda t: cachefile.top_vdevs(nvlist_of(t)))),
    (r"sys-module-zfs-parameters-impls\.txt", parses(
        lambda t: [kstat.parse_choice(line.split(": ", 1)[1]) for line in t.splitlines()
                   if "[" in line])),
    (r"zpool-get-Hp-.*", parses(lambda t: listing.parse_text_rows(
        t, ("name", "property", "value", "source"), "zpool get"))),
    (r"zfs-get-j.*", not_read("zsn reads one property at a time, as text")),
    (r"zfs-get-Hp-all\..*", parses(lambda t: listing.parse_text_rows(
        t, ("name", "property", "value", "source"), "zfs get"))),
    (r"zfs-get-all\..*", not_read("human table; zsn asks zfs get -Hp")),
    (r"(zpool-V\.module-not-loaded|zpool_influxdb|zpool-version|arcstat\.no-kstat|"
     r"zpool-events|ls-proc-spl-kstat-zfs).*",
     not_read("zsn reads the module version from sysfs and needs neither events nor arcstat")),
    (r"SOURCES\.md|capture\.sh", not_read("provenance, not a capture")),
]
FILES = sorted([*OTHERS.iterdir(), *VM.iterdir()])


@pytest.mark.parametrize("path", FILES, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_every_capture_has_its_parser(path: Path) -> None:
    handler = next((h for pattern, h in HANDLERS if re.fullmatch(pattern, path.name)), None)
    assert handler is not None, f"no parser decided for {path.name}"
    handler(path)
