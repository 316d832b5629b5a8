"""What `zsn zfs send` takes from the user and how it talks to a target: targets and
sources, rates, the remote script and its batch output, ssh's argv and ciphers, the
progress line, and the transfer records the export reads."""

from __future__ import annotations

import io
import json
import os
import re
import subprocess
from pathlib import Path

import pytest

from zsn.errors import ValidationError
from zsn.system.host import Host
from zsn.zfs import transfers
from zsn.zfs.export import transfer_metrics
from zsn.zfs.remote import (
    Endpoint,
    Ssh,
    order_ciphers,
    parse_source,
    parse_target,
    remote_script,
    split_batch,
)
from zsn.zfs.send import parse_rate
from zsn.zfs.send_cli import ProgressPrinter, progress_line


@pytest.mark.parametrize(("text", "expected"), [
    ("tank/backup", Endpoint("tank/backup")),
    ("backup:tank/data", Endpoint("tank/data", "backup")),
    ("root@nas.lan:tank/my data", Endpoint("tank/my data", "nas.lan", "root")),
    ("[fd00::2]:tank/d", Endpoint("tank/d", "fd00::2")),
    ("zsn@[fe80::1%wg0]:tank/d", Endpoint("tank/d", "fe80::1%wg0", "zsn")),
    ("tank/a:b", Endpoint("tank/a:b")),  # a ':' after the first '/' is the dataset's
])
def test_targets(text: str, expected: Endpoint) -> None:
    assert parse_target(text) == expected
    assert str(expected) == text


@pytest.mark.parametrize(("text", "reason"), [
    ("-oProxyCommand=x:tank/d", "is not a host name"),
    ("host:", "the dataset after 'host:' is missing"),
    ("-l@host:tank/d", "is not a user name"),
    ("ho$t:tank/d", "is not a host name"),
    ("host:tank/../d", "'..' component"),
    ("host:/tank/d", "is a path"),
    ("[fd00::2]tank/d", "write [ADDRESS]:POOL/DATASET"),
])
def test_bad_targets(text: str, reason: str) -> None:
    with pytest.raises(ValidationError, match=re.escape(reason)):
        parse_target(text)


def test_sources() -> None:
    assert parse_source("tank/data") == ("tank/data", None)
    assert parse_source("tank/data@2026-01-31 10:00") == ("tank/data", "2026-01-31 10:00")
    with pytest.raises(ValidationError, match="zsn sends from this machine"):
        parse_source("nas:tank/data")


@pytest.mark.parametrize(("text", "rate"), [
    ("50M", 50 * 1024 ** 2), ("50MiB/s", 50 * 1024 ** 2), ("800K", 800 * 1024),
    ("1.5G", 1.5 * 1024 ** 3), ("100Mbit", 12_500_000), ("1gbit/s", 125_000_000),
    ("2048", 2048)])
def test_rates(text: str, rate: float) -> None:
    assert parse_rate(text) == rate


@pytest.mark.parametrize("text", ["fast", "-5M", "10 apples", "100", "5Q"])
def test_bad_rates(text: str) -> None:
    with pytest.raises(ValidationError):
        parse_rate(text)


def test_the_remote_script_quotes_every_argument_and_runs_nothing_from_a_name() -> None:
    hostile = "tank/x; touch /tmp/zsn-pwned $(id)"
    script = remote_script([["zfs", "list", hostile], ["zpool", "get", "all", "tank"]])
    result = subprocess.run(["sh", "-c", script.replace("zfs list", "printf %s\\\\n")
                             .replace("zpool get", "echo")], capture_output=True, text=True,
                            check=False)
    assert not Path("/tmp/zsn-pwned").exists()
    assert result.stdout.splitlines() == [hostile, "@zsn-end 0", "all tank", "@zsn-end 0"]
    runs = split_batch(result.stdout, ["a", "b"], {"a": ["zfs"], "b": ["zpool"]})
    assert runs["a"].stdout == hostile + "\n" and runs["b"].ok
    one = remote_script([["zfs", "receive", "-s", "-u", "tank/my data"]], exec_last=True)
    assert one.endswith("exec zfs receive -s -u 'tank/my data'")
    announced = remote_script([["zfs", "receive", "tank/x"]], exec_last=True, announce=True)
    assert announced.endswith("; echo @zsn-ready; exec zfs receive tank/x")
    assert one.startswith('PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin:'
                          '"$PATH"; LC_ALL=C; export PATH LC_ALL')


def test_a_batch_cut_short_by_a_lost_connection_leaves_the_rest_out() -> None:
    output = "zsrc/a\t1\n@zsn-end 0\ncannot open 'x': dataset does not exist\n@zsn-end 1\n"
    runs = split_batch(output, ["a", "b", "c"], {k: ["zfs"] for k in "abc"})
    assert set(runs) == {"a", "b"} and runs["b"].returncode == 1
    assert runs["b"].stderr == "cannot open 'x': dataset does not exist\n"
    # a marker not at the start of a line is not one
    assert split_batch("x @zsn-end 0\n", ["a"], {"a": ["zfs"]}) == {}


