"""Running a send: ``zfs send`` and the receiving side as bounded children, the bytes
moved between them by zsn (`zsn.system.streams.Pump`), counted, paced and recorded.

One stream at a time: ``zfs send`` writes into a large pipe; the pump splices it into
the receiver: ``zfs receive`` here (a pipe), ``ssh HOST zfs receive`` (a pipe into ssh)
or, with ``--via tcp``, a socket to zsn's receiver on the target, which hands the
connection to ``zfs receive`` as its standard input (`zsn.zfs.receiver`). Progress is
the pump's count against ``zfs send -nvP``'s estimate; the rate is taken over the last
few seconds.

A stream ends well only when the source ended, both programs exited 0 and nothing was
stopped. Otherwise both sides are stopped in the order that keeps the target's partial
state: the sender first, then end-of-stream to the receiver (``zfs receive -s`` keeps
what arrived and makes a resume token). A stream that moves nothing for
`STALL_SECONDS` is stopped the same way. Running the same command again resumes.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import threading
import time
from collections import deque
from collections.abc import Callable
from typing import Any, NamedTuple, Protocol

from zsn.errors import ZsnError
from zsn.format import human_bytes
from zsn.system.host import Host
from zsn.system.streams import Child, Pump, RateLimit, make_pipe
from zsn.terminal import safe
from zsn.zfs.live import ENV
from zsn.zfs.send import SendPlan, SendRequest, Stream, tcp_refusal, wireguard_interface
from zsn.zfs.transfers import Recorder

STALL_SECONDS = 300.0
"""No byte moved for this long: the stream is stuck (a hung receiver, a lost network)."""
SENDER_FINISH_SECONDS = 60.0
"""How long ``zfs send`` may take to exit after its last byte."""
FINISH_SECONDS = 600.0
"""How long a receiver may take after the end of the stream (ZFS commits the last txg)."""
CONNECT_SECONDS = 60.0
RATE_WINDOW = 5.0
SOCKET_BUFFER_BYTES = 8 << 20
SO_SNDBUFFORCE = 32
"""Linux's number (Python names no constant): root sets a buffer past wmem_max."""
TICK = 0.25


class Sink(Protocol):
    """The receiving side of one stream."""

    def open(self) -> int:
        """Start the receiver; the fd the pump writes to."""

    def close(self) -> None:
        """The end of the stream: the receiver reads end-of-file."""

    def wait(self, timeout: float) -> int | None:
        """The receiver's exit status (None: still running after `timeout`)."""

    def stop(self) -> None:
        """Stop the receiver (it keeps what arrived) and free everything."""

    def failure(self) -> str:
        """What the receiver said on its way out."""


class ProgramSink:
    """A program that reads the stream on its standard input: ``zfs receive`` here, or
    ``ssh HOST ... zfs receive`` (ssh's own errors and the remote ones both arrive on
    its standard error). With `ready`, the line the program prints once it runs: the
    stream waits for it (or for the program's end), so no bytes are paced into a pipe
    while ssh connects, to leave it in one burst past a rate limit once it has."""

    def __init__(self, argv: list[str], ready: str | None = None) -> None:
        self.argv = argv
        self.ready = ready
        self.child: Child | None = None
        self._write_end: int | None = None

    def open(self) -> int:
        read_end, self._write_end = make_pipe()
        self.child = Child(self.argv, stdin=read_end, stdout="lines" if self.ready else None,
                           env=ENV)
        if self.ready:
            line = self.child.next_line(CONNECT_SECONDS)
            while line is not None and line.strip() != self.ready:
                line = self.child.next_line(CONNECT_SECONDS)
        return self._write_end

    def close(self) -> None:
        if self._write_end is not None:
            with contextlib.suppress(OSError):
                os.close(self._write_end)
            self._write_end = None

    def wait(self, timeout: float) -> int | None:
        return self.child.wait(timeout) if self.child else None

    def stop(self) -> None:
        self.close()
        if self.child is not None and self.child.wait(5) is None:
            self.child.stop()

    def failure(self) -> str:
        return self.child.stderr_tail() if self.child else ""


