"""A unit's recent log lines from the systemd journal.

There is no D-Bus API for reading the journal, so this runs `journalctl` (argv, no
shell) on the journal files themselves: for the live system as usual, and with
`--root DIR` on the files under DIR (DIR/var/log/journal, the persistent journal;
a volatile journal in a running system's private /run cannot be read from outside).
Reading the files needs no daemon and no bus, and works on an offline tree too.
A line a daemon has just written may still be in journald's socket queue: `synchronize`
waits until journald has stored everything sent to it before the call.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from zsn import decode
from zsn.errors import ValidationError, ZsnError
from zsn.system.commands import run
from zsn.system.host import Host

_UNIT_RE = re.compile(r"[A-Za-z0-9:_.@\\-]+\.(service|socket|target|timer|mount)")


@dataclass(frozen=True)
class JournalLine:
    timestamp_us: int
    priority: int
    """syslog priority: 0 emergency ... 3 error, 4 warning ... 7 debug."""
    identifier: str
    message: str


def unit_lines(host: Host, unit: str, *, lines: int = 100,
               timeout: float = 10.0) -> list[JournalLine]:
    """The last `lines` journal entries of `unit`, oldest first."""
    if not _UNIT_RE.fullmatch(unit):
        raise ValidationError(f"{unit!r} is not a unit name")
    argv = ["journalctl", "--no-pager", "--quiet", "--output=json", f"--lines={lines}",
            f"--unit={unit}"]
    if not host.is_live:
        argv.insert(1, f"--root={host.root}")
    return parse_entries(run(argv, timeout=timeout).stdout)


def synchronize(host: Host, *, timeout: float = 10.0) -> None:
    """Have journald store every message sent to it before this call (`journalctl
    --sync`, root only: it returns once journald has written what was queued on its
    sockets), so the lines a daemon logged before it answered are read after it.
    Nothing to wait for on an offline tree (`--root`): no daemon writes there."""
    if host.is_live:
        run(["journalctl", "--sync"], timeout=timeout)


def parse_entries(output: str) -> list[JournalLine]:
    """`journalctl --output=json` lines as entries; a line that is not an entry is skipped."""
    entries: list[JournalLine] = []
    for raw in output.splitlines():
        try:
            entry = decode.from_json(raw, dict[str, Any], "journalctl")
        except ZsnError:
            continue
        message = entry.get("MESSAGE", "")
        if isinstance(message, list):  # journalctl's form for non-UTF-8 messages
            message = bytes(b for b in message if isinstance(b, int) and 0 <= b < 256
                            ).decode("utf-8", "replace")
        entries.append(JournalLine(
            timestamp_us=_integer(entry.get("__REALTIME_TIMESTAMP"), 0),
            priority=_integer(entry.get("PRIORITY"), 6),
            identifier=str(entry.get("SYSLOG_IDENTIFIER", "")),
            message=message if isinstance(message, str) else json.dumps(message),
        ))
    return entries


def _integer(value: object, default: int) -> int:
    """journalctl writes numbers as decimal strings."""
    text = str(value) if isinstance(value, (str, int)) and not isinstance(value, bool) else ""
    return int(text) if text.isascii() and text.isdigit() else default
