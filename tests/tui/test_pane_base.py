"""`LivePane`'s machinery: a read asked for during a read runs right after it."""

from __future__ import annotations

import threading
from pathlib import Path

from textual.app import App, ComposeResult

from tests.pilot import wait_until
from zsn.plan import ApplyError
from zsn.system.host import Host
from zsn.tui.panes.base import LivePane, failure_line
from zsn.tui.widgets.status import StatusLine


class SlowPane(LivePane[int]):
    def __init__(self) -> None:
        super().__init__(Host(Path("/srv/zsn-test-root")), 3600, id="slow")
        self.gate = threading.Event()
        self.reads: list[int] = []
        self.shown: list[int] = []

    def compose(self) -> ComposeResult:
        yield StatusLine()

    def fetch(self) -> int:
        number = len(self.reads)
        self.reads.append(number)
        if number == 0:
            self.gate.wait(10)  # a read begun before the change
        return number

    def show(self, snapshot: int) -> None:
        self.shown.append(snapshot)


class PaneApp(App[None]):
    def compose(self) -> ComposeResult:
        yield SlowPane()


async def test_a_forced_read_during_a_read_runs_when_it_ends() -> None:
    """After a change the pane reads at once; a poll already under way (which may have
    read before the change) does not swallow that read."""
    app = PaneApp()
    async with app.run_test() as pilot:
        pane = app.query_one(SlowPane)
        await wait_until(pilot, lambda: pane.reads == [0], "the first read under way")
        pane.poll(force=True)  # what a plan's "Done" does
        pane.poll()  # a timer tick meanwhile asks for nothing more
        pane.gate.set()
        await wait_until(pilot, lambda: pane.shown == [0, 1], "read again after it")
        await pilot.pause(0.2)
        assert pane.reads == [0, 1]


def test_a_failed_plan_is_one_line_and_says_what_was_not_undone() -> None:
    title = "set compression=zstd on tank/db"
    error = ApplyError(f"{title}: failed at 'zfs set compression=zstd tank/db': zfs failed: "
                       "cannot set property for 'tank/db': permission denied", [], [], [])
    assert failure_line(title, str(error)) == (
        "failed at 'zfs set compression=zstd tank/db': zfs failed: cannot set property for "
        "'tank/db': permission denied")
    undone = ApplyError(f"{title}: failed at 'b': no", ["a"], ["a"], [])
    assert failure_line(title, str(undone)) == "failed at 'b': no (undone)"
    stuck = ApplyError(f"{title}: failed at 'b': no", ["a"], [], ["a (busy)"])
    assert failure_line(title, str(stuck)) == (
        "failed at 'b': no; NOT undone (fix by hand): a (busy)")
