"""Lines OpenVPN refuses as it reads a config, so it never starts: zsn's reading of its
option table (`zsn.openvpn.options`), the combinations its options_postprocess refuses
that a profile meets most (a server with ``remote`` or ``nobind``, a client-side
``nobind`` without ``remote``, server-only options without ``--mode server``, more than
one of ``tls-server``, ``tls-client`` and ``secret``), and, when the openvpn binary is
installed, the binary's own parse of a copy that starts nothing.

The copy (a private scratch folder, prefix ``zsn-``) keeps every line where it was, with
the options OpenVPN acts on while it parses blanked out: ``plugin`` and ``providers``
load code, ``log``, ``log-append``, ``syslog`` and ``daemon`` redirect or take its
output, ``cd`` and ``chroot`` change folders, ``config`` includes another file,
``user`` and ``group`` look up this host's accounts, and the scripts and code it would
run it checks are there (their parameters are zsn's table's to check). OpenVPN then
runs as ``openvpn --config COPY --show-curves``: it reads the whole config (every
add_option check) and stops at printing the curves, before it checks files, opens a
device, a socket or a management interface, or runs a script.
"""

from __future__ import annotations

import functools
import os
import re
import shutil
import tempfile
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from zsn.errors import CommandError, ParseError
from zsn.openvpn.config import INLINE, SCRIPT_OPTIONS, Directive, OvpnConfig, parse
from zsn.openvpn.effects import PROGRAM_OPTIONS
from zsn.openvpn.options import (
    CHOICES,
    COUNTS,
    INLINE_OPTIONS,
    MEASURED_ON,
    REMOVED,
    SERVER_ONLY,
    SPECIAL_COUNTS,
)
from zsn.system import commands, files
from zsn.terminal import one_line

ACTS_WHILE_PARSING = frozenset({"log", "log-append", "syslog", "daemon", "cd", "chroot",
                                "config", "user", "group", *SCRIPT_OPTIONS,
                                *PROGRAM_OPTIONS})
"""Options OpenVPN acts on while it reads them (a script it checks is there, code it
loads): blanked in the copy it checks."""
TIMEOUT = 10.0
SBIN = ("/usr/sbin", "/sbin", "/usr/local/sbin")
_OPTIONS_ERROR = re.compile(r"Options error: (.*)")
_WHERE = re.compile(r"(?:in |\()(\S+?):(\d+)[:)]")


@dataclass(frozen=True)
class Refusal:
    line: int | None
    """1-based line of the config (None: OpenVPN named none)."""
    message: str


def _count_text(low: int, high: int) -> str:
    if low == high:
        return f"{low} parameter{'s' if low != 1 else ''}"
    return f"{low} to {high} parameters"


def option_refusals(directives: Iterable[tuple[Directive, int]]) -> list[Refusal]:
    """What OpenVPN's option table refuses among `directives` ((directive, 1-based
    line), in the order OpenVPN reads them): an option it does not know, a wrong number
    of parameters, a value it checks. ``setenv opt`` and ``ignore-unknown-option`` make
    the first two a warning, as they do for OpenVPN."""
    found: list[Refusal] = []
    ignored: set[str] = set()
    for directive, line in directives:
        name, args = directive.name, directive.args
        lenient = directive.hidden_by is not None or name in ignored
        if name == "ignore-unknown-option":
            ignored.update(arg.removeprefix("--") for arg in args)
        if directive.inline is not None and name not in INLINE_OPTIONS:
            found.append(Refusal(line, f"option '{name}' is not expected to be inline"))
            continue
        if name == "connection" and directive.inline is not None:
            found.extend(_connection(directive, line))
            continue
        problem = _count_problem(name, args)
        if problem is not None:
            if not lenient:
                found.append(Refusal(line, problem))
            continue
        if name in REMOVED:
            found.append(Refusal(line, f"--{name} {REMOVED[name]}"))
            continue
        found.extend(Refusal(line, problem) for problem in _value_problems(name, args))
    return found


def combination_refusals(directives: list[tuple[Directive, int]]) -> list[Refusal]:
    """What options_postprocess_verify_ce refuses of these options together (helper.c
    first turns ``server``/``server-bridge`` into ``--mode server --tls-server`` and
    ``client`` into ``--pull --tls-client``)."""
    lines: dict[str, int] = {}
    for directive, line in directives:
        lines[directive.name] = line
        if directive.name == "connection" and directive.inline is not None:
            try:
                inner = parse(directive.inline)
            except ParseError:
                continue
            if inner.has("remote"):
                lines.setdefault("remote", line)
    mode = [d.arg for d, _line in directives if d.name == "mode"]
    server = (mode[-1:] == ["server"]) or "server" in lines or "server-bridge" in lines
    found = []

    def refuse(option: str, why: str) -> None:
        found.append(Refusal(lines[option], f"--{option} {why}: OpenVPN refuses the config"))

    if server:
        for option, why in (("remote", "cannot be used with --mode server"),
                            ("nobind", "cannot be used with --mode server"),
                            ("pull", "cannot be used with --mode server"),
                            ("client", "cannot be used with --server")):
            if option in lines:
                refuse(option, why)
    else:
        if "nobind" in lines and "remote" not in lines:
            refuse("nobind", "doesn't make sense unless used with --remote")
        for option in SERVER_ONLY:
            if option in lines:
                refuse(option, "requires --mode server")
    if "nobind" in lines:
        for option in ("bind", "local", "lport"):
            if option in lines:
                refuse(option, "and --nobind can't be used together")
    modes = [name for name in ("tls-server", "tls-client", "secret") if name in lines or
             (name == "tls-server" and server) or (name == "tls-client" and "client" in lines)]
    if len(modes) > 1:
        found.append(Refusal(max(lines.get(name, 0) for name in modes) or None,
                             f"--{' and --'.join(modes)}: specify only one of --tls-server, "
                             "--tls-client, or --secret"))
    return found