class TcpSink:
    """zsn's receiver on the target, started over SSH (`control_argv`); the stream goes
    over a TCP connection to it. `check_address(address)` may refuse the address the
    receiver listens on (a plain stream must stay inside WireGuard)."""

    def __init__(self, control_argv: list[str],
                 check_address: Callable[[str], None] | None = None) -> None:
        self.control_argv = control_argv
        self.check_address = check_address
        self.child: Child | None = None
        self.sock: socket.socket | None = None
        self.address: tuple[str, int] | None = None
        self._said = ""

    def open(self) -> int:
        self.child = Child(self.control_argv, stdin="pipe", stdout="lines", env=ENV)
        token = os.urandom(16).hex()
        assert self.child.control is not None
        os.write(self.child.control, (token + "\n").encode())
        line = self.child.next_line(CONNECT_SECONDS) or ""
        words = line.split()
        if len(words) != 3 or words[0] != "listening" or not words[2].isdigit():
            self._said = line
            raise ZsnError("the receiver on the target did not start: "
                           + safe(self._explain(line)))
        address, port = words[1], int(words[2])
        if self.check_address is not None:
            self.check_address(address)
        self.address = (address, port)
        try:
            sock = socket.create_connection((address.split("%")[0], port),
                                            timeout=CONNECT_SECONDS)
        except OSError as exc:
            raise ZsnError(f"connecting to the receiver at {address} port {port} failed: "
                           f"{exc.strerror or exc}") from exc
        if os.geteuid() == 0:
            with contextlib.suppress(OSError):
                sock.setsockopt(socket.SOL_SOCKET, SO_SNDBUFFORCE, SOCKET_BUFFER_BYTES)
        sock.settimeout(None)
        sock.sendall(token.encode())
        self.sock = sock
        return sock.fileno()

    def _explain(self, line: str) -> str:
        stderr = self.child.stderr_tail().strip() if self.child else ""
        return "; ".join(part for part in (line.strip(), stderr) if part) or \
            "it printed nothing"

    def close(self) -> None:
        if self.sock is not None:
            with contextlib.suppress(OSError):
                self.sock.shutdown(socket.SHUT_WR)

    def wait(self, timeout: float) -> int | None:
        if self.child is None:
            return None
        line = self.child.next_line(timeout)
        while line is not None and not line.startswith(("exit ", "error ")):
            line = self.child.next_line(timeout)
        self._said = line or ""
        words = self._said.split()
        self.child.close_control()
        self.child.wait(10)
        if len(words) == 2 and words[0] == "exit" and words[1].lstrip("-").isdigit():
            return int(words[1])
        return self.child.returncode if self.child.returncode not in (None, 0) else 1

    def stop(self) -> None:
        if self.sock is not None:
            with contextlib.suppress(OSError):
                self.sock.shutdown(socket.SHUT_RDWR)
            self.sock.close()
            self.sock = None
        if self.child is not None:
            self.child.close_control()  # the receiver stops zfs receive (-s keeps it)
            if self.child.wait(30) is None:
                self.child.stop()

    def failure(self) -> str:
        return self._explain(self._said if self._said.startswith("error") else "")


