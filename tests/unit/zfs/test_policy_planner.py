"""The snapshot planner (`zsn.zfs.schedule`) over simulated clocks: the runs a timer
would make, in real time zones (tzdata's Europe/Berlin, with its daylight saving
changes), at month ends, and with a clock that jumps back."""

from __future__ import annotations

from collections import Counter
from datetime import datetime, timedelta
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest

from zsn.zfs.policy import Policy, Schedule
from zsn.zfs.schedule import last_slot, plan_run, policy_class, simulate
from zsn.zfs.snapshots import Snapshot

BERLIN = ZoneInfo("Europe/Berlin")
UTC = ZoneInfo("UTC")
HOUR = 3600.0
DAY = 86400.0


def at(year: int, month: int, day: int, hour: int = 0, minute: int = 0, second: int = 0,
       zone: ZoneInfo = BERLIN) -> float:
    return datetime(year, month, day, hour, minute, second, tzinfo=zone).timestamp()


def spacings(found: list[Snapshot]) -> list[float]:
    """The seconds between each snapshot and the next."""
    return [float((b.created or 0) - (a.created or 0)) for a, b in zip(found, found[1:],
                                                                        strict=False)]


def classes(found: list[Snapshot], policy: Policy) -> Counter[str]:
    return Counter(c for s in found if (c := policy_class(policy, s.name)) is not None)


def test_ten_days_of_hourly_runs_keep_exactly_31() -> None:
    policy = Policy("tank/home", {"hourly": 24, "daily": 7})
    start = at(2026, 3, 20, 10, 0)  # across the spring change: ten days of 240 runs
    result = simulate({"tank/home": policy}, ["tank/home"], {}, start, 10 * DAY, HOUR, BERLIN)
    final = result.final["tank/home"]
    assert len(final) == 31
    assert classes(final, policy) == {"hourly": 24, "daily": 7}
    assert result.runs == 241 and result.taken == len(final) + len(result.destroyed)
    # the hourlies are the last 24 runs', the dailies one per day
    hourly = [s for s in final if s.name.endswith("_hourly")]
    assert hourly[-1].created == start + 10 * DAY
    assert hourly[0].created == start + 10 * DAY - 23 * HOUR
    days = [datetime.fromtimestamp(s.created or 0, BERLIN).date()
            for s in final if s.name.endswith("_daily")]
    assert len(set(days)) == 7


def test_existing_snapshots_of_others_and_holds_survive_the_ten_days() -> None:
    policy = Policy("tank/home", {"hourly": 24, "daily": 7})
    start = at(2026, 3, 20, 10, 0)
    today = [Snapshot("tank/home", "before-upgrade", 1, 10, int(start - DAY)),
             Snapshot("tank/home", "zsn_2026-03-19_09:00:00_hourly", 2, 11, int(start - DAY),
                      holds=1),
             Snapshot("tank/home", "autosnap_2026-03-19_09:00:00_hourly", 3, 12,
                      int(start - DAY)),
             Snapshot("tank/home", "zsn_2026-03-19_10:00:00_hourly", 4, 13, int(start - DAY))]
    result = simulate({"tank/home": policy}, ["tank/home"], {"tank/home": today}, start,
                      10 * DAY, HOUR, BERLIN)
    names = {s.name for s in result.final["tank/home"]}
    assert {"before-upgrade", "zsn_2026-03-19_09:00:00_hourly",
            "autosnap_2026-03-19_09:00:00_hourly"} <= names
    gone = [(v.name, v.rule) for _, v in result.destroyed if v.name.startswith("zsn_2026-03-19")]
    assert gone == [("zsn_2026-03-19_10:00:00_hourly", "beyond the 24 newest hourly")]
    assert classes(result.final["tank/home"], policy) == {"hourly": 25, "daily": 7}


def test_month_ends_one_monthly_per_month_on_its_last_day() -> None:
    policy = Policy("tank/a", {"monthly": 3},
                    schedule=Schedule(monthly_mday=31, monthly_hour=23, monthly_min=0))
    result = simulate({"tank/a": policy}, ["tank/a"], {}, at(2026, 1, 15, 12, 0),
                      140 * DAY, HOUR, BERLIN)
    taken = sorted({v.name for _, v in result.destroyed} |
                   {s.name for s in result.final["tank/a"]})
    assert taken == ["zsn_2026-01-15_12:00:00_monthly",  # none yet: the first run takes one
                     "zsn_2026-01-31_23:00:00_monthly", "zsn_2026-02-28_23:00:00_monthly",
                     "zsn_2026-03-31_23:00:00_monthly", "zsn_2026-04-30_23:00:00_monthly",
                     "zsn_2026-05-31_23:00:00_monthly"]
    assert [s.name for s in result.final["tank/a"]] == taken[-3:]


