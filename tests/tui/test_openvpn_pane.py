"""The OpenVPN pane at 80x24, fed with snapshots built from real captures, keys only."""

from __future__ import annotations

import dataclasses
import os
import shutil
import stat
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from textual.pilot import Pilot
from textual.widgets import Input, OptionList, RichLog

from tests.pilot import row_texts, screen_as, settle, wait_for_rows, wait_until
from tests.tui.conftest import SnapCompare
from zsn.errors import ZsnError
from zsn.format import human_rate
from zsn.lint import Finding
from zsn.openvpn import management
from zsn.openvpn.config import parse
from zsn.openvpn.connections import ConfigFile, Connection, Kind, config_path, summarize
from zsn.openvpn.live import OpenVpnSnapshot
from zsn.system.dbus import JobResult, UnitState
from zsn.system.host import Host
from zsn.system.journal import JournalLine
from zsn.tui.app import PaneSwitcher, ZsnApp
from zsn.tui.panes.openvpn import OpenVpnPane
from zsn.tui.screens.ask import ChooseScreen
from zsn.tui.screens.journal import JournalScreen
from zsn.tui.screens.plan import PlanScreen
from zsn.tui.widgets.table import LiveTable

FIXTURES = Path(__file__).parent.parent / "fixtures" / "openvpn"
NOW = 1795367600.0


def live_from(transcript: str) -> management.LiveState:
    lines = (FIXTURES / transcript).read_text().splitlines()[1:]
    cut = lines.index("END") + 1
    name, desc, since, ipv4, remote, rport, ipv6 = management.parse_state(lines[:cut])
    bytes_in, bytes_out, clients = management.parse_status(lines[cut:])
    return management.LiveState(name, desc, since, ipv4, ipv6, remote, rport, bytes_in,
                                bytes_out, clients)


def unit(name: str, active: str, sub: str, enabled: str, pid: int) -> UnitState:
    return UnitState(name, "loaded", active, sub, enabled, pid,
                     int((NOW - 3725) * 1e6) if active == "active" else 0, 0, "success")


def connection(kind: Kind, name: str, sample: str, state: UnitState | None,
               live: management.LiveState | None, errors: tuple[str, ...] = ()) -> Connection:
    config = ConfigFile(kind, name, config_path(kind, name))
    summary = summarize(parse((FIXTURES / "configs" / sample).read_text()), Host(),
                        config.working_dir)
    return Connection(config, summary, state, live, errors)


def fixed_snapshot() -> OpenVpnSnapshot:
    office = connection("client", "office", "client.conf",
                        unit("openvpn-client@office.service", "active", "running", "enabled", 412),
                        live_from("mgmt-client-connected.txt"))
    backup = connection("client", "backup", "client.conf",
                        unit("openvpn-client@backup.service", "inactive", "dead", "disabled", 0),
                        None)
    home = connection("server", "home", "server.conf",
                      unit("openvpn-server@home.service", "active", "running", "enabled", 388),
                      live_from("mgmt-server.txt"))
    findings = (Finding("OVPN004", "info", "openvpn-client@office.service",
                        "DNS servers the server pushes are ignored (no up hook)",
                        "install zsn's DNS hook (key h in the OpenVPN pane)"),)
    return OpenVpnSnapshot((office, backup, home), findings, 100.0)


@pytest.fixture
def ovpn_app(monkeypatch: pytest.MonkeyPatch) -> ZsnApp:
    snapshot = fixed_snapshot()
    monkeypatch.setattr("zsn.tui.panes.openvpn.read_openvpn", lambda host: snapshot)
    monkeypatch.setattr("zsn.tui.panes.openvpn.now", lambda: NOW)
    return ZsnApp(Host(Path("/srv/zsn-test-root")), theme="zsn-night", refresh=3600)


async def open_tab(pilot: Pilot[int]) -> None:
    await pilot.pause()  # the app has mounted, as when a user switches tabs
    pilot.app.query_one("#panes", PaneSwitcher).active = "tab-openvpn"
    await pilot.pause()  # the pane is mounted when its tab is first shown
    await wait_for_rows(pilot, "#ovpn-connections")


def test_snapshot_80x24(snap_compare: SnapCompare, ovpn_app: ZsnApp) -> None:
    assert snap_compare(ovpn_app, terminal_size=(80, 24), run_before=open_tab)


def test_snapshot_120x40(snap_compare: SnapCompare, ovpn_app: ZsnApp) -> None:
    assert snap_compare(ovpn_app, terminal_size=(120, 40), run_before=open_tab)


