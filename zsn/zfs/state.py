"""ZFS protection's own state: the policy file, the records of runs, the locks.

All of it lies under zsn's state places (``/etc/zsn``, ``/var/lib/zsn``, ``/run/zsn``),
so every read and write through `zsn.system.files` passes the state rule
(`zsn.system.own_state.check`) first: a file someone else could have written is refused
with one line naming it and the fix, and nothing is read from it. Records are JSON
written atomically (`files.publish`),
readable by all (they hold no secret: a monitoring exporter that is not root reads
them). A run takes its lock (``flock``) so runs of the same kind never overlap.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from zsn import decode
from zsn.errors import ZsnError
from zsn.system import files
from zsn.system.host import Host

STATE_DIR = "/var/lib/zsn/zfs"
LOCK_DIR = "/run/zsn/zfs"
MAX_RECORD_BYTES = 64 * 1024


def read_own(host: Host, path: Path, max_bytes: int) -> files.FileSnapshot | None:
    """`path`'s content (the state rule checked by `files`); None when it does not
    exist."""
    if not files.exists(path):
        return None
    return files.read_tracked(path, max_bytes)


def record_path(host: Host, *parts: str) -> Path:
    return host.path("/".join((STATE_DIR, *parts)))


def write_record(path: Path, record: dict[str, Any]) -> None:
    """Replace the record at `path` atomically (its folder made when missing)."""
    files.make_dirs(path.parent)
    files.publish(path, json.dumps(record, separators=(",", ":"), sort_keys=True) + "\n",
                  mode=0o644)


def read_record(host: Host, path: Path) -> dict[str, Any] | None:
    """A record as JSON (its fields are checked by its reader); None when missing."""
    snapshot = read_own(host, path, MAX_RECORD_BYTES)
    if snapshot is None:
        return None
    return decode.from_json(snapshot.text, dict[str, Any], str(path),
                            max_bytes=MAX_RECORD_BYTES)


def typed(record: dict[str, Any], kinds: dict[str, tuple[type, ...]]) -> dict[str, Any]:
    """The fields of `record` zsn knows with a value of their type (one of another type
    reads as absent: a record someone edited yields only what it can trust)."""
    return {key: value for key, value in record.items() if key in kinds
            and isinstance(value, kinds[key])
            and not (isinstance(value, bool) and bool not in kinds[key])}


class Busy(ZsnError):
    """Another run holds the lock."""


@contextlib.contextmanager
def locked(host: Host, name: str) -> Iterator[None]:
    """Hold ``/run/zsn/zfs/NAME.lock`` for the block, or raise `Busy` at once (naming the
    process that holds it): runs of the same kind never overlap."""
    folder = host.path(LOCK_DIR)
    files.make_dirs(folder)
    path = folder / f"{name}.lock"
    fd = files.open_append(path, 0o644)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = files.read_bytes(path, 64).decode(errors="replace").strip()
            raise Busy(f"{name} is running already" + (f" (pid {holder})" if holder.isdigit()
                                                        else "")) from None
        os.ftruncate(fd, 0)
        os.write(fd, f"{os.getpid()}\n".encode())
        try:
            yield
        finally:
            os.ftruncate(fd, 0)
            fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)


def holder(host: Host, name: str) -> int | None:
    """The process holding lock `name` now, if one does (its pid is in the lock file
    while it is held; a process killed while holding it left its pid, but is gone)."""
    path = host.path(LOCK_DIR) / f"{name}.lock"
    try:
        text = files.read_bytes(path, 64).decode(errors="replace").strip()
    except (OSError, ZsnError):
        return None
    if not text.isdigit():
        return None
    pid = int(text)
    return pid if files.exists(Path(f"/proc/{pid}")) else None
