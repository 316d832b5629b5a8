"""The proof that snapshots and replication work: what ``--export zfs`` (``protection``),
``zsn serve``'s metrics, the ZFS pane's policies and transfers views and the alert rules
in contrib/ show.

Per dataset a policy covers and per class it keeps: how many policy snapshots there
are and how old the newest is (from the live listing, not from what zsn remembers
doing). Per replication job: the last success and the last attempt with its error
(from the job's record), the lag (how old the newest snapshot on the target is: the
base's creation time, which a receive keeps), the bytes behind (``zfs send -nvP``
from the base to the source's newest snapshot, what the next run would send), and
whether its transfer runs and has stalled (no byte moved for `STALL_SECONDS`).
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from zsn.errors import CommandError, ZsnError
from zsn.exporter.prometheus import MetricFamily
from zsn.system.commands import CommandResult
from zsn.system.host import Host

if TYPE_CHECKING:  # the export loads this module; the policies only when there are some
    from zsn.zfs.policy import Job, Policy, ZfsConfig
    from zsn.zfs.snapshots import Snapshot

STALL_SECONDS = 300.0
ESTIMATE_TIMEOUT = 60.0


def empty() -> dict[str, Any]:
    return {"policies": [], "classes": [], "jobs": [], "last_run": None}


def policy_to_dict(policy: Policy) -> dict[str, Any]:
    return {"dataset": policy.dataset, "keep": dict(policy.keep),
            "frequent_period": policy.frequent_period, "recursive": policy.recursive,
            "children_only": policy.children_only, "take": policy.take,
            "prune": policy.prune, "prefix": policy.prefix,
            "pre_hook": list(policy.pre_hook), "post_hook": list(policy.post_hook)}


def class_rows(policies: Mapping[str, Policy], covered: Mapping[str, str],
               snapshots: Mapping[str, Sequence[Snapshot]], now: float) -> list[dict[str, Any]]:
    """Per covered dataset and kept class: count, newest, its age, the class's period."""
    from zsn.zfs.schedule import policy_class

    rows = []
    for dataset in sorted(covered):
        policy = policies[covered[dataset]]
        mine: dict[str, list[Snapshot]] = {}
        for snapshot in snapshots.get(dataset, ()):
            cls = policy_class(policy, snapshot.name)
            if cls is not None:
                mine.setdefault(cls, []).append(snapshot)
        for cls in policy.kept_classes:
            found = sorted(mine.get(cls, ()), key=lambda s: s.createtxg)
            newest = found[-1] if found else None
            created = newest.created if newest is not None else None
            rows.append({
                "dataset": dataset, "policy": policy.dataset, "class": cls,
                "keep": policy.keep[cls], "count": len(found),
                "period_seconds": policy.period(cls),
                "newest": newest.name if newest is not None else None,
                "newest_created": created,
                "newest_age_seconds": max(0.0, now - created) if created is not None else None,
            })
    return rows


def _running(job: Job, transfers: Mapping[str, Sequence[Mapping[str, Any]]]
             ) -> Mapping[str, Any] | None:
    return next((r for r in transfers.get("running", ())
                 if r.get("source") == job.source and r.get("target") == job.target), None)


def stalled(record: Mapping[str, Any], now: float) -> bool:
    """A running transfer whose byte count has not moved for `STALL_SECONDS`."""
    moved_at = record.get("moved_at") or record.get("started")
    return isinstance(moved_at, int | float) and now - moved_at >= STALL_SECONDS


def estimate_argv(zfs: str, job: Job, record: Mapping[str, Any], newest: str) -> list[str]:
    """``zfs send -nvP`` of what the job's next run sends (from its base, or in full)."""
    flags = (["-w"] if record.get("raw") or job.raw else []) + (["-R"] if job.recursive else [])
    base = record.get("base")
    if base:
        return [zfs, "send", "-nvP", *flags, "-I", f"@{base}", f"{job.source}@{newest}"]
    return [zfs, "send", "-nvP", *flags, f"{job.source}@{newest}"]


