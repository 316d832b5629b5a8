"""Running programs: argv lists only (never a shell), within a deadline and an output cap.

`run` gives a program `timeout` seconds overall and keeps at most `max_output`
bytes of what it writes (stdout and stderr together, `DEFAULT_MAX_OUTPUT` unless
the caller knows better): a program that hangs is killed at the deadline, one
that floods is killed once it passes the cap, and either becomes a
`CommandError` saying which limit it hit (see `zsn.system.limits`).

Reusing the cap for a program that streams (``zpool iostat 1``): start it with
`spawn` (argv only, stdin closed, pipes for stdout and stderr), and read it with
`read_pipes` the way `run` does, one `Deadline` per sample and one `ByteBudget`
per sample (or per line), so a stream that stalls or floods is stopped the same
way and reported with the same words.
"""

from __future__ import annotations

import os
import selectors
import subprocess
import sys
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import NoReturn

from zsn.errors import CommandError
from zsn.system.limits import ByteBudget, Deadline, MiB
from zsn.terminal import one_line

DEFAULT_TIMEOUT = 10.0
DEFAULT_MAX_OUTPUT = 16 * MiB
"""Bytes of output (stdout and stderr together) `run` keeps before it stops a program."""
_CHUNK = 1 << 16


@dataclass(frozen=True)
class CommandResult:
    argv: tuple[str, ...]
    returncode: int
    stdout: str
    stderr: str
    seconds: float

    @property
    def ok(self) -> bool:
        return self.returncode == 0

    def first_error_line(self) -> str:
        """What the program said first (stderr, else stdout), as an error may quote it:
        one line, escaped, capped (`zsn.terminal.one_line`)."""
        return one_line(self.stderr or self.stdout) or f"exit status {self.returncode}"


def hand_over(argv: Sequence[str], *, env: Mapping[str, str] | None = None) -> NoReturn:
    """Replace this process with `argv` (a service's command handing its work to the
    program that does it: systemd then watches that program, its exit status is the
    unit's, and stopping the unit signals it). `env` as for `spawn`; what was printed is
    flushed first."""
    if isinstance(argv, str):
        raise TypeError("argv must be a sequence of arguments, not a string")
    sys.stdout.flush()
    sys.stderr.flush()
    try:
        os.execve(argv[0], list(argv), {**os.environ, **(env or {})})
    except OSError as exc:
        raise CommandError(f"{argv[0]}: {exc.strerror or exc}") from None


def spawn(argv: Sequence[str], *, env: Mapping[str, str] | None = None,
          stdin: bool = False, detached: bool = False) -> subprocess.Popen[bytes]:
    """Start `argv` with stdout and stderr piped (stdin piped when `stdin`, else closed).

    `env` is added to the current environment (for variables such as
    WG_QUICK_USERSPACE_IMPLEMENTATION), it does not replace it. `detached`: in a
    session of its own (setsid), without zsn's terminal, so a daemon it leaves behind
    (wg-quick's wireguard-go) outlives zsn, its SSH session and its tmux window.
    """
    if isinstance(argv, str):
        raise TypeError("argv must be a sequence of arguments, not a string")
    args = tuple(argv)
    full_env = {**os.environ, **env} if env else None
    try:
        return subprocess.Popen(
            args, stdin=subprocess.PIPE if stdin else subprocess.DEVNULL,
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=full_env,
            start_new_session=detached,
        )
    except FileNotFoundError as exc:
        raise CommandError(f"{args[0]}: program not found (is it installed?)") from exc
    except PermissionError as exc:
        raise CommandError(f"{args[0]}: permission denied") from exc


def read_pipes(process: subprocess.Popen[bytes], deadline: Deadline, budget: ByteBudget,
               what: str, input_bytes: bytes = b"") -> tuple[bytes, bytes]:
    """Feed `input_bytes` to the process and read its stdout and stderr until both close.

    Raises `CommandError` when the deadline passes while the program still runs, or
    when its output passes the budget. A program that exited but left a child
    holding its output open is read until the deadline, then taken as finished.
    """
    out: dict[int, bytearray] = {}
    pending = memoryview(input_bytes)
    stdin_fd = process.stdin.fileno() if process.stdin is not None else None
    with selectors.DefaultSelector() as selector:
        for stream in (process.stdout, process.stderr):
            if stream is not None:
                out[stream.fileno()] = bytearray()
                selector.register(stream.fileno(), selectors.EVENT_READ)
        if process.stdin is not None and stdin_fd is not None:
            if pending:
                os.set_blocking(stdin_fd, False)
                selector.register(stdin_fd, selectors.EVENT_WRITE)
            else:
                process.stdin.close()
        while selector.get_map():
            left = deadline.remaining()
            if left <= 0:
                if process.poll() is not None:
                    break  # exited; a leftover child holds the pipe
                raise CommandError(f"{what}: no answer within {deadline.seconds:g} s")
            for key, _events in selector.select(left):
                fd = key.fd
                if fd == stdin_fd and process.stdin is not None:
                    try:
                        written = os.write(fd, pending[:_CHUNK])
                    except BrokenPipeError:
                        written = len(pending)
                    pending = pending[written:]
                    if not pending:
                        selector.unregister(fd)
                        process.stdin.close()
                    continue
                chunk = os.read(fd, _CHUNK)
                if not chunk:
                    selector.unregister(fd)
                    continue
                budget.take(len(chunk), what, CommandError)
                out[fd] += chunk
    stdout = bytes(out.get(process.stdout.fileno(), b"")) if process.stdout else b""
    stderr = bytes(out.get(process.stderr.fileno(), b"")) if process.stderr else b""
    return stdout, stderr


def _stop(process: subprocess.Popen[bytes]) -> None:
    if process.poll() is None:
        process.kill()
    process.wait()
    for stream in (process.stdin, process.stdout, process.stderr):
        if stream is not None:
            stream.close()


def run(
    argv: Sequence[str],
    *,
    timeout: float = DEFAULT_TIMEOUT,
    check: bool = True,
    input_text: str | None = None,
    env: Mapping[str, str] | None = None,
    max_output: int = DEFAULT_MAX_OUTPUT,
    detached: bool = False,
) -> CommandResult:
    """Run `argv` and return its output; raise `CommandError` with a plain reason on failure.

    `env` is added to the current environment, it does not replace it; `detached` as
    for `spawn`.
    """
    deadline = Deadline(timeout)
    started = time.monotonic()
    process = spawn(argv, env=env, stdin=input_text is not None, detached=detached)
    args = tuple(argv)
    try:
        stdout, stderr = read_pipes(process, deadline, ByteBudget(max_output), args[0],
                                    (input_text or "").encode())
        returncode = process.wait(deadline.remaining() or None)
    except subprocess.TimeoutExpired:
        raise CommandError(f"{args[0]}: no answer within {timeout:g} s") from None
    finally:
        _stop(process)
    result = CommandResult(
        args, returncode, stdout.decode("utf-8", "replace"), stderr.decode("utf-8", "replace"),
        time.monotonic() - started,
    )
    if check and not result.ok:
        raise CommandError(f"{args[0]} failed: {result.first_error_line()}")
    return result
