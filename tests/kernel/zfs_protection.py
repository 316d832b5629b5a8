"""Snapshot policies and scheduled replication with real OpenZFS: run in the kernel lab
as part of the ``zfs_send`` group (its pools ``zsrc`` and ``zdst``, its sshd target;
tests/kernel/test_zfs_send.py imports these tests last, so one boot serves both).

zsn runs as a user would run it (``zsn zfs policy ...``, ``zsn zfs snapshots run``,
``zsn zfs replicate ...``) and ZFS is asked what happened. Runs at later times move
the guest's clock forward (`advance`): the guest is a VM of its own, and a clock moved
forward is what a timer's next run sees. Transfers measure time on the monotonic
clock, which ``date -s`` leaves alone.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from tests.kernel.test_zfs import sh, wait_for, zsn
from tests.lab.ssh_target import SshServer
from zsn.decode import from_yaml
from zsn.zfs.policy import CONFIG_PATH, decode

REPO = Path(__file__).resolve().parents[2]
BASE = Path("/run/zsnlab-send")
MIB = 1024 ** 2
SRC, DST = "zsrc", "zdst"
REMOTE = "root@10.77.0.2"
SANOID_EXAMPLE = Path("/usr/share/doc/sanoid/examples/sanoid.conf")


def advance(seconds: float) -> None:
    """Move the guest's wall clock forward (as the next timer run would find it)."""
    sh("date", "-s", f"@{int(time.time() + seconds)}")


def snapshots_of(dataset: str) -> list[dict[str, Any]]:
    listed = sh("zfs", "list", "-Hp", "-t", "snapshot", "-o",
                "name,createtxg,creation,userrefs", "-s", "createtxg", "-d", "1", dataset)
    return [{"name": line.split("\t")[0].split("@")[1], "txg": int(line.split("\t")[1]),
             "creation": int(line.split("\t")[2]), "holds": int(line.split("\t")[3])}
            for line in listed.stdout.splitlines()]


def names(dataset: str) -> list[str]:
    return [s["name"] for s in snapshots_of(dataset)]


def export() -> dict[str, Any]:
    document = json.loads(zsn("--export", "zfs").stdout)["zfs"]
    protection: dict[str, Any] = document["protection"]
    return protection


def metric(text: str, name: str, **labels: str) -> float | None:
    wanted = ",".join(f'{k}="{v}"' for k, v in labels.items())
    for line in text.splitlines():
        if line.startswith(f"{name}{{{wanted}}} ") or line.startswith(f"{name}{{{wanted},"):
            return float(line.rsplit(" ", 1)[1])
    return None


@pytest.fixture(scope="module")
def tree(pools: None) -> str:
    """zsrc/pol with two children, 1 MiB each, under a recursive policy of 2 hourlies."""
    for name in ("pol", "pol/a", "pol/a/b"):
        sh("zfs", "create", f"{SRC}/{name}")
        (BASE / SRC / name / "data").write_bytes(os.urandom(MIB))
    zsn("zfs", "policy", "set", f"{SRC}/pol", "--keep", "hourly=2", "--recursive")
    return f"{SRC}/pol"


def test_a_recursive_policy_run_takes_the_tree_at_one_instant(tree: str) -> None:
    planned = zsn("zfs", "snapshots", "run", "--dry-run").stdout
    assert "take hourly (no hourly snapshot yet): zfs snapshot zsrc/pol@zsn_" in planned
    assert "3 snapshots to take, 0 to destroy" in planned
    zsn("zfs", "snapshots", "run")
    taken = [snapshots_of(d) for d in (tree, f"{tree}/a", f"{tree}/a/b")]
    assert [len(found) for found in taken] == [1, 1, 1]
    assert len({found[0]["name"] for found in taken}) == 1  # one name on every dataset
    assert len({found[0]["txg"] for found in taken}) == 1  # in one transaction: atomic
    assert "nothing was due" in zsn("zfs", "snapshots", "run").stderr


