"""Scheduled replication (``zsn zfs replicate run``): each job is a `zsn zfs send` of its
source to its target on the existing engine (`zsn.zfs.send` plans from the newest
common snapshot, resumes a partial receive first; `zsn.zfs.transfer` moves the bytes),
run when it is due, never twice at once, its result recorded for the proof.

Due: a job runs once per period of `every` seconds, the periods counted from the Unix
epoch (so a 1h job runs in each hour of the clock): when its last attempt started
before the current period began. A box that was off for days therefore runs each job
once at the next start, not once per missed period. A run holds the job's lock
(`zsn.zfs.state.locked`): a second run of the same job while one goes on is skipped.

A job from an encrypted source sends raw (the target stores ciphertext, never the
key) unless the job says ``allow_decrypted``.

Each job's record (``/var/lib/zsn/zfs/jobs/NAME.json``): the last attempt's start and
end, its state and error, the last success, the base (the newest snapshot the target
has: what the next run goes on from; snapshot pruning never destroys it), and the
snapshot an interrupted send will resume (spared too).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, NamedTuple

from zsn.errors import ValidationError, ZsnError
from zsn.system.host import Host
from zsn.terminal import one_line
from zsn.zfs import state
from zsn.zfs.policy import Job, ZfsConfig
from zsn.zfs.snapshots import Snapshot

JOBS_DIR = "jobs"
STALL_SECONDS = 300.0
"""A running transfer that moved nothing for this long is stalled (the proof's flag)."""
_RECORD_KINDS: dict[str, tuple[type, ...]] = {
    "last_attempt": (int, float), "last_attempt_end": (int, float),
    "last_success": (int, float), "state": (str,), "error": (str,), "bytes": (int,),
    "base": (str,), "base_created": (int, float), "resume_snapshot": (str,),
    "source": (str,), "target": (str,), "runs": (int,), "raw": (bool,),
}


def record_path(host: Host, name: str) -> Path:
    return state.record_path(host, JOBS_DIR, f"{name}.json")


def read_record(host: Host, name: str) -> dict[str, Any]:
    """A job's record (empty before its first run), its fields typed: a field of
    another type reads as absent."""
    return state.typed(state.read_record(host, record_path(host, name)) or {}, _RECORD_KINDS)


def period_start(every: int, now: float) -> float:
    return (int(now) // every) * every


def is_due(job: Job, record: Mapping[str, Any], now: float) -> bool:
    """Whether the job should run at `now` (see the module doc)."""
    last = record.get("last_attempt")
    return last is None or last < period_start(job.every, now)


def _tree(dataset: str, recursive: bool, datasets: Sequence[str]) -> list[str]:
    if not recursive:
        return [dataset]
    return [d for d in datasets if d == dataset or d.startswith(dataset + "/")]


def protected_snapshots(host: Host, config: ZfsConfig, datasets: Sequence[str],
                        snapshots: Mapping[str, Sequence[Snapshot]] | None = None,
                        ) -> dict[tuple[str, str], str]:
    """(dataset, snapshot name) -> why a job needs it: each job's base, on its source
    (and on a target here); after an attempt that did not go through, also every source
    snapshot newer than the base (the partial receive resumes one of them) and the one
    it was sending. A job whose record cannot be read stops the prune (`ZsnError`): its
    base is not known."""
    from zsn.zfs.remote import parse_target

    found: dict[tuple[str, str], str] = {}
    for job in config.jobs.values():
        try:
            record = read_record(host, job.name)
        except ZsnError as exc:
            raise ZsnError(f"job {job.name}'s record cannot be read, so its base is not known "
                           f"and nothing is pruned: {exc}") from None
        target = parse_target(job.target)
        trees = [_tree(job.source, job.recursive, datasets)]
        if not target.remote:
            trees.append(_tree(target.dataset, job.recursive, datasets))
        names = {}
        base = record.get("base")
        if base:
            names[base] = f"the base of job {job.name}"
        if record.get("state") not in (None, "ok"):
            resumed = f"job {job.name}'s interrupted send may resume it"
            if record.get("resume_snapshot"):
                names.setdefault(record["resume_snapshot"], resumed)
            for name in _newer(snapshots or {}, job.source, base):
                names.setdefault(name, resumed)
        for name, why in names.items():
            for tree in trees:
                for dataset in tree:
                    found[(dataset, name)] = why
    return found


def _newer(snapshots: Mapping[str, Sequence[Snapshot]], dataset: str,
           base: str | None) -> list[str]:
    found = list(snapshots.get(dataset, ()))
    if base is None:
        return []
    at = next((i for i, s in enumerate(found) if s.name == base), None)
    return [s.name for s in found[at + 1:]] if at is not None else []


class JobOutcome(NamedTuple):
    name: str
    ok: bool
    message: str
    skipped: bool = False


def _created(source: str, name: str) -> float | None:
    """The creation time of ``source@name``."""
    from zsn.zfs.live import require_program, run_zfs_command
    from zsn.zfs.units import integer

    result = run_zfs_command([require_program("zfs"), "get", "-Hp", "-o", "value",
                              "creation", f"{source}@{name}"])
    value = integer(result.stdout.strip()) if result.ok else None
    return float(value) if value is not None else None


def source_encrypted(source: str) -> bool:
    """Whether `source` is encrypted (a `ValidationError` when it does not exist)."""
    from zsn.zfs.live import explain_failure, require_program, run_zfs_command

    result = run_zfs_command([require_program("zfs"), "get", "-Hp", "-o", "value",
                              "encryption", source])
    if not result.ok:
        if "dataset does not exist" in result.stderr:
            raise ValidationError(f"the source {source} does not exist")
        raise ZsnError(explain_failure(result))
    return result.stdout.strip() not in ("off", "-", "")


def send_request(job: Job, encrypted: bool) -> Any:
    """The `SendRequest` a run of `job` makes: raw for an encrypted source unless the
    job allows sending it decrypted."""
    from zsn.zfs.send import SendRequest

    raw = job.raw or (encrypted and not job.allow_decrypted)
    return SendRequest(job.source, job.target, job.via, raw, job.recursive, job.limit)


def run_job(host: Host, job: Job, *, say: Callable[[str], None] = print,
            stop: threading.Event | None = None) -> JobOutcome:
    """One run of `job` now (due or not), under its lock, recorded."""
    try:
        with state.locked(host, f"job-{job.name}"):
            return _run_locked(host, job, say, stop)
    except state.Busy as busy:
        return JobOutcome(job.name, True, str(busy), skipped=True)


def _run_locked(host: Host, job: Job, say: Callable[[str], None],
                stop: threading.Event | None) -> JobOutcome:
    from zsn.zfs.send import plan_send
    from zsn.zfs.transfer import Transfer, TransferFailed

    record = read_record(host, job.name)
    record.update(source=job.source, target=job.target, last_attempt=time.time(),
                  state="running", runs=int(record.get("runs", 0)) + 1)
    record.pop("error", None)
    _write(host, job.name, record)
    try:
        request = send_request(job, source_encrypted(job.source))
        record["raw"] = request.raw
        plan = plan_send(host, request)
        for warning in (*plan.decision.warnings, *plan.warnings):
            say(f"warning: {warning}")
        result = Transfer(host, request, plan=plan, say=say, stop=stop).run()
    except TransferFailed as failed:
        sending = failed.result.get("sending")
        if failed.interrupted and isinstance(sending, str) and "@" in sending:
            record["resume_snapshot"] = sending.partition("@")[2]
        return _finish(host, job, record, "interrupted" if failed.interrupted else "failed",
                       str(failed), int(failed.result.get("bytes") or 0))
    except ZsnError as exc:
        return _finish(host, job, record, "failed", str(exc), 0)
    except BaseException:
        _finish(host, job, record, "failed", "zsn stopped with an error", 0)
        raise
    base = plan.decision.snapshot
    record.update(base=base, last_success=time.time())
    created = _created(job.source, base)
    if created is not None:
        record["base_created"] = created
    record.pop("resume_snapshot", None)
    return _finish(host, job, record, "ok", None, int(result.get("bytes") or 0))


def _finish(host: Host, job: Job, record: dict[str, Any], outcome: str, error: str | None,
            moved: int) -> JobOutcome:
    record.update(state=outcome, last_attempt_end=time.time(), bytes=moved)
    if error:
        record["error"] = one_line(error)
    _write(host, job.name, record)
    if outcome == "ok":
        return JobOutcome(job.name, True, f"job {job.name}: {job.target} has "
                                          f"@{record.get('base')}")
    return JobOutcome(job.name, False, f"job {job.name} {outcome}: {one_line(error or '')}")


def _write(host: Host, name: str, record: dict[str, Any]) -> None:
    state.write_record(record_path(host, name), record)


def run_jobs(host: Host, config: ZfsConfig, name: str | None = None, *,
             say: Callable[[str], None] = print, now: float | None = None,
             stop: threading.Event | None = None) -> list[JobOutcome]:
    """``zsn zfs replicate run [NAME]``: the named job now, or every job that is due."""
    if name is not None:
        job = config.jobs.get(name)
        if job is None:
            known = ", ".join(sorted(config.jobs)) or "none"
            raise ValidationError(f"no replication job {name!r} (jobs: {known})")
        return [run_job(host, job, say=say, stop=stop)]
    moment = now if now is not None else time.time()
    outcomes = []
    for job in sorted(config.jobs.values(), key=lambda j: j.name):
        if not is_due(job, read_record(host, job.name), moment):
            continue
        outcomes.append(run_job(host, job, say=say, stop=stop))
        if stop is not None and stop.is_set():
            break
    return outcomes
