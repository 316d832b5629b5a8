"""Replication with real OpenZFS in the QEMU kernel lab (group ``zfs_send``).

Two pools on file vdevs in a tmpfs: ``zsrc`` (the source) and ``zdst``, which is also
the pool of "the other host": an sshd in a network namespace, reached over a veth
(and, for one test, over kernel WireGuard). zsn runs as a process, as a user would
run it: ``zsn zfs send SOURCE TARGET`` here (pool to pool), over SSH, over TCP; the
received data is compared by checksum with the source's. Datasets are a few MiB: the
guest's CPU moves ~3 MB/s through ssh.
"""

from __future__ import annotations

import hashlib
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.kernel.test_zfs import sh, wait_for, zsn
from tests.lab.kernel import modprobe
from tests.lab.netns import processes
from tests.lab.ssh_target import (
    SshServer,
    client_key,
    forget_client_files,
    unlock_root_for_keys,
    use_client_files,
)
from tests.needs import needs_tools

REPO = Path(__file__).resolve().parents[2]
BASE = Path("/run/zsnlab-send")
MIB = 1024 ** 2
SRC, DST = "zsrc", "zdst"
NS = "zsendt"
ADDRESS, WG_ADDRESS = "10.77.0.2", "10.78.0.2"
REMOTE = f"root@{ADDRESS}"
KEY = BASE / "secret.key"


def write_random(path: Path, mib: int) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(os.urandom(mib * MIB))


def sums(root: Path) -> dict[str, str]:
    return {str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(root.rglob("*")) if p.is_file()}


def received_sums(dataset: str) -> dict[str, str]:
    """The target's files, read through a read-only mount (a mount that wrote atimes
    would make the next incremental refuse a changed target)."""
    mountpoint = sh("zfs", "get", "-Hp", "-o", "value", "mountpoint", dataset).stdout.strip()
    sh("zfs", "mount", "-o", "ro", dataset)
    try:
        return sums(Path(mountpoint))
    finally:
        sh("zfs", "umount", dataset)


def guids(dataset: str) -> dict[str, int]:
    listed = sh("zfs", "list", "-Hp", "-t", "snapshot", "-o", "name,guid", "-d", "1", dataset)
    return {line.split("\t")[0].split("@")[1]: int(line.split("\t")[1])
            for line in listed.stdout.splitlines()}


def receiving(dataset: str) -> int | None:
    """The pid of the ``zfs receive`` writing into `dataset` (here or under sshd)."""
    for pid, argv in processes():
        if b"receive" in argv and dataset.encode() in argv and argv[0].endswith(b"zfs"):
            return pid
    return None


def bytes_read(pid: int) -> int | None:
    try:
        for line in Path(f"/proc/{pid}/io").read_text().splitlines():
            if line.startswith("rchar:"):
                return int(line.split()[1])
    except OSError:
        return None
    return None


def last_result(source: str, target: str) -> dict[str, Any]:
    exported = json.loads(zsn("--export", "zfs").stdout)["zfs"]
    return next(r for r in exported["transfers"]["last"]
                if r["source"] == source and r["target"] == target)


@pytest.fixture(scope="module")
def pools() -> Iterator[None]:
    needs_tools("zpool", "zfs", "ssh", "sshd", "ip")
    modprobe("zfs")
    BASE.mkdir(parents=True, exist_ok=True)
    sh("mount", "-t", "tmpfs", "-o", "size=700m", "tmpfs", str(BASE))
    try:
        for pool in (SRC, DST):
            sh("truncate", "-s", str(320 * MIB), str(BASE / f"{pool}.img"))
            sh("zpool", "create", "-f", "-o", "ashift=12", "-O", "compression=lz4", "-O",
               "atime=off", "-m", f"{BASE}/{pool}", pool, str(BASE / f"{pool}.img"))
        yield
    finally:
        for pool in (SRC, DST):
            sh("zpool", "destroy", "-f", pool, check=False)
        sh("umount", "-l", str(BASE), check=False)


