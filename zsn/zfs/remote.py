"""Where a transfer's commands run: on this machine, or on the target over SSH.

A target is ``pool/ds`` (here) or ``[user@]host:pool/ds`` (scp's rule: a ``:`` before
the first ``/`` names a host; IPv6 addresses go in brackets, ``[fd00::2]:pool/ds``).
The host and user are checked before ssh sees them: nothing that starts with ``-``
(an option to ssh) or holds a character a host name cannot.

Remote commands are argv lists too: each argument is quoted for the remote shell
(`shlex.quote`) inside one ``sh -c`` script, so a dataset name with a space stays one
argument and nothing in it is ever run. The script puts the system's sbin
directories first on PATH (``zfs`` lives there, and a user's own ``python3`` shims do
not shadow the system's) and sets ``LC_ALL=C`` for messages zsn understands.
Several reads go over one connection (`Side.run_batch`): a connection costs a key
exchange, and a plan needs four reads of the target.

SSH runs non-interactively (``BatchMode``: a key or an agent, never a password
prompt that would hide behind a progress bar or the TUI), with a connect timeout and
keep-alives that end a transfer whose network went away within a minute. The cipher
list is the user's own (``ssh -G``: what their config allows) reordered for speed,
fastest first as measured on this CPU (`cipher_order`); the server takes the first
one it allows too.
"""

from __future__ import annotations

import os
import re
import shlex
import time
from collections.abc import Callable, Mapping, Sequence
from functools import cache
from typing import NamedTuple

from zsn.errors import CommandError, ValidationError, ZsnError
from zsn.system import commands
from zsn.zfs.live import ENV, require_program, run_zfs_command
from zsn.zfs.names import validate_dataset_name

SYSTEM_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
CONNECT_TIMEOUT = 15
ALIVE_INTERVAL = 10
ALIVE_COUNT = 6
"""Keep-alives: a target silent for a minute ends the transfer (ssh exits 255)."""
BATCH_TIMEOUT = 60.0
_HOST_RE = re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9._-]{0,252})")
_IPV6_RE = re.compile(r"\[([0-9A-Fa-f:.]+(?:%[A-Za-z0-9_.-]+)?)\]")
_USER_RE = re.compile(r"[A-Za-z0-9_][A-Za-z0-9._-]{0,31}")
FAST_CIPHERS = ("aes128-gcm@openssh.com", "aes256-gcm@openssh.com",
                "chacha20-poly1305@openssh.com")
"""The AEAD ciphers: no separate MAC pass. Their order comes from `cipher_order`."""
_END = "@zsn-end "
_END_RE = re.compile(r"^@zsn-end (\d{1,3})$", re.MULTILINE)
"""Only zsn's echo starts a line with ``@``: zfs prints names first, and names never
start with ``@``."""
READY = "@zsn-ready"
"""What a remote receiver's script prints once ssh is connected and it starts."""


class Endpoint(NamedTuple):
    """A dataset, here (`host` None) or on a host reached over SSH."""

    dataset: str
    host: str | None = None
    user: str | None = None

    @property
    def remote(self) -> bool:
        return self.host is not None

    @property
    def destination(self) -> str:
        """What ssh connects to: ``user@host`` or ``host``."""
        assert self.host is not None
        return f"{self.user}@{self.host}" if self.user else self.host

    def __str__(self) -> str:
        if self.host is None:
            return self.dataset
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{self.user + '@' if self.user else ''}{host}:{self.dataset}"


def parse_target(text: str) -> Endpoint:
    """``pool/ds`` or ``[user@]host:pool/ds``, each part checked."""
    slash = text.find("/")
    colon = text.find(":")
    bracket = text.startswith("[") or "@[" in text.split("/", 1)[0]
    if colon < 0 or (0 <= slash < colon and not bracket):
        return Endpoint(validate_dataset_name(text))
    user: str | None = None
    rest = text
    head = text.split("/", 1)[0]
    if "@" in head:
        user, rest = text.split("@", 1)
        if not _USER_RE.fullmatch(user):
            raise ValidationError(f"{user[:40]!r} is not a user name ssh takes "
                                  "(letters, digits, '.', '_', '-'; not starting with '-')")
    match = _IPV6_RE.match(rest)
    if match:
        host, rest = match.group(1), rest[match.end():]
        if not rest.startswith(":"):
            raise ValidationError(f"{text[:60]!r}: write [ADDRESS]:POOL/DATASET")
        rest = rest[1:]
    else:
        host, _, rest = rest.partition(":")
        if not _HOST_RE.fullmatch(host):
            raise ValidationError(f"{host[:40]!r} is not a host name (letters, digits, '.', "
                                  "'-'; IPv6 addresses in brackets)")
    if not rest:
        raise ValidationError(f"{text[:60]!r}: the dataset after '{host}:' is missing")
    return Endpoint(validate_dataset_name(rest), host, user)


