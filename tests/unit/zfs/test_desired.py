"""ZFS's section of the desired-state file (`zsn.zfs.desired`) through ``zsn apply`` and
``zsn state export`` under --root, with the fake zfs answering with the kernel lab's
captures of the reads ``policy set`` and ``replicate add`` make
(tests/fixtures/zfs-policy-lab: ``zfs list -H -o name``, ``zfs get -Hp -o value
encryption``, OpenZFS 2.1): the plans a file makes, that a second apply and the export
applied plan nothing (and ask ZFS nothing), refusals in one line that change nothing,
a host without ZFS."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.schema import check_state
from tests.unit.desired.test_wireguard import _tree, apply
from tests.unit.zfs.conftest import FIXTURES, FakeZfs, read
from zsn.cli import main
from zsn.decode import from_yaml
from zsn.zfs.policy import CONFIG_PATH, Job, Policy, Schedule, decode, encode

LAB = FIXTURES / "zfs-policy-lab"
NOTHING = "  (nothing to change)\n"


def answer(fake: FakeZfs, command: str, name: str) -> None:
    """`command` answered with the capture `name` (.out, .err, .rc) of the lab."""
    out, err = LAB / f"{name}.out", LAB / f"{name}.err"
    fake.answer(command, read(out) if out.exists() else "",
                read(err) if err.exists() else "", int(read(LAB / f"{name}.rc")))


@pytest.fixture
def fake(fake_zfs: FakeZfs) -> FakeZfs:
    answer(fake_zfs, "zfs list -H -o name tank/home", "dataset-exists")
    answer(fake_zfs, "zfs list -H -o name tank/nosuch", "dataset-missing")
    answer(fake_zfs, "zfs get -Hp -o value encryption tank/home", "encryption-plain")
    answer(fake_zfs, "zfs get -Hp -o value encryption tank/nosuch", "encryption-missing")
    return fake_zfs


def export(root: Path, capsys: pytest.CaptureFixture[str]) -> str:
    assert main(["--root", str(root), "state", "export", "zfs"]) == 0
    return capsys.readouterr().out


def config(root: Path) -> tuple[dict[str, Policy], dict[str, Job]]:
    return decode((root / CONFIG_PATH.lstrip("/")).read_text())


def write_config(root: Path, policies: dict[str, Policy], jobs: dict[str, Job]) -> None:
    path = root / CONFIG_PATH.lstrip("/")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(encode(policies, jobs))
    path.chmod(0o600)


STATE = """version: 1
zfs:
  policies:
    - {dataset: tank/home, keep: {hourly: 24, daily: 7}, recursive: true}
  jobs:
    - {name: offsite, source: tank/home, target: "root@nas:backup/home", every: 1800,
       limit: 1048576}
