"""Running programs: argv lists only (never a shell), always with a timeout."""

from __future__ import annotations

import os
import subprocess
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from zsn.errors import CommandError

DEFAULT_TIMEOUT = 10.0


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
        for line in (self.stderr or self.stdout).splitlines():
            if line.strip():
                return line.strip()
        return f"exit status {self.returncode}"


def run(
    argv: Sequence[str],
    *,
    timeout: float = DEFAULT_TIMEOUT,
    check: bool = True,
    input_text: str | None = None,
    env: Mapping[str, str] | None = None,
) -> CommandResult:
    """Run `argv` and return its output; raise `CommandError` with a plain reason on failure.

    `env` is added to the current environment (for variables such as
    WG_QUICK_USERSPACE_IMPLEMENTATION), it does not replace it.
    """
    if isinstance(argv, str):
        raise TypeError("argv must be a sequence of arguments, not a string")
    args = tuple(argv)
    full_env = {**os.environ, **env} if env else None
    started = time.monotonic()
    try:
        completed = subprocess.run(
            args,
            input=input_text,
            capture_output=True,
            text=True,
            timeout=timeout,
            env=full_env,
            check=False,
        )
    except FileNotFoundError as exc:
        raise CommandError(f"{args[0]}: program not found (is it installed?)") from exc
    except PermissionError as exc:
        raise CommandError(f"{args[0]}: permission denied") from exc
    except subprocess.TimeoutExpired as exc:
        raise CommandError(f"{args[0]}: no answer within {timeout:g} s") from exc
    result = CommandResult(
        args, completed.returncode, completed.stdout, completed.stderr,
        time.monotonic() - started,
    )
    if check and not result.ok:
        raise CommandError(f"{args[0]} failed: {result.first_error_line()}")
    return result
