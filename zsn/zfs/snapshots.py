"""Snapshots: listing them (`zfs list -t snapshot`) and taking one (`zfs snapshot`).

A snapshot is read with its guid and creation txg besides what the user sees (creation
time, used, referenced, holds): send and receive keep the guid, so the guid, not the
name, says which snapshots a source and a target have in common, and the txg orders
them. Taking a snapshot is a plan like every change; zsn offers no way to destroy or
roll back to one.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import NamedTuple

from zsn.errors import ParseError, ValidationError, ZsnError
from zsn.format import excerpt
from zsn.plan import LiveStep, Plan
from zsn.system import commands
from zsn.system.host import Host
from zsn.zfs import units
from zsn.zfs.listing import parse_properties, parse_text_rows
from zsn.zfs.live import (
    NOT_INSTALLED,
    explain_failure,
    find_program,
    require_program,
    run_zfs_command,
)
from zsn.zfs.names import validate_dataset_name, validate_snapshot_name

COLUMNS = ("name", "guid", "createtxg", "creation", "used", "referenced", "userrefs")
"""What zsn asks `zfs list -t snapshot -o` for."""
SNAPSHOT_TIMEOUT = 60.0
NOT_ROOT_WARNING = "zsn is not root: zfs will refuse this unless you have been allowed it"


class Snapshot(NamedTuple):
    dataset: str
    name: str
    """The part after ``@``."""
    guid: int
    """Kept by send and receive: equal guids are the same snapshot on both sides."""
    createtxg: int
    """The pool transaction group it was taken in: orders a dataset's snapshots."""
    created: int | None = None
    """Unix time."""
    used: int | None = None
    """Space only this snapshot holds (freed if it alone were destroyed)."""
    referenced: int | None = None
    holds: int = 0
    """User holds (``zfs hold``): a held snapshot cannot be destroyed."""

    @property
    def full_name(self) -> str:
        return f"{self.dataset}@{self.name}"


def list_argv(zfs: str, dataset: str | None = None, recursive: bool = False) -> list[str]:
    """Oldest first. With a dataset and no `recursive`, ZFS lists that dataset's own
    snapshots only (``-t snapshot`` with a name implies depth 1)."""
    argv = [zfs, "list", "-Hp", "-t", "snapshot", "-o", ",".join(COLUMNS), "-s", "createtxg"]
    if recursive:
        argv.append("-r")
    if dataset is not None:
        argv.append(dataset)
    return argv


def _number(row: dict[str, str], key: str) -> int:
    value = units.integer(row[key])
    if value is None:
        raise ParseError(f"zfs list: snapshot {excerpt(row['name'])} has no {key}")
    return value


def parse(text: str) -> list[Snapshot]:
    """``zfs list -Hp -t snapshot -o name,guid,createtxg,creation,used,referenced,userrefs``."""
    found = []
    for row in parse_text_rows(text, COLUMNS, "zfs list"):
        dataset, at, name = row["name"].partition("@")
        if not at or not dataset or not name:
            raise ParseError(f"zfs list: {excerpt(row['name'])} is not a snapshot's name")
        found.append(Snapshot(
            dataset=dataset, name=name, guid=_number(row, "guid"),
            createtxg=_number(row, "createtxg"), created=units.integer(row["creation"]),
            used=units.size(row["used"]), referenced=units.size(row["referenced"]),
            holds=units.integer(row["userrefs"]) or 0))
    return found


def by_dataset(snapshots: Sequence[Snapshot]) -> dict[str, list[Snapshot]]:
    """Each dataset's snapshots, oldest first (by creation txg)."""
    grouped: dict[str, list[Snapshot]] = {}
    for snapshot in sorted(snapshots, key=lambda s: s.createtxg):
        grouped.setdefault(snapshot.dataset, []).append(snapshot)
    return grouped


Runner = Callable[[Sequence[str]], commands.CommandResult]


def read(run: Runner, zfs: str, dataset: str | None = None,
         recursive: bool = False) -> list[Snapshot]:
    """The snapshots of `dataset` (and its descendants with `recursive`), or of every
    pool; a missing dataset is a `ValidationError`, another failure a `ZsnError`."""
    if dataset is not None:
        validate_dataset_name(dataset)
    result = run(list_argv(zfs, dataset, recursive))
    if not result.ok:
        from zsn.zfs.live import explain_failure

        if dataset is not None and "dataset does not exist" in result.first_error_line():
            raise ValidationError(f"no filesystem or volume named {dataset!r}")
        raise ZsnError(explain_failure(result))
    return parse(result.stdout)


# -- taking one ----------------------------------------------------------------------
def plan_snapshot(host: Host, spec: str, recursive: bool = False) -> Plan:
    """``zfs snapshot [-r] DATASET@NAME``, refused when the dataset is missing or the
    snapshot exists already (on the dataset or, with `recursive`, a descendant)."""
    dataset, name = validate_snapshot_name(spec)
    zfs = require_program("zfs")
    existing = read(run_zfs_command, zfs, dataset, recursive)
    taken = [s.full_name for s in existing if s.name == name]
    if taken:
        raise ValidationError(f"{taken[0]} exists already; pick another name")
    argv = [zfs, "snapshot", *(["-r"] if recursive else []), f"{dataset}@{name}"]
    plan = Plan(f"snapshot {dataset}@{name}" + (" and its descendants" if recursive else ""),
                warnings=[] if host.is_superuser else [NOT_ROOT_WARNING])
    plan.steps.append(LiveStep(" ".join(argv[1:]), lambda: run_zfs_command(
        argv, timeout=SNAPSHOT_TIMEOUT, check=True)))
    if recursive:
        plan.notes.append("one atomic snapshot of the dataset and every descendant")
    plan.notes.append("a snapshot takes no space at first; it keeps the blocks that later "
                      "writes replace")
    return plan


def read_dataset(dataset: str) -> tuple[list[tuple[str, str, str]], list[Snapshot]]:
    """A dataset in full for the pane's dataset box: (property, value, source) as
    `zfs get -Hp all` lists them, and its own snapshots, oldest first."""
    zfs = find_program("zfs")
    if zfs is None:
        raise ZsnError(NOT_INSTALLED.format(program="zfs"))
    result = run_zfs_command([zfs, "get", "-Hp", "all", dataset])
    if not result.ok:
        raise ZsnError(explain_failure(result))
    return parse_properties(result.stdout), read(run_zfs_command, zfs, dataset)
