"""Long-running programs: read line by line (`LineStream`), or moving bytes from one
to another (`Child`, `Pump`, `RateLimit`), every read bounded.

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
import errno
import fcntl
import os
import selectors
import signal
import subprocess
import threading
import time
from collections import deque
from collections.abc import Callable, Mapping, Sequence

from zsn.errors import CommandError
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


# -- moving bytes between programs ---------------------------------------------------
PIPE_BYTES = 1 << 20
"""The pipes zsn makes for a transfer: /proc/sys/fs/pipe-max-size by default (64 KiB
pipes make each side wake up sixteen times as often)."""
CHUNK_BYTES = 1 << 20
"""The most one splice moves."""
STOP_WAIT = 10.0
OUTPUT_DRAIN_SECONDS = 15.0
"""After a child exits, how long its output may take to be read to the end: at once on
an idle machine, seconds on a loaded one (a failing program's last words are what the
user needs); the bound is for a grandchild that keeps the pipe open."""
SOURCE_CLOSE_SECONDS = 60.0
"""After the sink's reader left: how long the source's writer may take to close."""
DRAIN_WAIT_MAX = 0.05
"""The longest a pump waits for a full sink to drain before it splices again."""


def make_pipe(size: int = PIPE_BYTES) -> tuple[int, int]:
    """A close-on-exec pipe (read end, write end) grown to `size` where the system
    allows it. It is grown empty, before anyone writes: resizing a pipe that holds
    data is what deadlocked libzfs (openzfs/zfs#13232)."""
    read_end, write_end = os.pipe2(os.O_CLOEXEC)
    with contextlib.suppress(OSError):  # EPERM past pipe-max-size unless privileged
        fcntl.fcntl(write_end, fcntl.F_SETPIPE_SZ, size)
    return read_end, write_end


class Child:
    """A program at one end of a byte stream, bounded like every child of zsn.

    Started from an argv (never a shell) in a session of its own, so that a Ctrl-C
    reaches zsn alone and zsn stops its children in order. `stdin` is an fd the child
    reads (zsn closes its own copy), ``"pipe"`` for one zsn writes (`control`), or
    None for /dev/null; `stdout` an fd, ``"lines"`` for lines zsn reads (`next_line`,
    each cut at `max_line_bytes`, at most `max_buffered_lines` waiting), or None for
    /dev/null. Standard error keeps its last `stderr_tail_bytes`.
    """

    def __init__(self, argv: Sequence[str], *, stdin: int | str | None = None,
                 stdout: int | str | None = None, env: Mapping[str, str] | None = None,
                 stderr_tail_bytes: int = 16 * 1024, max_line_bytes: int = MAX_LINE_BYTES,
                 max_buffered_lines: int = 256) -> None:
        if isinstance(argv, str):
            raise TypeError("argv must be a sequence of arguments, not a string")
        self.argv = tuple(argv)
        self.program = os.path.basename(self.argv[0])
        self.stderr_tail_bytes = stderr_tail_bytes
        self.max_line_bytes = max_line_bytes
        self._lines: deque[str] = deque(maxlen=max_buffered_lines)
        self._line_arrived = threading.Condition()
        self._stderr = b""
        self._lock = threading.Lock()
        self._stdout_done = threading.Event()
        self.control: int | None = None
        """The write end of the child's stdin with ``stdin="pipe"``; `close_control`
        closes it (the child reads end of file)."""
        stdin_arg: int = subprocess.DEVNULL if stdin is None else \
            subprocess.PIPE if stdin == "pipe" else int(stdin)
        stdout_arg: int = subprocess.DEVNULL if stdout is None else \
            subprocess.PIPE if stdout == "lines" else int(stdout)
        full_env = {**os.environ, **env} if env else None
        try:
            self.process = subprocess.Popen(
                self.argv, stdin=stdin_arg, stdout=stdout_arg, stderr=subprocess.PIPE,
                env=full_env, start_new_session=True)
        except FileNotFoundError as exc:
            raise CommandError(f"{self.argv[0]}: program not found (is it installed?)") from exc
        except PermissionError as exc:
            raise CommandError(f"{self.argv[0]}: permission denied") from exc
        finally:
            for given in (stdin, stdout):
                if isinstance(given, int):
                    os.close(given)  # the child has its copy; ours would hide its end
        if self.process.stdin is not None:
            self.control = self.process.stdin.fileno()
        self._stderr_reader = self._spawn_reader(self._read_stderr, "stderr")
        self._stdout_reader = self._spawn_reader(self._read_lines, "stdout") \
            if self.process.stdout is not None else None

    def _spawn_reader(self, target: Callable[[], None], what: str) -> threading.Thread:
        thread = threading.Thread(target=target, name=f"{self.program} {what}", daemon=True)
        thread.start()
        return thread

    def _read_stderr(self) -> None:
        assert self.process.stderr is not None
        fd = self.process.stderr.fileno()
        with contextlib.suppress(OSError):
            while chunk := os.read(fd, READ_CHUNK):
                with self._lock:
                    self._stderr = (self._stderr + chunk)[-self.stderr_tail_bytes:]

    def _read_lines(self) -> None:
        assert self.process.stdout is not None
        fd = self.process.stdout.fileno()
        partial = b""
        with contextlib.suppress(OSError):
            while chunk := os.read(fd, READ_CHUNK):
                partial += chunk
                *complete, partial = partial.split(b"\n")
                partial = partial[:self.max_line_bytes]
                for line in complete:
                    self._add_line(line[:self.max_line_bytes].decode("utf-8", "replace"))
        if partial:
            self._add_line(partial.decode("utf-8", "replace"))
        with self._line_arrived:
            self._stdout_done.set()
            self._line_arrived.notify_all()

    def _add_line(self, line: str) -> None:
        with self._line_arrived:
            self._lines.append(line)
            self._line_arrived.notify_all()

    def next_line(self, timeout: float) -> str | None:
        """The next line from the child's stdout; None when it closed it or `timeout`
        seconds passed without one."""
        deadline = Deadline(timeout)
        with self._line_arrived:
            while not self._lines:
                if self._stdout_done.is_set() or deadline.expired:
                    return None
                self._line_arrived.wait(min(0.2, deadline.remaining()))
            return self._lines.popleft()

    def stderr_tail(self) -> str:
        """What the child last wrote to standard error (at most `stderr_tail_bytes`)."""
        with self._lock:
            return self._stderr.decode("utf-8", "replace")

    @property
    def returncode(self) -> int | None:
        return self.process.poll()

    def wait(self, timeout: float | None = None) -> int | None:
        """The exit status, or None when the child still runs after `timeout` seconds;
        once it exited, its output is read to the end."""
        try:
            code = self.process.wait(timeout)
        except subprocess.TimeoutExpired:
            return None
        drained = Deadline(OUTPUT_DRAIN_SECONDS)
        for thread in (self._stdout_reader, self._stderr_reader):
            if thread is not None:
                thread.join(timeout=drained.remaining())
        return code

    def close_control(self) -> None:
        if self.process.stdin is not None and not self.process.stdin.closed:
            with contextlib.suppress(OSError):
                self.process.stdin.close()

    def stop(self, grace: float = STOP_GRACE) -> None:
        """SIGTERM to the child's process group, `grace` seconds, SIGKILL; idempotent.

        The group, not the child alone: a grandchild (ssh's helpers, a shell's
        command) would otherwise outlive the stop and hold the output pipes open."""
        self.close_control()
        # Only a child not yet reaped when the stop began: its group's number is ours
        # (Linux hands pids out in turn, so reaping it here frees nothing the next
        # lines could hit). A group left empty by an earlier wait could be reused.
        if self.process.returncode is None:
            if self.process.poll() is None:
                self._signal_group(signal.SIGTERM)
                try:
                    self.process.wait(grace)
                except subprocess.TimeoutExpired:
                    self._signal_group(signal.SIGKILL)
                    self.process.wait(STOP_WAIT)
            self._signal_group(signal.SIGKILL)  # what it started and left behind
        self.wait(0)
        for pipe, reader in ((self.process.stdout, self._stdout_reader),
                             (self.process.stderr, self._stderr_reader)):
            # A pipe whose reader still runs stays open: its fd number, closed under
            # the reader, could be handed to the next pipe anyone opens.
            if pipe is not None and not (reader and reader.is_alive()):
                with contextlib.suppress(OSError):
                    pipe.close()

    def _signal_group(self, signum: signal.Signals) -> None:
        # The group outlives its leader while a member is left, and the kernel gives
        # its number to no new process meanwhile.
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.process.pid, signum)