"""


def test_a_policy_and_a_job_then_nothing_to_do(fake: FakeZfs,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    root = fake.root
    status, out, _ = apply(root, STATE, "--dry-run", capsys=capsys)
    assert status == 0, out
    assert "snapshot policy for tank/home: keep hourly=24,daily=7" in out
    assert "replicate tank/home to root@nas:backup/home every 30m 00s (job offsite)" in out
    assert not (root / "etc/zsn").exists()
    assert apply(root, STATE, capsys=capsys)[0] == 0
    policies, jobs = config(root)
    assert policies["tank/home"] == Policy("tank/home", {"hourly": 24, "daily": 7},
                                           recursive=True)
    assert jobs["offsite"].limit == 1048576.0 and jobs["offsite"].every == 1800
    calls = len(fake.calls())
    status, out, _ = apply(root, STATE, capsys=capsys)
    assert (status, out) == (0, f"Plan: apply {root.parent / 'state.yaml'}\n{NOTHING}")
    exported = export(root, capsys)
    assert apply(root, exported, capsys=capsys)[1].endswith(NOTHING)
    assert len(fake.calls()) == calls  # what matches asks ZFS nothing


def test_the_export_of_every_setting_applies_as_nothing(
        fake: FakeZfs, capsys: pytest.CaptureFixture[str]) -> None:
    """What only an import or a hand sets (sanoid's prefix and schedule, prune only,
    hooks, a fractional rate) is exported, and the export matches the machine."""
    root = fake.root
    write_config(root, {
        "tank/home": Policy("tank/home", {"hourly": 24, "daily": 0}, recursive=True,
                            pre_hook=("/usr/local/sbin/freeze", "--all", "a | b"),
                            post_hook=("/usr/local/sbin/thaw",), hook_timeout=12.0),
        "zpoolname/parent2": Policy("zpoolname/parent2", {"hourly": 36, "monthly": 3},
                                    frequent_period=300, prefix="autosnap", take=False,
                                    prune=False, schedule=Schedule(daily_hour=2,
                                                                   weekly_wday=0)),
    }, {"offsite": Job("offsite", "tank/home", "root@[fd00::2]:backup/home", 1800, raw=True,
                       via="tcp", limit=1126.4, recursive=True, added=1795367000.5),
        "local": Job("local", "tank/home", "backup/home")})
    before = _tree(root)
    exported = export(root, capsys)
    document = from_yaml(exported, dict[str, object], "export")
    check_state(document)
    assert document["zfs"] == {
        "policies": [
            {"dataset": "tank/home", "keep": {"hourly": 24, "daily": 0},
             "frequent_period": 900, "recursive": True, "children_only": False,
             "take": True, "prune": True, "prefix": "zsn", "schedule": {},
             "pre_hook": ["/usr/local/sbin/freeze", "--all", "a | b"],
             "post_hook": ["/usr/local/sbin/thaw"], "hook_timeout": 12},
            {"dataset": "zpoolname/parent2", "keep": {"hourly": 36, "monthly": 3},
             "frequent_period": 300, "recursive": False, "children_only": False,
             "take": False, "prune": False, "prefix": "autosnap",
             "schedule": {"daily_hour": 2, "weekly_wday": 0}, "pre_hook": [],
             "post_hook": [], "hook_timeout": 30}],
        "jobs": [
            {"name": "local", "source": "tank/home", "target": "backup/home", "every": 3600,
             "raw": False, "allow_decrypted": False, "via": "ssh", "limit": 0,
             "recursive": False},
            {"name": "offsite", "source": "tank/home", "target": "root@[fd00::2]:backup/home",
             "every": 1800, "raw": True, "allow_decrypted": False, "via": "tcp",
             "limit": 1126.4, "recursive": True}]}
    for text in (exported, exported.replace("zfs:\n", "zfs:\n  exclusive: true\n")):
        status, out, _ = apply(root, text, capsys=capsys)
        assert (status, out.endswith(NOTHING)) == (0, True), out
    assert _tree(root) == before and fake.calls() == []


def test_changes_replace_in_place_and_exclusive_removes(
        fake: FakeZfs, capsys: pytest.CaptureFixture[str]) -> None:
    root = fake.root
    write_config(root, {
        "tank/home": Policy("tank/home", {"hourly": 24}, prefix="autosnap",
                            pre_hook=("/usr/local/sbin/freeze",)),
        "tank/other": Policy("tank/other", {"daily": 7})},
        {"offsite": Job("offsite", "tank/home", "root@nas:backup/home", added=1795367000.5),
         "old": Job("old", "tank/other", "backup/other")})
    record = root / "var/lib/zsn/zfs/jobs/offsite.json"
    record.parent.mkdir(parents=True)
    record.write_text('{"base": "zsn_2026-11-27_10:00:00_hourly"}\n')
    state = """version: 1
zfs:
  exclusive: true
  policies:
    - {dataset: tank/home, keep: {hourly: 48, frequent: 4}, frequent_period: 600,
       pre_hook: []}
  jobs:
    - {name: offsite, every: 600, limit: 0}
