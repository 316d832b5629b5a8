"""zsn's own record of the disks' SMART: the last reading of each disk, and how its error
counts went.

One JSON file, ``/var/lib/zsn/zfs/smart.json``, keyed by the disk's world-wide id
(`zsn.zfs.disks.Disk.key`: a disk keeps its record when it moves from sda to sdb):

- ``last``: the last reading (`zsn.zfs.smart.Smart`), so that every zsn (the TUI, ``zsn
  serve``, a ``zsn zfs disks`` run a minute later, an exporter that is not root) shows
  it with its age instead of asking the disk again within `READ_EVERY`;
- ``counts``: the counts that only grow on a failing disk (reallocated, pending and
  offline-uncorrectable sectors, media errors, CRC errors, grown defects), one point
  each time they changed, the newest last (at most `MAX_POINTS`). The advisor compares
  the newest point with the one before it (`growth`).

Written by root only (the reader of SMART), atomically, readable by all: it holds no
secret. It lives under ``/var/lib/zsn``, zsn's own state, so every read and write goes
through `zsn.system.files`, where zsn's rule for its own state applies. A file that
does not decode is named in a note and started afresh (it is a cache of readings and a
history of counts; nothing is acted on from it but advice).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import NamedTuple

from zsn import decode
from zsn.errors import ZsnError
from zsn.system import files
from zsn.system.host import Host
from zsn.zfs.smart import Smart

STATE_DIR = "/var/lib/zsn/zfs"
STATE_FILE = f"{STATE_DIR}/smart.json"
MAX_BYTES = 4 << 20
MAX_POINTS = 50
VERSION = 1
COUNTS = ("reallocated", "pending", "offline_uncorrectable", "media_errors", "crc_errors",
          "grown_defects", "uncorrected_errors")
"""The counts a healthy disk keeps still and a failing one raises."""
COUNT_NAMES = {"reallocated": "reallocated sectors", "pending": "pending sectors",
               "offline_uncorrectable": "offline uncorrectable sectors",
               "media_errors": "media errors", "crc_errors": "interface CRC errors",
               "grown_defects": "grown defects", "uncorrected_errors": "uncorrected errors"}


@dataclass
class CountPoint:
    at: float
    reallocated: int | None = None
    pending: int | None = None
    offline_uncorrectable: int | None = None
    media_errors: int | None = None
    crc_errors: int | None = None
    grown_defects: int | None = None
    uncorrected_errors: int | None = None

    def counts(self) -> dict[str, int | None]:
        return {name: getattr(self, name) for name in COUNTS}


@dataclass
class DiskRecord:
    name: str = ""
    """The disk's kernel name when it was last read (for people reading the file)."""
    last: Smart | None = None
    """The last good reading."""
    attempt: Smart | None = None
    """A later reading that found the disk asleep or could not read it (None when the
    last reading was good)."""
    counts: list[CountPoint] = field(default_factory=list)

    @property
    def read_at(self) -> float | None:
        """When the disk was last asked (good or not)."""
        times = [smart.read_at for smart in (self.last, self.attempt) if smart is not None]
        return max(times) if times else None


@dataclass
class SmartRecords:
    version: int = VERSION
    disks: dict[str, DiskRecord] = field(default_factory=dict)


class Growth(NamedTuple):
    """A count that grew between two readings."""

    counter: str
    """A key of `COUNTS`."""
    before: int
    after: int
    since: float
    """When the smaller value was read."""
    at: float
    """When the larger one was."""

    def describe(self) -> str:
        return f"{COUNT_NAMES[self.counter]} {self.before} → {self.after}"


def parse(text: str, source: str) -> SmartRecords:
    """The record file's text (zsn's own format, decoded strictly)."""
    records = decode.from_json(text, SmartRecords, source, max_bytes=MAX_BYTES)
    if records.version != VERSION:
        return SmartRecords()
    return records


def render(records: SmartRecords) -> str:
    return json.dumps({"version": records.version, "disks": {
        key: {"name": record.name, "last": record.last, "attempt": record.attempt,
              "counts": [point.__dict__ for point in record.counts]}
        for key, record in sorted(records.disks.items())}}, separators=(",", ":"))


def load(host: Host) -> tuple[SmartRecords, str | None]:
    """The records, and a note when the file could not be used."""
    path = host.path(STATE_FILE)
    try:
        if not files.exists(path):
            return SmartRecords(), None
        return parse(files.read_text(path, MAX_BYTES), str(path)), None
    except ZsnError as exc:
        return SmartRecords(), f"SMART records not read ({exc}): starting afresh"
    except OSError as exc:
        return SmartRecords(), f"SMART records not read ({files.describe_os_error(exc)})"


def save(host: Host, records: SmartRecords) -> None:
    """Write the records (root only: the caller checks)."""
    path = host.path(STATE_FILE)
    files.make_dirs(path.parent)
    files.publish(path, render(records), mode=0o644)


def add_reading(records: SmartRecords, key: str, name: str, smart: Smart) -> None:
    """Keep `smart` as the disk's last reading; a reading whose counts differ from the
    newest point adds one (a standby or unreadable reading keeps the last good one)."""
    record = records.disks.setdefault(key, DiskRecord(name=name))
    record.name = name
    if smart.state != "ok":
        record.attempt = smart
        return
    record.last, record.attempt = smart, None
    point = CountPoint(smart.read_at, **{name: getattr(smart, name) for name in COUNTS})
    if not record.counts or record.counts[-1].counts() != point.counts():
        record.counts.append(point)
        del record.counts[:-MAX_POINTS]


def growth(record: DiskRecord) -> list[Growth]:
    """The counts that grew from the point before the newest to the newest."""
    if len(record.counts) < 2:
        return []
    before, after = record.counts[-2], record.counts[-1]
    grown = []
    for name in COUNTS:
        old, new = getattr(before, name), getattr(after, name)
        if old is not None and new is not None and new > old:
            grown.append(Growth(name, old, new, before.at, after.at))
    return grown