def test_ssh_runs_without_prompts_and_offers_the_fastest_ciphers_first() -> None:
    argv = Ssh("/usr/bin/ssh", "root@nas", ("aes128-gcm@openssh.com", "aes128-ctr")).argv("x")
    assert argv[:3] == ["/usr/bin/ssh", "-T", "-x"]
    assert "BatchMode=yes" in argv and "Ciphers=aes128-gcm@openssh.com,aes128-ctr" in argv
    assert argv[-3:] == ["--", "root@nas", "x"]
    allowed = ["chacha20-poly1305@openssh.com", "aes128-ctr", "aes256-ctr",
               "aes128-gcm@openssh.com", "aes256-gcm@openssh.com"]
    fastest = ["aes128-gcm@openssh.com", "aes256-gcm@openssh.com",
               "chacha20-poly1305@openssh.com"]
    assert order_ciphers(allowed, fastest) == (
        "aes128-gcm@openssh.com", "aes256-gcm@openssh.com", "chacha20-poly1305@openssh.com",
        "aes128-ctr", "aes256-ctr")
    # the user's config allows no AES-GCM: it stays out
    assert order_ciphers(["chacha20-poly1305@openssh.com", "aes128-ctr"], fastest) == (
        "chacha20-poly1305@openssh.com", "aes128-ctr")


def test_the_progress_line_and_its_plain_form() -> None:
    progress = {"bytes": 412 * 1024 ** 2, "estimate": 1024 ** 3, "percent": 40.2,
                "rate": 92.1 * 1024 ** 2, "eta_seconds": 6.6}
    assert progress_line(progress) == "412.0 MiB of 1.0 GiB 40%, 92.1 MiB/s, ETA 6s"
    assert progress_line(progress, bar=True).startswith("[########............] 412.0")
    assert progress_line({"bytes": 10, "estimate": None}) == "10 B, rate -, ETA -"
    log = io.StringIO()
    now = [0.0]
    printer = ProgressPrinter(log, clock=lambda: now[0])
    for step in range(100):  # 10 seconds of ticks
        now[0] = step / 10
        printer.progress(progress)
    printer.say("stream 2: zfs send ...")
    assert log.getvalue().splitlines() == [
        "progress: 412.0 MiB of 1.0 GiB 40%, 92.1 MiB/s, ETA 6s"] * 2 + [
        "stream 2: zfs send ..."]


def test_records_of_running_and_finished_transfers(tmp_path: Path) -> None:
    host = Host(tmp_path)
    clock = [1000.0]
    recorder = transfers.Recorder(host, {"source": "tank/a", "target": "nas:tank/a",
                                         "via": "ssh"}, clock=lambda: clock[0])
    recorder.update(bytes=10, rate=5.0)
    running = transfers.read_transfers(host)["running"]
    assert [(r["source"], r["bytes"], r["state"]) for r in running] == [("tank/a", 10,
                                                                         "running")]
    assert os.stat(tmp_path / "run/zsn/transfers").st_mode & 0o777 == 0o755
    labels = {"source": "tank/a", "target": "nas:tank/a", "via": "ssh"}
    live = {f.name: f.samples for f in transfer_metrics(transfers.read_transfers(host))}
    assert live["zsn_zfs_transfer_running"] == [(labels, 1)]
    assert live["zsn_zfs_transfer_bytes"] == [(labels, 10)]
    assert live["zsn_zfs_transfer_rate_bytes_per_second"] == [(labels, 5.0)]
    clock[0] += 5
    result = recorder.finish(state="ok", bytes=100, seconds=5.0, rate=20, resumed=True,
                             finished=1005.0)
    found = transfers.read_transfers(host)
    assert found["running"] == [] and found["last"] == [result]
    assert "pid" not in result and result["resumed"] is True
    metrics = {f.name: f.samples for f in transfer_metrics(found)}
    assert metrics["zsn_zfs_transfer_last_success"] == [(labels, 1)]
    assert metrics["zsn_zfs_transfer_last_resumed"] == [(labels, 1)]
    assert metrics["zsn_zfs_transfer_last_bytes"] == [(labels, 100)]
    assert metrics["zsn_zfs_transfer_last_finished_timestamp_seconds"] == [(labels, 1005.0)]


def test_a_running_record_whose_process_is_gone_reads_as_interrupted(tmp_path: Path) -> None:
    folder = tmp_path / "run/zsn/transfers"
    folder.mkdir(parents=True)
    # past pid_max (2 ** 22 at most): no such process
    record = {"source": "tank/a", "target": "tank/b", "pid": 2 ** 22 + 7,
              "process_start": "1", "bytes": 5, "state": "running", "updated": 1.0}
    (folder / "4194311.json").write_text(json.dumps(record))
    (folder / "junk.json").write_text("{not json")
    (folder / "big.json").write_text(json.dumps({"source": "x" * 70000, "target": "y"}))
    found = transfers.read_transfers(Host(tmp_path))
    assert found["running"] == []
    [last] = found["last"]
    assert last["state"] == "interrupted" and last["bytes"] == 5 and "pid" not in last
    # the next run of the pair clears it
    transfers.Recorder(Host(tmp_path), {"source": "tank/a", "target": "tank/b"})
    assert not (folder / "4194311.json").exists()


def test_not_root_the_recorder_says_once_why_nothing_is_recorded(tmp_path: Path) -> None:
    (tmp_path / "run").write_text("a file where a folder should be")
    recorder = transfers.Recorder(Host(tmp_path), {"source": "a/b", "target": "c/d"})
    recorder.update(force=True, bytes=1)
    assert recorder.problem and recorder.problem.startswith(
        "progress and results are not recorded")
    recorder.finish(state="ok")
