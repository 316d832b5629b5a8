"""Unix sockets that misbehave as a broken or hostile daemon would, for tests of zsn's
deadlines and size caps.

Each runs in its own process (so the test's own threads and the GIL do not slow it
down), accepts any number of connections and serves each in a thread:

- ``trickle``: accepts, then sends one byte a second forever (a per-recv timeout
  never fires);
- ``flood``: accepts, then sends garbage (no newline, ever) as fast as the reader
  takes it;
- ``lines``: accepts, then sends an endless stream of short ``>LOG:`` lines (what
  OpenVPN's management interface sends in real time, which a client skips).

Run as ``python -m tests.lab.hostile MODE PATH``; tests use `hostile_socket`.
"""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

MODES = ("trickle", "flood", "lines")
_REPO = Path(__file__).resolve().parents[2]


def _trickle(conn: socket.socket) -> None:
    while True:
        conn.sendall(b"x")
        time.sleep(1.0)


def _flood(conn: socket.socket) -> None:
    block = (b"garbage=" + b"\xfe" * 4088 + b"\x00\x01\x02\x03\x04\x05\x06\x07") * 16
    while True:
        conn.sendall(block)


def _lines(conn: socket.socket) -> None:
    block = b">LOG:1700000000,,still here\r\n" * 2048
    while True:
        conn.sendall(block)


def _serve_one(conn: socket.socket, talk: Callable[[socket.socket], None]) -> None:
    with conn, contextlib.suppress(OSError):
        talk(conn)


def serve(mode: str, path: str) -> None:
    talk = {"trickle": _trickle, "flood": _flood, "lines": _lines}[mode]
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    with contextlib.suppress(FileNotFoundError):
        os.unlink(path)
    # Listen first, then move into place: the path never names a socket that refuses.
    server.bind(path + ".new")
    server.listen(16)
    os.rename(path + ".new", path)
    while True:
        conn, _ = server.accept()
        threading.Thread(target=_serve_one, args=(conn, talk), daemon=True).start()


@contextlib.contextmanager
def hostile_socket(path: Path, mode: str) -> Iterator[Path]:
    """Serve `mode` on the unix socket `path` in a child process while the block runs;
    the process is stopped and the socket removed afterwards, even when a test fails."""
    assert mode in MODES, mode
    path.parent.mkdir(parents=True, exist_ok=True)
    process = subprocess.Popen(
        [sys.executable, "-m", "tests.lab.hostile", mode, str(path)], cwd=_REPO,
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 10
        while not path.exists():
            if process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"hostile {mode} server did not start at {path}")
            time.sleep(0.02)
        yield path
    finally:
        process.kill()
        process.wait(timeout=5)
        path.unlink(missing_ok=True)


if __name__ == "__main__":
    serve(sys.argv[1], sys.argv[2])
