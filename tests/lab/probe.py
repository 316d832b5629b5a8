"""Whether the path to an SSH server works, from a namespace (run with ip netns exec).

``once HOST PORT SOURCE TIMEOUT``: exit 0 when a TCP connect from SOURCE completes
in time (the kernel answers it: a slow guest's sshd need not have spoken yet).
``watch HOST PORT SOURCE TIMEOUT``: start a TCP connect every 50 ms (each given
TIMEOUT s, several in flight, so a lost SYN never hides the moment the path comes back)
and print ``up TIME`` / ``down TIME`` (time.time()) at each change, the first answered
connect after a cut marking when it came back. A
refusal is an answer: watching a port nothing listens on, the server's kernel answers
every SYN with a reset and no daemon forks a process per connect (on the kernel lab's
one emulated CPU, sshd doing so starved the very guardian being timed).
"""

from __future__ import annotations

import errno
import selectors
import socket
import sys
import time

INTERVAL = 0.05
ANSWERED = (0, errno.ECONNREFUSED)
"""A connect the server's kernel answered: accepted, or refused with a reset."""


def tcp_connect(host: str, port: int, source: str, timeout: float) -> bool:
    """Whether a TCP connect from `source` completes within `timeout` s."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as sock:
        sock.settimeout(timeout)
        try:
            sock.bind((source, 0))
            sock.connect((host, port))
        except OSError:
            return False
        return True


def watch(host: str, port: int, source: str, timeout: float) -> None:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    selector = selectors.DefaultSelector()
    started: dict[socket.socket, float] = {}
    state = ""
    next_start = 0.0

    def report(new: str, when: float) -> None:
        nonlocal state
        if new != state:
            state = new
            print(f"{new} {when:.3f}", flush=True)

    while True:
        now = time.monotonic()
        if now >= next_start:
            next_start = now + INTERVAL
            sock = socket.socket(family, socket.SOCK_STREAM)
            sock.setblocking(False)
            sock.bind((source, 0))
            code = sock.connect_ex((host, port))
            if code not in (0, errno.EINPROGRESS):
                sock.close()
                report("up" if code in ANSWERED else "down", time.time())
            else:
                started[sock] = now
                selector.register(sock, selectors.EVENT_WRITE)
        for key, _ in selector.select(max(0.0, next_start - time.monotonic())):
            ready = key.fileobj
            assert isinstance(ready, socket.socket)
            selector.unregister(ready)
            started.pop(ready, None)
            answered = ready.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR) in ANSWERED
            ready.close()
            report("up" if answered else "down", time.time())
        for sock, when in list(started.items()):
            if time.monotonic() - when > timeout:
                selector.unregister(sock)
                del started[sock]
                sock.close()
                report("down", time.time())


def main(args: list[str]) -> int:
    mode, host, port, source, timeout = args
    if mode == "once":
        return 0 if tcp_connect(host, int(port), source, float(timeout)) else 1
    watch(host, int(port), source, float(timeout))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
