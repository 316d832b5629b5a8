"""The ZFS pane's scrub history: on the pool's own row of the vdev tree, the box under
it shows the pool's last scrubs (the kernel lab's real history, tests/fixtures/
zfs-scrubs-lab, standing in for the lab's tank's)."""

from __future__ import annotations

from typing import Any

import pytest
from textual.pilot import Pilot

from tests.pilot import screen_text, wait_until
from tests.tui.conftest import SnapCompare
from tests.tui.test_zfs_pane import fixed_snapshot, make_app, open_tab
from tests.unit.zfs.test_scrubs import history
from zsn.tui.app import ZsnApp
from zsn.tui.widgets.details import DetailsBox
from zsn.tui.widgets.table import LiveTable
from zsn.zfs.scrub_history import ScrubHistory


class FixedScrubs:
    """Stands in for ScrubWatch: tank's scrubs, whatever pools are asked for."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self.history = ScrubHistory({"tank": tuple(history())})

    def want(self, pools: Any) -> None:
        pass

    def latest(self) -> ScrubHistory:
        return self.history

    def stop(self) -> None:
        pass


@pytest.fixture
def scrubs_app(monkeypatch: pytest.MonkeyPatch) -> ZsnApp:
    monkeypatch.setattr("zsn.tui.panes.zfs.ScrubWatch", FixedScrubs)
    app = make_app(monkeypatch, fixed_snapshot("scrub-finished"))
    monkeypatch.setattr("zsn.tui.panes.zfs.now", lambda: history()[-1].ended + 3600)
    return app


async def on_pool_row(pilot: Pilot[int]) -> None:
    await open_tab(pilot)
    pools = pilot.app.query_one("#zfs-pools", LiveTable)
    pools.focus()
    pools.move_cursor("tank")
    await pilot.pause()
    vdevs = pilot.app.query_one("#zfs-vdevs", LiveTable)
    await wait_until(pilot, lambda: vdevs.get_row("tank\0tank") is not None, "the pool row")
    vdevs.focus()
    vdevs.move_cursor("tank\0tank")
    await wait_until(pilot, lambda: pilot.app.query_one("#zfs-disk", DetailsBox).display,
                     "the scrubs box")


async def test_the_pool_row_shows_its_scrubs(scrubs_app: ZsnApp) -> None:
    async with scrubs_app.run_test(size=(80, 24)) as pilot:
        await on_pool_row(pilot)
        box = scrubs_app.query_one("#zfs-disk", DetailsBox)
        assert box.border_title == "Scrubs"
        text = "\n".join(screen_text(scrubs_app))
        assert "tank: last scrub" in text and "took" in text
        vdevs = scrubs_app.query_one("#zfs-vdevs", LiveTable)
        vdevs.move_cursor("tank\0mirror-0")
        await wait_until(pilot, lambda: not box.display, "no box on a mirror")


def test_snapshot_scrubs_80x24(snap_compare: SnapCompare, scrubs_app: ZsnApp) -> None:
    assert snap_compare(scrubs_app, terminal_size=(80, 24), run_before=on_pool_row)
