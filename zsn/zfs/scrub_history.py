"""Scrub history: how long each pool's last scrubs took and how fast they read, as a trend.

Two sources, merged per pool by the time each scrub ended:

- the pool's own history (``zpool history -i POOL``, root only): every scrub's internal
  events, ``[txg:N] scan setup func=1 ...`` when it started and ``[txg:N] scan done
  errors=E`` when it finished (OpenZFS dsl_scan.c; ``scan cancelled`` and ``scan aborted,
  restarting`` end one that did not finish). Times in whole seconds, the host's local
  time. The history says nothing of the bytes read;
- zsn's own record (``/var/lib/zsn/zfs/scrubs.json``), written when zsn sees a scrub
  finished in `zpool status` (the pane, ``zsn serve``, ``zsn zfs scrubs``, the export):
  its end time and duration, and the bytes it read: the scan's own count when zpool
  gives one (JSON's ``examined``, or the total zsn saw while it ran), else the pool's
  allocated space when zsn saw it finish (what a scrub reads: OpenZFS sets a scan's
  ``to_examine`` to the allocated space when it starts), marked so.

Only scrubs that finished count (a canceled one says nothing of speed). A paused scrub's
duration includes the pause, as `zpool status` counts it. The record keeps the last
`MAX_RUNS` per pool; it is zsn's own state under ``/var/lib/zsn`` (read and written
through `zsn.system.files`, where zsn's rule for its own state applies), written by root
only, readable by all (no secret). A record that does not decode is named in a note and
started afresh: it holds history, nothing is acted on from it.

`ScrubWatch` is the pane's and ``zsn serve``'s: the reader in a thread of its own, so
reading a long pool history never holds up a refresh.
"""

from __future__ import annotations

import json
import re
import statistics
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Literal, NamedTuple

from zsn import decode
from zsn.errors import CommandError, ZsnError
from zsn.system import commands, files
from zsn.system.host import Host
from zsn.watch import Watch
from zsn.zfs.model import Pool

STATE_FILE = "/var/lib/zsn/zfs/scrubs.json"
MAX_BYTES = 1 << 20
VERSION = 1
MAX_RUNS = 30
"""Scrubs kept per pool (weekly: over half a year)."""
MATCH_SECONDS = 2.0
"""Two sightings of one scrub end within this of each other (the history's time is the
transaction group's, the status's the scan's own; both in whole seconds)."""
HISTORY_TIMEOUT = 60.0
HISTORY_MAX_OUTPUT = 64 << 20
"""A pool's history is kept on disk up to 1 % of the pool, at most 1 GiB (spa_history.c);
printed with every internal event, a busy pool's (snapshots every few minutes) reaches
tens of MiB."""
TREND_BEFORE = 5
"""The scrubs before the last one its change is measured against (their median)."""

BytesFrom = Literal["", "scan", "allocated"]
SOURCES = ("history", "status")


@dataclass(frozen=True)
class ScrubRun:
    """One finished scrub of one pool."""

    ended: float
    """Unix time it finished."""
    seconds: int | None = None
    """How long it took, pauses included."""
    started: float | None = None
    examined: int | None = None
    """Bytes it read (`bytes_from` says how zsn knows)."""
    bytes_from: BytesFrom = ""
    """``scan``: zpool's own count; ``allocated``: the pool's allocated space when zsn
    saw the scrub finish; empty when `examined` is unknown."""
    errors: int | None = None
    repaired: int | None = None
    seen_in: tuple[str, ...] = ()
    """Where zsn found it: ``history`` (the pool's), ``status`` (zsn saw it finish)."""

    def __post_init__(self) -> None:
        for name in ("ended", "started"):
            value = getattr(self, name)
            if value is not None and not decode.EARLIEST <= value <= decode.LATEST:
                raise ValueError(f"{name} {value!r} is not a time")
        for name in ("seconds", "examined", "errors", "repaired"):
            value = getattr(self, name)
            if value is not None and value < 0:
                raise ValueError(f"{name} is negative")
        if any(source not in SOURCES for source in self.seen_in):
            raise ValueError(f"seen_in names a source zsn does not know: {self.seen_in!r}")

    @property
    def rate(self) -> float | None:
        """Bytes read per second."""
        if self.examined is None or not self.seconds:
            return None
        return self.examined / self.seconds


