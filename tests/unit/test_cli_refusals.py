"""Exit statuses and words as the README promises: 0 done, 1 a daemon, file or program
failed, 2 input refused; every refusal, the argument parser's included, is one line on
stderr, and nothing a command prints carries a raw control character."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.terminal_scan import HOSTILE, raw_controls
from zsn import cli, domains
from zsn.errors import ZsnError
from zsn.exporter.prometheus import MetricFamily, render
from zsn.plan import ApplyError
from zsn.terminal import message_line, safe_output


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    try:
        code = cli.main(list(argv))
    except SystemExit as exited:
        code = exited.code if isinstance(exited.code, int) else 1
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.parametrize("group", sorted(
    set(domains.command_groups()) - {group.name for group in domains.CHANGE_GROUPS}))
def test_a_group_without_its_action_is_refused_in_one_line(
        capsys: pytest.CaptureFixture[str], group: str) -> None:
    code, out, err = run(capsys, group)
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and err.startswith(f"zsn {group}: invalid: ")
    assert f"'zsn {group} --help' shows the usage" in err


@pytest.mark.parametrize("argv", [
    ["--bogus"], ["--refresh", "0"], ["peer", "add", "--bogus"], ["zfs", "iostat", "-x"],
    ["link", "create", "bond", "b0"], ["link", "create", "vlan", "v0", "--parent", "e",
                                       "--id", "five"],
])
def test_argument_parser_refusals_are_one_line_exit_2(capsys: pytest.CaptureFixture[str],
                                                      argv: list[str]) -> None:
    code, out, err = run(capsys, *argv)
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and ": invalid: " in err and "usage:" not in err


def test_a_name_with_a_control_character_is_refused_by_zsn(
        capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    code, out, err = run(capsys, "--root", str(tmp_path), "link", "create", "bridge",
                         "br\x1b]52;c;eA==\x07", "--config-only", "--dry-run")
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and "control or invisible character \\x1b" in err
    assert raw_controls(err) == []


def test_whatever_a_command_prints_goes_out_escaped(capsys: pytest.CaptureFixture[str]) -> None:
    with safe_output():
        import sys

        for text in HOSTILE:
            print(text)
            print(text, file=sys.stderr)
    out, err = capsys.readouterr()
    assert raw_controls(out) == [] and raw_controls(err) == []
    assert out.count("\n") == len(HOSTILE) + 1  # the one line feed inside HOSTILE[6] kept
    assert "\\x1b]52;c;SE9TVElMRQ==\\x07clip" in out


def test_an_error_of_several_lines_is_printed_as_one() -> None:
    error = ApplyError("link: failed at 'set eth1 up': busy", ["create bond0"],
                       ["create bond0"], [])
    assert message_line(str(error)) == ("link: failed at 'set eth1 up': busy; "
                                        "undone: create bond0")
    assert "\n" not in message_line(str(ZsnError("a\n\n  b \n")))


def test_prometheus_labels_carry_no_control() -> None:
    family = MetricFamily("zsn_zfs_pool_health", "gauge", "health")
    family.add({"pool": "tank\x1b]52;c;eA==\x07", "state": 'a"b\\c\nd'}, 1)
    text = render([family])
    assert raw_controls(text) == []
    assert 'pool="tank\\\\x1b]52;c;eA==\\\\x07"' in text
    assert 'state="a\\"b\\\\c\\\\x0ad"' in text


@pytest.mark.parametrize(("argv", "nearest"), [
    (["peers", "list"], "did you mean 'peer'?"),
    (["lnk", "list"], "did you mean 'link'?"),
    (["xyzzy"], "commands: peer, "),
])
def test_an_unknown_command_is_named_with_the_nearest_one(
        capsys: pytest.CaptureFixture[str], argv: list[str], nearest: str) -> None:
    code, out, err = run(capsys, *argv)
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and err.startswith(f"zsn: invalid: unknown command {argv[0]!r}")
    assert nearest in err and "--export" not in err


@pytest.mark.parametrize(("section", "nearest"), [
    ("bogus", ""), ("wiregaurd", " (did you mean 'wireguard'?)")])
def test_an_unknown_export_section_is_refused_input(
        capsys: pytest.CaptureFixture[str], tmp_path: Path, section: str, nearest: str) -> None:
    code, out, err = run(capsys, "--root", str(tmp_path), "--export", section)
    assert code == 2 and out == ""
    assert err == (f"zsn: invalid: unknown section {section!r}{nearest} "
                   "(known: links, openvpn, wireguard, wlan, zfs)\n")


def test_the_ui_without_a_terminal_refuses_in_one_line(tmp_path: Path) -> None:
    """stdin /dev/null and stdout a pipe: the TUI would run until killed."""
    import subprocess
    import sys

    result = subprocess.run([sys.executable, "-m", "zsn", "--root", str(tmp_path)],
                            stdin=subprocess.DEVNULL, capture_output=True, text=True,
                            timeout=60, check=False)
    assert result.returncode == 2 and result.stdout == ""
    assert result.stderr == ("zsn: invalid: the terminal UI needs a terminal on stdin and "
                             "stdout (for scripts: zsn --export, or a COMMAND)\n")


def test_the_ui_whose_terminal_goes_away_exits(tmp_path: Path) -> None:
    """The SSH session drops and no SIGHUP reaches zsn (it runs in a session of its own,
    as under a program that set the signal aside): zsn sees its terminal hung up and
    exits with 129, rather than reading end-of-file at half a core for ever."""
    import fcntl
    import os
    import select
    import struct
    import subprocess
    import sys
    import termios
    import time

    master, slave = os.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 80, 0, 0))
    process = subprocess.Popen([sys.executable, "-m", "zsn", "--root", str(tmp_path)],
                               stdin=slave, stdout=slave, stderr=slave,
                               env={**os.environ, "TERM": "xterm-256color"},
                               start_new_session=True)  # no controlling terminal: no SIGHUP
    os.close(slave)
    try:
        drawn = bytearray()
        deadline = time.monotonic() + 60
        while b"\x1b[24;1H" not in drawn:  # the first frame reached the last row
            assert time.monotonic() < deadline and process.poll() is None, bytes(drawn[-500:])
            if select.select([master], [], [], 0.2)[0]:
                drawn += os.read(master, 65536)
        os.close(master)
        closed = time.monotonic()
        assert process.wait(30) == 129
        assert time.monotonic() - closed < 10  # checked every 2 s; a busy machine is slow
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
