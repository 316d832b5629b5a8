"""Snapshot runs planned and carried out against what OpenZFS 2.1 printed in the kernel
lab (tests/fixtures/zfs-policy-lab): the argv zsn runs, what a dry run says, ZFS's
refusals (a hold that came meanwhile, a snapshot that exists), the hooks (real programs)
and what they are told. The real thing runs in the kernel lab (tests/kernel/
zfs_protection.py)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from tests.unit.zfs.conftest import FIXTURES, FakeZfs
from zsn.system.commands import CommandResult
from zsn.system.host import Host
from zsn.zfs import autosnap, snapshots
from zsn.zfs.policy import Policy, ZfsConfig, encode

LAB = FIXTURES / "zfs-policy-lab"
REPO = Path(__file__).resolve().parents[3]
COLUMNS = "name,guid,createtxg,creation,used,referenced,userrefs"


def captured(name: str) -> dict[str, Any]:
    def part(suffix: str) -> str:
        path = LAB / f"{name}.{suffix}"
        return path.read_text() if path.exists() else ""

    return {"stdout": part("out"), "stderr": part("err"), "rc": int(part("rc") or 0)}


def listing() -> list[snapshots.Snapshot]:
    return snapshots.parse(captured("snapshots-policy")["stdout"])


def newest_creation() -> int:
    return max(s.created or 0 for s in listing())


def test_the_captured_listing_is_what_the_planner_reads() -> None:
    found = snapshots.by_dataset(listing())
    assert sorted(found) == ["tank/home", "tank/home/alice", "tank/home/bob"]
    names = [s.name for s in found["tank/home"]]
    assert names[0] == "zsn_2026-11-27_10:00:00_hourly" and "before-upgrade" in names
    held = [s.name for s in found["tank/home"] if s.holds]
    assert held == ["zsn_2026-11-27_11:00:00_hourly"]
    assert autosnap.parse_datasets(captured("datasets")["stdout"]) == [
        "backup", "tank", "tank/home", "tank/home/alice", "tank/home/bob", "tank/other",
        "tank/vol"]


class Replay:
    """A runner answering zsn's argv with the captured outputs (none set up: a failure
    of the test), logging each call."""

    def __init__(self, answers: dict[str, str]) -> None:
        self.answers = answers
        self.calls: list[str] = []

    def __call__(self, argv: Sequence[str], timeout: float) -> CommandResult:
        command = " ".join(argv[1:])
        self.calls.append(command)
        if command.startswith("snapshot "):  # names are made at `now`: the set's outcome
            name = self.answers["zfs snapshot"]
        else:
            assert command in self.answers, f"nothing set up for zfs {command}"
            name = self.answers[command]
        found = captured(name)
        return CommandResult(tuple(argv), found["rc"], found["stdout"], found["stderr"], 0.1)


POLICY = Policy("tank/home", {"hourly": 2, "daily": 1}, recursive=True)
POLICY_31 = Policy("tank/home", {"hourly": 24, "daily": 7}, recursive=True)
READS = {"list -Hp -o name -t filesystem,volume": "datasets",
         f"list -Hp -t snapshot -o {COLUMNS} -s createtxg -d 1 tank/home tank/home/alice "
         "tank/home/bob": "snapshots-policy"}


def config(tmp_path: Path, policy: Policy = POLICY) -> ZfsConfig:
    return ZfsConfig(tmp_path / "etc/zsn/zfs.json", None, {policy.dataset: policy}, {})


def test_a_dry_run_says_what_goes_and_why(tmp_path: Path) -> None:
    now = newest_creation() + 600  # past this hour's and today's snapshots: none due
    replay = Replay(dict(READS))
    plan = autosnap.plan_now(Host(tmp_path), config(tmp_path), "zfs", now, UTC, replay)
    lines = autosnap.describe(plan, now, UTC, {"tank/home": POLICY})
    home, alice = "tank/home@zsn_2026-11-27_", "tank/home/alice@zsn_2026-11-27_"
    assert [line for line in lines if line.startswith(("destroy", "keep"))] == [
        f"destroy {home}10:00:00_hourly: hourly, beyond the 2 newest hourly",
        f"keep {home}11:00:00_hourly: hourly, beyond the 2 newest hourly, but held (zfs hold)",
        f"destroy {home}12:00:00_hourly: hourly, beyond the 2 newest hourly",
        f"destroy {alice}10:00:00_hourly: hourly, beyond the 2 newest hourly",
        f"destroy {alice}11:00:00_hourly: hourly, beyond the 2 newest hourly",
        f"destroy {alice}12:00:00_hourly: hourly, beyond the 2 newest hourly"]
    assert lines[-1] == "0 snapshots to take, 5 to destroy"
    assert not any("before-upgrade" in line for line in lines)  # not a policy's
    assert replay.calls == list(READS)  # a dry run only reads


def test_a_run_takes_one_atomic_set_and_destroys_each_snapshot_by_name(
        tmp_path: Path) -> None:
    now = newest_creation() + 3600  # the next hour: an hourly is due
    replay = Replay({**READS, "zfs snapshot": "snapshot-set",
                     "destroy tank/home@zsn_2026-11-27_10:00:00_hourly,"
                     "zsn_2026-11-27_12:00:00_hourly,zsn_2026-11-27_13:00:00_hourly":
                         "destroy-list-held",  # a hold came meanwhile: ZFS destroyed none
                     "destroy tank/home@zsn_2026-11-27_10:00:00_hourly": "destroy-one",
                     "destroy tank/home@zsn_2026-11-27_12:00:00_hourly": "destroy-held",
                     "destroy tank/home@zsn_2026-11-27_13:00:00_hourly": "destroy-one",
                     "destroy tank/home/alice@zsn_2026-11-27_10:00:00_hourly,"
                     "zsn_2026-11-27_11:00:00_hourly,zsn_2026-11-27_12:00:00_hourly,"
                     "zsn_2026-11-27_13:00:00_hourly": "destroy-list"})
    host = Host(tmp_path)
    plan = autosnap.plan_now(host, config(tmp_path), "zfs", now, UTC, replay)
    outcome = autosnap.execute(host, config(tmp_path), plan, "zfs", now, UTC, replay)
    [take] = [call for call in replay.calls if call.startswith("snapshot ")]
    stamp = datetime.fromtimestamp(now, UTC).strftime("%Y-%m-%d_%H:%M:%S")
    assert take == " ".join(["snapshot", *(f"{d}@zsn_{stamp}_hourly" for d in (
        "tank/home", "tank/home/alice", "tank/home/bob"))])  # one call: one instant
    destroys = [call for call in replay.calls if call.startswith("destroy ")]
    assert all("%" not in call for call in destroys)  # never a range
    assert len(outcome.taken) == 3 and len(outcome.destroyed) == 6
    assert outcome.errors == ("could not destroy tank/home@zsn_2026-11-27_12:00:00_hourly: "
                              "cannot destroy snapshot tank/home@zsn_2026-11-27_11:00:00_"
                              "hourly: dataset is busy",)


def test_the_post_hook_runs_after_a_failed_snapshot_with_the_outcome(tmp_path: Path) -> None:
    seen = tmp_path / "seen.json"
    post = (sys.executable, "-c", "import json, os, sys; open(sys.argv[1], 'w').write("
            "json.dumps({k: v for k, v in os.environ.items() if k.startswith('ZSN_')}))",
            str(seen))
    policy = Policy("tank/home", {"hourly": 5, "daily": 1}, recursive=True, post_hook=post)
    now = newest_creation() + 3600
    replay = Replay({**READS, "zfs snapshot": "snapshot-set-one-exists"})
    host = Host(tmp_path)
    plan = autosnap.plan_now(host, config(tmp_path, policy), "zfs", now, UTC, replay)
    outcome = autosnap.execute(host, config(tmp_path, policy), plan, "zfs", now, UTC, replay)
    assert outcome.taken == () and not outcome.ok
    environment = json.loads(seen.read_text())
    assert environment["ZSN_HOOK"] == "post" and environment["ZSN_OUTCOME"] == \
        "snapshot-failed"
    assert "no snapshots were created" not in environment["ZSN_ERROR"]
    assert environment["ZSN_ERROR"].endswith("dataset already exists")
    assert environment["ZSN_DATASETS"] == "tank/home,tank/home/alice,tank/home/bob"


def test_simulate_ten_days_from_todays_snapshots(fake_zfs: FakeZfs) -> None:
    """``zsn zfs policy simulate``, the command, on the lab's snapshots: 24 hourlies and
    7 dailies at the end of every dataset of the tree, and what exists today goes on
    the way, but the held one."""
    path = fake_zfs.root / "etc/zsn/zfs.json"
    path.parent.mkdir(parents=True)
    path.write_text(encode({"tank/home": POLICY_31, "tank/vol": Policy("tank/vol",
                                                                      {"daily": 7})}, {}))
    for command, name in READS.items():
        fake_zfs.answer(f"zfs {command} tank/vol" if "snapshot" in command else
                        f"zfs {command}", captured(name)["stdout"])
    result = subprocess.run(
        [sys.executable, "-m", "zsn", "--root", str(fake_zfs.root), "zfs", "policy",
         "simulate", "tank/home", "--days", "10"], capture_output=True, text=True,
        timeout=120, check=False, cwd=REPO, env={**os.environ, "TZ": "UTC"})
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0].startswith("10 days of runs every 60 min from ")
    assert lines[0].endswith("(241 runs), policy of tank/home (keep hourly=24,daily=7):")
    assert lines[1:4] == [
        "at the end tank/home has 32 policy snapshots (hourly 25, daily 7)",
        "at the end tank/home/alice has 31 policy snapshots (hourly 24, daily 7)",
        "at the end tank/home/bob has 31 policy snapshots (hourly 24, daily 7)"]
    gone = [line.split()[0] for line in lines[5:]]
    assert "tank/home@zsn_2026-11-27_11:00:00_hourly" not in gone  # held
    assert "tank/home@before-upgrade" not in gone  # not a policy's
    assert len(gone) == 13  # the other 10 hourlies and 3 dailies of today


def test_the_kept_counts_are_in_the_classes_order_whatever_order_they_were_taken_in() -> None:
    """sanoid takes a run's classes in its hash's order, so the same second's snapshots
    come in any order; the summary line is the same for all of them."""
    from zsn.zfs.schedule import RunPlan, Verdict

    taken = ["monthly", "hourly", "daily"]  # the order one sanoid run created them in
    verdicts = tuple(Verdict("tank/home", f"autosnap_2026-12-02_11:00:01_{cls}", cls, False,
                             f"one of the 3 newest {cls}") for cls in taken)
    plan = RunPlan((), verdicts, {"tank/home": "tank/home"})
    policy = Policy("tank/home", {"hourly": 3, "daily": 3, "monthly": 3}, recursive=True)
    lines = autosnap.describe(plan, 0, UTC, {"tank/home": policy})
    assert "tank/home: keeps hourly 1, daily 1, monthly 1 (policy of tank/home)" in lines