@dataclass
class ScrubRecords:
    version: int = VERSION
    pools: dict[str, list[ScrubRun]] = field(default_factory=dict)


# -- the pool's history -----------------------------------------------------------------
_EVENT = re.compile(
    r"(?P<when>\d{4}-\d\d-\d\d\.\d\d:\d\d:\d\d) \[txg:\d+\] "
    r"(?P<event>scan setup|scan done|scan cancelled|scan aborted, restarting)"
    r" (?P<detail>[^\[]*?)(?: \[[^\]]*\])?")
_SETUP = re.compile(r"func=(\d+)\b.*")
_ERRORS = re.compile(r"errors=(\d+)")
SCRUB_FUNCTION = "1"
"""``func=`` of a scrub's ``scan setup`` (POOL_SCAN_SCRUB; 2 is a resilver)."""


def history_time(text: str) -> float | None:
    """A Unix time from the history's ``2026-12-02.16:20:01`` (strftime ``%F.%T`` in the
    host's local time, zpool_main.c print_history_records)."""
    try:
        return time.mktime(time.strptime(text, "%Y-%m-%d.%H:%M:%S"))
    except (ValueError, OverflowError):
        return None


def parse_history(text: str) -> list[ScrubRun]:
    """The finished scrubs in `zpool history -i[l] POOL` output, oldest first; every line
    that is not a scan event is skipped (commands, other events, ioctl dumps)."""
    runs: list[ScrubRun] = []
    started: float | None = None
    for line in text.splitlines():
        found = _EVENT.fullmatch(line.rstrip())
        if found is None:
            continue
        when = history_time(found["when"])
        if when is None or not decode.EARLIEST <= when <= decode.LATEST:
            continue
        event, detail = found["event"], found["detail"]
        if event == "scan setup":
            setup = _SETUP.fullmatch(detail)
            started = when if setup is not None and setup.group(1) == SCRUB_FUNCTION else None
            continue
        if event == "scan done" and started is not None and when >= started:
            errors = _ERRORS.fullmatch(detail.strip())
            runs.append(ScrubRun(when, int(when - started), started,
                                 errors=int(errors.group(1)) if errors else None,
                                 seen_in=("history",)))
        started = None
    return runs


def history_argv(zpool: str, pool: str) -> list[str]:
    return [zpool, "history", "-il", pool]


# -- what zpool status says ------------------------------------------------------------
def from_status(pool: Pool, seen_total: int | None = None) -> ScrubRun | None:
    """The pool's last scan as a run, when it is a finished scrub; `seen_total` is the
    scan's total zsn saw while it ran (text status prints no count for a finished one)."""
    scan = pool.scan
    if scan is None or scan.function != "scrub" or scan.state != "finished" \
            or scan.ended is None or not decode.EARLIEST <= scan.ended <= decode.LATEST:
        return None
    examined = scan.examined if scan.examined is not None else seen_total
    bytes_from: BytesFrom = "scan" if examined is not None else ""
    if examined is None and pool.allocated is not None:
        examined, bytes_from = pool.allocated, "allocated"
    seconds = scan.duration_seconds
    started = scan.started
    if started is None and seconds is not None:
        started = scan.ended - seconds
    return ScrubRun(scan.ended, seconds, started, examined, bytes_from, scan.errors,
                    scan.repaired, ("status",))


# -- merging ----------------------------------------------------------------------------
def _same(one: ScrubRun, other: ScrubRun) -> bool:
    if abs(one.ended - other.ended) > MATCH_SECONDS:
        return False
    return one.started is None or other.started is None or \
        abs(one.started - other.started) <= MATCH_SECONDS + 1


def _combined(old: ScrubRun, new: ScrubRun) -> ScrubRun:
    """One scrub seen twice: each field from the sighting that has it; the history's
    times (the pool's own), zpool's byte count before an estimate."""
    history, other = (old, new) if "history" in old.seen_in else (new, old)
    examined, bytes_from = old.examined, old.bytes_from
    if new.examined is not None and (examined is None or
                                     (new.bytes_from == "scan" and bytes_from != "scan")):
        examined, bytes_from = new.examined, new.bytes_from
    return ScrubRun(
        history.ended,
        history.seconds if history.seconds is not None else other.seconds,
        history.started if history.started is not None else other.started,
        examined, bytes_from,
        old.errors if old.errors is not None else new.errors,
        old.repaired if old.repaired is not None else new.repaired,
        tuple(source for source in SOURCES if source in (*old.seen_in, *new.seen_in)))


