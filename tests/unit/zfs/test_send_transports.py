"""A stream's two ends (`zsn.zfs.transfer.run_stream` with a program or zsn's TCP
receiver), with real child processes standing in for zfs send and zfs receive."""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import threading
from pathlib import Path

import pytest

from tests.unit.test_byte_streams import MIB, PY, digest, producer
from zsn.zfs import receiver
from zsn.zfs.transfer import ProgramSink, TcpSink, run_stream

RECEIVER = Path(receiver.__file__)


def _run_receiver(tmp_path: Path, *argv: str) -> tuple[subprocess.Popen[str], str, int]:
    process = subprocess.Popen(
        [PY, str(RECEIVER), *argv], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
        stderr=subprocess.PIPE, text=True,
        env={**os.environ, "SSH_CONNECTION": "127.0.0.1 40000 127.0.0.1 22"})
    assert process.stdin is not None and process.stdout is not None
    process.stdin.write("tokentoken\n")
    process.stdin.flush()
    words = process.stdout.readline().split()
    assert words[:2] == ["listening", "127.0.0.1"], words
    return process, words[1], int(words[2])


def test_the_receiver_takes_only_the_connection_with_the_token(tmp_path: Path) -> None:
    out = tmp_path / "out"
    process, address, port = _run_receiver(tmp_path, "--discard-output", "sh", "-c",
                                           f"cat > {out}")
    intruder = socket.create_connection((address, port))
    intruder.sendall(b"wrongtoken" + b"data from someone else")
    with contextlib.suppress(ConnectionResetError):  # closed with the rest unread: a reset
        assert intruder.recv(10) == b""  # closed on it
    intruder.close()
    data = os.urandom(3 * MIB)
    with socket.create_connection((address, port)) as sock:
        sock.sendall(b"tokentoken" + data)
        sock.shutdown(socket.SHUT_WR)
        assert process.stdout is not None and process.stdin is not None
        assert process.stdout.readline().startswith("receiving ")
        assert process.stdout.readline().split() == ["exit", "0"]
    process.stdin.close()
    assert process.wait(10) == 0
    assert out.read_bytes() == data


def test_the_receiver_stops_its_program_when_zsn_goes_away(tmp_path: Path) -> None:
    process, address, port = _run_receiver(tmp_path, "sh", "-c", "cat > /dev/null")
    sock = socket.create_connection((address, port))
    sock.sendall(b"tokentoken" + b"partial")
    assert process.stdin is not None and process.stdout is not None
    assert process.stdout.readline().startswith("receiving ")
    process.stdin.close()  # the control channel: ssh ended
    assert process.wait(30) == 4
    sock.close()


def test_a_stream_through_zsns_receiver(tmp_path: Path) -> None:
    source, out = tmp_path / "source", tmp_path / "out"
    checked: list[str] = []
    sink = TcpSink([PY, str(RECEIVER), "--discard-output", "sh", "-c", f"cat > {out}"],
                   check_address=checked.append)
    os.environ["SSH_CONNECTION"] = "127.0.0.1 40000 127.0.0.1 22"
    try:
        outcome = run_stream(producer(source, 4 * MIB), sink, where="there")
    finally:
        del os.environ["SSH_CONNECTION"]
    assert outcome.error is None and outcome.moved == 4 * MIB
    assert checked == ["127.0.0.1"] and digest(out) == digest(source)


def test_a_receiver_that_fails_is_named_with_its_words(tmp_path: Path) -> None:
    script = ("head -c 100000 > /dev/null; echo 'cannot receive new filesystem stream: "
              "checksum mismatch or incomplete stream.' >&2; echo 'Partially received "
              "snapshot is saved.' >&2; exit 1")
    outcome = run_stream(["cat", "/dev/zero"], ProgramSink(["sh", "-c", script]),
                         where="on backup")
    assert outcome.error == (
        "zfs receive on backup failed: cannot receive new filesystem stream: checksum "
        "mismatch or incomplete stream. (the target kept what arrived: the same command "
        "resumes it)")
    assert not outcome.interrupted


def test_a_receiver_that_leaves_before_the_sender_closes_is_a_stream_that_went_through(
        tmp_path: Path) -> None:
    """zfs receive exits 0 once it read the stream's last record; on a loaded machine
    zfs send can close its end after that. Every byte was taken: it went through. A
    receiver that leaves while bytes are still to come has not."""
    left = tmp_path / "receiver-left"
    sender = ["sh", "-c", f"printf abc; while [ ! -e {left} ]; do sleep 0.05; done"]
    receiver = ["sh", "-c", f"head -c 3 > /dev/null; exec 0<&-; touch {left}"]
    outcome = run_stream(sender, ProgramSink(receiver), where="here")
    assert outcome.error is None and outcome.moved == 3
    left.unlink()
    more = ["sh", "-c", f"printf abc; while [ ! -e {left} ]; do sleep 0.05; done; printf d"]
    outcome = run_stream(more, ProgramSink(receiver), where="here")
    assert outcome.error == "zfs receive here failed: it exited 0 before the end of the " \
                            "stream, without a word"


