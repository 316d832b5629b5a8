"""networkd's own reading of the config, as a lint source: what it ignores or refuses.

systemd 252 has no offline validator (``networkctl verify`` came later), so zsn runs the
installed systemd-networkd itself on a scratch copy of the config (regular files and
masks only), in a private mount and network namespace: a fresh ``/run`` (no bus, no
state of the real networkd), the copy bind-mounted over networkd's folders, a
read-only ``/sys`` (links count as initialised without udev, as in a container), no
link but ``lo``. It logs every line it ignores (``FILE:LINE: Unknown key ...``) and
every netdev it refuses (``NAME: VLAN without valid Id ... in FILE``) while it loads
the files; once it has enumerated the links and each netdev it loaded was created or
failed, it is stopped. Nothing of it reaches the host: the namespaces go with it.

Needs root, ``unshare`` (util-linux) and ``mount``; `check` returns None where it cannot
run, and the caller says the check was not made.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import stat
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple

from zsn import decode
from zsn.errors import CommandError, ZsnError
from zsn.system import commands, files
from zsn.system.host import Host

DIRS = ("/etc/systemd/network", "/run/systemd/network", "/usr/local/lib/systemd/network",
        "/usr/lib/systemd/network", "/lib/systemd/network")
"""networkd's folders (zsn.links.persist.NETWORKD_DIRS; zsn.system imports no domain)."""
BINARIES = ("/lib/systemd/systemd-networkd", "/usr/lib/systemd/systemd-networkd")
TIMEOUT = 20.0
"""Seconds for the whole check (networkd itself settles in well under one)."""
IDLE = 1.0
"""Seconds of silence after which networkd has nothing more to create."""
MAX_FILES = 2000
_LOADED_RE = re.compile(r'^(\S+): loaded "(\S+)"$')
_DONE_RE = re.compile(r"^(\S+): (?:Created|netdev ready|netdev could not be created.*|"
                      r"Could not create netdev.*)$")
_FILE_LINE_RE = re.compile(r"^(/\S+?):(\d+): (.*)$")
_IN_FILE_RE = re.compile(r"^(\S+): (.*) (?:in|from) (/\S+?)\.?$")
_FILE_RE = re.compile(r"^(/\S+?): (.*)$")
_NOISE = ("Failed to read $container", "Could not enumerate", "No permission to stat PID1",
          "Failed to get driver", "Failed to chase symlinks", "SELinux")


class Complaint(NamedTuple):
    path: str
    line: int | None
    message: str


def networkd_binary() -> str | None:
    return next((b for b in BINARIES if os.access(b, os.X_OK)), None)


def can_run() -> str | None:
    """Why the check cannot run here (None: it can)."""
    if os.geteuid() != 0:
        return "it needs root (private namespaces)"
    if networkd_binary() is None:
        return "systemd-networkd is not installed here"
    if shutil.which("unshare") is None or shutil.which("mount") is None:
        return "unshare and mount (util-linux) are needed"
    return None


def copy_tree(host: Host, scratch: Path) -> None:
    """The config folders of `host` into `scratch`: regular files (as zsn reads them)
    and masks (a link to /dev/null copied as an empty file); nothing else, so the
    copy holds no surprises and no links."""
    copied = 0
    for folder in DIRS:
        source = host.path(folder)
        if not files.is_dir(source):
            continue
        for path in files.walk(source):  # through the path rule: the tree's own files
            relative = path.relative_to(source)
            if len(relative.parts) > 2:
                continue  # NAME and NAME.d/DROPIN only
            target = scratch / folder.lstrip("/") / relative
            if files.is_link(path) and files.read_link(path) == "/dev/null":
                # A mask: an empty file is one too (systemd.network(5)), and the copy
                # holds no link to anything outside it.
                files.make_dirs(target.parent)
                files.write_atomic(target, "", previous=None, backup=False)
            elif files.is_file(path) and path.suffix in (".netdev", ".network", ".link",
                                                         ".conf"):
                copied += 1
                if copied > MAX_FILES:
                    raise ZsnError(f"more than {MAX_FILES} files under {folder}")
                files.make_dirs(target.parent)
                files.write_atomic(target, files.read_tracked(path).text, previous=None,
                                   backup=False)


def parse_log(lines: list[str]) -> list[Complaint]:
    """The warnings of networkd's log that name a file."""
    found: set[Complaint] = set()
    for line in lines:
        if any(noise in line for noise in _NOISE) or line.startswith("Skipping overridden"):
            continue
        match = _FILE_LINE_RE.match(line)
        if match:
            found.add(Complaint(match.group(1), int(match.group(2)), match.group(3)))
            continue
        match = _IN_FILE_RE.match(line)
        if match and match.group(3).startswith(DIRS):
            found.add(Complaint(match.group(3), None, f"{match.group(1)}: {match.group(2)}"))
            continue
        match = _FILE_RE.match(line)
        if match and match.group(1).startswith(DIRS):
            found.add(Complaint(match.group(1), None, match.group(2)))
    return sorted(found, key=lambda c: (c.path, c.line or 0, c.message))


