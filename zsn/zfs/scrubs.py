"""Scrub and trim schedules: which timer (or cron job) scrubs and trims each pool, when,
and a calendar on which pools that share a controller or disks never run at once.

A schedule is a systemd timer per pool and kind: OpenZFS's own
``zfs-scrub-{weekly,monthly}@POOL.timer`` (2.1.3+) and ``zfs-trim-...@POOL.timer``
(2.2.0+) where the installed version ships them, with zsn's drop-in ``zsn.conf`` when
the admin chose a time; else zsn's ``zsn-zfs-scrub-POOL`` service and timer
(`zsn.zfs.timers`). When is a `Slot`: weekly on a weekday, or monthly on a weekday of the
month's 1st to 4th week (days 1-7, 8-14 ...), at a time; it renders as the OnCalendar
expression and is read back from it (``weekly``/``monthly`` are OpenZFS's defaults).

Debian's blanket cron job (``/etc/cron.d/zfsutils-linux``: trim on the first Sunday of
the month, scrub on the second, at 00:24) runs ``/usr/lib/zfs-linux/scrub`` and
``trim`` over every ONLINE pool unless the pool's root dataset says
``org.debian:periodic-scrub=disable`` (trim: ``org.debian:periodic-trim``; ``auto``
trims only pools made only of NVMe disks). zsn reads it, names it, counts a pool it
covers as scheduled by it, and sets the property to ``disable`` on a pool it gives a
timer, so no pool is scrubbed twice.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Callable, Iterable, Iterator, Sequence
from datetime import date, datetime, timedelta
from typing import Literal, NamedTuple

from zsn.errors import ValidationError, ZsnError
from zsn.formats.unitfile import UnitFile
from zsn.system import files
from zsn.system.host import Host
from zsn.system.systemd import systemd_escape, systemd_unescape
from zsn.zfs.disks import DiskMap
from zsn.zfs.model import Pool

Kind = Literal["scrub", "trim"]
Every = Literal["week", "month"]
KINDS: tuple[Kind, ...] = ("scrub", "trim")
EVERY: tuple[Every, ...] = ("week", "month")
WEEKDAYS = ("Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun")
ORDINALS = ("1st", "2nd", "3rd", "4th")
SUNDAY = 6
UNIT_DIR = "/etc/systemd/system"
WANTS_DIR = "/etc/systemd/system/timers.target.wants"
UNIT_DIRS = (UNIT_DIR, "/usr/local/lib/systemd/system", "/usr/lib/systemd/system",
             "/lib/systemd/system")
"""Where systemd finds unit files (the system ones last: /lib is /usr/lib on merged-/usr)."""
DROPIN = "zsn.conf"
CRON_FILE = "/etc/cron.d/zfsutils-linux"
CRON_SCRIPTS: dict[Kind, str] = {"scrub": "/usr/lib/zfs-linux/scrub",
                                 "trim": "/usr/lib/zfs-linux/trim"}
CRON_PROPERTY: dict[Kind, str] = {"scrub": "org.debian:periodic-scrub",
                                  "trim": "org.debian:periodic-trim"}
DEFAULT_HOUR = 1
"""Staggered runs start at 01:00 local time: outside the hour daylight saving time skips."""
DEFAULT_RUN_SECONDS = 6 * 3600
"""How long a scrub or trim is taken to last when the pool has not told (never scrubbed)."""
OPENZFS_DELAY = 3600
"""OpenZFS's timers' RandomizedDelaySec (1h); zsn's own without a time chosen do the same."""
HORIZON_DAYS = 366
UNIT_CAP = 1 << 16
_CALENDAR_RE = re.compile(
    r"(?:(?P<day>Mon|Tue|Wed|Thu|Fri|Sat|Sun) )?\*-\*-(?P<dom>\*|\d\d(?:\.\.\d\d)?) "
    r"(?P<hour>\d\d):(?P<minute>\d\d)(?::00)?")
_AT_RE = re.compile(r"(?:(?P<ord>1st|2nd|3rd|4th)\s+)?(?:(?P<day>[A-Za-z]{3})\s+)?"
                    r"(?P<hour>\d{1,2}):(?P<minute>\d\d)")
