"""Snapshot policies and replication jobs: what they are, and the one file zsn keeps
them in (``<root>/etc/zsn/zfs.json``).

A policy keeps, per snapshot class (frequently ... yearly), the newest N snapshots it
made of a dataset (and, with ``recursive``, of its descendants that have no policy of
their own); a replication job sends a dataset's snapshots to a target every so often.
Both are data: a hook is an argv list (run without a shell), a job names its target,
and zsn's code decides what runs.

The file is zsn's own state: it is read only when the state check passes
(`zsn.zfs.state`), and decoded strictly (`decode`: every field typed and bounded, an
unknown one refused, one line naming the file and the field).
"""

from __future__ import annotations

import json
import re
import shlex
from collections.abc import Mapping
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any

from zsn.decode import DecodeError
from zsn.errors import ValidationError
from zsn.system import files
from zsn.system.host import Host
from zsn.zfs.names import validate_dataset_name

CONFIG_PATH = "/etc/zsn/zfs.json"
MAX_CONFIG_BYTES = 1 << 20
VERSION = 1
CLASSES = ("frequently", "hourly", "daily", "weekly", "monthly", "yearly")
"""Snapshot classes, as sanoid names them (a snapshot's name ends with its class)."""
CLASS_ALIASES = {"frequent": "frequently"}
PERIODS = {"hourly": 3600, "daily": 86400, "weekly": 7 * 86400, "monthly": 31 * 86400,
           "yearly": 31557600}
"""Seconds per period of each class (sanoid's: a month counts 31 days, a year 365.25);
frequently's is the policy's `frequent_period`."""
MAX_KEEP = 100_000
FREQUENT_PERIODS = (60, 120, 180, 240, 300, 360, 600, 720, 900, 1200, 1800)
"""A frequent period divides the hour (sanoid's advice), from 1 to 30 minutes."""
DEFAULT_PREFIX = "zsn"
SANOID_PREFIX = "autosnap"
PREFIXES = (DEFAULT_PREFIX, SANOID_PREFIX)
HOOK_TIMEOUT = 30.0
MAX_HOOK_WORDS = 64
MAX_HOOK_WORD = 4096
JOB_NAME_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}")
VIA = ("ssh", "tcp")
MIN_EVERY = 60
MAX_EVERY = 366 * 86400
_DURATION_RE = re.compile(r"\s*([0-9]+)\s*(s|sec|m|min|h|d|w)?\s*", re.IGNORECASE)
_UNIT_SECONDS = {"": 1, "s": 1, "sec": 1, "m": 60, "min": 60, "h": 3600, "d": 86400,
                 "w": 604800}
_SHELL_WORDS = frozenset({"|", "||", "&", "&&", ";", ";;", "<", ">", ">>", "<<", "(", ")",
                          ">&", "<&", "|&"})


@dataclass(frozen=True)
class Schedule:
    """When each class is taken (sanoid's defaults and key names): a class is due once
    its last preferred time has passed since its newest snapshot. ``weekly_wday``
    counts from Sunday (0), as sanoid's does."""

    hourly_min: int = 0
    daily_hour: int = 23
    daily_min: int = 59
    weekly_wday: int = 1
    weekly_hour: int = 23
    weekly_min: int = 30
    monthly_mday: int = 1
    monthly_hour: int = 0
    monthly_min: int = 0
    yearly_mon: int = 1
    yearly_mday: int = 1
    yearly_hour: int = 0
    yearly_min: int = 0


SCHEDULE_BOUNDS = {
    "hourly_min": (0, 59), "daily_hour": (0, 23), "daily_min": (0, 59),
    "weekly_wday": (0, 6), "weekly_hour": (0, 23), "weekly_min": (0, 59),
    "monthly_mday": (1, 31), "monthly_hour": (0, 23), "monthly_min": (0, 59),
    "yearly_mon": (1, 12), "yearly_mday": (1, 31), "yearly_hour": (0, 23),
    "yearly_min": (0, 59),
}


@dataclass(frozen=True)
class Policy:
    """One dataset's snapshot policy."""

    dataset: str
    keep: Mapping[str, int]
    """Class -> how many of its newest snapshots stay; a class not named keeps none
    (its policy snapshots are pruned, as sanoid prunes a type set to 0)."""
    frequent_period: int = 900
    recursive: bool = False
    """Descendants without a policy of their own are covered too, snapshotted in one
    atomic ``zfs snapshot`` with the dataset."""
    children_only: bool = False
    """Only the descendants (sanoid's process_children_only): the dataset itself is
    neither snapshotted nor pruned."""
    take: bool = True
    """Take snapshots (false: only prune, e.g. a replication target)."""
    prune: bool = True
    prefix: str = DEFAULT_PREFIX
    """Snapshot names start ``PREFIX_``: ``zsn``, or ``autosnap`` for sanoid's (imported)."""
    schedule: Schedule = field(default_factory=Schedule)
    pre_hook: tuple[str, ...] = ()
    """An argv list run before the snapshots (no shell)."""
    post_hook: tuple[str, ...] = ()
    """An argv list run after them, whatever happened (the outcome in its environment)."""
    hook_timeout: float = HOOK_TIMEOUT

    def period(self, cls: str) -> int:
        return self.frequent_period if cls == "frequently" else PERIODS[cls]

    @property
    def kept_classes(self) -> tuple[str, ...]:
        return tuple(c for c in CLASSES if self.keep.get(c, 0) > 0)

    def keep_text(self) -> str:
        return ",".join(f"{c}={self.keep[c]}" for c in CLASSES if self.keep.get(c, 0) > 0) \
            or "nothing"


