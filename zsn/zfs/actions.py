"""ZFS changes zsn makes, each a `Plan` shown before it runs.

Scrubs (start or resume, pause, stop), one dataset property from a short list
(compression, atime, xattr, recordsize) with what the change means for data already
written and for the datasets that inherit it, and clearing a pool's error counters.
Nothing here destroys data. Every plan is built from a fresh read, refuses what ZFS
would refuse with a plain reason, and runs argv lists with ``LC_ALL=C``.
"""

from __future__ import annotations

import os
import re
import shlex
from collections.abc import Sequence
from dataclasses import dataclass

from zsn.errors import ValidationError, ZsnError
from zsn.plan import LiveStep, Plan
from zsn.system import commands
from zsn.system.host import Host
from zsn.zfs.live import read_zfs, require_program, run_zfs_command
from zsn.zfs.model import Pool
from zsn.zfs.names import validate_dataset_name, validate_pool_name
from zsn.zfs.units import is_number

SCRUB_VERBS = ("start", "pause", "stop")
ACTION_TIMEOUT = 60.0
NOT_ROOT_WARNING = "zsn is not root: zpool/zfs will refuse this unless you have been allowed it"
_SIZE_RE = re.compile(r"(\d+)([KM]?)", re.IGNORECASE)
_COMPRESSION_RE = re.compile(
    r"on|off|lz4|lzjb|zle|gzip(?:-[1-9])?|zstd(?:-(?:[1-9]|1[0-9]))?"
    r"|zstd-fast(?:-(?:[1-9]|10|[2-9]0|100|500|1000))?")


def _run(argv: Sequence[str]) -> commands.CommandResult:
    return run_zfs_command(argv, timeout=ACTION_TIMEOUT, check=True)


def shown(argv: Sequence[str]) -> str:
    """The command a plan step runs, as the user would type it (``zpool scrub -p tank``:
    the program by name, not by the path zsn found it at)."""
    return shlex.join([os.path.basename(argv[0]), *argv[1:]])


def _pool(host: Host, name: str) -> Pool:
    validate_pool_name(name)
    snapshot = read_zfs(host, datasets=False)
    if snapshot.unavailable:
        raise ZsnError(snapshot.unavailable)
    pool = snapshot.pool(name)
    if pool is None:
        if snapshot.errors:
            raise ZsnError("; ".join(snapshot.errors))
        known = ", ".join(p.name for p in snapshot.pools) or "none"
        raise ValidationError(f"no pool named {name!r} (pools: {known})")
    return pool


def _warnings(host: Host) -> list[str]:
    return [] if host.is_superuser else [NOT_ROOT_WARNING]


# -- scrubs ------------------------------------------------------------------------
def plan_scrub(host: Host, pool_name: str, verb: str) -> Plan:
    """Start (or resume a paused) scrub, pause it, or stop it."""
    if verb not in SCRUB_VERBS:
        raise ValidationError(f"scrub {verb!r}: say start, pause or stop")
    pool = _pool(host, pool_name)
    zpool = require_program("zpool")
    scan = pool.scan
    running = scan is not None and scan.state == "scanning"
    paused = scan is not None and scan.state == "paused"
    name = pool.name
    if running and scan is not None and scan.function == "resilver":
        raise ValidationError(f"pool {name} is resilvering; a scrub can start when it is done")
    plan = Plan(f"{verb} scrub on {name}", warnings=_warnings(host))
    start = [zpool, "scrub", name]
    pause = [zpool, "scrub", "-p", name]
    stop = [zpool, "scrub", "-s", name]
    if verb == "start":
        if running:
            raise ValidationError(f"a scrub is already running on {name} "
                                  f"({_progress(pool)}); pause or stop it instead")
        if paused:
            plan.title = f"resume the paused scrub on {name}"
            plan.steps.append(LiveStep(shown(start) + " (resumes where it paused)",
                                       lambda: _run(start), lambda: _run(pause)))
        else:
            plan.steps.append(LiveStep(shown(start), lambda: _run(start),
                                       lambda: _run(stop)))
            plan.notes.append("a scrub reads every allocated block "
                              f"({_allocated(pool)}): expect heavy I/O until it ends; "
                              "pausing keeps its progress, even across a reboot")
    elif verb == "pause":
        if not running:
            raise ValidationError(f"no scrub is running on {name}"
                                  + (" (it is already paused)" if paused else ""))
        plan.steps.append(LiveStep(shown(pause), lambda: _run(pause),
                                   lambda: _run(start)))
        plan.notes.append(f"'zpool scrub {name}' (or start in zsn) resumes where it paused")
    else:
        if not (running or paused):
            raise ValidationError(f"no scrub is running or paused on {name}")
        plan.steps.append(LiveStep(shown(stop), lambda: _run(stop)))
        plan.warnings.append("stopping throws the scrub's progress away: the next one starts "
                             "from the beginning (pause keeps it)")
    return plan


