"""The ZFS pane's snapshots and transfers views, the send form, stopping a send and the
probe screen: snapshots from the kernel lab's capture, transfer records as zsn zfs send
writes them."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path
from typing import Any

import pytest
from textual.widgets import ContentSwitcher, Input, RichLog

from tests.pilot import wait_until
from tests.tui.test_zfs_pane import NOW, fixed_snapshot, make_app, rows, select_tank
from tests.unit.zfs.conftest import FIXTURES, read
from zsn.system.host import Host
from zsn.tui.app import ZsnApp
from zsn.tui.panes.zfs_replication import ProbeScreen, SendForm, send_argv
from zsn.tui.screens.plan import PlanScreen
from zsn.zfs import snapshots, transfers
from zsn.zfs.probe import Stage
from zsn.zfs.send import SendRequest, Tree, decide, parse_properties
from zsn.zfs.view import TRANSFER_COLUMNS

SEND = FIXTURES / "zfs-send-lab"


def tank_snapshots() -> list[snapshots.Snapshot]:
    """The lab's src/data snapshots, as tank/db's (the pane's fixture pool)."""
    text = read(SEND / "zfs-list-snapshots-dataset.out").replace("src/data", "tank/db")
    return snapshots.parse(text)


def by_column(row: list[str]) -> dict[str, str]:
    """A transfers row's cells by column key."""
    return dict(zip((column.key for column in TRANSFER_COLUMNS), row, strict=True))


def running_record(pid: int) -> dict[str, Any]:
    return {"source": "tank/db", "target": "root@nas:backup/db", "via": "ssh",
            "started": NOW - 65, "bytes": 412 * 1024 ** 2, "estimate": 1024 ** 3,
            "rate": 92.1 * 1024 ** 2, "eta_seconds": 6.6, "resumed": True,
            "pid": pid, "process_start": transfers.process_start(pid), "state": "running"}


@pytest.fixture
def app_with_records(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> ZsnApp:
    app = make_app(monkeypatch, fixed_snapshot())
    app.host = Host(tmp_path)
    monkeypatch.setattr("zsn.tui.panes.zfs.read_transfers",
                        lambda host: transfers.read_transfers(Host(tmp_path)))
    monkeypatch.setattr("zsn.zfs.snapshots.read", lambda run, zfs, dataset=None,
                        recursive=False: [s for s in tank_snapshots() if s.dataset == dataset])
    monkeypatch.setattr("zsn.tui.panes.zfs.require_program", lambda name: "/usr/sbin/zfs")
    last = transfers.Recorder(Host(tmp_path), {"source": "tank/media",
                                               "target": "tank2/media", "via": "local"},
                              clock=lambda: NOW - 3600)
    last.finish(state="ok", bytes=3 * 1024 ** 3, seconds=61.2, rate=52_000_000,
                resumed=False, finished=NOW - 3600)
    return app


async def test_the_snapshots_of_the_highlighted_dataset(app_with_records: ZsnApp) -> None:
    async with app_with_records.run_test(size=(80, 24)) as pilot:
        await select_tank(pilot)
        await pilot.press("d", "down", "n")
        await wait_until(pilot, lambda: len(rows(app_with_records, "#zfs-snapshots")) == 3,
                         "tank/db's snapshots")
        assert app_with_records.query_one("#zfs-lower", ContentSwitcher).current == \
            "zfs-snapshots"
        shown = rows(app_with_records, "#zfs-snapshots")
        assert [r[0] for r in shown] == ["@c", "@b", "@a"]  # newest first
        assert shown[-1][2:] == ["64.0 KiB", "8.1 MiB", "2"]


async def test_a_snapshot_taken_from_the_pane(app_with_records: ZsnApp,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    from zsn.plan import LiveStep, Plan

    taken: list[str] = []

    def plan(host: Host, spec: str, recursive: bool = False) -> Plan:
        return Plan(f"snapshot {spec}", [LiveStep(f"snapshot {spec}",
                                                  lambda: taken.append(spec))])

    monkeypatch.setattr("zsn.zfs.snapshots.plan_snapshot", plan)
    async with app_with_records.run_test(size=(80, 24)) as pilot:
        await select_tank(pilot)
        await pilot.press("d", "down", "N")
        await wait_until(pilot, lambda: bool(app_with_records.screen.query("#ask-input")),
                         "the name")
        field = app_with_records.screen.query_one("#ask-input", Input)
        assert field.value.startswith("zsn-")
        field.value = "before-upgrade"
        await pilot.press("enter")
        await wait_until(pilot, lambda: isinstance(app_with_records.screen, PlanScreen),
                         "the plan")
        await pilot.press("y")
        await wait_until(pilot, lambda: taken == ["tank/db@before-upgrade"], "applied")


def test_snapshot_transfers_80x24(snap_compare, app_with_records: ZsnApp,  # type: ignore[no-untyped-def]
                                  monkeypatch: pytest.MonkeyPatch) -> None:
    sleeper = subprocess.Popen(["sleep", "600"])
    record = running_record(sleeper.pid)
    monkeypatch.setattr("zsn.tui.panes.zfs.read_transfers", lambda host: {
        "running": [record], "last": transfers.read_transfers(host)["last"]})

    async def show_transfers(pilot) -> None:  # type: ignore[no-untyped-def]
        await select_tank(pilot)
        await pilot.press("t")
        await wait_until(pilot, lambda: len(rows(pilot.app, "#zfs-transfers")) == 2,
                         "two transfers")

    try:
        assert snap_compare(app_with_records, terminal_size=(80, 24),
                            run_before=show_transfers)
    finally:
        sleeper.kill()
        sleeper.wait()


async def test_transfers_running_and_last_and_stopping_one(
        app_with_records: ZsnApp, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    sleeper = subprocess.Popen(["sleep", "600"])
    record = running_record(sleeper.pid)
    monkeypatch.setattr("zsn.tui.panes.zfs.read_transfers", lambda host: {
        "running": [record], "last": transfers.read_transfers(host)["last"]})
    try:
        async with app_with_records.run_test(size=(120, 30)) as pilot:
            await select_tank(pilot)
            await pilot.press("t")
            await wait_until(pilot, lambda: len(rows(app_with_records, "#zfs-transfers")) == 2,
                             "two transfers")
            running, done = sorted((by_column(row) for row in rows(app_with_records,
                                                                   "#zfs-transfers")),
                                   key=lambda r: r["state"] != "running")
            assert (running["pair"], running["state"]) == ("tank/db → root@nas:backup/db",
                                                           "running")
            assert "40% 412.0 MiB" in running["progress"] and running["rate"] == "92.1 MiB/s"
            assert running["eta"] == "6s" and running["resumed"] == "yes"
            assert (done["pair"], done["state"]) == ("tank/media → tank2/media", "ok")
            assert (done["progress"], done["eta"], done["when"]) == ("3.0 GiB", "1m 01s",
                                                                     "1h 00m ago")
            table = app_with_records.query_one("#zfs-transfers")
            table.move_cursor("tank/db\0root@nas:backup/db")  # type: ignore[attr-defined]
            await pilot.pause()
            await pilot.press("K")
            await wait_until(pilot, lambda: isinstance(app_with_records.screen, PlanScreen),
                             "the plan")
            assert app_with_records.screen.plan_title == (  # type: ignore[attr-defined]
                "stop sending tank/db to root@nas:backup/db")
            await pilot.press("y")
            await wait_until(pilot, lambda: sleeper.poll() is not None, "the send stopped")
    finally:
        sleeper.kill()
        sleeper.wait()


async def test_send_form_plans_and_starts_in_the_background(
        app_with_records: ZsnApp, monkeypatch: pytest.MonkeyPatch) -> None:
    source = Tree("tank/db", parse_properties(read(SEND / "zfs-get-crypt.out").replace(
        "src/data", "tank/db")), snapshots.by_dataset(tank_snapshots()))
    source = Tree("tank/db", {"": source.properties["tank/db"]},
                  {"": source.snapshots["tank/db"]})
    asked: list[SendRequest] = []
    started: list[SendRequest] = []

    def plan_send(host: Host, request: SendRequest) -> Any:
        from zsn.zfs.remote import Endpoint
        from zsn.zfs.send import SendPlan

        asked.append(request)
        return SendPlan(request, "tank/db", Endpoint("backup/db", "nas", "root"),
                        decide(source, None, "backup/db", snapshot=None, recursive=False,
                               raw=False))

    monkeypatch.setattr("zsn.tui.panes.zfs_replication.plan_send", plan_send)
    monkeypatch.setattr("zsn.tui.panes.zfs_replication.Background.start",
                        lambda self, request: started.append(request))
    async with app_with_records.run_test(size=(80, 24)) as pilot:
        await select_tank(pilot)
        await pilot.press("d", "down", "S")
        await wait_until(pilot, lambda: isinstance(app_with_records.screen, SendForm), "form")
        form = app_with_records.screen
        assert form.query_one("#send-source", Input).value == "tank/db"
        await pilot.press(*"root@nas:backup/db")
        form.query_one("#send-limit", Input).value = "fast"
        await pilot.press("ctrl+s")
        await wait_until(pilot, lambda: "not a rate" in str(form.query_one(".form-error")
                                                          .render()), "the refusal")
        form.query_one("#send-limit", Input).value = "20M"
        await pilot.press("ctrl+s")
        await wait_until(pilot, lambda: isinstance(app_with_records.screen, PlanScreen),
                         "the plan")
        assert asked[-1] == SendRequest("tank/db", "root@nas:backup/db", "ssh", False, False,
                                        20 * 1024 ** 2)
        assert app_with_records.screen.plan_title == (  # type: ignore[attr-defined]
            "send tank/db@c to root@nas:backup/db")
        await pilot.press("y")
        await wait_until(pilot, lambda: started == [asked[-1]], "started")
        await wait_until(pilot, lambda: app_with_records.query_one(
            "#zfs-lower", ContentSwitcher).current == "zfs-transfers", "the transfers view")


def test_the_background_send_is_this_zsn_under_the_same_root(tmp_path: Path) -> None:
    argv = send_argv(Host(tmp_path), SendRequest("tank/db", "nas:backup/db", "tcp", True,
                                                 True, 1048576.0))
    assert argv[1:] == ["-m", "zsn", "--root", str(tmp_path), "zfs", "send", "tank/db",
                        "nas:backup/db", "--via", "tcp", "--raw", "--recursive", "--limit",
                        "1048576"]
    assert os.path.basename(argv[0]).startswith("python")


async def test_the_probe_screen_names_the_limit(app_with_records: ZsnApp,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    from zsn.zfs import probe

    def measure(plan: Any) -> Any:
        yield Stage("source", "source read (zfs send tank/media@x)", 180e6, 540_000_000, 3.0)
        yield Stage("pipe", "zsn's pipe (cat /dev/zero, zsn, cat)", 2.1e9, 6_300_000_000, 3.0)
        yield Stage("target", "target write (tank2, compression off, synced)", 95e6,
                    285_000_000, 3.0)

    monkeypatch.setattr(probe, "measure", measure)
    monkeypatch.setattr("zsn.tui.panes.zfs_replication.plan_send", lambda host, request: None)
    async with app_with_records.run_test(size=(100, 30)) as pilot:
        await select_tank(pilot)
        await pilot.press("t")
        await wait_until(pilot, lambda: len(rows(app_with_records, "#zfs-transfers")) == 1,
                         "the last transfer")
        await pilot.press("P")
        await wait_until(pilot, lambda: isinstance(app_with_records.screen, ProbeScreen),
                         "the probe")
        log = app_with_records.screen.query_one("#probe", RichLog)
        await wait_until(pilot, lambda: any("the limit is" in str(line.text)
                                            for line in log.lines), "the verdict")
        text = "".join(str(line.text) for line in log.lines)  # lines wrap at the width
        assert "the limit is target write (tank2, compression off, synced) at 90.6 MiB/s" in text
        assert "the disks set the pace" in text
