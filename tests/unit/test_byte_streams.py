"""Moving bytes between programs (`zsn.system.streams`: Child, Pump, RateLimit), with
real child processes standing in for zfs send and zfs receive."""

from __future__ import annotations

import hashlib
import os
import sys
import time
from pathlib import Path

import pytest

from tests.lab.netns import wait_for
from zsn.system.streams import Child, Pump, RateLimit, make_pipe

PY = sys.executable
MIB = 1 << 20


def producer(path: Path, size: int) -> list[str]:
    """A sender: writes `size` random bytes (also kept in `path` to compare)."""
    path.write_bytes(os.urandom(size))
    return ["cat", str(path)]


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_a_pump_splices_everything_from_one_program_into_another(tmp_path: Path) -> None:
    source = tmp_path / "source"
    read_end, write_end = make_pipe()
    sender = Child(producer(source, 5 * MIB + 123), stdout=write_end)
    into_read, into_write = make_pipe()
    out = tmp_path / "out"
    receiver_child = Child(["sh", "-c", f"cat > {out}"], stdin=into_read)
    pump = Pump(read_end, into_write)
    pump.run()
    os.close(into_write)
    assert pump.ended == "eof" and pump.moved == 5 * MIB + 123
    assert sender.wait(10) == 0 and receiver_child.wait(10) == 0
    assert digest(out) == digest(source)
    os.close(read_end)


def test_a_pump_whose_reader_went_away_says_so(tmp_path: Path) -> None:
    read_end, write_end = make_pipe()
    sender = Child(["cat", "/dev/zero"], stdout=write_end)
    into_read, into_write = make_pipe()
    reader = Child(["head", "-c", "1000"], stdin=into_read)
    pump = Pump(read_end, into_write)
    pump.run()
    assert pump.ended == "sink closed" and pump.moved >= 1000
    assert reader.wait(10) == 0
    sender.stop()
    os.close(read_end)
    os.close(into_write)