def _progress(pool: Pool) -> str:
    scan = pool.scan
    if scan is None or scan.percent is None:
        return "in progress"
    return f"{scan.percent:.1f}% done"


def _allocated(pool: Pool) -> str:
    from zsn.format import human_bytes

    return human_bytes(pool.allocated) if pool.allocated is not None else "all data"


# -- clear -------------------------------------------------------------------------
def plan_clear(host: Host, pool_name: str, device: str | None = None) -> Plan:
    pool = _pool(host, pool_name)
    zpool = require_program("zpool")
    argv = [zpool, "clear", pool.name]
    plan = Plan(f"clear errors on {pool.name}" + (f" ({device})" if device else ""),
                warnings=_warnings(host))
    if device is not None:
        vdev = pool.vdev(device)
        if vdev is None or vdev.kind in ("pool", "group"):
            leaves = ", ".join(v.name for v in pool.vdevs if v.is_leaf) or "none"
            raise ValidationError(f"pool {pool.name} has no device {device!r} "
                                  f"(devices: {leaves})")
        argv.append(device)
        counts = vdev.errors
    else:
        counts = sum(v.errors for v in pool.vdevs if v.kind != "group")
    plan.steps.append(LiveStep(shown(argv), lambda: _run(argv)))
    plan.notes.append(f"resets the read/write/checksum counters ({counts} now) and, for a "
                      "pool suspended by I/O errors, lets it try again; the list of damaged "
                      "files goes only after a scrub finds them whole")
    faulted = [v.name for v in pool.vdevs if v.state in ("FAULTED", "UNAVAIL")
               and (device is None or v.name == device)]
    if faulted:
        plan.warnings.append(f"{', '.join(faulted)} {'is' if len(faulted) == 1 else 'are'} "
                             "faulted: ZFS will use it again, and fault it again if the disk "
                             "still fails")
    return plan


# -- dataset properties ------------------------------------------------------------
@dataclass(frozen=True)
class PropertyChange:
    """What one property means for data already on disk."""

    name: str
    values: str
    """The values offered, for help texts and errors."""
    existing: str
    """``{value}`` is replaced by the new value."""


PROPERTIES = {
    "compression": PropertyChange(
        "compression", "lz4, zstd, zstd-1..19, gzip, gzip-1..9, zle, lzjb, on, off",
        "existing blocks keep their compression; only new writes use {value}"),
    "atime": PropertyChange(
        "atime", "on, off",
        "applies at once to every file: reads {atime_effect}"),
    "xattr": PropertyChange(
        "xattr", "sa, dir, on, off",
        "attributes already written stay where they are; new or rewritten ones {xattr_effect}"),
    "recordsize": PropertyChange(
        "recordsize", "a power of two from 512 to 16M: 4K, 16K, 64K, 128K, 1M ...",
        "files already written keep their block size; new files use blocks up to {value}"),
}


def normalize_value(prop: str, value: str) -> str:
    """The value as zfs wants it, or a `ValidationError` naming what is allowed."""
    change = PROPERTIES.get(prop)
    if change is None:
        raise ValidationError(f"zsn sets {', '.join(PROPERTIES)}; not {prop[:40]!r}")
    text = value.strip().lower()
    if prop == "compression" and _COMPRESSION_RE.fullmatch(text):
        return text
    if prop == "atime" and text in ("on", "off"):
        return text
    if prop == "xattr" and text in ("sa", "dir", "on", "off"):
        return text
    if prop == "recordsize":
        match = _SIZE_RE.fullmatch(text.removesuffix("b"))
        if match:
            size = int(match.group(1)) * {"": 1, "k": 1024, "m": 1024 ** 2}[match.group(2)]
            if 512 <= size <= 16 * 1024 ** 2 and size & (size - 1) == 0:
                return f"{size // 1024 ** 2}M" if size >= 1024 ** 2 else \
                    f"{size // 1024}K" if size >= 1024 else str(size)
    raise ValidationError(f"{value[:40]!r} is not a {prop} value zsn sets ({change.values})")


