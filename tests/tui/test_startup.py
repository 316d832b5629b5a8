"""The first pane's first read runs while the app starts (`zsn.tui.startup`), so the
first frame already shows the tables with their rows (issue 9, item 6), and the pane
does not read a second time for it."""

from __future__ import annotations

import gc
import threading
from pathlib import Path

import pytest

from tests.pilot import TerminalOutput, row_texts, wait_until
from tests.tui.conftest import CAPTURED_HANDSHAKE, fixed_snapshot
from zsn.domains import domain
from zsn.system.host import Host
from zsn.tui.app import ZsnApp
from zsn.tui.startup import FirstRead, Startup
from zsn.tui.widgets.table import LiveTable
from zsn.wireguard.model import WireGuardSnapshot

ROOT = Host(Path("/srv/zsn-test-root"))
RELEASE = threading.Event()


def read_fixture(host: Host) -> WireGuardSnapshot:
    """A `live` reader: the captured server and client."""
    return fixed_snapshot()


def read_when_released(host: Host) -> WireGuardSnapshot:
    RELEASE.wait(10)
    return fixed_snapshot()


def read_and_fail(host: Host) -> WireGuardSnapshot:
    raise RuntimeError("the daemon is not there")


def read_big_server(host: Host) -> WireGuardSnapshot:
    """The captured server with 500 peers: its real peer under other keys and names."""
    snapshot = fixed_snapshot()
    server = snapshot.interfaces[0]
    peers = tuple(server.peers[0]._replace(public_key=f"{index:043d}=", name=f"peer-{index:03d}")
                  for index in range(500))
    return snapshot._replace(interfaces=(server._replace(peers=peers),))


@pytest.fixture
def reads(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The pane's own reads (each returns the fixture), counted."""
    done: list[int] = []

    def read(host: Host, cache: object) -> WireGuardSnapshot:
        done.append(1)
        return fixed_snapshot()

    monkeypatch.setattr("zsn.tui.panes.wireguard.read_wireguard", read)
    monkeypatch.setattr("zsn.tui.panes.wireguard.now", lambda: CAPTURED_HANDSHAKE + 42)
    return done


def arrived(first: FirstRead) -> FirstRead:
    assert first._done.wait(10), "the first read never finished"
    return first


def test_the_wireguard_pane_names_its_reader() -> None:
    assert domain("wireguard").live == "zsn.wireguard.live:read_wireguard"


async def test_the_first_frame_already_shows_the_rows(reads: list[int]) -> None:
    first = arrived(FirstRead("tests.tui.test_startup:read_fixture", ROOT))
    app = ZsnApp(ROOT, theme="zsn-night", refresh=3600, startup=Startup(first))
    output = TerminalOutput(app)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        assert "alice-laptop" in output.first_frame and "zcapwg2" in output.first_frame
        assert row_texts(app.query_one("#wg-peers", LiveTable))[0][0] == "alice-laptop"
        await pilot.pause(0.2)
    assert reads == []  # the pane did not read again for its first rows


async def test_a_big_first_read_makes_the_rows_on_screen_first_then_the_others(
        reads: list[int]) -> None:
    first = arrived(FirstRead("tests.tui.test_startup:read_big_server", ROOT))
    app = ZsnApp(ROOT, theme="zsn-night", refresh=3600, startup=Startup(first))
    output = TerminalOutput(app)
    async with app.run_test(size=(80, 24)) as pilot:
        peers = app.query_one("#wg-peers", LiveTable)
        await wait_until(pilot, lambda: peers.row_count == 500, "every peer's row")
        assert "peer-000" in output.first_frame
        assert [row[0] for row in row_texts(peers)][:3] == ["peer-000", "peer-001", "peer-002"]
        await pilot.press("end")
        await pilot.pause()
        assert peers.cursor_key == f"{499:043d}="
    assert reads == []


async def test_a_first_read_still_running_is_waited_for_not_repeated(reads: list[int]) -> None:
    RELEASE.clear()
    first = FirstRead("tests.tui.test_startup:read_when_released", ROOT)
    app = ZsnApp(ROOT, theme="zsn-night", refresh=3600, startup=Startup(first))
    output = TerminalOutput(app)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        assert "Reading" in output.first_frame
        RELEASE.set()
        peers = app.query_one("#wg-peers", LiveTable)
        await wait_until(pilot, lambda: peers.row_count, "the first read's rows")
        assert row_texts(peers)[0][0] == "alice-laptop"
    assert reads == []


async def test_a_failed_first_read_leaves_the_read_to_the_pane(reads: list[int]) -> None:
    first = arrived(FirstRead("tests.tui.test_startup:read_and_fail", ROOT))
    app = ZsnApp(ROOT, theme="zsn-night", refresh=3600, startup=Startup(first))
    async with app.run_test(size=(80, 24)) as pilot:
        peers = app.query_one("#wg-peers", LiveTable)
        await wait_until(pilot, lambda: peers.row_count, "the pane's own rows")
    assert reads == [1]


def test_the_collector_is_paused_until_the_first_frame() -> None:
    startup = Startup.begin(None, ROOT)
    try:
        assert not gc.isenabled()
        assert startup.take_first_read() is None  # no domain, no read
    finally:
        startup.first_frame_drawn()
        gc.unfreeze()  # what start-up froze belongs to this test process
    assert gc.isenabled()
