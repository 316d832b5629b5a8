"""The peer history: the store's format and the recorder, on a real peer's life.

The snapshots are a real wireguard-go server's replies (fixtures/wireguard/
history-series: a handshake, traffic, a restart of the server, a roam), read at the
times they were captured. Times beyond the capture (hours later, the session's
end) move the same replies along the clock only.
"""

from __future__ import annotations

import json
import os
import sqlite3
import stat
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from zsn.errors import UnsafeStateError
from zsn.system.host import Host
from zsn.wireguard import hooks, uapi
from zsn.wireguard import lint as wireguard_lint
from zsn.wireguard.history import (
    PERIOD_HOURS,
    HistoryError,
    HistoryStore,
    decode_amounts,
    encode_amount,
    store_path,
)
from zsn.wireguard.model import CONNECTED_WITHIN, InterfaceState, PeerState, WireGuardSnapshot
from zsn.wireguard.recorder import Recorder, advance

SERIES = Path(__file__).parent.parent / "fixtures" / "wireguard" / "history-series"
INDEX = json.loads((SERIES / "series.json").read_text())
CLIENT = INDEX["client_public_key"]


def step(number: int) -> tuple[PeerState, float]:
    entry = INDEX["steps"][number]
    device = uapi.parse_get((SERIES / entry["file"]).read_text())
    [peer] = device.peers
    return peer._replace(name="phone"), entry["read_at"]


def snapshot(peer: PeerState, at: float, instance: str = "run1") -> WireGuardSnapshot:
    interface = InterfaceState("zcaphs1", "userspace", "server-key", None, 51931, None, (),
                               None, (peer,), instance=instance)
    return WireGuardSnapshot((interface,), taken_at=at)


@pytest.fixture
def host(tmp_path: Path) -> Host:
    (tmp_path / "var/lib").mkdir(parents=True)
    return Host(tmp_path)


def totals(host: Host) -> tuple[int, int]:
    store = HistoryStore.open(host, create=False)
    try:
        [row] = store.live_rows().values()
        return row.total_rx, row.total_tx
    finally:
        store.close()


def events(host: Host) -> list[tuple[str, str | None]]:
    store = HistoryStore.open(host, create=False)
    try:
        [peer] = store.peer_ids().values()
        return [(event.kind, event.endpoint) for event in store.events(peer)]
    finally:
        store.close()


# -- amounts -------------------------------------------------------------------------


@settings(max_examples=300)
@given(st.integers(min_value=0, max_value=2**63))
def test_an_hour_amount_reads_back_exact_below_32k_and_within_a_2048th_above(
        value: int) -> None:
    code = encode_amount(value)
    [back] = decode_amounts(code)
    assert len(code) == 2
    if value < 32768:
        assert back == value
    elif value <= 2047 << 36:
        assert abs(back - value) <= value / 2048
    else:
        assert back == 2047 << 36  # ~140 TB in one hour: kept as the largest amount


def test_every_hour_takes_four_bytes_however_busy() -> None:
    data = b"".join(encode_amount(v) for v in (10**9, 7 * 10**8) * PERIOD_HOURS)
    assert len(data) == 4 * PERIOD_HOURS
    assert decode_amounts(data)[:2] == [999817216, 699924480]


# -- the recorder on the captured series ---------------------------------------------


def test_totals_are_stitched_across_a_restart_of_the_interface(host: Host) -> None:
    recorder = Recorder(host)
    for number, instance in ((0, "run1"), (1, "run1"), (2, "run2"), (3, "run2")):
        peer, at = step(number)
        recorder.record(snapshot(peer, at, instance))
    recorder.record(snapshot(*step(3), "run2"), flush=True)
    recorder.close()
    # 214708 received before the restart, 3560 since: the device itself shows 3560.
    assert totals(host) == (214708 + 3560, 214620 + 3532)


def test_a_counter_that_went_back_is_a_restart_even_on_the_same_run(host: Host) -> None:
    recorder = Recorder(host)
    for number in (1, 2):  # same instance: the peer was removed and added again
        recorder.record(snapshot(*step(number)))
    recorder.record(snapshot(*step(2)), flush=True)
    recorder.close()
    assert totals(host) == (214708 + 2740, 214620 + 2652)