def preview(prop: str, value: str) -> str:
    """What setting `prop` to `value` does to the data already there."""
    atime = ("no longer write access times" if value == "off" else
             "update access times again (relatime=on limits that to once a day)")
    xattr = ("go into the inode (sa): one read less per lookup" if value in ("sa", "on")
             else "go into hidden directories" if value == "dir" else "are refused")
    return PROPERTIES[prop].existing.format(value=value, atime_effect=atime, xattr_effect=xattr)


@dataclass(frozen=True)
class PropertyValue:
    dataset: str
    value: str
    source: str


def read_property(prop: str, dataset: str) -> list[PropertyValue]:
    """`zfs get -r` of one property: the dataset and everything below it."""
    zfs = require_program("zfs")
    result = run_zfs_command([zfs, "get", "-Hp", "-r", "-t", "filesystem,volume",
                              "-o", "name,value,source", prop, dataset])
    if not result.ok:
        raise ZsnError(f"zfs get {prop} {dataset} failed: {result.first_error_line()}")
    values = []
    for line in result.stdout.splitlines():
        fields = line.split("\t")
        if len(fields) == 3:
            values.append(PropertyValue(*fields))
    return values


def follows(source: str, dataset: str) -> bool:
    """Whether a descendant with this `source` takes `dataset`'s value when it changes."""
    if source == "default":
        return True
    prefix = "inherited from "
    if source.startswith(prefix):
        origin = source[len(prefix):]
        return origin == dataset or dataset.startswith(origin + "/")
    return False


def plan_set(host: Host, dataset: str, prop: str, value: str) -> Plan:
    validate_dataset_name(dataset)
    new = normalize_value(prop, value)
    values = read_property(prop, dataset)
    current = next((v for v in values if v.dataset == dataset), None)
    if current is None:
        raise ValidationError(f"no filesystem or volume named {dataset!r}")
    zfs = require_program("zfs")
    title = f"set {prop}={new} on {dataset}"
    plan = Plan(title, warnings=_warnings(host))
    shown_current = _shown(prop, current.value)
    if shown_current == new and current.source == "local":
        plan.notes.append(f"{dataset} already has {prop}={new}")
        return plan
    set_argv = [zfs, "set", f"{prop}={new}", dataset]
    if current.source == "local":
        undo_argv = [zfs, "set", f"{prop}={current.value}", dataset]
    else:
        undo_argv = [zfs, "inherit", prop, dataset]
    plan.steps.append(LiveStep(shown(set_argv), lambda: _run(set_argv),
                               lambda: _run(undo_argv)))
    plan.notes.append(f"currently {prop}={shown_current} ({_source(current.source)})")

    def read_back() -> str:
        now = next((v for v in read_property(prop, dataset) if v.dataset == dataset), None)
        after = f"{_shown(prop, now.value)} ({_source(now.source)})" if now else "unknown"
        return (f"{dataset}: was {prop}={shown_current} ({_source(current.source)}), "
                f"now {prop}={after}")

    plan.read_back = read_back
    plan.notes.append(preview(prop, new))
    below = [v for v in values if v.dataset != dataset]
    changing = [v.dataset for v in below if follows(v.source, dataset)]
    keeping = [f"{v.dataset} ({_shown(prop, v.value)}, {_source(v.source)})" for v in below
               if not follows(v.source, dataset)]
    if changing:
        plan.notes.append(f"also changes {len(changing)} dataset(s) that inherit it: "
                          + _listed(changing))
    if keeping:
        plan.notes.append("keep their own value: " + _listed(keeping))
    if prop == "xattr" and new == "off":
        plan.warnings.append("xattr=off makes extended attributes (ACLs, SELinux labels, "
                             "capabilities) unavailable to programs")
    return plan


def _shown(prop: str, value: str) -> str:
    if prop == "recordsize" and is_number(value):
        size = int(value)
        return f"{size // 1024 ** 2}M" if size >= 1024 ** 2 and size % 1024 ** 2 == 0 else \
            f"{size // 1024}K" if size >= 1024 and size % 1024 == 0 else value
    return value


def _source(source: str) -> str:
    """ZFS's own word for where a value comes from: local, default, inherited from X."""
    return {"-": "fixed"}.get(source, source)


def _listed(names: list[str], limit: int = 6) -> str:
    shown = ", ".join(names[:limit])
    return shown + (f" and {len(names) - limit} more" if len(names) > limit else "")