def merge(runs: Sequence[ScrubRun], found: Iterable[ScrubRun]) -> list[ScrubRun]:
    """`runs` with the `found` ones added (or combined with their earlier sighting),
    oldest first, the last `MAX_RUNS`."""
    merged = list(runs)
    for run in found:
        index = next((i for i, known in enumerate(merged) if _same(known, run)), None)
        if index is None:
            merged.append(run)
        else:
            merged[index] = _combined(merged[index], run)
    merged.sort(key=lambda run: run.ended)
    return merged[-MAX_RUNS:]


# -- the trend --------------------------------------------------------------------------
class Trend(NamedTuple):
    """The last scrub against the ones before it."""

    last: ScrubRun
    before: int
    """How many earlier scrubs the medians are of (0: none to compare with)."""
    seconds_median: float | None = None
    rate_median: float | None = None

    @property
    def duration_change(self) -> float | None:
        """Percent longer (+) or shorter (-) than the median of the ones before."""
        if self.last.seconds is None or not self.seconds_median:
            return None
        return 100.0 * (self.last.seconds - self.seconds_median) / self.seconds_median

    @property
    def rate_change(self) -> float | None:
        """Percent faster (+) or slower (-) than the median of the ones before."""
        rate = self.last.rate
        if rate is None or not self.rate_median:
            return None
        return 100.0 * (rate - self.rate_median) / self.rate_median


def trend(runs: Sequence[ScrubRun]) -> Trend | None:
    if not runs:
        return None
    last, earlier = runs[-1], list(runs[-1 - TREND_BEFORE:-1])
    seconds = [run.seconds for run in earlier if run.seconds is not None]
    rates = [rate for rate in (run.rate for run in earlier) if rate is not None]
    return Trend(last, len(earlier), statistics.median(seconds) if seconds else None,
                 statistics.median(rates) if rates else None)


# -- zsn's record ----------------------------------------------------------------------
def parse_records(text: str, source: str) -> ScrubRecords:
    """The record file's text (zsn's own format, decoded strictly)."""
    records = decode.from_json(text, ScrubRecords, source, max_bytes=MAX_BYTES)
    if records.version != VERSION:
        return ScrubRecords()
    return records


def render(records: ScrubRecords) -> str:
    return json.dumps({"version": records.version, "pools": {
        name: [run.__dict__ for run in runs] for name, runs in sorted(records.pools.items())}},
        separators=(",", ":"))


def load(host: Host) -> tuple[ScrubRecords, str | None]:
    """The records, and a note when the file could not be used."""
    path = host.path(STATE_FILE)
    try:
        if not files.exists(path):
            return ScrubRecords(), None
        return parse_records(files.read_text(path, MAX_BYTES), str(path)), None
    except ZsnError as exc:
        return ScrubRecords(), f"scrub records not read ({exc}): starting afresh"
    except OSError as exc:
        return ScrubRecords(), f"scrub records not read ({files.describe_os_error(exc)})"


def save(host: Host, records: ScrubRecords) -> None:
    """Write the records (root only: the caller checks)."""
    path = host.path(STATE_FILE)
    files.make_dirs(path.parent)
    files.publish(path, render(records), mode=0o644)


# -- reading -----------------------------------------------------------------------------
class ScrubHistory(NamedTuple):
    pools: dict[str, tuple[ScrubRun, ...]]
    """Each pool's finished scrubs, oldest first."""
    notes: tuple[str, ...] = ()

    def of(self, pool: str) -> tuple[ScrubRun, ...]:
        return self.pools.get(pool, ())


EMPTY = ScrubHistory({})
NO_HISTORY = "reading a pool's history needs root: the scrubs shown are the ones zsn kept"
Runner = Callable[[Sequence[str]], commands.CommandResult]


def _run(argv: Sequence[str]) -> commands.CommandResult:
    return commands.run(argv, timeout=HISTORY_TIMEOUT, check=False, env={"LC_ALL": "C"},
                        max_output=HISTORY_MAX_OUTPUT)


