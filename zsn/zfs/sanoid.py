"""``zsn zfs policy import sanoid [PATH]``: sanoid.conf's datasets as zsn policies.

Read as sanoid reads it (its `init`, sanoid 2.1.0 and later): an INI file of
``[pool/fs]`` sections and ``[template_NAME]`` templates; each section starts from
sanoid's defaults, then ``[template_default]`` if the file has one, then the templates
of its ``use_template`` in order, then its own keys (``recursive`` never comes from a
template). A key sanoid does not know is refused, as sanoid refuses it. The snapshots
keep their names: an imported policy's prefix is ``autosnap``, so zsn prunes what
sanoid took and goes on taking the same names (local time, ``..._hourly``).

What zsn does differently is said in the plan: ``recursive = yes`` and ``zfs`` both
become one atomic snapshot of the tree; monitoring thresholds and ``prune_defer`` are
dropped (zsn's metrics and alert rules cover them); sanoid's scripts are shell
commands, so they are dropped unless ``--keep-commands``, and then kept only when they
split into a plain argv (no pipes or redirections); pruning scripts have no zsn
counterpart.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field

from zsn.errors import ParseError, ValidationError
from zsn.zfs.names import validate_dataset_name
from zsn.zfs.policy import (
    CLASSES,
    SANOID_PREFIX,
    SCHEDULE_BOUNDS,
    Policy,
    Schedule,
    check_frequent_period,
    parse_hook,
)

DEFAULT_PATH = "/etc/sanoid/sanoid.conf"
MAX_BYTES = 1 << 20
DEFAULTS: dict[str, str] = {
    "frequent_period": "15", "autoprune": "yes", "frequently": "0", "hourly": "48",
    "daily": "90", "weekly": "0", "monthly": "6", "yearly": "0", "prune_defer": "0",
    "autosnap": "1", "hourly_min": "0", "daily_hour": "23", "daily_min": "59",
    "weekly_wday": "1", "weekly_hour": "23", "weekly_min": "30", "monthly_mday": "1",
    "monthly_hour": "0", "monthly_min": "0", "yearly_mon": "1", "yearly_mday": "1",
    "yearly_hour": "0", "yearly_min": "0", "script_timeout": "5",
}
"""sanoid.defaults.conf's values zsn uses (sanoid 2.1.0, the same in 2.3)."""
KNOWN = frozenset(DEFAULTS) | {
    "path", "recursive", "use_template", "process_children_only", "skip_children",
    "pre_snapshot_script", "post_snapshot_script", "pre_pruning_script", "pruning_script",
    "no_inconsistent_snapshot", "force_post_snapshot_script", "monitor", "monitor_dont_warn",
    "monitor_dont_crit", "capacity_warn", "capacity_crit",
    *(f"{cls}_{level}" for cls in CLASSES for level in ("warn", "crit")),
}
"""Every key of sanoid.defaults.conf (2.1.0, and ``pre_pruning_script`` from 2.2.0)."""
TRUE = ("1", "true", "True", "TRUE", "yes", "Yes", "YES", "on", "On", "ON")
FALSE = ("0", "false", "False", "FALSE", "no", "No", "NO", "off", "Off", "OFF", "")
MONITORING = ("monitor", "monitor_dont_warn", "monitor_dont_crit", "capacity_warn",
              "capacity_crit", *(f"{cls}_{level}" for cls in CLASSES
                                 for level in ("warn", "crit")))
_SECTION_RE = re.compile(r"\[\s*(\S|\S.*\S)\s*\]")
_KEY_RE = re.compile(r"([^=]*?[^=\s])\s*=\s*(.*)")


