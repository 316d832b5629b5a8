"""`zsn.tui.driver.QuietDriver` on a real terminal: a key arrives, and quitting ends
the input thread (the stop wakes it), so the process exits."""

from __future__ import annotations

import fcntl
import os
import select
import struct
import subprocess
import sys
import termios
import time
from collections.abc import Callable
from pathlib import Path

WAIT = 60.0


def _read_until(master: int, drawn: bytearray, done: Callable[[bytes], bool],
                what: str, process: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + WAIT
    while not done(bytes(drawn)):
        assert time.monotonic() < deadline, f"{what}: {bytes(drawn[-300:])!r}"
        assert process.poll() is None, f"{what}: exited {process.returncode}"
        if select.select([master], [], [], 0.2)[0]:
            drawn += os.read(master, 65536)


def test_q_quits_and_the_input_thread_ends(tmp_path: Path) -> None:
    master, slave = os.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 80, 0, 0))
    process = subprocess.Popen([sys.executable, "-m", "zsn", "--root", str(tmp_path)],
                               stdin=slave, stdout=slave, stderr=slave,
                               env={**os.environ, "TERM": "xterm-256color"},
                               start_new_session=True)
    os.close(slave)
    try:
        drawn = bytearray()
        _read_until(master, drawn, lambda out: b"\x1b[24;1H" in out, "the first frame",
                    process)
        os.write(master, b"q")
        deadline = time.monotonic() + WAIT
        while process.poll() is None:  # reading what it writes as it ends
            assert time.monotonic() < deadline, f"q did not quit: {bytes(drawn[-300:])!r}"
            if select.select([master], [], [], 0.2)[0]:
                try:
                    drawn += os.read(master, 65536)
                except OSError:  # the terminal's other end closed: it ended
                    break
        assert process.wait(WAIT) == 0
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
        os.close(master)
