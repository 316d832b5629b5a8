"""ZFS's section of the desired-state file (`zsn.desired`, docs/state.md): snapshot
policies by dataset and replication jobs by name, as ``/etc/zsn/zfs.json`` holds them.

`plans` yields the plans the single commands make (`zsn.zfs.policy_actions`:
``zsn zfs policy set``, ``remove``, ``zsn zfs replicate add``, ``remove``, and a job's
settings changed in place), each read into the command's own request, so each value is
checked and each refusal worded once: a dataset this host does not have is refused as
``policy set`` refuses it. A policy or a job the machine has as the file says plans
nothing, and asks ZFS nothing: a section of policies and jobs the host has applies as
nothing even where ZFS is not installed; one that would set something there is refused
in one line. A key the file leaves out is left as the machine has it (a new policy or
job gets the command's default); ``exclusive: true`` removes the policies and jobs it
does not name.

Hooks are argv lists, checked as a typed hook's words are. A file never gives a
policy a program to run: a hook that is not the policy's already is refused (it
would run as root at every snapshot run, from a file meant to be copied across a
fleet, as wg-quick's hooks are left out of an import); the file may name the hooks a
policy has (the export does), or clear them. ``zsn zfs policy set --pre-hook`` on the
host sets one.
"""

from __future__ import annotations

import shlex
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, fields
from typing import TYPE_CHECKING, Any

from zsn.desired.spec import checked, repeated
from zsn.errors import ValidationError, ZsnError
from zsn.zfs.names import validate_dataset_name
from zsn.zfs.policy import (
    CLASS_ALIASES,
    CLASSES,
    HOOK_TIMEOUT,
    PREFIXES,
    SCHEDULE_BOUNDS,
    VIA,
    Job,
    Policy,
    Schedule,
    check_every,
    check_frequent_period,
    check_hook,
    check_job_name,
    check_keep,
)

if TYPE_CHECKING:
    from zsn.plan import Plan
    from zsn.system.host import Host
    from zsn.zfs.policy_actions import JobRequest, PolicyRequest

ORDER = 30
"""Last: a job may replicate over a tunnel the file makes."""
HOOKS = ("pre_hook", "post_hook")


def _in_range(what: str, value: float, low: float, high: float) -> None:
    if not low <= value <= high:
        raise ValueError(f"{what} {value}: from {low} to {high}")


@dataclass
class PolicySpec:
    """One dataset's snapshot policy (`zsn.zfs.policy.Policy`); None: as it is (a new
    policy: as ``zsn zfs policy set`` leaves it)."""

    dataset: str
    keep: dict[str, int] | None = None
    """Class -> how many of its newest snapshots stay (a class not named keeps none);
    needed for a new policy."""
    frequent_period: int | None = None
    recursive: bool | None = None
    children_only: bool | None = None
    take: bool | None = None
    prune: bool | None = None
    prefix: str | None = None
    schedule: dict[str, int] | None = None
    """The whole schedule: a key not named takes sanoid's default."""
    pre_hook: list[str] | None = None
    post_hook: list[str] | None = None
    hook_timeout: float | None = None

    def __post_init__(self) -> None:
        checked(validate_dataset_name, self.dataset)
        if self.keep is not None:
            self.keep = _keep(self.keep)
        if self.frequent_period is not None:
            checked(check_frequent_period, self.frequent_period)
        if self.prefix is not None and self.prefix not in PREFIXES:
            raise ValueError(f"prefix {self.prefix[:20]!r}: say {' or '.join(PREFIXES)}")
        for key, value in (self.schedule or {}).items():
            if key not in SCHEDULE_BOUNDS:
                raise ValueError(f"schedule: {key[:30]!r} is not one of "
                                 f"{', '.join(SCHEDULE_BOUNDS)}")
            _in_range(f"schedule: {key}", value, *SCHEDULE_BOUNDS[key])
        for key in HOOKS:
            hook = getattr(self, key)
            if hook is not None:
                checked(check_hook, tuple(hook))
        if self.hook_timeout is not None:
            _in_range("hook_timeout", self.hook_timeout, 1, 3600)
            if not float(self.hook_timeout).is_integer():
                raise ValueError(f"hook_timeout {self.hook_timeout}: whole seconds")


def _keep(keep: dict[str, int]) -> dict[str, int]:
    """`keep` with sanoid's class names (``frequent`` is ``frequently``), in class order,
    each count checked as ``--keep`` checks it."""
    found: dict[str, int] = {}
    for name, count in keep.items():
        cls = CLASS_ALIASES.get(name, name)
        if cls not in CLASSES:
            raise ValueError(f"keep: {name[:30]!r} is not a snapshot class (frequently, "
                             "hourly, daily, weekly, monthly, yearly)")
        if cls in found:
            raise ValueError(f"keep: {cls} is named twice")
        found[cls] = checked(check_keep, str(count), cls)
    if not any(found.values()):
        raise ValueError("keep: the policy keeps nothing (name a class with N > 0; "
                         "exclusive: true drops a policy the section does not name)")
    return {cls: found[cls] for cls in CLASSES if cls in found}


