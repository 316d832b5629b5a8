"""Transfers seen from outside the process that runs them: running ones and last results.

A `zsn zfs send` writes its progress to ``/run/zsn/transfers/PID.json`` about once a
second (replaced atomically: a reader never sees half a file) and, when it ends, its
result to ``/var/lib/zsn/transfers/PAIR.json``, one file per source and target pair
(the last result of each). `read_transfers` is what the export and the TUI's transfers
view show: the running ones, and the last result per pair. A running file whose
process is gone (killed with -9, the machine rebooted) is shown as interrupted.

Nothing here holds a secret (a resume token is not kept: the target holds it), so the
files are readable by all, for an exporter that does not run as root.
"""

from __future__ import annotations

import contextlib
import json
import os
import time
import zlib
from pathlib import Path
from typing import Any

from zsn import decode
from zsn.errors import UnsafeStateError, ZsnError
from zsn.system import files
from zsn.system.host import Host

RUN_DIR = "/run/zsn/transfers"
LAST_DIR = "/var/lib/zsn/transfers"
MAX_RECORD_BYTES = 64 * 1024
MAX_RECORDS = 1000
"""More files than this in either folder are not read (a folder someone filled)."""
UPDATE_EVERY = 1.0


def pair_key(source: str, target: str) -> str:
    """A file name for the pair (two zlib checksums: hashlib would load OpenSSL into
    every export)."""
    data = f"{source}\0{target}".encode()
    return f"{zlib.crc32(data):08x}{zlib.adler32(data):08x}"


def process_start(pid: int) -> str | None:
    """The process's start time (field 22 of /proc/PID/stat): with the pid, it names a
    process even after the pid is reused."""
    try:
        data = files.read_bytes(Path(f"/proc/{pid}/stat"), 4096)
    except (OSError, ZsnError):
        return None
    fields = data[data.rfind(b")") + 2:].split()
    return fields[19].decode() if len(fields) > 19 else None


def _write(path: Path, record: dict[str, Any]) -> None:
    files.publish(path, json.dumps(record, separators=(",", ":")), mode=0o644)


class Recorder:
    """Writes one transfer's progress and result (see the module doc). A folder zsn may
    not write (not root) makes it silent: `problem` says why, once."""

    def __init__(self, host: Host, record: dict[str, Any], *,
                 clock: Any = time.time) -> None:
        self.host = host
        self.record = dict(record)
        self._clock = clock
        self._written_at = 0.0
        self.problem: str | None = None
        self.pid = os.getpid()
        self.record.update(pid=self.pid, process_start=process_start(self.pid),
                           state="running")
        self._running = host.path(RUN_DIR) / f"{self.pid}.json"
        self._clear_stale()

    def _clear_stale(self) -> None:
        """Running files of this pair whose process is gone: this run supersedes them."""
        key = pair_key(self.record["source"], self.record["target"])
        try:
            found = _records(self.host.path(RUN_DIR))
        except ZsnError as exc:  # the state rule refused the folder
            self.problem = f"progress and results are not recorded ({exc})"
            return
        for record, path in found:
            if pair_key(str(record.get("source")), str(record.get("target"))) == key \
                    and not _alive(record):
                with contextlib.suppress(OSError, ZsnError):
                    files.remove(path, missing_ok=True)

    def update(self, force: bool = False, **values: Any) -> None:
        self.record.update(values)
        now = self._clock()
        if not force and now - self._written_at < UPDATE_EVERY:
            return
        self._written_at = now
        self.record["updated"] = now
        self._try(lambda: _write(self._make(RUN_DIR) / f"{self.pid}.json", self.record))

    def finish(self, **values: Any) -> dict[str, Any]:
        """The result: kept as the pair's last one, the running file removed."""
        self.record.update(values, updated=self._clock())
        result = {k: v for k, v in self.record.items() if k not in ("pid", "process_start")}
        name = pair_key(result["source"], result["target"]) + ".json"
        self._try(lambda: _write(self._make(LAST_DIR) / name, result))
        with contextlib.suppress(OSError, ZsnError):
            files.remove(self._running, missing_ok=True)
        return result

    def _make(self, directory: str) -> Path:
        path = self.host.path(directory)
        files.make_dirs(path)
        return path

    def _try(self, write: Any) -> None:
        if self.problem is not None:
            return
        try:
            write()
        except OSError as exc:
            self.problem = (f"progress and results are not recorded ({exc.strerror or exc}"
                            f"{': ' + str(exc.filename) if exc.filename else ''})")
        except ZsnError as exc:
            self.problem = f"progress and results are not recorded ({exc})"