class RateLimit:
    """A token bucket that starts empty, lets at most a twentieth of a second of bytes go
    at once, and makes up at most a quarter of a second the sender lost (its process not
    scheduled, the pipe full): every second (and every window longer than a tenth of
    one) moves the rate to within five per cent, with no burst at the start, and a
    stall shorter than a quarter of a second costs the second it fell in nothing."""

    def __init__(self, bytes_per_second: float, *, clock: Callable[[], float] = time.monotonic,
                 sleep: Callable[[float], None] = time.sleep) -> None:
        if bytes_per_second <= 0:
            raise ValueError("a rate limit must be positive")
        self.rate = float(bytes_per_second)
        self.burst = max(4096.0, self.rate / 20)
        """The most one grant lets go."""
        self.capacity = max(self.burst, self.rate / 4)
        """The most that builds up while nothing moves."""
        self._tokens = 0.0
        self._clock = clock
        self._sleep = sleep
        self._at = clock()

    def _refill(self) -> None:
        now = self._clock()
        self._tokens = min(self.capacity, self._tokens + (now - self._at) * self.rate)
        self._at = now

    def grant(self, most: int) -> int:
        """Wait until some bytes may go, and say how many (at most `most`)."""
        wanted = min(float(most), self.burst)
        self._refill()
        if self._tokens < wanted:
            self._sleep((wanted - self._tokens) / self.rate)
            self._refill()
        return max(1, int(min(self._tokens, wanted)))

    def spend(self, count: int) -> None:
        self._tokens -= count