def test_the_first_of_the_month_and_the_year_at_midnight() -> None:
    policy = Policy("tank/a", {"monthly": 12, "yearly": 2, "hourly": 1})
    start = at(2026, 12, 30, 12, 0)
    result = simulate({"tank/a": policy}, ["tank/a"], {}, start, 3 * DAY, 15 * 60, BERLIN)
    names = sorted(s.name for s in result.final["tank/a"] if not s.name.endswith("hourly"))
    assert names == ["zsn_2026-12-30_12:00:00_monthly", "zsn_2026-12-30_12:00:00_yearly",
                     "zsn_2027-01-01_00:00:00_monthly", "zsn_2027-01-01_00:00:00_yearly"]


def test_daylight_saving_time_ends_the_repeated_hour_gets_dst_names() -> None:
    policy = Policy("tank/a", {"hourly": 100, "daily": 10, "frequently": 8},
                    frequent_period=900)
    start = at(2026, 10, 24, 12, 0)
    result = simulate({"tank/a": policy}, ["tank/a"], {}, start, 2 * DAY, 300, BERLIN)
    final = result.final["tank/a"]
    assert not result.destroyed or all(v.cls == "frequently" for _, v in result.destroyed)
    hourly = [s for s in final if s.name.endswith("_hourly")]
    names = [s.name for s in hourly]
    assert len(names) == len(set(names))
    assert "zsn_2026-10-25_02:00:00_hourly" in names
    assert "zsn_2026-10-25_02:00:00dst_hourly" in names
    # Sunday 25 October has 25 hours: 25 hourlies taken that day
    on_sunday = [s for s in hourly if datetime.fromtimestamp(s.created or 0, BERLIN).date()
                 == datetime(2026, 10, 25).date()]
    assert len(on_sunday) == 25
    assert all(spacing == HOUR for spacing in spacings(hourly))
    dailies = [s.name for s in final if s.name.endswith("_daily")]
    assert dailies == ["zsn_2026-10-24_12:00:00_daily", "zsn_2026-10-25_00:00:00_daily",
                       "zsn_2026-10-26_00:00:00_daily"]


def test_daylight_saving_time_starts_the_missing_hour_is_skipped() -> None:
    policy = Policy("tank/a", {"hourly": 100, "daily": 10})
    result = simulate({"tank/a": policy}, ["tank/a"], {}, at(2026, 3, 28, 12, 0), 2 * DAY,
                      600, BERLIN)
    hourly = [s for s in result.final["tank/a"] if s.name.endswith("_hourly")]
    on_sunday = [s.name for s in hourly if "2026-03-29" in s.name]
    assert len(on_sunday) == 23 and not any("_02:" in name for name in on_sunday)
    assert all(spacing == HOUR for spacing in spacings(hourly))
    assert [s.name for s in result.final["tank/a"] if s.name.endswith("_daily")] == [
        "zsn_2026-03-28_12:00:00_daily", "zsn_2026-03-29_00:00:00_daily",
        "zsn_2026-03-30_00:00:00_daily"]


def test_a_daily_at_a_time_the_spring_change_skips_is_still_taken_once() -> None:
    policy = Policy("tank/a", {"daily": 5}, schedule=Schedule(daily_hour=2, daily_min=30))
    result = simulate({"tank/a": policy}, ["tank/a"], {}, at(2026, 3, 27, 12, 0), 3 * DAY,
                      900, BERLIN)
    days = [datetime.fromtimestamp(s.created or 0, BERLIN).strftime("%m-%d %H:%M")
            for s in result.final["tank/a"]]
    assert days == ["03-27 12:00", "03-28 02:30", "03-29 03:30", "03-30 02:30"]


def test_a_clock_that_jumps_back_takes_no_duplicate_and_destroys_nothing_new() -> None:
    policy = Policy("tank/a", {"hourly": 3})
    now = at(2026, 6, 1, 12, 5)
    found: list[Snapshot] = []
    txg = 100

    def run(when: float) -> tuple[list[str], list[str]]:
        nonlocal found, txg
        plan = plan_run({"tank/a": policy}, ["tank/a"], {"tank/a": found}, when, BERLIN)
        for take in plan.takes:
            txg += 1
            found.append(Snapshot("tank/a", take.name, txg, txg, int(when)))
        gone = {v.name for v in plan.destroys}
        found = [s for s in found if s.name not in gone]
        return [t.name for t in plan.takes], sorted(gone)

    for hour in range(4):
        run(now + hour * HOUR)
    assert [s.name[4:20] for s in found] == ["2026-06-01_13:05", "2026-06-01_14:05",
                                             "2026-06-01_15:05"]
    # back half an hour (an NTP step): the newest hourly stands for this hour
    assert run(now + 2.5 * HOUR) == ([], [])
    # back two days: the newest is dated ahead by more than a period, so one is taken;
    # the oldest by creation txg goes, whatever the dates say
    taken, gone = run(now - 2 * DAY)
    assert taken == ["zsn_2026-05-30_12:05:00_hourly"] and gone == [
        "zsn_2026-06-01_13:05:00_hourly"]
    assert found[-1].name == "zsn_2026-05-30_12:05:00_hourly"
    assert run(now - 2 * DAY + 60) == ([], [])


