"""The first pane's first read runs while the app starts (`zsn.tui.startup`), so the
first frame already shows the tables with their rows (issue 9, item 6), and the pane
does not read a second time for it. It runs in a forked child (issue 34: not in the
main process's turns for the interpreter), a thread where forking is not safe; what
the child sends back is decoded strictly, within a deadline and a size cap."""

from __future__ import annotations

import gc
import json
import os
import pickle
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.pilot import TerminalOutput, row_texts, wait_until
from tests.tui import first_readers
from tests.tui.captured import CAPTURED_HANDSHAKE, fixed_snapshot
from tests.unit.fuzz_registry import PickledCall
from zsn.domains import domain
from zsn.errors import ParseError
from zsn.system.host import Host
from zsn.tui import startup
from zsn.tui.app import ZsnApp
from zsn.tui.screens.ask import AskScreen
from zsn.tui.startup import FirstRead, Startup, decode_snapshot, encode_snapshot
from zsn.tui.widgets.table import LiveTable
from zsn.wireguard.model import WireGuardSnapshot

ROOT = Host(Path("/srv/zsn-test-root"))
REPO = Path(__file__).parents[2]


@pytest.fixture
def release() -> Iterator[None]:
    first_readers.RELEASE[:] = os.pipe()
    yield
    for end in first_readers.RELEASE:
        os.close(end)


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
    first = arrived(FirstRead("tests.tui.first_readers:read_fixture", ROOT))
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
    first = arrived(FirstRead("tests.tui.first_readers:read_big_server", ROOT))
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


async def test_a_first_read_still_running_is_waited_for_not_repeated(
        reads: list[int], release: None) -> None:
    first = FirstRead("tests.tui.first_readers:read_when_released", ROOT)
    app = ZsnApp(ROOT, theme="zsn-night", refresh=3600, startup=Startup(first))
    output = TerminalOutput(app)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        assert "Reading" in output.first_frame
        os.write(first_readers.RELEASE[1], b"x")
        peers = app.query_one("#wg-peers", LiveTable)
        await wait_until(pilot, lambda: peers.row_count, "the first read's rows")
        assert row_texts(peers)[0][0] == "alice-laptop"
    assert reads == []


async def test_a_failed_first_read_leaves_the_read_to_the_pane(reads: list[int]) -> None:
    first = arrived(FirstRead("tests.tui.first_readers:read_and_fail", ROOT))
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


def first_read_in_a_new_process(reader: str, **settings: float) -> dict[str, Any]:
    """`FirstRead` of `reader` in a new interpreter, one thread as zsn is when it
    starts the read (this test process may run others: the kernel lab's), with
    `settings` of `zsn.tui.startup` changed: what it took, whether it forked, which
    reader modules the process imported, its children left."""
    script = f"""
import json, os, sys, time
from pathlib import Path
from tests.tui import first_readers
from zsn.system.host import Host
from zsn.tui import startup
for name, value in {settings!r}.items():
    setattr(startup, name, value)
first_readers.APP_PROCESS.append(os.getpid())
first_readers.RELEASE[:] = os.pipe()
started = time.monotonic()
first = startup.FirstRead({reader!r}, Host(Path("/srv/zsn-test-root")))
snapshot = first.take(30)
try:
    left = os.waitpid(-1, os.WNOHANG)
except ChildProcessError:
    left = None
print(json.dumps({{"snapshot": repr(snapshot), "seconds": time.monotonic() - started,
                  "groups": type(snapshot.interfaces[0].groups).__name__ if snapshot else None,
                  "live imported": "zsn.wireguard.live" in sys.modules,
                  "children left": left}}))
"""
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          timeout=60, cwd=REPO, check=True)
    assert done.stderr == ""
    *before, last = done.stdout.splitlines()
    assert before == []  # nothing but the script's own line on its standard output
    result: dict[str, Any] = json.loads(last)
    return result


def test_the_first_read_runs_in_another_process() -> None:
    """The reader's imports and parsing stay out of the app's process."""
    result = first_read_in_a_new_process("tests.tui.first_readers:read_in_a_child")
    assert result["snapshot"] == repr(fixed_snapshot())
    assert result["live imported"] is False
    assert result["children left"] is None  # the child was waited for


