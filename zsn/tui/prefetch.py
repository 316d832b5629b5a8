"""The first pane's first read, done in a child process while Textual loads.

Importing Textual and building the first screen takes a CPU core for ~0.1 s; so
does the first read of a big WireGuard server (pyroute2's import, the UAPI dump,
the config). In one process they would take turns (one interpreter lock); forked
before Textual is imported, the read runs on another core, and the pane shows its
rows in the first frame instead of a moment after it. The child only reads (the
domain's `live` function, the same the pane polls with), sends the snapshot back
pickled over a pipe and exits. Whatever goes wrong there, the pane just reads
again itself. No Textual here: `zsn.cli` uses this before importing it.
"""

from __future__ import annotations

import contextlib
import os
import pickle
import select
import signal
import threading
import time
from typing import Any

from zsn.domains import load
from zsn.system.host import Host


class Prefetch:
    """A snapshot on its way from a child process; `take` it once."""

    def __init__(self, pid: int, fd: int) -> None:
        self._pid = pid
        self._fd = fd
        self._data = bytearray()
        self._done = False
        self._lock = threading.Lock()

    @classmethod
    def start(cls, reader: str, host: Host) -> Prefetch | None:
        """Fork a child that runs `reader` (``"module:function"``, called with `host`)."""
        if not reader or not hasattr(os, "fork"):
            return None
        read_end, write_end = os.pipe()
        pid = os.fork()
        if pid == 0:  # the child: read, send, exit without running any cleanup of ours
            status = 1
            try:
                os.close(read_end)
                quiet = os.open(os.devnull, os.O_RDWR)
                for fd in (0, 1, 2):  # never write to the user's terminal
                    os.dup2(quiet, fd)
                data = pickle.dumps(load(reader)(host), protocol=pickle.HIGHEST_PROTOCOL)
                view = memoryview(data)
                while view:
                    view = view[os.write(write_end, view):]
                status = 0
            finally:
                os._exit(status)
        os.close(write_end)
        return cls(pid, read_end)

    def ready(self) -> bool:
        """True once the whole snapshot has arrived (or the child gave up); never blocks."""
        if not self._lock.acquire(blocking=False):
            return False  # being taken in another thread
        try:
            self._read(0.0)
            return self._done
        finally:
            self._lock.release()

    def take(self, timeout: float) -> Any | None:
        """The snapshot, waiting up to `timeout` seconds; None when the child failed or
        was too slow (it is then stopped) or the snapshot was taken already."""
        with self._lock:
            deadline = time.monotonic() + timeout
            while not self._done and time.monotonic() < deadline:
                self._read(max(0.0, deadline - time.monotonic()))
            if not self._done:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(self._pid, signal.SIGKILL)
                self._finish()
                return None
            data, self._data = bytes(self._data), bytearray()
        status = self._status
        if status != 0 or not data:
            return None
        try:
            return pickle.loads(data)  # our own child, over our own pipe
        except Exception:  # noqa: BLE001 - a bad payload: the pane reads itself
            return None

    def _read(self, timeout: float) -> None:
        """Read what has arrived (waiting up to `timeout` for the first bytes)."""
        while not self._done:
            ready, _, _ = select.select([self._fd], [], [], timeout)
            if not ready:
                return
            chunk = os.read(self._fd, 1 << 20)
            if chunk:
                self._data += chunk
            else:
                self._finish()
            timeout = 0.0

    def _finish(self) -> None:
        self._done = True
        os.close(self._fd)
        _, raw = os.waitpid(self._pid, 0)
        self._status = os.waitstatus_to_exitcode(raw)

    _status: int = -1
