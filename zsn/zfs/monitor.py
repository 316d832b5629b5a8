"""One long-running `zpool iostat` per shown pool: started, read, restarted, stopped.

The pane (and `zsn zfs iostat`) tell the monitor which pools are shown; it keeps one
`zsn.system.streams.LineStream` per pool running, turns what they print into
`IostatBlock`s and a bandwidth history per vdev, and never lets a child misbehave
for long: one that stalls or prints garbage is killed by its stream's deadline, one
that dies is restarted after a back-off (1, 2, 4 ... 30 s), and the reason is kept
for the pane to show until a block arrives again. Thread-safe: the reader threads
call `on_update`, the pane's worker and UI threads call the rest.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from zsn.errors import ZsnError
from zsn.system.streams import LineStream
from zsn.zfs.iostat import BlockAssembler, History, iostat_argv, looks_like_row
from zsn.zfs.model import IostatBlock

ENV = {"LC_ALL": "C"}
BACKOFF_FIRST = 1.0
BACKOFF_MAX = 30.0


def deadline_for(interval: float) -> float:
    """How long a stream may go without printing a row before it is killed."""
    return max(10.0, 3 * interval + 5.0)


@dataclass(frozen=True)
class PoolIostat:
    pool: str
    latest: IostatBlock | None
    """The last complete block, ``None`` until the first arrives."""
    error: str | None
    """Why the stream is not delivering (it died, stalled, printed garbage)."""
    running: bool


class _PoolStream:
    def __init__(self, pool: str) -> None:
        self.pool = pool
        self.stream: LineStream | None = None
        self.assembler = BlockAssembler(pool)
        self.latest: IostatBlock | None = None
        self.error: str | None = None
        self.backoff = BACKOFF_FIRST
        self.restart_at = 0.0
        self.expected_rows: int | None = None


class IostatMonitor:
    def __init__(self, zpool: str, interval: float, *, history_length: int = 60,
                 on_update: Callable[[], None] | None = None, deadline: float | None = None,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.zpool = zpool
        self.interval = interval
        self.deadline = deadline if deadline is not None else deadline_for(interval)
        self.history = History(history_length)
        self._on_update = on_update
        self._clock = clock
        self._lock = threading.RLock()
        self._pools: dict[str, _PoolStream] = {}

    def watch(self, pools: Iterable[str], rows: dict[str, int] | None = None) -> None:
        """Keep a stream running for each of `pools` and none for any other pool.

        `rows` (pool -> rows per block, from its vdev tree) lets the first block show at
        once instead of an interval later."""
        wanted = list(dict.fromkeys(pools))
        with self._lock:
            for pool in [p for p in self._pools if p not in wanted]:
                self._stop_one(self._pools.pop(pool))
                self.history.forget(pool)
            for pool in wanted:
                entry = self._pools.get(pool)
                if entry is None:
                    entry = self._pools[pool] = _PoolStream(pool)
                    self._start(entry)
                if rows and pool in rows and entry.expected_rows != rows[pool]:
                    entry.expected_rows = rows[pool]
                    entry.assembler.expect(rows[pool])

    def poll(self) -> dict[str, PoolIostat]:
        """Read what the streams printed, restart the dead ones that are due."""
        now = self._clock()
        with self._lock:
            for entry in self._pools.values():
                self._drain(entry)
                stream = entry.stream
                if stream is not None and not stream.running:
                    self._drain(entry)  # what it printed between the two looks
                    entry.error = self._why_it_ended(entry, stream)
                    entry.stream = None
                    entry.restart_at = now + entry.backoff
                    entry.backoff = min(BACKOFF_MAX, entry.backoff * 2)
                    entry.assembler = BlockAssembler(entry.pool)
                    if entry.expected_rows:
                        entry.assembler.expect(entry.expected_rows)
                if entry.stream is None and now >= entry.restart_at:
                    self._start(entry)
            return {pool: PoolIostat(pool, e.latest, e.error, e.stream is not None)
                    for pool, e in self._pools.items()}

    def stop(self) -> None:
        """Stop every stream (the pane was hidden, or zsn is quitting)."""
        with self._lock:
            for entry in self._pools.values():
                self._stop_one(entry)
            self._pools.clear()

    @property
    def pools(self) -> list[str]:
        with self._lock:
            return list(self._pools)

    # -- internals ---------------------------------------------------------------
    def _start(self, entry: _PoolStream) -> None:
        stream = LineStream(iostat_argv(self.zpool, entry.pool, self.interval), env=ENV,
                            deadline=self.deadline, accept=looks_like_row,
                            on_output=self._on_update)
        try:
            entry.stream = stream.start()
        except ZsnError as exc:
            entry.error = str(exc)
            entry.stream = None
            entry.restart_at = self._clock() + entry.backoff
            entry.backoff = min(BACKOFF_MAX, entry.backoff * 2)

    def _stop_one(self, entry: _PoolStream) -> None:
        if entry.stream is not None:
            entry.stream.stop()
            entry.stream = None

    def _drain(self, entry: _PoolStream) -> None:
        stream = entry.stream
        if stream is None:
            return
        blocks: list[IostatBlock] = []
        for line in stream.take_lines():
            try:
                blocks.extend(entry.assembler.feed(line))
            except ZsnError as exc:
                entry.error = str(exc)  # shown; the stream's deadline ends a garbage run
        if not stream.running:
            blocks.extend(entry.assembler.finish())
        for block in blocks:
            self.history.add(block)
            entry.latest = block
            entry.error = None
            entry.backoff = BACKOFF_FIRST

    def _why_it_ended(self, entry: _PoolStream, stream: LineStream) -> str:
        if "no pools available" in stream.stderr_tail() or \
                "no such pool" in stream.stderr_tail():
            return f"pool {entry.pool} is gone (zpool iostat: no such pool)"
        return stream.describe_end()
