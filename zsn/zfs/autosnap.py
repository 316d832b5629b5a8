"""A snapshot run (``zsn zfs snapshots run``): read the datasets and their snapshots,
plan with `zsn.zfs.schedule`, take what is due, prune, record the run.

Taking: per policy, its pre-hook, then one ``zfs snapshot`` per due class naming every
dataset of the policy due for it (ZFS takes them in one transaction: atomically), then
its post-hook, which runs whatever happened before it, with the outcome in its
environment. A failed pre-hook means no snapshot for that policy this run (the
post-hook still runs). Hooks are argv lists run without a shell, under a timeout.

Pruning: each destroy names its snapshots one by one (``zfs destroy DS@a,b,c``: one
dataset's, never a ``%`` range), several datasets at once. ZFS destroys such a list in
one transaction or not at all, so a list refused (a hold or a clone that appeared
since the listing) is retried snapshot by snapshot, and each refusal is reported.
When a snapshot could not be taken, the prune is planned again from a fresh listing
without it, so a failed take never costs an older snapshot.

A run holds the ``snapshots`` lock (`zsn.zfs.state.locked`): runs never overlap. Its
result is recorded in ``/var/lib/zsn/zfs/snapshots-run.json`` for the proof.
"""

from __future__ import annotations

import io
import os
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime, tzinfo
from typing import Any, NamedTuple
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from zsn.errors import CommandError, ZsnError
from zsn.system import commands, files
from zsn.system.host import Host
from zsn.terminal import one_line
from zsn.zfs import snapshots as snaps
from zsn.zfs import state
from zsn.zfs.listing import parse_text_rows
from zsn.zfs.policy import CLASSES, Policy, ZfsConfig, read_config
from zsn.zfs.schedule import RunPlan, Take, Verdict, plan_run
from zsn.zfs.snapshots import Snapshot

RUN_RECORD = "snapshots-run.json"
SNAPSHOT_TIMEOUT = 120.0
DESTROY_TIMEOUT = 600.0
LIST_TIMEOUT = 1800.0
"""A listing's deadline: tens of thousands of snapshots on spinning disks with a cold ARC
take minutes to list (a run is a timer's, nobody waits on it at a prompt)."""
RUN_MAX_OUTPUT = 256 * 1024 * 1024
"""The size cap of a run's `zfs` calls: its listings are the large ones (about two million
snapshots' rows)."""
DESTROY_WORKERS = 4
"""Destroys of several datasets at once: their transactions sync together."""
MAX_DESTROY_ARGUMENT = 64 * 1024
"""Bytes of snapshot names in one ``zfs destroy`` argument (far below ARG_MAX)."""
MAX_ERRORS_KEPT = 20

Runner = Callable[[Sequence[str], float], commands.CommandResult]


def _run(argv: Sequence[str], timeout: float) -> commands.CommandResult:
    from zsn.zfs.live import run_zfs_command

    return run_zfs_command(argv, timeout=timeout, max_output=RUN_MAX_OUTPUT)


def local_zone(host: Host) -> tzinfo:
    """The host's time zone: ``TZ`` if set, else ``/etc/localtime``, else UTC (names
    and preferred times are local, as sanoid's are)."""
    name = os.environ.get("TZ", "").lstrip(":")
    if name and host.is_live:
        try:
            return ZoneInfo(name)
        except (ZoneInfoNotFoundError, ValueError):
            pass
    try:
        data = files.read_bytes(host.path("/etc/localtime"), 1 << 20)
        return ZoneInfo.from_file(io.BytesIO(data), key="localtime")
    except (OSError, ZsnError, ValueError):
        return UTC


# -- reading ---------------------------------------------------------------------------------
class Inputs(NamedTuple):
    datasets: list[str]
    snapshots: dict[str, list[Snapshot]]


def dataset_argv(zfs: str) -> list[str]:
    return [zfs, "list", "-Hp", "-o", "name", "-t", "filesystem,volume"]


def snapshot_argv(zfs: str, datasets: Sequence[str]) -> list[str]:
    """Each dataset's own snapshots (``-d 1``), oldest first."""
    return [zfs, "list", "-Hp", "-t", "snapshot", "-o", ",".join(snaps.COLUMNS), "-s",
            "createtxg", "-d", "1", *datasets]