def test_downtime_is_caught_up_once_per_class() -> None:
    policy = Policy("tank/a", {"hourly": 24, "daily": 7, "weekly": 4})
    start = at(2026, 5, 4, 8, 0)
    found = [Snapshot("tank/a", f"zsn_2026-05-04_0{h}:00:00_hourly", h, h,
                      int(at(2026, 5, 4, h, 0))) for h in range(6, 8)]
    plan = plan_run({"tank/a": policy}, ["tank/a"], {"tank/a": found}, start + 3 * DAY, BERLIN)
    assert sorted(t.cls for t in plan.takes) == ["daily", "hourly", "weekly"]
    assert all(len(t.datasets) == 1 for t in plan.takes)


def test_pruning_spares_holds_jobs_other_names_and_never_counts_them() -> None:
    policy = Policy("tank/a", {"hourly": 2, "daily": 0})
    names = [f"zsn_2026-06-01_0{h}:00:00_hourly" for h in range(6)]
    found = [Snapshot("tank/a", name, i, 10 + i, int(at(2026, 6, 1, i, 0)),
                      holds=1 if i == 1 else 0) for i, name in enumerate(names)]
    found += [Snapshot("tank/a", "zsn_2026-05-01_00:00:00_daily", 9, 5, 0),
              Snapshot("tank/a", "syncoid_box_2026-06-01:00:00:00", 8, 6, 0),
              Snapshot("tank/a", "zsn_2026-06-01_00:00:00_hourly_copy", 7, 7, 0)]
    found.sort(key=lambda s: s.createtxg)
    plan = plan_run({"tank/a": policy}, ["tank/a"], {"tank/a": found},
                    at(2026, 6, 1, 5, 30), BERLIN,
                    protected={("tank/a", names[2]): "the base of job offsite"})
    assert plan.takes == ()
    verdicts = {v.name: (v.destroy, v.rule) for v in plan.verdicts}
    assert verdicts == {
        names[0]: (True, "beyond the 2 newest hourly"),
        names[1]: (False, "beyond the 2 newest hourly, but held (zfs hold)"),
        names[2]: (False, "beyond the 2 newest hourly, but the base of job offsite"),
        names[3]: (True, "beyond the 2 newest hourly"),
        names[4]: (False, "one of the 2 newest hourly (#2)"),
        names[5]: (False, "one of the 2 newest hourly (#1)"),
        "zsn_2026-05-01_00:00:00_daily": (True, "daily keeps none"),
    }
    quiet = Policy("tank/a", {"hourly": 2}, prune=False)
    plan = plan_run({"tank/a": quiet}, ["tank/a"], {"tank/a": found}, at(2026, 6, 1, 5, 30),
                    BERLIN)
    assert plan.destroys == ()


def test_a_recursive_policy_snapshots_its_tree_at_once_but_not_a_child_with_its_own() -> None:
    parent = Policy("tank/home", {"hourly": 24}, recursive=True)
    child = Policy("tank/home/bob", {"daily": 3})
    datasets = ["tank", "tank/home", "tank/home/alice", "tank/home/alice/mail",
                "tank/home/bob", "tank/home/bob/cache", "tank/other"]
    plan = plan_run({"tank/home": parent, "tank/home/bob": child}, datasets, {},
                    at(2026, 6, 1, 5, 30), BERLIN)
    takes = {(t.policy, t.cls): t.datasets for t in plan.takes}
    assert takes == {
        ("tank/home", "hourly"): ("tank/home", "tank/home/alice", "tank/home/alice/mail",
                                  "tank/home/bob/cache"),
        ("tank/home/bob", "daily"): ("tank/home/bob",),
    }
    only = Policy("tank/home", {"hourly": 24}, recursive=True, children_only=True)
    plan = plan_run({"tank/home": only}, datasets, {}, at(2026, 6, 1, 5, 30), BERLIN)
    assert "tank/home" not in plan.takes[0].datasets
    assert len(plan.takes[0].datasets) == 4


