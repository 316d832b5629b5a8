"""The state rule: what zsn reads back as its own state must be safe from everyone else.

zsn keeps state it later acts on as root: try records (whose undo it carries out),
the peer history, its settings under ``/etc/zsn`` (hook commands it runs), the
client configs whose keys it generated. Whoever can change such a file can make
zsn act for them. So, like OpenSSH's ``StrictModes`` for ``authorized_keys``, zsn
trusts such a file only when nobody but root (or the user zsn runs as, when not
root) could have put it there:

- it is a regular file (a store: a folder), owned by root or by zsn's user;
- it is not writable by group or others;
- no part of its path is a symbolic link;
- every folder above it, up to ``/`` (under ``--root``: up to and including the
  tree's root), is owned by root or zsn's user and not writable by group or others
  (the sticky bit does not help: a folder others may write is refused).

Anything else is refused with one line naming the path and the command that fixes
it (`UnsafeStateError`), and nothing is read from it or written to it.

`check` is the one function that decides. Every access `zsn.system.files` makes
below one of the `PLACES` (its reads, listings, writes, removals, ``make_dirs``)
calls it first, so a store kept there is checked without a word from its module.
A module that keeps state elsewhere (the web config the admin names) or opens it
other than through `files` (SQLite opens the history itself) calls `check` itself
before the open; ``tests/unit/test_own_state.py`` fails when a module names a path
of zsn's own outside `PLACES`, or bypasses `files` for state without calling it.

For a new store (policy files, replication state, SMART history): put it under
``/var/lib/zsn`` (kept), ``/run/zsn`` (forgotten at boot) or ``/etc/zsn`` (what
the admin writes), reach it with `Host.path` and `zsn.system.files`, and create
its folders with `files.make_dirs` (made without group/other write whatever the
umask). That is all: the rule applies by itself.
"""

from __future__ import annotations

import os
import shlex
import stat
from pathlib import Path

from zsn.errors import UnsafeStateError
from zsn.system.host import confine, root_of

PLACES = ("/etc/zsn", "/run/zsn", "/var/lib/zsn", "/etc/wireguard/clients",
          "/etc/wireguard/acl")
"""Where zsn keeps its own state (system paths): everything below is checked."""
_UNSAFE_BITS = stat.S_IWGRP | stat.S_IWOTH


def root_and_path(path: Path) -> tuple[Path, str]:
    """The root `path` lies under (``/`` on the live system) and `path` as the system
    inside that root sees it (``/run/zsn/changes``)."""
    root = root_of(path)
    if root is None:
        return Path("/"), os.path.normpath(os.fspath(path))
    inside = os.fspath(path)[len(os.fspath(root)):]
    return root, os.path.normpath("/" + inside.lstrip("/"))


def is_own_state(path: Path) -> bool:
    """Whether `path` (as `Host.path` spells it) lies at or below one of the `PLACES`."""
    _root, system_path = root_and_path(path)
    return any(system_path == place or system_path.startswith(place + "/")
               for place in PLACES)


def check(path: Path, *, folder: bool = False) -> os.stat_result | None:
    """Refuse `path` unless zsn may trust it as its own state (the module's rule).

    `path` is spelled as `Host.path` spells it (under ``--root``, inside the tree);
    `folder`: it is a store (a folder), not a file. Returns its ``lstat``, or None
    when it does not exist yet (every folder above it that exists passed: zsn may
    create it) or when zsn may not even look (not root: the access that follows
    fails as it would have). Raises `UnsafeStateError`, one line with the part of
    the path that fails and the command that fixes it.
    """
    root, system_path = root_and_path(path)
    parts = [part for part in system_path.split("/") if part]
    current = root
    st: os.stat_result | None = None
    for index, part in enumerate(["", *parts]):
        current = current / part if part else current
        try:
            found = os.lstat(current)
        except (FileNotFoundError, NotADirectoryError, PermissionError):
            return None
        st = _checked(current, found, folder=folder or index < len(parts))
    return st


def _checked(path: Path, st: os.stat_result, *, folder: bool) -> os.stat_result:
    what = "folder" if folder else "file"
    quoted = shlex.quote(os.fspath(path))
    if stat.S_ISLNK(st.st_mode):
        raise UnsafeStateError(
            f"{path}: is a symbolic link (to {os.readlink(path)}), and zsn reaches its own "
            f"state through no link: put the {what} itself there (rm {quoted} && cp -a "
            f"{shlex.quote(_real(path))} {quoted})")
    if folder and not stat.S_ISDIR(st.st_mode):
        raise UnsafeStateError(f"{path}: is not a folder, and zsn keeps its state in one: "
                               f"move it away (mv {quoted} {quoted}.unsafe)")
    if not folder and not stat.S_ISREG(st.st_mode):
        raise UnsafeStateError(f"{path}: is not a regular file, and zsn reads its state only "
                               f"from one: move it away (mv {quoted} {quoted}.unsafe)")
    user = os.geteuid()
    problems, fixes = [], []
    if st.st_uid not in (0, user):
        problems.append(f"owned by {_user_name(st.st_uid)}")
        fixes.append(f"chown {_user_name(user)} {quoted}")
    if folder and st.st_mode & stat.S_ISVTX and st.st_mode & stat.S_IWOTH:
        # /tmp and the like: shared by design, never to be closed
        raise UnsafeStateError(
            f"{path}: a folder everyone may write to (mode {stat.S_IMODE(st.st_mode):04o}); "
            "zsn trusts its own state only in folders root alone can change: keep it "
            "elsewhere (e.g. under /etc/zsn)")
    if st.st_mode & _UNSAFE_BITS:
        problems.append(f"writable by {_writers(st.st_mode)} "
                        f"(mode {stat.S_IMODE(st.st_mode):04o})")
        fixes.append(f"chmod go-w {quoted}")
    if problems:
        owner = "root" if user == 0 else f"root or {_user_name(user)}"
        raise UnsafeStateError(
            f"{path}: {' and '.join(problems)}; zsn trusts its own state only where "
            f"{owner} alone can change it: {' && '.join(fixes)}")
    return st


def _writers(mode: int) -> str:
    if mode & stat.S_IWGRP and mode & stat.S_IWOTH:
        return "group and others"
    return "group" if mode & stat.S_IWGRP else "others"


def _user_name(uid: int) -> str:
    """The user's name (the one a chown takes), its number when it has none."""
    import pwd

    try:
        return pwd.getpwuid(uid).pw_name
    except KeyError:
        return str(uid)


def _real(path: Path) -> str:
    """Where the link `path` leads (under a root: inside it)."""
    return os.fspath(confine(path)) if root_of(path) is not None else os.path.realpath(path)