class Rate:
    """Bytes per second over the last `RATE_WINDOW` seconds."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._samples: deque[tuple[float, int]] = deque()

    def add(self, total: int) -> float | None:
        now = self._clock()
        self._samples.append((now, total))
        while len(self._samples) > 2 and now - self._samples[1][0] >= RATE_WINDOW:
            self._samples.popleft()
        first_at, first = self._samples[0]
        if now - first_at < 0.5:
            return None
        return (total - first) / (now - first_at)


class Outcome(NamedTuple):
    """How one stream ended."""

    moved: int
    seconds: float
    error: str | None = None
    """Why it failed, for the user; None when it went through."""
    interrupted: bool = False
    """Stopped on purpose (Ctrl-C, the TUI, a stall): the target may keep partial state."""
    setup: float = 0.0
    """Seconds before the stream could flow: the receiver started (over ssh, its
    connection; with tcp, the socket too). The rest of `seconds` moved the data."""


def silent_end(status: int | None) -> str:
    """What is known of a program that said nothing on its way out: how it ended."""
    if status is None:
        return "it said nothing and was still running"
    if status < 0:
        try:
            name = signal.Signals(-status).name
        except ValueError:
            name = f"signal {-status}"
        return f"it was killed by {name} without a word"
    if status == 0:
        return "it exited 0 before the end of the stream, without a word"
    return f"it exited with status {status} without a word"


def receiver_error(text: str, where: str, status: int | None) -> str:
    """A receiver's (or ssh's) standard error as one line for the user; `status` is
    its exit status (negative: the signal that killed it; None: still running)."""
    lines = [line.strip() for line in text.splitlines() if line.strip()
             and not line.startswith("debug")]
    saved = any("Partially received snapshot is saved" in line for line in lines)
    lines = [line for line in lines if not line.startswith(("Partially received",
                                                             "A resuming stream",
                                                             "zfs send -t "))]
    message = " ".join(lines)[:400] or silent_end(status)
    if saved:
        message += " (the target kept what arrived: the same command resumes it)"
    return f"zfs receive {where} failed: {safe(message)}"


def run_stream(send_argv: list[str], sink: Sink, *, where: str,
               limit: float | None = None, on_tick: Callable[[int], None] | None = None,
               stop: threading.Event | None = None,
               stall_seconds: float = STALL_SECONDS,
               clock: Callable[[], float] = time.monotonic) -> Outcome:
    """One ``zfs send`` into `sink` (see the module doc)."""
    started = clock()
    read_end, write_end = make_pipe()
    sender = Child(send_argv, stdout=write_end, env=ENV)
    try:
        sink_fd = sink.open()
    except BaseException:
        sender.stop()
        os.close(read_end)
        sink.stop()
        raise
    setup = clock() - started
    pump = Pump(read_end, sink_fd, limit=RateLimit(limit) if limit else None)
    thread = threading.Thread(target=pump.run, name="zfs stream", daemon=True)
    thread.start()
    last_moved, last_change = 0, clock()
    reason: str | None = None
    try:
        while thread.is_alive():
            thread.join(TICK)
            moved = pump.moved
            if on_tick is not None:
                on_tick(moved)
            now = clock()
            if moved != last_moved:
                last_moved, last_change = moved, now
            elif now - last_change > stall_seconds:
                reason = f"no data moved for {stall_seconds:g} s"
            if stop is not None and stop.is_set():
                reason = reason or "stopped"
            if reason:
                break
    except KeyboardInterrupt:
        reason = "interrupted"
    if reason:  # the sender first; end-of-stream lets zfs receive -s keep what arrived
        pump.stop()
        sender.stop()
        sink.close()
        thread.join(30)
        if thread.is_alive():
            sink.stop()
            thread.join(10)
        sink.wait(60)
        sink.stop()
        os.close(read_end)
        return Outcome(pump.moved, clock() - started, reason, interrupted=True, setup=setup)
    os.close(read_end)
    delivered = pump.ended == "eof"
    if delivered:
        sink.close()
        send_status = sender.wait(SENDER_FINISH_SECONDS)
        receive_status = sink.wait(FINISH_SECONDS)
    else:  # the receiver went away (or the pipe broke): stop the sender
        sender.stop()
        receive_status = sink.wait(30)
        send_status = sender.wait(10)
    sink.stop()
    seconds = clock() - started
    if delivered and send_status != 0:  # the cause; the receiver only saw it end
        return Outcome(pump.moved, seconds,
                       f"zfs send failed: "
                       f"{safe(sender_error(sender.stderr_tail(), send_status))}",
                       setup=setup)
    if receive_status != 0 or not delivered:
        error = receiver_error(sink.failure(), where, receive_status)
        if pump.error is not None:
            error += f" (moving the data: {pump.error.strerror or pump.error})"
        return Outcome(pump.moved, seconds, error, setup=setup)
    return Outcome(pump.moved, seconds, setup=setup)


def sender_error(text: str, status: int | None) -> str:
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return " ".join(lines)[:400] or silent_end(status)


def cpu_seconds() -> float:
    """CPU this process used (all its threads; its children not)."""
    return time.process_time()


Progress = dict[str, Any]
"""What a transfer reports each tick: moved, estimate, rate, eta, percent, stream ..."""


class TransferFailed(ZsnError):
    """A stream failed or was stopped; `result` is what was recorded."""

    def __init__(self, message: str, result: dict[str, Any], interrupted: bool) -> None:
        super().__init__(message)
        self.result = result
        self.interrupted = interrupted


def sink_for(send_plan: SendPlan, stream: Stream, host: Host) -> Sink:
    """Where a stream goes: ``zfs receive`` here, over ssh, or to zsn's receiver."""
    from zsn.zfs import receiver
    from zsn.zfs.remote import READY, Side

    receive = ["zfs", "receive", *stream.receive_args]
    if not send_plan.target.remote:
        from zsn.zfs.live import require_program

        return ProgramSink([require_program("zfs"), *receive[1:]])
    side = Side(send_plan.target, send_plan.ssh)
    if send_plan.transport == "ssh":
        return ProgramSink(side.command(receive, announce=True), ready=READY)
    source = receiver.source()
    control = side.command(["python3", "-c", source, *receive])

    def check(address: str) -> None:
        if send_plan.decision.encrypted:
            return
        interface, wireguard = wireguard_interface(host, address)
        if not wireguard:
            raise tcp_refusal(address, interface)

    return TcpSink(control, check)