def test_prune_spares_holds_other_snapshots_and_a_jobs_base(tree: str) -> None:
    [first] = names(tree)
    # a job whose base is the first hourly: a local target on the other pool
    zsn("zfs", "replicate", "add", "poljob", tree, f"{DST}/pol", "--every", "1h")
    zsn("zfs", "replicate", "run", "poljob")
    assert export()["jobs"][0]["base"] == first
    sh("zfs", "snapshot", f"{tree}@before-upgrade")
    for _ in range(3):
        advance(3600)
        zsn("zfs", "snapshots", "run")
    hourlies = [n for n in names(tree) if n.endswith("_hourly")]
    # the second went (beyond the 2 newest); the first is the job's base
    assert len(hourlies) == 3 and hourlies[0] == first
    assert "before-upgrade" in names(tree)
    sh("zfs", "hold", "keep", f"{tree}@{hourlies[1]}")
    advance(3600)
    planned = zsn("zfs", "snapshots", "run", "--dry-run").stdout
    assert f"keep {tree}@{first}: hourly, beyond the 2 newest hourly, but the base of job " \
           "poljob" in planned
    assert f"keep {tree}@{hourlies[1]}: hourly, beyond the 2 newest hourly, but held " \
           "(zfs hold)" in planned
    # the children's oldest hourly goes: they have neither a hold nor a job's base
    assert "3 snapshots to take, 2 to destroy" in planned
    zsn("zfs", "snapshots", "run")
    after = [n for n in names(tree) if n.endswith("_hourly")]
    assert after[:3] == hourlies and len(after) == 4
    assert len([n for n in names(f"{tree}/a") if n.endswith("_hourly")]) == 2
    sh("zfs", "release", "keep", f"{tree}@{hourlies[1]}")


def test_a_job_replicates_incrementally_when_due(tree: str) -> None:
    # due once per hour: run now; again at once is not due
    zsn("zfs", "replicate", "run")
    assert "no job is due" in zsn("zfs", "replicate", "run").stderr
    job = export()["jobs"][0]
    assert job["state"] == "ok" and job["bytes_behind"] == 0
    assert job["base"] == names(tree)[-1]
    advance(3600)
    zsn("zfs", "snapshots", "run")
    behind = export()["jobs"][0]["bytes_behind"]
    assert behind and behind > 0
    ran = zsn("zfs", "replicate", "run")
    assert "job poljob: zdst/pol has @" in ran.stdout
    record = json.loads(Path("/var/lib/zsn/zfs/jobs/poljob.json").read_text())
    assert record["state"] == "ok" and record["bytes"] < 2 * MIB + behind
    assert names(f"{DST}/pol")[-1] == names(tree)[-1]
    proof = export()["jobs"][0]
    assert proof["bytes_behind"] == 0 and proof["lag_seconds"] < 3600


def test_policy_import_sanoid_on_sanoids_own_example(pools: None) -> None:
    """sanoid 2.1.0 (Debian) takes its snapshots of its sample config's dataset; zsn
    imports the same file and goes on with sanoid's names, due as sanoid said."""
    sh("truncate", "-s", str(96 * MIB), str(BASE / "zpoolname.img"))
    sh("zpool", "create", "-f", "-o", "ashift=12", "-m", f"{BASE}/zpoolname", "zpoolname",
       str(BASE / "zpoolname.img"))
    try:
        sh("zfs", "create", "zpoolname/parent2")
        sh("zfs", "create", "zpoolname/parent2/child")
        config = BASE / "sanoid"
        config.mkdir()
        (config / "sanoid.conf").write_text(SANOID_EXAMPLE.read_text())
        sh("sanoid", "--configdir", str(config), "--cache-dir", str(config / "cache"),
           "--run-dir", str(config / "run"), "--take-snapshots")
        theirs = names("zpoolname/parent2/child")
        assert {n.rsplit("_", 1)[1] for n in theirs} == {"hourly", "daily", "monthly"}
        plan = zsn("zfs", "policy", "import", "sanoid", str(SANOID_EXAMPLE), "--dry-run")
        assert ("zpoolname/parent2: keep hourly=36,daily=30,monthly=3, recursive; zsn takes "
                "over its autosnap_ snapshots") in plan.stdout
        zsn("zfs", "policy", "import", "sanoid", str(SANOID_EXAMPLE))
        planned = zsn("zfs", "snapshots", "run", "--dry-run", "--verbose").stdout
        assert "zpoolname/parent2/child: keeps hourly 1, daily 1, monthly 1" in planned
        assert "0 snapshots to take, 0 to destroy" in planned
        for name in theirs:
            assert (f"keep zpoolname/parent2/child@{name}: {name.rsplit('_', 1)[1]}, one of "
                    "the") in planned
        zsn("zfs", "policy", "remove", "zpoolname/parent2")
    finally:
        sh("zpool", "destroy", "-f", "zpoolname", check=False)