def _count_problem(name: str, args: tuple[str, ...]) -> str | None:
    if name not in COUNTS and name not in SPECIAL_COUNTS:
        return (f"'{name}' is not an option OpenVPN {MEASURED_ON} knows on Linux "
                "(Unrecognized option)")
    count = len(args)
    special = SPECIAL_COUNTS.get(name)
    if special is not None:
        if count in special:
            allowed = special[count]
            if allowed is None or args[-1] in allowed:
                return None
        shown = " or ".join(str(c) for c in special)
        return (f"'{name}' takes {shown} parameters, here {count}: OpenVPN refuses the line "
                "(Unrecognized option or missing or extra parameter(s))")
    low, high = COUNTS[name]
    if low <= count <= high:
        return None
    placeholder = any(arg.startswith("<") or arg.endswith(">") for arg in args)
    return (f"'{name}' takes {_count_text(low, high)}, here {count}"
            + (" (a placeholder left in?)" if placeholder else "")
            + ": OpenVPN refuses the line (Unrecognized option or missing or extra "
              "parameter(s))")


def _value_problems(name: str, args: tuple[str, ...]) -> list[str]:
    problems = []
    for position, value in enumerate(args, start=1):
        allowed = CHOICES.get((name, position))
        if allowed is None or value in allowed or value == INLINE:
            continue
        if name == "tls-version-min" and position == 1 and args[1:2] == ("or-highest",):
            continue
        problems.append(f"'{name}' does not take '{value}' there (OpenVPN takes "
                        f"{', '.join(sorted(allowed))})")
    return problems


def _connection(directive: Directive, line: int) -> list[Refusal]:
    """The options of a ``<connection>`` block, numbered as lines of the file."""
    try:
        block = parse(directive.inline or "")
    except ParseError:
        return []  # zsn's own parse of the file says what is wrong with it
    return option_refusals((inner, line + 1 + inner.line) for inner in block.directives)


def openvpn_binary() -> str | None:
    path = os.pathsep.join([os.environ.get("PATH", ""), *SBIN])
    return shutil.which("openvpn", path=path)


def openvpn_refusal(config: OvpnConfig, name: str = "config.conf") -> Refusal | None:
    """OpenVPN's own "Options error" for `config`, parsed as described above; None when it
    reads it, or when no openvpn binary is installed (`CommandError`: it could not run).
    A config read again unchanged (the pane's every poll) is not parsed again."""
    binary = openvpn_binary()
    if binary is None:
        return None
    return _parsed_by(binary, config.render(), Path(name).name)


@functools.lru_cache(maxsize=64)
def _parsed_by(binary: str, text: str, name: str) -> Refusal | None:
    config = parse(text, name)
    lines = list(config.lines)
    for directive in config.directives:
        if directive.name in ACTS_WHILE_PARSING:
            for number in range(directive.line, directive.end):
                lines[number] = "\n"
    with tempfile.TemporaryDirectory(prefix="zsn-openvpn-") as scratch:
        copy = Path(scratch) / name
        files.write_atomic(copy, "".join(lines), previous=None,
                           mode=files.PRIVATE_FILE_MODE, backup=False)
        result = commands.run([binary, "--config", str(copy), "--show-curves"],
                              timeout=TIMEOUT, check=False, input_text="",
                              env={"LC_ALL": "C"})
        output = result.stdout + "\n" + result.stderr
        error = _OPTIONS_ERROR.search(output)
        if error is None:
            return None
        message = error.group(1).strip()
        where = _WHERE.search(message)
        line = int(where.group(2)) if where and where.group(1) == str(copy) else None
        message = message.replace(str(copy), name)
    return Refusal(line, f"OpenVPN itself: {one_line(message)}")


def profile_refusals(config: OvpnConfig, name: str) -> tuple[list[Refusal], str | None]:
    """Everything zsn and the installed openvpn refuse in one file (its options, their
    combinations, OpenVPN's own word first when zsn's table missed it), and why openvpn
    could not be asked, if it could not."""
    directives = [(directive, directive.line + 1) for directive in config.directives]
    found = option_refusals(directives) + combination_refusals(directives)
    try:
        own = openvpn_refusal(config, name)
    except CommandError as exc:
        return found, f"the installed openvpn could not check it: {exc}"
    if own is not None and not any(refusal.line == own.line for refusal in found):
        found.insert(0, own)
    return found, None
