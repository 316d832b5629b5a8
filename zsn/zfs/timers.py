"""zsn's systemd timers for ZFS: a oneshot service that runs one zsn command and the
timer that starts it (persistent: a run missed while the box was off happens once at
the next boot; a randomized delay spreads a fleet's runs).

A unit is a `TimerSpec` of typed values: its name, a plain description, the argv (and
an ``ExecStop=-``'s, for work that goes on when the process is stopped), all words of a
safe set (systemd expands ``%`` and ``$`` and splits on quotes, so a word that would
need any of that is refused rather than escaped), a calendar expression
and durations. `units` writes the two files through the unit file format's one renderer
(`zsn.formats.unitfile`, each value checked by `SCHEMA`), and the plan's file edits read
them back with that format's reader before they are written: they must mean exactly the
spec (no other section, key or word), so a value can never add a line. `timer_steps`
makes the plan's steps for one spec (the files, then enabling and starting the timer),
for any of zsn's timers: snapshots and replication here, scrubs and trims alike.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from zsn import values
from zsn.errors import ValidationError, ZsnError
from zsn.formats.unitfile import Schema, UnitFile
from zsn.plan import FileEdit, LiveStep, Plan, Step
from zsn.system import files
from zsn.system.host import Host

UNIT_DIR = "/etc/systemd/system"
WANTS_DIR = "/etc/systemd/system/timers.target.wants"
_NAME_RE = re.compile(r"zsn-[a-z0-9][A-Za-z0-9_.:-]{0,230}")
"""zsn-, then what a pool's name may hold (but a space): zsn-zfs-scrub-Tank_1."""
_WORD_RE = re.compile(r"[A-Za-z0-9_./:@+=,-]+")
_TEXT_RE = re.compile(r"[A-Za-z0-9 _./:@+=,()'-]+")
_CALENDAR_RE = re.compile(r"[A-Za-z0-9*:/,.~ -]+")
HEADER = "# Written by zsn ({command}); zsn writes it again when asked: edit with care.\n"


@dataclass(frozen=True)
class TimerSpec:
    name: str
    """The units' name without the suffix: ``zsn-zfs-snapshots``."""
    description: str
    argv: tuple[str, ...]
    """ExecStart's words."""
    on_calendar: str
    """A systemd calendar expression: ``*-*-* *:00/15:00``."""
    randomized_delay: int
    """Seconds."""
    command: str = "zsn zfs policy install-timer"
    """What wrote it (the files' first line says so)."""
    network: bool = True
    """The command needs the network (replication): the service waits for it."""
    stop_argv: tuple[str, ...] = ()
    """ExecStop's words (none: no ExecStop). systemd runs them when the unit is stopped
    and after every run that succeeded, prefixed ``-``: a failure (nothing to stop) does
    not fail the unit."""

    def checked(self) -> TimerSpec:
        """The spec, every value checked as systemd would read it (`ValidationError`)."""
        if not _NAME_RE.fullmatch(self.name):
            raise ValidationError(f"unit name {self.name[:40]!r}: zsn-, then letters, "
                                  "digits and '_.:-'")
        if not _TEXT_RE.fullmatch(self.description):
            raise ValidationError(f"description {self.description[:40]!r}: plain words only")
        if not self.argv:
            raise ValidationError("the command must start with an absolute path")
        for key, argv in (("ExecStart", self.argv), ("ExecStop", self.stop_argv)):
            if argv and not argv[0].startswith("/"):
                raise ValidationError(f"{key}: the command must start with an absolute path")
            for word in argv:
                if not _WORD_RE.fullmatch(word):
                    raise ValidationError(f"{word[:60]!r} cannot go into {key} unquoted "
                                          "(systemd would expand or split it): install zsn "
                                          "where its path has plain characters")
        if not _CALENDAR_RE.fullmatch(self.on_calendar):
            raise ValidationError(f"calendar {self.on_calendar[:40]!r}: not a systemd "
                                  "calendar expression")
        if not 0 <= self.randomized_delay <= 86400:
            raise ValidationError("a randomized delay is from 0 to a day")
        return self

    @property
    def service(self) -> str:
        return f"{self.name}.service"

    @property
    def timer(self) -> str:
        return f"{self.name}.timer"