_OPENZFS_RE = re.compile(r"zfs-(?P<kind>scrub|trim)-(?P<every>weekly|monthly)@(?P<pool>.+)\.timer")
_ZSN_RE = re.compile(r"zsn-zfs-(?P<kind>scrub|trim)-(?P<pool>[A-Za-z0-9_.:-]+)\.timer")
_WEEKDAY_TEST_RE = re.compile(r"date \+\\?%w\)? -eq (?P<day>[0-7])")


class Slot(NamedTuple):
    """When a schedule runs, in the host's local time."""

    every: Every
    weekday: int | None
    """0 Monday ... 6 Sunday; None: any."""
    days: tuple[int, int] | None
    """Days of the month it may fall on (8..14: the second week); None: any."""
    hour: int
    minute: int
    delay: int = 0
    """systemd's RandomizedDelaySec: the run starts up to this many seconds later."""

    @property
    def calendar(self) -> str:
        """The OnCalendar expression."""
        day = f"{WEEKDAYS[self.weekday]} " if self.weekday is not None else ""
        if self.days is None:
            dom = "*"
        elif self.days[0] == self.days[1]:
            dom = f"{self.days[0]:02d}"
        else:
            dom = f"{self.days[0]:02d}..{self.days[1]:02d}"
        return f"{day}*-*-{dom} {self.hour:02d}:{self.minute:02d}:00"

    def describe(self) -> str:
        """``every Sun 01:00``, ``2nd Sun of the month 00:24``, ``day 1 of the month 00:00``."""
        time = f"{self.hour:02d}:{self.minute:02d}"
        week = _week_of(self.days)
        if self.weekday is not None and self.days is None:
            text = f"every {WEEKDAYS[self.weekday]} {time}"
        elif self.weekday is not None and week is not None:
            text = f"{ORDINALS[week]} {WEEKDAYS[self.weekday]} of the month {time}"
        elif self.weekday is None and self.days is not None and self.days[0] == self.days[1]:
            text = f"day {self.days[0]} of the month {time}"
        else:
            text = self.calendar
        if self.delay:
            text += f" (+ up to {self.delay // 60} min at random)"
        return text

    def matches(self, day: date) -> bool:
        return ((self.weekday is None or day.weekday() == self.weekday)
                and (self.days is None or self.days[0] <= day.day <= self.days[1]))

    def starts(self, start: datetime, days: int = HORIZON_DAYS) -> Iterator[datetime]:
        """The runs from `start` on (local, naive), for `days` days."""
        first = start.replace(hour=0, minute=0, second=0, microsecond=0)
        for offset in range(days + 1):
            moment = (first + timedelta(days=offset)).replace(hour=self.hour,
                                                              minute=self.minute)
            if moment >= start and self.matches(moment.date()):
                yield moment

    def next_run(self, now: float) -> float | None:
        """When it next fires (Unix time; the randomized delay not counted)."""
        return next((moment.timestamp() for moment in self.starts(datetime.fromtimestamp(now))),
                    None)


def _week_of(days: tuple[int, int] | None) -> int | None:
    if days is None:
        return None
    first, last = days
    if last - first == 6 and (first - 1) % 7 == 0 and first <= 22:
        return (first - 1) // 7
    return None


def default_slot(every: Every) -> Slot:
    """OpenZFS's ``weekly`` (Monday 00:00) and ``monthly`` (the 1st, 00:00), 1 h random."""
    if every == "week":
        return Slot("week", 0, None, 0, 0, OPENZFS_DELAY)
    return Slot("month", None, (1, 1), 0, 0, OPENZFS_DELAY)


def parse_at(text: str, every: Every) -> Slot:
    """``[1st|2nd|3rd|4th] [Mon..Sun] HH:MM`` (the weekday Sunday, the week the 1st unless
    said; an ordinal only for a monthly schedule)."""
    found = _AT_RE.fullmatch(text.strip())
    usage = "write [1st|2nd|3rd|4th] [Mon..Sun] HH:MM, e.g. '2nd Sun 01:00'"
    if found is None:
        raise ValidationError(f"{text[:40]!r}: {usage}")
    day = (found.group("day") or "Sun").capitalize()
    if day not in WEEKDAYS:
        raise ValidationError(f"{found.group('day')!r} is not a weekday: {usage}")
    hour, minute = int(found.group("hour")), int(found.group("minute"))
    if hour > 23 or minute > 59:
        raise ValidationError(f"{hour:02d}:{minute:02d} is not a time of day")
    weekday = WEEKDAYS.index(day)
    if every == "week":
        if found.group("ord"):
            raise ValidationError(f"{found.group('ord')} week: only a monthly schedule "
                                  "falls on a week of the month")
        return Slot("week", weekday, None, hour, minute)
    week = ORDINALS.index(found.group("ord") or "1st")
    return Slot("month", weekday, (1 + 7 * week, 7 + 7 * week), hour, minute)


