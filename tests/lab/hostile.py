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

And datagram sockets as a wpa_supplicant control interface that lies or hangs:

- ``wpa-silent``: takes every command, answers none;
- ``wpa-endless``: answers like wpa_supplicant (replies shaped as the captures in
  tests/fixtures/wlan), but ``BSS NEXT-N`` always has one more access point, each
  reply a little late yet well within any per-request limit.

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

MODES = ("trickle", "flood", "lines", "wpa-silent", "wpa-endless")
WPA_REPLY_DELAY = 0.2
"""Seconds a ``wpa-endless`` daemon takes per reply."""
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


def _wpa_reply(command: str) -> bytes | None:
    """What the endless daemon answers: a disconnected station with one more BSS
    after every one (the BSS entries shaped like wpa_cli-bss.home-wpa2.txt)."""
    if command == "STATUS":
        return b"wpa_state=DISCONNECTED\naddress=02:00:00:00:00:00\n"
    if command.startswith("BSS "):
        word = command.split()[1]
        number = 0 if word == "FIRST" else int(word.removeprefix("NEXT-")) + 1
        return (f"id={number}\nbssid=02:00:00:{number >> 16 & 255:02x}:{number >> 8 & 255:02x}:"
                f"{number & 255:02x}\nfreq=2412\nlevel=-40\nflags=[ESS]\n"
                f"ssid=endless-{number}\n").encode()
    if command.startswith("LIST_NETWORKS"):
        return b"network id / ssid / bssid / flags\n"
    if command in ("ATTACH", "DETACH", "SCAN"):
        return b"OK\n"
    return b"FAIL\n"


def serve_wpa(mode: str, path: str) -> None:
    server = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    with contextlib.suppress(FileNotFoundError):
        os.unlink(path)
    server.bind(path + ".new")
    os.rename(path + ".new", path)
    while True:
        data, sender = server.recvfrom(65536)
        if mode == "wpa-silent" or not sender:
            continue
        reply = _wpa_reply(data.decode(errors="replace").strip())
        if reply is not None:
            time.sleep(WPA_REPLY_DELAY)
            with contextlib.suppress(OSError):
                server.sendto(reply, sender)


def serve(mode: str, path: str) -> None:
    if mode.startswith("wpa-"):
        serve_wpa(mode, path)
        return
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