@dataclass(frozen=True)
class Job:
    """A replication job: `source`'s snapshots sent to `target` every `every` seconds."""

    name: str
    source: str
    target: str
    """``pool/ds`` here or ``[user@]host:pool/ds``."""
    every: int = 3600
    raw: bool = False
    allow_decrypted: bool = False
    """Send an encrypted source decrypted (otherwise a job from one is raw)."""
    via: str = "ssh"
    limit: float | None = None
    """Bytes per second."""
    recursive: bool = False
    added: float = 0.0
    """Unix time the job was added: its first run is due from then."""


@dataclass(frozen=True)
class ZfsConfig:
    """The file as read: its policies by dataset, its jobs by name."""

    path: Path
    snapshot: files.FileSnapshot | None
    policies: Mapping[str, Policy]
    jobs: Mapping[str, Job]


# -- values as typed by a user ----------------------------------------------------------
def parse_duration(text: str, what: str) -> int:
    """``15m``, ``1h``, ``90s``, ``2d``, ``1w`` (a bare number is seconds)."""
    match = _DURATION_RE.fullmatch(text)
    if match is None:
        raise ValidationError(f"{what}: {text[:40]!r} is not a duration (write e.g. 15m, 1h, "
                              "2d)")
    return int(match.group(1)) * _UNIT_SECONDS[(match.group(2) or "").lower()]


def check_frequent_period(seconds: int) -> int:
    if seconds not in FREQUENT_PERIODS:
        raise ValidationError(f"a frequent period of {seconds} s does not divide the hour: "
                              "use 1, 2, 3, 4, 5, 6, 10, 12, 15, 20 or 30 minutes")
    return seconds


def check_every(seconds: int) -> int:
    if not MIN_EVERY <= seconds <= MAX_EVERY:
        raise ValidationError(f"every {seconds} s: a job runs from every minute to once a "
                              "year")
    return seconds


def parse_keep(text: str) -> dict[str, int]:
    """``hourly=24,daily=7``: classes not named keep none."""
    keep: dict[str, int] = {}
    for part in text.split(","):
        name, equals, value = part.strip().partition("=")
        cls = CLASS_ALIASES.get(name.strip().lower(), name.strip().lower())
        if not equals or cls not in CLASSES:
            raise ValidationError(f"{part.strip()[:40]!r}: write CLASS=N with CLASS one of "
                                  "frequent, hourly, daily, weekly, monthly, yearly")
        if cls in keep:
            raise ValidationError(f"{cls} is named twice")
        keep[cls] = check_keep(value.strip(), cls)
    if not any(keep.values()):
        raise ValidationError("the policy keeps nothing: name at least one class with N > 0 "
                              "(zsn zfs policy remove drops a policy)")
    return keep


def check_keep(value: str, cls: str) -> int:
    if not value.isdigit() or not 0 <= int(value) <= MAX_KEEP:
        raise ValidationError(f"{cls}={value[:20]}: keep a whole number from 0 to {MAX_KEEP}")
    return int(value)


def parse_hook(text: str) -> tuple[str, ...]:
    """A hook as typed: words split as a shell would split them, but never run by one;
    shell operators are refused (a pipe or a redirection belongs in a script)."""
    lexer = shlex.shlex(text, posix=True, punctuation_chars=True)
    lexer.whitespace_split = True
    try:
        words = list(lexer)
    except ValueError as exc:
        raise ValidationError(f"hook {text[:60]!r}: {exc}") from None
    bad = [word for word in words if word in _SHELL_WORDS]
    if bad:
        raise ValidationError(f"hook {text[:60]!r} has {bad[0]!r}: hooks run without a shell "
                              "(put pipes and redirections in a script and name the script)")
    return check_hook(tuple(words))