def test_a_restarted_zsn_goes_on_from_what_the_store_recorded(host: Host) -> None:
    first = Recorder(host)
    first.record(snapshot(*step(1)), flush=True)
    first.close()
    second = Recorder(host)  # a new process: nothing in memory
    recorded = second.record(snapshot(*step(3), "run2"), flush=True)
    second.close()
    session = recorded.sessions[("zcaphs1", CLIENT)]
    assert (session.total_rx, session.total_tx) == (214708 + 3560, 214620 + 3532)
    assert totals(host) == (214708 + 3560, 214620 + 3532)


def test_connect_restart_and_roam_are_recorded_with_their_endpoints(host: Host) -> None:
    recorder = Recorder(host)
    for number, instance in ((0, "run1"), (1, "run1"), (2, "run2"), (3, "run2")):
        recorder.record(snapshot(*step(number), instance))
    recorder.close()
    assert events(host) == [
        ("connect", "192.168.78.2:56563"),
        ("disconnect", "192.168.78.2:56563"),  # the server restarted: that session ended
        ("connect", "192.168.78.2:56563"),
        ("endpoint", "192.168.78.3:56563"),
    ]
    store = HistoryStore.open(host, create=False)
    [peer] = store.peer_ids().values()
    connect, disconnect, reconnect, _roam = store.events(peer)
    store.close()
    handshake, _at = step(0)
    assert connect.at == handshake.latest_handshake
    assert disconnect.seconds is not None and disconnect.at >= connect.at
    assert reconnect.at == step(2)[0].latest_handshake


