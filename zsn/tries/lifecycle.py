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

A try owns what it touches while it is pending (`refuse_owned`: another change to
it is refused, naming the try), and its record keeps the state it left each aspect
in: a rollback leaves alone what changed since (someone's later change), says so,
and restores it only when forced (``zsn rollback ID --force``).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field, replace

from zsn.errors import AccessDeniedError, ValidationError, ZsnError
from zsn.meaning import CheckedBefore
from zsn.plan import ApplyError, FileEdit, LiveStep, Plan
from zsn.system import files, netlink
from zsn.system.host import Host
from zsn.tries import guardians, restores
from zsn.tries import store as records
from zsn.tries.session import SessionPath
from zsn.tries.store import Change, DeferredEdit, FileSnapshotData, Store
from zsn.tries.undo import (
    Outcome,
    Undo,
    changed_since,
    describe,
    objects,
    observe,
    perform,
)
from zsn.wording import Action, Phrase

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


def undo_of(host: Host, plan: Plan) -> list[Undo]:
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
            file_undos.extend(_file_undos(host, step))
    return live + file_undos


def _file_undos(host: Host, edit: FileEdit) -> list[Undo]:
    target = files.write_target(edit.path)
    previous = edit.previous
    undos = [restores.file_undo(host, target, previous,
                                None if edit.remove else edit.new_text)]
    if edit.backup and previous is not None:
        backup = files.backup_path(target)
        old = files.read_tracked(backup) if files.exists(backup) else None
        undos.append(restores.file_undo(host, backup, old, previous.text))
    return undos


def touched_by(host: Host, plan: Plan) -> set[str]:
    """What `plan` changes, by name (`zsn.tries.undo.objects`): each undo's objects,
    every file it writes (boot config included), and for a live step with no undo
    the links the plan says it touches."""
    found = objects(plan.checkpoint)
    for step in plan.steps:
        if isinstance(step, FileEdit):
            found.add(f"file {host.system_path(files.write_target(step.path))}")
        elif step.restore is None:
            found.update(f"link {name}" for name in plan.touches)
        else:
            found.update(objects(step.restore))
    return found


def refuse_owned(host: Host, plan: Plan) -> None:
    """Refuse `plan` when it changes something a pending try owns, naming the try:
    the try's rollback would undo it (or it the try's), so one of the two must end
    first. Nothing to check without the store (not root: nothing to change either)."""
    store = Store(host)
    try:
        waiting = store.waiting()
    except AccessDeniedError:
        return
    if not waiting:
        return
    mine = touched_by(host, plan)
    for change in waiting:
        shared = sorted(mine & set(change.owns))
        if shared:
            also = f" (and {len(shared) - 1} more)" if len(shared) > 1 else ""
            raise ValidationError(Phrase(
                f"{shared[0]}{also} belongs to change {change.id} ({change.title}), still "
                "being tried: keep it (", Action("keep_try", f"zsn confirm {change.id}"),
                ") or roll it back (", Action("undo_try", f"zsn rollback {change.id}"),
                ") first"))


def deferred_of(host: Host, plan: Plan) -> list[DeferredEdit]:
    """The boot config edits of `plan`, as the record keeps them until confirm."""
    return [_edit_record(host, step) for step in plan.steps
            if isinstance(step, FileEdit) and step.persistent]


def _edit_record(host: Host, edit: FileEdit) -> DeferredEdit:
    previous = edit.previous
    path = host.system_path(edit.path)
    return DeferredEdit(path, edit.new_text, edit.mode, edit.private_dir, edit.backup,
                        edit.remove, None if previous is None else FileSnapshotData(
                            path, previous.text, previous.mtime_ns, previous.size,
                            previous.inode, previous.mode))


_PLANNED = CheckedBefore("when the try was planned: the boot config it writes on confirm")


def _edit_of(host: Host, record: DeferredEdit) -> FileEdit:
    previous = record.previous
    path = host.path(record.path)
    snapshot = None if previous is None else files.FileSnapshot(
        path, previous.text, previous.mtime_ns, previous.size, previous.inode, previous.mode)
    return FileEdit(path, snapshot, record.new_text, mode=record.mode,
                    private_dir=record.private_dir, backup=record.backup, remove=record.remove,
                    persistent=True,
                    intent=None if record.remove else _PLANNED)


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
    waiting, unreadable = store.scan()
    waiting = [change for change in waiting if change.state in records.WAITING]
    if waiting:
        other = waiting[0]
        raise ValidationError(f"change {other.id} ({other.title}) is still being tried: "
                              f"confirm it (zsn confirm {other.id}) or roll it back "
                              f"(zsn rollback {other.id}) first")
    if unreadable:
        bad = unreadable[0]
        raise ValidationError(f"{bad.path} cannot be used ({bad.reason}): it may be a change "
                              "still being tried, so nothing is tried until a person looked "
                              "at it and removed it")
    undo = undo_of(host, plan) + session_routes(session)
    change = Change(id=store.new_id(), title=plan.title, command=command, seconds=seconds,
                    created=time.time(), undo=undo, deferred=deferred_of(host, plan),
                    session=session.describe() if session else "", netns=_netns(),
                    owns=sorted(touched_by(host, plan)))
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
    left = observe(host, change.undo)  # what a rollback compares: changed since?
    with store.locked(change.id) as current:
        if current.state == records.PENDING:  # not rolled back meanwhile
            current.applied = True
            current.after = left
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
        if isinstance(undo.params, restores.FileUndo) and undo.params.before is not None:
            number += 1
            copy = store.keep_copy(change.id, number, undo.params.before)
            change.undo[index] = Undo("file", replace(undo.params,
                                                      copy=store.host.system_path(copy)))


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
            edit = _edit_of(host, record)
            edit.apply()
            written.append(edit.description)
        change.finish(records.CONFIRMED, "zsn confirm", Outcome(done=written))
        store.save(change)
    guardians.stop(host, store, change)
    store.prune()
    return change


def roll_back(host: Host, change_id: str | None, by: str = "zsn rollback",
              from_guardian: bool = False, force: bool = False) -> Change:
    """Undo a pending change now (or finish a rollback that was incomplete). What
    changed since the try left it is left alone (and said) unless `force`."""
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
        changed = {} if force or not change.after else changed_since(
            observe(host, change.undo), change.undo, change.after)
        outcome = perform(host, change.undo, frozenset(changed), force)
        for aspect, (then, now) in sorted(changed.items()):
            outcome.left.append(f"{_changed(host, aspect, then, now)}: left as it is (zsn rollback "
                                f"{change.id} --force restores it)")
            outcome.changed.append(aspect)
        change.finish(records.ROLLED_BACK if outcome.complete else records.INCOMPLETE, by,
                      outcome)
        store.save(change)
    if not from_guardian:
        guardians.stop(host, store, change)
    store.prune()
    return change


def _changed(host: Host, aspect: str, then: object, now: object) -> str:
    """What changed since the try, for a person."""
    if aspect.startswith("file "):
        return f"{host.path(aspect.removeprefix('file '))} was written since the try"
    if aspect.endswith(" exists") and isinstance(now, bool):
        return f"{aspect.removesuffix(' exists')} was {'made' if now else 'deleted'} since " \
               "the try"
    return f"{aspect} changed since the try (was {_shown(then)}, now {_shown(now)})"


def _shown(value: object) -> str:
    if value is None:
        return "none"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, list):
        return ", ".join(map(str, value)) or "none"
    return str(value)


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
