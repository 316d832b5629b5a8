"""Scrub and trim schedules: Debian's cron job read from its real file, OpenZFS's real
units (tests/fixtures/zfs-schedules/SOURCES.md), the slots zsn writes read back by zsn and
by systemd (`systemd-analyze calendar` and `verify`), staggering on the pools of
tests/fixtures/zfs/zpool-status-two-pools-features.zpool-status-exporter.txt, the plans
on a --root tree, and the command line through fake zpool/zfs (tests/unit/zfs/conftest)."""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
import sys
from datetime import datetime
from pathlib import Path

import pytest

from tests.needs import needs_tools
from tests.schema import SCHEMA_PATH, validator
from tests.unit.zfs.conftest import FIXTURES, FakeZfs
from zsn.exporter.prometheus import render
from zsn.formats.unitfile import UnitFile
from zsn.plan import FileEdit
from zsn.system.host import Host
from zsn.view import Cell, cell_text
from zsn.zfs import lint
from zsn.zfs.disks import Disk, DiskMap, LeafChain
from zsn.zfs.export import schedule_metrics, schedules_to_dict
from zsn.zfs.facts import Facts
from zsn.zfs.model import ZfsSnapshot
from zsn.zfs.scrub_actions import plan_off, plan_schedule, plan_stagger, scheduled_argv
from zsn.zfs.scrub_cli import problems
from zsn.zfs.scrubs import (
    Every,
    Kind,
    OldUnit,
    Schedules,
    Slot,
    assemble,
    at_text,
    candidates,
    clashes,
    default_slot,
    describe_old_unit,
    never,
    old_unit,
    overlap,
    parse_at,
    parse_calendar,
    parse_cron,
    parse_cron_properties,
    read_schedules,
    read_timers,
    twice,
)
from zsn.zfs.status import parse_text

HERE = FIXTURES / "zfs-schedules"
CRON = (HERE / "etc-cron.d-zfsutils-linux.debian12.txt").read_text()
TWO_POOLS = parse_text((FIXTURES / "zfs/zpool-status-two-pools-features."
                        "zpool-status-exporter.txt").read_text())
AHCI = "0000:00:17.0"
NOW = datetime(2026, 12, 2, 16, 0).timestamp()
"""A Wednesday afternoon, local time."""


def two_pool_disks(controller: str | None = AHCI) -> DiskMap:
    """rpool's two SSDs and wilbur's two HDDs, all on one SATA controller (constructed:
    the fixture's by-id names)."""
    disks: dict[str, Disk] = {}
    leaves: dict[str, LeafChain] = {}
    for index, pool in enumerate(TWO_POOLS):
        for number, vdev in enumerate(v for v in pool.vdevs if v.is_leaf):
            name = f"sd{'abcd'[index * 2 + number]}"
            disks[name] = Disk(name, "sata", serial=vdev.name.split("_")[-1],
                               rotational=pool.name == "wilbur", controller=controller)
            leaves[vdev.name] = LeafChain(vdev.name, disks=(name,))
    return DiskMap(disks, leaves)


# -- the cron job and the slots ------------------------------------------------------
def test_debians_cron_job_is_read_from_its_real_file() -> None:
    job = parse_cron(CRON, "/etc/cron.d/zfsutils-linux")
    assert job is not None and set(job.lines) == {"scrub", "trim"}
    assert job.slots["scrub"] == Slot("month", 6, (8, 14), 0, 24)
    assert job.slots["trim"] == Slot("month", 6, (1, 7), 0, 24)
    assert job.slots["scrub"].describe() == "2nd Sun of the month 00:24"
    assert "/usr/lib/zfs-linux/scrub" in job.lines["scrub"]
    # the fixture's pools were scrubbed by it: Sunday 11 February 2024 (the second week)
    assert job.slots["scrub"].matches(datetime(2024, 2, 11).date())
    assert parse_cron("# nothing\nPATH=/bin\n") is None


def test_the_pools_opt_outs_are_read_from_zfs_get() -> None:
    # `zfs get -H -o name,property,value` prints name, property, value, tab-separated
    text = ("rpool\torg.debian:periodic-scrub\t-\nrpool\torg.debian:periodic-trim\tenable\n"
            "wilbur\torg.debian:periodic-scrub\tdisable\n")
    assert parse_cron_properties(text) == {"rpool": {"scrub": "-", "trim": "enable"},
                                           "wilbur": {"scrub": "disable"}}