def check(host: Host) -> list[Complaint] | None:
    """networkd's complaints about the config of `host`; None when it cannot run here."""
    if can_run() is not None:
        return None
    with tempfile.TemporaryDirectory(prefix="zsn-networkd-") as scratch:
        copy_tree(host, Path(scratch))
        try:
            result = commands.run(sandbox_argv(Path(scratch)), timeout=TIMEOUT)
        except CommandError as exc:
            raise ZsnError(f"networkd's own check could not run: {exc}") from exc
    return parse_report(result.stdout)


@dataclass
class _Report:
    log: list[str]


def parse_report(output: str) -> list[Complaint]:
    """The complaints in the sandbox's report (``{"log": [LINE, ...]}``)."""
    return parse_log(decode.from_json(output, _Report, "networkd's own check").log)


def sandbox_argv(scratch: Path, *extra: str) -> list[str]:
    return ["unshare", "--mount", "--net", "--fork", "--propagation", "private",
            sys.executable, "-m", "zsn.system.networkd_sandbox", str(scratch), *extra]


# -- inside the namespaces ----------------------------------------------------------------
def _mount(*args: str) -> None:
    subprocess.run(["mount", *args], check=True, timeout=10, capture_output=True)


def hide_and_bind(scratch: Path) -> None:
    """Each networkd folder shows the scratch copy's (or nothing); /run and /sys are
    the namespace's own. Run only in a private mount namespace."""
    _mount("--make-rprivate", "/")
    _mount("-t", "tmpfs", "tmpfs", "/run")
    empty = Path("/run/zsn-empty")
    empty.mkdir()
    done: set[str] = set()
    for folder in DIRS:
        source = scratch / folder.lstrip("/")
        target = Path(folder)
        real = os.path.realpath(target)
        if real in done:
            continue  # /lib is /usr/lib on a merged-/usr system
        done.add(real)
        if folder.startswith("/run/"):
            target.mkdir(parents=True, exist_ok=True)
        elif not target.is_dir():
            if not source.is_dir():
                continue
            holder = target.parent
            while not holder.is_dir():
                holder = holder.parent
            if str(holder) != "/usr/local/lib":
                raise RuntimeError(f"{folder} is missing and {holder} may not be hidden")
            _mount("-t", "tmpfs", "tmpfs", str(holder))
            target.mkdir(parents=True)
        _mount("--bind", str(source if source.is_dir() else empty), folder)
    _mount("-t", "sysfs", "-o", "ro", "sysfs", "/sys")


def _final_states() -> bool:
    for path in Path("/run/systemd/netif/links").glob("*"):
        state = next((line.partition("=")[2] for line in path.read_text().splitlines()
                      if line.startswith("ADMIN_STATE=")), "")
        if state not in ("configured", "unmanaged", "failed", "linger"):
            return False
    return True


def run_networkd(settled: Callable[[], bool] = _final_states,
                 before_stop: Callable[[], None] | None = None) -> list[str]:
    """Start networkd, wait until it has loaded everything and `settled()` holds, call
    `before_stop` (networkd removes its state files when it stops), stop it; its log
    lines."""
    binary = networkd_binary()
    assert binary is not None
    log_path = Path("/run/zsn-networkd.log")
    environment = {"PATH": "/usr/sbin:/usr/bin:/sbin:/bin", "SYSTEMD_LOG_LEVEL": "debug",
                   "SYSTEMD_LOG_TARGET": "console", "SYSTEMD_LOG_COLOR": "0"}
    with log_path.open("w") as log:
        daemon = subprocess.Popen([binary], stdout=log, stderr=subprocess.STDOUT,
                                  env=environment)
    deadline = time.monotonic() + TIMEOUT - 5
    size, changed = -1, time.monotonic()
    try:
        while time.monotonic() < deadline and daemon.poll() is None:
            text = log_path.read_text(errors="replace")
            if len(text) != size:
                size, changed = len(text), time.monotonic()
            lines = text.splitlines()
            loaded = {m.group(1) for line in lines if (m := _LOADED_RE.match(line))}
            done = {m.group(1) for line in lines if (m := _DONE_RE.match(line))}
            # A stacked netdev (VLAN, macvlan) whose parent is missing is never created,
            # and one the kernel cannot make is failed in its parent's name: networkd
            # idle for a while is done with them too.
            idle = time.monotonic() - changed >= IDLE
            if "Enumeration completed" in lines and (loaded <= done or idle) and settled():
                break
            time.sleep(0.05)
        if before_stop is not None:
            before_stop()
    finally:
        daemon.terminate()
        try:
            daemon.wait(5)
        except subprocess.TimeoutExpired:
            daemon.kill()
            daemon.wait(5)
    return log_path.read_text(errors="replace").splitlines()


def main(scratch: Path) -> None:
    hide_and_bind(scratch)
    json.dump({"log": run_networkd()}, sys.stdout)


if __name__ == "__main__":
    if len(sys.argv) != 2 or not stat.S_ISDIR(os.stat(sys.argv[1]).st_mode):
        raise SystemExit("usage: python -m zsn.system.networkd_sandbox SCRATCH")
    main(Path(sys.argv[1]))
