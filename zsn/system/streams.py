"""Long-running programs read line by line, with every read bounded.

`zsn.system.commands.run` is for programs that finish; a `LineStream` is for one that
keeps printing (``zpool iostat POOL INTERVAL``). Its standard output is read in a
thread and split into lines that wait in a buffer until the owner takes them. Nothing
the child does can make zsn hang or grow without bound:

- a line longer than `max_line_bytes` is cut there (the rest of it is skipped);
- lines the owner has not taken yet are capped at `max_buffered_bytes`: the oldest go;
- standard error keeps only its last `stderr_tail_bytes`;
- a child that prints no *usable* line (``accept``) for `deadline` seconds (it stalled,
  or prints only garbage), or `max_unaccepted_bytes` of output without one (it floods),
  is killed, and `error` says why.

`stop()` ends the child (SIGTERM, then SIGKILL) and the reader thread; it is idempotent.
The child is started by `zsn.system.commands.spawn` (argv only, stdin closed) and
watched with `zsn.system.limits` (a `Deadline` and a `ByteBudget` renewed at each usable
line); the pipe closing when zsn dies makes it exit on its next write.
"""

from __future__ import annotations

import contextlib
import os
import selectors
import subprocess
import threading
import time
from collections import deque
from collections.abc import Callable, Mapping, Sequence

from zsn.system import commands
from zsn.system.limits import ByteBudget, Deadline
from zsn.terminal import one_line

MAX_LINE_BYTES = 4096
MAX_BUFFERED_BYTES = 256 * 1024
STDERR_TAIL_BYTES = 4096
MAX_UNACCEPTED_BYTES = 1024 * 1024
READ_CHUNK = 65536
STOP_GRACE = 1.0
"""Seconds between SIGTERM and SIGKILL."""


def _any_line(line: str) -> bool:
    return True