def test_an_encrypted_source_goes_raw(target: SshServer) -> None:
    key = BASE / "vault.key"
    key.write_bytes(os.urandom(32))
    sh("zfs", "create", "-o", "encryption=on", "-o", "keyformat=raw", "-o",
       f"keylocation=file://{key}", f"{SRC}/vault")
    (BASE / SRC / "vault" / "v").write_bytes(os.urandom(MIB))
    sh("zfs", "snapshot", f"{SRC}/vault@v1")
    added = zsn("zfs", "replicate", "add", "vault", f"{SRC}/vault", f"{REMOTE}:{DST}/vault")
    assert "zsrc/vault is encrypted: sent raw" in added.stderr
    zsn("zfs", "replicate", "run", "vault")
    props = dict(line.split("\t")[1:] for line in sh(
        "zfs", "get", "-Hp", "-o", "name,property,value", "keystatus,encryption",
        f"{DST}/vault").stdout.splitlines())
    assert props == {"keystatus": "unavailable", "encryption": "aes-256-gcm"}
    zsn("zfs", "replicate", "remove", "vault")


def _job_process(name: str) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, "-m", "zsn", "zfs", "replicate", "run", name],
                            cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _children(pid: int) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[1]) == pid:
                found.append(int(entry.name))
    return found


def _ssh_of(pid: int) -> int | None:
    for child in _children(pid):
        try:
            if Path(f"/proc/{child}/comm").read_text().strip() == "ssh":
                return child
        except OSError:
            continue
    return None


def test_a_job_whose_target_is_cut_resumes_on_the_next_run(target: SshServer,
                                                          big: str) -> None:
    from tests.kernel.test_zfs_send import bytes_read, receiving

    dataset = f"{DST}/cut"
    zsn("zfs", "replicate", "add", "cut", big, f"{REMOTE}:{dataset}", "--limit", "1M")
    process = _job_process("cut")
    try:
        pid = wait_for("the receive", lambda: receiving(dataset), 120, 0.1)
        wait_for("2 MiB received", lambda: (bytes_read(pid) or 0) > 2 * MIB, 60, 0.1)
        ssh = wait_for("zsn's ssh", lambda: _ssh_of(process.pid), 30, 0.1)
        os.kill(ssh, signal.SIGKILL)  # the connection to the target is gone
        assert process.wait(120) == 1
    finally:
        if process.poll() is None:
            process.kill()
        process.wait(30)
    token = wait_for("a resume token", lambda: sh(
        "zfs", "get", "-Hp", "-o", "value", "receive_resume_token", dataset,
        check=False).stdout.strip() not in ("", "-"), 60)
    assert token
    cut = export()["jobs"]
    assert next(j for j in cut if j["name"] == "cut")["state"] in ("failed", "interrupted")
    ran = zsn("zfs", "replicate", "run", "cut")
    assert "resuming the interrupted send" in ran.stderr
    record = json.loads(Path("/var/lib/zsn/zfs/jobs/cut.json").read_text())
    assert record["state"] == "ok" and record["base"] == names(big)[-1]
    assert names(dataset) == names(big)