def at_text(slot: Slot) -> str | None:
    """`slot` as ``--at`` writes it (`parse_at` reads it back the same); None for the
    units' own time (a schedule without ``--at``) and for slots ``--at`` cannot say."""
    if slot == default_slot(slot.every) or slot.delay or slot.weekday is None:
        return None
    time = f"{WEEKDAYS[slot.weekday]} {slot.hour:02d}:{slot.minute:02d}"
    week = _week_of(slot.days)
    if slot.every == "week":
        return time if slot.days is None else None
    return f"{ORDINALS[week]} {time}" if week is not None else None


def parse_calendar(text: str, delay: int = 0) -> Slot | None:
    """A slot from an OnCalendar expression zsn writes (or OpenZFS's ``weekly`` and
    ``monthly``); None for any other."""
    text = " ".join(text.split())
    if text in ("weekly", "monthly"):
        return default_slot("week" if text == "weekly" else "month")._replace(delay=delay)
    found = _CALENDAR_RE.fullmatch(text)
    if found is None:
        return None
    weekday = WEEKDAYS.index(found.group("day")) if found.group("day") else None
    dom = found.group("dom")
    days = None if dom == "*" else (int(dom[:2]), int(dom[-2:]))
    hour, minute = int(found.group("hour")), int(found.group("minute"))
    if days is not None and not 1 <= days[0] <= days[1] <= 31 or hour > 23 or minute > 59:
        return None
    if days is None and weekday is None:
        return None  # daily: not a schedule zsn makes
    return Slot("week" if days is None else "month", weekday, days, hour, minute, delay)


# -- the distribution's cron job -------------------------------------------------------
class CronJob(NamedTuple):
    path: str
    lines: dict[Kind, str]
    """By kind, the line that runs Debian's script."""
    slots: dict[Kind, Slot | None]
    """By kind, when that line runs it (None: a line zsn does not understand)."""


def parse_cron(text: str, path: str = CRON_FILE) -> CronJob | None:
    """The job's scrub and trim lines from a cron.d file (None: it runs neither)."""
    lines: dict[Kind, str] = {}
    slots: dict[Kind, Slot | None] = {}
    for line in text.splitlines():
        stripped = line.strip()
        if not stripped or stripped.startswith("#") or re.match(r"[A-Za-z_]+=", stripped):
            continue
        fields = stripped.split(None, 6)
        if len(fields) < 7:
            continue
        for kind, script in CRON_SCRIPTS.items():
            if script in fields[6] and kind not in lines:
                lines[kind] = stripped
                slots[kind] = _cron_slot(fields)
    return CronJob(path, lines, slots) if lines else None


def _cron_slot(fields: Sequence[str]) -> Slot | None:
    minute, hour, dom, month, dow = fields[:5]
    if not (minute.isdigit() and hour.isdigit() and month == "*"):
        return None
    weekday: int | None = None
    test = _WEEKDAY_TEST_RE.search(fields[6])
    if dow.isdigit() and int(dow) <= 7:
        weekday = (int(dow) + 6) % 7
    elif dow != "*":
        return None
    if test is not None:  # Debian's: a day range and `[ $(date +%w) -eq 0 ]`
        weekday = (int(test.group("day")) + 6) % 7
    days: tuple[int, int] | None = None
    found = re.fullmatch(r"(\d{1,2})(?:-(\d{1,2}))?", dom)
    if found:
        days = (int(found.group(1)), int(found.group(2) or found.group(1)))
    elif dom != "*":
        return None
    if weekday is None and days is None or int(hour) > 23 or int(minute) > 59 \
            or days is not None and not 1 <= days[0] <= days[1] <= 31:
        return None
    return Slot("week" if days is None else "month", weekday, days, int(hour), int(minute))