def parse_datasets(text: str) -> list[str]:
    return [row["name"] for row in parse_text_rows(text, ("name",), "zfs list")]


def read_inputs(zfs: str, policies: Mapping[str, Policy], run: Runner = _run,
                extra: Sequence[str] = ()) -> Inputs:
    """Every filesystem and volume, and the snapshots of those a policy covers (and of
    the `extra` ones that exist: the replication jobs' sources)."""
    from zsn.zfs.live import explain_failure
    from zsn.zfs.schedule import coverage

    listed = run(dataset_argv(zfs), LIST_TIMEOUT)
    if not listed.ok:
        raise ZsnError(explain_failure(listed))
    datasets = parse_datasets(listed.stdout)
    present = set(datasets)
    covered = sorted(set(coverage(policies, datasets)) | {d for d in extra if d in present})
    if not covered:
        return Inputs(datasets, {})
    found = run(snapshot_argv(zfs, covered), LIST_TIMEOUT)
    if not found.ok:
        raise ZsnError(explain_failure(found))
    return Inputs(datasets, snaps.by_dataset(snaps.parse(found.stdout)))


# -- describing --------------------------------------------------------------------------------
def describe(plan: RunPlan, now: float, zone: tzinfo, policies: Mapping[str, Policy], *,
             verbose: bool = False) -> list[str]:
    """The plan as ``--dry-run`` prints it: what is taken and destroyed and why, the
    policy snapshots kept only because of a hold or a job, and per dataset and class
    how many stay (every verdict with `verbose`)."""
    when = datetime.fromtimestamp(now, zone).strftime("%Y-%m-%d %H:%M:%S %Z")
    lines = [f"Snapshot run at {when}"]
    if not plan.covered:
        lines.append("no dataset is covered by a policy (zsn zfs policy set DATASET --keep "
                     "...)")
    for take in plan.takes:
        policy = policies[take.policy]
        hooks = [f"pre-hook {' '.join(policy.pre_hook)}"] if policy.pre_hook else []
        hooks += [f"post-hook {' '.join(policy.post_hook)}"] if policy.post_hook else []
        lines.append(f"take {take.cls} ({take.why}): zfs snapshot " + " ".join(take.snapshots)
                     + (f" (with {', '.join(hooks)})" if hooks else ""))
    for verdict in plan.verdicts:
        if verdict.destroy:
            lines.append(f"destroy {verdict.snapshot}: {verdict.cls}, {verdict.rule}")
        elif verbose or ", but " in verdict.rule:
            lines.append(f"keep {verdict.snapshot}: {verdict.cls}, {verdict.rule}")
    counts: dict[tuple[str, str], int] = {}
    for verdict in plan.verdicts:
        if not verdict.destroy:
            counts[(verdict.dataset, verdict.cls)] = counts.get(
                (verdict.dataset, verdict.cls), 0) + 1
    for dataset in sorted(plan.covered):
        # in the classes' own order, not the order the snapshots were taken in (sanoid takes
        # a run's classes in its hash order)
        kept = [f"{cls} {counts[(dataset, cls)]}" for cls in CLASSES if (dataset, cls) in counts]
        lines.append(f"{dataset}: keeps " + (", ".join(kept) if kept else "no policy snapshot")
                     + f" (policy of {plan.covered[dataset]})")
    destroys = len(plan.destroys)
    taken = sum(len(t.datasets) for t in plan.takes)
    lines.append(f"{taken} snapshot{'s' if taken != 1 else ''} to take, {destroys} to destroy"
                 + "".join(f"; {note}" for note in plan.notes))
    return lines


# -- running -----------------------------------------------------------------------------------
class Outcome(NamedTuple):
    started: float
    finished: float
    taken: tuple[str, ...]
    destroyed: tuple[str, ...]
    errors: tuple[str, ...]
    plan: RunPlan

    @property
    def ok(self) -> bool:
        return not self.errors


def hook_environment(kind: str, policy: Policy, takes: Sequence[Take],
                     outcome: str | None = None, error: str | None = None) -> dict[str, str]:
    env = {"ZSN_HOOK": kind, "ZSN_POLICY": policy.dataset,
           "ZSN_DATASETS": ",".join(sorted({d for t in takes for d in t.datasets})),
           "ZSN_SNAPSHOTS": ",".join(s for t in takes for s in t.snapshots),
           "ZSN_CLASSES": ",".join(t.cls for t in takes)}
    if outcome is not None:
        env["ZSN_OUTCOME"] = outcome
        env["ZSN_ERROR"] = error or ""
    return env


