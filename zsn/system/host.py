"""`Host`: the machine zsn looks at, rooted at `--root` (``/`` for the live system).

The path rule: under ``--root DIR`` every file zsn reads or writes, every folder it
lists and every socket it connects to is found as a chroot into DIR would find it.
`Host.path` names the place (``DIR/etc/netplan/01.yaml``); `zsn.system.files` and
`zsn.system.sockets` resolve such a name with `confine` before they touch it: each
symbolic link on the way is followed inside DIR (an absolute target is taken relative
to DIR, ``..`` stops at DIR), and a chain of more than `MAX_LINK_HOPS` links is
refused, naming the link. So a tree zsn did not make (a VM image, a restored backup)
may point anywhere it likes: zsn never reads, writes or talks to anything outside it.
On the live system (``/``) the kernel resolves paths itself, exactly so.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import NamedTuple

from zsn.errors import AccessDeniedError, ZsnError

MAX_LINK_HOPS = 40
"""Symbolic links followed for one path: Linux's MAXSYMLINKS."""
_LIVE_ROOT = Path("/")
_ROOTS: set[str] = set()
"""Every root other than ``/`` a `Host` named a path under, in this process."""


class Host(NamedTuple):
    """Resolves every system path under `root`, so tests and offline editing never touch /etc."""

    root: Path = Path("/")

    @classmethod
    def at(cls, root: str | os.PathLike[str]) -> Host:
        """A host rooted at `root`, refusing a root that does not exist or cannot be read."""
        path = Path(root).resolve()
        if not path.is_dir():
            raise ZsnError(f"root {str(root)!r} is not a directory")
        if not os.access(path, os.R_OK | os.X_OK):
            raise ZsnError(f"root {str(root)!r} cannot be read (permission denied)")
        return cls(path)

    @property
    def is_live(self) -> bool:
        """True when zsn looks at the running system rather than a tree under another root."""
        return self.root == _LIVE_ROOT

    @property
    def is_superuser(self) -> bool:
        return os.geteuid() == 0

    def path(self, system_path: str | os.PathLike[str]) -> Path:
        """`system_path` (absolute, as on a real system) under this host's root, as it
        is spelled: `zsn.system.files` resolves it (`confine`) when it is used."""
        if self.root != _LIVE_ROOT:
            _ROOTS.add(os.fspath(self.root))
        relative = os.fspath(system_path).lstrip("/")
        return self.root / relative if relative else self.root

    def system_path(self, path: str | os.PathLike[str]) -> str:
        """`path` (spelled under this host's root, as `path` spells it) as the system
        inside the root names it: the inverse of `path`. A `ValueError` for a path
        outside the root."""
        text = os.path.normpath(os.fspath(path))
        if self.root == _LIVE_ROOT:
            if not text.startswith("/"):
                raise ValueError(f"{text!r} is not an absolute path")
            return text
        root = os.fspath(self.root)
        if text == root:
            return "/"
        if not text.startswith(root + "/"):
            raise ValueError(f"{text} is not inside {root}")
        return text[len(root):]

    def resolve(self, system_path: str | os.PathLike[str]) -> Path:
        """Where `system_path` really is: every link on the way followed inside the root."""
        return confine(self.path(system_path))

    @property
    def system_bus_socket(self) -> Path | None:
        """The system bus's unix socket, when its address names one."""
        address = self.system_bus_address
        prefix = "unix:path="
        if not address.startswith(prefix):
            return None
        return Path(address[len(prefix):].split(",", 1)[0])

    @property
    def system_bus_address(self) -> str:
        """D-Bus address of the system bus; under `--root` the socket inside that tree."""
        if self.is_live and "DBUS_SYSTEM_BUS_ADDRESS" in os.environ:
            return os.environ["DBUS_SYSTEM_BUS_ADDRESS"]
        return f"unix:path={self.resolve('/run/dbus/system_bus_socket')}"


def root_of(path: Path) -> Path | None:
    """The root other than ``/`` that `path` lies under (the innermost, for roots
    inside roots); None for a path of the live system."""
    text = os.fspath(path)
    while text:  # from the path itself up: the innermost root first
        if text in _ROOTS:
            return Path(text)
        text = text.rpartition("/")[0]
    return None


def confine(path: Path) -> Path:
    """`path` as a chroot into its root would find it: the real place of what it
    names, inside the root (see the module docstring); `path` itself on the live
    system. A part that does not exist (yet) ends the resolution: the rest is taken
    as it is spelled (``..`` still stops at the root)."""
    root = root_of(path) if _ROOTS else None
    if root is None:
        return path
    return resolve_under(root, path)


def resolve_under(root: Path, path: Path) -> Path:
    """`path` (at or under `root`) with its links followed as a chroot into `root`
    would follow them."""
    relative = os.fspath(path)[len(os.fspath(root)):]
    pending = [part for part in reversed(relative.split("/")) if part]
    current = root
    hops = 0
    exists = True
    while pending:
        part = pending.pop()
        if part == ".":
            continue
        if part == "..":
            if current != root:
                current = current.parent
            continue
        candidate = current / part
        if exists:
            try:
                mode = os.lstat(candidate).st_mode
            except (FileNotFoundError, NotADirectoryError):
                exists = False
            except PermissionError as exc:
                raise AccessDeniedError(
                    f"{candidate}: permission denied (root needed?)") from exc
            else:
                if stat.S_ISLNK(mode):
                    hops += 1
                    if hops > MAX_LINK_HOPS:
                        raise ZsnError(f"{candidate}: more than {MAX_LINK_HOPS} symbolic "
                                       f"links on the way to {path}; not followed")
                    target = os.readlink(candidate)
                    if target.startswith("/"):
                        current = root
                    pending.extend(piece for piece in reversed(target.split("/")) if piece)
                    continue
        current = candidate
    return current