@pytest.fixture
def fixed_root() -> Iterator[Path]:
    """A root at a fixed path: the plan shows paths, and snapshots must not vary."""
    root = Path(tempfile.gettempdir()) / "zov-snapshot-root"
    shutil.rmtree(root, ignore_errors=True)
    (root / "etc/openvpn/client").mkdir(parents=True)
    try:
        yield root
    finally:
        shutil.rmtree(root, ignore_errors=True)


def test_snapshot_hook_plan_80x24(snap_compare: SnapCompare, monkeypatch: pytest.MonkeyPatch,
                                  fixed_root: Path) -> None:
    (fixed_root / "etc/openvpn/client/office.conf").write_text(
        (FIXTURES / "configs/client.conf").read_text())
    snapshot = fixed_snapshot()
    monkeypatch.setattr("zsn.tui.panes.openvpn.read_openvpn", lambda host: snapshot)
    monkeypatch.setattr("zsn.tui.panes.openvpn.now", lambda: NOW)
    app = ZsnApp(Host(fixed_root), theme="zsn-night", refresh=3600)

    async def open_plan(pilot: Pilot[int]) -> None:
        await open_tab(pilot)
        await pilot.press("h")  # split or all DNS: the first choice is the config's own
        await pilot.pause()
        await pilot.press("enter")
        await pilot.pause()

    assert snap_compare(app, terminal_size=(80, 24), run_before=open_plan)


async def test_rows_show_unit_and_tunnel_state(ovpn_app: ZsnApp) -> None:
    async with ovpn_app.run_test(size=(80, 24)) as pilot:
        await open_tab(pilot)
        table = ovpn_app.query_one("#ovpn-connections", LiveTable)
        rows = row_texts(table)
        assert rows[0][:3] == ["office", "active/running", "CONNECTED"]
        assert rows[1][:3] == ["backup", "inactive/dead", "-"]
        assert rows[2][:3] == ["home", "active/running", "CONNECTED"]
        assert [row[6] for row in rows] == ["enabled", "disabled", "enabled"]
        details = str(ovpn_app.query_one("#ovpn-details").render())
        assert "PID 412, active for 1h 02m" in details and "OVPN004" in details
        await pilot.press("down", "down")
        assert "1 clients" in str(ovpn_app.query_one("#ovpn-details").render())