def test_the_reader_never_writes_to_the_terminal() -> None:
    """What a reader prints goes nowhere: the terminal is the app's (the helper checks
    the process's standard output and error)."""
    result = first_read_in_a_new_process(
        "tests.tui.first_readers:read_and_write_to_the_terminal")
    assert result["snapshot"] == repr(fixed_snapshot())


def test_read_only_mappings_come_back_read_only() -> None:
    result = first_read_in_a_new_process("tests.tui.first_readers:read_with_groups")
    assert result["snapshot"] == repr(first_readers.read_with_groups(ROOT))
    assert result["groups"] == "mappingproxy"


def test_a_reader_past_its_deadline_is_ended() -> None:
    """The child ends itself at its deadline (then the pane reads itself)."""
    result = first_read_in_a_new_process("tests.tui.first_readers:read_when_released",
                                         FIRST_READ_SECONDS=0.5)
    assert result["snapshot"] == "None"
    assert result["seconds"] < 10
    assert result["children left"] is None


def test_a_snapshot_over_the_cap_is_not_taken() -> None:
    result = first_read_in_a_new_process("tests.tui.first_readers:read_big_server",
                                         MAX_SNAPSHOT_BYTES=4096)
    assert result["snapshot"] == "None"
    assert result["children left"] is None  # stopped, and waited for


def test_a_failed_read_sends_nothing() -> None:
    result = first_read_in_a_new_process("tests.tui.first_readers:read_and_fail")
    assert result["snapshot"] == "None"


def test_with_threads_running_the_first_read_is_a_thread(release: None) -> None:
    """Forking a process whose other threads may hold a lock is not safe."""
    waiting = threading.Thread(target=os.read, args=(first_readers.RELEASE[0], 1), daemon=True)
    waiting.start()
    first_readers.APP_PROCESS.append(os.getpid())
    try:
        first = arrived(FirstRead("tests.tui.first_readers:read_in_this_process", ROOT))
        assert first.take(0) == fixed_snapshot()
    finally:
        first_readers.APP_PROCESS.clear()
        os.write(first_readers.RELEASE[1], b"x")
        waiting.join()


@pytest.mark.parametrize("data", [
    pickle.dumps(PickledCall(os.system, "touch /tmp/zsn-pwned")),
    pickle.dumps(PickledCall(eval, "1")),
    pickle.dumps(PickledCall(startup.FirstRead, "os:getcwd", ROOT)),
    pickle.dumps({"interfaces": ()}),
    encode_snapshot(fixed_snapshot())[:-20],
    b"",
    b"not a pickle",
], ids=["os.system", "eval", "a zsn class not a model", "a dict", "cut", "empty", "noise"])
def test_a_snapshot_is_only_ever_data(data: bytes) -> None:
    with pytest.raises(ParseError) as refused:
        decode_snapshot(data)
    assert "\n" not in str(refused.value)
    assert not os.path.exists("/tmp/zsn-pwned")


def test_a_snapshot_reads_back_the_same() -> None:
    snapshot = first_readers.read_with_groups(ROOT)
    assert decode_snapshot(encode_snapshot(snapshot)) == snapshot


def _has_style(app: ZsnApp, name: str) -> bool:
    return any(path.endswith(f"/{name}") for path, _ in app.stylesheet.source)


async def test_a_pane_made_early_is_styled_as_always(reads: list[int]) -> None:
    """The first frame parses only the style files it needs; a pane asked for before
    the others are made (a key typed at once) has its styles all the same."""
    app = ZsnApp(ROOT, theme="zsn-night", refresh=3600)
    async with app.run_test(size=(80, 24)) as pilot:
        assert _has_style(app, "wireguard.tcss") and not _has_style(app, "zfs.tcss")
        await pilot.press("3")
        await wait_until(pilot, lambda: app.query("#zfs-pools"), "the ZFS pane")
        pools = app.query_one("#zfs-pools")
        assert pools.styles.max_height is not None and pools.styles.max_height.value == 8


async def test_a_form_opened_early_is_styled_as_always(reads: list[int]) -> None:
    app = ZsnApp(ROOT, theme="zsn-night", refresh=3600)
    async with app.run_test(size=(80, 24)) as pilot:
        assert not _has_style(app, "forms.tcss")
        app.push_screen(AskScreen("Rename", "Name", "alice", str))
        await wait_until(pilot, lambda: isinstance(app.screen, AskScreen)
                         and app.screen.query(".form"), "the form")
        form = app.screen.query_one(".form")
        assert form.styles.max_width is not None and form.styles.max_width.value == 110
