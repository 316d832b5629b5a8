"""The two bounds on every read from a daemon or a program: an overall deadline and a
size cap.

A timeout per ``recv`` or per ``read`` is not a deadline: a peer that sends one byte
a second never trips it and holds zsn forever. And a reader that keeps whatever
arrives is sunk by one that floods. So every reader in `zsn.system` (control
sockets in `zsn.system.sockets`, program output in `zsn.system.commands`, and any
stream reader added later) takes one `Deadline` for the whole exchange, asks it
for the time left before each wait, and counts what it keeps with a `ByteBudget`.
Both raise the error class the reader names (`SocketError`, `CommandError` ...),
with a message that says which limit was hit, so the caller reports it like any
other failure of that daemon.
"""

from __future__ import annotations

import time

from zsn.errors import ZsnError

MiB = 1 << 20


class Deadline:
    """A point in time an exchange must finish by (monotonic clock)."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self._at = time.monotonic() + seconds

    def remaining(self) -> float:
        """Seconds left; 0 once the deadline has passed."""
        return max(0.0, self._at - time.monotonic())

    @property
    def expired(self) -> bool:
        return time.monotonic() >= self._at

    def check(self, what: str, error: type[ZsnError]) -> float:
        """The seconds left, or `error` saying `what` did not finish in time."""
        left = self.remaining()
        if left <= 0:
            raise error(f"{what}: no complete answer within {self.seconds:g} s")
        return left


class ByteBudget:
    """How many bytes a reader may keep from one source."""

    def __init__(self, max_bytes: int) -> None:
        self.max_bytes = max_bytes
        self.used = 0

    def take(self, count: int, what: str, error: type[ZsnError]) -> None:
        """Account for `count` more bytes, or raise `error` once the cap is passed."""
        self.used += count
        if self.used > self.max_bytes:
            raise error(f"{what}: answer larger than {describe_size(self.max_bytes)}; "
                        "stopped reading")


def describe_size(count: int) -> str:
    return f"{count // MiB} MiB" if count >= MiB and count % MiB == 0 else f"{count} bytes"