def parse_ini(text: str, source: str) -> dict[str, dict[str, str]]:
    """Sections -> keys -> values, as Config::IniFiles reads them (a section named twice
    is one section; a key set twice in a section is refused: sanoid would see both
    values joined)."""
    if len(text) > MAX_BYTES:
        raise ParseError(f"larger than {MAX_BYTES} bytes", source=source)
    sections: dict[str, dict[str, str]] = {}
    current: dict[str, str] | None = None
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        if not line or line[0] in "#;":
            continue
        match = _SECTION_RE.fullmatch(line)
        if match:
            current = sections.setdefault(match.group(1), {})
            continue
        match = _KEY_RE.fullmatch(line)
        if match is None:
            raise ParseError(f"not a [section], KEY = VALUE or comment: {line[:60]!r}",
                             number, source)
        if current is None:
            raise ParseError(f"{match.group(1)[:40]!r} before any [section]", number, source)
        key, value = match.group(1), match.group(2).strip()
        if key in current:
            raise ParseError(f"{key} is set twice in its section", number, source)
        current[key] = value
    return sections


@dataclass
class Imported:
    """What an import found: the policies, and what zsn says about the rest."""

    policies: dict[str, Policy] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    commands: list[str] = field(default_factory=list)
    """Hooks kept, each named as a command that will run as root."""


def _toggle(value: str, key: str, section: str) -> bool:
    if value in TRUE:
        return True
    if value in FALSE:
        return False
    raise ValidationError(f"[{section}] {key} = {value[:20]!r}: not yes or no")


def _number(value: str, key: str, section: str) -> int:
    if not value.isdigit():
        raise ValidationError(f"[{section}] {key} = {value[:20]!r}: not a whole number")
    return int(value)


def _dataset(sections: Mapping[str, Mapping[str, str]], section: str) -> str:
    return sections[section].get("path") or section


def _recursive_parent(sections: Mapping[str, Mapping[str, str]], section: str) -> str | None:
    """The nearest section above `section`'s dataset that recurses (sanoid gives the
    children of a recursive section its settings; their own keys override them)."""
    dataset = _dataset(sections, section)
    found: tuple[int, str] | None = None
    for other in sections:
        if other == section or other.startswith("template_") or other == "version":
            continue
        top = _dataset(sections, other)
        recursion = sections[other].get("recursive", "")
        recursive = recursion in TRUE or recursion.lower() == "zfs"
        if recursive and dataset.startswith(top + "/") and (found is None or
                                                            len(top) > found[0]):
            found = (len(top), other)
    return found[1] if found else None


INHERITED_NOT = ("path", "recursive", "use_template", "process_children_only", "skip_children")


def settings(sections: Mapping[str, Mapping[str, str]], section: str) -> dict[str, str]:
    """One section's settings as sanoid merges them (see the module doc); under a
    recursive section, its settings take the defaults' place."""
    own = sections[section]
    parent = _recursive_parent(sections, section)
    if parent is not None:
        merged = {k: v for k, v in settings(sections, parent).items() if k not in INHERITED_NOT}
    else:
        merged = dict(DEFAULTS)
        merged.update({k: v for k, v in sections.get("template_default", {}).items()
                       if "template" not in k and "recursive" not in k})
    for name in re.split(r" *, *", own.get("use_template", "")):
        name = name.strip()
        if not name:
            continue
        template = sections.get(f"template_{name}")
        if template is None:
            raise ValidationError(f"[{section}] uses the template {name!r}, which the file "
                                  f"does not define ([template_{name}])")
        merged.update({k: v for k, v in template.items()
                       if "template" not in k and "recursive" not in k})
    merged.update({k: v for k, v in own.items() if k != "use_template"})
    return merged


def import_sections(sections: Mapping[str, Mapping[str, str]], *,
                    keep_commands: bool = False) -> Imported:
    """The policies of every dataset section (refusals name the section and key)."""
    found = Imported()
    for section, keys in sections.items():
        for key in keys:
            if key not in KNOWN:
                raise ValidationError(f"[{section}] sets {key!r}, which sanoid does not "
                                      "understand either (it stops with a FATAL ERROR)")
    for section in sections:
        if section.startswith("template_") or section == "version":
            continue
        merged = settings(sections, section)
        policy = _policy(section, merged, found, keep_commands)
        if policy is not None:
            found.policies[policy.dataset] = policy
    return found