def zpool_program() -> str | None:
    from zsn.zfs.live import find_program

    return find_program("zpool")


def root_on_the_live_system(host: Host) -> bool:
    """Whether this zsn reads pools' histories and keeps the record: `zpool history`
    needs root (zfs_secpolicy_config), and a tree under --root is not the pools' host."""
    return host.is_live and host.is_superuser


class ScrubReader:
    """Reads the pools' scrubs (their history when asked, zsn's record, what zpool
    status says now) and keeps the record (root, on the live system)."""

    def __init__(self, host: Host, *, runner: Runner = _run,
                 program: Callable[[], str | None] = zpool_program,
                 keeps: Callable[[Host], bool] = root_on_the_live_system) -> None:
        self.host = host
        self._runner = runner
        self._program = program
        self._keeps = keeps
        self._seen_totals: dict[str, int] = {}
        self._lock = threading.Lock()

    @property
    def keeps_records(self) -> bool:
        return self._keeps(self.host)

    def watch_running(self, pools: Iterable[Pool]) -> None:
        """Remember each running scrub's total (the bytes it will have read)."""
        for pool in pools:
            scan = pool.scan
            if scan is not None and scan.function == "scrub" and \
                    scan.state in ("scanning", "paused") and scan.total:
                self._seen_totals[pool.name] = scan.total

    def read(self, pools: Sequence[Pool], *, history: bool = True) -> ScrubHistory:
        """Every pool's scrubs: zsn's record with what zpool status says now and (with
        `history`, as root on the live system) the pool's history merged in."""
        with self._lock:
            self.watch_running(pools)
            records, note = load(self.host)
            notes = [note] if note else []
            changed = False
            for pool in pools:
                found: list[ScrubRun] = []
                seen = from_status(pool, self._seen_totals.get(pool.name))
                if seen is not None:
                    found.append(seen)
                if history and self.keeps_records:
                    found += self._history(pool.name, notes)
                known = records.pools.get(pool.name, [])
                merged = merge(known, found)
                if merged != known:
                    records.pools[pool.name] = merged
                    changed = True
            if history and pools and not self.keeps_records and self.host.is_live:
                notes.append(NO_HISTORY)
            if changed and self.keeps_records:
                try:
                    save(self.host, records)
                except (OSError, ZsnError) as exc:
                    notes.append(f"scrub records not kept: {exc}")
            return ScrubHistory({pool.name: tuple(records.pools.get(pool.name, ()))
                                 for pool in pools}, tuple(notes))

    def _history(self, pool: str, notes: list[str]) -> list[ScrubRun]:
        zpool = self._program()
        if zpool is None:
            return []
        try:
            result = self._runner(history_argv(zpool, pool))
        except CommandError as exc:
            notes.append(f"zpool history {pool}: {exc}")
            return []
        if result.returncode != 0:
            notes.append(f"zpool history {pool}: {result.first_error_line()}")
            return []
        return parse_history(result.stdout)


def last_ends(pools: Iterable[Pool]) -> tuple[tuple[str, float | None], ...]:
    """What makes the history worth reading again: the pools and their last scan's end."""
    return tuple((pool.name, pool.scan.ended if pool.scan is not None else None)
                 for pool in pools)


class ScrubWatch(Watch[tuple[Pool, ...], ScrubHistory]):
    """`ScrubReader` in a thread of its own (`zsn.watch.Watch`): `want` names the pools,
    `latest` gives the last reading at once. The thread reads the pools' histories when
    the pools or their last scans' ends change (nothing new can be in a history
    otherwise), and zsn's record alone every `every` seconds (another zsn may have added
    to it)."""

    def __init__(self, host: Host, *, reader: ScrubReader | None = None,
                 every: float = 600.0) -> None:
        self.reader = reader or ScrubReader(host)
        self._history_read_for: object = None
        super().__init__(self._read_pools, EMPTY, every=every, name="zsn-scrubs",
                         key=last_ends)

    def want(self, pools: Sequence[Pool]) -> None:
        self.reader.watch_running(pools)
        super().want(tuple(pools))

    def _read_pools(self, pools: tuple[Pool, ...]) -> ScrubHistory:
        key = last_ends(pools)
        reading = self.reader.read(pools, history=key != self._history_read_for)
        self._history_read_for = key
        return reading