def meaning(spec: TimerSpec) -> dict[str, list[tuple[str, str, str]]]:
    """What each file must say: (section, key, value), in order."""
    after = [("Unit", "After", "zfs.target network-online.target"),
             ("Unit", "Wants", "network-online.target")] if spec.network \
        else [("Unit", "After", "zfs.target")]
    return {
        spec.service: [("Unit", "Description", spec.description),
                       *after,
                       ("Service", "Type", "oneshot"),
                       ("Service", "ExecStart", " ".join(spec.argv)),
                       *([("Service", "ExecStop", "-" + " ".join(spec.stop_argv))]
                         if spec.stop_argv else []),
                       ("Service", "Nice", "10"),
                       ("Service", "IOSchedulingClass", "idle")],
        spec.timer: [("Unit", "Description", spec.description),
                     ("Timer", "OnCalendar", spec.on_calendar),
                     ("Timer", "RandomizedDelaySec", str(spec.randomized_delay)),
                     ("Timer", "Persistent", "true"),
                     ("Timer", "AccuracySec", "1s"),
                     ("Install", "WantedBy", "timers.target")],
    }


_UNITS = values.pattern("unit names", r"[A-Za-z0-9@_.:-]+( [A-Za-z0-9@_.:-]+)*")
SCHEMA: Schema = {
    ("Unit", "Description"): values.TEXT,
    ("Unit", "After"): _UNITS,
    ("Unit", "Wants"): _UNITS,
    ("Service", "Type"): values.one_of("oneshot"),
    ("Service", "ExecStart"): values.pattern("an absolute command of plain words",
                                             rf"/{_WORD_RE.pattern}( {_WORD_RE.pattern})*"),
    ("Service", "ExecStop"): values.pattern("'-', then an absolute command of plain words",
                                            rf"-/{_WORD_RE.pattern}( {_WORD_RE.pattern})*"),
    ("Service", "Nice"): values.pattern("a nice level", r"-?[0-9]{1,2}"),
    ("Service", "IOSchedulingClass"): values.one_of("idle"),
    ("Timer", "OnCalendar"): values.pattern("a calendar expression", _CALENDAR_RE.pattern),
    ("Timer", "RandomizedDelaySec"): values.pattern("whole seconds", r"[0-9]{1,5}"),
    ("Timer", "Persistent"): values.one_of("true"),
    ("Timer", "AccuracySec"): values.pattern("a duration in seconds", r"[0-9]{1,5}s"),
    ("Install", "WantedBy"): _UNITS,
}
"""What each (section, key) of zsn's timer units takes, as systemd reads it."""


def units(spec: TimerSpec) -> dict[str, UnitFile]:
    """The service and the timer by file name, through the unit file renderer; each
    one's `intent` says what it means, for the plan's read-back."""
    spec.checked()
    found = {}
    for name, items in meaning(spec).items():
        unit = UnitFile(schema=SCHEMA)
        for section, key, value in items:
            unit.set(section, key, value)
        found[name] = unit
    return found


def header(spec: TimerSpec) -> str:
    """The files' first line: a comment, which no reading of the unit sees."""
    return HEADER.format(command=spec.command)


def render(spec: TimerSpec) -> dict[str, str]:
    """The service's and the timer's text, by file name."""
    return {name: header(spec) + unit.text for name, unit in units(spec).items()}


def zsn_argv(*words: str) -> tuple[str, ...]:
    """This zsn, as the service runs it: the interpreter running now, ``-m zsn``."""
    return (sys.executable, "-m", "zsn", *words)


def _systemd_here(host: Host) -> bool:
    from zsn.system.systemd import systemd_runs

    return systemd_runs(host)


def _enable_and_start(host: Host, timer: str) -> None:
    from zsn.system.dbus import SystemBus, Systemd, run_sync

    async def act(bus: SystemBus) -> None:
        systemd = Systemd(bus)
        await systemd.reload()
        await systemd.enable(timer)
        # restart: a timer already running computes its next run from the files read now
        result = await systemd.restart(timer)
        if not result.ok:
            raise ZsnError(result.describe())

    run_sync(host, act, timeout=15.0, deadline=60.0)


def _stop_and_disable(host: Host, timer: str) -> None:
    from zsn.system.dbus import SystemBus, Systemd, run_sync

    async def act(bus: SystemBus) -> None:
        systemd = Systemd(bus)
        result = await systemd.stop(timer)
        if not result.ok:
            raise ZsnError(result.describe())
        await systemd.disable(timer)

    run_sync(host, act, timeout=15.0, deadline=60.0)


def enable_steps(host: Host, timer: str, unit_file: str) -> tuple[list[Step], list[str]]:
    """The timer `timer` (its unit file: `unit_file`, a template's for an instance)
    enabled and started over D-Bus, or only linked into timers.target.wants when no
    systemd runs here; and notes."""
    if _systemd_here(host):
        return [LiveStep(f"systemd: reload, enable and start {timer} (over D-Bus)",
                         lambda: _enable_and_start(host, timer))], []
    steps: list[Step] = []
    link = host.path(f"{WANTS_DIR}/{timer}")
    if not files.lexists(link):
        steps.append(LiveStep(f"link {WANTS_DIR}/{timer} -> {unit_file}",
                              lambda: _link(link, unit_file),
                              lambda: files.remove_link(link)))
    return steps, [f"no systemd runs here: {timer} starts with the next boot"]


