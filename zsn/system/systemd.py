"""Whether systemd runs the host zsn looks at (the choice between its units and
programs zsn runs itself)."""

from __future__ import annotations

import re

from zsn.errors import ZsnError
from zsn.system import files
from zsn.system.host import Host

_SYSTEMD_SAFE = re.compile(r"[A-Za-z0-9:_.]")
_ESCAPED_RE = re.compile(r"\\x([0-9a-f]{2})")


def systemd_runs(host: Host) -> bool:
    """Whether systemd is the running init: sd_booted()'s test, or, for a tree under
    --root whose /run is private (a container), systemd answering on its bus."""
    if files.is_dir(host.path("/run/systemd/system")):
        return True
    if not files.exists(host.path("/run/dbus/system_bus_socket")):
        return False
    from zsn.system.dbus import SYSTEMD, SYSTEMD_MANAGER, SYSTEMD_PATH, run_sync

    try:
        run_sync(host, lambda bus: bus.get_all(SYSTEMD, SYSTEMD_PATH, SYSTEMD_MANAGER),
                 timeout=2.0)
    except ZsnError:
        return False
    return True


def systemd_escape(text: str) -> str:
    """`systemd-escape`: ``/`` becomes ``-``; bytes outside ``[A-Za-z0-9:_.]`` (and a
    leading ``.``) become ``\\xNN``."""
    out = []
    for index, char in enumerate(text):
        if char == "/":
            out.append("-")
        elif _SYSTEMD_SAFE.fullmatch(char) and not (index == 0 and char == "."):
            out.append(char)
        else:
            out.extend(f"\\x{byte:02x}" for byte in char.encode("utf-8"))
    return "".join(out)


def systemd_unescape(text: str) -> str:
    """`systemd-escape --unescape`: ``-`` is ``/``, ``\\xNN`` the byte NN."""
    raw = bytearray()
    index = 0
    while index < len(text):
        found = _ESCAPED_RE.match(text, index)
        if found:
            raw.append(int(found.group(1), 16))
            index = found.end()
            continue
        raw.extend(("/" if text[index] == "-" else text[index]).encode())
        index += 1
    return raw.decode("utf-8", "replace")
