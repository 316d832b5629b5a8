"""OpenVPN's own reading of a config: its option dump (``--verb 4`` prints every option
after parsing and checking the config, before it opens anything that matters).

OpenVPN checks that the files a config names exist before the dump, so each one it
names in an "Options error: --X fails with 'FILE'" is created empty (a script, ``up``
or ``client-connect`` ..., executable) in the config's folder, and OpenVPN runs again,
up to `ROUNDS` times; a static key it pre-loads while checking the options (``tls-auth
ta.key``) is made with ``openvpn --genkey secret``. It runs in a private network
namespace (``unshare -n``), so a tun device or a socket it gets as far as opening
touches nothing of the host; it stops on the empty certificates.

    options(path) -> Dump
"""

from __future__ import annotations

import re
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

from zsn.openvpn.config import SCRIPT_OPTIONS

ROUNDS = 12
_MISSING = re.compile(r"Options error: --([\w-]+)(?: script)? fails with '([^']+)'")
_KEY = re.compile(r"Cannot pre-load keyfile \((.+?)\)")
_STAMP = r"^\S+ \S+ us=\d+ "
_OPTION = re.compile(_STAMP + r" {2}(\w+) = (.*)$")
_PROFILE = re.compile(_STAMP + r"Connection profiles \[(\d+)\]:$")
SECONDS = 8.0
"""How long one run may take: past the dump, a run that got as far as connecting is
stopped (its output is read up to there)."""


@dataclass
class Dump:
    options: dict[str, str] = field(default_factory=dict)
    """The general options (``mode``, ``tls_server``, ``dev`` ...), as printed."""
    profiles: list[dict[str, str]] = field(default_factory=list)
    """Each connection profile (``remote``, ``remote_port``, ``proto``)."""
    refused: str | None = None
    """An options error that is not a missing file (OpenVPN refuses the config)."""


def options(path: Path) -> Dump:
    output = ""
    for _round in range(ROUNDS):
        output = _run(path)
        missing = _MISSING.search(output)
        if missing:
            target = path.parent / missing.group(2)
            target.parent.mkdir(parents=True, exist_ok=True)
            target.touch()
            if missing.group(1) in SCRIPT_OPTIONS:
                target.chmod(0o755)
            continue
        key = _KEY.search(output)
        if key:
            subprocess.run(["openvpn", "--genkey", "secret", key.group(1)], cwd=path.parent,
                           capture_output=True, timeout=30, check=True)
            continue
        if "Options error" in output:
            line = next(line for line in output.splitlines() if "Options error" in line)
            return Dump(refused=line)
        return parse(output)
    raise RuntimeError(f"OpenVPN kept asking for files: {output[-500:]}")


def _run(path: Path) -> str:
    process = subprocess.Popen(["unshare", "-n", "openvpn", "--config", path.name, "--verb",
                                "4"], cwd=path.parent, stdout=subprocess.PIPE,
                               stderr=subprocess.STDOUT, text=True)
    try:
        output, _ = process.communicate(timeout=SECONDS)
    except subprocess.TimeoutExpired:
        process.kill()
        output, _ = process.communicate(timeout=10)
    return output


def parse(output: str) -> Dump:
    dump = Dump()
    current = dump.options
    for line in output.splitlines():
        profile = _PROFILE.match(line)
        if profile:
            current = {}
            dump.profiles.append(current)
            continue
        if "Connection profiles END" in line:
            current = dump.options
            continue
        option = _OPTION.match(line)
        if option:
            current.setdefault(option.group(1), option.group(2).strip("'"))
    return dump
