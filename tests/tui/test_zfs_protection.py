"""The ZFS pane's proof that protection works: the policies view (`a`) and the
replication jobs in the transfers view (`t`), at 80x24 too."""

from __future__ import annotations

import subprocess
from typing import Any

import pytest
from textual.pilot import Pilot

from tests.pilot import wait_until
from tests.tui.test_zfs_pane import NOW, rows, select_tank
from tests.tui.test_zfs_replication import app_with_records, by_column, running_record
from tests.unit.zfs.test_protection_view import classes
from zsn.tui.app import ZsnApp
from zsn.zfs import transfers

__all__ = ["app_with_records"]
HOUR = 3600.0


def protection(jobs: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    return {
        "policies": [{"dataset": "tank/home", "keep": {"hourly": 24, "daily": 7},
                      "recursive": True, "take": True, "prune": True, "prefix": "zsn"}],
        "classes": classes(), "jobs": jobs or [],
        "last_run": {"started": NOW - 62, "finished": NOW - 60, "taken": 3, "destroyed": 2,
                     "ok": True, "errors": []},
    }


def job(name: str, source: str, target: str, **values: Any) -> dict[str, Any]:
    found = {"name": name, "source": source, "target": target, "every_seconds": 3600,
             "added": NOW - 86400, "raw": False, "recursive": False, "via": "ssh",
             "last_attempt": NOW - 1900, "last_attempt_end": NOW - 1800,
             "last_success": NOW - 1800, "state": "ok", "error": None,
             "base": "zsn_2026-11-21_09:00:00_hourly", "newest": None,
             "base_created": NOW - 2400, "lag_seconds": 2400.0, "bytes_behind": 1536000,
             "running": False, "stalled": False, "moved": None}
    found.update(values)
    return found


JOBS = [job("offsite", "tank/home", "root@nas:backup/home"),
        job("db", "tank/db", "root@nas:backup/db", state="running", running=True),
        job("media", "tank/media", "tank2/media", state="failed", last_success=NOW - 5 * HOUR,
            error="zfs receive on nas failed: cannot receive: destination has been modified",
            base_created=NOW - 5 * HOUR, bytes_behind=None)]


@pytest.fixture
def protected_app(app_with_records: ZsnApp, monkeypatch: pytest.MonkeyPatch) -> ZsnApp:
    monkeypatch.setattr("zsn.tui.panes.zfs.collect_protection", lambda host: protection(JOBS))
    return app_with_records


def app_of(pilot: Pilot[int]) -> ZsnApp:
    assert isinstance(pilot.app, ZsnApp)
    return pilot.app


async def show_policies(pilot: Pilot[int]) -> None:
    await select_tank(pilot)
    await pilot.press("a")
    await wait_until(pilot, lambda: len(rows(app_of(pilot), "#zfs-policies")) == 5, "policies")


async def test_the_policies_view(protected_app: ZsnApp) -> None:
    async with protected_app.run_test(size=(80, 24)) as pilot:
        await show_policies(pilot)
        shown = rows(protected_app, "#zfs-policies")
        assert [row[:3] for row in shown] == [
            ["tank/home", "late", "10m 00s"], ["hourly", "ok", "10m 00s"],
            ["daily", "late", "3d 00h"], ["tank/home/bob", "none", "-"],
            ["hourly", "none", "-"]]
        title = protected_app.query_one("#zfs-policies").border_title
        assert "Last run 1m 00s ago: took 3, destroyed 2." in str(title)


def test_snapshot_policies_80x24(snap_compare, protected_app: ZsnApp) -> None:  # type: ignore[no-untyped-def]
    assert snap_compare(protected_app, terminal_size=(80, 24), run_before=show_policies)


async def test_jobs_lead_the_transfers_with_their_proof(
        protected_app: ZsnApp, monkeypatch: pytest.MonkeyPatch) -> None:
    sleeper = subprocess.Popen(["sleep", "600"])
    record = running_record(sleeper.pid)
    monkeypatch.setattr("zsn.tui.panes.zfs.read_transfers", lambda host: {
        "running": [record], "last": transfers.read_transfers(host)["last"]})
    try:
        async with protected_app.run_test(size=(120, 30)) as pilot:
            await select_tank(pilot)
            await pilot.press("t")
            await wait_until(pilot, lambda: len(rows(protected_app, "#zfs-transfers")) == 3,
                             "three jobs")
            # the running send of db's pair and media's pair's last result are the jobs'
            shown = [by_column(row) for row in rows(protected_app, "#zfs-transfers")]
            assert [(r["pair"], r["state"]) for r in shown] == [
                ("offsite: tank/home → root@nas:backup/home", "ok"),
                ("db: tank/db → root@nas:backup/db", "running"),
                ("media: tank/media → tank2/media", "failed")]
            title = str(protected_app.query_one("#zfs-transfers").border_title)
            assert "job media failed 30m 00s ago: zfs receive on nas failed: cannot " \
                   "receive: destination has been modified" in title
            offsite, db = shown[0], shown[1]
            assert (offsite["last_ok"], offsite["lag"], offsite["progress"]) == (
                "30m 00s ago", "40m 00s", "1.5 MiB behind")
            assert "40%" in db["progress"] and db["rate"] == "92.1 MiB/s"
    finally:
        sleeper.kill()
        sleeper.wait()


def test_snapshot_jobs_80x24(snap_compare, protected_app: ZsnApp,  # type: ignore[no-untyped-def]
                             monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("zsn.tui.panes.zfs.collect_protection", lambda host: protection(
        [j for j in JOBS if j["name"] != "db"]))

    async def show_jobs(pilot: Pilot[int]) -> None:
        await select_tank(pilot)
        await pilot.press("t")
        await wait_until(pilot, lambda: len(rows(app_of(pilot), "#zfs-transfers")) == 2,
                         "two jobs")

    assert snap_compare(protected_app, terminal_size=(80, 24), run_before=show_jobs)