def _policy(section: str, merged: dict[str, str], found: Imported,
            keep_commands: bool) -> Policy | None:
    dataset = merged.get("path") or section
    try:
        validate_dataset_name(dataset)
    except ValidationError as exc:
        raise ValidationError(f"[{section}]: {exc}") from None
    take = _toggle(merged["autosnap"], "autosnap", section)
    prune = _toggle(merged["autoprune"], "autoprune", section)
    recursion = merged.get("recursive", "")
    recursive = recursion.lower() == "zfs" or _toggle(recursion, "recursive", section)
    if merged.get("skip_children") and _toggle(merged["skip_children"], "skip_children",
                                               section):
        recursive = False
        found.notes.append(f"{dataset}: skip_children: its descendants are not covered")
    children_only = bool(merged.get("process_children_only")) and _toggle(
        merged["process_children_only"], "process_children_only", section)
    if children_only and not recursive:
        found.notes.append(f"{dataset}: process_children_only without recursion does "
                           "nothing in sanoid either: not imported")
        return None
    if not take and not prune:
        found.notes.append(f"{dataset}: neither autosnap nor autoprune: not imported")
        return None
    keep = {cls: _number(merged[cls], cls, section) for cls in CLASSES}
    period = _number(merged["frequent_period"], "frequent_period", section) * 60
    try:
        check_frequent_period(period)
    except ValidationError as exc:
        raise ValidationError(f"[{section}] frequent_period: {exc}") from None
    schedule = Schedule(**{key: _bounded(merged, key, section) for key in SCHEDULE_BOUNDS})
    hooks = _hooks(dataset, merged, found, keep_commands)
    timeout = _number(merged["script_timeout"], "script_timeout", section) \
        if merged["script_timeout"].lstrip("-").isdigit() else 5
    _notes(dataset, merged, found, recursion)
    return Policy(dataset, {c: n for c, n in keep.items() if n}, period, recursive,
                  children_only, take, prune, SANOID_PREFIX, schedule,
                  hooks.get("pre_snapshot_script", ()), hooks.get("post_snapshot_script", ()),
                  float(min(3600, timeout) if timeout > 0 else 3600))


def _bounded(merged: Mapping[str, str], key: str, section: str) -> int:
    value = _number(merged[key], key, section)
    low, high = SCHEDULE_BOUNDS[key]
    if not low <= value <= high:
        raise ValidationError(f"[{section}] {key} = {value}: not from {low} to {high}")
    return value


def _hooks(dataset: str, merged: Mapping[str, str], found: Imported,
           keep_commands: bool) -> dict[str, tuple[str, ...]]:
    hooks = {}
    for key in ("pre_snapshot_script", "post_snapshot_script"):
        command = merged.get(key, "")
        if not command:
            continue
        if not keep_commands:
            found.notes.append(f"{dataset}: {key} {command[:80]!r} dropped (a command that "
                               "would run as root: --keep-commands keeps it)")
            continue
        try:
            hooks[key] = parse_hook(command)
        except ValidationError as exc:
            raise ValidationError(f"{dataset}: {key}: {exc}") from None
        found.commands.append(f"{dataset}: {key.replace('_snapshot_script', '-hook')} runs "
                              f"as root: {list(hooks[key])!r}")
    for key in ("pruning_script", "pre_pruning_script"):
        if merged.get(key):
            found.notes.append(f"{dataset}: {key} dropped: zsn runs no command when it prunes")
    return hooks


def _notes(dataset: str, merged: Mapping[str, str], found: Imported, recursion: str) -> None:
    if recursion and recursion.lower() != "zfs" and recursion not in FALSE:
        found.notes.append(f"{dataset}: recursive = {recursion}: zsn snapshots the tree at "
                           "once (atomic, as sanoid's recursive = zfs)")
    if merged.get("prune_defer", "0") not in ("0", ""):
        found.notes.append(f"{dataset}: prune_defer dropped: zsn prunes whatever the pool's "
                           "capacity")
    if any(merged.get(key) for key in MONITORING):
        found.notes.append(f"{dataset}: monitoring thresholds dropped: zsn's metrics and alert "
                           "rules (contrib/prometheus) watch the snapshots' age")
