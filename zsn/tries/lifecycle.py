"""Trying a change: apply it under a guardian, then confirm it or roll it back.

`begin` records the change with its undo (`zsn.tries.undo`), starts the guardian
(`zsn.tries.guardians`) and only then applies the plan; the boot config the plan
would write (``--persist``) is kept in the record and written by `confirm`. Unless
`confirm` runs before the deadline, the guardian calls `roll_back`, which anyone may
also call sooner (``zsn rollback``). All three take the change's lock, so they never
act on it at once, and each leaves the record saying what happened.

A rollback restores state, not steps: what the change did is undone whether it was
applied fully, half (zsn killed part-way) or not at all, and what cannot be put
back is listed with the commands that would finish it.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field, replace

from zsn.errors import ValidationError, ZsnError
from zsn.plan import ApplyError, FileEdit, LiveStep, Plan
from zsn.system import files, netlink
from zsn.system.host import Host
from zsn.tries import guardians, restores
from zsn.tries import store as records
from zsn.tries.session import SessionPath
from zsn.tries.store import Change, Store
from zsn.tries.undo import Outcome, Undo, describe, perform

MIN_SECONDS = 1
MAX_SECONDS = 3600


class TryError(ZsnError):
    """A try could not be made; `change` is its record when one was written."""

    def __init__(self, message: str, change: Change | None = None):
        super().__init__(message)
        self.change = change


@dataclass
class AppliedTry:
    """A change that was applied under a guardian."""

    change: Change
    done: list[str]
    differences: list[str] = field(default_factory=list)
    """What verify-after-apply found different from what the plan meant."""


def check_seconds(seconds: float) -> float:
    if not MIN_SECONDS <= seconds <= MAX_SECONDS:
        raise ValidationError(f"a try lasts {MIN_SECONDS} to {MAX_SECONDS} seconds, not "
                              f"{seconds:g}", field="try_seconds")
    return seconds


def undo_of(plan: Plan) -> list[Undo]:
    """What puts back everything `plan` changes, live first (the session's path comes
    back before any file), then files in reverse; refused for a plan with a live
    step zsn cannot undo from another process."""
    live: list[Undo] = list(plan.checkpoint)
    file_undos: list[Undo] = []
    for step in reversed(plan.steps):
        if isinstance(step, LiveStep):
            if step.restore is None:
                raise ValidationError(f"{plan.title}: '{step.description}' cannot be undone "
                                      "by a guardian, so this change cannot be tried")
            live.extend(step.restore)
        elif not step.persistent:
            file_undos.extend(_file_undos(step))
    return live + file_undos


def _file_undos(edit: FileEdit) -> list[Undo]:
    target = files.write_target(edit.path)
    previous = edit.previous
    undos = [restores.file_undo(target, previous, None if edit.remove else edit.new_text)]
    if edit.backup and previous is not None:
        backup = files.backup_path(target)
        old = files.read_tracked(backup) if files.exists(backup) else None
        undos.append(restores.file_undo(backup, old, previous.text))
    return undos


def deferred_of(plan: Plan) -> list[dict[str, object]]:
    """The boot config edits of `plan`, as the record keeps them until confirm."""
    return [_edit_record(step) for step in plan.steps
            if isinstance(step, FileEdit) and step.persistent]


def _edit_record(edit: FileEdit) -> dict[str, object]:
    previous = edit.previous
    return {"path": str(edit.path), "new_text": edit.new_text, "mode": edit.mode,
            "private_dir": edit.private_dir, "backup": edit.backup, "remove": edit.remove,
            "previous": None if previous is None else previous._asdict() | {
                "path": str(previous.path)}}


def _edit_of(record: dict[str, object]) -> FileEdit:
    from pathlib import Path

    previous = record["previous"]
    snapshot = None
    if isinstance(previous, dict):
        snapshot = files.FileSnapshot(**{**previous, "path": Path(previous["path"])})
    mode = record["mode"]
    return FileEdit(Path(str(record["path"])), snapshot, str(record["new_text"]),
                    mode=mode if isinstance(mode, int) else None,
                    private_dir=bool(record["private_dir"]), backup=bool(record["backup"]),
                    remove=bool(record["remove"]), persistent=True)


def session_routes(session: SessionPath | None) -> list[Undo]:
    """The routes out through the session's path, put back if a change (or the kernel,
    as a consequence) took them: the last thing a rollback does for the session."""
    if session is None:
        return []
    try:
        routes = netlink.read_routes(set(session.names))
    except ZsnError:
        return []
    return [restores.routes_undo(routes)] if routes else []


def begin(host: Host, plan: Plan, seconds: float, command: str,
          session: SessionPath | None = None) -> AppliedTry:
    """Record `plan` with its undo, start its guardian, then apply it (without its boot
    config, kept for `confirm`). A plan that fails part-way is rolled back at once."""
    check_seconds(seconds)
    store = Store(host)
    _settle_abandoned(host, store)
    waiting = store.waiting()
    if waiting:
        other = waiting[0]
        raise ValidationError(f"change {other.id} ({other.title}) is still being tried: "
                              f"confirm it (zsn confirm {other.id}) or roll it back "
                              f"(zsn rollback {other.id}) first")
    undo = undo_of(plan) + session_routes(session)
    change = Change(id=store.new_id(), title=plan.title, command=command, seconds=seconds,
                    created=time.time(), undo=undo, deferred=deferred_of(plan),
                    session=session.describe() if session else "", netns=_netns())
    _keep_copies(store, change)
    store.save(change)
    try:
        change.guardian = guardians.start(host, store, change)
    except ZsnError as exc:
        store.discard(change.id)
        raise TryError(f"nothing was changed: {exc}") from exc
    with store.locked(change.id) as current:
        if current.state != records.ARMING:  # the guardian gave up waiting for zsn
            raise TryError(f"nothing was changed: change {change.id} is {current.state}")
        change.state = records.PENDING
        change.deadline = records.boot_clock() + seconds
        change.deadline_wall = time.time() + seconds
        store.save(change)
    live = replace(plan, steps=[step for step in plan.steps
                                if not (isinstance(step, FileEdit) and step.persistent)])
    try:
        done = live.apply()
    except ApplyError as exc:
        rolled = roll_back(host, change.id, by="zsn, when the change failed part-way")
        raise TryError(f"{exc}\n{report(rolled)}", rolled) from exc
    with store.locked(change.id) as current:
        if current.state == records.PENDING:  # not rolled back meanwhile
            current.applied = True
            store.save(current)
            change = current
    return AppliedTry(change, done, verify(plan))


def _settle_abandoned(host: Host, store: Store) -> None:
    """A change still being armed long after zsn began it, with no guardian: zsn was
    killed before it applied anything. It must not block every try after it."""
    limit = time.time() - guardians.ARMING_LIMIT - guardians.READY_TIMEOUT
    for change in store.waiting():
        if change.state == records.ARMING and change.created < limit \
                and not guardians.alive(host, store, change):
            with store.locked(change.id) as current:
                if current.state == records.ARMING:
                    current.finish(records.ABANDONED, "zsn, later: the zsn that began it went "
                                   "away before applying anything")
                    store.save(current)


def _netns() -> str:
    from zsn.system.namespaces import own_network_namespace

    return own_network_namespace()


def _keep_copies(store: Store, change: Change) -> None:
    """Copies of the files the change replaces, named in the commands a failed rollback
    prints."""
    number = 0
    for index, undo in enumerate(change.undo):
        if undo.kind == "file" and undo.data["before"] is not None:
            number += 1
            copy = store.keep_copy(change.id, number, undo.data["before"])
            change.undo[index] = Undo("file", {**undo.data, "copy": str(copy)})


SETTLE_SECONDS = 3.0
"""How long verify-after-apply lets the kernel and daemons settle (a link's carrier
coming up, a unit finishing) before a difference counts."""


def verify(plan: Plan, settle: float = SETTLE_SECONDS) -> list[str]:
    """Re-read what `plan` meant from the live system: the differences (empty: as
    meant). Each check is asked again until `settle` runs out."""
    deadline = time.monotonic() + settle
    pending = list(plan.checks)
    differences: list[str] = []
    while pending:
        differences = []
        still = []
        for check in pending:
            try:
                found = check.differences()
            except ZsnError as exc:
                found = [f"{check.description}: could not be read ({exc})"]
            if found:
                still.append(check)
                differences.extend(found)
        pending = still
        if not pending or time.monotonic() > deadline:
            break
        time.sleep(0.1)
    return differences


def confirm(host: Host, change_id: str | None) -> Change:
    """Keep a pending change: write the boot config it deferred, stop its guardian."""
    store = Store(host)
    change_id = change_id or _only_waiting(store, "confirm")
    with store.locked(change_id) as change:
        if change.state not in records.WAITING:
            raise ValidationError(f"change {change.id} is {change.state}, not pending: "
                                  "nothing to confirm")
        if change.state == records.ARMING:
            raise ValidationError(f"change {change.id} is still being applied")
        if change.seconds_left() <= 0:
            raise ValidationError(f"change {change.id}: too late, its deadline passed "
                                  "(the guardian is rolling it back)")
        written = []
        for record in change.deferred:
            edit = _edit_of(record)
            edit.apply()
            written.append(edit.description)
        change.finish(records.CONFIRMED, "zsn confirm", Outcome(done=written))
        store.save(change)
    guardians.stop(host, store, change)
    store.prune()
    return change


def roll_back(host: Host, change_id: str | None, by: str = "zsn rollback",
              from_guardian: bool = False) -> Change:
    """Undo a pending change now (or finish a rollback that was incomplete)."""
    store = Store(host)
    change_id = change_id or _only_waiting(store, "roll back")
    with store.locked(change_id) as change:
        if change.state == records.ARMING:
            change.finish(records.ABANDONED, by)
            store.save(change)
            return change
        if change.state not in (records.PENDING, records.INCOMPLETE):
            if from_guardian:
                return change
            raise ValidationError(f"change {change.id} is {change.state}: nothing to roll "
                                  "back")
        outcome = perform(host, change.undo)
        change.finish(records.ROLLED_BACK if outcome.complete else records.INCOMPLETE, by,
                      outcome)
        store.save(change)
    if not from_guardian:
        guardians.stop(host, store, change)
    store.prune()
    return change


def _only_waiting(store: Store, verb: str) -> str:
    waiting = store.waiting()
    if not waiting:
        raise ValidationError(f"no change is pending: nothing to {verb}")
    if len(waiting) > 1:
        listed = ", ".join(f"{change.id} ({change.title})" for change in waiting)
        raise ValidationError(f"several changes are pending, say which: {listed}")
    return waiting[0].id


def report(change: Change) -> str:
    """What a rollback did and left, for a person, with the commands that finish it."""
    outcome = change.outcome
    lines = [f"change {change.id} ({change.title}): {change.state} by {outcome.get('by')}"]
    lines += [f"  restored: {item}" for item in outcome.get("done", [])]
    lines += [f"  NOT restored: {item}" for item in outcome.get("left", [])]
    if outcome.get("commands"):
        lines.append("  to finish by hand:")
        lines += [f"    {command}" for command in outcome["commands"]]
    return "\n".join(lines)


def describe_undo(change_undo: list[Undo]) -> list[str]:
    return [describe(undo) for undo in change_undo]
