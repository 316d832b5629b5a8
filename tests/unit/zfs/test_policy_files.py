"""The files of ZFS protection: zsn's policy file (decoded strictly, read only when
the state check passes), sanoid.conf as sanoid's authors publish it (imported as
policies), the systemd units zsn writes (typed values, read back), hooks as argv."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from zsn.errors import ParseError, UnsafeStateError, ValidationError, ZsnError
from zsn.system.host import Host
from zsn.zfs import sanoid, timers
from zsn.zfs.policy import (
    CONFIG_PATH,
    Job,
    Policy,
    Schedule,
    decode,
    encode,
    parse_hook,
    parse_keep,
    read_config,
)

FIXTURES = Path(__file__).parents[2] / "fixtures" / "zfs-policy"


def sections(name: str) -> dict[str, dict[str, str]]:
    return sanoid.parse_ini((FIXTURES / name).read_text(), name)


# -- the policy file ------------------------------------------------------------------
def test_policies_and_jobs_read_back_as_written() -> None:
    policies = {
        "tank/home": Policy("tank/home", {"hourly": 24, "daily": 7}, recursive=True,
                            pre_hook=("/usr/local/sbin/freeze", "--all"),
                            post_hook=("/usr/local/sbin/thaw",), hook_timeout=12.0),
        "zpoolname/parent2": Policy("zpoolname/parent2", {"hourly": 36, "monthly": 3},
                                    frequent_period=300, prefix="autosnap", take=False,
                                    schedule=Schedule(daily_hour=2, weekly_wday=0)),
    }
    jobs = {"offsite": Job("offsite", "tank/home", "root@[fd00::2]:backup/home", 1800,
                           raw=True, via="tcp", limit=1048576.0, recursive=True,
                           added=1795367000.5)}
    text = encode(policies, jobs)
    assert decode(text) == (policies, jobs)
    assert encode(*decode(text)) == text
    document = json.loads(text)
    assert document["policies"]["zpoolname/parent2"]["schedule"] == {"daily_hour": 2,
                                                                   "weekly_wday": 0}


@pytest.mark.parametrize(("change", "message"), [
    ({"version": 2}, "version: 2 is not 1"),
    ({"extra": 1}, "extra: not a field zsn knows"),
    ({"policies": {"tank/x": {"keep": {"hourly": -1}}}},
     "policies.tank/x.keep.hourly: -1 is not from"),
    ({"policies": {"tank/x": {"keep": {"hourly": True}}}},
     r"policies\[\*\].keep\[\*\]: expected int, got bool"),
    ({"policies": {"tank/x": {"keep": {"minutely": 3}}}}, "keep.minutely: not a snapshot class"),
    ({"policies": {"tank//x": {"keep": {}}}}, "policies.tank//x: dataset name"),
    ({"policies": {"tank/x": {"pre_hook": "rm -rf /"}}}, "pre_hook: expected array, got str"),
    ({"policies": {"tank/x": {"pre_hook": ["rm", "-rf"]}}}, "absolute path"),
    ({"policies": {"tank/x": {"post_hook": ["/bin/echo", "a\nb"]}}}, "control character"),
    ({"policies": {"tank/x": {"frequent_period": 420}}}, "does not divide the hour"),
    ({"policies": {"tank/x": {"prefix": "syncoid"}}}, "prefix: not one of"),
    ({"jobs": {"-x": {"source": "tank/a", "target": "b/c"}}}, "job name"),
    ({"jobs": {"x": {"source": "tank/a", "target": "-oProxyCommand=x:b/c"}}}, "jobs.x.target"),
    ({"jobs": {"x": {"source": "tank/a", "target": "b/c", "every": 1}}}, "every: 1 is not from"),
    ({"jobs": {"x": {"source": "tank/a", "target": "b/c", "program": "sh"}}},
     "jobs.x.program: not a field zsn knows"),
])
def test_a_damaged_or_edited_file_is_refused_naming_the_field(change: dict[str, object],
                                                               message: str) -> None:
    document: dict[str, object] = {"version": 1, "policies": {}, "jobs": {}}
    document.update(change)
    with pytest.raises(ParseError, match="zfs.json: .*" + message.replace("(", r"\(")):
        decode(json.dumps(document), "/etc/zsn/zfs.json")


def test_nesting_and_size_are_bounded() -> None:
    with pytest.raises(ParseError, match="policies: expected object, got array"):
        decode('{"policies": ' + "[" * 50 + "]" * 50 + "}")
    with pytest.raises(ParseError, match="nested more than 64 levels deep"):
        decode("[" * 100_000)
    with pytest.raises(ParseError, match="more than the 1048576 read"):
        decode(" " * (2 << 20))


def _tree(tmp_path: Path, mode: int = 0o644) -> tuple[Host, Path]:
    host = Host(tmp_path)
    path = host.path(CONFIG_PATH)
    path.parent.mkdir(parents=True)
    path.write_text(encode({"tank/a": Policy("tank/a", {"hourly": 1})}, {}))
    path.chmod(mode)
    return host, path


def test_the_file_is_read_only_when_the_state_check_passes(tmp_path: Path) -> None:
    host, path = _tree(tmp_path)
    assert list(read_config(host).policies) == ["tank/a"]
    path.chmod(0o666)
    with pytest.raises(UnsafeStateError, match=r"zfs.json: writable by group and others "
                                               r"\(mode 0666\).*chmod go-w .*zfs.json"):
        read_config(host)
    path.chmod(0o644)
    path.parent.chmod(0o777)
    with pytest.raises(UnsafeStateError, match=r"etc/zsn: writable by group and others"):
        read_config(host)
    path.parent.chmod(0o755)
    os.chown(path, 4242, 4242)
    with pytest.raises(UnsafeStateError, match="zfs.json: owned by 4242"):
        read_config(host)


def test_a_link_in_place_of_the_file_or_a_folder_is_refused(tmp_path: Path) -> None:
    host, path = _tree(tmp_path)
    real = tmp_path / "elsewhere.json"
    path.rename(real)
    path.symlink_to("../../elsewhere.json")  # inside the tree (--root resolves links in it)
    with pytest.raises(UnsafeStateError, match="zfs.json: is a symbolic link"):
        read_config(host)
    path.unlink()
    real.rename(path)
    (tmp_path / "etc").rename(tmp_path / "etc2")
    (tmp_path / "etc").symlink_to("etc2")
    with pytest.raises(UnsafeStateError, match="etc: is a symbolic link"):
        read_config(host)


def test_no_file_means_no_policies(tmp_path: Path) -> None:
    config = read_config(Host(tmp_path))
    assert config.policies == {} and config.jobs == {} and config.snapshot is None


# -- values as typed -------------------------------------------------------------------
def test_keep_and_hooks_as_typed() -> None:
    assert parse_keep("frequent=4, hourly=24,daily=7") == {"frequently": 4, "hourly": 24,
                                                          "daily": 7}
    for bad, message in (("hourly=24,hourly=2", "named twice"), ("hours=3", "CLASS=N"),
                         ("hourly=-1", "whole number"), ("hourly=0", "keeps nothing")):
        with pytest.raises(ValidationError, match=message):
            parse_keep(bad)
    assert parse_hook("/usr/local/bin/notify 'backup done' $HOME") == (
        "/usr/local/bin/notify", "backup done", "$HOME")
    for bad, message in (("/bin/echo x | mail root", "'|'"), ("/bin/a > /tmp/x", "'>'"),
                         ("/bin/a; reboot", "';'"), ("freeze", "absolute path"),
                         ("/bin/a 'open", "No closing quotation")):
        with pytest.raises(ValidationError, match=message):
            parse_hook(bad)


# -- sanoid.conf -----------------------------------------------------------------------
def test_sanoids_sample_config_becomes_one_recursive_policy() -> None:
    found = sanoid.import_sections(sections("sanoid.conf"))
    assert list(found.policies) == ["zpoolname/parent2"]
    policy = found.policies["zpoolname/parent2"]
    # template_production, with sanoid's defaults under it (frequent_period 15, times)
    assert dict(policy.keep) == {"hourly": 36, "daily": 30, "weekly": 4, "monthly": 3}
    assert policy.recursive and policy.take and policy.prune and policy.prefix == "autosnap"
    assert policy.frequent_period == 900 and policy.schedule == Schedule()
    assert found.notes == [] and found.commands == []
    older = sanoid.import_sections(sections("sanoid-2.1.0.conf")).policies
    assert dict(older["zpoolname/parent2"].keep) == {"hourly": 36, "daily": 30, "monthly": 3}


def test_the_readme_example_a_child_keeps_its_parents_settings_but_its_own() -> None:
    found = sanoid.import_sections(sections("sanoid-readme.conf"))
    production = {"hourly": 36, "daily": 30, "weekly": 4, "monthly": 3}
    assert {k: (dict(v.keep), v.recursive, v.children_only)
            for k, v in found.policies.items()} == {
        "data/home": (production, False, False),
        "data/images": (production, True, True),
        "data/images/win7": ({**production, "hourly": 4}, False, False),
    }
    assert found.notes == ["data/images: recursive = yes: zsn snapshots the tree at once "
                           "(atomic, as sanoid's recursive = zfs)"]


def test_scripts_are_dropped_unless_kept_and_then_only_as_argv() -> None:
    text = ("[tank/db]\n\tuse_template = scripts\n\thourly = 2\n"
            "[template_scripts]\n\tpre_snapshot_script = /usr/local/bin/freeze --all\n"
            "\tpost_snapshot_script = /usr/local/bin/thaw\n\tpruning_script = /bin/true\n"
            "\tscript_timeout = 9\n\thourly_warn = 90m\n")
    found = sanoid.import_sections(sanoid.parse_ini(text, "s.conf"))
    assert found.policies["tank/db"].pre_hook == () and found.commands == []
    assert found.notes[0].startswith("tank/db: pre_snapshot_script '/usr/local/bin/freeze "
                                     "--all' dropped (a command that would run as root")
    assert any("pruning_script dropped" in note for note in found.notes)
    assert any("monitoring thresholds dropped" in note for note in found.notes)
    kept = sanoid.import_sections(sanoid.parse_ini(text, "s.conf"), keep_commands=True)
    policy = kept.policies["tank/db"]
    assert policy.pre_hook == ("/usr/local/bin/freeze", "--all")
    assert policy.post_hook == ("/usr/local/bin/thaw",) and policy.hook_timeout == 9.0
    assert kept.commands[0] == ("tank/db: pre-hook runs as root: ['/usr/local/bin/freeze', "
                                "'--all']")
    shell = text.replace("/usr/local/bin/thaw", "/usr/local/bin/thaw | logger")
    with pytest.raises(ValidationError, match="post_snapshot_script: .*hooks run without a "
                                              "shell"):
        sanoid.import_sections(sanoid.parse_ini(shell, "s.conf"), keep_commands=True)


@pytest.mark.parametrize(("text", "message"), [
    ("[tank/a]\n\tHourly = 3\n", "'Hourly', which sanoid does not understand"),
    ("[tank/a]\n\tuse_template = nope\n", "template_nope"),
    ("[tank/a]\n\thourly = 3 # keep three\n", "not a whole number"),
    ("[tank/a]\n\tautosnap = maybe\n", "not yes or no"),
    ("[tank/a]\n\thourly = 3\n\thourly = 4\n", "hourly is set twice"),
    ("hourly = 3\n", "before any"),
    ("[tank/a]\njust words\n", "not a \\[section\\]"),
    ("[tank/a]\n\tfrequent_period = 7\n", "does not divide the hour"),
    ("[tank/a]\n\tdaily_hour = 24\n", "not from 0 to 23"),
    ("[/tank/a]\n\thourly = 1\n", "is a path"),
])
def test_what_sanoid_would_refuse_is_refused(text: str, message: str) -> None:
    with pytest.raises(ZsnError, match=message):
        sanoid.import_sections(sanoid.parse_ini(text, "s.conf"))


def test_prune_only_and_nothing_to_do_sections() -> None:
    text = ("[backup/home]\n\tuse_template = backup\n[tank/tmp]\n\tuse_template = ignore\n"
            + (FIXTURES / "sanoid.conf").read_text().split("# templates below this line")[1])
    found = sanoid.import_sections(sanoid.parse_ini(text, "s.conf"))
    assert list(found.policies) == ["backup/home"]
    assert not found.policies["backup/home"].take and found.policies["backup/home"].prune
    assert "tank/tmp: neither autosnap nor autoprune: not imported" in found.notes


# -- systemd units --------------------------------------------------------------------
def test_the_units_read_back_as_their_spec() -> None:
    # The unit file format's one renderer and reader: what a plan would write must
    # mean the spec, read by the format, and nothing more.
    spec = timers.specs(900, lambda *words: ("/usr/local/bin/zsn", *words))[0]
    texts = timers.render(spec)
    units = timers.units(spec)
    for name, unit in units.items():
        unit.intent.verify("", texts[name], name)
    assert "ExecStart=/usr/local/bin/zsn zfs snapshots run\n" in texts[spec.service]
    assert "Persistent=true\n" in texts[spec.timer]
    edited = texts[spec.timer] + "OnBootSec=1s\n"
    with pytest.raises(ValidationError, match=r"timer: what zsn would write does not mean "
                                              r"what the plan meant .*line 13"):
        units[spec.timer].intent.verify("", edited, spec.timer)


def test_a_stop_command_is_one_ignored_failure_read_back_as_such() -> None:
    # ExecStop=- (a failure does not fail the stop), argv words only: no sh -c
    from dataclasses import replace

    spec = replace(timers.specs(900)[0], stop_argv=("/sbin/zpool", "scrub", "-p", "tank"))
    texts = timers.render(spec)
    service = timers.units(spec)[spec.service]
    service.intent.verify("", texts[spec.service], spec.service)
    assert "ExecStop=-/sbin/zpool scrub -p tank\n" in texts[spec.service]
    for changed in (texts[spec.service].replace("ExecStop=-/", "ExecStop=/"),
                    texts[spec.service].replace("ExecStop=-/sbin/zpool scrub -p tank\n", "")):
        with pytest.raises(ValidationError, match="does not mean what the plan meant"):
            service.intent.verify("", changed, spec.service)
    assert "ExecStop" not in timers.render(timers.specs(900)[0])[spec.service]


def test_a_value_the_schema_refuses_never_reaches_a_unit() -> None:
    from zsn.formats.unitfile import UnitFile

    unit = UnitFile(schema=timers.SCHEMA)
    with pytest.raises(ValidationError):
        unit.set("Service", "ExecStart", "/bin/sh -c 'rm -rf /'")
    with pytest.raises(ValidationError):
        unit.set("Service", "ExecStartPre", "/bin/true")
    with pytest.raises(ValidationError):
        unit.set("Unit", "Description", "x\nExecStartPre=/bin/sh")


@pytest.mark.parametrize(("field", "value", "message"), [
    ("argv", ("/opt/my zsn/bin/zsn", "zfs"), "cannot go into ExecStart"),
    ("argv", ("/usr/bin/zsn", "%h"), "cannot go into ExecStart"),
    ("argv", ("/usr/bin/zsn", "$HOME"), "cannot go into ExecStart"),
    ("argv", ("zsn",), "absolute path"),
    ("stop_argv", ("/sbin/zpool", "scrub", "-p", "$POOL"), "cannot go into ExecStop"),
    ("stop_argv", ("zpool", "scrub", "-p", "tank"), "ExecStop: .*absolute path"),
    ("description", "runs\nExecStartPre=/bin/sh", "plain words only"),
    ("on_calendar", "daily\nOnBootSec=0", "not a systemd calendar"),
    ("name", "../../etc/passwd", "unit name"),
])
def test_a_value_that_would_add_a_line_or_a_word_is_refused(field: str, value: object,
                                                             message: str) -> None:
    from dataclasses import replace

    spec = replace(timers.specs(900)[0], **{field: value})  # type: ignore[arg-type]
    with pytest.raises(ValidationError, match=message):
        timers.render(spec)


def test_timer_intervals() -> None:
    assert timers.calendar_every(300) == "*-*-* *:00/5:00"
    assert timers.calendar_every(3600) == "*-*-* *:00:00"
    assert timers.calendar_every(4 * 3600) == "*-*-* 00/4:00:00"
    for seconds in (420, 90, 5 * 3600):
        with pytest.raises(ValidationError, match="dividing"):
            timers.calendar_every(seconds)