@dataclass
class JobSpec:
    """One replication job (`zsn.zfs.policy.Job`) by name; None: as it is (a new job
    needs its source and target, the rest as ``zsn zfs replicate add`` leaves it)."""

    name: str
    source: str | None = None
    target: str | None = None
    """``pool/ds`` here or ``[user@]host:pool/ds``."""
    every: int | None = None
    """Seconds."""
    raw: bool | None = None
    allow_decrypted: bool | None = None
    via: str | None = None
    limit: float | None = None
    """Bytes per second; 0: no limit."""
    recursive: bool | None = None

    def __post_init__(self) -> None:
        from zsn.zfs.remote import parse_target

        checked(check_job_name, self.name)
        if self.source is not None:
            checked(validate_dataset_name, self.source)
        if self.target is not None:
            checked(parse_target, self.target)
        if self.every is not None:
            checked(check_every, self.every)
        if self.via is not None and self.via not in VIA:
            raise ValueError(f"via {self.via[:20]!r}: say {' or '.join(VIA)}")
        if self.limit:
            _in_range("limit", self.limit, 1024, 1 << 50)  # as --limit (zsn.zfs.send)
        elif self.limit is not None and self.limit != 0:
            raise ValueError(f"limit {self.limit}: bytes per second (0: no limit)")


@dataclass
class ZfsSection:
    policies: list[PolicySpec] = field(default_factory=list)
    jobs: list[JobSpec] = field(default_factory=list)
    exclusive: bool = False
    """Policies and jobs the section does not name are removed."""

    def __post_init__(self) -> None:
        twice = repeated(policy.dataset for policy in self.policies)
        if twice:
            raise ValueError(f"a policy for {twice[0]!r} given twice")
        twice = repeated(job.name for job in self.jobs)
        if twice:
            raise ValueError(f"job {twice[0]!r} given twice")


SECTION = ZfsSection


# -- the machine as it is ------------------------------------------------------------------
def _number(value: float) -> float | int:
    """A whole number as an int (what YAML and the schema read back as one)."""
    return int(value) if float(value).is_integer() else value


def policy_entry(policy: Policy) -> dict[str, Any]:
    defaults = Schedule()
    return {"dataset": policy.dataset,
            "keep": {cls: policy.keep[cls] for cls in CLASSES if cls in policy.keep},
            "frequent_period": policy.frequent_period, "recursive": policy.recursive,
            "children_only": policy.children_only, "take": policy.take,
            "prune": policy.prune, "prefix": policy.prefix,
            "schedule": {each.name: getattr(policy.schedule, each.name)
                         for each in fields(Schedule)
                         if getattr(policy.schedule, each.name) != getattr(defaults,
                                                                           each.name)},
            "pre_hook": list(policy.pre_hook), "post_hook": list(policy.post_hook),
            "hook_timeout": _number(policy.hook_timeout)}


def job_entry(job: Job) -> dict[str, Any]:
    return {"name": job.name, "source": job.source, "target": job.target,
            "every": job.every, "raw": job.raw, "allow_decrypted": job.allow_decrypted,
            "via": job.via, "limit": _number(job.limit or 0), "recursive": job.recursive}


def describe(host: Host) -> tuple[dict[str, Any], list[str]]:
    """Every policy and job of ``/etc/zsn/zfs.json``; nothing on a host that has neither
    that file nor ZFS. A file zsn may not read (the state check) or cannot decode is
    an error, and the section is left out (applying the export leaves it alone)."""
    from zsn.zfs import live
    from zsn.zfs.policy import read_config

    try:
        config = read_config(host)
    except ZsnError as exc:
        return {}, [str(exc)]
    if config.snapshot is None and live.find_program("zfs") is None:
        return {}, []
    return {"policies": [policy_entry(config.policies[d]) for d in sorted(config.policies)],
            "jobs": [job_entry(config.jobs[n]) for n in sorted(config.jobs)]}, []


