"""Reading daemons' control sockets (WireGuard's UAPI, OpenVPN's management interface)
within one deadline and one size cap per exchange (see `zsn.system.limits`).

The protocol modules connect and speak; every byte they read comes through a
`BoundedReader`, which waits only for the deadline's time left and stops once the
budget is spent, so a socket that trickles or floods costs one deadline and a
bounded amount of memory, and becomes that daemon's error.
"""

from __future__ import annotations

import socket
from collections.abc import Iterator
from contextlib import contextmanager

from zsn.errors import SocketError
from zsn.system.limits import ByteBudget, Deadline

RECV_SIZE = 1 << 16


class ReplyTimeout(SocketError):
    """The daemon did not finish its answer before the exchange's deadline."""


class BoundedReader:
    """Reads from one connected stream socket under `deadline`, keeping at most
    `max_bytes`; `where` names the socket in errors."""

    def __init__(self, sock: socket.socket, where: str, deadline: Deadline,
                 max_bytes: int) -> None:
        self.sock = sock
        self.where = where
        self.deadline = deadline
        self.budget = ByteBudget(max_bytes)

    def recv(self) -> bytes:
        """The next chunk (``b""`` when the daemon closed the connection)."""
        with self._waiting("no complete answer", "connection lost"):
            data = self.sock.recv(RECV_SIZE)
        self.budget.take(len(data), self.where, SocketError)
        return data

    def send(self, data: bytes) -> None:
        with self._waiting("request not taken", "could not send"):
            self.sock.sendall(data)

    @contextmanager
    def _waiting(self, late: str, failed: str) -> Iterator[None]:
        """Wait at most the deadline's time left; failures become `SocketError`s."""
        self.sock.settimeout(self.deadline.check(self.where, ReplyTimeout))
        try:
            yield
        except TimeoutError:
            raise ReplyTimeout(f"{self.where}: {late} within {self.deadline.seconds:g} s") \
                from None
        except OSError as exc:
            raise SocketError(f"{self.where}: {failed} ({exc.strerror or exc})") from exc