@pytest.fixture(scope="module")
def target(pools: None) -> Iterator[SshServer]:
    """sshd in a namespace at 10.77.0.2 letting in root's key (`use_client_files`)."""
    work = BASE / "sshd"
    sh("ip", "netns", "add", NS)
    server: SshServer | None = None
    try:
        sh("ip", "-n", NS, "link", "set", "lo", "up")
        sh("ip", "link", "add", "zsendva", "type", "veth", "peer", "name", "zsendvb")
        sh("ip", "link", "set", "zsendvb", "netns", NS)
        sh("ip", "addr", "add", "10.77.0.1/24", "dev", "zsendva")
        sh("ip", "link", "set", "zsendva", "up")
        sh("ip", "-n", NS, "addr", "add", f"{ADDRESS}/24", "dev", "zsendvb")
        sh("ip", "-n", NS, "link", "set", "zsendvb", "up")
        _wireguard()
        ssh_dir = BASE / "client"
        public = client_key(ssh_dir)
        use_client_files(ssh_dir)
        work.mkdir(parents=True, exist_ok=True)
        unlock_root_for_keys(work)
        server = SshServer(NS, [ADDRESS, WG_ADDRESS], work,
                           authorized=[public.read_text().strip()]).start()
        (ssh_dir / "known_hosts").write_text("".join(
            server.known_hosts_line(address) + "\n" for address in (ADDRESS, WG_ADDRESS)))
        server.wait_ready(REMOTE)
        yield server
    finally:
        if server is not None:
            server.stop()
        pids = sh("ip", "netns", "pids", NS, check=False).stdout.split()
        for pid in pids:
            sh("kill", "-9", pid, check=False)
        sh("ip", "link", "del", "zsendwg0", check=False)
        sh("ip", "link", "del", "zsendva", check=False)
        sh("ip", "netns", "del", NS, check=False)
        forget_client_files()
        sh("umount", "-l", "/etc/shadow", check=False)


def _wireguard() -> None:
    """Kernel WireGuard between the two sides, over the veth: 10.78.0.1 <-> 10.78.0.2."""
    modprobe("wireguard")
    keys = {}
    for side in ("here", "there"):
        private = sh("wg", "genkey").stdout.strip()
        public = subprocess.run(["wg", "pubkey"], input=private, capture_output=True,
                                text=True, check=True).stdout.strip()
        keys[side] = (private, public)
        (BASE / f"wg-{side}.key").write_text(private)
    sh("ip", "link", "add", "zsendwg0", "type", "wireguard")
    sh("wg", "set", "zsendwg0", "listen-port", "51820", "private-key",
       str(BASE / "wg-here.key"), "peer", keys["there"][1], "allowed-ips", "10.78.0.2/32",
       "endpoint", f"{ADDRESS}:51821")
    sh("ip", "addr", "add", "10.78.0.1/24", "dev", "zsendwg0")
    sh("ip", "link", "set", "zsendwg0", "up")
    sh("ip", "-n", NS, "link", "add", "zsendwg1", "type", "wireguard")
    sh("ip", "netns", "exec", NS, "wg", "set", "zsendwg1", "listen-port", "51821",
       "private-key", str(BASE / "wg-there.key"), "peer", keys["here"][1], "allowed-ips",
       "10.78.0.1/32", "endpoint", "10.77.0.1:51820")
    sh("ip", "-n", NS, "addr", "add", f"{WG_ADDRESS}/24", "dev", "zsendwg1")
    sh("ip", "-n", NS, "link", "set", "zsendwg1", "up")
    wait_for("a WireGuard handshake", lambda: sh(
        "ping", "-c", "1", "-W", "2", WG_ADDRESS, check=False).returncode == 0, 60, 1)


@pytest.fixture(scope="module")
def big(pools: None) -> str:
    """zsrc/big: 6 MiB, @b1; 2 MiB more, @b2."""
    sh("zfs", "create", f"{SRC}/big")
    write_random(BASE / SRC / "big" / "one", 6)
    sh("zfs", "snapshot", f"{SRC}/big@b1")
    write_random(BASE / SRC / "big" / "two", 2)
    sh("zfs", "snapshot", f"{SRC}/big@b2")
    return f"{SRC}/big"