def job_rows(host: Host, jobs: Mapping[str, Job], snapshots: Mapping[str, Sequence[Snapshot]],
             transfers: Mapping[str, Sequence[Mapping[str, Any]]], now: float, zfs: str | None,
             errors: list[str]) -> list[dict[str, Any]]:
    from zsn.zfs import state
    from zsn.zfs.jobs import read_record
    from zsn.zfs.live import run_side_by_side
    from zsn.zfs.send import parse_estimate

    rows = []
    estimates: dict[str, list[str]] = {}
    for name in sorted(jobs):
        job = jobs[name]
        try:
            record = read_record(host, name)
        except ZsnError as exc:
            errors.append(f"job {name}: {exc}")
            record = {}
        found = snapshots.get(job.source, ())
        newest = found[-1].name if found else None
        running = _running(job, transfers)
        if record.get("state") == "running" and state.holder(host, f"job-{name}") is None:
            record["state"] = "interrupted"  # its process ended without a result
            record.setdefault("error", "the run ended without a result (killed?)")
        base_created = record.get("base_created")
        behind: int | None = None
        if newest is not None and newest == record.get("base"):
            behind = 0
        elif newest is not None and zfs is not None:
            estimates[name] = estimate_argv(zfs, job, record, newest)
        rows.append({
            "name": name, "source": job.source, "target": job.target,
            "every_seconds": job.every, "added": job.added, "raw": job.raw,
            "recursive": job.recursive, "via": job.via,
            "last_attempt": record.get("last_attempt"),
            "last_attempt_end": record.get("last_attempt_end"),
            "last_success": record.get("last_success"),
            "state": record.get("state") if running is None else "running",
            "error": record.get("error"), "base": record.get("base"),
            "newest": newest,
            "base_created": base_created if isinstance(base_created, int | float) else None,
            "lag_seconds": max(0.0, now - base_created)
            if isinstance(base_created, int | float) else None,
            "bytes_behind": behind, "running": running is not None,
            "stalled": running is not None and stalled(running, now),
            "moved": running.get("bytes") if running is not None else None,
        })
    results = run_side_by_side(estimates, _estimate_runner) if estimates else {}
    for row in rows:
        result = results.get(str(row["name"]))
        if isinstance(result, CommandResult):
            try:
                row["bytes_behind"] = parse_estimate(result)
            except ZsnError as exc:
                errors.append(f"job {row['name']}: bytes behind unknown: {exc}")
        elif isinstance(result, CommandError):
            errors.append(f"job {row['name']}: bytes behind unknown: {result}")
    return rows


def _estimate_runner(argv: Sequence[str]) -> CommandResult:
    from zsn.zfs.live import run_zfs_command

    return run_zfs_command(argv, timeout=ESTIMATE_TIMEOUT)


def collect(host: Host, now: float | None = None) -> dict[str, Any]:
    """The ``protection`` part of the zfs section (see the module doc)."""
    from zsn.zfs.autosnap import last_run
    from zsn.zfs.policy import read_config

    moment = now if now is not None else time.time()
    found = empty()
    errors: list[str] = []
    try:
        config = read_config(host)
    except ZsnError as exc:
        return {**found, "errors": [str(exc)]}
    if not config.policies and not config.jobs:
        return found
    found["policies"] = [policy_to_dict(config.policies[d]) for d in sorted(config.policies)]
    try:
        found["last_run"] = last_run(host)
    except ZsnError as exc:
        errors.append(str(exc))
    _live(host, config, moment, found, errors)
    if errors:
        found["errors"] = errors
    return found


def _live(host: Host, config: ZfsConfig, now: float, found: dict[str, Any],
          errors: list[str]) -> None:
    from zsn.zfs.autosnap import read_inputs
    from zsn.zfs.live import find_program
    from zsn.zfs.schedule import coverage
    from zsn.zfs.transfers import read_transfers

    zfs = find_program("zfs")
    snapshots: dict[str, list[Snapshot]] = {}
    covered: dict[str, str] = {}
    if zfs is None:
        errors.append("zfs is not installed: the snapshots' age is unknown")
    else:
        try:
            inputs = read_inputs(zfs, config.policies, extra=[j.source for j in
                                                             config.jobs.values()])
            snapshots = inputs.snapshots
            covered = coverage(config.policies, inputs.datasets)
        except ZsnError as exc:
            errors.append(f"snapshots not read: {exc}")
    found["classes"] = class_rows(config.policies, covered, snapshots, now)
    found["jobs"] = job_rows(host, config.jobs, snapshots, read_transfers(host), now, zfs,
                             errors)


