"""systemd-journald where systemd is not PID 1 (the kernel lab's guest), and daemons
logging into it as the units they are under systemd.

journald binds its sockets itself when none are passed to it
(src/journal/journald-native.c, -stream.c, -server.c: ``/run/systemd/journal/socket``,
``stdout``, ``io.systemd.journal`` for ``journalctl --sync``), but it refuses to start
without a cgroup root to name senders' units from (``cg_get_root_path``): cgroup2 is
mounted at /sys/fs/cgroup first when it is not there. A unit's process is put where
systemd puts it, in ``/sys/fs/cgroup/system.slice/UNIT``, before it connects to
journald's stdout stream (`systemd-cat`, which then runs the daemon in its own process):
journald names the sender's unit from that cgroup (``_SYSTEMD_UNIT``), which is what
``journalctl -u UNIT`` matches.
"""

from __future__ import annotations

import contextlib
import subprocess
from collections.abc import Iterator, Sequence
from pathlib import Path

from tests.lab.dbus import accepts
from tests.lab.netns import run, stop_process, wait_for
from tests.needs import needs_tools, unavailable

JOURNALD = Path("/lib/systemd/systemd-journald")
CGROUP = Path("/sys/fs/cgroup")
SOCKETS = Path("/run/systemd/journal")
STREAM = SOCKETS / "stdout"
CONTROL = SOCKETS / "io.systemd.journal"
"""The varlink socket `journalctl --sync` asks (the last one journald opens)."""


@contextlib.contextmanager
def running_journald(timeout: float = 60.0) -> Iterator[None]:
    """systemd-journald running (the volatile journal in /run/log/journal) until the end."""
    needs_tools("journalctl", "systemd-cat")
    if not JOURNALD.is_file():
        unavailable(f"{JOURNALD} is missing (Debian systemd)")
    if run(["stat", "--file-system", "--format=%T", str(CGROUP)]).stdout.strip() \
            != "cgroup2fs":
        run(["mount", "-t", "cgroup2", "cgroup2", str(CGROUP)])
    SOCKETS.mkdir(parents=True, exist_ok=True)
    process = subprocess.Popen([str(JOURNALD)], stdin=subprocess.DEVNULL,
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_for(lambda: process.poll() is None and accepts(STREAM) and accepts(CONTROL),
                 timeout, "systemd-journald's sockets")
        yield
    finally:
        stop_process(process, grace=10)
        for path in (STREAM, CONTROL, SOCKETS / "socket", SOCKETS / "dev-log"):
            path.unlink(missing_ok=True)


def as_unit(unit: str, argv: Sequence[str]) -> list[str]:
    """`argv` as the service `unit` runs it under systemd: in the unit's cgroup, its
    standard output and error on journald's stream under the program's name (its
    `SYSLOG_IDENTIFIER`)."""
    folder = CGROUP / "system.slice" / unit
    folder.mkdir(parents=True, exist_ok=True)
    # The shell moves itself, then becomes systemd-cat, which connects (journald reads
    # the cgroup of the connecting process) and becomes the daemon: one process.
    return ["sh", "-c", 'echo $$ > "$0" && exec "$@"', str(folder / "cgroup.procs"),
            "systemd-cat", f"--identifier={Path(argv[0]).name}", *argv]


def unit_text(unit: str, since: float | None = None) -> str:
    """The unit's messages as `journalctl -u UNIT -o cat` prints them (from the wall-clock
    time `since`, if given)."""
    argv = ["journalctl", "--no-pager", "--quiet", "--output=cat", f"--unit={unit}"]
    if since is not None:
        argv.append(f"--since=@{since:.6f}")
    return run(argv).stdout


def remove_unit_cgroup(unit: str) -> None:
    """Remove the unit's cgroup once its processes are gone."""
    with contextlib.suppress(OSError):
        (CGROUP / "system.slice" / unit).rmdir()