def test_pool_to_pool_full_incremental_and_up_to_date(pools: None) -> None:
    source = BASE / SRC / "local"
    sh("zfs", "create", f"{SRC}/local")
    write_random(source / "a", 3)
    sh("zfs", "snapshot", f"{SRC}/local@1")
    write_random(source / "b", 1)
    sh("zfs", "snapshot", f"{SRC}/local@2")
    plan = zsn("zfs", "send", f"{SRC}/local", f"{DST}/local", "--dry-run").stdout
    assert f"Plan: send {SRC}/local@2 to {DST}/local" in plan
    assert f"zfs send {SRC}/local@1 | zfs receive -s -u {DST}/local" in plan
    assert f"zfs send -I @1 {SRC}/local@2 | zfs receive -s -u {DST}/local" in plan
    sent = zsn("zfs", "send", f"{SRC}/local", f"{DST}/local", "--json")
    result = json.loads(sent.stdout)
    assert result["state"] == "ok" and result["via"] == "local" and not result["resumed"]
    assert result["bytes"] > 4 * MIB and result["cpu_seconds"] < result["seconds"]
    assert f"is on {DST}/local" in sent.stderr
    assert guids(f"{DST}/local") == guids(f"{SRC}/local")
    assert received_sums(f"{DST}/local") == sums(source)
    write_random(source / "c", 1)
    sh("zfs", "snapshot", f"{SRC}/local@3")
    again = json.loads(zsn("zfs", "send", f"{SRC}/local", f"{DST}/local", "--json").stdout)
    assert MIB <= again["bytes"] < 2 * MIB and again["streams"] == 1
    assert list(guids(f"{DST}/local")) == ["1", "2", "3"]
    assert received_sums(f"{DST}/local") == sums(source)
    same = zsn("zfs", "send", f"{SRC}/local", f"{DST}/local")
    assert f"{DST}/local is up to date" in same.stderr


def test_a_tree_over_ssh_then_its_incremental(target: SshServer) -> None:
    for name in ("tree", "tree/child", "tree/child/leaf"):
        sh("zfs", "create", f"{SRC}/{name}")
        write_random(BASE / SRC / name / "data", 1)
    sh("zfs", "snapshot", "-r", f"{SRC}/tree@r1")
    sent = zsn("zfs", "send", f"{SRC}/tree", f"{REMOTE}:{DST}/tree", "-r", "--json")
    assert json.loads(sent.stdout)["via"] == "ssh"
    for name in ("tree", "tree/child", "tree/child/leaf"):
        assert guids(f"{DST}/{name}") == guids(f"{SRC}/{name}")
    # received unmounted, its mountpoint the target's own (not the source's)
    mountpoint = sh("zfs", "get", "-Hp", "-o", "value,source", "mountpoint",
                    f"{DST}/tree/child").stdout.split("\t")
    assert mountpoint[0] == f"{BASE}/{DST}/tree/child" and mountpoint[1].startswith("inherited")
    write_random(BASE / SRC / "tree/child" / "more", 1)
    sh("zfs", "snapshot", "-r", f"{SRC}/tree@r2")
    again = json.loads(zsn("zfs", "send", f"{SRC}/tree", f"{REMOTE}:{DST}/tree", "-r",
                           "--json").stdout)
    assert again["streams"] == 1 and again["bytes"] < 2 * MIB  # one -R -I stream, not all
    assert list(guids(f"{DST}/tree/child/leaf")) == ["r1", "r2"]
    # each dataset on its own (the source's leaf is mounted inside its child)
    child = {name: digest for name, digest in sums(BASE / SRC / "tree/child").items()
             if not name.startswith("leaf/")}
    assert received_sums(f"{DST}/tree/child") == child
    assert received_sums(f"{DST}/tree/child/leaf") == sums(BASE / SRC / "tree/child/leaf")


def test_a_raw_encrypted_send_over_tcp_leaves_the_key_behind(target: SshServer) -> None:
    KEY.write_bytes(os.urandom(32))
    sh("zfs", "create", "-o", "encryption=on", "-o", "keyformat=raw", "-o",
       f"keylocation=file://{KEY}", f"{SRC}/secret")
    write_random(BASE / SRC / "secret" / "s", 2)
    sh("zfs", "snapshot", f"{SRC}/secret@s1")
    sent = zsn("zfs", "send", f"{SRC}/secret", f"{REMOTE}:{DST}/secret", "--raw", "--via",
               "tcp", "--json")
    assert json.loads(sent.stdout)["via"] == "tcp"
    assert "names, properties and sizes cross the network in plain" in sent.stderr
    props = dict(line.split("\t")[1:] for line in sh(
        "zfs", "get", "-Hp", "-o", "name,property,value", "keystatus,keylocation,encryption",
        f"{DST}/secret").stdout.splitlines())
    assert props == {"keystatus": "unavailable", "keylocation": "prompt",
                     "encryption": "aes-256-gcm"}
    assert sh("zfs", "mount", f"{DST}/secret", check=False).returncode != 0
    # the data is all there: with the key (which only this test holds) it reads back
    sh("zfs", "load-key", "-L", f"file://{KEY}", f"{DST}/secret")
    assert received_sums(f"{DST}/secret") == sums(BASE / SRC / "secret")
    sh("zfs", "unload-key", f"{DST}/secret")