def read_cron(host: Host) -> CronJob | None:
    path = host.path(CRON_FILE)
    if not files.exists(path):
        return None
    return parse_cron(files.read_tracked(path, UNIT_CAP).text)


def parse_cron_properties(text: str) -> dict[str, dict[Kind, str]]:
    """``zfs get -H -o name,property,value org.debian:periodic-scrub,...`` -> pool ->
    kind -> value (``-`` unset)."""
    by_property = {name: kind for kind, name in CRON_PROPERTY.items()}
    found: dict[str, dict[Kind, str]] = {}
    for line in text.splitlines():
        parts = line.split("\t")
        if len(parts) == 3 and parts[1] in by_property:
            found.setdefault(parts[0], {})[by_property[parts[1]]] = parts[2]
    return found


def cron_covers(kind: Kind, pool: Pool, value: str | None, nvme_only: bool) -> bool:
    """Whether Debian's script scrubs (trims) `pool`: ONLINE, and its property is unset,
    ``auto`` or ``enable`` (trim's ``auto``: only a pool made only of NVMe disks). A
    property that could not be read makes the scrub script skip the pool."""
    if pool.health != "ONLINE" or value is None:
        return False
    if kind == "scrub":
        return value in ("-", "auto", "enable")
    return value == "enable" or (value in ("-", "auto") and nvme_only)


# -- timers ---------------------------------------------------------------------------
class OldUnit(NamedTuple):
    """zsn's service for a timer as an older zsn wrote it."""

    path: str
    line: int
    """1-based: its ExecStart."""
    runs_zpool: bool
    """True: ExecStart runs ``zpool KIND -w POOL`` itself (zsn before its ``--run``),
    which fails, and the unit with it, when a scrub (trim) is already under way. False:
    it runs ``--run`` but has no ExecStop, so stopping it leaves the scrub running."""


class Timer(NamedTuple):
    """A timer that scrubs or trims a pool (enabled), or zsn's files for one."""

    pool: str
    kind: Kind
    unit: str
    """``zfs-scrub-monthly@tank.timer``, ``zsn-zfs-scrub-tank.timer``."""
    origin: Literal["openzfs", "zsn"]
    enabled: bool
    calendar: str
    """The OnCalendar it fires on (its file and drop-ins read as systemd does)."""
    slot: Slot | None
    """The calendar as a slot (None: an expression zsn does not make)."""
    unit_file: str
    """The file it is enabled from (a template's for an instance)."""
    zsn_files: tuple[str, ...] = ()
    """zsn's files for it (its units, or its drop-in): removed with the schedule."""
    old_unit: OldUnit | None = None
    """zsn's service, when an older zsn wrote it (setting the schedule again rewrites it)."""


def openzfs_unit_name(kind: Kind, every: Every, pool: str) -> str:
    return f"zfs-{kind}-{every}ly@{systemd_escape(pool)}.timer"


def zsn_unit_name(kind: Kind, pool: str) -> str:
    """zsn's own unit (no suffix); a pool's name goes in as it is (`TimerSpec` refuses a
    space)."""
    return f"zsn-zfs-{kind}-{pool}"


def openzfs_units(host: Host, kind: Kind) -> str | None:
    """The folder of the installed OpenZFS's ``zfs-KIND@.service`` and its weekly and
    monthly timers, when it ships them (scrub: 2.1.3+, trim: 2.2.0+)."""
    wanted = (f"zfs-{kind}@.service", f"zfs-{kind}-weekly@.timer", f"zfs-{kind}-monthly@.timer")
    for folder in UNIT_DIRS:
        if all(files.is_file(host.path(f"{folder}/{name}")) for name in wanted):
            return folder
    return None


def _unit_file(host: Host, name: str) -> str | None:
    for folder in UNIT_DIRS:
        if files.is_file(host.path(f"{folder}/{name}")):
            return f"{folder}/{name}"
    return None


