"""Changes to the policies and jobs: typed requests in, plans out (an edit of
``/etc/zsn/zfs.json`` shown as a diff, applied atomically with its backup).

The command line, the TUI and a desired-state file read into the same requests
(`PolicyRequest`, `JobRequest`), so each value is read and each refusal worded once.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass

from zsn.errors import ValidationError, ZsnError, about_input
from zsn.meaning import OwnFile
from zsn.plan import FileEdit, LiveStep, Plan
from zsn.system import files
from zsn.system.host import Host
from zsn.zfs.names import validate_dataset_name
from zsn.zfs.policy import (
    DEFAULT_PREFIX,
    HOOK_TIMEOUT,
    PREFIXES,
    VIA,
    Job,
    Policy,
    Schedule,
    ZfsConfig,
    check_every,
    check_frequent_period,
    check_hook,
    check_job_name,
    governing,
    parse_duration,
    parse_hook,
    parse_keep,
    read_config,
    with_job,
    with_policy,
)

NOT_ROOT = "zsn is not root: /etc/zsn/zfs.json is root's (run it as root)"


@dataclass(frozen=True)
class PolicyRequest:
    """``zsn zfs policy set``: each field as typed (its name is the option's dest).

    A desired-state file (`zsn.zfs.desired`) reads into the same request: its hooks are
    argv lists already (a tuple: checked as a typed hook's words are, never split), and
    it may say what only an import sets otherwise (``take``, ``prune``, ``prefix``,
    ``schedule``; None: as the command line leaves them)."""

    dataset: str
    keep: str
    frequent_period: str | None = None
    recursive: bool = False
    children_only: bool = False
    prune_only: bool = False
    pre_hook: str | tuple[str, ...] | None = None
    post_hook: str | tuple[str, ...] | None = None
    hook_timeout: str | None = None
    take: bool | None = None
    prune: bool | None = None
    prefix: str | None = None
    schedule: Schedule | None = None


@dataclass(frozen=True)
class JobRequest:
    """``zsn zfs replicate add``."""

    name: str
    source: str
    target: str
    every: str = "1h"
    raw: bool = False
    allow_decrypted: bool = False
    via: str = "ssh"
    limit: str | None = None
    recursive: bool = False


def policy_of(request: PolicyRequest, existing: Policy | None = None) -> Policy:
    """The policy a request means (refusals name their field)."""
    with about_input("dataset"):
        dataset = validate_dataset_name(request.dataset)
    with about_input("keep"):
        keep = parse_keep(request.keep)
    period = 900
    if request.frequent_period is not None:
        with about_input("frequent_period"):
            period = check_frequent_period(parse_duration(request.frequent_period,
                                                          "frequent period"))
    if request.children_only and not request.recursive:
        raise ValidationError("children only needs --recursive (the children are what it "
                              "covers)", field="children_only")
    hooks = {}
    for key in ("pre_hook", "post_hook"):
        given = getattr(request, key)
        with about_input(key):
            hooks[key] = (check_hook(given) if isinstance(given, tuple)
                          else parse_hook(given) if given else ())
    timeout = HOOK_TIMEOUT
    if request.hook_timeout is not None:
        with about_input("hook_timeout"):
            timeout = float(parse_duration(request.hook_timeout, "hook timeout"))
            if not 1 <= timeout <= 3600:
                raise ValidationError("a hook timeout is from 1 s to 1 h")
    prefix = request.prefix or (existing.prefix if existing is not None else DEFAULT_PREFIX)
    if prefix not in PREFIXES:
        raise ValidationError(f"prefix {prefix[:20]!r}: say {' or '.join(PREFIXES)}",
                              field="prefix")
    schedule = request.schedule or (existing.schedule if existing is not None
                                    else Schedule())
    take = not request.prune_only if request.take is None else request.take
    prune = True if request.prune is None else request.prune
    return Policy(dataset, keep, period, request.recursive, request.children_only,
                  take, prune, prefix, schedule, hooks["pre_hook"], hooks["post_hook"],
                  timeout)


def require_dataset(dataset: str) -> None:
    """Refuse a dataset this host does not have."""
    from zsn.zfs.live import explain_failure, require_program, run_zfs_command

    result = run_zfs_command([require_program("zfs"), "list", "-H", "-o", "name", dataset])
    if result.ok:
        return
    if "dataset does not exist" in result.stderr:
        raise ValidationError(f"no filesystem or volume named {dataset!r} here",
                              field="dataset")
    raise ZsnError(explain_failure(result))


def config_edit(config: ZfsConfig, text: str) -> FileEdit:
    return FileEdit(config.path, config.snapshot, text, new_dir=config.snapshot is None,
                    intent=OwnFile("zsn's ZFS policy file"))


def _plan(host: Host, title: str, config: ZfsConfig, text: str) -> Plan:
    warnings = [] if host.is_superuser else [NOT_ROOT]
    return Plan(title, [config_edit(config, text)], warnings=warnings)


def plan_set_policy(host: Host, request: PolicyRequest) -> Plan:
    """Set (or replace) a dataset's policy."""
    config = read_config(host)
    existing = config.policies.get(request.dataset)
    policy = policy_of(request, existing)
    require_dataset(policy.dataset)
    plan = _plan(host, f"snapshot policy for {policy.dataset}: keep {policy.keep_text()}",
                 config, with_policy(config, policy, policy.dataset))
    covering = governing({k: v for k, v in config.policies.items() if k != policy.dataset},
                         policy.dataset)
    if covering is not None:
        plan.notes.append(f"{policy.dataset} was covered by {covering.dataset}'s recursive "
                          "policy: its own policy takes over for it"
                          + (" and its descendants" if policy.recursive else ""))
    if existing is not None:
        plan.notes.append(f"replaces {policy.dataset}'s policy (keep {existing.keep_text()})")
    if existing is not None and existing.prefix != DEFAULT_PREFIX:
        plan.notes.append(f"snapshots keep their {existing.prefix}_ names (imported from "
                          "sanoid)")
    plan.notes += _policy_notes(policy, config)
    return plan


def _policy_notes(policy: Policy, config: ZfsConfig) -> list[str]:
    notes = []
    if policy.pre_hook or policy.post_hook:
        for key, argv in (("pre-hook", policy.pre_hook), ("post-hook", policy.post_hook)):
            if argv:
                notes.append(f"{key} runs as root, without a shell: {argv!r}")
    if not policy.take:
        notes.append("takes no snapshots: prunes what arrives (a replication target)")
    if not config.policies:
        notes.append("nothing runs by itself until a timer does: zsn zfs policy "
                     "install-timer (or run zsn zfs snapshots run)")
    return notes


def plan_remove_policy(host: Host, dataset: str) -> Plan:
    config = read_config(host)
    if dataset not in config.policies:
        known = ", ".join(sorted(config.policies)) or "none"
        raise ValidationError(f"{dataset!r} has no policy (policies: {known})",
                              field="dataset")
    plan = _plan(host, f"remove the snapshot policy of {dataset}", config,
                 with_policy(config, None, dataset))
    plan.notes.append("its snapshots stay; nothing prunes them any more")
    return plan


def job_of(request: JobRequest, added: float) -> Job:
    from zsn.zfs.remote import parse_source, parse_target
    from zsn.zfs.send import parse_rate

    with about_input("name"):
        name = check_job_name(request.name)
    with about_input("source"):
        dataset, snapshot = parse_source(request.source)
        if snapshot is not None:
            raise ValidationError("a job sends a dataset's newest snapshot each time: name "
                                  "the dataset, not a snapshot")
    with about_input("target"):
        target = parse_target(request.target)
    if not target.remote and (target.dataset == dataset or
                              target.dataset.startswith(dataset + "/")):
        raise ValidationError(f"{target.dataset} is {dataset} itself or inside it",
                              field="target")
    if request.via not in VIA:
        raise ValidationError(f"{request.via[:20]!r}: say ssh or tcp", field="via")
    if request.via == "tcp" and not target.remote:
        raise ValidationError("tcp is for a target on another host", field="via")
    with about_input("every"):
        every = check_every(parse_duration(request.every, "every"))
    limit = None
    if request.limit:
        with about_input("limit"):
            limit = parse_rate(request.limit)
    if request.raw and request.allow_decrypted:
        raise ValidationError("--raw and --allow-decrypted say opposite things",
                              field="allow_decrypted")
    return Job(name, dataset, str(target), every, request.raw, request.allow_decrypted,
               request.via, limit, request.recursive, round(added, 3))


def plan_add_job(host: Host, request: JobRequest) -> Plan:
    from zsn.zfs.jobs import source_encrypted

    config = read_config(host)
    job = job_of(request, time.time())
    if job.name in config.jobs:
        raise ValidationError(f"a job named {job.name} exists (zsn zfs replicate remove "
                              f"{job.name} first)", field="name")
    plan = _plan(host, f"replicate {job.source} to {job.target} every "
                 f"{_every_text(job.every)} (job {job.name})", config,
                 with_job(config, job, job.name))
    _encryption_notes(plan, job, source_encrypted(job.source))
    plan.notes.append("the first run sends it in full (or goes on from the newest snapshot "
                      "both sides have); zsn zfs replicate run " + job.name + " runs it now")
    if not config.jobs:
        plan.notes.append("runs by itself once a timer does: zsn zfs policy install-timer")
    return plan


def _encryption_notes(plan: Plan, job: Job, encrypted: bool) -> None:
    if encrypted and not job.allow_decrypted:
        plan.notes.append(f"{job.source} is encrypted: sent raw (the target stores it "
                          "encrypted and never gets the key)")
    elif encrypted:
        plan.warnings.append(f"{job.source} is encrypted and --allow-decrypted sends it "
                             "decrypted: the target stores it in plain unless its parent is "
                             "encrypted")


def plan_change_job(host: Host, request: JobRequest) -> Plan:
    """A job's settings (every, raw, via, limit ...) replaced in place, as a desired-state
    file changes them: its record (the base its next run goes on from) stays, so another
    source or target is refused (that record is the pair's: remove the job, add it)."""
    from zsn.zfs.jobs import source_encrypted

    config = read_config(host)
    existing = config.jobs.get(request.name)
    if existing is None:
        known = ", ".join(sorted(config.jobs)) or "none"
        raise ValidationError(f"no replication job {request.name!r} (jobs: {known})",
                              field="name")
    job = job_of(request, existing.added)
    if (job.source, job.target) != (existing.source, existing.target):
        raise ValidationError(f"job {job.name} sends {existing.source} to {existing.target}: "
                              "zsn does not change a job's source or target in place (zsn "
                              f"zfs replicate remove {job.name}, then add it again)",
                              field="target")
    plan = _plan(host, f"replicate {job.source} to {job.target} every "
                 f"{_every_text(job.every)} (job {job.name}, changed)", config,
                 with_job(config, job, job.name))
    _encryption_notes(plan, job, source_encrypted(job.source))
    plan.notes.append(f"job {job.name} goes on from its last run's base")
    return plan


def _every_text(seconds: int) -> str:
    from zsn.format import human_duration

    return human_duration(seconds)


def plan_remove_job(host: Host, name: str) -> Plan:
    from zsn.zfs.jobs import record_path

    config = read_config(host)
    if name not in config.jobs:
        known = ", ".join(sorted(config.jobs)) or "none"
        raise ValidationError(f"no replication job {name!r} (jobs: {known})", field="name")
    plan = _plan(host, f"remove replication job {name}", config, with_job(config, None, name))
    path = record_path(host, name)
    if files.exists(path):
        plan.steps.append(LiveStep(f"forget its record ({path})",
                                   lambda: files.remove(path, missing_ok=True)))
    plan.notes.append("the target keeps what it received; snapshot pruning no longer spares "
                      "the job's base")
    return plan


def policies_table(policies: Mapping[str, Policy]) -> list[tuple[str, ...]]:
    rows: list[tuple[str, ...]] = [("DATASET", "KEEP", "RECURSIVE", "TAKES", "PRUNES",
                                    "NAMES", "HOOKS")]
    for dataset in sorted(policies):
        policy = policies[dataset]
        hooks = ", ".join(k for k, v in (("pre", policy.pre_hook), ("post", policy.post_hook))
                          if v) or "-"
        rows.append((dataset, policy.keep_text(),
                     ("children" if policy.children_only else "yes") if policy.recursive
                     else "no", "yes" if policy.take else "no", "yes" if policy.prune else "no",
                     f"{policy.prefix}_*", hooks))
    return rows


def plan_import_sanoid(host: Host, path: str | None = None, *,
                       keep_commands: bool = False) -> Plan:
    """sanoid.conf's datasets as policies (`zsn.zfs.sanoid`), replacing those datasets'
    policies; every dataset must exist here."""
    from pathlib import Path

    from zsn.zfs.autosnap import dataset_argv, parse_datasets
    from zsn.zfs.live import explain_failure, require_program, run_zfs_command
    from zsn.zfs.sanoid import DEFAULT_PATH, MAX_BYTES, import_sections, parse_ini

    source = Path(path) if path else host.path(DEFAULT_PATH)
    text = files.read_tracked(source, MAX_BYTES).text
    imported = import_sections(parse_ini(text, str(source)), keep_commands=keep_commands)
    if not imported.policies:
        raise ValidationError(f"{source} names no dataset zsn could import"
                              + (f" ({imported.notes[0]})" if imported.notes else ""))
    listed = run_zfs_command(dataset_argv(require_program("zfs")))
    if not listed.ok:
        raise ZsnError(explain_failure(listed))
    present = set(parse_datasets(listed.stdout))
    missing = sorted(set(imported.policies) - present)
    if missing:
        raise ValidationError(f"{', '.join(missing[:3])} "
                              f"{'does' if len(missing) == 1 else 'do'} not exist here "
                              f"(named in {source})")
    config = read_config(host)
    policies = {**config.policies, **imported.policies}
    from zsn.zfs.policy import encode

    plan = _plan(host, f"import {len(imported.policies)} sanoid "
                 f"polic{'y' if len(imported.policies) == 1 else 'ies'} from {source}",
                 config, encode(policies, config.jobs))
    for dataset, policy in sorted(imported.policies.items()):
        plan.notes.append(f"{dataset}: keep {policy.keep_text()}"
                          + (", recursive" if policy.recursive else "")
                          + ("" if policy.take else ", prune only")
                          + ("" if policy.prune else ", no pruning")
                          + "; zsn takes over its autosnap_ snapshots"
                          + (" (replaces zsn's policy)" if dataset in config.policies else ""))
    plan.warnings += imported.commands
    plan.notes += imported.notes
    plan.warnings.append("stop sanoid's own snapshots and pruning once this is in place "
                         "(systemctl disable --now sanoid.timer, or its cron line), or both "
                         "will take and prune")
    return plan