def test_tcp_is_refused_for_a_plain_stream_outside_wireguard_and_works_inside(
        target: SshServer, big: str) -> None:
    refused = zsn("zfs", "send", big, f"{REMOTE}:{DST}/overtcp", "--via", "tcp", check=False)
    assert refused.returncode == 2
    assert "zsendva, which is not WireGuard (use --via ssh)" in refused.stderr
    assert sh("zfs", "list", f"{DST}/overtcp", check=False).returncode != 0
    sent = zsn("zfs", "send", big, f"root@{WG_ADDRESS}:{DST}/overtcp", "--via", "tcp",
               "--json")
    assert json.loads(sent.stdout)["bytes"] > 8 * MIB
    assert guids(f"{DST}/overtcp") == guids(big)
    assert received_sums(f"{DST}/overtcp") == sums(BASE / big)


class Limited:
    """A send under ``--limit 512K``: its receive's bytes sampled every 0.1 s until it
    was killed with -9, part-way through its first snapshot."""

    def __init__(self, dataset: str, samples: list[tuple[float, int]]) -> None:
        self.dataset = dataset
        self.samples = samples


@pytest.fixture(scope="module")
def limited(target: SshServer, big: str) -> Limited:
    """One send serves the limit's test and the resume's: ~8.5 s of it at 512 KiB/s
    (about 4 of big@b1's 6 MiB), then zsn killed with -9."""
    dataset = f"{DST}/resumed"
    process = subprocess.Popen(
        [sys.executable, "-m", "zsn", "zfs", "send", big, f"{REMOTE}:{dataset}", "--limit",
         "512K"], cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        pid = wait_for("the receiving zfs receive", lambda: receiving(dataset), 120, 0.1)
        samples: list[tuple[float, int]] = []
        while process.poll() is None and (not samples or
                                          samples[-1][0] - samples[0][0] < 8.5):
            count = bytes_read(pid)
            if count is not None:
                samples.append((time.monotonic(), count))
            time.sleep(0.1)
        assert process.poll() is None, process.stderr.read() if process.stderr else ""
    finally:
        process.send_signal(signal.SIGKILL)
        process.wait(10)
    return Limited(dataset, samples)


def test_limit_holds_the_rate_within_ten_percent_each_second(limited: Limited) -> None:
    limit = 512 * 1024
    samples = limited.samples
    # whole seconds from the third on, the last one out (the pipeline starts, then the kill)
    rates = []
    start = samples[0][0] + 2
    while True:
        first = next((s for s in samples if s[0] >= start), None)
        second = next((s for s in samples if s[0] >= start + 1), None)
        if first is None or second is None or second[0] > samples[-1][0] - 1:
            break
        rates.append((second[1] - first[1]) / (second[0] - first[0]))
        start += 1
    assert len(rates) >= 5, (rates, samples[:3], samples[-3:])
    assert all(0.9 * limit <= rate <= 1.1 * limit for rate in rates), rates


def test_killed_with_9_at_either_end_and_resumed_to_the_same_data(target: SshServer,
                                                                   big: str,
                                                                   limited: Limited) -> None:
    dataset = limited.dataset
    args = [sys.executable, "-m", "zsn", "zfs", "send", big, f"{REMOTE}:{dataset}"]
    # the sender died (`limited`): its children saw the pipe close, zfs receive -s kept
    # what arrived
    token = wait_for("a resume token", lambda: (sh(
        "zfs", "get", "-Hp", "-o", "value", "receive_resume_token", dataset,
        check=False).stdout.strip() not in ("", "-")), 60)
    assert token
    interrupted = last_result(big, f"{REMOTE}:{dataset}")
    assert interrupted["state"] == "interrupted"
    again = zsn("zfs", "send", big, f"{REMOTE}:{dataset}", "--json")
    assert f"resuming the interrupted send of {big}@b1 into {dataset}" in again.stderr
    result = json.loads(again.stdout)
    assert result["resumed"] is True and result["state"] == "ok"
    assert result["bytes"] < 8 * MIB  # not all again
    assert list(guids(dataset)) == ["b1", "b2"]  # and the remaining snapshot followed
    assert received_sums(dataset) == sums(BASE / big)
    # the export's record of it (--export zfs's JSON is the same record: the
    # interrupted one above came from it)
    metrics = zsn("--export", "zfs", "--format", "prometheus").stdout
    resumed = [line for line in metrics.splitlines()
               if line.startswith("zsn_zfs_transfer_last_resumed{") and dataset in line]
    assert len(resumed) == 1 and float(resumed[0].rsplit(" ", 1)[1]) == 1, resumed
    # the receiver dies: zsn says so; the next run resumes again
    write_random(BASE / big / "three", 3)
    sh("zfs", "snapshot", f"{big}@b3")
    second = subprocess.Popen([*args, "--limit", "1M"], cwd=REPO, stdout=subprocess.DEVNULL,
                              stderr=subprocess.PIPE, text=True)
    pid = wait_for("the receive", lambda: receiving(dataset), 120, 0.1)
    wait_for("1 MiB received", lambda: (bytes_read(pid) or 0) > MIB, 60, 0.1)
    os.kill(pid, signal.SIGKILL)
    assert second.wait(120) == 1
    assert "zfs receive on 10.77.0.2 failed" in (second.stderr.read() if second.stderr else "")
    final = json.loads(zsn("zfs", "send", big, f"{REMOTE}:{dataset}", "--json").stdout)
    assert final["resumed"] is True
    assert list(guids(dataset)) == ["b1", "b2", "b3"]
    assert received_sums(dataset) == sums(BASE / big)


def test_the_probe_measures_each_stage_and_names_the_limit(target: SshServer, big: str) -> None:
    planned = zsn("zfs", "send", big, f"{REMOTE}:{DST}/probed", "--probe", "--dry-run")
    assert f"creates {DST}/zsn-probe-RANDOM for the write test" in planned.stdout
    found = json.loads(zsn("zfs", "send", big, f"{REMOTE}:{DST}/probed", "--probe",
                           "--json").stdout)
    stages = {stage["key"]: stage for stage in found["stages"]}
    assert set(stages) == {"source", "pipe", "ssh", "tcp", "target"}
    failing = {key: stage for key, stage in stages.items()
               if not (stage["rate"] and stage["rate"] > 0) or stage["error"]}
    assert not failing, json.dumps(failing)  # a string: pytest cuts a dict to 240 chars
    assert stages["tcp"]["on_path"] is False and stages["ssh"]["on_path"] is True
    assert "@openssh.com" in stages["ssh"]["name"] or "-ctr" in stages["ssh"]["name"]
    assert found["verdict"]["limit"] in stages and "the limit is" in found["verdict"]["says"]
    # the write test's dataset is gone, and nothing was received
    listed = sh("zfs", "list", "-H", "-o", "name", "-r", DST).stdout
    assert "zsn-probe-" not in listed and f"{DST}/probed" not in listed


# Snapshot policies and replication jobs join this boot (its pools, its sshd target),
# after the tests above (they move the guest's clock forward), in this order (pytest
# runs a module's tests in the order its names were bound).
from tests.kernel import zfs_protection as protection  # noqa: E402

tree = protection.tree
test_a_recursive_policy_run_takes_the_tree_at_one_instant = \
    protection.test_a_recursive_policy_run_takes_the_tree_at_one_instant
test_prune_spares_holds_other_snapshots_and_a_jobs_base = \
    protection.test_prune_spares_holds_other_snapshots_and_a_jobs_base
test_a_job_replicates_incrementally_when_due = \
    protection.test_a_job_replicates_incrementally_when_due
test_policy_import_sanoid_on_sanoids_own_example = \
    protection.test_policy_import_sanoid_on_sanoids_own_example
test_an_encrypted_source_goes_raw = protection.test_an_encrypted_source_goes_raw
test_a_job_whose_target_is_cut_resumes_on_the_next_run = \
    protection.test_a_job_whose_target_is_cut_resumes_on_the_next_run
test_a_stalled_transfer_sets_the_stall_metric = \
    protection.test_a_stalled_transfer_sets_the_stall_metric
test_a_state_file_sets_a_policy_and_a_job_and_its_export_plans_nothing = \
    protection.test_a_state_file_sets_a_policy_and_a_job_and_its_export_plans_nothing