def _texts(host: Host, unit: str) -> tuple[str | None, list[str]]:
    """A unit's file and its drop-ins' texts in systemd's order (the template's drop-ins,
    then the instance's; by file name)."""
    template = re.sub(r"@[^.]*\.", "@.", unit)
    main = _unit_file(host, unit) or (_unit_file(host, template) if template != unit else None)
    texts = [files.read_tracked(host.path(main), UNIT_CAP).text] if main else []
    dropins: dict[str, str] = {}
    for name in dict.fromkeys((template, unit)):
        for folder in reversed(UNIT_DIRS):
            place = host.path(f"{folder}/{name}.d")
            if not files.is_dir(place):
                continue
            for entry in files.list_files(place, "*.conf"):
                dropins[f"{entry.name}\0{name}"] = files.read_tracked(entry, UNIT_CAP).text
    ordered = sorted(dropins.items(), key=lambda item: (item[0].split("\0")[0],
                                                        item[0].split("\0")[1] == unit))
    return main, texts + [text for _key, text in ordered]


def effective_calendar(texts: Iterable[str]) -> tuple[list[str], int]:
    """The OnCalendar expressions and RandomizedDelaySec (seconds, ``1h`` understood) of
    a timer's file and drop-ins, read in order as systemd reads them."""
    calendars: list[str] = []
    delay = 0
    for text in texts:
        unit = UnitFile(text)
        calendars = _calendars(unit, calendars)
        value = unit.get("Timer", "RandomizedDelaySec")
        if value is not None:
            delay = _seconds(value)
    return calendars, delay


def _calendars(unit: UnitFile, before: list[str]) -> list[str]:
    found = list(before)
    for assignment in unit.assignments("Timer", "OnCalendar"):
        if assignment.value:
            found.append(assignment.value)
        else:
            found.clear()
    return found


def _seconds(value: str) -> int:
    found = re.fullmatch(r"\s*(\d+)\s*(s|sec|m|min|h|hour)?\s*", value)
    if found is None:
        return 0
    return int(found.group(1)) * {"m": 60, "min": 60, "h": 3600, "hour": 3600}.get(
        found.group(2) or "s", 1)


def old_unit(text: str, path: str, kind: Kind, pool: str) -> OldUnit | None:
    """`text`, zsn's service for `pool`'s `kind`, when it is as an older zsn wrote it:
    ExecStart ``ZPOOL KIND -w POOL``, or ``... zfs KIND schedule POOL --run`` and no
    ExecStop. None for today's and for one zsn never wrote (an admin's edit)."""
    unit = UnitFile(text)
    starts = unit.assignments("Service", "ExecStart")
    if not starts:
        return None
    words = starts[-1].value.split()
    line = starts[-1].line + 1
    if len(words) == 4 and words[0].startswith("/") and words[1:] == [kind, "-w", pool]:
        return OldUnit(path, line, runs_zpool=True)
    if words[-5:] == ["zfs", kind, "schedule", pool, "--run"] \
            and unit.get("Service", "ExecStop") is None:
        return OldUnit(path, line, runs_zpool=False)
    return None


def rewrite_command(timer: Timer) -> str:
    """The command that writes `timer`'s units again as zsn writes them now, at the same
    time (a calendar zsn does not make: monthly, at the units' own time)."""
    words = ["zsn", "zfs", timer.kind, "schedule", timer.pool, "--every",
             timer.slot.every if timer.slot else "month"]
    at = at_text(timer.slot) if timer.slot else None
    return shlex.join(words + (["--at", at] if at else []))


def describe_old_unit(timer: Timer, found: OldUnit) -> str:
    """What is wrong with a service an older zsn wrote (where: `found`'s path and line)."""
    if found.runs_zpool:
        return (f"zsn's {timer.kind} service runs zpool {timer.kind} -w {timer.pool} itself "
                f"(written by an older zsn): the run fails, and the unit with it, when a "
                f"{timer.kind} is already under way")
    return (f"zsn's {timer.kind} service has no ExecStop (written by an older zsn): "
            f"stopping the unit leaves the {timer.kind} running")


def old_units(schedules: Schedules) -> list[tuple[Timer, OldUnit]]:
    """The enabled timers whose service an older zsn wrote."""
    return [(timer, timer.old_unit) for timer in schedules.timers
            if timer.enabled and timer.old_unit is not None]