def test_a_program_that_ends_without_a_word_is_told_by_how_it_ended() -> None:
    """A receiver killed (the kernel's OOM killer, an admin) or failing silently: the
    error says how it ended, not only that it said nothing."""
    killed = run_stream(["cat", "/dev/zero"], ProgramSink(
        ["sh", "-c", "head -c 1000 > /dev/null; kill -KILL $$"]), where="on backup")
    assert killed.error == "zfs receive on backup failed: it was killed by SIGKILL " \
                           "without a word"
    quiet = run_stream(["cat", "/dev/zero"], ProgramSink(
        ["sh", "-c", "head -c 1000 > /dev/null; exit 3"]), where="here")
    assert quiet.error == "zfs receive here failed: it exited with status 3 without a word"
    sender = run_stream(["sh", "-c", "kill -TERM $$"],
                        ProgramSink(["sh", "-c", "cat > /dev/null"]), where="here")
    assert sender.error == "zfs send failed: it was killed by SIGTERM without a word"


def test_a_remote_receiver_gets_bytes_only_once_it_runs(tmp_path: Path) -> None:
    """Nothing is paced into ssh's pipe while it connects (to go out in one burst)."""
    started = tmp_path / "started"
    sink = ProgramSink(["sh", "-c", f"sleep 0.5; touch {started}; echo @zsn-ready; "
                        "exec cat > /dev/null"], ready="@zsn-ready")
    sink.open()
    assert started.exists()
    sink.close()
    assert sink.wait(10) == 0
    refused = ProgramSink(["sh", "-c", "echo 'ssh: connect to host nas port 22: Connection "
                           "refused' >&2; exit 255"], ready="@zsn-ready")
    outcome = run_stream(["cat", "/dev/zero"], refused, where="on nas")
    assert outcome.error is not None and "Connection refused" in outcome.error


def test_the_receivers_start_is_told_apart_from_the_data(tmp_path: Path) -> None:
    """The record's setup_seconds: what went before the bytes could flow."""
    sink = ProgramSink(["sh", "-c", "sleep 0.5; echo @zsn-ready; exec cat > /dev/null"],
                       ready="@zsn-ready")
    outcome = run_stream(producer(tmp_path / "source", MIB), sink, where="there")
    assert outcome.error is None and outcome.moved == MIB
    assert 0.5 <= outcome.setup < outcome.seconds


def test_a_sender_that_fails_is_the_cause_shown(tmp_path: Path) -> None:
    outcome = run_stream(["sh", "-c", "echo \"cannot open 'x@y': dataset does not exist\" >&2;"
                          " exit 1"], ProgramSink(["sh", "-c", "cat > /dev/null; exit 1"]),
                         where="here")
    assert outcome.error == "zfs send failed: cannot open 'x@y': dataset does not exist"


def test_stopping_a_stream_ends_both_sides_and_says_it_was_interrupted(tmp_path: Path) -> None:
    stop = threading.Event()
    ticks: list[int] = []

    def tick(moved: int) -> None:
        ticks.append(moved)
        if moved > MIB:
            stop.set()

    outcome = run_stream(["cat", "/dev/zero"], ProgramSink(["sh", "-c", "cat > /dev/null"]),
                         where="here", limit=8 * MIB, on_tick=tick, stop=stop)
    assert outcome.interrupted and outcome.error == "stopped"
    assert outcome.moved > MIB and ticks


def test_a_stream_that_moves_nothing_is_stopped(tmp_path: Path) -> None:
    outcome = run_stream(["sleep", "60"], ProgramSink(["sh", "-c", "cat > /dev/null"]),
                         where="here", stall_seconds=0.5)
    assert outcome.interrupted and outcome.error == "no data moved for 0.5 s"


@pytest.mark.parametrize("bad", ["", "listening", "error no token"])
def test_a_receiver_that_does_not_listen_is_an_error(bad: str) -> None:
    from zsn.errors import ZsnError

    sink = TcpSink(["sh", "-c", f"read t; echo '{bad}'; echo 'python3: not found' >&2"])
    with pytest.raises(ZsnError, match="the receiver on the target did not start"):
        sink.open()
    sink.stop()