@pytest.mark.parametrize("text,every,calendar", [
    ("2nd Sun 00:24", "month", "Sun *-*-08..14 00:24:00"),
    ("01:00", "month", "Sun *-*-01..07 01:00:00"),
    ("4th wed 23:59", "month", "Wed *-*-22..28 23:59:00"),
    ("Sat 3:30", "week", "Sat *-*-* 03:30:00"),
])
def test_at_reads_a_slot_that_renders_and_reads_back(text: str, every: str,
                                                     calendar: str) -> None:
    slot = parse_at(text, "week" if every == "week" else "month")
    assert slot.calendar == calendar and parse_calendar(slot.calendar) == slot


@pytest.mark.parametrize("text", ["Sun", "25:00", "5th Sun 01:00", "Son 01:00", "1st Sun 01:00"])
def test_a_bad_at_is_refused(text: str) -> None:
    from zsn.errors import ValidationError

    with pytest.raises(ValidationError):
        parse_at(text, "week" if text.startswith("1st") else "month")


def test_systemd_reads_every_slot_as_zsn_does() -> None:
    """Every calendar staggering can choose, and OpenZFS's weekly/monthly: systemd's
    normalized form and next elapse (from the same base time) are zsn's."""
    needs_tools("systemd-analyze")
    slots = [*candidates("month"), *candidates("week"), parse_calendar("weekly"),
             parse_calendar("monthly")]
    texts = [slot.calendar if slot else "" for slot in slots]
    for index, slot in enumerate(slots):
        assert slot is not None
        expression = ["weekly", "monthly"][index - len(slots) + 2] \
            if index >= len(slots) - 2 else slot.calendar
        result = subprocess.run(
            ["systemd-analyze", "calendar", f"--base-time=@{int(NOW)}", expression],
            capture_output=True, text=True, timeout=10, check=True)
        normalized = re.search(r"Normalized form: (.+)", result.stdout)
        elapse = re.search(r"Next elapse: \w{3} (\S+ \S+)", result.stdout)
        assert normalized and elapse, result.stdout
        assert normalized.group(1) == texts[index]
        when = slot.next_run(NOW)
        assert when is not None
        assert datetime.fromtimestamp(when).strftime("%Y-%m-%d %H:%M:%S") == elapse.group(1)


# -- staggering ----------------------------------------------------------------------
def test_pools_on_one_controller_scrubbed_by_the_cron_job_clash() -> None:
    properties: dict[str, dict[Kind, str]] = {"rpool": {"scrub": "-", "trim": "-"},
                                              "wilbur": {"scrub": "auto"}}
    cron = parse_cron(CRON)
    schedules = assemble(TWO_POOLS, [], cron, properties, two_pool_disks(),
                         {"scrub": "/lib/systemd/system", "trim": None})
    rpool = schedules.of("rpool", "scrub")
    wilbur = schedules.of("wilbur", "scrub")
    assert rpool and wilbur and rpool.cron and wilbur.cron
    assert rpool.group == ("wilbur",) and wilbur.run_seconds == 6 * 3600 + 35 * 60 + 50
    assert [(a.pool, b.pool) for a, b in clashes(schedules, NOW)] == [("rpool", "wilbur")]
    trim = schedules.of("rpool", "trim")
    assert trim and trim.applies and not trim.cron  # auto trims NVMe-only pools: SATA here
    assert not schedules.of("wilbur", "trim").applies  # type: ignore[union-attr]
    apart = assemble(TWO_POOLS, [], cron, properties, two_pool_disks(controller=None),
                     {"scrub": None, "trim": None})
    assert not clashes(apart, NOW) and apart.of("rpool", "scrub").group == ()  # type: ignore[union-attr]


