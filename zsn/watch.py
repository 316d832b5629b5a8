"""A reader in a daemon thread of its own, so a slow read never holds up whoever asks.

`Watch(read, empty, every=...)`: `want(wanted)` says what to read and starts the thread
(a different `key(wanted)` than before wakes it at once); `latest()` gives the last
reading without waiting (`empty` until the first); the thread reads again every `every`
seconds (None: never by itself) or when woken (`wake()`), until `stop()`. A read that
fails with `OSError` or `ZsnError` keeps the last reading and sets `error` (None again
after a good one); `on_reading(reading, error)`, if given, is called in the thread
after each read.

Used where a reading costs seconds or more and the caller polls for it: the disks and
their SMART (`zsn.zfs.diskwatch.DiskWatch`), the pools' scrub histories
(`zsn.zfs.scrub_history.ScrubWatch`); and, woken by each poll (``every=None``), by every
pane for its live reads (`zsn.tui.panes.base.LivePane.poll`). No Textual here: ``zsn
serve`` and the panes share it.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Generic, TypeVar

from zsn.errors import ZsnError

Wanted = TypeVar("Wanted")
Reading = TypeVar("Reading")

def _same(wanted: object) -> object:
    return wanted


class Watch(Generic[Wanted, Reading]):
    """`read(wanted)` in a thread of its own; the module docstring has the details."""

    def __init__(self, read: Callable[[Wanted], Reading], empty: Reading, *,
                 every: float | None,
                 name: str = "zsn-watch", key: Callable[[Wanted], object] = _same,
                 on_reading: Callable[[Reading, str | None], None] | None = None) -> None:
        self.every = every
        """Seconds between two reads when nothing wakes the thread (read at each wait);
        None: it reads only when woken."""
        self.error: str | None = None
        """Why the last read failed (`latest` is then the reading before), or None."""
        self._read = read
        self._key = key
        self._on_reading = on_reading
        self._name = name
        self._wanted: tuple[Wanted, object] | None = None
        """What to read and its key; None until the first `want`."""
        self._latest = empty
        self._wake = threading.Event()
        self._stopped = threading.Event()
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None

    def want(self, wanted: Wanted) -> None:
        """Read `wanted` from now on; the first call starts the thread."""
        key = self._key(wanted)
        with self._lock:
            changed = self._wanted is None or key != self._wanted[1]
            self._wanted = wanted, key
            if self._thread is None and not self._stopped.is_set():
                self._thread = threading.Thread(target=self._loop, daemon=True,
                                                name=self._name)
                self._thread.start()  # its first read is of `wanted`: no wake needed
            elif changed:
                self._wake.set()

    def latest(self) -> Reading:
        """The last reading (the `empty` one before the first), at once."""
        with self._lock:
            return self._latest

    def wake(self) -> None:
        """Read again now (or as soon as the read under way ends)."""
        self._wake.set()

    def stop(self) -> None:
        """End the thread after the read under way (if any); `latest` keeps working."""
        self._stopped.set()
        self._wake.set()

    @property
    def running(self) -> bool:
        """Whether the thread is alive (started and not yet ended)."""
        thread = self._thread
        return thread is not None and thread.is_alive()

    def _loop(self) -> None:
        while not self._stopped.is_set():
            self._wake.clear()
            with self._lock:
                assert self._wanted is not None  # the thread starts in `want`
                wanted = self._wanted[0]
            error: str | None
            try:
                reading, error = self._read(wanted), None
            except (OSError, ZsnError) as exc:
                reading, error = self.latest(), str(exc)
            with self._lock:
                self._latest, self.error = reading, error
            if self._on_reading is not None:
                self._on_reading(reading, error)
            self._wake.wait(self.every)