def run_hook(argv: Sequence[str], env: Mapping[str, str], timeout: float) -> str | None:
    """Run a hook (no shell); why it failed, or None."""
    try:
        result = commands.run(argv, timeout=timeout, check=False, env=env)
    except CommandError as exc:
        return str(exc)
    if not result.ok:
        return f"{os.path.basename(argv[0])} exited with status {result.returncode}: " \
               f"{result.first_error_line()}"
    return None


def _take(zfs: str, policy: Policy, takes: Sequence[Take], run: Runner,
          say: Callable[[str], None]) -> tuple[list[str], list[str]]:
    """One policy's takes between its hooks; (taken, errors)."""
    taken: list[str] = []
    errors: list[str] = []
    outcome = "ok"
    if policy.pre_hook:
        failed = run_hook(policy.pre_hook, hook_environment("pre", policy, takes),
                          policy.hook_timeout)
        if failed:
            errors.append(f"{policy.dataset}: pre-hook failed, no snapshot taken: {failed}")
            outcome = "pre-hook-failed"
    if outcome == "ok":
        for take in takes:
            result = run([zfs, "snapshot", *take.snapshots], SNAPSHOT_TIMEOUT)
            if result.ok:
                taken += take.snapshots
                say(f"took {take.cls} {', '.join(take.snapshots)}")
            else:
                errors.append(f"zfs snapshot {take.snapshots[0]}"
                              + (f" (+{len(take.snapshots) - 1})" if len(take.snapshots) > 1
                                 else "") + f" failed: {result.first_error_line()}")
                outcome = "snapshot-failed"
    if policy.post_hook:
        failed = run_hook(policy.post_hook,
                          hook_environment("post", policy, takes, outcome,
                                           errors[-1] if errors else None),
                          policy.hook_timeout)
        if failed:
            errors.append(f"{policy.dataset}: post-hook failed: {failed}")
    return taken, errors


def destroy_batches(verdicts: Sequence[Verdict]) -> list[tuple[str, list[str]]]:
    """(dataset, snapshot names) per ``zfs destroy`` call: one dataset's, by name."""
    by_dataset: dict[str, list[str]] = {}
    for verdict in verdicts:
        if verdict.destroy:
            by_dataset.setdefault(verdict.dataset, []).append(verdict.name)
    batches = []
    for dataset, names in by_dataset.items():
        batch: list[str] = []
        size = len(dataset)
        for name in names:
            if batch and size + len(name) + 1 > MAX_DESTROY_ARGUMENT:
                batches.append((dataset, batch))
                batch, size = [], len(dataset)
            batch.append(name)
            size += len(name) + 1
        batches.append((dataset, batch))
    return batches


def destroy_argv(zfs: str, dataset: str, names: Sequence[str]) -> list[str]:
    return [zfs, "destroy", f"{dataset}@{','.join(names)}"]


def _destroy(zfs: str, dataset: str, names: list[str],
             run: Runner) -> tuple[list[str], list[str]]:
    result = run(destroy_argv(zfs, dataset, names), DESTROY_TIMEOUT)
    if result.ok:
        return [f"{dataset}@{name}" for name in names], []
    if len(names) == 1:
        return [], [f"could not destroy {dataset}@{names[0]}: {result.first_error_line()}"]
    gone: list[str] = []
    errors: list[str] = []
    for name in names:  # ZFS destroyed none of the list: each on its own
        one, failed = _destroy(zfs, dataset, [name], run)
        gone += one
        errors += failed
    return gone, errors


def prune(zfs: str, verdicts: Sequence[Verdict], run: Runner,
          workers: int = DESTROY_WORKERS) -> tuple[list[str], list[str]]:
    """Destroy what the verdicts say; (destroyed, errors)."""
    batches = destroy_batches(verdicts)
    destroyed: list[str] = []
    errors: list[str] = []
    if not batches:
        return destroyed, errors
    with ThreadPoolExecutor(max_workers=max(1, min(workers, len(batches)))) as pool:
        for gone, failed in pool.map(lambda batch: _destroy(zfs, batch[0], batch[1], run),
                                     batches):
            destroyed += gone
            errors += failed
    return destroyed, errors