def check_hook(argv: tuple[str, ...]) -> tuple[str, ...]:
    if not argv:
        return argv
    if not argv[0].startswith("/"):
        raise ValidationError(f"hook {shlex.join(argv)[:60]!r}: name the program by its "
                              "absolute path (hooks run without a PATH lookup)")
    if len(argv) > MAX_HOOK_WORDS or any(len(word) > MAX_HOOK_WORD for word in argv):
        raise ValidationError(f"hook {shlex.join(argv)[:60]!r} is too long")
    for word in argv:
        if "\0" in word or any(ord(c) < 32 or ord(c) == 127 for c in word):
            raise ValidationError(f"hook {shlex.join(argv)[:60]!r} holds a control "
                                  "character")
    return argv


def check_job_name(name: str) -> str:
    if not JOB_NAME_RE.fullmatch(name):
        raise ValidationError(f"job name {name[:40]!r}: letters, digits, '_', '.' and '-', "
                              "starting with a letter or digit, at most 64")
    return name


# -- the file ---------------------------------------------------------------------------
@dataclass
class _PolicyEntry:
    """A policy as the file holds it (`decode` checks what a type cannot say)."""

    keep: dict[str, int] = field(default_factory=dict)
    frequent_period: int = 900
    recursive: bool = False
    children_only: bool = False
    take: bool = True
    prune: bool = True
    prefix: str = DEFAULT_PREFIX
    schedule: dict[str, int] = field(default_factory=dict)
    pre_hook: list[str] = field(default_factory=list)
    post_hook: list[str] = field(default_factory=list)
    hook_timeout: float = HOOK_TIMEOUT


@dataclass
class _File:
    version: int = VERSION
    policies: dict[str, _PolicyEntry] = field(default_factory=dict)
    jobs: dict[str, dict[str, Any]] = field(default_factory=dict)
    """Each a `Job` but its name (the key)."""


_KNOWN = {"file": {f.name for f in fields(_File)},
          "policy": {f.name for f in fields(_PolicyEntry)},
          "job": {f.name for f in fields(Job)} - {"name"}}


def _shown(name: str, width: int = 64) -> str:
    """A name read from the file as a field of an error: one line."""
    return name[:width] if name.isprintable() else repr(name[:width])


def _unknown_field(document: object, source: str) -> None:
    """Refuse a field zsn does not know (a typo would otherwise be dropped silently)."""
    def check(value: object, kind: str, where: str) -> None:
        if isinstance(value, dict):
            extra = sorted(str(key) for key in value if key not in _KNOWN[kind])
            if extra:
                raise DecodeError(source, f"{where}{_shown(extra[0], 40)}",
                                  "not a field zsn knows")

    check(document, "file", "")
    if not isinstance(document, dict):
        return
    for key, kind in (("policies", "policy"), ("jobs", "job")):
        section = document.get(key)
        if isinstance(section, dict):
            for name, value in section.items():
                check(value, kind, f"{key}.{_shown(str(name))}.")


def decode(text: str, source: str = CONFIG_PATH) -> tuple[dict[str, Policy], dict[str, Job]]:
    """The file's policies and jobs; a `DecodeError` naming the field otherwise."""
    from zsn import decode as layer

    document = layer.from_json(text, dict[str, Any], source, max_bytes=MAX_CONFIG_BYTES)
    _unknown_field(document, source)
    found = layer.convert(document, _File, source)
    if found.version != VERSION:
        raise DecodeError(source, "version",
                          f"{found.version} is not {VERSION} (a newer zsn wrote it?)")
    policies = {name: _policy(name, value, source) for name, value in found.policies.items()}
    jobs = {name: _job(name, layer.convert({**value, "name": name}, Job, source,
                                           f"jobs.{_shown(name)}"), source)
            for name, value in found.jobs.items()}
    return policies, jobs


def _checked(source: str, where: str, check: Any, *args: Any) -> Any:
    try:
        return check(*args)
    except ValidationError as exc:
        raise DecodeError(source, where, str(exc)) from None


def _in_range(source: str, where: str, value: float, low: float, high: float) -> None:
    if not low <= value <= high:
        raise DecodeError(source, where, f"{value} is not from {low} to {high}")


def _policy(dataset: str, entry: _PolicyEntry, source: str) -> Policy:
    where = f"policies.{_shown(dataset, 60)}"
    _checked(source, where, validate_dataset_name, dataset)
    for cls, count in entry.keep.items():
        if cls not in CLASSES:
            raise DecodeError(source, f"{where}.keep.{_shown(cls, 20)}", "not a snapshot class")
        _in_range(source, f"{where}.keep.{cls}", count, 0, MAX_KEEP)
    defaults = Schedule()
    for key, value in entry.schedule.items():
        if key not in SCHEDULE_BOUNDS:
            raise DecodeError(source, f"{where}.schedule.{_shown(key, 20)}",
                              "not a field zsn knows")
        _in_range(source, f"{where}.schedule.{key}", value, *SCHEDULE_BOUNDS[key])
    schedule = Schedule(**{key: entry.schedule.get(key, getattr(defaults, key))
                           for key in SCHEDULE_BOUNDS})
    _checked(source, f"{where}.frequent_period", check_frequent_period,
             entry.frequent_period)
    if entry.prefix not in PREFIXES:
        raise DecodeError(source, f"{where}.prefix", f"not one of {', '.join(PREFIXES)}")
    pre = _checked(source, f"{where}.pre_hook", check_hook, tuple(entry.pre_hook))
    post = _checked(source, f"{where}.post_hook", check_hook, tuple(entry.post_hook))
    _in_range(source, f"{where}.hook_timeout", entry.hook_timeout, 1, 3600)
    keep = {cls: entry.keep[cls] for cls in CLASSES if cls in entry.keep}
    return Policy(dataset, keep, entry.frequent_period, entry.recursive, entry.children_only,
                  entry.take, entry.prune, entry.prefix, schedule, pre, post,
                  float(entry.hook_timeout))