def _timer(host: Host, unit: str, pool: str, kind: Kind, origin: Literal["openzfs", "zsn"],
           enabled: bool) -> Timer:
    main, texts = _texts(host, unit)
    calendars, delay = effective_calendar(texts)
    slot = parse_calendar(calendars[0], delay) if len(calendars) == 1 else None
    found = None
    if origin == "zsn":
        own = tuple(f"{UNIT_DIR}/{zsn_unit_name(kind, pool)}.{suffix}"
                    for suffix in ("service", "timer"))
        if files.is_file(host.path(own[0])):
            found = old_unit(files.read_tracked(host.path(own[0]), UNIT_CAP).text, own[0],
                             kind, pool)
    else:
        dropin = f"{UNIT_DIR}/{unit}.d/{DROPIN}"
        own = (dropin,) if files.is_file(host.path(dropin)) else ()
    template = re.sub(r"@[^.]*\.", "@.", unit)
    return Timer(pool, kind, unit, origin, enabled, "; ".join(calendars), slot,
                 main or f"{UNIT_DIR}/{template}", tuple(path for path in own
                                                        if files.exists(host.path(path))),
                 found)


def read_timers(host: Host) -> list[Timer]:
    """Every enabled scrub or trim timer, OpenZFS's or zsn's, and zsn's files of timers
    no longer enabled."""
    enabled: set[str] = set()
    wants = host.path(WANTS_DIR)
    if files.is_dir(wants):
        enabled = {entry.name for entry in files.list_files(wants, "*.timer")}
    names = set(enabled)
    units = host.path(UNIT_DIR)
    if files.is_dir(units):
        names |= {entry.name for entry in files.list_files(units, "zsn-zfs-*.timer")}
        names |= {entry.name.removesuffix(".d")
                  for entry in files.list_files(units, "zfs-*@*.timer.d")
                  if files.is_file(host.path(f"{UNIT_DIR}/{entry.name}/{DROPIN}"))}
    found = []
    for name in sorted(names):
        upstream = _OPENZFS_RE.fullmatch(name)
        own = _ZSN_RE.fullmatch(name)
        if upstream:
            pool = systemd_unescape(upstream.group("pool"))
            kind: Kind = "scrub" if upstream.group("kind") == "scrub" else "trim"
            found.append(_timer(host, name, pool, kind, "openzfs", name in enabled))
        elif own:
            kind = "scrub" if own.group("kind") == "scrub" else "trim"
            found.append(_timer(host, name, own.group("pool"), kind, "zsn", name in enabled))
    return found


# -- the pools' schedules ---------------------------------------------------------------
class PoolSchedule(NamedTuple):
    pool: str
    kind: Kind
    timers: tuple[Timer, ...]
    """The enabled timers that run it (one, normally)."""
    cron: bool
    """Debian's cron job runs it too."""
    cron_property: str | None
    """The pool's ``org.debian:periodic-KIND`` (``-`` unset; None: not read)."""
    group: tuple[str, ...]
    """The other pools on the same controller or disks."""
    run_seconds: int
    """How long a run is taken to last (the last scrub's time, else a default)."""
    applies: bool = True
    """Trim: the pool has a solid-state disk (or zsn cannot tell)."""

    @property
    def slots(self) -> list[tuple[Slot, str]]:
        """When it runs, and by what."""
        return [(timer.slot, timer.unit) for timer in self.timers if timer.slot is not None]


class Schedules(NamedTuple):
    cron: CronJob | None
    openzfs: dict[Kind, str | None]
    """By kind, the folder of OpenZFS's units (None: zsn writes its own)."""
    pools: tuple[PoolSchedule, ...]
    timers: tuple[Timer, ...]
    """Every timer found (also of pools not imported, and zsn's disabled files)."""
    notes: tuple[str, ...] = ()

    def of(self, pool: str, kind: Kind) -> PoolSchedule | None:
        return next((p for p in self.pools if p.pool == pool and p.kind == kind), None)


def leaves_of(pool: Pool) -> list[str]:
    """The pool's leaf vdevs (paths with ``zpool status -P``)."""
    return [vdev.name for vdev in pool.vdevs if vdev.is_leaf]


