"""The ZFS pane's disk column and disk box, fed with real `smartctl --json` captures
(tests/fixtures/smart) as the disks under the lab's tank."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from textual.pilot import Pilot

from tests.pilot import screen_text, wait_until
from tests.tui.conftest import SnapCompare
from tests.tui.test_zfs_pane import NOW, fixed_snapshot, make_app, open_tab, rows
from zsn.tui.app import ZsnApp
from zsn.tui.widgets.details import DetailsBox
from zsn.tui.widgets.table import LiveTable
from zsn.zfs import disk_state, smart
from zsn.zfs.disk_health import DiskReading, DiskReport
from zsn.zfs.disks import Disk, DiskMap, Layer, LeafChain

SMART = Path(__file__).parents[1] / "fixtures" / "smart"


def reading_of(name: str, age: float = 120.0) -> smart.Smart:
    return smart.parse((SMART / name).read_bytes(), name, read_at=NOW - age)


def lab_disks() -> DiskReading:
    """tank's four leaves on four disks: a healthy SATA HDD, one with 304 reallocated
    sectors that grew from 1, a failing one, and one asleep since its last reading."""
    disks = {
        "sda": Disk("sda", "sata", "/dev/disk/by-id/ata-WDC_WD20EFRX-68EUZN0_WD-WCC4M0001",
                    "WDC WD20EFRX-68E", "WD-WCC4M0001", None, 2000398934016, True,
                    "0000:00:1f.2"),
        "sdb": Disk("sdb", "sata", "/dev/disk/by-id/ata-ST3500418AS_9VM00002", "ST3500418AS",
                    "9VM00002", None, 500107862016, True, "0000:00:1f.2"),
        "sdc": Disk("sdc", "usb", "/dev/disk/by-id/usb-Hitachi_HDS721050DLE630_MSK423",
                    "HDS721050DLE630", "MSK423Y20S3HBC", None, 500107862016, True,
                    "0000:00:14.0"),
        "sdd": Disk("sdd", "sata", "/dev/disk/by-id/ata-WDC_WD20EFRX-68EUZN0_WD-WCC4M0004",
                    "WDC WD20EFRX-68E", "WD-WCC4M0004", None, 2000398934016, True,
                    "0000:00:1f.2"),
    }
    leaves = {f"disk-{letter}": LeafChain(
        f"disk-{letter}", (Layer("crypt", f"dm-{n}", f"disk-{letter} (dm-crypt LUKS2)"),
                           Layer("partition", f"sd{letter}1", f"sd{letter}1"),
                           Layer("disk", f"sd{letter}", f"sd{letter}")), (f"sd{letter}",))
        for n, letter in enumerate("abcd")}
    records = disk_state.SmartRecords()
    earlier = reading_of("sata-hdd-reallocated-1.st3500418as.smartctl_exporter.json", 86400)
    disk_state.add_reading(records, "sdb", "sdb", earlier)
    disk_state.add_reading(records, "sdb", "sdb", reading_of(
        "sata-hdd-reallocated-304.st3500418as.smartctl_exporter.json"))
    reports = {
        "sda": DiskReport(disks["sda"], reading_of("sata-hdd.wd20efrx.smartctl_exporter.json")),
        "sdb": DiskReport(disks["sdb"], records.disks["sdb"].last, None,
                          tuple(disk_state.growth(records.disks["sdb"]))),
        "sdc": DiskReport(disks["sdc"], reading_of(
            "sata-hdd-failed-reallocated-now.hds721050dle630.scrutiny.json")),
        "sdd": DiskReport(disks["sdd"], reading_of("sata-hdd.wd20efrx.smartctl_exporter.json",
                                                   3000),
                          smart.Smart("standby", NOW - 60,
                                      "the disk is in STANDBY mode: not woken")),
    }
    return DiskReading(DiskMap(disks, leaves), reports, (), NOW)


class FixedWatch:
    """Stands in for DiskWatch: the readings above, whatever leaves are asked for."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self.reading = lab_disks()

    def want(self, leaves: Any) -> None:
        pass

    def latest(self) -> DiskReading:
        return self.reading

    def stop(self) -> None:
        pass


@pytest.fixture
def disks_app(monkeypatch: pytest.MonkeyPatch) -> ZsnApp:
    monkeypatch.setattr("zsn.tui.panes.zfs.DiskWatch", FixedWatch)
    return make_app(monkeypatch, fixed_snapshot())


async def on_leaf(pilot: Pilot[int], name: str = "disk-b") -> None:
    await open_tab(pilot)
    table = pilot.app.query_one("#zfs-pools", LiveTable)
    table.focus()
    table.move_cursor("tank")
    await pilot.pause()
    vdevs = pilot.app.query_one("#zfs-vdevs", LiveTable)
    await wait_until(pilot, lambda: vdevs.get_row(f"tank\0{name}") is not None, "the leaf")
    vdevs.focus()
    vdevs.move_cursor(f"tank\0{name}")
    await pilot.pause()


async def test_the_disk_column_and_box(disks_app: ZsnApp) -> None:
    async with disks_app.run_test(size=(80, 24)) as pilot:
        await on_leaf(pilot)
        table = disks_app.query_one("#zfs-vdevs", LiveTable)
        column = [c.key for c in table.columns if c not in table.hidden_columns].index("disk")
        shown = {row[0].strip(): row[column] for row in rows(disks_app, "#zfs-vdevs")}
        assert shown == {"tank": "1 FAIL", "mirror-0": "1 warn", "disk-a": "ok 34°",
                         "disk-b": "warn", "mirror-1": "1 FAIL", "disk-c": "FAIL",
                         "disk-d": "asleep"}
        box = disks_app.query_one("#zfs-disk", DetailsBox)
        await wait_until(pilot, lambda: box.display, "the disk box")
        text = "\n".join(screen_text(disks_app))
        assert "sdb · SMART warning · 33 °C · 44668 h on · read 2m 00s ago" in text
        assert "! 304 reallocated sectors" in text
        assert "! reallocated sectors 1 → 304 since the reading before" in text
        vdevs = disks_app.query_one("#zfs-vdevs", LiveTable)
        vdevs.move_cursor("tank\0disk-d")
        await wait_until(pilot, lambda: "the disk is in STANDBY mode" in
                         "\n".join(screen_text(disks_app)), "the sleeping disk")
        vdevs.move_cursor("tank\0mirror-0")
        await wait_until(pilot, lambda: not box.display, "no box on a mirror")


async def open_failing_leaf(pilot: Pilot[int]) -> None:
    await on_leaf(pilot, "disk-c")
    await wait_until(pilot, lambda: pilot.app.query_one("#zfs-disk", DetailsBox).display,
                     "the disk box")


def test_snapshot_failing_disk_80x24(snap_compare: SnapCompare, disks_app: ZsnApp) -> None:
    assert snap_compare(disks_app, terminal_size=(80, 24), run_before=open_failing_leaf)