# -- plans ---------------------------------------------------------------------------------
def _policy_request(spec: PolicySpec, have: Policy | None) -> PolicyRequest | None:
    """The ``policy set`` request that makes `spec` so (what it leaves out kept from
    `have`), or None when the policy is so already."""
    from zsn.zfs.policy_actions import PolicyRequest

    if have is not None and all(
            value is None or _same(key, value, getattr(have, key))
            for key, value in vars(spec).items() if key != "dataset"):
        return None
    for key in HOOKS:
        hook = getattr(spec, key)
        if hook and tuple(hook) != (getattr(have, key) if have is not None else ()):
            raise ValidationError(
                f"{spec.dataset}: {key} {shlex.join(hook)[:60]!r}: a desired-state file "
                "does not give a policy a program to run as root (set it on the host: zsn "
                f"zfs policy set {spec.dataset} --{key.replace('_', '-')} ...; the file may "
                "name the hooks the policy has, or [])")
    if spec.keep is None and have is None:
        raise ValidationError(f"{spec.dataset} has no policy here: give its keep")

    def value(key: str, default: Any) -> Any:
        given = getattr(spec, key)
        if given is not None:
            return given
        return getattr(have, key) if have is not None else default

    keep = value("keep", {})
    timeout = value("hook_timeout", HOOK_TIMEOUT)
    return PolicyRequest(
        spec.dataset, ",".join(f"{cls}={count}" for cls, count in keep.items()),
        str(value("frequent_period", 900)), value("recursive", False),
        value("children_only", False), pre_hook=tuple(value("pre_hook", ())),
        post_hook=tuple(value("post_hook", ())),
        hook_timeout=str(int(timeout)) if float(timeout).is_integer() else str(timeout),
        take=value("take", True), prune=value("prune", True), prefix=value("prefix", None),
        schedule=Schedule(**spec.schedule) if spec.schedule is not None else None)


def _same(key: str, wanted: Any, have: Any) -> bool:
    if key == "schedule":
        return bool(Schedule(**wanted) == have)
    if key in HOOKS:
        return tuple(wanted) == tuple(have)
    if key == "keep":
        return dict(wanted) == dict(have)
    return bool(wanted == have)


def _job_request(spec: JobSpec, have: Job | None) -> JobRequest | None:
    """The ``replicate add`` request that makes `spec` so, or None when it is so."""
    from zsn.zfs.policy_actions import JobRequest

    given = {key: value for key, value in vars(spec).items() if value is not None}
    if have is not None and all(
            (value or None) == have.limit if key == "limit" else value == getattr(have, key)
            for key, value in given.items()):
        return None
    if have is None and (spec.source is None or spec.target is None):
        raise ValidationError(f"job {spec.name} does not exist here: give its source and "
                              "target")

    def value(key: str, default: Any) -> Any:
        found = getattr(spec, key)
        if found is not None:
            return found
        return getattr(have, key) if have is not None else default

    limit = value("limit", None)
    return JobRequest(spec.name, value("source", ""), value("target", ""),
                      str(value("every", 3600)), value("raw", False),
                      value("allow_decrypted", False), value("via", "ssh"),
                      repr(float(limit)) if limit else None, value("recursive", False))


def plans(host: Host, section: ZfsSection) -> Iterator[Plan]:
    """The plans ``zsn zfs policy ...`` and ``zsn zfs replicate ...`` make, that make the
    policies and jobs as `section` says (removals first, with ``exclusive``)."""
    from zsn.zfs import policy_actions
    from zsn.zfs.policy import read_config

    config = read_config(host)
    work: list[Callable[[], Plan]] = []
    if section.exclusive:
        named = {spec.dataset for spec in section.policies}
        work += [_call(policy_actions.plan_remove_policy, host, dataset)
                 for dataset in sorted(set(config.policies) - named)]
        named = {spec.name for spec in section.jobs}
        work += [_call(policy_actions.plan_remove_job, host, name)
                 for name in sorted(set(config.jobs) - named)]
    setting: list[str] = []
    for spec in section.policies:
        request = _policy_request(spec, config.policies.get(spec.dataset))
        if request is not None:
            setting.append(f"the policy of {spec.dataset}")
            work.append(_call(policy_actions.plan_set_policy, host, request))
    for job in section.jobs:
        have = config.jobs.get(job.name)
        job_request = _job_request(job, have)
        if job_request is not None:
            setting.append(f"job {job.name}")
            work.append(_call(policy_actions.plan_change_job if have is not None
                              else policy_actions.plan_add_job, host, job_request))
    _require_zfs(setting)
    for make in work:
        yield make()


def _call(function: Callable[..., Plan], *args: Any) -> Callable[[], Plan]:
    return lambda: function(*args)


def _require_zfs(setting: list[str]) -> None:
    """Refuse, in one line, a section that sets something on a host without ZFS (a
    section the host matches plans nothing there, and asks nothing)."""
    from zsn.zfs import live

    if setting and live.find_program("zfs") is None:
        more = f" and {len(setting) - 1} more" if len(setting) > 1 else ""
        raise ValidationError(f"this host has no ZFS ({live.NOT_INSTALLED.format(program='zfs')}"
                              f"): the section sets {setting[0]}{more}")
