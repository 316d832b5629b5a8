"""`zsn link ...`: the fixed flags, dry runs, exit statuses; the SSH session's links."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.unit.links.conftest import captured_session, captured_snapshot
from zsn import cli
from zsn.errors import AccessDeniedError
from zsn.links import actions, lint
from zsn.system import files
from zsn.system.host import Host
from zsn.tries import session as sessions
from zsn.tries.session import parse_ssh_connection


@pytest.fixture
def live(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """`zsn link` sees the lab's captured links; the config root is empty."""
    snapshot = captured_snapshot()

    def read(host: Host, environ: object = None) -> actions.Context:
        return actions.Context(host, snapshot, set(), None)

    monkeypatch.setattr(actions.Context, "read", classmethod(
        lambda cls, host, environ=None: read(host)))
    return tmp_path


def test_issue_flags_for_bond_vlan_and_bridge(live: Path,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    root = str(live)
    assert cli.main(["--root", root, "link", "create", "bond", "bond9", "--mode",
                     "active-backup", "--members", "vethbr-p,dum0", "--mtu", "1500",
                     "--miimon", "200", "--dry-run"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("Plan: create bond bond9 (active-backup: vethbr-p, dum0)\n")
    assert "  1. create bond bond9 (active-backup, miimon 200, mtu 1500)\n" in out
    assert cli.main(["--root", root, "link", "create", "vlan", "rr0.30", "--parent", "rr0",
                     "--id", "30", "--mtu", "9000", "--dry-run"]) == 0
    assert "create vlan rr0.30 (on rr0, id 30, mtu 9000)" in capsys.readouterr().out
    assert cli.main(["--root", root, "link", "create", "bridge", "br9", "--ports",
                     "vethbr-p", "--stp", "--dry-run"]) == 0
    assert "add port vethbr-p to br9" in capsys.readouterr().out
    assert cli.main(["--root", root, "link", "create", "bond", "bond9", "--mode", "802.3ad",
                     "--members", "vethbr-p", "--xmit-hash-policy", "layer3+4",
                     "--lacp-rate", "fast", "--dry-run"]) == 0


@pytest.mark.parametrize(("argv", "message"), [
    (["create", "vlan", "rr0.5000", "--parent", "rr0", "--id", "5000"], "outside 1-4094"),
    (["create", "bond", "b", "--mode", "lacp", "--members", "dum0"], "bond mode 'lacp'"),
    (["create", "bond", "b", "--mode", "802.3ad", "--members", "eth1x"], "already enslaved"),
    (["set", "rr0.10", "--mtu", "9500"], "raise rr0 first"),
    (["delete", "dum0"], "zsn deletes only bonds"),
    (["add-member", "ad0", "eth1x"], "eth1x is already enslaved to rr0"),
    (["add-member", "ad0", "eth3x"], "eth3x is already a member of ad0"),
    (["create", "vlan", "v", "--parent", "rr0", "--id", "ten"], "--id: not a whole number"),
    (["create", "vlan", "rr0.10x", "--parent", "rr0", "--id", "10"],
     "--id: rr0 already has VLAN 10"),
    (["create", "bond", "b", "--mode", "balance-rr", "--members", "dum0",
      "--xmit-hash-policy", "layer2"], "--xmit-hash-policy: a hash policy applies to"),
    (["create", "bond", "b", "--mode", "balance-rr", "--members", "dum0,lo"],
     "--members: lo is the loopback device"),
    (["set", "rr0", "--mtu", " 9000"], "--mtu: not a whole number"),
    (["create", "bond", "b", "--mode", "active-backup", "--members", "dum0", "--miimon",
      "-1"], "--miimon: not a whole number"),
])
def test_refusals_exit_2_with_one_line(live: Path, capsys: pytest.CaptureFixture[str],
                                       argv: list[str], message: str) -> None:
    assert cli.main(["--root", str(live), "link", *argv]) == 2
    err = capsys.readouterr().err
    assert err.startswith("zsn link: invalid: ") and message in err and err.count("\n") == 1


def test_list_under_another_root_says_links_are_the_kernels(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    for argv in (["link", "list"], ["link", "list", "--json"]):
        assert cli.main(["--root", str(tmp_path), *argv]) == 2
        err = capsys.readouterr().err
        assert err.startswith("zsn link: invalid: ") and err.count("\n") == 1
        assert "is not this machine's root: links are read from the kernel" in err


def test_lint_that_may_not_read_the_config_says_so_in_one_line(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    """Root can read anything, so the refusal is simulated where files are read."""
    (tmp_path / "etc/netplan").mkdir(parents=True)
    (tmp_path / "etc/netplan/01.yaml").write_text("network: {version: 2}\n")
    real = files.read_tracked

    def refused(path: Path, max_bytes: int = files.MAX_FILE_BYTES) -> files.FileSnapshot:
        if path.suffix == ".yaml":  # what read_tracked raises when the system refuses
            raise AccessDeniedError(f"{path}: permission denied (root needed?)")
        return real(path, max_bytes)

    monkeypatch.setattr(files, "read_tracked", refused)
    assert cli.main(["--root", str(tmp_path), "link", "lint"]) == 1
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err == (f"zsn link: error: {tmp_path}/etc/netplan/01.yaml: permission "
                            "denied (root needed?)\n")
    findings = lint.lint(Host(tmp_path))  # the pane and `show`: one finding among the rest
    assert [f.id for f in findings] == ["LINK000"]


def test_ssh_link_needs_the_confirmation_flag(live: Path, monkeypatch: pytest.MonkeyPatch,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    snapshot = captured_snapshot()
    session = captured_session(monkeypatch, "ad0", "10.0.20.2 40000 10.0.20.1 22")
    monkeypatch.setattr(actions.Context, "read", classmethod(
        lambda cls, host, environ=None: actions.Context(host, snapshot, set(), session)))
    monkeypatch.setattr(sessions, "find_session", lambda host, environ=None: session)
    argv = ["--root", str(live), "link", "set", "ad0", "--mtu", "9000"]
    assert cli.main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith("zsn link: invalid: this SSH session (from 10.0.20.2 to 10.0.20.1, "
                          "dev ad0) runs over ad0, eth3x (member of ad0), "
                          "eth4x (member of ad0); it changes ad0, eth3x, eth4x, which could "
                          "cut the session off. Try it (--try SECONDS: rolled back by itself "
                          "unless confirmed) or confirm with --confirm-ssh-link ad0\n")
    assert cli.main([*argv, "--dry-run"]) == 0  # the plan names the session's path
    assert "warning: this SSH session (from 10.0.20.2" in capsys.readouterr().out
    assert cli.main([*argv, "--dry-run", "--confirm-ssh-link", "ad0"]) == 0
    assert cli.main([*argv, "--dry-run", "--try", "30"]) == 0
    out = capsys.readouterr().out
    assert "Tried for 30 s: unless confirmed in time (zsn confirm ID)" in out
    assert "  - links: ad0, eth3x, eth4x as they were (master, MTU, up/down, addresses)" in out
    monkeypatch.setattr(sessions, "find_session", lambda host, environ=None: session)
    assert cli.main([*argv, "--confirm-ssh-link", "eth3x"]) == 2
    assert capsys.readouterr().err.startswith(
        "zsn link: invalid: this SSH session leaves by ad0, not eth3x. Try it (--try")


def test_ssh_connection_parsing_and_the_stack_below(monkeypatch: pytest.MonkeyPatch) -> None:
    assert parse_ssh_connection("192.0.2.7 51234 10.0.10.1 22") == ("192.0.2.7", "10.0.10.1")
    assert parse_ssh_connection("fe80::1%eth0 1 fe80::2%eth0 22") == ("fe80::1", "fe80::2")
    assert parse_ssh_connection("::ffff:192.0.2.7 1 ::ffff:10.0.0.1 22") == ("192.0.2.7",
                                                                            "10.0.0.1")
    assert parse_ssh_connection("garbage") is None
    session = captured_session(monkeypatch, "rr0.10", "10.0.10.2 40000 10.0.10.1 22")
    assert session is not None and session.link == "rr0.10"
    assert session.stack == (("rr0.10", ""), ("rr0", "vlan parent of rr0.10"),
                             ("eth1x", "member of rr0"), ("eth2x", "member of rr0"))


def test_session_found_by_local_address_alone(monkeypatch: pytest.MonkeyPatch) -> None:
    session = captured_session(monkeypatch, None, "198.51.100.9 40000 10.0.10.1 22")
    assert session is not None and session.link == "rr0.10"
    assert session.names == {"rr0.10", "rr0", "eth1x", "eth2x"}
    assert session.route == "no route"


def test_help_shows_the_confirmation_flag(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        cli.main(["link", "set", "--help"])
    assert "--confirm-ssh-link IFACE" in capsys.readouterr().out
