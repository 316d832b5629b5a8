"""The proof as the pane shows it (`zsn.zfs.view`) and as metrics (`zsn.zfs.protection`),
from zsn's own records and its reading of the pool."""

from __future__ import annotations

from typing import Any

from zsn.exporter.prometheus import render
from zsn.view import cell_text
from zsn.zfs import protection, view

NOW = 1795367000.0
HOUR = 3600.0


def classes() -> list[dict[str, Any]]:
    row = {"dataset": "tank/home", "policy": "tank/home", "keep": 24, "count": 24,
           "period_seconds": 3600, "newest": "zsn_2026-11-21_10:00:00_hourly",
           "newest_created": NOW - 600, "newest_age_seconds": 600.0, "class": "hourly"}
    return [row,
            {**row, "class": "daily", "keep": 7, "count": 3, "period_seconds": 86400,
             "newest_created": NOW - 3 * 86400, "newest_age_seconds": 3 * 86400.0},
            {**row, "dataset": "tank/home/bob", "count": 0, "newest": None,
             "newest_created": None, "newest_age_seconds": None}]


def test_policy_rows_say_ok_late_and_none() -> None:
    data = {"policies": [{"dataset": "tank/home", "recursive": True, "take": True,
                          "prefix": "zsn"}], "classes": classes()}
    rows = view.policy_rows(data)
    cells = [[cell_text(c) for c in row.cells] for row in rows]
    assert [row.depth for row in rows] == [0, 1, 1, 0, 1]
    assert cells[0][:3] == ["tank/home", "late", "10m 00s"]
    assert cells[1][:5] == ["hourly", "ok", "10m 00s", "24 of 24", "1h 00m"]
    assert cells[2][:4] == ["daily", "late", "3d 00h", "3 of 7"]
    assert cells[3] == ["tank/home/bob", "none", "-", "0", "", "tank/home (recursive)"]


def test_job_states() -> None:
    job = {"name": "offsite", "source": "tank/home", "target": "nas:backup/home",
           "every_seconds": 3600, "added": NOW - 10 * HOUR, "state": "ok",
           "last_success": NOW - HOUR, "running": False, "stalled": False}
    assert cell_text(view.job_state(job, NOW)) == "ok"
    assert cell_text(view.job_state({**job, "last_success": NOW - 3 * HOUR}, NOW)) == "late"
    assert cell_text(view.job_state({**job, "state": "failed"}, NOW)) == "failed"
    assert cell_text(view.job_state({**job, "running": True, "stalled": True}, NOW)) == \
        "stalled"
    fresh = {**job, "state": None, "last_success": None, "added": NOW - 60}
    assert cell_text(view.job_state(fresh, NOW)) == "never run"
    assert cell_text(view.job_state({**fresh, "added": NOW - 3 * HOUR}, NOW)) == "late"


def test_the_metrics_the_issue_names() -> None:
    jobs = [{"name": "offsite", "last_success": NOW - HOUR, "last_attempt": NOW - HOUR - 60,
             "state": "ok", "lag_seconds": 4000.0, "bytes_behind": 123456, "stalled": False,
             "running": False, "every_seconds": 3600, "added": NOW - 86400},
            {"name": "new", "last_success": None, "last_attempt": None, "state": None,
             "lag_seconds": None, "bytes_behind": None, "stalled": True, "running": True,
             "every_seconds": 600, "added": NOW}]
    data = {"classes": classes(), "jobs": jobs,
            "last_run": {"finished": NOW - 30, "ok": False, "taken": 2, "destroyed": 1}}
    text = render(protection.metrics(data))
    for line in ('zsn_zfs_snapshot_newest_age_seconds{dataset="tank/home",class="hourly"} 600',
                 'zsn_zfs_snapshot_count{dataset="tank/home/bob",class="hourly"} 0',
                 'zsn_zfs_replication_last_success_timestamp_seconds{job="offsite"} '
                 f'{NOW - HOUR!r}',
                 'zsn_zfs_replication_lag_seconds{job="offsite"} 4000',
                 'zsn_zfs_replication_bytes_behind{job="offsite"} 123456',
                 'zsn_zfs_replication_stalled{job="offsite"} 0',
                 'zsn_zfs_replication_stalled{job="new"} 1',
                 'zsn_zfs_snapshot_run_success 0'):
        assert line in text, line
    assert 'zsn_zfs_snapshot_newest_age_seconds{dataset="tank/home/bob"' not in text
    assert 'zsn_zfs_replication_last_success_timestamp_seconds{job="new"}' not in text


def test_serve_works_out_ages_for_each_scrape() -> None:
    data = {"policies": [], "classes": classes(), "last_run": None, "jobs": [
        {"name": "offsite", "source": "tank/home", "target": "nas:backup/home",
         "base_created": NOW - 100, "lag_seconds": 100.0, "state": "ok", "running": False,
         "stalled": False, "moved": None}]}
    running = {"running": [{"source": "tank/home", "target": "nas:backup/home",
                            "moved_at": NOW - 400, "bytes": 5}], "last": []}
    later = protection.refreshed(data, running, NOW + 60)
    assert later["classes"][0]["newest_age_seconds"] == 660
    job = later["jobs"][0]
    assert (job["lag_seconds"], job["running"], job["stalled"], job["state"], job["moved"]) \
        == (160, True, True, "running", 5)