def test_a_peer_with_handshakes_within_270_s_never_disconnects(host: Host) -> None:
    peer, at = step(1)
    handshake = peer.latest_handshake or 0
    row = advance(None, peer, "run1", int(at)).row
    kinds: list[str] = []
    # WireGuard re-keys every 120 s (later when packets are lost): sampled each 30 s
    # for an hour with handshakes 120 to 200 s apart, it stays one session.
    for second in range(int(at), int(at) + 3600, 30):
        if second - handshake >= 120 + (second // 7) % 80:
            handshake = second
        sample = peer._replace(latest_handshake=handshake, rx_bytes=row.rx + 92,
                               tx_bytes=row.tx + 92)
        result = advance(row, sample, "run1", second)
        kinds += [event.kind for event in result.events]
        row = result.row
    assert kinds == []
    assert row.connected


def test_a_peer_gone_quiet_disconnects_once_270_s_after_its_last_handshake(
        host: Host) -> None:
    peer, at = step(1)
    handshake = peer.latest_handshake or 0
    row = advance(None, peer, "run1", int(at)).row
    found = []
    for second in range(handshake, handshake + 900, 5):
        result = advance(row, peer, "run1", second)
        found += [(second, event) for event in result.events]
        row = result.row
    [(seen_at, event)] = found
    assert event.kind == "disconnect"
    assert seen_at - handshake == CONNECTED_WITHIN + 5  # the first sample past 270 s
    assert event.at <= handshake + 180  # last heard from: within the session's life


def test_a_vanished_peer_disconnects_but_a_read_error_does_not(host: Host) -> None:
    recorder = Recorder(host)
    peer, at = step(1)
    recorder.record(snapshot(peer, at))
    broken = WireGuardSnapshot((), errors=("zcaphs1: socket timed out",), taken_at=at + 5)
    recorder.record(broken, flush=True)
    assert [kind for kind, _ in events(host)] == ["connect"]
    recorder.record(WireGuardSnapshot((), taken_at=at + 10), flush=True)  # interface gone
    recorder.close()
    assert [kind for kind, _ in events(host)] == ["connect", "disconnect"]


def test_two_recorders_at_once_count_each_byte_and_event_once(host: Host) -> None:
    tui, timer = Recorder(host, flush_seconds=0), Recorder(host, flush_seconds=0)
    for number, instance in ((0, "run1"), (1, "run1"), (2, "run2"), (3, "run2")):
        peer, at = step(number)
        tui.record(snapshot(peer, at, instance))
        timer.record(snapshot(peer, at + 0.5, instance))
    tui.close()
    timer.close()
    assert totals(host) == (214708 + 3560, 214620 + 3532)
    assert [kind for kind, _ in events(host)] == ["connect", "disconnect", "connect",
                                                  "endpoint"]


def test_hours_are_kept_per_hour_across_a_period_and_read_back(host: Host) -> None:
    peer, at = step(1)
    start = int(at) // 3600 * 3600
    recorder = Recorder(host, flush_seconds=0)
    rx = tx = 0
    # 100 hours (past a 96-hour period) with 1 MB received each hour, 2 idle hours.
    for hour in range(100):
        if hour not in (40, 41):
            rx += 1_000_000
            tx += 500
        sample = peer._replace(rx_bytes=rx, tx_bytes=tx, latest_handshake=start + hour * 3600)
        recorder.record(snapshot(sample, start + hour * 3600 + 10))
    recorder.record(snapshot(sample, start + 100 * 3600 + 10), flush=True)
    recorder.close()
    store = HistoryStore.open(host, create=False)
    [peer_id] = store.peer_ids().values()
    hours = store.hourly(peer_id, start // 3600, start // 3600 + 99)
    store.close()
    assert len(hours) == 100
    assert [h.rx for h in hours[38:43]] == [999936, 999936, 0, 0, 999936]
    assert hours[0].tx == 500 and hours[99].tx == 500


def test_idle_polls_write_nothing(host: Host) -> None:
    recorder = Recorder(host)
    peer, at = step(1)
    recorder.record(snapshot(peer, at), flush=True)
    wal = store_path(host).with_name("history.sqlite-wal")
    before = (wal.stat().st_size, wal.stat().st_mtime_ns)
    for second in range(1, 30):
        recorder.record(snapshot(peer, at + second))
    assert (wal.stat().st_size, wal.stat().st_mtime_ns) == before
    recorder.close()


# -- the store ----------------------------------------------------------------------


def test_the_store_is_private_and_under_the_root(host: Host) -> None:
    recorder = Recorder(host)
    recorder.record(snapshot(*step(0)), flush=True)
    recorder.close()
    path = host.root / "var/lib/zsn/history.sqlite"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    with sqlite3.connect(path) as db:
        assert db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        assert db.execute("PRAGMA user_version").fetchone()[0] == 1


def test_a_store_from_a_newer_zsn_is_left_alone(host: Host) -> None:
    path = store_path(host)
    path.parent.mkdir()
    with sqlite3.connect(path) as db:
        db.execute("PRAGMA user_version = 7")
    recorded = Recorder(host).record(snapshot(*step(0)))
    assert recorded.history_note is not None
    assert "schema version 7 is newer" in recorded.history_note
    with sqlite3.connect(path) as db:
        assert db.execute("SELECT count(*) FROM sqlite_schema").fetchone()[0] == 0


def test_another_programs_database_is_refused(host: Host) -> None:
    path = store_path(host)
    path.parent.mkdir()
    with sqlite3.connect(path) as db:
        db.execute("CREATE TABLE t (x)")
    with pytest.raises(HistoryError, match="not a zsn history file"):
        HistoryStore.open(host)


def test_a_link_in_place_of_the_store_is_refused(host: Host, tmp_path: Path) -> None:
    path = store_path(host)
    path.parent.mkdir()
    target = tmp_path / "elsewhere.sqlite"
    path.symlink_to(target)
    with pytest.raises(UnsafeStateError, match="history.sqlite: is a symbolic link"):
        HistoryStore.open(host)
    assert not target.exists()


# -- settings and hooks ---------------------------------------------------------------


def test_history_can_be_turned_off(host: Host) -> None:
    settings_file = host.root / "etc/zsn/history.toml"
    settings_file.parent.mkdir(parents=True)
    settings_file.write_text("enabled = false\n")
    recorded = Recorder(host).record(snapshot(*step(0)))
    assert recorded.history_note is None and not recorded.sessions
    assert not store_path(host).exists()


@pytest.mark.parametrize(("text", "message"), [
    ('on_connect = "notify-send hi"\n', "must be a list"),
    ('on_connect = ["notify-send", "hi"]\n', "not an absolute path"),
    ("on_conect = []\n", "unknown setting 'on_conect'"),
    ("enabled = yes\n", "not valid TOML"),
])
def test_bad_settings_are_refused_naming_the_key(tmp_path: Path, text: str,
                                                 message: str) -> None:
    from zsn.errors import ParseError

    with pytest.raises(ParseError, match=message):
        hooks.parse(text, tmp_path / "history.toml")


def test_hooks_run_without_a_shell_with_the_event_in_their_environment(
        host: Host, tmp_path: Path) -> None:
    out = tmp_path / "calls.jsonl"
    script = tmp_path / "hook.py"
    script.write_text("import json, os, sys\n"
                      f"with open({str(out)!r}, 'a') as f:\n"
                      "    f.write(json.dumps([sys.argv[1:], {k: v for k, v in "
                      "os.environ.items() if k.startswith('ZSN_')}]) + '\\n')\n")
    settings_file = host.root / "etc/zsn/history.toml"
    settings_file.parent.mkdir(parents=True)
    settings_file.write_text(f'on_connect = ["{sys.executable}", "{script}", "$(reboot)"]\n'
                             f'on_disconnect = ["{sys.executable}", "{script}", "; ls"]\n')
    recorder = Recorder(host)
    for number, instance in ((0, "run1"), (2, "run2")):
        recorder.record(snapshot(*step(number), instance))
    recorder.hooks.wait()
    recorder.close()
    calls = [json.loads(line) for line in out.read_text().splitlines()]
    assert [(argv, env["ZSN_EVENT"]) for argv, env in calls] == [
        (["$(reboot)"], "connect"), (["; ls"], "disconnect"), (["$(reboot)"], "connect")]
    first = calls[0][1]
    assert first["ZSN_PEER"] == "phone" and first["ZSN_PUBLIC_KEY"] == CLIENT
    assert first["ZSN_ENDPOINT"] == "192.168.78.2:56563"
    assert int(calls[1][1]["ZSN_SESSION_SECONDS"]) >= 0
    assert os.environ.get("ZSN_EVENT") is None


def test_each_peers_hours_are_its_own(host: Host) -> None:
    peer, at = step(1)
    other = peer._replace(public_key="53caef1dc43c4a8b82bdb347f8422d1414e2b0f607495ffe7fed1544e"
                                     "af3b906"[:43] + "=", name="laptop")
    start = int(at) // 3600 * 3600
    recorder = Recorder(host, flush_seconds=0)
    for hour in range(200):  # two periods and more
        seconds = start + hour * 3600 + 10
        interface = snapshot(peer._replace(rx_bytes=hour * 1000, latest_handshake=seconds),
                             seconds).interfaces[0]
        both = interface._replace(peers=(
            interface.peers[0], other._replace(rx_bytes=hour * 7, latest_handshake=seconds)))
        recorder.record(WireGuardSnapshot((both,), taken_at=seconds))
    recorder.close()
    store = HistoryStore.open(host, create=False)
    ids = store.peer_ids()
    first = start // 3600
    mine = store.hourly(ids[next(k for k in ids if k.public_key == peer.public_key)],
                        first + 1, first + 199)
    theirs = store.hourly(ids[next(k for k in ids if k.public_key != peer.public_key)],
                          first + 1, first + 199)
    store.close()
    assert {h.rx for h in mine} == {1000}
    assert {h.rx for h in theirs} == {7}


# -- reading it back: peer log, the export ----------------------------------------------


def recorded_series(host: Host) -> WireGuardSnapshot:
    """The captured series recorded, as the TUI would; the last snapshot."""
    recorder = Recorder(host)
    last = snapshot(*step(0))
    for number, instance in ((0, "run1"), (1, "run1"), (2, "run2"), (3, "run2")):
        last = snapshot(*step(number), instance)
        recorder.record(last)
    recorder.close()
    return last


def run_zsn(host: Host, *args: str) -> tuple[int, str, str]:
    import subprocess

    result = subprocess.run([sys.executable, "-m", "zsn", "--root", str(host.root), *args],
                            capture_output=True, text=True, timeout=60, check=False,
                            cwd=Path(__file__).resolve().parents[2])
    return result.returncode, result.stdout, result.stderr


def test_peer_log_tells_the_session_totals_and_events(host: Host) -> None:
    recorded_series(host)
    code, out, err = run_zsn(host, "peer", "log", "zcaphs1", "phone")
    assert code == 0, err
    assert out.startswith("phone on zcaphs1\n")
    assert "from 192.168.78.3:56563" in out  # where it was last seen
    assert f"({214708 + 3560} B)" in out and f"({214620 + 3532} B)" in out
    assert [line.split()[2] for line in out.splitlines() if line.startswith("  20")] == [
        "connect", "disconnect", "connect", "endpoint"]
    code, out, err = run_zsn(host, "peer", "log", "zcaphs1", CLIENT, "--json", "--hours", "2")
    assert code == 0, err
    data = json.loads(out)
    assert (data["name"], data["total_rx"], data["total_tx"]) == (
        "phone", 214708 + 3560, 214620 + 3532)
    assert len(data["hourly"]) == 2
    assert [e["kind"] for e in data["events"]] == ["connect", "disconnect", "connect",
                                                  "endpoint"]


def test_peer_log_of_an_unknown_peer_is_refused_and_without_history_is_an_error(
        host: Host) -> None:
    code, _out, err = run_zsn(host, "peer", "log", "zcaphs1", "phone")
    assert code == 1 and "no history yet" in err
    recorded_series(host)
    code, _out, err = run_zsn(host, "peer", "log", "zcaphs1", "tablet")
    assert code == 2 and "no history of a peer 'tablet' on zcaphs1" in err


def test_the_export_has_each_peers_history_and_prometheus_whether_connected(
        host: Host, monkeypatch: pytest.MonkeyPatch) -> None:
    from zsn.exporter import prometheus
    from zsn.wireguard import export

    last = recorded_series(host)
    monkeypatch.setattr(export, "read_wireguard", lambda host: last)
    monkeypatch.setattr(wireguard_lint, "lint", lambda host: [])  # as the export calls it
    data = export.collect(host)
    [peer] = data["interfaces"][0]["peers"]
    history = peer["history"]
    assert (history["total_rx"], history["total_tx"]) == (214708 + 3560, 214620 + 3532)
    assert history["connected"] and history["last_endpoint"] == "192.168.78.3:56563"
    assert len(history["hourly"]) == 24 and sum(h[1] for h in history["hourly"]) > 0
    assert [e["kind"] for e in history["events"]] == ["connect", "disconnect", "connect",
                                                     "endpoint"]
    text = prometheus.render(export.prometheus(data))
    assert 'zsn_wireguard_peer_connected{interface="zcaphs1"' in text
    # Prometheus keeps the live counters: the device's, not the history's totals.
    assert f"wireguard_received_bytes_total{{interface=\"zcaphs1\",public_key=\"" \
           f"{CLIENT}\",allowed_ips=\"10.78.0.2/32\",friendly_name=\"phone\"}} 3560" in text


def test_the_export_reads_the_store_but_never_writes_it(
        host: Host, monkeypatch: pytest.MonkeyPatch) -> None:
    from zsn.wireguard import export

    last = recorded_series(host)
    path = store_path(host)
    before = {p.name: p.read_bytes() for p in path.parent.iterdir()}
    later = last._replace(taken_at=last.taken_at + 7200)
    monkeypatch.setattr(export, "read_wireguard", lambda host: later)
    export.collect(host)
    assert {p.name: p.read_bytes() for p in path.parent.iterdir()} == before


def test_the_timer_units_are_valid_systemd_units(tmp_path: Path) -> None:
    import subprocess

    from tests.needs import needs_tools

    needs_tools("systemd-analyze")
    contrib = Path(__file__).resolve().parents[2] / "contrib" / "systemd"
    for name in ("zsn-history.service", "zsn-history.timer"):
        text = (contrib / name).read_text()
        # verify wants the program to exist: the one that runs the tests.
        text = text.replace("/usr/local/bin/zsn wg record", f"{sys.executable} -m zsn wg record")
        (tmp_path / name).write_text(text)
    assert "ExecStart=/usr/local/bin/zsn wg record" in (contrib / "zsn-history.service").read_text()
    result = subprocess.run(["systemd-analyze", "verify", "--man=no",
                             str(tmp_path / "zsn-history.timer"),
                             str(tmp_path / "zsn-history.service")],
                            capture_output=True, text=True, timeout=60, check=False)
    assert result.returncode == 0, result.stderr


def test_zsn_serves_per_poll_hook_records_and_takes_expired_peers_off(host: Host) -> None:
    from zsn.domains import domain, load
    from zsn.wireguard.expiry import format_stored

    hook = load(domain("wireguard").on_poll)
    for number, instance in ((0, "run1"), (1, "run1"), (2, "run2"), (3, "run2")):
        hook(host, snapshot(*step(number), instance))
    from zsn.wireguard import recorder

    recorder._LONG_RUNNING.pop(host).close()  # what zsn serve's exit would leave
    assert totals(host) == (214708 + 3560, 214620 + 3532)
    # An expiry the read found due: the peer is disabled in its config.
    config = host.root / "etc/wireguard/zcaphs1.conf"
    config.parent.mkdir(parents=True, mode=0o700)
    peer, at = step(3)
    config.write_text("[Interface]\nPrivateKey = 0EERySwwME/UXHGdbYYo2lZbGszSZV83hLjwWXQQYEI=\n"
                      f"ListenPort = 51931\n\n# phone\n[Peer]\n# Expires = "
                      f"{format_stored(int(at) - 60)}\nPublicKey = {CLIENT}\n"
                      "AllowedIPs = 10.78.0.2/32\n")
    expiring = snapshot(peer, at, "run2")
    interface = expiring.interfaces[0]._replace(expiries={CLIENT: int(at) - 60})
    hook(host, expiring._replace(interfaces=(interface,)))
    recorder._LONG_RUNNING.pop(host).close()
    assert "#[disabled] [Peer]" in config.read_text()
    assert "expire" in [kind for kind, _ in events(host)]


# -- a damaged store ---------------------------------------------------------------------


def damage(host: Host, table: str) -> None:
    """Overwrite the page holding `table`'s rows with noise, as a disk or a crash of
    the file system might (the write-ahead log checkpointed first, so the page is in
    the file)."""
    path = store_path(host)
    db = sqlite3.connect(path)
    try:
        db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        [(page,)] = db.execute("SELECT rootpage FROM sqlite_schema WHERE name = ?", (table,))
        [(size,)] = db.execute("PRAGMA page_size")
    finally:
        db.close()
    with path.open("r+b") as handle:
        handle.seek((page - 1) * size)
        handle.write(bytes([0xA5]) * size)


@pytest.mark.parametrize("table", ["peers", "live", "events"])
def test_a_damaged_store_is_named_with_the_command_that_sets_it_aside(
        host: Host, table: str) -> None:
    recorded_series(host)
    damage(host, table)
    for args in (("wg", "record"), ("peer", "log", "zcaphs1", "phone")):
        code, _out, err = run_zsn(host, *args)
        assert "Traceback" not in err
        if code == 0:  # wg record reads only what its poll needs (here: no interface)
            continue
        assert code == 1 and err.count("\n") == 1, err
        assert f"{store_path(host)}: damaged (" in err
        assert "set it aside with zsn wg record --reset-store" in err
    code, _out, err = run_zsn(host, "wg", "record", "--reset-store")
    assert code == 0, err
    [aside] = store_path(host).parent.glob("history.sqlite.damaged-*")
    assert "set aside as" in err and str(aside) in err
    code, _out, err = run_zsn(host, "peer", "log", "zcaphs1", "phone")
    assert code == 2 and "has not recorded it" in err  # a new store, empty


@pytest.mark.parametrize(("statement", "column"), [
    ("UPDATE peers SET first_seen = 'yesterday'", "first_seen: expected int, got str"),
    ("UPDATE events SET kind = x'00ff'", "kind: expected str, got bytes"),
    ("UPDATE live SET total_rx = 1.5", "total_rx: expected int, got float"),
    ("UPDATE live SET endpoint = x'01'", "endpoint: expected str | null, got bytes"),
])
def test_a_value_of_the_wrong_type_in_the_store_names_its_column(
        host: Host, statement: str, column: str) -> None:
    recorded_series(host)
    db = sqlite3.connect(store_path(host))
    with db:
        db.execute(statement)
    db.close()
    code, _out, err = run_zsn(host, "peer", "log", "zcaphs1", "phone")
    assert code == 1 and err.count("\n") == 1, err
    assert f"damaged ({column})" in err and "--reset-store" in err


def test_serve_keeps_serving_live_wireguard_metrics_while_the_history_is_unreadable(
        host: Host, monkeypatch: pytest.MonkeyPatch) -> None:
    from zsn.domains import domain
    from zsn.exporter.collectors import Collector
    from zsn.wireguard import export
    from zsn.wireguard import recorder as recorder_module

    last = recorded_series(host)
    damage(host, "live")
    monkeypatch.setattr(export, "read_wireguard", lambda host, cache=None: last)
    monkeypatch.setattr(wireguard_lint, "lint", lambda host: [])
    collector = Collector(domain("wireguard"), host, forced=True)
    try:
        reading = collector.refresh().result(timeout=60)
        # the per-poll hook (the recorder) ran after the reading, and failed in words
        recorder = wait_for_recorder(recorder_module, host)
    finally:
        collector.close()
        recorder_module._LONG_RUNNING.pop(host, None)
    text = reading.metrics.decode()
    assert f'wireguard_received_bytes_total{{interface="zcaphs1",public_key="{CLIENT}"' in text
    [error] = reading.errors
    assert error.startswith("history: ") and "damaged (" in error and "--reset-store" in error
    assert recorder.note is not None and "--reset-store" in recorder.note


def wait_for_recorder(module: object, host: Host) -> Recorder:
    from tests.lab.netns import wait_for

    recorders: dict[Host, Recorder] = module._LONG_RUNNING  # type: ignore[attr-defined]
    wait_for(lambda: host in recorders and recorders[host].note is not None, 30,
             "the per-poll hook's recording")
    return recorders[host]