class Transfer:
    """One send as it runs: its plan, its streams in turn, progress and the record.

    `on_progress` gets a `Progress` each tick, `say` one line per event (a stream
    starts, a resume); `stop` ends it as Ctrl-C would. After a resume the plan is
    made again from a fresh read (the target now has the resumed snapshot) and the
    remaining snapshots follow.
    """

    def __init__(self, host: Host, request: SendRequest, *,
                 plan: SendPlan | None = None,
                 on_progress: Callable[[Progress], None] | None = None,
                 say: Callable[[str], None] | None = None,
                 stop: threading.Event | None = None,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.host = host
        self.request = request
        self.plan = plan
        self.on_progress = on_progress
        self.say = say or (lambda line: None)
        self.stop = stop
        self._clock = clock
        self._rate = Rate(clock)
        self._recorder: Recorder | None = None
        self._moved = 0
        self._setup = 0.0
        self._last_count = -1
        self._moved_at = time.time()

    def run(self) -> dict[str, Any]:
        """The result record; `TransferFailed` when a stream did not go through."""
        from zsn.zfs.live import require_program
        from zsn.zfs.send import plan_send

        plan = self.plan or plan_send(self.host, self.request)
        zfs = require_program("zfs")
        decision = plan.decision
        recorder = Recorder(self.host, {
            "source": plan.source, "target": str(plan.target), "via": plan.transport,
            "raw": self.request.raw, "recursive": self.request.recursive,
            "limit": self.request.limit, "snapshot": f"{plan.source}@{decision.snapshot}",
            "started": time.time(), "moved_at": time.time(), "bytes": 0,
            "estimate": decision.estimate,
            "resumed": False, "streams": len(decision.streams)})
        self._recorder = recorder
        started, cpu_before = self._clock(), cpu_seconds()
        if not decision.streams:
            for note in decision.notes:
                self.say(note)
        self._moved = 0
        self._setup = 0.0
        try:
            self._streams(plan, recorder, zfs)
        except TransferFailed as failed:
            state = "interrupted" if failed.interrupted else "failed"
            failed.result = self._finish(recorder, started, cpu_before, self._moved, state,
                                         str(failed))
            raise
        except ZsnError as exc:  # a refusal or a read that failed between two streams
            result = self._finish(recorder, started, cpu_before, self._moved, "failed",
                                  str(exc))
            raise TransferFailed(str(exc), result, False) from exc
        except BaseException:
            self._finish(recorder, started, cpu_before, self._moved, "failed",
                         "zsn stopped with an error")
            raise
        return self._finish(recorder, started, cpu_before, self._moved, "ok", None)

    def _streams(self, plan: SendPlan, recorder: Recorder, zfs: str) -> None:
        """Each stream in turn; after a resume, the rest planned again."""
        from zsn.zfs.send import plan_send

        streams = list(plan.decision.streams)
        estimate = plan.decision.estimate
        number = 0
        while streams:
            stream = streams.pop(0)
            number += 1
            if stream.kind == "resume":
                recorder.update(force=True, resumed=True)
                left = f" ({human_bytes(stream.estimate)} left)" if stream.estimate else ""
                self.say(f"resuming the interrupted send of {stream.delivers[0]} into "
                         f"{stream.receive_dataset}{left}")
            else:
                self.say(f"stream {number}: {stream.describe(plan.target)}")
            before = self._moved

            def tick(count: int, before: int = before, stream: Stream = stream,
                     estimate: int | None = estimate, number: int = number) -> None:
                self._tick(recorder, before + count, estimate, number, stream)

            where = f"on {plan.target.host}" if plan.target.remote else "here"
            outcome = run_stream([zfs, "send", *stream.send_args],
                                 sink_for(plan, stream, self.host), where=where,
                                 limit=self.request.limit, on_tick=tick, stop=self.stop,
                                 clock=self._clock)
            self._moved += outcome.moved
            self._setup += outcome.setup
            if outcome.error is not None:
                raise TransferFailed(outcome.error, {}, outcome.interrupted)
            if stream.kind == "resume":  # the rest, from what the target has now
                plan = plan_send(self.host, self.request)
                streams = list(plan.decision.streams)
                estimate = self._moved + (plan.decision.estimate or 0)
                recorder.update(force=True, estimate=estimate,
                                streams=number + len(streams))

    @property
    def problem(self) -> str | None:
        """Why progress and results are not recorded (not root), if they are not."""
        return self._recorder.problem if self._recorder is not None else None

    def _tick(self, recorder: Recorder, moved: int, estimate: int | None, number: int,
              stream: Stream) -> None:
        rate = self._rate.add(moved)
        if moved != self._last_count:  # the proof's stall flag: when a byte last moved
            self._last_count, self._moved_at = moved, time.time()
        percent = min(99.9, 100.0 * moved / estimate) if estimate else None
        eta = max(0.0, (estimate - moved) / rate) if estimate and rate else None
        progress: Progress = {
            "bytes": moved, "estimate": estimate, "rate": rate, "eta_seconds": eta,
            "percent": percent, "stream": number, "moved_at": self._moved_at,
            "sending": stream.delivers[-1] if stream.delivers else None}
        recorder.update(**progress)
        if self.on_progress is not None:
            self.on_progress(progress)

    def _finish(self, recorder: Recorder, started: float, cpu_before: float, moved: int,
                state: str, error: str | None) -> dict[str, Any]:
        seconds = self._clock() - started
        return recorder.finish(
            state=state, error=error, bytes=moved, seconds=round(seconds, 3),
            rate=round(moved / seconds) if seconds > 0 else None, finished=time.time(),
            cpu_seconds=round(cpu_seconds() - cpu_before, 3),
            setup_seconds=round(self._setup, 3), percent=None, eta_seconds=None)
