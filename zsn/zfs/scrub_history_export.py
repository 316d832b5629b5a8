"""The pools' scrub history as data: ``zsn zfs scrubs --json``, the ``scrubs`` list of
``--export zfs`` and its Prometheus metrics (`zsn.zfs.scrub_history` reads it)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from zsn.exporter.prometheus import MetricFamily
from zsn.zfs.model import Pool
from zsn.zfs.scrub_history import ScrubHistory, ScrubRun, Trend, trend


def run_to_dict(run: ScrubRun) -> dict[str, Any]:
    return {"ended": run.ended, "started": run.started, "seconds": run.seconds,
            "examined": run.examined, "bytes_from": run.bytes_from or None,
            "rate": run.rate, "errors": run.errors, "repaired": run.repaired,
            "seen_in": list(run.seen_in)}


def trend_to_dict(found: Trend | None) -> dict[str, Any] | None:
    if found is None:
        return None
    return {"seconds": found.last.seconds, "rate": found.last.rate, "before": found.before,
            "seconds_median": found.seconds_median, "rate_median": found.rate_median,
            "duration_change_percent": found.duration_change,
            "rate_change_percent": found.rate_change}


def entries(pools: Iterable[Pool], history: ScrubHistory) -> list[dict[str, Any]]:
    """One entry per pool: its finished scrubs, oldest first, and the last one's trend."""
    return [{"pool": pool.name, "runs": [run_to_dict(run) for run in history.of(pool.name)],
             "trend": trend_to_dict(trend(history.of(pool.name)))} for pool in pools]


def metrics(scrub_entries: list[dict[str, Any]]) -> list[MetricFamily]:
    """The last scrub's duration and rate per pool, and its change on the ones before."""
    duration = MetricFamily("zsn_zfs_scrub_last_duration_seconds", "gauge",
                            "How long the pool's last finished scrub took.")
    rate = MetricFamily("zsn_zfs_scrub_last_rate_bytes_per_second", "gauge",
                        "Bytes the last finished scrub read per second.")
    change = MetricFamily("zsn_zfs_scrub_last_duration_change_ratio", "gauge",
                          "The last scrub's duration against the median of the (up to 5) "
                          "before it: 0.2 = 20 % longer (absent: nothing to compare).")
    for entry in scrub_entries:
        found = entry.get("trend")
        if not found:
            continue
        labels = {"pool": entry["pool"]}
        if found["seconds"] is not None:
            duration.add(labels, found["seconds"])
        if found["rate"] is not None:
            rate.add(labels, found["rate"])
        if found["duration_change_percent"] is not None:
            change.add(labels, found["duration_change_percent"] / 100)
    return [duration, rate, change]