def disable_steps(host: Host, timer: str, unit_file: str) -> list[Step]:
    """The timer stopped and disabled (over D-Bus), or its link in timers.target.wants
    removed when no systemd runs here."""
    if _systemd_here(host):
        return [LiveStep(f"systemd: stop and disable {timer} (over D-Bus)",
                         lambda: _stop_and_disable(host, timer),
                         lambda: _enable_and_start(host, timer))]
    link = host.path(f"{WANTS_DIR}/{timer}")
    if not files.lexists(link):
        return []
    return [LiveStep(f"remove the link {WANTS_DIR}/{timer}", lambda: files.remove_link(link),
                     lambda: _link(link, unit_file))]


def timer_steps(host: Host, spec: TimerSpec) -> tuple[list[Step], list[str]]:
    """The steps that install `spec` (files whose text changes, then the timer enabled
    and started) and notes."""
    steps: list[Step] = []
    for name, unit in units(spec).items():
        text = header(spec) + unit.text
        path = host.path(f"{UNIT_DIR}/{name}")
        previous = files.read_tracked(path, 1 << 16) if files.exists(path) else None
        if previous is None or previous.text != text:
            steps.append(FileEdit(path, previous, text, intent=unit.intent))
    enabling, notes = enable_steps(host, spec.timer, f"{UNIT_DIR}/{spec.timer}")
    return steps + enabling, notes


def _link(link: Path, target: str) -> None:
    files.make_dirs(link.parent)
    files.make_link(target, link)


def calendar_every(seconds: int) -> str:
    """A calendar expression firing every `seconds` (minutes dividing the hour, or
    hours dividing the day), aligned to the clock."""
    if seconds % 60 == 0 and 60 <= seconds <= 3600 and 3600 % seconds == 0:
        minutes = seconds // 60
        return "*-*-* *:00:00" if minutes == 60 else f"*-*-* *:00/{minutes}:00"
    if seconds % 3600 == 0 and 86400 % seconds == 0:
        return f"*-*-* 00/{seconds // 3600}:00:00"
    raise ValidationError(f"every {seconds} s: a timer fires every N minutes dividing the "
                          "hour, or every N hours dividing the day")


SNAPSHOTS = "zsn-zfs-snapshots"
REPLICATE = "zsn-zfs-replicate"
DEFAULT_EVERY = 900


def specs(every: int, make: Callable[..., tuple[str, ...]] = zsn_argv) -> list[TimerSpec]:
    """The snapshot timer and the replication timer, firing every `every` seconds."""
    calendar = calendar_every(every)
    return [
        TimerSpec(SNAPSHOTS, "zsn ZFS snapshot policies: take what is due, prune",
                  make("zfs", "snapshots", "run"), calendar, min(30, every // 10)),
        TimerSpec(REPLICATE, "zsn ZFS replication jobs: run those due",
                  make("zfs", "replicate", "run"), calendar, min(300, every // 5)),
    ]


def default_every(host: Host) -> int:
    """15 minutes, or the shortest frequent period a policy uses."""
    from zsn.zfs.policy import read_config

    config = read_config(host)
    periods = [p.frequent_period for p in config.policies.values()
               if p.keep.get("frequently", 0) > 0]
    return min([DEFAULT_EVERY, *periods])


def plan_install_timers(host: Host, every: str | None) -> Plan:
    """``zsn zfs policy install-timer``."""
    from zsn.errors import about_input
    from zsn.zfs.policy import parse_duration

    if every is None:
        seconds = default_every(host)
    else:
        with about_input("every"):
            seconds = parse_duration(every, "every")
    with about_input("every"):
        chosen = specs(seconds)
    plan = Plan(f"install zsn's ZFS timers (every {seconds // 60} min)",
                warnings=[] if host.is_superuser else ["zsn is not root: systemd's unit "
                                                       "folder is root's"])
    for spec in chosen:
        steps, notes = timer_steps(host, spec)
        plan.steps += steps
        plan.notes += notes
    if not plan.steps:
        plan.notes.append("the timers are installed as they would be written")
    plan.notes.append("persistent: a run missed while the box was off happens once at the "
                      "next boot")
    return plan


def unit_texts(every: int, program: str) -> dict[str, str]:
    """The units as contrib/systemd ships them (`program` instead of this interpreter)."""
    found: dict[str, str] = {}
    for spec in specs(every, lambda *words: (program, *words)):
        found.update(render(spec))
    return found