def test_a_pump_into_a_slower_reader_moves_big_pieces(tmp_path: Path,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    """A reader that takes 16 KiB at a time (as ssh does) and is the slower side: the
    pump lets the sink drain between splices instead of one splice per read."""
    calls = []
    splice = os.splice

    def counted(source: int, sink: int, count: int) -> int:
        calls.append(count)
        return splice(source, sink, count)

    monkeypatch.setattr(os, "splice", counted)
    source, out = tmp_path / "source", tmp_path / "out"
    read_end, write_end = make_pipe()
    sender = Child(producer(source, 8 * MIB), stdout=write_end)
    into_read, into_write = make_pipe()
    slow = ("import os, sys, time\nwith open(sys.argv[1], 'wb') as out:\n"
            "    while chunk := os.read(0, 16384):\n        out.write(chunk)\n"
            "        time.sleep(0.001)\n")
    reader = Child([PY, "-c", slow, str(out)], stdin=into_read)
    pump = Pump(read_end, into_write)
    pump.run()
    os.close(into_write)
    assert pump.ended == "eof" and pump.moved == 8 * MIB
    assert sender.wait(10) == 0 and reader.wait(30) == 0
    assert digest(out) == digest(source)
    assert len(calls) < 8 * MIB // (64 * 1024), len(calls)  # one per read: ~512
    os.close(read_end)


def test_the_rate_limit_is_even_second_by_second() -> None:
    now = [0.0]
    limit = RateLimit(1_000_000, clock=lambda: now[0],
                      sleep=lambda seconds: now.__setitem__(0, now[0] + seconds))
    moved: list[tuple[float, int]] = []
    total = 0
    while now[0] < 10:
        count = limit.grant(1 << 20)
        limit.spend(count)
        total += count
        moved.append((now[0], total))
        now[0] += 0.0003  # the splice itself takes a little time
    for second in range(1, 9):
        start = max(t for t, _ in moved if t <= second)
        end = max(t for t, _ in moved if t <= second + 1)
        window = dict(moved)[end] - dict(moved)[start]
        assert 0.95e6 <= window / (end - start) <= 1.05e6
    assert limit.burst == 50_000  # a twentieth of a second: bursts stay small


def test_a_stall_under_a_quarter_second_is_made_up_within_its_second() -> None:
    """The sender's process not scheduled for 0.15 s (a busy machine): the bytes it lost
    go in the same second, so the second-by-second rate holds; a longer stall is made
    up only to a quarter of a second's bytes."""
    now = [0.0]
    limit = RateLimit(1_000_000, clock=lambda: now[0],
                      sleep=lambda seconds: now.__setitem__(0, now[0] + seconds))
    moved: list[tuple[float, int]] = []
    total = 0
    stalled: set[float] = set()
    while now[0] < 6:
        for start, length in ((2.3, 0.15), (4.2, 0.6)):
            if now[0] >= start and start not in stalled:
                stalled.add(start)
                now[0] += length
        count = limit.grant(1 << 20)
        limit.spend(count)
        total += count
        moved.append((now[0], total))
        now[0] += 0.0003

    def rate(first: float, last: float) -> float:
        start = max(t for t, _ in moved if t <= first)
        end = max(t for t, _ in moved if t <= last)
        return (dict(moved)[end] - dict(moved)[start]) / (end - start)

    assert 0.95e6 <= rate(2, 3) <= 1.05e6
    assert rate(4, 5) < 0.8e6  # 0.6 s lost, 0.25 s of it made up
    assert 0.95e6 <= rate(5, 6) <= 1.05e6


def test_a_real_limited_pump_takes_as_long_as_the_rate_says(tmp_path: Path) -> None:
    read_end, write_end = make_pipe()
    sender = Child(producer(tmp_path / "s", 2 * MIB), stdout=write_end)
    sink = os.open(os.devnull, os.O_WRONLY)
    started = time.monotonic()
    pump = Pump(read_end, sink, limit=RateLimit(4 * MIB))
    pump.run()
    assert pump.ended == "eof" and pump.moved == 2 * MIB
    assert time.monotonic() - started >= 0.45  # 2 MiB at 4 MiB/s, never faster
    sender.wait(10)
    os.close(sink)
    os.close(read_end)


def test_a_child_gives_lines_and_keeps_the_tail_of_stderr() -> None:
    code = ("import sys; print('one'); sys.stdout.flush(); "
            "sys.stderr.write('x' * 50000 + 'the end'); print('x' * 10000)")
    child = Child([PY, "-c", code], stdout="lines", stderr_tail_bytes=100,
                  max_line_bytes=64)
    assert child.next_line(10) == "one"
    assert child.next_line(10) == "x" * 64
    assert child.next_line(10) is None  # it closed its output
    assert child.wait(10) == 0
    assert child.stderr_tail().endswith("the end") and len(child.stderr_tail()) == 100


def test_a_child_that_does_not_stop_on_sigterm_is_killed() -> None:
    child = Child(["sh", "-c", "trap '' TERM; echo ready; sleep 60"], stdout="lines")
    assert child.next_line(10) == "ready"
    started = time.monotonic()
    child.stop(grace=0.5)
    assert child.returncode is not None and time.monotonic() - started < 10


def _gone(pid: int) -> bool:
    """Whether `pid` has ended (a zombie waiting for init to reap it counts)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except FileNotFoundError:
        return True
    return state in {"Z", "X"}


def test_stopping_a_child_ends_the_programs_it_started() -> None:
    """A shell's command holding the pipes open: the stop is prompt, not a wait for
    output that never ends, and leaves nothing running."""
    child = Child(["sh", "-c", "sleep 60 & echo $!; wait"], stdout="lines")
    grandchild = int(child.next_line(10) or 0)
    started = time.monotonic()
    child.stop(grace=5)
    assert time.monotonic() - started < 10
    wait_for(lambda: _gone(grandchild), 10, "the shell's command to end")