def _job(name: str, job: Job, source: str) -> Job:
    where = f"jobs.{_shown(name)}"
    _checked(source, where, check_job_name, name)
    _checked(source, f"{where}.source", validate_dataset_name, job.source)
    from zsn.zfs.remote import parse_target

    _checked(source, f"{where}.target", parse_target, job.target)
    _in_range(source, f"{where}.every", job.every, MIN_EVERY, MAX_EVERY)
    if job.via not in VIA:
        raise DecodeError(source, f"{where}.via", "not ssh or tcp")
    if job.limit is not None:
        _in_range(source, f"{where}.limit", job.limit, 1024, 1 << 50)
    _in_range(source, f"{where}.added", job.added, 0, (1 << 40) - 1)
    return job


def encode(policies: Mapping[str, Policy], jobs: Mapping[str, Job]) -> str:
    """The file's text: what `decode` reads back to the same policies and jobs."""
    defaults = Schedule()
    document: dict[str, Any] = {"version": VERSION, "policies": {}, "jobs": {}}
    for dataset in sorted(policies):
        policy = policies[dataset]
        entry: dict[str, Any] = {
            "keep": {c: policy.keep[c] for c in CLASSES if c in policy.keep},
            "frequent_period": policy.frequent_period, "recursive": policy.recursive,
            "children_only": policy.children_only, "take": policy.take,
            "prune": policy.prune, "prefix": policy.prefix}
        schedule = {f.name: getattr(policy.schedule, f.name) for f in fields(Schedule)
                    if getattr(policy.schedule, f.name) != getattr(defaults, f.name)}
        if schedule:
            entry["schedule"] = schedule
        if policy.pre_hook:
            entry["pre_hook"] = list(policy.pre_hook)
        if policy.post_hook:
            entry["post_hook"] = list(policy.post_hook)
        if policy.hook_timeout != HOOK_TIMEOUT:
            entry["hook_timeout"] = policy.hook_timeout
        document["policies"][dataset] = entry
    for name in sorted(jobs):
        job = jobs[name]
        document["jobs"][name] = {
            "source": job.source, "target": job.target, "every": job.every, "raw": job.raw,
            "allow_decrypted": job.allow_decrypted, "via": job.via, "limit": job.limit,
            "recursive": job.recursive, "added": job.added}
    return json.dumps(document, indent=2) + "\n"


def read_config(host: Host) -> ZfsConfig:
    """The policies and jobs (none when the file does not exist yet)."""
    from zsn.zfs.state import read_own

    path = host.path(CONFIG_PATH)
    snapshot = read_own(host, path, MAX_CONFIG_BYTES)
    if snapshot is None:
        return ZfsConfig(path, None, {}, {})
    policies, jobs = decode(snapshot.text, str(path))
    return ZfsConfig(path, snapshot, policies, jobs)


def with_policy(config: ZfsConfig, policy: Policy | None, dataset: str) -> str:
    """The file's text with `dataset`'s policy set (or removed, with None)."""
    policies = dict(config.policies)
    if policy is None:
        policies.pop(dataset, None)
    else:
        policies[dataset] = policy
    return encode(policies, config.jobs)


def with_job(config: ZfsConfig, job: Job | None, name: str) -> str:
    jobs = dict(config.jobs)
    if job is None:
        jobs.pop(name, None)
    else:
        jobs[name] = job
    return encode(config.policies, jobs)


def governing(policies: Mapping[str, Policy], dataset: str) -> Policy | None:
    """The policy that covers `dataset`: its own, else the nearest recursive ancestor's
    (an ancestor's policy that is not recursive covers that ancestor alone)."""
    own = policies.get(dataset)
    if own is not None:
        return own
    parent = dataset
    while "/" in parent:
        parent = parent.rpartition("/")[0]
        found = policies.get(parent)
        if found is not None and found.recursive:
            return found
    return None


def replaced(policy: Policy, **changes: Any) -> Policy:
    return replace(policy, **changes)