def test_stagger_gives_pools_on_shared_hardware_slots_that_never_overlap(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    schedules = assemble(TWO_POOLS, [], None, {}, two_pool_disks(),
                         {"scrub": None, "trim": None})
    state = (ZfsSnapshot(pools=tuple(TWO_POOLS)), schedules)
    monkeypatch.setattr("zsn.zfs.scrub_actions.require_program", lambda name: f"/sbin/{name}")
    host = Host.at(str(tmp_path))
    _plan, placed = plan_stagger(host, "scrub", "month", state, now=NOW)
    slots = {p.pool: p.slot for p in placed}
    assert not any(p.clashes_with for p in placed)
    start = datetime.fromtimestamp(NOW)
    assert not overlap(slots["rpool"], 942, slots["wilbur"], 23750, start)
    # the longest scrub is placed first, on the first slot; the other two weeks later
    assert slots["wilbur"].describe() == "1st Sun of the month 01:00"
    assert slots["rpool"].describe() == "3rd Sun of the month 01:00"
    _plan, weekly = plan_stagger(host, "scrub", "week", state, now=NOW)
    assert [p.slot.describe() for p in weekly] == ["every Wed 01:00", "every Sun 01:00"]


def test_a_scrub_that_lasts_longer_than_the_gap_moves_to_another_slot() -> None:
    first, second = Slot("week", 6, None, 1, 0), Slot("week", 0, None, 1, 0)
    start = datetime.fromtimestamp(NOW)
    assert not overlap(first, 6 * 3600, second, 6 * 3600, start)
    assert overlap(first, 30 * 3600, second, 3600, start)  # Sunday's runs into Monday's


# -- timers on a tree ----------------------------------------------------------------
def openzfs_tree(root: Path, trim: bool = False) -> None:
    """OpenZFS 2.1.11's units as Debian installs them (and 2.2's trim units)."""
    system = root / "lib/systemd/system"
    system.mkdir(parents=True)
    for name in ("zfs-scrub-weekly@.timer", "zfs-scrub-monthly@.timer", "zfs-scrub@.service"):
        shutil.copy(HERE / name, system / name)
    if trim:
        for name in ("zfs-trim-weekly@.timer", "zfs-trim-monthly@.timer", "zfs-trim@.service"):
            (system / name).write_text((HERE / f"{name}.in").read_text()
                                       .replace("@sbindir@", "/sbin"))
    (root / "etc/systemd/system").mkdir(parents=True)


def test_timers_are_read_with_their_drop_ins_and_escaped_names(tmp_path: Path) -> None:
    openzfs_tree(tmp_path, trim=True)
    wants = tmp_path / "etc/systemd/system/timers.target.wants"
    wants.mkdir()
    os.symlink("/lib/systemd/system/zfs-scrub-weekly@.timer",
               wants / "zfs-scrub-weekly@my\\x2dpool.timer")
    os.symlink("/lib/systemd/system/zfs-trim-monthly@.timer", wants / "zfs-trim-monthly@ssd.timer")
    dropin = tmp_path / "etc/systemd/system/zfs-trim-monthly@ssd.timer.d"
    dropin.mkdir()
    (dropin / "zsn.conf").write_text("[Timer]\nOnCalendar=\nOnCalendar=Sun *-*-15..21 "
                                     "01:00:00\nRandomizedDelaySec=0\n")
    found = {t.pool: t for t in read_timers(Host.at(str(tmp_path)))}
    assert found["my-pool"].kind == "scrub" and found["my-pool"].calendar == "weekly"
    assert found["my-pool"].slot == Slot("week", 0, None, 0, 0, 3600)
    assert found["ssd"].slot == Slot("month", 6, (15, 21), 1, 0, 0) and found["ssd"].enabled
    assert found["ssd"].zsn_files == (
        "/etc/systemd/system/zfs-trim-monthly@ssd.timer.d/zsn.conf",)


def _state(root: Path, cron: bool = False,
           properties: dict[str, dict[str, str]] | None = None
           ) -> tuple[ZfsSnapshot, Schedules]:
    host = Host.at(str(root))
    if cron:
        (root / "etc/cron.d").mkdir(parents=True, exist_ok=True)
        (root / "etc/cron.d/zfsutils-linux").write_text(CRON)
    answer = "".join(f"{pool}\torg.debian:periodic-{kind}\t{value}\n"
                     for pool, kinds in (properties or {}).items()
                     for kind, value in kinds.items())
    return (ZfsSnapshot(pools=tuple(TWO_POOLS)),
            read_schedules(host, TWO_POOLS, two_pool_disks(), zfs_get=lambda argv: answer))


def _verify(root: Path, *units: str) -> subprocess.CompletedProcess[str]:
    """systemd-analyze verify on the units as the tree has them (its /etc, then its
    /lib); ExecStart's programs are looked up on this machine."""
    needs_tools("systemd-analyze")
    path = f"{root}/etc/systemd/system:{root}/lib/systemd/system:"
    return subprocess.run(["systemd-analyze", "verify", "--man=no", *units],
                          capture_output=True, text=True, timeout=60, check=False,
                          env={**os.environ, "SYSTEMD_UNIT_PATH": path})


def test_a_schedule_on_openzfs_units_is_a_drop_in_systemd_accepts(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    openzfs_tree(tmp_path)
    host = Host.at(str(tmp_path))
    monkeypatch.setattr("zsn.zfs.scrub_actions.require_program", lambda name: f"/sbin/{name}")
    plan = plan_schedule(host, "scrub", "wilbur", "month", "2nd Sat 02:30",
                         _state(tmp_path, cron=True, properties={"wilbur": {"scrub": "-"}}))
    text = plan.describe()
    assert "zfs-scrub-monthly@wilbur.timer.d/zsn.conf" in text
    assert "zfs set org.debian:periodic-scrub=disable wilbur" in text
    assert "link /etc/systemd/system/timers.target.wants/zfs-scrub-monthly@wilbur.timer -> " \
           "/lib/systemd/system/zfs-scrub-monthly@.timer" in text
    # applied without the property step (it would run zfs): no cron job this time
    plan = plan_schedule(host, "scrub", "wilbur", "month", "2nd Sat 02:30", _state(tmp_path))
    plan.apply()
    [timer] = read_timers(host)
    assert timer.unit == "zfs-scrub-monthly@wilbur.timer" and timer.enabled
    assert timer.slot == Slot("month", 5, (8, 14), 2, 30)
    assert os.readlink(tmp_path / "etc/systemd/system/timers.target.wants/"
                                  "zfs-scrub-monthly@wilbur.timer") == \
        "/lib/systemd/system/zfs-scrub-monthly@.timer"
    verified = _verify(tmp_path, "zfs-scrub-monthly@wilbur.timer")
    assert verified.returncode == 0, verified.stderr
    again = plan_schedule(host, "scrub", "wilbur", None, "2nd Sat 02:30", _state(tmp_path))
    assert again.steps == [] and "already as asked" in again.notes[0]
    # weekly now: the monthly instance and zsn's drop-in go
    plan = plan_schedule(host, "scrub", "wilbur", "week", None, _state(tmp_path))
    plan.apply()
    assert [(t.unit, t.slot) for t in read_timers(host)] == [
        ("zfs-scrub-weekly@wilbur.timer", Slot("week", 0, None, 0, 0, 3600))]
    plan_off(host, "scrub", "wilbur", _state(tmp_path)).apply()
    assert read_timers(host) == []


def test_without_openzfs_units_zsn_writes_its_own_that_systemd_accepts(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "etc/systemd/system").mkdir(parents=True)
    host = Host.at(str(tmp_path))
    zpool = shutil.which("true") or "/bin/true"  # verify wants ExecStart's program to exist
    monkeypatch.setattr("zsn.zfs.scrub_actions.require_program", lambda name: zpool)
    plan = plan_schedule(host, "trim", "rpool", "week", "Sat 03:00", _state(tmp_path))
    assert any("or waits for the trim under way" in note for note in plan.notes)
    plan.apply()
    unit = tmp_path / "etc/systemd/system"
    service = UnitFile((unit / "zsn-zfs-trim-rpool.service").read_text())
    timer = UnitFile((unit / "zsn-zfs-trim-rpool.timer").read_text())
    assert service.get("Service", "ExecStart") == \
        f"{sys.executable} -m zsn zfs trim schedule rpool --run"
    # stopped, it suspends the trim as OpenZFS's zfs-trim@.service does, with no shell
    assert service.get("Service", "ExecStop") == f"-{zpool} trim -s rpool"
    assert service.get("Unit", "Wants") is None and service.get("Unit", "After") == "zfs.target"
    assert timer.get("Timer", "OnCalendar") == "Sat *-*-* 03:00:00"
    assert timer.get("Timer", "RandomizedDelaySec") == "0"
    [found] = read_timers(host)
    assert found.origin == "zsn" and found.slot == Slot("week", 5, None, 3, 0)
    verified = _verify(tmp_path, "zsn-zfs-trim-rpool.timer", "zsn-zfs-trim-rpool.service")
    assert verified.returncode == 0, verified.stderr
    from zsn.errors import ValidationError

    with pytest.raises(ValidationError, match="spinning disks only"):
        plan_schedule(host, "trim", "wilbur", "week", None, _state(tmp_path))
    plan_off(host, "trim", "rpool", _state(tmp_path)).apply()
    assert read_timers(host) == [] and not (unit / "zsn-zfs-trim-rpool.timer").exists()


def _old_units(root: Path, service: str) -> Path:
    """zsn's units for wilbur's scrub as an older zsn wrote them, enabled (no systemd
    here: linked into timers.target.wants)."""
    unit = root / "etc/systemd/system"
    (unit / "timers.target.wants").mkdir(parents=True)
    shutil.copy(HERE / service, unit / "zsn-zfs-scrub-wilbur.service")
    shutil.copy(HERE / "zsn-zfs-scrub-wilbur.timer.zsn-0d46de4",
                unit / "zsn-zfs-scrub-wilbur.timer")
    os.symlink("/etc/systemd/system/zsn-zfs-scrub-wilbur.timer",
               unit / "timers.target.wants/zsn-zfs-scrub-wilbur.timer")
    return unit


@pytest.mark.parametrize("service,severity,said", [
    ("zsn-zfs-scrub-wilbur.service.zsn-0d46de4", "warning",
     "zsn's scrub service runs zpool scrub -w wilbur itself (written by an older zsn): the "
     "run fails"),
    ("zsn-zfs-scrub-wilbur.service.zsn-724dbc8", "info",
     "zsn's scrub service has no ExecStop (written by an older zsn): stopping the unit "
     "leaves the scrub running"),
])
def test_a_unit_an_older_zsn_wrote_is_named_and_setting_the_schedule_rewrites_it(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, service: str, severity: str,
        said: str) -> None:
    unit = _old_units(tmp_path, service)
    host = Host.at(str(tmp_path))
    zpool = shutil.which("true") or "/bin/true"
    monkeypatch.setattr("zsn.zfs.scrub_actions.require_program", lambda name: zpool)
    snapshot, schedules = _state(tmp_path)
    [timer] = schedules.timers
    assert timer.slot == Slot("month", 6, (8, 14), 1, 0) and timer.old_unit is not None
    # --export zfs and the pane's schedules view (w) name it too
    assert _exported_old_unit(schedules) == {
        "path": "/etc/systemd/system/zsn-zfs-scrub-wilbur.service", "line": 8,
        "problem": describe_old_unit(timer, timer.old_unit),
        "rewrite": "zsn zfs scrub schedule wilbur --every month --at '2nd Sun 01:00'"}
    from zsn.zfs.view import SCHEDULE_COLUMNS, schedule_rows

    note = SCHEDULE_COLUMNS.index(next(c for c in SCHEDULE_COLUMNS if c.key == "note"))
    [shown] = [row.cells[note] for row in schedule_rows(schedules_to_dict(schedules, NOW), NOW)
               if row.key == "wilbur\0scrub"]
    assert cell_text(shown) == "older zsn's unit (l)"
    [finding] = [f for f in lint.advise(snapshot, Facts(now=NOW, schedules=schedules))
                 if f.id == "ZFS024"]
    assert (finding.severity, finding.subject) == (severity, "wilbur")
    assert (finding.path, finding.line) == ("/etc/systemd/system/zsn-zfs-scrub-wilbur.service",
                                            8)
    assert said in finding.message and "setting the schedule again rewrites it" in \
        finding.message
    assert finding.fix == "zsn zfs scrub schedule wilbur --every month --at '2nd Sun 01:00'"
    # zsn zfs scrub schedule lists it as a warning: where, what, the command
    [listed] = [problem for problem in problems(schedules, "scrub", NOW) if "older" in problem]
    assert listed.startswith(f"/etc/systemd/system/zsn-zfs-scrub-wilbur.service:8: {said}")
    assert listed.endswith(f": {finding.fix} rewrites it")
    assert "(/etc/systemd/system/zsn-zfs-scrub-wilbur.service:8)" in finding.describe()
    assert not any("older zsn" in problem for problem in problems(schedules, "trim", NOW))
    # the fix, as the command line reads it: the service rewritten, the timer as it was
    args = shlex.split(finding.fix)
    plan = plan_schedule(host, "scrub", "wilbur", args[args.index("--every") + 1],
                         args[args.index("--at") + 1], _state(tmp_path))
    assert [str(step.path) for step in plan.steps if isinstance(step, FileEdit)] == [
        str(unit / "zsn-zfs-scrub-wilbur.service")]
    assert "/etc/systemd/system/zsn-zfs-scrub-wilbur.service was written by an older zsn: " \
           "written again" in plan.notes
    plan.apply()
    rewritten = UnitFile((unit / "zsn-zfs-scrub-wilbur.service").read_text())
    assert rewritten.get("Service", "ExecStart") == \
        f"{sys.executable} -m zsn zfs scrub schedule wilbur --run"
    assert rewritten.get("Service", "ExecStop") == f"-{zpool} scrub -p wilbur"
    assert (unit / "zsn-zfs-scrub-wilbur.timer").read_text() == \
        (HERE / "zsn-zfs-scrub-wilbur.timer.zsn-0d46de4").read_text()
    snapshot, schedules = _state(tmp_path)
    assert [t.old_unit for t in schedules.timers] == [None]
    assert not [f for f in lint.advise(snapshot, Facts(now=NOW, schedules=schedules))
                if f.id == "ZFS024"]
    assert _exported_old_unit(schedules) is None
    verified = _verify(tmp_path, "zsn-zfs-scrub-wilbur.timer", "zsn-zfs-scrub-wilbur.service")
    assert verified.returncode == 0, verified.stderr


def _exported_old_unit(schedules: Schedules) -> dict[str, object] | None:
    """The wilbur scrub timer's ``old_unit`` in ``--export zfs``, checked by the schema."""
    exported = schedules_to_dict(schedules, NOW)
    definitions = json.loads(SCHEMA_PATH.read_text())["$defs"]
    errors = list(validator().evolve(schema={
        "$ref": "#/$defs/zfs_schedules", "$defs": definitions}).iter_errors(exported))
    assert not errors, errors
    [wilbur] = [p for p in exported["pools"] if p["pool"] == "wilbur" and p["kind"] == "scrub"]
    [timer] = wilbur["timers"]
    found: dict[str, object] | None = timer["old_unit"]
    return found


def test_only_the_commands_an_older_zsn_wrote_are_said_to_be_its() -> None:
    text = (HERE / "zsn-zfs-scrub-wilbur.service.zsn-0d46de4").read_text()
    path = "/etc/systemd/system/zsn-zfs-scrub-wilbur.service"
    assert old_unit(text, path, "scrub", "wilbur") == OldUnit(path, 8, runs_zpool=True)
    assert old_unit(text, path, "scrub", "tank") is None  # another pool's command
    assert old_unit(text, path, "trim", "wilbur") is None
    edited = text.replace("scrub -w wilbur", "scrub -w wilbur\nExecStartPost=/bin/true")
    assert old_unit(edited, path, "scrub", "wilbur") is not None
    assert old_unit(text.replace("-w wilbur", "wilbur"), path, "scrub", "wilbur") is None


@pytest.mark.parametrize("at,every", [("Sun 01:00", "week"), ("Wed 23:59", "week"),
                                      ("1st Sun 01:00", "month"), ("4th Sat 13:30", "month")])
def test_a_slot_is_said_as_at_reads_it(at: str, every: Every) -> None:
    assert at_text(parse_at(at, every)) == at
    assert at_text(default_slot(every)) is None


# -- what a scheduled run runs ---------------------------------------------------------
ZFS = FIXTURES / "zfs"
SCRUBBING_AND_TRIMMING = (ZFS / "zpool-status-scrub-in-progress.0.8-2.1-format."
                                "check_zpool_scrub.txt").read_text()


@pytest.mark.parametrize("status,kind,argv", [
    # a scrub (a trim) under way: waited for, as OpenZFS's zfs-scrub@.service does
    (SCRUBBING_AND_TRIMMING, "scrub", ["/sbin/zpool", "wait", "-t", "scrub", "tank"]),
    (SCRUBBING_AND_TRIMMING, "trim", ["/sbin/zpool", "wait", "-t", "trim", "tank"]),
    ((ZFS / "zpool-status-scrub-in-progress.2.2plus-format.zpool-status-exporter.txt")
     .read_text(), "scrub", ["/sbin/zpool", "wait", "-t", "scrub", "tank"]),
    # none under way (a finished scrub, a resilver, no status read): started and waited for
    ((ZFS / "zpool-status-two-pools-features.zpool-status-exporter.txt").read_text(),
     "scrub", ["/sbin/zpool", "scrub", "-w", "tank"]),
    ((ZFS / "zpool-status-two-pools-features.zpool-status-exporter.txt").read_text(),
     "trim", ["/sbin/zpool", "trim", "-w", "tank"]),
    ((ZFS / "zpool-status-resilver-healing-replacing-in-progress.openzfs-docs.txt")
     .read_text(), "scrub", ["/sbin/zpool", "scrub", "-w", "tank"]),
    (None, "scrub", ["/sbin/zpool", "scrub", "-w", "tank"]),
])
def test_a_scheduled_run_waits_for_one_under_way_instead_of_failing(
        status: str | None, kind: Kind, argv: list[str]) -> None:
    found, why = scheduled_argv("/sbin/zpool", kind, "tank", status)
    assert found == argv
    assert ("already running" in why) == (argv[1] == "wait")


def test_the_timers_run_hands_over_to_zpool_and_succeeds_on_one_under_way(
        fake_zfs: FakeZfs) -> None:
    """``--run`` as zsn's service runs it (the live system, no --root): zpool status, then
    the process is zpool's own (its exit status is the unit's)."""
    fake_zfs.answer("zpool status tank", SCRUBBING_AND_TRIMMING)
    fake_zfs.answer("zpool wait -t scrub tank")
    fake_zfs.answer("zpool trim -w tank", stderr="cannot trim: no devices support it", rc=1)
    ran = subprocess.run([sys.executable, "-m", "zsn", "zfs", "scrub", "schedule", "tank",
                          "--run"], capture_output=True, text=True, timeout=60, check=False)
    assert ran.returncode == 0, ran.stderr
    assert "a scrub is already running on tank: waiting for it to end" in ran.stderr
    assert [call["argv"] for call in fake_zfs.calls()] == [
        ["status", "tank"], ["wait", "-t", "scrub", "tank"]]
    fake_zfs.answer("zpool status tank", (ZFS / "zpool-status-two-pools-features."
                                          "zpool-status-exporter.txt").read_text())
    ran = subprocess.run([sys.executable, "-m", "zsn", "zfs", "trim", "schedule", "tank",
                          "--run"], capture_output=True, text=True, timeout=60, check=False)
    assert ran.returncode == 1 and "cannot trim: no devices support it" in ran.stderr
    assert fake_zfs.calls()[-1]["argv"] == ["trim", "-w", "tank"]
    refused = zsn(fake_zfs, "zfs", "scrub", "schedule", "tank", "--run")
    assert refused.returncode == 2 and "not under --root" in refused.stderr


# -- the advisor and the export ------------------------------------------------------
def test_the_advisor_names_pools_scrubbed_twice_or_never(tmp_path: Path) -> None:
    openzfs_tree(tmp_path)
    wants = tmp_path / "etc/systemd/system/timers.target.wants"
    wants.mkdir()
    os.symlink("/lib/systemd/system/zfs-scrub-monthly@.timer",
               wants / "zfs-scrub-monthly@rpool.timer")
    snapshot, schedules = _state(tmp_path, cron=True,
                                 properties={"rpool": {"scrub": "-"},
                                             "wilbur": {"scrub": "disable"}})
    assert [(entry.pool, by) for entry, by in twice(schedules)] == [
        ("rpool", ["zfs-scrub-monthly@rpool.timer",
                   "the cron job /etc/cron.d/zfsutils-linux"])]
    assert [entry.pool for entry in never(schedules)] == ["wilbur"]
    findings = lint.advise(snapshot, Facts(now=NOW, schedules=schedules))
    ids = {(f.id, f.subject) for f in findings if f.id in ("ZFS021", "ZFS022", "ZFS023")}
    assert ids == {("ZFS021", "rpool"), ("ZFS022", "wilbur")}
    twice_finding = next(f for f in findings if f.id == "ZFS021")
    assert twice_finding.fix == "zfs set org.debian:periodic-scrub=disable rpool"
    exported = schedules_to_dict(schedules, NOW)
    definitions = json.loads(SCHEMA_PATH.read_text())["$defs"]
    errors = list(validator().evolve(schema={
        "$ref": "#/$defs/zfs_schedules", "$defs": definitions}).iter_errors(exported))
    assert not errors, errors
    assert exported["cron"]["scrub"]["when"] == "2nd Sun of the month 00:24"
    [rpool] = [p for p in exported["pools"] if p["pool"] == "rpool" and p["kind"] == "scrub"]
    assert rpool["cron"] and rpool["timers"][0]["unit"] == "zfs-scrub-monthly@rpool.timer"
    # the cron job's 2nd Sunday of December comes before the timer's 1 January
    assert rpool["next_run"] == datetime(2026, 12, 13, 0, 24).timestamp()
    assert rpool["timers"][0]["next_run"] == datetime(2027, 1, 1, 0, 0).timestamp()
    text = render(schedule_metrics(exported))
    assert 'zsn_zfs_schedules{pool="rpool",kind="scrub"} 2' in text
    assert 'zsn_zfs_schedules{pool="wilbur",kind="scrub"} 0' in text
    assert 'zsn_zfs_schedule_next_run_timestamp_seconds{pool="rpool",kind="scrub"} ' \
           f'{datetime(2026, 12, 13, 0, 24).timestamp()}' in text
    assert 'zsn_zfs_schedule_next_run_timestamp_seconds{pool="wilbur"' not in text
    assert 'kind="trim"} 0' in text and 'pool="wilbur",kind="trim"' not in text  # HDDs only
    # the pane's view (w) of the same
    from zsn.zfs.view import SCHEDULE_COLUMNS, schedule_rows

    exported["clashes"] = [["rpool", "scrub", "wilbur", "trim"]]
    keys = [column.key for column in SCHEDULE_COLUMNS]
    shown = {row.key: dict(zip(keys, row.cells, strict=True))
             for row in schedule_rows(exported, NOW)}
    rpool_scrub = shown["rpool\0scrub"]
    assert rpool_scrub["note"] == Cell("twice; clashes with wilbur trim", "warn")
    assert rpool_scrub["by"] == Cell("zfs-scrub-monthly@rpool.timer, cron")
    assert cell_text(rpool_scrub["next"]).startswith("Dec 13 00:24 (in 10d 08h)")
    assert shown["wilbur\0scrub"]["when"] == Cell("never", "warn")
    assert shown["wilbur\0trim"]["when"] == Cell("- (spinning disks)", "muted")
    assert cell_text(shown["wilbur\0trim"]["note"]) == "clashes with rpool scrub"


# -- the command line ----------------------------------------------------------------
def zsn(fake: FakeZfs, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "zsn", "--root", str(fake.root), *args],
                          capture_output=True, text=True, timeout=60, check=False)


@pytest.mark.parametrize("args,message", [
    (("scrub", "full", "--every", "week"), "--every: for zsn zfs scrub schedule"),
    (("scrub", "schedule", "full", "--pause"), "--pause: for zsn zfs scrub POOL"),
    (("scrub", "schedule", "--every", "fortnight"), "invalid choice: 'fortnight'"),
    (("trim", "full"), "invalid choice: 'full'"),
    (("scrub", "schedule", "--every", "week"), "name a pool"),
    (("scrub", "schedule", "full", "--stagger"), "--stagger places every pool"),
    (("scrub", "schedule", "--run"), "--run takes a POOL and nothing else"),
    (("trim", "schedule", "full", "--run", "--every", "week"), "--run takes a POOL"),
])
def test_bad_command_lines_get_one_line_and_exit_2(fake_zfs: FakeZfs, args: tuple[str, ...],
                                                   message: str) -> None:
    result = zsn(fake_zfs, "zfs", *args)
    assert result.returncode == 2 and message in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1


def test_the_command_line_plans_shows_and_staggers(fake_zfs: FakeZfs) -> None:
    fake_zfs.standard()
    (fake_zfs.root / "etc/systemd/system").mkdir(parents=True)
    planned = zsn(fake_zfs, "zfs", "scrub", "schedule", "full", "--every", "month", "--at",
                  "2nd Sun 01:00", "--dry-run")
    assert planned.returncode == 0, planned.stderr
    assert "create " in planned.stdout and "zsn-zfs-scrub-full.timer" in planned.stdout
    assert "OnCalendar=Sun *-*-08..14 01:00:00" in planned.stdout
    assert not (fake_zfs.root / "etc/systemd/system/zsn-zfs-scrub-full.timer").exists()
    bad = zsn(fake_zfs, "zfs", "scrub", "schedule", "full", "--every", "week", "--at",
              "3rd Sun 01:00")
    assert bad.returncode == 2 and "--at" in bad.stderr
    shown = zsn(fake_zfs, "zfs", "scrub", "schedule")
    assert shown.returncode == 0, shown.stderr
    assert "units: zsn's own" in shown.stdout and "no schedule scrubs full" in shown.stdout
    staggered = zsn(fake_zfs, "zfs", "scrub", "schedule", "--stagger", "--dry-run")
    assert staggered.returncode == 0, staggered.stderr
    assert "scrub calendar:" in staggered.stdout and "1st Sun of the month 01:00" in \
        staggered.stdout
    as_json = json.loads(zsn(fake_zfs, "zfs", "scrub", "schedule", "--json").stdout)
    assert {p["pool"] for p in as_json["pools"]} == {"full", "rz"}
