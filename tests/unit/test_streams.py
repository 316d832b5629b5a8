"""`zsn.system.streams.LineStream` against real child processes (sh, python)."""

from __future__ import annotations

import os
import sys
import threading
import time
from collections.abc import Callable

import pytest

from zsn.errors import CommandError
from zsn.system.streams import LineStream

PY = sys.executable


def _child(code: str) -> list[str]:
    return [PY, "-c", code]


def _wait_until(predicate: Callable[[], object], seconds: float = 10.0) -> None:
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        if predicate():
            return
        time.sleep(0.02)
    raise AssertionError("condition not reached")


def test_lines_arrive_in_order_and_the_exit_status_is_kept() -> None:
    with LineStream(["sh", "-c", "printf 'a\\nb\\n'; echo oops >&2; printf c; exit 3"]) as stream:
        assert stream.wait(10)
    assert stream.take_lines() == ["a", "b", "c"]
    assert stream.take_lines() == []
    assert stream.returncode == 3 and not stream.running
    assert stream.describe_end() == "sh exited with status 3: oops"


def test_an_overlong_line_is_cut_and_the_next_one_is_whole() -> None:
    code = "import sys; sys.stdout.write('x' * 100000 + '\\nnext\\n')"
    with LineStream(_child(code), max_line_bytes=64) as stream:
        assert stream.wait(10)
    assert stream.take_lines() == ["x" * 64, "next"]
    assert stream.cut_lines == 1


def test_lines_nobody_takes_are_capped_oldest_first() -> None:
    code = "for i in range(5000): print(i)"
    with LineStream(_child(code), max_buffered_bytes=1000) as stream:
        assert stream.wait(10)
    lines = stream.take_lines()
    assert sum(len(line) + 1 for line in lines) <= 1000
    assert lines[-1] == "4999" and stream.dropped_lines == 5000 - len(lines)


def test_a_stalled_child_is_killed_at_the_deadline() -> None:
    started = time.monotonic()
    stream = LineStream(["sleep", "60"], deadline=0.5).start()
    try:
        assert stream.wait(10), "the stalled child was not stopped"
    finally:
        stream.stop()
    assert time.monotonic() - started < 5
    assert stream.error == "sleep printed nothing zsn understands for 0.5 s; stopped it"
    assert stream.returncode is not None and stream.returncode < 0


def test_a_child_printing_garbage_is_killed_at_the_deadline() -> None:
    code = ("import time\nprint('1', flush=True)\n"
            "while True:\n print('garbage', flush=True)\n time.sleep(0.05)")
    stream = LineStream(_child(code), deadline=0.6, accept=str.isdigit).start()
    try:
        assert stream.wait(10)
    finally:
        stream.stop()
    assert stream.error is not None and "nothing more zsn understands" in stream.error
    assert stream.take_lines()[:2] == ["1", "garbage"]


def test_a_flooding_child_is_killed_before_the_deadline() -> None:
    stream = LineStream(["yes", "garbage"], deadline=60, accept=str.isdigit,
                        max_unaccepted_bytes=100_000).start()
    try:
        assert stream.wait(10)
    finally:
        stream.stop()
    assert stream.error == ("yes printed over 100000 bytes without a line zsn understands; "
                            "stopped it")


def test_stop_ends_a_running_child_and_can_be_repeated() -> None:
    stream = LineStream(["sh", "-c", "trap '' TERM; while :; do echo tick; sleep 0.1; done"])
    stream.start()
    _wait_until(lambda: stream.take_lines())
    pid = stream._process.pid  # type: ignore[union-attr]
    started = time.monotonic()
    stream.stop()
    stream.stop()
    assert not stream.running and time.monotonic() - started < 5
    with pytest.raises(ProcessLookupError):  # reaped: SIGKILL after the ignored SIGTERM
        os.kill(pid, 0)


def test_a_missing_program_is_a_command_error() -> None:
    with pytest.raises(CommandError, match="zsn-no-such-program: program not found"):
        LineStream(["zsn-no-such-program"]).start()


def test_stderr_keeps_only_its_tail() -> None:
    code = "import sys\nfor i in range(2000): print('line', i, file=sys.stderr)"
    with LineStream(_child(code), stderr_tail_bytes=100) as stream:
        assert stream.wait(10)
    tail = stream.stderr_tail()
    assert len(tail.encode()) <= 100 and tail.endswith("line 1999\n")


def test_the_owner_hears_of_new_lines_and_of_the_end() -> None:
    heard = threading.Event()
    with LineStream(["sh", "-c", "echo one; sleep 0.2"], on_output=heard.set) as stream:
        assert heard.wait(10)
        assert stream.wait(10)
    assert stream.take_lines() == ["one"]


def test_argv_must_be_a_list() -> None:
    with pytest.raises(TypeError):
        LineStream("zpool iostat")
