"""The ZFS pane's scrub and trim schedules (`w`): per pool and kind, what runs it, when,
the next run, and a pool run twice (Debian's real cron job, tests/fixtures/
zfs-schedules, beside OpenZFS's monthly timer on tank)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest
from textual.pilot import Pilot

from tests.pilot import wait_until
from tests.tui.conftest import SnapCompare
from tests.tui.test_zfs_pane import fixed_snapshot, make_app, open_tab, rows
from tests.unit.zfs.test_scrub_schedules import CRON
from zsn.tui.app import ZsnApp
from zsn.tui.widgets.table import LiveTable
from zsn.zfs.disks import DiskMap
from zsn.zfs.model import Pool
from zsn.zfs.scrubs import Schedules, Timer, assemble, default_slot, parse_cron

MONTHLY = Timer("tank", "scrub", "zfs-scrub-monthly@tank.timer", "openzfs", True, "monthly",
                default_slot("month"), "/lib/systemd/system/zfs-scrub-monthly@.timer", ())


def schedules_of(host: Any, pools: Sequence[Pool]) -> Schedules:
    """tank: OpenZFS's monthly timer and the cron job (twice); small: the cron job."""
    return assemble(pools, [MONTHLY], parse_cron(CRON),
                    {"tank": {"scrub": "-"}, "small": {"scrub": "-"}}, DiskMap({}, {}),
                    {"scrub": "/lib/systemd/system", "trim": None})


@pytest.fixture
def schedules_app(monkeypatch: pytest.MonkeyPatch) -> ZsnApp:
    monkeypatch.setattr("zsn.tui.panes.zfs.schedules_of", schedules_of)
    return make_app(monkeypatch, fixed_snapshot("scrub-finished"))


async def show_schedules(pilot: Pilot[int]) -> None:
    await open_tab(pilot)
    pilot.app.query_one("#zfs-pools", LiveTable).focus()
    await pilot.press("w")
    assert isinstance(pilot.app, ZsnApp)
    app = pilot.app
    await wait_until(pilot, lambda: len(rows(app, "#zfs-schedules")) >= 4, "the schedules")


async def test_w_lists_every_pools_schedules(schedules_app: ZsnApp) -> None:
    async with schedules_app.run_test(size=(120, 30)) as pilot:
        await show_schedules(pilot)
        shown = {(row[0], row[1]): row for row in rows(schedules_app, "#zfs-schedules")}
        tank = shown["tank", "scrub"]
        # pool, kind, next, note, when, by, shares with
        assert tank[2:5] == ["Dec 01 00:00 (in 8d 06h)", "twice",
                             f"{default_slot('month').describe()} + 2nd Sun of the month 00:24"]
        assert tank[5] == "zfs-scrub-monthly@tank.timer, cron"
        assert shown["small", "scrub"][4] == "2nd Sun of the month 00:24"
        assert shown["tank", "trim"][2:5] == ["-", "", "never"]
        title = str(schedules_app.query_one("#zfs-schedules", LiveTable).border_title)
        assert "scrub: OpenZFS" in title and "/etc/cron.d/zfsutils-linux" in title


def test_snapshot_schedules_80x24(snap_compare: SnapCompare, schedules_app: ZsnApp) -> None:
    assert snap_compare(schedules_app, terminal_size=(80, 24), run_before=show_schedules)