def plan_now(host: Host, config: ZfsConfig, zfs: str, now: float, zone: tzinfo,
             run: Runner = _run, take: bool = True) -> RunPlan:
    """Read the machine and plan a run at `now`."""
    from zsn.zfs.jobs import protected_snapshots

    inputs = read_inputs(zfs, config.policies, run, extra=[j.source for j in
                                                           config.jobs.values()])
    protected = protected_snapshots(host, config, inputs.datasets, inputs.snapshots)
    return plan_run(config.policies, inputs.datasets, inputs.snapshots, now, zone,
                    protected=protected, take=take)


def execute(host: Host, config: ZfsConfig, plan: RunPlan, zfs: str, now: float,
            zone: tzinfo, run: Runner = _run,
            say: Callable[[str], None] = lambda line: None) -> Outcome:
    """Take, then prune (planned again without what could not be taken)."""
    started = time.time()
    taken: list[str] = []
    errors: list[str] = []
    by_policy: dict[str, list[Take]] = {}
    for take in plan.takes:
        by_policy.setdefault(take.policy, []).append(take)
    for owner, takes in by_policy.items():
        done, failed = _take(zfs, config.policies[owner], takes, run, say)
        taken += done
        errors += failed
    verdicts = plan.verdicts
    if len(taken) != sum(len(t.datasets) for t in plan.takes):
        verdicts = plan_now(host, config, zfs, now, zone, run, take=False).verdicts
    destroyed, failed = prune(zfs, verdicts, run)
    errors += failed
    if destroyed:
        say(f"destroyed {len(destroyed)} snapshot{'s' if len(destroyed) != 1 else ''}")
    return Outcome(started, time.time(), tuple(taken), tuple(destroyed), tuple(errors), plan)


def record(host: Host, outcome: Outcome) -> str | None:
    """Keep the run's result for the proof; why it could not be kept, or None."""
    try:
        state.write_record(state.record_path(host, RUN_RECORD), {
            "started": outcome.started, "finished": outcome.finished,
            "taken": len(outcome.taken), "destroyed": len(outcome.destroyed),
            "errors": [one_line(e) for e in outcome.errors[:MAX_ERRORS_KEPT]],
            "ok": outcome.ok})
    except (OSError, ZsnError) as exc:
        return f"the run's result was not recorded ({exc})"
    return None


def last_run(host: Host) -> dict[str, Any] | None:
    """The last run's record, its fields typed (a field of another type reads as absent)."""
    found = state.read_record(host, state.record_path(host, RUN_RECORD))
    if found is None:
        return None
    kinds: dict[str, tuple[type, ...]] = {"started": (int, float), "finished": (int, float),
                                          "taken": (int,), "destroyed": (int,),
                                          "ok": (bool,), "errors": (list,)}
    clean = state.typed(found, kinds)
    if "errors" in clean:
        errors: list[Any] = clean["errors"]
        clean["errors"] = [e for e in errors if isinstance(e, str)][:MAX_ERRORS_KEPT]
    return clean


def run_policies(host: Host, *, dry_run: bool, verbose: bool = False,
                 say: Callable[[str], None] = print,
                 now: float | None = None) -> Outcome | None:
    """``zsn zfs snapshots run``: plan (and show, with `dry_run`) or run and record."""
    from zsn.zfs.live import require_program

    config = read_config(host)
    if not config.policies:  # nothing to do: a timer installed before any policy is fine
        say(f"no snapshot policy in {config.path} (zsn zfs policy set DATASET --keep "
            "hourly=24,daily=7)")
        return None
    zfs = require_program("zfs")
    zone = local_zone(host)
    if dry_run:
        moment = now if now is not None else time.time()
        plan = plan_now(host, config, zfs, moment, zone)
        for line in describe(plan, moment, zone, config.policies, verbose=verbose):
            say(line)
        return None
    with state.locked(host, "snapshots"):
        moment = now if now is not None else time.time()
        plan = plan_now(host, config, zfs, moment, zone)
        outcome = execute(host, config, plan, zfs, moment, zone, say=say)
        problem = record(host, outcome)
    if problem:
        say(f"note: {problem}")
    return outcome