def test_a_stalled_transfer_sets_the_stall_metric(target: SshServer, big: str) -> None:
    from tests.kernel.test_zfs_send import receiving

    dataset = f"{DST}/stall"
    zsn("zfs", "replicate", "add", "stall", big, f"{REMOTE}:{dataset}", "--limit", "512K")
    process = _job_process("stall")
    receiver = None
    try:
        receiver = wait_for("the receive", lambda: receiving(dataset), 120, 0.1)
        os.kill(receiver, signal.SIGSTOP)  # the target hangs: the stream fills and stops
        record = wait_for("the running transfer's record", lambda: next(
            (json.loads(p.read_text()) for p in Path("/run/zsn/transfers").glob("*.json")
             if "stall" in p.read_text()), None), 60)
        moved = wait_for("the stream to stop moving", lambda: _stopped(record["pid"]), 120, 1)
        assert moved is not None
        text = zsn("--export", "zfs", "--format", "prometheus").stdout
        assert metric(text, "zsn_zfs_replication_stalled", job="stall") == 0
        assert metric(text, "zsn_zfs_replication_running", job="stall") == 1
        advance(6 * 60)  # five minutes and more without a byte
        text = zsn("--export", "zfs", "--format", "prometheus").stdout
        assert metric(text, "zsn_zfs_replication_stalled", job="stall") == 1
    finally:
        if receiver is not None:
            os.kill(receiver, signal.SIGCONT)
        process.send_signal(signal.SIGTERM)
        process.wait(120)
    sh("zfs", "receive", "-A", dataset, check=False)
    zsn("zfs", "replicate", "remove", "stall")


def _stopped(pid: int) -> int | None:
    """The running transfer's byte count once it has stayed the same for 3 s."""
    def count() -> int | None:
        for path in Path("/run/zsn/transfers").glob("*.json"):
            record = json.loads(path.read_text())
            if record.get("pid") == pid:
                return int(record.get("bytes") or 0)
        return None

    first = count()
    time.sleep(3)
    return first if first is not None and first > 0 and count() == first else None


DESIRED = f"""version: 1
zfs:
  policies:
    - {{dataset: {SRC}/desired, keep: {{hourly: 3, daily: 2}}, frequent_period: 600}}
  jobs:
    - {{name: desired, source: {SRC}/desired, target: {DST}/desired, every: 900}}
"""


def test_a_state_file_sets_a_policy_and_a_job_and_its_export_plans_nothing(
        tree: str) -> None:
    """``zsn apply`` of a zfs section on real pools, then again, then of ``zsn state
    export zfs`` (with the policies and jobs the tests before left): nothing to change;
    the export without these two and ``exclusive: true`` removes them alone. Five zsn
    runs (some 12 s each in the guest): the plans' wording and the refusals are the
    unit tests' (tests/unit/zfs/test_desired.py, on this lab's captured outputs)."""
    sh("zfs", "create", f"{SRC}/desired")
    state = BASE / "desired.yaml"
    state.write_text(DESIRED)
    try:
        zsn("apply", str(state))
        policies, jobs = decode(Path(CONFIG_PATH).read_text())
        mine = policies[f"{SRC}/desired"]
        assert (mine.keep, mine.frequent_period) == ({"hourly": 3, "daily": 2}, 600)
        assert (jobs["desired"].target, jobs["desired"].every) == (f"{DST}/desired", 900)
        assert zsn("apply", str(state)).stdout.endswith("(nothing to change)\n")
        exported = zsn("state", "export", "zfs").stdout
        assert f'dataset: "{tree}"' in exported and "name: desired" in exported
        (BASE / "exported.yaml").write_text(exported)
        assert zsn("apply", str(BASE / "exported.yaml")).stdout.endswith(
            "(nothing to change)\n")
        others = from_yaml(exported, dict[str, Any], "the export")
        section = others["zfs"]
        section["policies"] = [p for p in section["policies"]
                               if p["dataset"] != f"{SRC}/desired"]
        section["jobs"] = [j for j in section["jobs"] if j["name"] != "desired"]
        section["exclusive"] = True
        (BASE / "others.json").write_text(json.dumps(others))
        zsn("apply", str(BASE / "others.json"))
        after = decode(Path(CONFIG_PATH).read_text())
        assert set(after[0]) == set(policies) - {f"{SRC}/desired"}
        assert set(after[1]) == set(jobs) - {"desired"}
    finally:
        policies, jobs = decode(Path(CONFIG_PATH).read_text())
        if f"{SRC}/desired" in policies:
            zsn("zfs", "policy", "remove", f"{SRC}/desired", check=False)
        if "desired" in jobs:
            zsn("zfs", "replicate", "remove", "desired", check=False)