async def test_start_reports_the_job_result(ovpn_app: ZsnApp,
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[tuple[str, str]] = []

    def control(host: Host, name: str, verb: str) -> JobResult:
        calls.append((name, verb))
        return JobResult(name, verb, "failed")

    monkeypatch.setattr("zsn.openvpn.actions.control", control)
    # The fixed snapshot's configs are not on disk; the parse check has its own test.
    monkeypatch.setattr("zsn.openvpn.actions.check_config", lambda host, config: None)
    async with ovpn_app.run_test(size=(80, 24)) as pilot:
        await open_tab(pilot)
        await pilot.press("down", "s")
        await wait_until(pilot, lambda: any("start openvpn-client@backup.service: failed"
                                            in n.message for n in ovpn_app._notifications),
                         "the failure")
        assert calls == [("openvpn-client@backup.service", "start")]


async def test_refused_call_is_shown_not_raised(ovpn_app: ZsnApp,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    def control(host: Host, name: str, verb: str) -> JobResult:
        raise ZsnError(f"stop {name}: access denied (root needed?)")

    monkeypatch.setattr("zsn.openvpn.actions.control", control)
    async with ovpn_app.run_test(size=(80, 24)) as pilot:
        await open_tab(pilot)
        await pilot.press("x")
        await wait_until(pilot, lambda: any("access denied" in n.message
                                            for n in ovpn_app._notifications), "the refusal")


async def test_log_key_opens_the_journal(ovpn_app: ZsnApp,
                                         monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("zsn.tui.screens.journal.unit_lines", lambda host, unit, lines: [])
    async with ovpn_app.run_test(size=(80, 24)) as pilot:
        await open_tab(pilot)
        await pilot.press("l")
        await pilot.pause()
        assert isinstance(ovpn_app.screen, JournalScreen)
        assert ovpn_app.screen.unit == "openvpn-client@office.service"
        await pilot.press("escape")
        assert not isinstance(ovpn_app.screen, JournalScreen)


async def test_import_by_keyboard_writes_a_private_config(tmp_path: Path) -> None:
    root = tmp_path / "root"
    (root / "etc/openvpn/client").mkdir(parents=True)
    profile = tmp_path / "office.ovpn"
    profile.write_text("client\nremote vpn.example.net 1194\n<key>\nPRIVATE\n</key>\n")
    app = ZsnApp(Host(root), theme="zsn-night", refresh=3600)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        app.query_one("#panes", PaneSwitcher).active = "tab-openvpn"
        await pilot.pause()
        await pilot.press("i")
        await pilot.pause()
        app.screen.query_one("#import-path", Input).value = str(profile)
        await pilot.press("enter")  # the name is the file's
        await wait_until(pilot, lambda: isinstance(app.screen, PlanScreen), "the plan")
        assert "as openvpn-client@office" in screen_as(app, PlanScreen).plan_title
        assert "PRIVATE" not in screen_as(app, PlanScreen).text
        await pilot.press("y")
        await settle(pilot)
        await pilot.pause()
    target = root / "etc/openvpn/client/office.conf"
    assert target.read_text() == profile.read_text()
    assert stat.S_IMODE(os.stat(target).st_mode) == 0o600


async def test_hook_plan_cancelled_writes_nothing(tmp_path: Path) -> None:
    (tmp_path / "etc/openvpn/client").mkdir(parents=True)
    config = tmp_path / "etc/openvpn/client/office.conf"
    config.write_text("client\nremote vpn.example.net 1194\n")
    app = ZsnApp(Host(tmp_path), theme="zsn-night", refresh=3600)
    async with app.run_test(size=(80, 24)) as pilot:
        await open_tab(pilot)
        await pilot.press("h")
        await pilot.pause()
        await pilot.press("enter")
        await pilot.pause()
        assert isinstance(app.screen, PlanScreen)
        assert "+script-security 2" in app.screen.text
        await pilot.press("n")
        await pilot.pause()
    assert config.read_text() == "client\nremote vpn.example.net 1194\n"
    assert not (tmp_path / "etc/openvpn/zsn-resolved-hook").exists()


async def test_start_refuses_a_config_that_does_not_parse(tmp_path: Path,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "etc/openvpn/client").mkdir(parents=True)
    (tmp_path / "etc/openvpn/client/bad.conf").write_text("client\n<ca>\n")
    calls: list[str] = []
    monkeypatch.setattr("zsn.openvpn.actions.control",
                        lambda host, name, verb: calls.append(name))
    app = ZsnApp(Host(tmp_path), theme="zsn-night", refresh=3600)
    async with app.run_test(size=(80, 24)) as pilot:
        await open_tab(pilot)
        await pilot.press("s")
        # On the notice, not on the workers once the key is pressed: Textual's `press`
        # returns when the process looks idle (its CPU time stops growing: so does a
        # process a busy machine starves) and the messages queued then are handled;
        # zsn hands a key on through several queues, so it may not have started the
        # worker yet, and waiting for the workers waited for none.
        await wait_until(pilot, lambda: any("<ca> block is never closed" in n.message
                                            for n in app._notifications), "the refusal")
        assert calls == []


async def test_enable_and_disable_keys(ovpn_app: ZsnApp, monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[tuple[str, bool]] = []

    def set_enabled(host: Host, name: str, enabled: bool) -> list[object]:
        calls.append((name, enabled))
        return [object()]

    monkeypatch.setattr("zsn.openvpn.actions.set_enabled", set_enabled)
    async with ovpn_app.run_test(size=(80, 24)) as pilot:
        await open_tab(pilot)
        await pilot.press("down", "e")
        await wait_until(pilot, lambda: len(calls) == 1, "enabled")
        await pilot.press("d")  # backup is disabled already: nothing to do, said so
        await wait_until(pilot, lambda: any("disabled at boot already" in n.message
                                            for n in ovpn_app._notifications), "why not")
        await pilot.press("up", "d")  # office is enabled
        await wait_until(pilot, lambda: len(calls) == 2, "disabled")
        assert calls == [("openvpn-client@backup.service", True),
                         ("openvpn-client@office.service", False)]
        await wait_until(pilot, lambda: any(
            n.message == "enable openvpn-client@backup.service at boot: done"
            for n in ovpn_app._notifications), "the notice")


async def test_hook_key_offers_route_all_and_keeps_the_current_choice(tmp_path: Path) -> None:
    (tmp_path / "etc/openvpn/client").mkdir(parents=True)
    config = tmp_path / "etc/openvpn/client/office.conf"
    config.write_text("client\nremote vpn.example.net 1194\n")
    app = ZsnApp(Host(tmp_path), theme="zsn-night", refresh=3600)

    async def choose(pilot: Pilot[int], keys: tuple[str, ...]) -> list[str]:
        await pilot.press("h")
        await pilot.pause()
        assert isinstance(app.screen, ChooseScreen)
        labels = [str(o.prompt) for o in app.screen.query_one(OptionList).options]
        await pilot.press(*keys)
        await pilot.pause()
        assert isinstance(app.screen, PlanScreen)
        await pilot.press("y")
        await settle(pilot)
        await pilot.pause()
        return labels

    async with app.run_test(size=(80, 24)) as pilot:
        await open_tab(pilot)
        labels = await choose(pilot, ("down", "enter"))
        assert labels[0].startswith("Split DNS") and "(now)" not in " ".join(labels)
        assert 'up "/etc/openvpn/zsn-resolved-hook --route-all-dns"' in config.read_text()
        # Asked again, route-all comes first as the current choice; enter keeps it.
        labels = await choose(pilot, ("enter",))
        assert labels[0] == "All DNS through the tunnel (~.) (now)"
        assert "--route-all-dns" in config.read_text()
        labels = await choose(pilot, ("down", "enter"))
        assert "up /etc/openvpn/zsn-resolved-hook\n" in config.read_text()


async def test_rates_come_from_two_readings(monkeypatch: pytest.MonkeyPatch) -> None:
    first = fixed_snapshot()
    office = first.connections[0]
    assert office.live is not None and office.live.bytes_in is not None
    assert office.live.bytes_out is not None
    later_live = dataclasses.replace(office.live, bytes_in=office.live.bytes_in + 4096,
                                     bytes_out=office.live.bytes_out + 2048)
    second = dataclasses.replace(
        first, connections=(dataclasses.replace(office, live=later_live),
                            *first.connections[1:]),
        taken_at=first.taken_at + 2.0)
    readings = iter([first, second])
    monkeypatch.setattr("zsn.tui.panes.openvpn.read_openvpn",
                        lambda host: next(readings, second))
    monkeypatch.setattr("zsn.tui.panes.openvpn.now", lambda: NOW)
    app = ZsnApp(Host(Path("/srv/zsn-test-root")), theme="zsn-night", refresh=3600)
    async with app.run_test(size=(80, 24)) as pilot:
        await open_tab(pilot)
        table = app.query_one("#ovpn-connections", LiveTable)
        assert table.cell("openvpn-client@office.service", "rx_rate") == "-"
        await pilot.press("r")
        await settle(pilot)
        await pilot.pause()
        assert table.cell("openvpn-client@office.service", "rx_rate") == human_rate(2048.0)
        assert table.cell("openvpn-client@office.service", "tx_rate") == human_rate(1024.0)


async def test_journal_shows_lines_and_a_read_error(ovpn_app: ZsnApp,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    answers: list[object] = [
        [JournalLine(int(NOW * 1e6), 3, "openvpn", "Exiting due to fatal error"),
         JournalLine(int(NOW * 1e6), 5, "zsn-resolved-hook",
                     "zsn-resolved-hook: tun0: DNS settings reverted")],
        ZsnError("journalctl: not found"),
    ]

    def unit_lines(host: Host, unit: str, lines: int) -> object:
        answer = answers.pop(0)
        if isinstance(answer, ZsnError):
            raise answer
        return answer

    monkeypatch.setattr("zsn.tui.screens.journal.unit_lines", unit_lines)
    async with ovpn_app.run_test(size=(80, 24)) as pilot:
        await open_tab(pilot)
        await pilot.press("l")
        await settle(pilot)
        await pilot.pause()
        log = ovpn_app.screen.query_one("#journal", RichLog)
        text = "\n".join(line.text for line in log.lines)
        assert "Exiting due to fatal error" in text and "DNS settings reverted" in text
        await pilot.press("r")
        await settle(pilot)
        await pilot.pause()
        text = "\n".join(line.text for line in log.lines)
        assert "Cannot read the journal: journalctl: not found" in text


async def test_details_of_a_failed_unit_give_its_exit_status(
        monkeypatch: pytest.MonkeyPatch) -> None:
    snapshot = fixed_snapshot()
    backup = snapshot.connections[1]
    assert backup.unit is not None
    failed = dataclasses.replace(backup, unit=dataclasses.replace(
        backup.unit, active_state="failed", sub_state="failed", result="exit-code",
        exec_main_status=1))
    snapshot = dataclasses.replace(snapshot, connections=(snapshot.connections[0], failed,
                                                          snapshot.connections[2]))
    monkeypatch.setattr("zsn.tui.panes.openvpn.read_openvpn", lambda host: snapshot)
    app = ZsnApp(Host(Path("/srv/zsn-test-root")), theme="zsn-night", refresh=3600)
    async with app.run_test(size=(80, 24)) as pilot:
        await open_tab(pilot)
        await pilot.press("down")
        await pilot.pause()
        details = str(app.query_one("#ovpn-details").render())
        assert "failed, last result exit-code (exit status 1)" in details


async def test_connections_are_never_cut_and_an_idle_refresh_writes_nothing(
        ovpn_app: ZsnApp) -> None:
    from tests.pilot import TerminalOutput, wait_until_quiet
    from tests.tui.test_wireguard_pane import shown_tokens_are_whole, table_lines
    from zsn.openvpn.view import COLUMNS

    async with ovpn_app.run_test(size=(80, 24)) as pilot:
        await open_tab(pilot)
        table = ovpn_app.query_one("#ovpn-connections", LiveTable)
        shorts = tuple(value.short for row in table.rows for value in row.cells
                       if not isinstance(value, str) and value.short)
        labels = [c.label for c in COLUMNS] + [c.short_label or "" for c in COLUMNS]
        bad = shown_tokens_are_whole(table_lines(ovpn_app, "Connections"), row_texts(table),
                                     labels, shorts)
        assert bad == []
        assert "active/running" in " ".join(table_lines(ovpn_app, "Connections"))
        await wait_until_quiet(pilot)
        output = TerminalOutput(ovpn_app)
        for _ in range(2):
            ovpn_app.query_one("#openvpn", OpenVpnPane).poll(force=True)
            await settle(pilot)
            await pilot.pause()
        assert output.bytes == 0


async def test_long_journal_lines_wrap_and_keep_every_word(ovpn_app: ZsnApp,
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    from tests.pilot import screen_text

    message = ("TLS Error: TLS key negotiation failed to occur within 60 seconds (check your "
               "network connectivity) and the final words stay visible")
    monkeypatch.setattr("zsn.tui.screens.journal.unit_lines", lambda host, unit, lines: [
        JournalLine(int(NOW * 1e6), 3, "openvpn", message)])
    async with ovpn_app.run_test(size=(80, 24)) as pilot:
        await open_tab(pilot)
        await pilot.press("l")
        await settle(pilot)
        await pilot.pause()
        shown = " ".join(" ".join(line.strip("│ ▁▔").split()) for line in screen_text(ovpn_app))
        assert message in shown  # every word, none cut at the right edge


async def test_with_no_connection_only_import_is_offered(tmp_path: Path) -> None:
    """No config under /etc/openvpn: every key that acts on a connection is off the
    footer (pressed, it says why); importing a profile is what helps."""
    from zsn.tui.widgets.footer import KeyBar

    app = ZsnApp(Host(tmp_path), theme="zsn-night", refresh=3600)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        app.query_one("#panes", PaneSwitcher).active = "tab-openvpn"
        await wait_until(pilot, lambda: app.query_one(OpenVpnPane).snapshot_count,
                         "the first read")
        await wait_until(pilot, lambda: app.query_one(OpenVpnPane).has_focus_within,
                         "the pane has the keyboard")
        bar = app.query_one(KeyBar)
        await wait_until(pilot, lambda: bar.shown_keys == ["i", "q", "question_mark"],
                         "only import offered")
        await pilot.press("s")
        await wait_until(pilot, lambda: any("No OpenVPN connections here" in n.message
                                            for n in app._notifications), "why not")
        assert not isinstance(app.screen, PlanScreen)


async def test_the_footer_offers_what_the_unit_can_do(ovpn_app: ZsnApp) -> None:
    """Running and enabled: stop, not start; stopped and disabled: start, not stop."""
    from zsn.tui.widgets.footer import KeyBar

    async with ovpn_app.run_test(size=(80, 24)) as pilot:
        await open_tab(pilot)
        bar = ovpn_app.query_one(KeyBar)
        await wait_until(pilot, lambda: bar.shown_keys[:2] == ["x", "R"], "office: stop")
        assert "s" not in bar.shown_keys and "e" not in bar.shown_keys
        await pilot.press("down")  # backup: inactive, disabled
        await wait_until(pilot, lambda: bar.shown_keys[:2] == ["s", "R"], "backup: start")
        assert "x" not in bar.shown_keys and "d" not in bar.shown_keys
