"""The peer history against real wireguard-go servers and clients (network namespaces).

- counters stitched across a restart of the server's wireguard-go;
- a peer with keepalive 25 s shows no disconnect over more than three re-key
  intervals while a peer whose endpoint went away shows exactly one (a run of
  ~7 minutes of real time, `tests.lab.history_run`, started in the background when
  the session is collected: see tests/lab/background.py);
- an expiry reached while the TUI runs takes the peer off the live interface;
- zsn killed (SIGKILL) at every write of a history transaction leaves a store that
  opens, passes SQLite's integrity check and holds the state before or after.
"""

from __future__ import annotations

import secrets
import sqlite3
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.lab.background import result as background_result
from tests.lab.history import HistoryLab
from tests.lab.netns import Lab, require_lab
from tests.needs import needs_tools
from zsn.wireguard import uapi
from zsn.wireguard.expiry import format_stored
from zsn.wireguard.keys import base64_to_hex
from zsn.wireguard.model import CONNECTED_WITHIN

pytestmark = pytest.mark.lab
REKEY_AFTER = 120
LONG_RUN_SECONDS = 3 * REKEY_AFTER + 40


@pytest.fixture
def history_lab(tmp_path: Path) -> Iterator[HistoryLab]:
    require_lab()
    needs_tools("unshare", "mount")
    lab = Lab(tag="zh" + secrets.token_hex(3))
    try:
        history = HistoryLab(lab, tmp_path / "lab")
        history.start_server()
        yield history
    finally:
        lab.close()


def device_counters(history: HistoryLab, name: str) -> tuple[int, int]:
    peer = history.server_peer(history.clients[name])
    return int(peer["rx_bytes"]), int(peer["tx_bytes"])


def test_counters_are_stitched_across_a_restart_of_the_interface(
        history_lab: HistoryLab) -> None:
    phone = history_lab.add_client("phone", 1, keepalive=None)
    history_lab.handshake(phone)
    history_lab.ping(phone, 100, 1000)
    history_lab.zsn("wg", "record")
    before = device_counters(history_lab, "phone")
    assert before[0] > 100_000
    history_lab.restart_server()  # wireguard-go gone and back: counters from zero
    # The client notices the lost session when a reply is missing and handshakes again.
    history_lab.handshake(phone, timeout=60)
    history_lab.ping(phone, 30, 500)
    after = device_counters(history_lab, "phone")
    assert after[0] < before[0]  # the device itself forgot
    history_lab.zsn("wg", "record")
    log = history_lab.peer_log(phone)
    assert (log["total_rx"], log["total_tx"]) == (before[0] + after[0], before[1] + after[1])
    kinds = [event["kind"] for event in log["events"]]
    assert kinds == ["connect", "disconnect", "connect"]


@pytest.mark.timeout(LONG_RUN_SECONDS + 600)  # when run alone it waits for the whole lab
@pytest.mark.background_lab("tests.lab.history_run", LONG_RUN_SECONDS)
def test_a_keepalive_peer_never_flaps_while_a_peer_that_went_away_disconnects_once(
        request: pytest.FixtureRequest) -> None:
    require_lab()
    run = background_result(request.node)
    assert "failure" not in run, run.get("failure")
    assert run["record_errors"] == []
    # Longer than three re-key intervals, and the server saw the steady peer re-key
    # at least three times during it.
    assert run["ended_at"] - run["started_at"] >= 3 * REKEY_AFTER
    handshakes = run["steady_handshakes"]
    assert len(handshakes) >= 4, handshakes
    steady, leaver = run["steady"], run["leaver"]
    assert [e["kind"] for e in steady["events"]] == ["connect"], steady["events"]
    assert steady["connected"] and steady["total_rx"] > 0
    kinds = [e["kind"] for e in leaver["events"]]
    assert kinds == ["connect", "disconnect"], leaver["events"]
    connect, disconnect = leaver["events"]
    # Reported once its last handshake was 270 s old; dated when it was last heard of,
    # before the moment it went away.
    assert disconnect["at"] <= run["leaver_gone_at"] + 1
    assert disconnect["seconds"] == disconnect["at"] - connect["at"]
    assert not leaver["connected"]
    assert run["ended_at"] - disconnect["at"] >= CONNECTED_WITHIN - 180


