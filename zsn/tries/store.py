"""The pending store: one folder per tried change under ``/run/zsn/changes/``.

``/run`` is a tmpfs, so a reboot forgets every pending change, as it should: the
files a try defers (``--persist``) were never written, and the boot reads the old
config. Each change's folder (0700, root's) holds ``change.json`` (0600: it may hold
the text of files the change replaced, keys included), the ``before/N`` copies of
those files an admin can restore by hand, a ``lock`` that confirm, rollback and the
guardian take before they act, and ``guardian`` (the guardian's pid, written when it
is ready).

The store is zsn's own state (`zsn.system.own_state`: a store or a record others
could change is refused, not read), and a record holds data only: each undo a kind
and its checked parameters (`zsn.tries.params`), every path a system path inside the
tree. A record that is not so is never acted on, and never hidden: `Store.scan`
lists it as `Unreadable`, with why, and it stays where it is for a person to look at.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import re
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from zsn import decode
from zsn.errors import AccessDeniedError, ValidationError, ZsnError
from zsn.system import files
from zsn.system.host import Host
from zsn.tries import params as checked
from zsn.tries.params import RecordError
from zsn.tries.undo import Outcome, Undo

STORE_DIR = "/run/zsn/changes"
FORMAT = 2
"""2: undos with typed parameters, system paths, what the try owns and left."""
MAX_RECORD_BYTES = 64 * 1024 * 1024
"""A record may hold the text of the files a change replaces."""
KEEP_FINISHED = 20
"""Finished changes kept for `zsn pending --all` (their outcome); older ones go."""
LOCK_WAIT = 30.0

ARMING = "arming"
"""Recorded, the guardian being started: nothing applied yet."""
PENDING = "pending"
"""Applied (or being applied): rolled back at the deadline unless confirmed."""
CONFIRMED = "confirmed"
ROLLED_BACK = "rolled back"
INCOMPLETE = "rollback incomplete"
"""A rollback ran and could not restore everything: `Change.outcome` says what is left."""
ABANDONED = "abandoned"
"""zsn went away before applying anything (or the guardian could not start)."""
WAITING = (ARMING, PENDING)
STATES = (ARMING, PENDING, CONFIRMED, ROLLED_BACK, INCOMPLETE, ABANDONED)
_ID_RE = re.compile(r"[0-9a-f]{6}")
_GUARD_UNIT_RE = re.compile(r"zsn-guard-[0-9a-f]{6}\.service")


def boot_clock() -> float:
    """Seconds on the clock every process of this boot shares (suspend included)."""
    return time.clock_gettime(time.CLOCK_BOOTTIME)


@dataclass
class Change:
    """One tried change, as stored."""

    id: str
    title: str
    command: str
    seconds: float
    created: float
    """Wall clock (for people)."""
    state: str = ARMING
    deadline: float = 0.0
    """`boot_clock` time after which the guardian rolls it back."""
    deadline_wall: float = 0.0
    applied: bool = False
    """zsn finished applying it (a pending change that is not was cut short, or is
    still being applied)."""
    undo: list[Undo] = field(default_factory=list)
    deferred: list[DeferredEdit] = field(default_factory=list)
    """Boot config edits written on confirm."""
    session: str = ""
    """The SSH session path the change was checked against, if any."""
    netns: str = ""
    guardian: dict[str, Any] = field(default_factory=dict)
    """How it is guarded: ``{"how": "systemd", "unit": NAME}`` or ``{"how": "process"}``."""
    outcome: dict[str, Any] = field(default_factory=dict)
    """How it ended: ``at``, ``by``, ``done``, ``left``, ``commands``, ``changed``."""
    owns: list[str] = field(default_factory=list)
    """What it touches (`zsn.tries.undo.objects`, files by system path): no other
    change may touch them while it is being tried."""
    after: dict[str, Any] = field(default_factory=dict)
    """The state it left each aspect in once applied (`zsn.tries.undo.observe`): a
    rollback leaves alone what changed since."""

    def seconds_left(self, now: float | None = None) -> float:
        return max(0.0, self.deadline - (boot_clock() if now is None else now))

    def finish(self, state: str, by: str, outcome: Outcome | None = None) -> None:
        self.state = state
        self.outcome = {"at": time.time(), "by": by,
                        "done": list(outcome.done) if outcome else [],
                        "left": list(outcome.left) if outcome else [],
                        "commands": list(outcome.commands) if outcome else [],
                        "changed": list(outcome.changed) if outcome else []}

    def as_dict(self) -> dict[str, Any]:
        return {"format": FORMAT, "id": self.id, "title": self.title,
                "command": self.command, "seconds": self.seconds, "created": self.created,
                "state": self.state, "deadline": self.deadline,
                "deadline_wall": self.deadline_wall, "applied": self.applied,
                "undo": [undo.as_dict() for undo in self.undo],
                "deferred": [checked.as_data(edit) for edit in self.deferred],
                "session": self.session, "netns": self.netns,
                "guardian": self.guardian or None, "outcome": self.outcome or None,
                "owns": self.owns, "after": self.after}

    @classmethod
    def from_dict(cls, value: object) -> Change:
        """A record read back: every field of its type, every undo a kind zsn knows with
        exactly its checked parameters, every path inside the tree; else a
        `RecordError` naming the field."""
        if not isinstance(value, dict):
            raise RecordError("not an object")
        if value.get("format") != FORMAT:
            raise RecordError(f"format {str(value.get('format'))[:20]!r} is not {FORMAT}")
        header = checked.read(_Header, {key: item for key, item in value.items()
                                        if key not in ("format", "undo", "deferred")},
                              "record")
        undo = value.get("undo")
        if not isinstance(undo, list):
            raise RecordError("undo: expected a list")
        return cls(id=header.id, title=header.title, command=header.command,
                   seconds=header.seconds, created=header.created, state=header.state,
                   deadline=header.deadline, deadline_wall=header.deadline_wall,
                   applied=header.applied,
                   undo=[Undo.from_dict(item, f"undo[{index}]")
                         for index, item in enumerate(undo)],
                   deferred=checked.read(list[DeferredEdit], value.get("deferred"),
                                         "deferred"),
                   session=header.session, netns=header.netns,
                   guardian={} if header.guardian is None else {
                       key: item for key, item in checked.as_data(header.guardian).items()
                       if item is not None},
                   outcome={} if header.outcome is None else checked.as_data(header.outcome),
                   owns=list(header.owns), after=dict(header.after))


@dataclass(frozen=True)
class FileSnapshotData:
    """A `zsn.system.files.FileSnapshot` as a record keeps it (a system path)."""

    path: str
    text: str
    mtime_ns: int
    size: int
    inode: int
    mode: int

    def __post_init__(self) -> None:
        checked.system_path(self.path)
        checked.whole(self.mode, 0, 0o7777, "mode")
        for number, what in ((self.mtime_ns, "mtime_ns"), (self.size, "size"),
                             (self.inode, "inode")):
            checked.whole(number, 0, 2**64 - 1, what)

    def __repr__(self) -> str:  # the text may hold a key
        return f"FileSnapshotData(path={self.path!r})"


@dataclass(frozen=True)
class DeferredEdit:
    """A boot config edit (`zsn.plan.FileEdit`) a try writes on confirm."""

    path: str
    new_text: str
    mode: int | None
    private_dir: bool
    backup: bool
    remove: bool
    previous: FileSnapshotData | None

    def __post_init__(self) -> None:
        checked.system_path(self.path)
        if self.mode is not None:
            checked.whole(self.mode, 0, 0o7777, "mode")
        if self.previous is not None and self.previous.path != self.path:
            raise ValueError(f"previous names {self.previous.path}, not {self.path}")

    def __repr__(self) -> str:  # the text may hold a key
        return f"DeferredEdit(path={self.path!r})"


@dataclass(frozen=True)
class _Guardian:
    how: str
    unit: str | None = None

    def __post_init__(self) -> None:
        checked.choice(self.how, ("systemd", "process"), "how")
        if self.unit is not None and _GUARD_UNIT_RE.fullmatch(self.unit) is None:
            raise ValueError(f"unit {self.unit[:60]!r} is not a guardian's")


@dataclass(frozen=True)
class _Ending:
    at: float
    by: str
    done: tuple[str, ...] = ()
    left: tuple[str, ...] = ()
    commands: tuple[str, ...] = ()
    changed: tuple[str, ...] = ()


@dataclass(frozen=True)
class _Header:
    """A record's fields but its undos and deferred edits."""

    id: str
    title: str
    command: str
    seconds: float
    created: float
    state: str
    deadline: float
    deadline_wall: float
    applied: bool
    session: str
    netns: str
    guardian: _Guardian | None
    outcome: _Ending | None
    owns: tuple[str, ...]
    after: dict[str, Any]

    def __post_init__(self) -> None:
        if _ID_RE.fullmatch(self.id) is None:
            raise ValueError(f"id {self.id[:20]!r} is not six hex digits")
        checked.choice(self.state, STATES, "state")