def parse_source(text: str) -> tuple[str, str | None]:
    """``pool/ds`` or ``pool/ds@snap``: the dataset and the snapshot's name, if any."""
    from zsn.zfs.names import validate_snapshot_name

    if ":" in text.split("/", 1)[0] and "@" not in text.split(":", 1)[0]:
        raise ValidationError(f"{text[:60]!r}: the source is a dataset here; zsn sends from "
                              "this machine (run it on the source to send from there)")
    if "@" in text:
        return validate_snapshot_name(text)
    return validate_dataset_name(text), None


# -- running commands on a side --------------------------------------------------------
def remote_script(commands_: Sequence[Sequence[str]], *, exec_last: bool = False,
                  announce: bool = False) -> str:
    """One ``sh`` script running each argv: PATH with the system's sbin first,
    ``LC_ALL=C``; for a batch, each command's output (stderr joined to stdout) then
    ``@zsn-end STATUS``; with `exec_last`, the one command replaces the shell (first
    saying `READY` on stdout with `announce`)."""
    lines = [f'PATH={SYSTEM_PATH}:"$PATH"; LC_ALL=C; export PATH LC_ALL']
    if exec_last:
        [argv] = commands_
        if announce:
            lines.append(f"echo {READY}")
        lines.append("exec " + shlex.join(argv))
    else:
        for argv in commands_:
            lines.append(f"{shlex.join(argv)} 2>&1; echo \"{_END}$?\"")
    return "; ".join(lines)


def split_batch(output: str, keys: Sequence[str],
                argv_of: Mapping[str, Sequence[str]]) -> dict[str, commands.CommandResult]:
    """The per-command results of a `remote_script` batch's output (a command whose end
    marker is missing, the connection failed before, is left out)."""
    results: dict[str, commands.CommandResult] = {}
    start = 0
    ends = _END_RE.finditer(output)
    for key in keys:
        found = next(ends, None)
        if found is None:
            break
        text = output[start:found.start()]
        start = found.end() + 1
        code = int(found.group(1))
        out, err = (text, "") if code == 0 else ("", text)
        results[key] = commands.CommandResult(tuple(argv_of[key]), code, out, err, 0.0)
    return results


class Ssh(NamedTuple):
    """How zsn runs ssh to one destination."""

    program: str
    destination: str
    ciphers: tuple[str, ...] = ()
    """Offered to the server in this order; empty: ssh's own."""

    def argv(self, remote_command: str, *, extra: Sequence[str] = ()) -> list[str]:
        options = ["-T", "-x", "-o", "BatchMode=yes", "-o", f"ConnectTimeout={CONNECT_TIMEOUT}",
                   "-o", f"ServerAliveInterval={ALIVE_INTERVAL}", "-o",
                   f"ServerAliveCountMax={ALIVE_COUNT}"]
        if self.ciphers:
            options += ["-o", "Ciphers=" + ",".join(self.ciphers)]
        return [self.program, *options, *extra, "--", self.destination, remote_command]