async def test_an_expiry_reached_while_the_tui_runs_takes_the_peer_off_live(
        history_lab: HistoryLab, monkeypatch: pytest.MonkeyPatch) -> None:
    from tests.pilot import wait_for_rows
    from zsn.system.host import Host
    from zsn.tui.app import ZsnApp
    from zsn.wireguard.config import parse

    guest = history_lab.add_client("guest", 1, keepalive=25)
    history_lab.handshake(guest)
    expires = int(time.time()) + 6
    # The TUI reads the real /etc/wireguard (its device is this namespace's through
    # the shared UAPI socket): the lab's config goes there, under the lab's name.
    history_lab.write_config({"guest": f"# Expires = {format_stored(expires)}"})
    config = history_lab.lab.file(Path("/etc/wireguard") / history_lab.config.name,
                                  history_lab.config.read_text())
    history_lab.lab.defer(lambda: config.with_name(config.name + ".zsn-bak")
                          .unlink(missing_ok=True))
    # History is not this test's subject: nothing written under the machine's /var/lib.
    monkeypatch.setattr("zsn.tui.panes.wireguard.record_history",
                        lambda recorder, snapshot: snapshot)
    app = ZsnApp(Host(), theme="zsn-night", refresh=1.0)
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_for_rows(pilot)
        key = base64_to_hex(guest.public_key)
        deadline = expires + 60
        while f"public_key={key}" in uapi.exchange(history_lab.server_socket, "get=1\n\n"):
            assert time.time() < deadline, "still on the interface 60 s after its expiry"
            await pilot.pause(0.5)
        taken_off = time.time()
    assert taken_off - expires <= 60
    [peer] = parse(config.read_text()).all_peers
    assert peer.name == "guest" and peer.disabled


def test_a_kill_at_any_write_of_a_history_transaction_leaves_a_readable_store(
        history_lab: HistoryLab) -> None:
    needs_tools("strace")
    # 300 peers: the first record writes them all (peers, live rows) in one transaction.
    lines = []
    for number in range(300):
        lines += [f"public_key={secrets.token_hex(32)}",
                  f"allowed_ip=10.80.{number // 250}.{number % 250 + 1}/32"]
    uapi.set_device(history_lab.server_socket, lines)
    store = history_lab.folder / "var/lib/zsn/history.sqlite"
    outcomes = []
    nth = 1
    while True:
        killed = history_lab.zsn("wg", "record", check=False, wrapper=(
            "strace", "-f", "-qq", "-o", "/dev/null", "-e", "trace=pwrite64,write",
            "-e", f"inject=pwrite64:signal=KILL:when={nth}"))
        if killed.returncode == 0:
            break
        assert killed.returncode in (-9, 137), killed.stderr
        outcomes.append(_store_state(store))
        nth += 1
        assert nth < 400, "more writes than a 300-peer transaction needs"
    assert nth > 3  # killed at several writes before one run got through
    # Each kill left either nothing committed or the whole transaction, never a part.
    assert set(outcomes) <= {0, 300}, outcomes
    assert _store_state(store) == 300
    history_lab.zsn("wg", "record")  # and it goes on from there
    assert _store_state(store) == 300


def _store_state(store: Path) -> int:
    """Peers recorded in the store, after SQLite's own check of the whole file (and a
    recovery of its write-ahead log, as the next zsn's open does)."""
    if not store.exists():
        return 0
    with tempfile.TemporaryDirectory() as copy:
        # A copy: the check must not be what repairs the original for the next run.
        for part in store.parent.iterdir():
            (Path(copy) / part.name).write_bytes(part.read_bytes())
        db = sqlite3.connect(Path(copy) / store.name)
        try:
            assert db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
            tables = {row[0] for row in db.execute("SELECT name FROM sqlite_schema")}
            if "peers" not in tables:
                return 0
            peers = db.execute("SELECT count(*) FROM peers").fetchone()[0]
            live = db.execute("SELECT count(*) FROM live").fetchone()[0]
            assert peers == live  # one transaction: both or neither
            return int(peers)
        finally:
            db.close()

