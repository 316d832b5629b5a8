"""Tries own what they touch (issue 34): while a try is pending, another change to
anything it touched is refused with one line naming the try; a rollback (the
guardian's at the deadline, or by hand) compares each thing with the state the try
left and does not overwrite one changed since: the record says what changed, ``zsn
pending`` shows it, and ``zsn rollback ID --force`` restores it anyway. Files, a
sysctl and the settings file under a temporary root, with the real guardian; the
links case (``link set UPLINK --mtu``) runs over a real SSH session in
tests/integration/test_tryback_ssh.py."""

from __future__ import annotations

import argparse

import pytest

from tests.unit.tries.conftest import plan_of, wait_state
from zsn import cli
from zsn.errors import ValidationError
from zsn.headless import apply_change, apply_or_show
from zsn.meaning import OwnFile
from zsn.plan import FileEdit, LiveStep, Plan
from zsn.system import files
from zsn.system.host import Host
from zsn.tries import lifecycle, restores
from zsn.tries import store as records
from zsn.tries.store import Store
from zsn.wireguard.interfaces import plan_set_endpoint

MINE = OwnFile("a test's file")
NOT_TRIED = argparse.Namespace(try_seconds=None, confirm_ssh=None, dry_run=False)


def forwarding(host: Host, value: str) -> Plan:
    """Turn forwarding to `value`, live (a change of something else's sysctl)."""
    path = host.path("/proc/sys/net/ipv4/ip_forward")
    return Plan(f"forwarding {value}", [LiveStep(
        f"forwarding {value}", lambda: path.write_text(f"{value}\n"),
        restore=(restores.sysctl_undo("net.ipv4.ip_forward", "0"),))])


def test_another_change_to_what_a_try_touched_is_refused_naming_it(host: Host) -> None:
    change = lifecycle.begin(host, plan_of(host), 60, "zsn test").change
    conf = host.path("/etc/app.conf")
    edit = Plan("edit app.conf", [FileEdit(conf, files.read_tracked(conf), "mine = 3\n",
                                           intent=MINE)])
    expected = (f"file /etc/app.conf belongs to change {change.id} (test change), still being "
                f"tried: keep it (zsn confirm {change.id}) or roll it back (zsn rollback "
                f"{change.id}) first")
    with pytest.raises(ValidationError) as refused:
        apply_or_show(host, edit, False)
    assert str(refused.value) == expected
    with pytest.raises(ValidationError, match=f"sysctl net.ipv4.ip_forward belongs to change "
                                              f"{change.id}"):
        apply_change(host, forwarding(host, "1"), NOT_TRIED)
    boot = Plan("boot config", [FileEdit(host.path("/etc/boot.yaml"), None, "boot: mine\n",
                                          intent=MINE)])
    with pytest.raises(ValidationError, match="file /etc/boot.yaml belongs to"):  # deferred
        apply_or_show(host, boot, False)
    assert conf.read_text() == "new = 2\n" and not host.path("/etc/boot.yaml").exists()
    assert change.owns == ["file /etc/app.conf", "file /etc/boot.yaml",
                           "sysctl net.ipv4.ip_forward"]
    other = host.path("/etc/other.conf")
    apply_or_show(host, Plan("another file", [FileEdit(other, None, "x\n", intent=MINE)]), False)
    assert other.read_text() == "x\n"  # what the try does not own is not held up
    lifecycle.confirm(host, change.id)
    apply_or_show(host, Plan("edit app.conf", [FileEdit(conf, files.read_tracked(conf),
                                                        "mine = 3\n", intent=MINE)]), False)
    assert conf.read_text() == "mine = 3\n"


def test_the_command_line_refuses_it_in_one_line(
        host: Host, capsys: pytest.CaptureFixture[str]) -> None:
    (host.root / "etc/zsn").mkdir()
    plan = plan_set_endpoint(host, "wg0", "a.example.com")
    plan.steps.append(forwarding(host, "1").steps[0])
    change = lifecycle.begin(host, plan, 60, "zsn test").change
    argv = ["--root", str(host.root), "wg", "endpoint", "wg0", "b.example.com"]
    assert cli.main(argv) == 2
    assert capsys.readouterr().err == (
        f"zsn wg: invalid: file /etc/zsn/wireguard.json belongs to change {change.id} "
        f"(clients of wg0 connect to a.example.com), still being tried: keep it (zsn confirm "
        f"{change.id}) or roll it back (zsn rollback {change.id}) first\n")
    assert '"a.example.com"' in host.path("/etc/zsn/wireguard.json").read_text()
    assert cli.main([*argv, "--dry-run"]) == 0  # a plan to look at changes nothing
    lifecycle.roll_back(host, change.id)
    assert cli.main(argv) == 0


def test_the_guardian_leaves_what_changed_since_and_force_restores_it(
        host: Host, capsys: pytest.CaptureFixture[str]) -> None:
    forward = host.path("/proc/sys/net/ipv4/ip_forward")
    change = lifecycle.begin(host, plan_of(host), 2, "zsn test").change
    forward.write_text("2\n")  # another tool's deliberate change, after the try
    wait_state(host, change.id, (records.INCOMPLETE, records.ROLLED_BACK), 15)
    assert forward.read_text() == "2\n", "the guardian undid a later change"
    assert host.path("/etc/app.conf").read_text() == "old = 1\n"  # the rest is put back
    assert change.after["sysctl net.ipv4.ip_forward"] == "1"
    ended = Store(host).load(change.id)
    note = (f"sysctl net.ipv4.ip_forward changed since the try (was 1, now 2): left as it "
            f"is (zsn rollback {change.id} --force restores it)")
    assert ended.outcome["left"] == [note]
    assert ended.outcome["changed"] == ["sysctl net.ipv4.ip_forward"]
    assert ended.outcome["by"] == "the guardian, at the deadline"
    assert cli.main(["--root", str(host.root), "pending", "--all"]) == 0
    assert f"{change.id}  test change  rollback incomplete at " in capsys.readouterr().out
    assert cli.main(["--root", str(host.root), "rollback", change.id]) == 1  # still left
    assert forward.read_text() == "2\n"
    capsys.readouterr()
    assert cli.main(["--root", str(host.root), "rollback", change.id, "--force"]) == 0
    assert forward.read_text() == "0\n"
    assert "restored: net.ipv4.ip_forward = 0" in capsys.readouterr().out
    assert Store(host).load(change.id).state == records.ROLLED_BACK


def test_a_rollback_by_hand_keeps_a_file_written_since_unless_forced(host: Host) -> None:
    conf = host.path("/etc/app.conf")
    change = lifecycle.begin(host, plan_of(host), 60, "zsn test").change
    conf.write_text("someone = else\n")
    rolled = lifecycle.roll_back(host, change.id)
    assert rolled.state == records.INCOMPLETE and conf.read_text() == "someone = else\n"
    assert rolled.outcome["changed"] == ["file /etc/app.conf"]
    assert host.path("/proc/sys/net/ipv4/ip_forward").read_text() == "0\n"
    forced = lifecycle.roll_back(host, change.id, force=True)
    assert forced.state == records.ROLLED_BACK and conf.read_text() == "old = 1\n"