def share_groups(pools: Sequence[Pool], disks: DiskMap) -> dict[str, tuple[str, ...]]:
    """Pool -> the other pools that share a disk or a controller with it, directly or
    through another pool."""
    owners: dict[str, set[str]] = {}
    for pool in pools:
        for leaf in leaves_of(pool):
            chain = disks.leaves.get(leaf)
            for name in chain.disks if chain else ():
                disk = disks.disks.get(name)
                owners.setdefault(f"disk:{disk.key if disk else name}", set()).add(pool.name)
                if disk is not None and disk.controller:
                    owners.setdefault(f"controller:{disk.controller}", set()).add(pool.name)
    parent = {pool.name: pool.name for pool in pools}

    def root(name: str) -> str:
        while parent[name] != name:
            name = parent[name]
        return name

    for sharing in owners.values():
        first, *rest = sorted(sharing)
        for other in rest:
            parent[root(other)] = root(first)
    return {pool.name: tuple(sorted(other.name for other in pools
                                    if other.name != pool.name
                                    and root(other.name) == root(pool.name)))
            for pool in pools}


def _disk_kinds(pool: Pool, disks: DiskMap) -> tuple[bool, bool]:
    """(has a solid-state disk or one of unknown kind, all its /dev leaves are NVMe)."""
    found = [disks.disks.get(name) for leaf in leaves_of(pool)
             for name in (disks.leaves[leaf].disks if leaf in disks.leaves else ())]
    solid = not found or any(d is None or d.rotational is not True for d in found)
    nvme = all(d is not None and d.transport == "nvme" for d in found)
    return solid, nvme


def run_seconds(pool: Pool, kind: Kind) -> int:
    scan = pool.scan
    if kind == "scrub" and scan is not None and scan.function == "scrub" \
            and scan.duration_seconds:
        return max(scan.duration_seconds, 600)
    return DEFAULT_RUN_SECONDS


def assemble(pools: Sequence[Pool], timers: Sequence[Timer], cron: CronJob | None,
             properties: dict[str, dict[Kind, str]] | None, disks: DiskMap,
             openzfs: dict[Kind, str | None], notes: Sequence[str] = ()) -> Schedules:
    """The schedules from what was read (pure)."""
    groups = share_groups(pools, disks)
    found = []
    for pool in pools:
        solid, nvme = _disk_kinds(pool, disks)
        for kind in KINDS:
            value = properties.get(pool.name, {}).get(kind) if properties is not None else None
            covered = cron is not None and kind in cron.lines and \
                cron_covers(kind, pool, value, nvme)
            found.append(PoolSchedule(
                pool.name, kind, tuple(t for t in timers if t.pool == pool.name
                                       and t.kind == kind and t.enabled),
                covered, value, groups.get(pool.name, ()), run_seconds(pool, kind),
                applies=kind == "scrub" or solid))
    return Schedules(cron, dict(openzfs), tuple(found), tuple(timers), tuple(notes))


Runner = Callable[[Sequence[str]], str]


def read_schedules(host: Host, pools: Sequence[Pool], disks: DiskMap,
                   zfs_get: Runner) -> Schedules:
    """The schedules on `host`. `zfs_get` runs a ``zfs get`` (argv from ``zfs``) and gives
    its output: only when the cron job exists, to read the pools' opt-outs."""
    notes: list[str] = []
    cron = read_cron(host)
    properties: dict[str, dict[Kind, str]] | None = {}
    if cron is not None and pools:
        argv = ["zfs", "get", "-H", "-o", "name,property,value",
                ",".join(CRON_PROPERTY.values()), *[pool.name for pool in pools]]
        try:
            properties = parse_cron_properties(zfs_get(argv))
        except ZsnError as exc:
            properties = None
            notes.append(f"which pools {cron.path} skips was not read: {exc}")
    return assemble(pools, read_timers(host), cron, properties, disks,
                    {kind: openzfs_units(host, kind) for kind in KINDS}, notes)


# -- clashes and staggering -----------------------------------------------------------
def _windows(slot: Slot, seconds: int, start: datetime) -> list[tuple[datetime, datetime]]:
    length = timedelta(seconds=seconds + slot.delay)
    return [(moment, moment + length) for moment in slot.starts(start)]


