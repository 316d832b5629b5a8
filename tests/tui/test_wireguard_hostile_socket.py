"""The WireGuard pane next to UAPI sockets that trickle and flood (issue 10, item 1):
it shows each one's error and keeps answering keys while the reads run."""

from __future__ import annotations

import tempfile
from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path

import pytest
from textual.widgets import Static

from tests.lab.hostile import hostile_socket
from tests.pilot import wait_until
from zsn.system.host import Host
from zsn.tui.app import ZsnApp
from zsn.tui.screens.help import HelpScreen
from zsn.tui.widgets.table import LiveTable


@pytest.fixture
def hostile_tree() -> Iterator[Path]:
    # A short path: unix socket names are limited to 107 bytes.
    with tempfile.TemporaryDirectory(prefix="zsn-") as directory, ExitStack() as stack:
        tree = Path(directory)
        for name, mode in (("wgslow", "trickle"), ("wgflood", "flood")):
            stack.enter_context(hostile_socket(tree / f"run/wireguard/{name}.sock", mode))
        yield tree


async def test_pane_shows_each_hostile_socket_error_and_keeps_answering(
        hostile_tree: Path) -> None:
    app = ZsnApp(Host(hostile_tree), theme="zsn-night", refresh=1.0)
    async with app.run_test(size=(80, 24)) as pilot:
        # The first read is still waiting on the trickling socket: keys work meanwhile.
        await pilot.pause(0.3)
        await pilot.press("question_mark")
        await wait_until(pilot, lambda: isinstance(app.screen, HelpScreen), "help", 1.0)
        await pilot.press("escape")
        await wait_until(pilot, lambda: not isinstance(app.screen, HelpScreen), "back", 1.0)

        status = app.query_one(".pane-status", Static)

        def shown() -> str:
            return str(status.render()) if status.display else ""

        await wait_until(pilot, lambda: "wgslow" in shown() and "wgflood" in shown(),
                         "both errors in the status line", 15.0)
        text = shown()
        assert "no complete answer within" in text and "larger than" in text
        interfaces = app.query_one("#wg-interfaces", LiveTable)
        assert interfaces.row_count == 2