def refreshed(data: dict[str, Any], transfers: Mapping[str, Sequence[Mapping[str, Any]]],
              now: float) -> dict[str, Any]:
    """`data` collected a while ago, its ages worked out for `now` and its jobs' running
    and stalled flags from the transfers now (`zsn serve` lists snapshots less often
    than it is scraped)."""
    classes = [{**row, "newest_age_seconds": max(0.0, now - row["newest_created"])
                if row["newest_created"] is not None else None}
               for row in data.get("classes", ())]
    jobs = []
    for row in data.get("jobs", ()):
        running = next((r for r in transfers.get("running", ())
                        if r.get("source") == row["source"] and
                        r.get("target") == row["target"]), None)
        jobs.append({**row, "lag_seconds": max(0.0, now - row["base_created"])
                     if row["base_created"] is not None else None,
                     "running": running is not None,
                     "stalled": running is not None and stalled(running, now),
                     "state": "running" if running is not None else (
                         row["state"] if row["state"] != "running" else None),
                     "moved": running.get("bytes") if running is not None else None})
    return {**data, "classes": classes, "jobs": jobs}


def metrics(data: Mapping[str, Any]) -> list[MetricFamily]:
    """The protection's metric families (docs/metrics.md)."""
    age = MetricFamily("zsn_zfs_snapshot_newest_age_seconds", "gauge",
                       "Age of the newest policy snapshot of the class on the dataset.")
    count = MetricFamily("zsn_zfs_snapshot_count", "gauge",
                         "Policy snapshots of the class on the dataset.")
    period = MetricFamily("zsn_zfs_snapshot_period_seconds", "gauge",
                          "The class's period (a class twice as old as this is late).")
    run_at = MetricFamily("zsn_zfs_snapshot_run_timestamp_seconds", "gauge",
                          "Unix time the last snapshot run ended.")
    run_ok = MetricFamily("zsn_zfs_snapshot_run_success", "gauge",
                          "1 if the last snapshot run had no error, else 0.")
    for row in data.get("classes", ()):
        labels = {"dataset": row["dataset"], "class": row["class"]}
        count.add(labels, row["count"])
        period.add(labels, row["period_seconds"])
        if row["newest_age_seconds"] is not None:
            age.add(labels, row["newest_age_seconds"])
    last = data.get("last_run")
    if last and isinstance(last.get("finished"), int | float):
        run_at.add({}, last["finished"])
        run_ok.add({}, int(bool(last.get("ok"))))
    return [age, count, period, run_at, run_ok, *job_metrics(data.get("jobs", ()))]


def job_metrics(jobs: Sequence[Mapping[str, Any]]) -> list[MetricFamily]:
    families = {key: MetricFamily(f"zsn_zfs_replication_{key}", "gauge", text) for key, text in (
        ("last_success_timestamp_seconds", "Unix time the job's last successful run ended."),
        ("last_attempt_timestamp_seconds", "Unix time the job's last run started."),
        ("last_attempt_success", "1 if the job's last run went through, else 0."),
        ("lag_seconds", "Age of the newest snapshot on the target (the job's base)."),
        ("bytes_behind", "What the next run would send (zfs send -nvP from the base)."),
        ("stalled", "1 while the job's transfer runs and has moved nothing for 5 minutes."),
        ("running", "1 while the job's transfer runs."),
        ("interval_seconds", "How often the job runs."),
        ("added_timestamp_seconds", "Unix time the job was added."))}
    for job in jobs:
        labels = {"job": job["name"]}
        values = {
            "last_success_timestamp_seconds": job.get("last_success"),
            "last_attempt_timestamp_seconds": job.get("last_attempt"),
            "last_attempt_success": None if job.get("state") in (None, "running")
            else int(job["state"] == "ok"),
            "lag_seconds": job.get("lag_seconds"), "bytes_behind": job.get("bytes_behind"),
            "stalled": int(bool(job.get("stalled"))), "running": int(bool(job.get("running"))),
            "interval_seconds": job.get("every_seconds"),
            "added_timestamp_seconds": job.get("added"),
        }
        for key, value in values.items():
            if isinstance(value, int | float) and not isinstance(value, bool):
                families[key].add(labels, value)
    return list(families.values())