def overlap(a: Slot, a_seconds: int, b: Slot, b_seconds: int, start: datetime) -> bool:
    """Whether runs of `a` and `b` (lasting that long, plus their random delays) can be
    under way at once within the next year."""
    other = _windows(b, b_seconds, start)
    return any(first < end and begin < last for first, last in _windows(a, a_seconds, start)
               for begin, end in other)


def clashes(schedules: Schedules, now: float) -> list[tuple[PoolSchedule, PoolSchedule]]:
    """Pairs of schedules (scrub or trim) of pools on the same controller or disks whose
    runs can overlap."""
    start = datetime.fromtimestamp(now)
    runs = [(entry, slot) for entry in schedules.pools for slot, _unit in entry.slots]
    if schedules.cron is not None:
        runs += [(entry, slot) for entry in schedules.pools if entry.cron
                 for slot in (schedules.cron.slots.get(entry.kind),) if slot is not None]
    found = []
    for index, (first, first_slot) in enumerate(runs):
        for second, second_slot in runs[index + 1:]:
            if second.pool in first.group and overlap(first_slot, first.run_seconds,
                                                      second_slot, second.run_seconds,
                                                      start):
                found.append((first, second))
    return found


PAST: dict[Kind, str] = {"scrub": "scrubbed", "trim": "trimmed"}


def twice(schedules: Schedules) -> list[tuple[PoolSchedule, list[str]]]:
    """Pools scrubbed (trimmed) by more than one schedule, with what runs them."""
    found = []
    for entry in schedules.pools:
        by = [timer.unit for timer in entry.timers]
        if entry.cron and schedules.cron is not None:
            by.append(f"the cron job {schedules.cron.path}")
        if len(by) > 1:
            found.append((entry, by))
    return found


def never(schedules: Schedules) -> list[PoolSchedule]:
    """Pools no timer and no cron job scrubs."""
    return [entry for entry in schedules.pools
            if entry.kind == "scrub" and not entry.timers and not entry.cron]


def candidates(every: Every) -> list[Slot]:
    """The slots staggering picks from, best spread first: monthly the 1st and 3rd weeks
    before the 2nd and 4th, Sundays before Wednesdays ...; weekly Sunday, Wednesday,
    Friday ...; at 01:00, then at 13:00."""
    weekdays = (SUNDAY, 2, 4, 0, 3, 5, 1)
    found = []
    for hour in (DEFAULT_HOUR, DEFAULT_HOUR + 12):
        for weekday in weekdays:
            if every == "week":
                found.append(Slot("week", weekday, None, hour, 0))
                continue
            for week in (0, 2, 1, 3):
                found.append(Slot("month", weekday, (1 + 7 * week, 7 + 7 * week), hour, 0))
    return found


class Placed(NamedTuple):
    pool: str
    slot: Slot
    clashes_with: tuple[str, ...] = ()
    """Pools it still overlaps (no free slot was left)."""


def stagger(wanted: Sequence[tuple[str, Every, int]], taken: Sequence[tuple[str, Slot, int]],
            groups: dict[str, tuple[str, ...]], now: float) -> list[Placed]:
    """A slot for each (pool, every, run seconds) in `wanted` such that no two pools of one
    group run at once, nor with what `taken` (pool, slot, run seconds: the other kind's
    schedules) holds; the longest runs are placed first. A pool with no free slot gets
    the one that overlaps fewest and says with what."""
    start = datetime.fromtimestamp(now)
    placed: list[tuple[str, Slot, int]] = list(taken)
    result: dict[str, Placed] = {}
    for pool, every, seconds in sorted(wanted, key=lambda item: (-item[2], item[0])):
        group = set(groups.get(pool, ())) | {pool}
        best: tuple[int, Slot, tuple[str, ...]] | None = None
        for slot in candidates(every):
            hit = tuple(other for other, other_slot, other_seconds in placed
                        if other in group and overlap(slot, seconds, other_slot, other_seconds,
                                                      start))
            if best is None or len(hit) < best[0]:
                best = (len(hit), slot, hit)
            if not hit:
                break
        assert best is not None
        result[pool] = Placed(pool, best[1], tuple(dict.fromkeys(best[2])))
        placed.append((pool, best[1], seconds))
    return [result[pool] for pool, _every, _seconds in wanted]
