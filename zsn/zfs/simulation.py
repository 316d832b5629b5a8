"""``zsn zfs policy simulate DATASET --days N``: the planner of a real run
(`zsn.zfs.schedule`) over a simulated clock, from the dataset's snapshots today.

The runs are the timer's: every `every` seconds (by default the policy's shortest class
period), each taking what is due and pruning what its policy does not keep, exactly as
``zsn zfs snapshots run`` would, with today's holds and the replication jobs' bases
spared. Snapshots a simulated run takes are dated at that run. The result says what
would exist at the end, per class, and what would have been destroyed on the way:
every snapshot that exists today by name, with when and why.
"""

from __future__ import annotations

from datetime import datetime, tzinfo
from typing import Any

from zsn.errors import ValidationError
from zsn.system.host import Host
from zsn.zfs.names import validate_dataset_name
from zsn.zfs.policy import (
    CLASSES,
    Policy,
    parse_duration,
    parse_keep,
    read_config,
)
from zsn.zfs.schedule import policy_class, simulate

MAX_RUNS = 400_000
MIN_EVERY = 60


def _stamp(when: float, zone: tzinfo) -> str:
    return datetime.fromtimestamp(when, zone).strftime("%Y-%m-%d %H:%M")


def simulate_dataset(host: Host, zfs: str, dataset: str, days: int, every: str | None,
                     keep: str | None, zone: tzinfo, now: float) -> dict[str, Any]:
    """The simulation's result as data (`report` words it)."""
    from zsn.zfs.autosnap import read_inputs
    from zsn.zfs.jobs import protected_snapshots
    from zsn.zfs.schedule import coverage

    validate_dataset_name(dataset)
    config = read_config(host)
    policies = dict(config.policies)
    if keep is not None:
        existing = policies.get(dataset) or Policy(dataset, {})
        policies[dataset] = Policy(dataset, parse_keep(keep), existing.frequent_period,
                                   existing.recursive, existing.children_only, existing.take,
                                   existing.prune, existing.prefix, existing.schedule)
    inputs = read_inputs(zfs, policies, extra=[j.source for j in config.jobs.values()])
    if dataset not in inputs.datasets:
        raise ValidationError(f"no filesystem or volume named {dataset!r} here",
                              field="dataset")
    covered = coverage(policies, inputs.datasets)
    owner = covered.get(dataset)
    if owner is None:
        raise ValidationError(f"no policy covers {dataset} (zsn zfs policy set, or --keep to "
                              "try one)", field="dataset")
    policy = policies[owner]
    step = _every(every, policy)
    if days * 86400 / step > MAX_RUNS:
        raise ValidationError(f"{days} days of runs every {step} s is more than {MAX_RUNS} "
                              "runs: simulate fewer days or less often", field="every")
    tree = [d for d in inputs.datasets if covered.get(d) == owner and
            (d == dataset or d.startswith(dataset + "/"))]
    protected = protected_snapshots(host, config, inputs.datasets, inputs.snapshots)
    mine = {owner: policy}
    result = simulate(mine, tree, {d: inputs.snapshots.get(d, []) for d in tree}, now,
                      days * 86400, step, zone, protected=protected)
    today = {(d, s.name) for d in tree for s in inputs.snapshots.get(d, ())}
    final = {}
    for name in tree:
        counts = {cls: 0 for cls in policy.kept_classes}
        for snapshot in result.final.get(name, ()):
            cls = policy_class(policy, snapshot.name)
            if cls is not None:
                counts[cls] = counts.get(cls, 0) + 1
        final[name] = {"policy_snapshots": sum(counts.values()), "by_class": counts,
                       "snapshots": [s.name for s in result.final.get(name, ())]}
    return {
        "dataset": dataset, "policy": owner, "keep": dict(policy.keep), "days": days,
        "every_seconds": step, "start": now, "end": now + days * 86400, "runs": result.runs,
        "taken": result.taken, "destroyed": len(result.destroyed), "final": final,
        "destroyed_existing": [
            {"snapshot": v.snapshot, "at": at, "class": v.cls, "rule": v.rule}
            for at, v in result.destroyed if (v.dataset, v.name) in today],
    }


def _every(text: str | None, policy: Policy) -> int:
    if text is None:
        classes = policy.kept_classes or ("hourly",)
        return min(policy.period(cls) for cls in classes)
    seconds = parse_duration(text, "every")
    if seconds < MIN_EVERY:
        raise ValidationError("runs are at least a minute apart", field="every")
    return seconds


def report(result: dict[str, Any], zone: tzinfo) -> list[str]:
    keep = ",".join(f"{c}={n}" for c, n in result["keep"].items() if n)
    lines = [f"{result['days']} days of runs every {result['every_seconds'] // 60} min from "
             f"{_stamp(result['start'], zone)} to {_stamp(result['end'], zone)} "
             f"({result['runs']} runs), policy of {result['policy']} (keep {keep}):"]
    for dataset, found in result["final"].items():
        classes = ", ".join(f"{cls} {found['by_class'][cls]}" for cls in CLASSES
                            if cls in found["by_class"])
        lines.append(f"at the end {dataset} has {found['policy_snapshots']} policy "
                     f"snapshot{'s' if found['policy_snapshots'] != 1 else ''} ({classes})")
    lines.append(f"taken on the way: {result['taken']}; destroyed on the way: "
                 f"{result['destroyed']}, of which {len(result['destroyed_existing'])} "
                 "exist today" + (":" if result["destroyed_existing"] else ""))
    for gone in result["destroyed_existing"]:
        lines.append(f"  {gone['snapshot']} on {_stamp(gone['at'], zone)}: {gone['class']}, "
                     f"{gone['rule']}")
    return lines