class Pump:
    """Moves bytes from `source` to `sink` until the source ends, counting them.

    With `os.splice` the bytes go from one pipe (or socket) to the other inside the
    kernel, up to `chunk` at a time; where splice cannot join the two, through a
    buffer. `moved` is the count so far (read it from any thread). `run` returns
    when the source reaches its end (`ended` is ``"eof"``), the sink's reader went
    away (``"sink closed"``), or `stop` was called (``"stopped"``); any other error is
    kept in `error`. A `RateLimit` holds the pace.
    """

    def __init__(self, source: int, sink: int, *, limit: RateLimit | None = None,
                 chunk: int = CHUNK_BYTES) -> None:
        self.source = source
        self.sink = sink
        self.limit = limit
        self.chunk = chunk
        self.moved = 0
        self.ended: str | None = None
        self.error: OSError | None = None
        self._stopping = threading.Event()
        self._lost = False
        """Bytes read from the source that the sink never took."""

    def stop(self) -> None:
        """Ask `run` to return after the current splice (which the caller unblocks by
        ending the programs at either end)."""
        self._stopping.set()

    def run(self) -> None:
        buffer: bytearray | None = None
        started = time.monotonic()
        try:
            while not self._stopping.is_set():
                want = self.limit.grant(self.chunk) if self.limit else self.chunk
                if buffer is None:
                    try:
                        count = os.splice(self.source, self.sink, want)
                    except OSError as exc:
                        if exc.errno != errno.EINVAL:
                            raise
                        buffer = bytearray(self.chunk)  # splice cannot join these two
                        continue
                else:
                    count = self._copy(buffer, want)
                if count == 0:
                    self.ended = "eof"
                    return
                self.moved += count
                if self.limit:
                    self.limit.spend(count)
                elif count < self.chunk // 4:
                    self._let_the_sink_drain(started)
            self.ended = "stopped"
        except (BrokenPipeError, ConnectionResetError):
            # A reader that left after the last byte, before the writer closed (a loaded
            # machine), gets EPIPE from the kernel, not end of file: the end all the same
            # when every byte read was taken and the source then closes empty.
            self.ended = "eof" if not self._lost and _closes_empty(
                self.source, SOURCE_CLOSE_SECONDS) else "sink closed"
        except OSError as exc:
            self.ended, self.error = "error", exc

    def _let_the_sink_drain(self, started: float) -> None:
        """After a short splice: the sink had little room, its reader being the slower
        side (ssh encrypting). Splicing again at once moves a few KiB per call, one
        call (and one wake-up of this thread) per read the reader makes: ~9000 for
        256 MiB into ssh, most of zsn's CPU on an emulated one. Waiting until a quarter
        of a chunk has drained at the rate so far moves the same bytes in a few hundred
        calls while the sink stays three quarters full."""
        elapsed = time.monotonic() - started
        if elapsed > 0 and self.moved:
            time.sleep(min(DRAIN_WAIT_MAX, self.chunk / 4 / (self.moved / elapsed)))

    def _copy(self, buffer: bytearray, want: int) -> int:
        view = memoryview(buffer)[:want]
        count = os.readv(self.source, [view])
        written = 0
        try:
            while written < count:
                written += os.write(self.sink, view[written:count])
        except OSError:
            self._lost = True
            raise
        return count


def _closes_empty(source: int, timeout: float) -> bool:
    """Whether `source`'s writer, within `timeout` s, closes it with no byte left."""
    with selectors.DefaultSelector() as selector:
        selector.register(source, selectors.EVENT_READ)
        if not selector.select(timeout):
            return False
    try:
        return os.read(source, 1) == b""
    except BlockingIOError:
        return False
