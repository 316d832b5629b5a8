"""The first pane's first read happens in a child process while the UI starts, so
the first frame already shows the tables with their rows."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from tests.pilot import TerminalOutput, row_texts
from tests.tui.conftest import CAPTURED_HANDSHAKE, fixed_snapshot
from zsn.system.host import Host
from zsn.tui.app import ZsnApp
from zsn.tui.prefetch import Prefetch
from zsn.tui.widgets.table import LiveTable
from zsn.wireguard.model import WireGuardSnapshot


def read_fixture(host: Host) -> WireGuardSnapshot:
    """A `live` reader for the child: the captured server and client."""
    return fixed_snapshot()


def read_and_fail(host: Host) -> WireGuardSnapshot:
    raise RuntimeError("the daemon is not there")


def arrived(prefetch: Prefetch) -> Prefetch:
    for _ in range(500):
        if prefetch.ready():
            return prefetch
        time.sleep(0.01)
    raise AssertionError("the child never sent its snapshot")


def test_the_child_sends_the_snapshot_once() -> None:
    prefetch = Prefetch.start("tests.tui.test_prefetch:read_fixture", Host())
    assert prefetch is not None
    assert prefetch.take(10) == fixed_snapshot()
    assert prefetch.take(1) is None  # taken once


def test_a_child_that_fails_leaves_the_read_to_the_pane() -> None:
    prefetch = Prefetch.start("tests.tui.test_prefetch:read_and_fail", Host())
    assert prefetch is not None
    assert prefetch.take(10) is None
    with pytest.raises(ChildProcessError):
        os.waitpid(-1, os.WNOHANG)  # no child left behind


async def test_the_first_frame_already_shows_the_rows(monkeypatch: pytest.MonkeyPatch) -> None:
    def never(host: Host, cache: object) -> WireGuardSnapshot:
        raise AssertionError("the pane read again instead of using the prefetched snapshot")

    monkeypatch.setattr("zsn.tui.panes.wireguard.read_wireguard", never)
    monkeypatch.setattr("zsn.tui.panes.wireguard.now", lambda: CAPTURED_HANDSHAKE + 42)
    prefetch = arrived(Prefetch.start("tests.tui.test_prefetch:read_fixture",  # type: ignore[arg-type]
                                      Host(Path("/srv/zsn-test-root"))))
    app = ZsnApp(Host(Path("/srv/zsn-test-root")), theme="zsn-night", refresh=3600,
                 prefetched=prefetch)
    output = TerminalOutput(app)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        assert "alice-laptop" in output.first_frame and "zcapwg2" in output.first_frame
        assert row_texts(app.query_one("#wg-peers", LiveTable))[0][0] == "alice-laptop"
