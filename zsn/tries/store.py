"""The pending store: one folder per tried change under ``/run/zsn/tries/``.

``/run`` is a tmpfs, so a reboot forgets every pending change, as it should: the
files a try defers (``--persist``) were never written, and the boot reads the old
config. Each change's folder (0700, root's) holds ``change.json`` (0600: it may hold
the text of files the change replaced, keys included), the ``before/N`` copies of
those files an admin can restore by hand, a ``lock`` that confirm, rollback and the
guardian take before they act, and ``guardian`` (the guardian's pid, written when it
is ready).
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from zsn.errors import ValidationError, ZsnError
from zsn.system import files
from zsn.system.host import Host
from zsn.tries.undo import Outcome, Undo

STORE_DIR = "/run/zsn/changes"
FORMAT = 1
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
    deferred: list[dict[str, Any]] = field(default_factory=list)
    """Boot config edits (`zsn.plan.FileEdit` fields) written on confirm."""
    session: str = ""
    """The SSH session path the change was checked against, if any."""
    netns: str = ""
    guardian: dict[str, Any] = field(default_factory=dict)
    """How it is guarded: ``{"how": "systemd", "unit": NAME}`` or ``{"how": "process"}``."""
    outcome: dict[str, Any] = field(default_factory=dict)
    """How it ended: ``at``, ``by``, ``done``, ``left``, ``commands``."""

    def seconds_left(self, now: float | None = None) -> float:
        return max(0.0, self.deadline - (boot_clock() if now is None else now))

    def finish(self, state: str, by: str, outcome: Outcome | None = None) -> None:
        self.state = state
        self.outcome = {"at": time.time(), "by": by,
                        "done": list(outcome.done) if outcome else [],
                        "left": list(outcome.left) if outcome else [],
                        "commands": list(outcome.commands) if outcome else []}

    def as_dict(self) -> dict[str, Any]:
        return {"format": FORMAT, "id": self.id, "title": self.title,
                "command": self.command, "seconds": self.seconds, "created": self.created,
                "state": self.state, "deadline": self.deadline,
                "deadline_wall": self.deadline_wall, "applied": self.applied,
                "undo": [undo.as_dict() for undo in self.undo], "deferred": self.deferred,
                "session": self.session, "netns": self.netns, "guardian": self.guardian,
                "outcome": self.outcome}

    @classmethod
    def from_dict(cls, value: dict[str, Any]) -> Change:
        if value.get("format") != FORMAT:
            raise ZsnError(f"change record format {value.get('format')!r} is not {FORMAT}")
        try:
            return cls(id=str(value["id"]), title=str(value["title"]),
                       command=str(value["command"]), seconds=float(value["seconds"]),
                       created=float(value["created"]), state=str(value["state"]),
                       deadline=float(value["deadline"]),
                       deadline_wall=float(value["deadline_wall"]),
                       applied=bool(value.get("applied", False)),
                       undo=[Undo.from_dict(item) for item in value["undo"]],
                       deferred=list(value["deferred"]), session=str(value["session"]),
                       netns=str(value["netns"]), guardian=dict(value["guardian"]),
                       outcome=dict(value["outcome"]))
        except (KeyError, TypeError, ValueError) as exc:
            raise ZsnError(f"change record is damaged ({exc})") from exc


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
        path = self.folder(_checked_id(change_id)) / "change.json"
        if not files.exists(path):
            raise ValidationError(f"no change {change_id!r} (see zsn pending --all)")
        try:
            return Change.from_dict(json.loads(files.read_text(path)))
        except json.JSONDecodeError as exc:
            raise ZsnError(f"{path}: not a change record ({exc})") from exc

    def changes(self) -> list[Change]:
        """Every change on record, oldest first (a damaged record is skipped)."""
        found = []
        for folder in files.list_files(self.root):
            if files.exists(folder / "change.json"):
                with contextlib.suppress(ZsnError):
                    found.append(self.load(folder.name))
        return sorted(found, key=lambda change: change.created)

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