FIELDS: dict[str, tuple[type, ...]] = {
    "source": (str,), "target": (str,), "via": (str,), "state": (str,),
    "snapshot": (str,), "sending": (str,), "error": (str,),
    "raw": (bool,), "recursive": (bool,), "resumed": (bool,),
    "pid": (int,), "process_start": (str,), "bytes": (int,), "estimate": (int,),
    "streams": (int,), "stream": (int,),
    "limit": (int, float), "started": (int, float), "updated": (int, float),
    "finished": (int, float), "seconds": (int, float), "rate": (int, float),
    "eta_seconds": (int, float), "percent": (int, float), "cpu_seconds": (int, float),
    "setup_seconds": (int, float), "moved_at": (int, float),
}
"""What a record may hold, and of which types (docs/export.schema.json): a file someone
else wrote or edited gives only these (a value of another type reads as null)."""


def _clean(record: dict[str, Any]) -> dict[str, Any]:
    return {key: value if isinstance(value, types) and not (
                isinstance(value, bool) and bool not in types) else None
            for key, types in FIELDS.items() if key in record
            for value in (record[key],)}


def _alive(record: dict[str, Any]) -> bool:
    pid = record.get("pid")
    return isinstance(pid, int) and pid > 0 and \
        process_start(pid) == record.get("process_start") is not None


def _records(directory: Path) -> list[tuple[dict[str, Any], Path]]:
    """The records in `directory`; one that cannot be read is skipped, but a folder or a
    file the state rule refuses is an error (`UnsafeStateError`), never an empty list."""
    try:
        entries = files.list_files(directory, "*.json")[:MAX_RECORDS]
    except UnsafeStateError:
        raise
    except (OSError, ZsnError):
        return []
    found = []
    for path in entries:
        if path.name.startswith(".") or files.is_link(path):
            continue
        try:  # a regular file of at most MAX_RECORD_BYTES, else skipped
            record = decode.from_json(files.read_bytes(path, MAX_RECORD_BYTES),
                                      dict[str, Any], str(path))
        except UnsafeStateError:
            raise
        except (OSError, ZsnError):
            continue
        if isinstance(record, dict) and isinstance(record.get("source"), str) and \
                isinstance(record.get("target"), str):
            found.append((_clean(record), path))
    return found


def read_transfers(host: Host) -> dict[str, list[dict[str, Any]]]:
    """``running``: transfers in progress; ``last``: the last result of each pair (a
    running file left by a process that is gone counts as its interrupted result)."""
    running = []
    last: dict[str, dict[str, Any]] = {}
    for record, _ in _records(host.path(LAST_DIR)):
        last[pair_key(record["source"], record["target"])] = record
    for record, _ in _records(host.path(RUN_DIR)):
        key = pair_key(record["source"], record["target"])
        if _alive(record):
            running.append({k: v for k, v in record.items() if k != "process_start"})
            continue
        previous = last.get(key)
        if previous is None or (previous.get("updated") or 0) < (record.get("updated") or 0):
            last[key] = {**{k: v for k, v in record.items()
                            if k not in ("pid", "process_start")},
                         "state": "interrupted",
                         "error": "the process ended without a result (killed?)"}
    return {"running": sorted(running, key=lambda r: r.get("started") or 0),
            "last": sorted(last.values(), key=lambda r: (r["source"], r["target"]))}
