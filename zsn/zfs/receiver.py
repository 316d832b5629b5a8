"""The receiving end of ``--via tcp``, run on the target as ``python3 -c SOURCE``.

zsn sends this file's text over SSH; nothing needs installing on the target but
Python 3 (standard library only, no zsn). The SSH session stays open as the control
channel:

1. zsn writes a random token (one line) on standard input: never on a command line,
   where other users of the target could read it with ps.
2. The receiver listens on the address the SSH connection came in on
   (``SSH_CONNECTION``), on a port the kernel picks, with a large receive buffer, and
   prints ``listening ADDRESS PORT``.
3. zsn connects and sends the token first; a connection that does not (someone else)
   is closed and the receiver waits on, up to a minute in all.
4. The accepted socket becomes the standard input of the program named by the
   arguments (``zfs receive -s -u DATASET``): the bytes go from the network to ZFS
   without passing through Python. Its output goes to the receiver's standard error
   (zsn shows it on failure), or nowhere with ``--discard-output`` (a probe's ``cat``);
   the receiver prints ``receiving PID``.
5. When the program exits the receiver prints ``exit STATUS``. If the control channel
   closes first (zsn was stopped or killed, the network went away), it stops the
   program with SIGTERM: ``zfs receive -s`` keeps what arrived, and a stalled socket
   never holds a dataset busy. Keep-alives on the data socket end a receive whose
   sender vanished within a minute too.

With ``--write-test DIRECTORY SECONDS BYTES`` it is the probe's target write instead
(`write_test`).
"""

import contextlib
import os
import select
import socket
import subprocess
import sys
import time
from typing import Optional, Tuple

LISTEN_SECONDS = 60
BUFFER_BYTES = 8 << 20
SO_RCVBUFFORCE = 33
"""Linux's number for it (Python names no constant): root sets a buffer past rmem_max."""


def say(*words: object) -> None:
    sys.stdout.write(" ".join(str(w) for w in words) + "\n")
    sys.stdout.flush()


def control_closed(timeout: float) -> bool:
    """True once the control channel (stdin) is closed."""
    ready, _, _ = select.select([0], [], [], timeout)
    return bool(ready) and not os.read(0, 4096)


def read_token() -> Optional[bytes]:
    line = b""
    while not line.endswith(b"\n"):
        chunk = os.read(0, 256)
        if not chunk or len(line) > 256:
            return None
        line += chunk
    return line.strip()


def listener() -> Tuple[socket.socket, str]:
    parts = os.environ.get("SSH_CONNECTION", "").split()
    address = parts[2] if len(parts) == 4 else "0.0.0.0"
    family = socket.AF_INET6 if ":" in address else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    if os.geteuid() == 0:  # past rmem_max, before listen: the window scale follows it
        with contextlib.suppress(OSError):
            sock.setsockopt(socket.SOL_SOCKET, SO_RCVBUFFORCE, BUFFER_BYTES)
    sock.bind((address.split("%")[0], 0))
    sock.listen(4)
    return sock, address


def accept(sock: socket.socket, token: bytes) -> Optional[socket.socket]:
    """The connection that sends the token first; None when none came in time or the
    control channel closed."""
    deadline = time.monotonic() + LISTEN_SECONDS
    while time.monotonic() < deadline:
        ready, _, _ = select.select([sock.fileno(), 0], [], [], deadline - time.monotonic())
        if 0 in ready and not os.read(0, 4096):
            return None
        if sock.fileno() not in ready:
            continue
        conn, _ = sock.accept()
        conn.settimeout(10)
        got = b""
        try:
            while len(got) < len(token):
                chunk = conn.recv(len(token) - len(got))
                if not chunk:
                    break
                got += chunk
        except OSError:
            got = b""
        if got == token:
            conn.settimeout(None)
            return conn
        conn.close()
    return None


def wait_for(child: "subprocess.Popen[bytes]") -> bool:
    """Wait until `child` exits (True) or the control channel closes first (False).
    Its exit wakes this at once through a pidfd (Linux 5.3, Python 3.9), so the end of
    a transfer is not a polling interval late; without one, a short poll."""
    pidfd = None
    with contextlib.suppress(AttributeError, OSError):
        pidfd = os.pidfd_open(child.pid)
    try:
        while child.poll() is None:
            watched = [0] if pidfd is None else [0, pidfd]
            ready, _, _ = select.select(watched, [], [], 0.05 if pidfd is None else 5.0)
            if 0 in ready and not os.read(0, 4096):
                return False
        return True
    finally:
        if pidfd is not None:
            os.close(pidfd)


def keep_alive(conn: socket.socket) -> None:
    conn.setsockopt(socket.SOL_SOCKET, socket.SO_KEEPALIVE, 1)
    for name, value in (("TCP_KEEPIDLE", 20), ("TCP_KEEPINTVL", 5), ("TCP_KEEPCNT", 8)):
        if hasattr(socket, name):
            conn.setsockopt(socket.IPPROTO_TCP, getattr(socket, name), value)


def write_test(directory: str, seconds: float, most: int) -> int:
    """The probe's target write: zeros for `seconds` (at most `most` bytes) into a new
    file in `directory`, synced; prints ``wrote BYTES SECONDS`` and removes the file."""
    path = os.path.join(directory, "zeros")
    block = bytes(1 << 20)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        started = time.monotonic()
        written = 0
        while written < most and time.monotonic() - started < seconds:
            written += os.write(fd, block)
        os.fsync(fd)
        took = time.monotonic() - started
    finally:
        os.close(fd)
        os.unlink(path)
    say("wrote", written, round(took, 3))
    return 0


def source() -> str:
    """This file's text, as zsn sends it to the target's ``python3 -c``."""
    with open(__file__, encoding="utf-8") as own:
        return own.read()


def main() -> int:
    args = sys.argv[1:]
    if args[:1] == ["--write-test"] and len(args) == 4:
        return write_test(args[1], float(args[2]), int(args[3]))
    discard = bool(args) and args[0] == "--discard-output"
    argv = args[1:] if discard else args
    token = read_token()
    if not token or not argv:
        say("error", "no token or no program")
        return 2
    sock, address = listener()
    say("listening", address, sock.getsockname()[1])
    conn = accept(sock, token)
    sock.close()
    if conn is None:
        say("error", "no connection from zsn")
        return 3
    keep_alive(conn)
    output = subprocess.DEVNULL if discard else 2
    child = subprocess.Popen(argv, stdin=conn.fileno(), stdout=output)
    conn.close()
    say("receiving", child.pid)
    if not wait_for(child):
        child.terminate()
        try:
            child.wait(30)
        except subprocess.TimeoutExpired:
            child.kill()
        return 4
    say("exit", child.returncode)
    control_closed(60)
    return 0


if __name__ == "__main__":
    sys.exit(main())