class LineStream:
    """One child process whose standard output arrives as lines (see the module doc)."""

    def __init__(
        self,
        argv: Sequence[str],
        *,
        env: Mapping[str, str] | None = None,
        deadline: float | None = None,
        accept: Callable[[str], bool] = _any_line,
        on_output: Callable[[], None] | None = None,
        max_line_bytes: int = MAX_LINE_BYTES,
        max_buffered_bytes: int = MAX_BUFFERED_BYTES,
        max_unaccepted_bytes: int = MAX_UNACCEPTED_BYTES,
        stderr_tail_bytes: int = STDERR_TAIL_BYTES,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if isinstance(argv, str):
            raise TypeError("argv must be a sequence of arguments, not a string")
        self.argv = tuple(argv)
        self.program = os.path.basename(self.argv[0])
        """For messages: the program's name without its directory."""
        self._env_extra = dict(env) if env else None
        self.deadline = deadline
        self._accept = accept
        self._on_output = on_output
        self.max_line_bytes = max_line_bytes
        self.max_buffered_bytes = max_buffered_bytes
        self.max_unaccepted_bytes = max_unaccepted_bytes
        self.stderr_tail_bytes = stderr_tail_bytes
        self._clock = clock
        self._lock = threading.Lock()
        self._lines: deque[str] = deque()
        self._buffered = 0
        self._stderr = b""
        self._process: subprocess.Popen[bytes] | None = None
        self._thread: threading.Thread | None = None
        self._stopping = threading.Event()
        self._finished = threading.Event()
        self.error: str | None = None
        """Why the stream ended early (killed for a deadline or a flood), else ``None``."""
        self.returncode: int | None = None
        self.dropped_lines = 0
        """Lines dropped because the owner did not take them in time."""
        self.cut_lines = 0
        """Lines cut at `max_line_bytes`."""
        self.started_at: float | None = None
        self.last_accepted_at: float | None = None

    # -- life cycle ------------------------------------------------------------
    def start(self) -> LineStream:
        if self._process is not None:
            raise RuntimeError("a LineStream starts once")
        self._process = commands.spawn(self.argv, env=self._env_extra)
        self.started_at = self._clock()
        self._thread = threading.Thread(target=self._read, name=f"stream {self.program}",
                                        daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        """End the child and the reader thread; safe to call at any time, more than once."""
        self._stopping.set()
        process = self._process
        if process is not None:
            _end(process)
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join(timeout=STOP_GRACE + 2)

    def __enter__(self) -> LineStream:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    @property
    def running(self) -> bool:
        """True until the child has exited (or was stopped) and its output is read."""
        return self._process is not None and not self._finished.is_set()

    def wait(self, timeout: float | None = None) -> bool:
        """Wait until the child has exited and its output is read; False on timeout."""
        return self._finished.wait(timeout)

    # -- output ----------------------------------------------------------------
    def take_lines(self) -> list[str]:
        """The complete lines read since the last call (oldest first)."""
        with self._lock:
            lines = list(self._lines)
            self._lines.clear()
            self._buffered = 0
        return lines

    def stderr_tail(self) -> str:
        """The last lines the child wrote to standard error (at most `stderr_tail_bytes`)."""
        with self._lock:
            return self._stderr.decode("utf-8", "replace")

    def describe_end(self) -> str:
        """One line saying how the stream ended, for an error message."""
        if self.error:
            return self.error
        last = [line for line in self.stderr_tail().splitlines() if line.strip()]
        reason = f": {one_line(last[-1])}" if last else ""
        if self.returncode is None:
            return f"{self.program} is running"
        return f"{self.program} exited with status {self.returncode}{reason}"

    # -- the reader thread -----------------------------------------------------
    def _read(self) -> None:
        process = self._process
        assert process is not None and process.stdout is not None and process.stderr is not None
        selector = selectors.DefaultSelector()
        selector.register(process.stdout, selectors.EVENT_READ, "out")
        selector.register(process.stderr, selectors.EVENT_READ, "err")
        partial = bytearray()
        cutting = False  # inside an over-long line: skip to its end
        watchdog = self._new_watchdog()
        open_streams = 2
        try:
            while open_streams and not self._stopping.is_set():
                for key, _ in selector.select(timeout=0.2):
                    chunk = os.read(key.fd, READ_CHUNK)
                    if not chunk:
                        selector.unregister(key.fileobj)
                        open_streams -= 1
                        continue
                    if key.data == "err":
                        self._keep_stderr(chunk)
                        continue
                    lines, partial, cutting = self._split(partial, chunk, cutting)
                    if any(self._accept(line) for line in lines):
                        self.last_accepted_at = self._clock()
                        watchdog = self._new_watchdog()
                    else:
                        watchdog[1].used += len(chunk)
                    if lines:
                        self._store(lines)
                    if watchdog[1].used > watchdog[1].max_bytes:
                        self._kill(f"{self.program} printed over {self.max_unaccepted_bytes} "
                                   "bytes without a line zsn understands; stopped it")
                self._check_deadline(watchdog[0])
            if partial and not cutting and not self._stopping.is_set():
                self._store([partial.decode("utf-8", "replace")])
        except OSError as exc:  # a pipe that broke under us: report, never raise in a thread
            self.error = self.error or f"{self.program}: reading its output failed: {exc}"
        finally:
            selector.close()
            _end(process)
            self.returncode = process.returncode
            for pipe in (process.stdout, process.stderr):
                pipe.close()
            self._finished.set()
            self._notify()

    def _split(self, partial: bytearray, chunk: bytes,
               cutting: bool) -> tuple[list[str], bytearray, bool]:
        lines: list[str] = []
        start = 0
        while True:
            end = chunk.find(b"\n", start)
            piece = chunk[start:] if end < 0 else chunk[start:end]
            if not cutting:
                room = self.max_line_bytes - len(partial)
                if len(piece) > room:
                    partial += piece[:room]
                    lines.append(partial.decode("utf-8", "replace"))
                    partial = bytearray()
                    self.cut_lines += 1
                    cutting = True
                else:
                    partial += piece
            if end < 0:
                return lines, partial, cutting
            if not cutting:
                lines.append(partial.decode("utf-8", "replace"))
            partial = bytearray()
            cutting = False
            start = end + 1

    def _store(self, lines: list[str]) -> None:
        with self._lock:
            for line in lines:
                self._lines.append(line)
                self._buffered += len(line) + 1
            while self._buffered > self.max_buffered_bytes and self._lines:
                self._buffered -= len(self._lines.popleft()) + 1
                self.dropped_lines += 1
        self._notify()

    def _keep_stderr(self, chunk: bytes) -> None:
        with self._lock:
            self._stderr = (self._stderr + chunk)[-self.stderr_tail_bytes:]

    def _new_watchdog(self) -> tuple[Deadline | None, ByteBudget]:
        """The limits until the next usable line: time (`deadline`) and bytes."""
        deadline = Deadline(self.deadline) if self.deadline is not None else None
        return deadline, ByteBudget(self.max_unaccepted_bytes)

    def _check_deadline(self, deadline: Deadline | None) -> None:
        if deadline is None or self.error:
            return
        if deadline.expired:
            what = "nothing zsn understands" if self.last_accepted_at is None else \
                "nothing more zsn understands"
            self._kill(f"{self.program} printed {what} for {deadline.seconds:g} s; stopped it")

    def _kill(self, reason: str) -> None:
        if self.error is None:
            self.error = reason
        self._stopping.set()
        if self._process is not None:
            _end(self._process)

    def _notify(self) -> None:
        if self._on_output is not None:
            with contextlib.suppress(Exception):  # the owner's callback must not end the reader
                self._on_output()


def _end(process: subprocess.Popen[bytes]) -> None:
    """SIGTERM, a grace period, then SIGKILL; reaps the child."""
    if process.poll() is not None:
        return
    try:
        process.terminate()
        process.wait(timeout=STOP_GRACE)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait(timeout=5)
    except ProcessLookupError:
        pass