@dataclass(frozen=True)
class Unreadable:
    """A record zsn will not act on: refused by the state rule, damaged, or holding
    more than data. Left where it is for a person; `zsn pending` lists it."""

    id: str
    path: Path
    reason: str


def has_records(host: Host) -> bool:
    """Whether anything is on record (cheap: no record is read). Not root: False."""
    try:
        return bool(files.list_files(host.path(STORE_DIR)))
    except AccessDeniedError:
        return False


class Store:
    """The changes of one host (its ``/run/zsn/changes``)."""

    def __init__(self, host: Host):
        self.host = host
        self.root = host.path(STORE_DIR)

    def folder(self, change_id: str) -> Path:
        return self.root / change_id

    def new_id(self) -> str:
        files.make_dirs(self.root)
        files.set_mode(self.root, files.PRIVATE_DIR_MODE)
        while True:
            change_id = os.urandom(3).hex()
            try:
                files.make_dir(self.folder(change_id), files.PRIVATE_DIR_MODE)
            except FileExistsError:
                continue
            files.make_dir(self.folder(change_id) / "before", files.PRIVATE_DIR_MODE)
            return change_id

    def save(self, change: Change) -> None:
        path = self.folder(change.id) / "change.json"
        previous = files.read_tracked(path) if files.exists(path) else None
        files.write_atomic(path, json.dumps(change.as_dict(), indent=1) + "\n",
                           previous=previous, mode=files.PRIVATE_FILE_MODE, backup=False)

    def keep_copy(self, change_id: str, number: int, text: str) -> Path:
        """A copy of a file the change replaces, for the admin to restore by hand."""
        path = self.folder(change_id) / "before" / str(number)
        files.write_atomic(path, text, previous=None, mode=files.PRIVATE_FILE_MODE,
                           backup=False)
        return path

    def load(self, change_id: str) -> Change:
        """The change's record; a `RecordError` (naming the record and why) for one zsn
        will not act on, an `UnsafeStateError` for one the state rule refuses."""
        path = self.folder(_checked_id(change_id)) / "change.json"
        if not files.exists(path):
            raise ValidationError(f"no change {change_id!r} (see zsn pending --all)")
        value = decode.from_json(files.read_bytes(path, MAX_RECORD_BYTES), Any, str(path),
                                 max_bytes=MAX_RECORD_BYTES)
        try:
            change = Change.from_dict(value)
        except RecordError as exc:
            raise RecordError(f"{path}: {exc}; left as it is, not acted on") from None
        if change.id != change_id:
            raise RecordError(f"{path}: the record of change {change.id}, in the folder of "
                              f"{change_id}; left as it is, not acted on")
        return change

    def scan(self) -> tuple[list[Change], list[Unreadable]]:
        """Every change on record (oldest first), and the records zsn will not use."""
        found: list[Change] = []
        unreadable: list[Unreadable] = []
        for folder in files.list_files(self.root):
            if _ID_RE.fullmatch(folder.name) is None or not files.is_dir(folder):
                unreadable.append(Unreadable(folder.name, folder, "not a change's folder"))
                continue
            if not files.exists(folder / "change.json"):
                continue  # a change being made
            try:
                found.append(self.load(folder.name))
            except ZsnError as exc:
                reason = str(exc).removeprefix(f"{folder / 'change.json'}: ")
                unreadable.append(Unreadable(folder.name, folder / "change.json", reason))
        return sorted(found, key=lambda change: change.created), unreadable

    def changes(self) -> list[Change]:
        """Every change zsn can use, oldest first (`scan` also gives the others)."""
        return self.scan()[0]

    def waiting(self) -> list[Change]:
        return [change for change in self.changes() if change.state in WAITING]

    def discard(self, change_id: str) -> None:
        files.remove_tree(self.folder(_checked_id(change_id)))

    def prune(self) -> None:
        finished = [change for change in self.changes() if change.state not in WAITING]
        for change in finished[:-KEEP_FINISHED]:
            self.discard(change.id)

    @contextlib.contextmanager
    def locked(self, change_id: str, wait: float = LOCK_WAIT) -> Iterator[Change]:
        """The change, loaded under its lock: confirm, rollback and the guardian never
        act on it at once."""
        path = self.folder(_checked_id(change_id)) / "lock"
        if not files.is_dir(self.folder(change_id)):
            raise ValidationError(f"no change {change_id!r} (see zsn pending --all)")
        self.load(change_id)  # a record zsn may not use gets no lock file either
        with os.fdopen(files.open_append(path, files.PRIVATE_FILE_MODE), "a") as handle:
            deadline = time.monotonic() + wait
            while True:
                try:
                    fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    break
                except BlockingIOError:
                    if time.monotonic() > deadline:
                        raise ZsnError(f"change {change_id} is busy (locked for over "
                                       f"{wait:g} s)") from None
                    time.sleep(0.05)
            try:
                yield self.load(change_id)
            finally:
                fcntl.flock(handle, fcntl.LOCK_UN)


def _checked_id(change_id: str) -> str:
    """An id is six hex digits: never a path (it comes from the command line)."""
    if len(change_id) != 6 or any(c not in "0123456789abcdef" for c in change_id):
        raise ValidationError(f"{change_id!r} is not a change id (six hex digits, "
                              "as zsn pending lists them)")
    return change_id
