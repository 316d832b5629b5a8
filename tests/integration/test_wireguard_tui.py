"""The TUI against live wireguard-go devices: names, handshake ages, and recovery."""

from __future__ import annotations

import sys

import pytest

from tests.integration.conftest import WgPair
from tests.pilot import wait_until
from tests.terminal_scan import drawn_text, run_in_terminal
from zsn.system.host import Host
from zsn.tui.app import ZsnApp
from zsn.tui.widgets.table import LiveTable
from zsn.view import cell_text

pytestmark = pytest.mark.lab


@pytest.fixture(autouse=True)
def no_history_on_this_machine(monkeypatch: pytest.MonkeyPatch) -> None:
    """The TUI runs on the machine's own root here: history is not these tests'
    subject, and nothing may be written under the machine's /var/lib/zsn."""
    monkeypatch.setattr("zsn.tui.panes.wireguard.record_history",
                        lambda recorder, snapshot: snapshot)


async def test_tui_shows_peer_name_and_handshake_age(wg_pair: WgPair) -> None:
    app = ZsnApp(Host(), refresh=0.2)
    server = wg_pair.ifnames[0]
    async with app.run_test(size=(80, 24)) as pilot:
        interfaces = app.query_one("#wg-interfaces", LiveTable)
        await wait_until(pilot, lambda: interfaces.get_row(server) is not None)
        interfaces.move_cursor(server)
        peers = app.query_one("#wg-peers", LiveTable)
        # The lab's devices live in their own namespaces: labelled as such here.
        await wait_until(pilot, lambda: str(peers.border_title).startswith(f"Peers of {server}")
                         and peers.row_count == 1)
        name, handshake = (cell_text(cell) for cell in peers.rows[0].cells[:2])
        assert name == wg_pair.peer_name
        assert handshake.endswith("s") and handshake[0].isdigit(), handshake


async def test_tui_keeps_a_vanished_daemon_as_a_gone_row_and_recovers(wg_pair: WgPair) -> None:
    app = ZsnApp(Host(), refresh=0.2)
    client = wg_pair.ifnames[1]
    async with app.run_test(size=(80, 24)) as pilot:
        interfaces = app.query_one("#wg-interfaces", LiveTable)
        await wait_until(pilot, lambda: interfaces.get_row(client) is not None)
        wg_pair.lab.stop_daemon(client)
        await wait_until(pilot, lambda: getattr(interfaces.get_row(client), "state", "")
                         == "gone")

        def notices() -> list[str]:
            return [n.message for n in app._notifications
                    if f"{client} disappeared" in n.message]

        # The notice is posted after the row is drawn greyed: wait for it, then count.
        await wait_until(pilot, notices, "the disappeared notice")
        await pilot.pause()
        assert len(notices()) == 1
        assert "disappeared" not in str(app.query_one(".pane-status").render())
        assert app.is_running
        wg_pair.lab.wireguard_go(wg_pair.ns[1], client)
        await wait_until(pilot, lambda: getattr(interfaces.get_row(client), "state", "gone")
                         != "gone")


def first_frame_drawn(written: bytes) -> bool:
    """Textual's first paint has reached the last row (after its move to the first)."""
    return written.find(b"\x1b[24;1H", written.find(b"\x1b[1;1H") + 1) > 0


def test_the_first_frame_already_shows_the_live_devices(wg_pair: WgPair) -> None:
    """`zsn` started on a terminal: its first full frame already lists the live
    wireguard-go devices, read by the first read's forked child while Textual loaded
    and sent back to the app (zsn.tui.startup). The process gets a /var/lib of its
    own (a tmpfs in a mount namespace): nothing it might record lands on the machine."""
    _, written = run_in_terminal(
        ["unshare", "--mount", "--propagation", "private", "--", "sh", "-c",
         'mount -t tmpfs zsn-test /var/lib && exec "$0" -m zsn --refresh 3600',
         sys.executable], until=first_frame_drawn)
    assert first_frame_drawn(written), f"no first frame: {written[-300:]!r}"
    # The first frame's rows above its last (the tables'), nothing drawn after it.
    last_row = written.find(b"\x1b[24;1H", written.find(b"\x1b[1;1H"))
    frame = drawn_text(written[:last_row].decode(errors="replace"))
    for name in wg_pair.ifnames:
        assert name in frame, f"{name} not in the first frame"
