"""Tries of file and sysctl changes under a temporary root, with the real guardian (a
detached `python -m zsn.tries.guardian`): rolled back at the deadline, kept on
confirm, the boot config written on confirm only, a rollback that meets a file
changed since, refusals. The live kinds (links, WireGuard, Wi-Fi, units) are tried in
the labs: tests/integration/test_tryback_ssh.py and tests/kernel/test_tryback.py."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from tests.unit.tries.conftest import plan_of, wait_state
from zsn import cli
from zsn.errors import ValidationError
from zsn.plan import LiveStep, Plan
from zsn.system.host import Host
from zsn.tries import guardians, lifecycle
from zsn.tries import store as records
from zsn.tries.store import Store


def guardian_gone(host: Host, change_id: str) -> bool:
    pid = guardians.guardian_pid(Store(host), change_id)
    if pid is None:
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    return "zsn.tries.guardian" not in Path(f"/proc/{pid}/cmdline").read_text()


def test_not_confirmed_it_is_rolled_back_live_and_in_files(host: Host) -> None:
    result = lifecycle.begin(host, plan_of(host), 2, "zsn test")
    assert host.path("/etc/app.conf").read_text() == "new = 2\n"
    assert host.path("/etc/app.conf.zsn-bak").read_text() == "old = 1\n"
    assert host.path("/proc/sys/net/ipv4/ip_forward").read_text() == "1\n"
    assert not host.path("/etc/boot.yaml").exists()  # only on confirm
    change = result.change
    assert change.guardian == {"how": "process"} and guardians.alive(host, Store(host), change)
    assert wait_state(host, change.id, (records.ROLLED_BACK,), 15) == records.ROLLED_BACK
    assert host.path("/etc/app.conf").read_text() == "old = 1\n"
    assert host.path("/etc/app.conf.zsn-bak").read_text() == "older = 1\n"
    assert host.path("/proc/sys/net/ipv4/ip_forward").read_text() == "0\n"
    assert not host.path("/etc/boot.yaml").exists()
    done = Store(host).load(change.id)
    assert done.outcome["by"] == "the guardian, at the deadline"
    assert done.outcome["left"] == [] and len(done.outcome["done"]) == 3


def test_confirmed_it_stays_and_the_boot_config_is_written(host: Host) -> None:
    change = lifecycle.begin(host, plan_of(host), 60, "zsn test").change
    assert cli.main(["--root", str(host.root), "confirm", change.id]) == 0
    assert host.path("/etc/boot.yaml").read_text() == "boot: new\n"
    assert host.path("/etc/app.conf").read_text() == "new = 2\n"
    assert Store(host).load(change.id).state == records.CONFIRMED
    deadline = time.monotonic() + 10
    while not guardian_gone(host, change.id):
        assert time.monotonic() < deadline, "the guardian did not go"
        time.sleep(0.05)
    assert host.path("/proc/sys/net/ipv4/ip_forward").read_text() == "1\n"
    with pytest.raises(ValidationError, match="is confirmed, not pending"):
        lifecycle.confirm(host, change.id)


def test_a_rollback_that_meets_a_changed_file_says_what_is_left(
        host: Host, capsys: pytest.CaptureFixture[str]) -> None:
    change = lifecycle.begin(host, plan_of(host), 60, "zsn test").change
    host.path("/etc/app.conf").write_text("someone = else\n")
    assert cli.main(["--root", str(host.root), "rollback"]) == 1
    out = capsys.readouterr().out
    stored = Store(host).load(change.id)
    assert stored.state == records.INCOMPLETE
    conf = host.path("/etc/app.conf")
    assert f"  NOT restored: {conf} was written since the try: left as it is (zsn rollback " \
           f"{change.id} --force restores it)" in out
    copy = Store(host).folder(change.id) / "before" / "1"
    assert f"    install -m 0644 {copy} {conf}" in out
    assert copy.read_text() == "old = 1\n" and copy.stat().st_mode & 0o777 == 0o600
    assert conf.read_text() == "someone = else\n"  # nobody's edit is lost
    assert host.path("/proc/sys/net/ipv4/ip_forward").read_text() == "0\n"
    assert cli.main(["--root", str(host.root), "pending"]) == 0  # nothing waits
    assert cli.main(["--root", str(host.root), "pending", "--all"]) == 0
    listed = capsys.readouterr().out
    assert f"{change.id}  test change  rollback incomplete at " in listed
    assert "NOT restored:" in listed
    conf.write_text("old = 1\n")  # the admin puts it back by hand; rollback finishes
    assert cli.main(["--root", str(host.root), "rollback", change.id]) == 0
    assert Store(host).load(change.id).state == records.ROLLED_BACK


def test_pending_lists_one_line_each_and_refuses_a_second_try(
        host: Host, capsys: pytest.CaptureFixture[str]) -> None:
    change = lifecycle.begin(host, plan_of(host), 60, "zsn test").change
    assert cli.main(["--root", str(host.root), "pending"]) == 0
    [line] = capsys.readouterr().out.splitlines()
    words = line.split("  ")
    assert words[0] == change.id and words[1] == "test change"
    assert 55 <= int(words[2].split()[0]) <= 60 and words[2].endswith(" s left")
    with pytest.raises(ValidationError, match=f"change {change.id} .* is still being tried"):
        lifecycle.begin(host, Plan("another"), 10, "zsn test")
    for bad in ("../../etc", "ABCDEF", "1234567"):
        assert cli.main(["--root", str(host.root), "confirm", bad]) == 2
        assert "is not a change id (six hex digits" in capsys.readouterr().err


def test_a_step_without_a_restore_cannot_be_tried(host: Host) -> None:
    plan = Plan("blind", [LiveStep("something live", lambda: None)])
    with pytest.raises(ValidationError, match="'something live' cannot be undone by a "
                       "guardian, so this change cannot be tried"):
        lifecycle.begin(host, plan, 10, "zsn test")
    assert Store(host).changes() == []


def test_no_guardian_no_change(host: Host, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(guardians, "guardian_argv",
                        lambda host, change_id, detach: ["/bin/false"])
    with pytest.raises(lifecycle.TryError, match="nothing was changed: the guardian exited at "
                       "once"):
        lifecycle.begin(host, plan_of(host), 10, "zsn test")
    assert host.path("/etc/app.conf").read_text() == "old = 1\n"
    assert Store(host).changes() == []


def test_stopped_early_the_guardian_rolls_back_at_once(host: Host) -> None:
    change = lifecycle.begin(host, plan_of(host), 600, "zsn test").change
    pid = guardians.guardian_pid(Store(host), change.id)
    assert pid is not None
    os.kill(pid, 15)
    wait_state(host, change.id, (records.ROLLED_BACK,), 15)
    stored = Store(host).load(change.id)
    assert stored.outcome["by"] == "the guardian, stopped by SIGTERM before the deadline"
    assert host.path("/etc/app.conf").read_text() == "old = 1\n"


def test_the_cli_prints_the_confirm_command_last_and_exits_0(
        host: Host, capsys: pytest.CaptureFixture[str]) -> None:
    import argparse

    from zsn.headless import apply_change

    args = argparse.Namespace(try_seconds=30.0, confirm_ssh=None, dry_run=False)
    assert apply_change(host, plan_of(host), args) == 0
    out, err = capsys.readouterr()
    [change] = Store(host).waiting()
    assert out.splitlines()[-1] == f"zsn confirm {change.id}"
    assert "done: forwarding on" in err
    assert f"trying change {change.id} for 30 s: rolled back by itself unless confirmed; " \
           "1 boot config file written on confirm" in err


def test_verify_after_apply_exits_1_and_offers_the_rollback(
        host: Host, capsys: pytest.CaptureFixture[str]) -> None:
    import argparse

    from zsn.headless import apply_change
    from zsn.plan import Check

    plan = plan_of(host)
    plan.checks.append(Check("forwarding", lambda: ["net.ipv4.ip_forward is 2, not 1"]))
    args = argparse.Namespace(try_seconds=30.0, confirm_ssh=None, dry_run=False)
    assert apply_change(host, plan, args) == 1
    out, err = capsys.readouterr()
    [change] = Store(host).waiting()
    assert out.splitlines()[-1] == f"zsn rollback {change.id}"
    assert "verify: net.ipv4.ip_forward is 2, not 1" in err
    assert f"keep it anyway with 'zsn confirm {change.id}'" in err
    # Without a try: the same difference, exit 1, nothing to roll back.
    lifecycle.roll_back(host, change.id)
    capsys.readouterr()
    plan = plan_of(host)
    plan.checks.append(Check("forwarding", lambda: ["net.ipv4.ip_forward is 2, not 1"]))
    args = argparse.Namespace(try_seconds=None, confirm_ssh=None, dry_run=False)
    assert apply_change(host, plan, args) == 1
    assert "verify: net.ipv4.ip_forward is 2, not 1" in capsys.readouterr().err


def test_try_seconds_are_checked_first(host: Host, capsys: pytest.CaptureFixture[str]) -> None:
    for bad, reason in (("0", "1 to 3600 seconds, not 0"), ("a while", "not a number")):
        with pytest.raises(SystemExit) as exited:  # as the command line is read
            cli.main(["--root", str(host.root), "wg", "up", "wg0", "--try", bad])
        assert exited.value.code == 2
        err = capsys.readouterr().err
        assert err.startswith("zsn wg up: invalid: argument --try: ") and reason in err
        assert err.count("\n") == 1