@pytest.mark.parametrize(("cls", "now", "slot"), [
    ("hourly", (2026, 6, 1, 5, 30), (2026, 6, 1, 5, 0)),
    ("daily", (2026, 6, 1, 5, 30), (2026, 5, 31, 23, 59)),
    ("daily", (2026, 6, 1, 23, 59), (2026, 6, 1, 23, 59)),
    ("weekly", (2026, 6, 1, 23, 29), (2026, 5, 25, 23, 30)),  # a Monday, before 23:30
    ("weekly", (2026, 6, 7, 12, 0), (2026, 6, 1, 23, 30)),
    ("monthly", (2026, 3, 1, 0, 0), (2026, 3, 1, 0, 0)),
    ("monthly", (2026, 1, 1, 0, 0), (2026, 1, 1, 0, 0)),
    ("yearly", (2026, 6, 1, 0, 0), (2026, 1, 1, 0, 0)),
    ("frequently", (2026, 6, 1, 5, 44), (2026, 6, 1, 5, 30)),
])
def test_the_last_preferred_time_of_each_class(cls: str, now: tuple[int, int, int, int, int],
                                               slot: tuple[int, int, int, int, int]) -> None:
    policy = Policy("tank/a", {cls: 1})
    assert last_slot(policy, cls, at(*now), BERLIN) == at(*slot)


def test_weekly_counts_sunday_as_zero_like_sanoid() -> None:
    policy = Policy("tank/a", {"weekly": 1}, schedule=Schedule(weekly_wday=0, weekly_hour=1,
                                                               weekly_min=0))
    slot = datetime.fromtimestamp(last_slot(policy, "weekly", at(2026, 6, 3, 12, 0), UTC), UTC)
    assert slot == datetime(2026, 5, 31, 1, 0, tzinfo=UTC) and slot.isoweekday() == 7
    assert slot + timedelta(days=7) > datetime(2026, 6, 3, tzinfo=UTC)


def test_a_job_runs_once_per_period_and_once_after_downtime() -> None:
    from zsn.zfs.jobs import is_due
    from zsn.zfs.policy import Job

    job = Job("offsite", "tank/home", "nas:backup/home", every=3600)
    now = at(2026, 6, 1, 12, 20, zone=UTC)
    assert is_due(job, {}, now)  # never ran
    assert not is_due(job, {"last_attempt": at(2026, 6, 1, 12, 1, zone=UTC)}, now)
    assert is_due(job, {"last_attempt": at(2026, 6, 1, 11, 59, zone=UTC)}, now)
    # off for three days: due now, and once it ran, not again this hour
    assert is_due(job, {"last_attempt": now - 3 * DAY}, now)
    assert not is_due(job, {"last_attempt": now + 5}, now + 600)
    daily = Job("daily", "tank/home", "nas:backup/home", every=86400)
    assert not is_due(daily, {"last_attempt": at(2026, 6, 1, 0, 5, zone=UTC)}, now)


def test_what_the_jobs_need_is_spared_on_both_sides(tmp_path: Path) -> None:
    from zsn.system.host import Host
    from zsn.zfs.jobs import protected_snapshots, record_path
    from zsn.zfs.policy import Job, ZfsConfig
    from zsn.zfs.state import write_record

    host = Host(tmp_path)
    jobs = {"local": Job("local", "tank/home", "backup/home", recursive=True),
            "away": Job("away", "tank/db", "root@nas:backup/db")}
    write_record(record_path(host, "local"), {"state": "ok", "base": "zsn_h2"})
    write_record(record_path(host, "away"), {"state": "interrupted", "base": "zsn_h1",
                                             "resume_snapshot": "zsn_h3"})
    datasets = ["tank/home", "tank/home/a", "backup/home", "backup/home/a", "tank/db"]
    found = {"tank/db": [Snapshot("tank/db", f"zsn_h{n}", n, n, n) for n in range(4)]}
    spared = protected_snapshots(host, ZfsConfig(tmp_path, None, {}, jobs), datasets, found)
    assert spared == {
        ("tank/home", "zsn_h2"): "the base of job local",
        ("tank/home/a", "zsn_h2"): "the base of job local",
        ("backup/home", "zsn_h2"): "the base of job local",
        ("backup/home/a", "zsn_h2"): "the base of job local",
        ("tank/db", "zsn_h1"): "the base of job away",
        ("tank/db", "zsn_h3"): "job away's interrupted send may resume it",
        ("tank/db", "zsn_h2"): "job away's interrupted send may resume it",
    }