class Side:
    """Runs zfs commands where a dataset lives: here, or over SSH (`ssh` set)."""

    def __init__(self, endpoint: Endpoint, ssh: Ssh | None = None) -> None:
        self.endpoint = endpoint
        self.ssh = ssh
        self.zfs = "zfs" if ssh else require_program("zfs")
        self.zpool = "zpool" if ssh else require_program("zpool")

    @property
    def where(self) -> str:
        return f"on {self.endpoint.host}" if self.endpoint.remote else "here"

    def command(self, argv: Sequence[str], *, announce: bool = False) -> list[str]:
        """The argv that runs `argv` on this side (through ssh for a remote one, saying
        `READY` first with `announce`)."""
        if self.ssh is None:
            return list(argv)
        return self.ssh.argv("sh -c " + shlex.quote(
            remote_script([argv], exec_last=True, announce=announce)))

    def run_batch(self, jobs: Mapping[str, Sequence[str]],
                  timeout: float = BATCH_TIMEOUT) -> dict[str, commands.CommandResult]:
        """Each job's result; here side by side, there over one connection. A side that
        cannot be reached at all is a `ZsnError`."""
        if self.ssh is None:
            from zsn.zfs.live import run_side_by_side

            found = run_side_by_side(jobs, lambda argv: run_zfs_command(argv, timeout=timeout))
            failed = [r for r in found.values() if isinstance(r, CommandError)]
            if failed:
                raise failed[0]
            return {k: r for k, r in found.items() if isinstance(r, commands.CommandResult)}
        keys = list(jobs)
        script = remote_script([jobs[key] for key in keys])
        argv = self.ssh.argv("sh -c " + shlex.quote(script))
        result = commands.run(argv, timeout=timeout, check=False, env=ENV)
        results = split_batch(result.stdout, keys, jobs)
        if len(results) < len(keys):
            raise ZsnError(f"ssh {self.endpoint.destination}: {ssh_failure(result)}")
        return results


def ssh_failure(result: commands.CommandResult) -> str:
    """Why ssh (not the remote command) failed, in one line."""
    lines = [line.strip() for line in result.stderr.splitlines()
             if line.strip() and not line.startswith("debug")]
    reason = lines[-1] if lines else f"exit status {result.returncode}"
    if "Permission denied" in reason:
        return (f"{reason} (zsn runs ssh with BatchMode=yes: a key or an agent is needed, "
                "never a password)")
    if "Host key verification failed" in reason:
        return f"{reason} (connect once with ssh to check and record the host key)"
    return reason


# -- ssh's configuration and ciphers -----------------------------------------------------
def ssh_config(program: str, destination: str) -> dict[str, str]:
    """``ssh -G DESTINATION``: the options ssh would use (no connection is made)."""
    result = commands.run([program, "-G", "--", destination], timeout=10, check=False,
                          env=ENV)
    if not result.ok:
        raise ZsnError(f"ssh -G {destination}: {ssh_failure(result)}")
    found: dict[str, str] = {}
    for line in result.stdout.splitlines():
        key, _, value = line.partition(" ")
        found.setdefault(key.lower(), value)
    return found


@cache
def cipher_order(sample_bytes: int = 1 << 20) -> tuple[str, ...]:
    """The AEAD ciphers, fastest first on this CPU: each encrypts `sample_bytes` through
    OpenSSL (what OpenSSH uses) and is timed. Where AES instructions exist AES-GCM wins
    several times over; without them (or emulated) ChaCha20-Poly1305 does."""
    from cryptography.hazmat.primitives.ciphers.aead import AESGCM, ChaCha20Poly1305

    data = bytes(min(sample_bytes, 1 << 16))
    rounds = max(1, sample_bytes // len(data))
    timings: dict[str, float] = {}
    for name, make in (("aes128-gcm@openssh.com", lambda: AESGCM(bytes(16))),
                       ("aes256-gcm@openssh.com", lambda: AESGCM(bytes(32))),
                       ("chacha20-poly1305@openssh.com", lambda: ChaCha20Poly1305(bytes(32)))):
        cipher = make()
        nonce = bytes(12)
        started = time.perf_counter()
        for _ in range(rounds):
            cipher.encrypt(nonce, data, None)
        timings[name] = time.perf_counter() - started
    return tuple(sorted(FAST_CIPHERS, key=lambda name: timings[name]))


def order_ciphers(allowed: Sequence[str], fastest: Sequence[str]) -> tuple[str, ...]:
    """`allowed` (the user's list) with the fast ciphers it holds first, in `fastest`'s
    order; the others keep their order after them."""
    first = [name for name in fastest if name in allowed]
    return tuple(first + [name for name in allowed if name not in first])


def connect(endpoint: Endpoint, *, measure: Callable[[], Sequence[str]] = cipher_order) -> Ssh:
    """An `Ssh` for the endpoint's host: the user's ciphers, fastest first."""
    program = require_ssh()
    config = ssh_config(program, endpoint.destination)
    allowed = [c for c in config.get("ciphers", "").split(",") if c]
    return Ssh(program, endpoint.destination, order_ciphers(allowed, measure()))


def require_ssh() -> str:
    from shutil import which

    found = which("ssh", path=os.environ.get("PATH", os.defpath))
    if found is None:
        raise ZsnError("ssh is not installed (Debian: apt install openssh-client)")
    return found