"""
    status, out, _ = apply(root, state, "--dry-run", capsys=capsys)
    assert status == 0, out
    for line in ("remove the snapshot policy of tank/other", "remove replication job old",
                 "snapshot policy for tank/home: keep frequently=4,hourly=48",
                 "replaces tank/home's policy (keep hourly=24)",
                 "snapshots keep their autosnap_ names",
                 "replicate tank/home to root@nas:backup/home every 10m 00s (job "
                 "offsite, changed)", "job offsite goes on from its last run's base"):
        assert line in out, out
    assert apply(root, state, capsys=capsys)[0] == 0
    policies, jobs = config(root)
    assert list(policies) == ["tank/home"] and list(jobs) == ["offsite"]
    assert policies["tank/home"] == Policy(
        "tank/home", {"frequently": 4, "hourly": 48}, frequent_period=600,
        prefix="autosnap")  # the hook cleared; what the file leaves out kept
    assert jobs["offsite"] == Job("offsite", "tank/home", "root@nas:backup/home", 600,
                                  added=1795367000.5)
    assert record.exists()  # the base its next run goes on from
    assert apply(root, state, capsys=capsys)[1].endswith(NOTHING)


HOOK = "/usr/local/sbin/freeze"


@pytest.mark.parametrize(("zfs", "refusal"), [
    ('{policies: [{dataset: "tank/a\\nb", keep: {hourly: 1}}]}',
     r"zfs.policies[0]: dataset name 'tank/a\nb' has the character '\n'"),
    ('{policies: [{dataset: "tank/a\\x1bb", keep: {hourly: 1}}]}',
     r"has the character '\x1b'"),
    ('{jobs: [{name: "a\\nb", source: tank/home, target: backup/a}]}',
     r"job name 'a\nb'"),
    ('{policies: [{dataset: tank/home, keeps: {hourly: 1}}]}',
     "zfs.policies[0]: unknown key 'keeps' (did you mean 'keep'?)"),
    ('{polices: []}', "zfs: unknown key 'polices' (did you mean 'policies'?)"),
    ('{policies: [{dataset: tank/home, keep: "hourly=24"}]}',
     "zfs.policies[0].keep: expected object | null, got str"),
    ('{policies: [{dataset: tank/home, keep: {hourly: true}}]}', "expected int, got bool"),
    ('{policies: [{dataset: tank/home, keep: {minutely: 3}}]}', "'minutely' is not a snapshot"),
    ('{policies: [{dataset: tank/home, keep: {hourly: 0}}]}', "the policy keeps nothing"),
    ('{policies: [{dataset: tank/home, frequent_period: 420}]}', "does not divide the hour"),
    ('{policies: [{dataset: tank/home, prefix: syncoid}]}', "prefix 'syncoid': say zsn or"),
    ('{policies: [{dataset: tank/home, schedule: {daily_hour: 24}}]}',
     "schedule: daily_hour 24: from 0 to 23"),
    ('{policies: [{dataset: tank/home, pre_hook: "rm -rf /"}]}',
     "pre_hook: expected array | null, got str"),
    ('{policies: [{dataset: tank/home, pre_hook: [rm, -rf]}]}', "absolute path"),
    ('{policies: [{dataset: tank/home, post_hook: ["/bin/echo", "a\\nb"]}]}',
     "holds a control character"),
    (f'{{policies: [{{dataset: tank/home, keep: {{hourly: 1}}, pre_hook: ["{HOOK}"]}}]}}',
     "tank/home: pre_hook '/usr/local/sbin/freeze': a desired-state file does not give a "
     "policy a program to run as root"),
    ('{policies: [{dataset: tank/nosuch, keep: {hourly: 1}}]}',
     "zfs: no filesystem or volume named 'tank/nosuch' here"),
    ('{policies: [{dataset: tank/home}]}', "tank/home has no policy here: give its keep"),
    ('{policies: [{dataset: tank/home, keep: {hourly: 1}}, {dataset: tank/home}]}',
     "a policy for 'tank/home' given twice"),
    ('{policies: [{dataset: tank/home, keep: {hourly: 1}, children_only: true}]}',
     "children only needs --recursive"),
    ('{jobs: [{name: j, source: tank/home}]}', "job j does not exist here: give its source "
                                                "and target"),
    ('{jobs: [{name: j, source: tank/nosuch, target: backup/j}]}',
     "the source tank/nosuch does not exist"),
    ('{jobs: [{name: j, source: tank/home, target: "-oProxyCommand=x:b/c"}]}', "zfs.jobs[0]"),
    ('{jobs: [{name: j, source: tank/home, target: backup/j, every: "1h"}]}',
     "zfs.jobs[0].every: expected int | null, got str"),
    ('{jobs: [{name: j, source: tank/home, target: backup/j, every: 5}]}', "every 5 s"),
    ('{jobs: [{name: j, source: tank/home, target: backup/j, via: udp}]}', "via 'udp'"),
    ('{jobs: [{name: j, source: tank/home, target: backup/j, limit: 10}]}', "limit 10.0"),
    ('{jobs: [{name: j, source: tank/home, target: tank/home/j}]}', "is tank/home itself or "
                                                                    "inside it"),
    ('{jobs: [{name: offsite, target: "backup/elsewhere"}]}',
     "job offsite sends tank/home to root@nas:backup/home: zsn does not change a job's "
     "source or target in place"),
    ("{exclusive: 1}", "zfs.exclusive: expected bool"),
])
def test_bad_input_is_one_line_exit_2_and_changes_nothing(
        fake: FakeZfs, capsys: pytest.CaptureFixture[str], zfs: str, refusal: str) -> None:
    write_config(fake.root, {}, {"offsite": Job("offsite", "tank/home",
                                                "root@nas:backup/home")})
    before = _tree(fake.root)
    status, out, err = apply(fake.root, f"version: 1\nzfs: {zfs}\n", capsys=capsys)
    assert status == 2, err
    assert refusal in err and err.count("\n") == 1 and err.startswith("zsn apply: invalid: ")
    assert out == "" and _tree(fake.root) == before


def test_a_host_without_zfs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                            capsys: pytest.CaptureFixture[str]) -> None:
    """No zfs program: the export has no zfs section; a section the host matches (its
    policy file, or nothing) applies as nothing; one that sets something is refused."""
    from zsn.zfs import live

    monkeypatch.setattr(live, "find_program", lambda name: None)
    root = tmp_path / "root"
    (root / "etc").mkdir(parents=True)
    assert "zfs" not in export(root, capsys)
    assert apply(root, "version: 1\nzfs: {exclusive: true}\n",
                 capsys=capsys)[1].endswith(NOTHING)
    status, _, err = apply(root, STATE, capsys=capsys)
    assert status == 2 and err == (
        "zsn apply: invalid: zfs: this host has no ZFS (zfs is not installed (Debian: apt "
        "install zfsutils-linux)): the section sets the policy of tank/home and 1 more\n")
    write_config(root, {"tank/home": Policy("tank/home", {"hourly": 24})}, {})
    exported = export(root, capsys)
    assert "dataset: \"tank/home\"" in exported
    assert apply(root, exported, capsys=capsys)[1].endswith(NOTHING)


def test_an_unreadable_policy_file_is_left_out_of_the_export(
        fake: FakeZfs, capsys: pytest.CaptureFixture[str]) -> None:
    path = fake.root / CONFIG_PATH.lstrip("/")
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps({"version": 1, "policies": {"tank/x": {"keep": {"x": 1}}}}))
    path.chmod(0o600)
    assert main(["--root", str(fake.root), "state", "export", "zfs"]) == 3
    out, err = capsys.readouterr()
    assert "zfs:" not in out
    assert err.startswith("zsn state export: zfs: ") and "keep.x: not a snapshot class" in err
