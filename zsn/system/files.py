"""Files that must never be lost: tracked reads, atomic writes, backups, permissions.

A write goes to a temporary file in the target's directory (mode set before any
content is written), is fsynced and renamed over the target, and the directory is
fsynced. The previous content is kept as ``<name>.zsn-bak`` with the same mode.
A write is refused when the file changed on disk since zsn read it.

Temporary files are ``.NAME.zsn-PID-RANDOM.tmp``, created 0600 whatever the umask;
one left by a zsn that was killed is removed by the next write in its directory.

Every function here takes paths as `Host.path` names them and resolves them with
`zsn.system.host.confine` first: under ``--root`` nothing here reads, lists, writes
or removes anything outside the root, whatever links the tree holds. Below the
places zsn keeps its own state (`zsn.system.own_state.PLACES`), each read, listing,
write and removal passes the state rule (`own_state.check`) first.

Plans built one on top of another (`zsn apply`: a peer added to an interface the same
plan creates) read files through `staged`: inside it, the readers here see the texts
the earlier plans will write as if they were on disk, while nothing is written.
"""

from __future__ import annotations

import contextlib
import errno
import fnmatch
import os
import re
import shutil
import socket
import stat
import time
from collections.abc import Iterator, Mapping
from contextvars import ContextVar
from pathlib import Path
from typing import NamedTuple

from zsn.errors import AccessDeniedError, FileChangedError, ZsnError
from zsn.system import own_state
from zsn.system.host import Host, confine, root_of
from zsn.system.limits import MiB, describe_size

BACKUP_SUFFIX = ".zsn-bak"
PRIVATE_FILE_MODE = 0o600
PRIVATE_DIR_MODE = 0o700
TEMP_TAG = "zsn-"
_TEMP_RE = re.compile(r"\..+\.(?:" + TEMP_TAG + r"(?P<pid>[0-9]+)-[0-9a-f]+|[a-z0-9_]{8})\.tmp")
MAX_FILE_BYTES = 64 * MiB
"""Largest file zsn reads: a config with some 200 000 peers."""


class FileSnapshot(NamedTuple):
    """What a file held when zsn read it, and how to tell whether it changed since.

    A NamedTuple rather than a frozen dataclass: the class costs a sixth as much to
    create, which every start pays.
    """

    path: Path
    text: str
    """May hold private keys: never in a repr (logs, tracebacks, test output)."""
    mtime_ns: int
    size: int
    inode: int
    mode: int

    def __repr__(self) -> str:
        return (f"FileSnapshot(path={self.path!r}, mtime_ns={self.mtime_ns!r}, "
                f"size={self.size!r}, inode={self.inode!r}, mode={self.mode!r})")

    def matches(self, st: os.stat_result) -> bool:
        return (st.st_mtime_ns, st.st_size, st.st_ino) == (self.mtime_ns, self.size, self.inode)


_STAGED: ContextVar[Mapping[Path, str | None] | None] = ContextVar("zsn_staged_files",
                                                                   default=None)
"""The texts earlier plans will write (None: remove), by path as `Host.path` spells it."""
STAGED_IDENTITY = -1
"""The mtime, size and inode of a staged text's snapshot: no file on disk has them, so
an edit based on one is never written as it is (`zsn.plan.combined` bases it on what
the first edit of the file read)."""


@contextlib.contextmanager
def staged(texts: Mapping[Path, str | None]) -> Iterator[None]:
    """Within the block the readers here see `texts` (path -> text; None: removed) in
    place of what the disk holds; the mapping may grow as plans are staged."""
    token = _STAGED.set(texts)
    try:
        yield
    finally:
        _STAGED.reset(token)


def _staged_file(path: Path) -> tuple[bool, str | None]:
    """(whether `path` is staged, its staged text or None when staged as removed)."""
    texts = _STAGED.get()
    if texts is None or path not in texts:
        return False, None
    return True, texts[path]


def _staged_dir(directory: Path) -> bool:
    """Whether a staged text lies below `directory` (its folders come with it)."""
    texts = _STAGED.get()
    return texts is not None and any(text is not None and directory in path.parents
                                     for path, text in texts.items())


def read_tracked(path: Path, max_bytes: int = MAX_FILE_BYTES) -> FileSnapshot:
    """Read `path` as text, remembering its identity so a later write can check it.

    Only a regular file of at most `max_bytes` is read: a FIFO or a device in its
    place (a hostile or broken tree) is refused at once instead of blocking or
    streaming forever. The same goes for sysfs and procfs files (regular files there).
    """
    found, staged_text = _staged_file(path)
    if found:
        if staged_text is None:
            raise ZsnError(f"{path}: no such file")
        return FileSnapshot(path, staged_text, STAGED_IDENTITY, STAGED_IDENTITY,
                            STAGED_IDENTITY, PRIVATE_FILE_MODE)
    data, st = _read_regular(path, max_bytes)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ZsnError(f"{path}: not UTF-8 text (byte {exc.start})") from exc
    return FileSnapshot(path, text, st.st_mtime_ns, st.st_size, st.st_ino, stat.S_IMODE(st.st_mode))


def read_text(path: Path, max_bytes: int = MAX_FILE_BYTES) -> str:
    """The text of a regular file, with `read_tracked`'s checks and errors."""
    return read_tracked(path, max_bytes).text


def read_hostname(host: Host) -> str:
    """The host's name: this machine's, or what ``/etc/hostname`` says under a root."""
    if host.is_live:
        return socket.gethostname()
    try:
        return read_text(host.path("/etc/hostname"), 4096).strip() or "localhost"
    except ZsnError:
        return "localhost"


def read_bytes(path: Path, max_bytes: int) -> bytes:
    """The bytes of a regular file (a binary cache, a process's command line), with
    `read_tracked`'s checks and errors."""
    return _read_regular(path, max_bytes)[0]


def _own_state(path: Path, *, folder: bool = False) -> None:
    """The state rule, for a path below one of zsn's own state places."""
    if own_state.is_own_state(path):
        own_state.check(path, folder=folder)


def _own_state_entry(path: Path) -> None:
    """The state rule for an entry made, renamed or removed in a state folder."""
    if own_state.is_own_state(path.parent):
        own_state.check(path.parent, folder=True)


def _read_regular(path: Path, max_bytes: int) -> tuple[bytes, os.stat_result]:
    # Plain os calls: a file object costs more than reading a sysfs attribute or a kstat.
    _own_state(path)
    real = confine(path)
    # O_NONBLOCK: opening a FIFO must not wait for a writer; no effect on files.
    try:
        fd = os.open(real, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC | _no_new_link(real, path))
    except FileNotFoundError as exc:
        raise ZsnError(_missing(path, real)) from exc
    except PermissionError as exc:
        raise AccessDeniedError(f"{path}: permission denied (root needed?)") from exc
    except IsADirectoryError as exc:
        raise ZsnError(f"{path}: is a directory") from exc
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise ZsnError(f"{path}: became a symbolic link while zsn read it") from exc
        raise ZsnError(f"{path}: cannot be read ({exc.strerror or exc})") from exc
    try:
        st = os.fstat(fd)
        if stat.S_ISDIR(st.st_mode):
            raise ZsnError(f"{path}: is a directory")
        if not stat.S_ISREG(st.st_mode):
            raise ZsnError(f"{path}: not a regular file; zsn reads configs only from files")
        chunks: list[bytes] = []
        size = 0
        while size <= max_bytes:
            try:
                chunk = os.read(fd, max_bytes + 1 - size)
            except OSError as exc:
                raise ZsnError(f"{path}: cannot be read ({exc.strerror or exc})") from exc
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
    finally:
        os.close(fd)
    if size > max_bytes:
        raise ZsnError(f"{path}: larger than {describe_size(max_bytes)}; not read")
    return b"".join(chunks), st


def list_files(directory: Path, pattern: str = "*") -> list[Path]:
    """The entries of `directory` whose names match `pattern`, sorted; none when it does
    not exist. Unlike ``Path.glob``, a folder zsn may not read is an error, not empty:
    a report that found nothing must mean there was nothing."""
    _own_state(directory, folder=True)
    try:
        with os.scandir(confine(directory)) as entries:
            names = sorted(entry.name for entry in entries if fnmatch.fnmatchcase(entry.name,
                                                                                 pattern))
    except (FileNotFoundError, NotADirectoryError):
        names = []
    except PermissionError as exc:
        raise AccessDeniedError(f"{directory}: permission denied (root needed?)") from exc
    except OSError as exc:
        raise ZsnError(f"{directory}: cannot be listed ({exc.strerror or exc})") from exc
    texts = _STAGED.get()
    if texts:
        listed = {directory / name for name in names}
        for path, text in texts.items():
            if path.parent == directory and fnmatch.fnmatchcase(path.name, pattern):
                (listed.add if text is not None else listed.discard)(path)
        return sorted(listed)
    return [directory / name for name in names]


def walk(directory: Path) -> list[Path]:
    """Every file and folder below `directory`, sorted, named under `directory` as it
    is spelled; links are listed, never followed (under a root: inside it)."""
    _own_state(directory, folder=True)
    real = confine(directory)
    found: list[Path] = []
    for folder, dirs, names in os.walk(real, followlinks=False):
        relative = Path(folder).relative_to(real)
        found.extend(directory / relative / name for name in [*dirs, *names])
    return sorted(found)


Stamp = tuple[tuple[str, int, int, int, int], ...]


def stamp(*places: Path, limit: int = 10_000) -> Stamp:
    """What the files and folders at and below `places` look like, without reading them:
    each one's name, inode, mode, size and change time (links not followed; under a root,
    inside it). A file written, added, removed, renamed or chmod-ed changes it, so work
    that depends on those files alone can be skipped while it stays equal. At most
    `limit` entries."""
    found: list[tuple[str, int, int, int, int]] = []
    for place in places:
        pending = [str(confine(place))]
        while pending and len(found) < limit:
            path = pending.pop()
            try:
                st = os.lstat(path)
            except OSError:
                continue  # gone (or not to be looked at): its absence is in the stamp
            found.append((path, st.st_ino, st.st_mode, st.st_size, st.st_ctime_ns))
            if stat.S_ISDIR(st.st_mode):
                try:
                    with os.scandir(path) as entries:
                        pending.extend(entry.path for entry in entries)
                except OSError:
                    continue
    return tuple(sorted(found))


def exists(path: Path) -> bool:
    """Whether `path` exists; a ZsnError naming it when zsn may not even look."""
    found, staged_text = _staged_file(path)
    if found:
        return staged_text is not None
    if _staged_dir(path):
        return True
    try:
        os.stat(confine(path))
    except (FileNotFoundError, NotADirectoryError):
        return False
    except PermissionError as exc:
        raise AccessDeniedError(f"{path}: permission denied (root needed?)") from exc
    return True


def describe_os_error(exc: OSError) -> str:
    """One line for an OSError that reached a command's top level."""
    where = f"{exc.filename}: " if exc.filename else ""
    if isinstance(exc, PermissionError):
        return f"{where}permission denied (root needed?)"
    return f"{where}{exc.strerror or exc}"


def is_dir(path: Path) -> bool:
    """Whether `path` is a folder (a link to one counts; under a root, inside it)."""
    if _staged_dir(path):
        return True
    try:
        return stat.S_ISDIR(os.stat(confine(path)).st_mode)
    except (FileNotFoundError, NotADirectoryError):
        return False
    except PermissionError as exc:
        raise AccessDeniedError(f"{path}: permission denied (root needed?)") from exc


def lexists(path: Path) -> bool:
    """Whether `path` exists or is a link, even one that leads nowhere."""
    found, staged_text = _staged_file(path)
    if found:
        return staged_text is not None
    return os.path.lexists(confine(path.parent) / path.name)


def is_link(path: Path) -> bool:
    """Whether `path` itself is a symbolic link (the folders above it resolved)."""
    return os.path.islink(confine(path.parent) / path.name)


def _missing(path: Path, real: Path) -> str:
    """Why there is nothing at `path`: a link that leads nowhere inside the root is
    named as such (the tree may well hold its target outside: never read)."""
    if real != path and os.path.lexists(confine(path.parent) / path.name):
        return (f"{path}: a symbolic link to {read_link(path)}, which is not in the tree "
                f"(under --root links are followed inside it only)")
    return f"{path}: no such file"


def _no_new_link(real: Path, path: Path) -> int:
    """``O_NOFOLLOW`` for a path `confine` resolved (under a root): a link found there
    now was put there since, and is not followed; 0 on the live system."""
    return os.O_NOFOLLOW if real is not path else 0


def is_file(path: Path) -> bool:
    """Whether `path` is a regular file (a link to one counts; under a root, inside it)."""
    found, staged_text = _staged_file(path)
    if found:
        return staged_text is not None
    try:
        return stat.S_ISREG(os.stat(confine(path)).st_mode)
    except (FileNotFoundError, NotADirectoryError):
        return False
    except PermissionError as exc:
        raise AccessDeniedError(f"{path}: permission denied (root needed?)") from exc


def status(path: Path) -> os.stat_result:
    """`os.stat` of what `path` names (under a root, inside it)."""
    return os.stat(confine(path))


def read_link(path: Path) -> str:
    """The target of the symbolic link `path`, as it is written in the link."""
    return os.readlink(confine(path.parent) / path.name)


def make_dirs(path: Path) -> None:
    """Create the folder `path` and any missing parents (inside the root). Below a
    state place (`own_state.PLACES`) the folders it makes are writable by their owner
    only, whatever the umask, as the state rule wants them."""
    if not own_state.is_own_state(path):
        confine(path).mkdir(parents=True, exist_ok=True)
        return
    if own_state.check(path, folder=True) is not None:
        return
    missing = []
    current = path
    while own_state.check(current, folder=True) is None:
        missing.append(current)
        current = current.parent
    for folder in reversed(missing):
        with contextlib.suppress(FileExistsError):  # made meanwhile: checked below
            os.mkdir(folder, 0o755)
            os.chmod(folder, 0o755)
    own_state.check(path, folder=True)


def make_dir(path: Path, mode: int) -> None:
    """Create the one folder `path` (its parent exists), inside the root."""
    _own_state_entry(path)
    (confine(path.parent) / path.name).mkdir(mode=mode)


def remove_folder(path: Path) -> None:
    """Remove the empty folder `path` (a link in its place is not followed)."""
    _own_state_entry(path)
    os.rmdir(confine(path.parent) / path.name)


def remove_tree(path: Path) -> None:
    """Remove the folder `path` and everything in it (zsn's own records; inside the
    root, a link in its place is not followed); gone already is fine."""
    _own_state(path, folder=True)
    shutil.rmtree(confine(path.parent) / path.name, ignore_errors=True)


def open_append(path: Path, mode: int) -> int:
    """A descriptor appending to `path`, created with `mode` if missing (a log or a lock
    file zsn owns; inside the root, never through a link)."""
    _own_state(path)
    return os.open(confine(path.parent) / path.name,
                   os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_CLOEXEC | os.O_NOFOLLOW, mode)


def make_link(target: str, link: Path) -> None:
    """Create the symbolic link `link` (inside the root) pointing at `target`."""
    _own_state_entry(link)
    os.symlink(target, confine(link.parent) / link.name)


def remove(path: Path, *, missing_ok: bool = False) -> None:
    """Remove the file `path` names (the entry itself: a link is removed, not followed)."""
    _own_state_entry(path)
    try:
        os.unlink(confine(path.parent) / path.name)
    except FileNotFoundError:
        if not missing_ok:
            raise


def remove_link(link: Path) -> None:
    """Remove the symbolic link `link` itself, never what it points at."""
    _own_state_entry(link)
    named = confine(link.parent) / link.name
    if not os.path.islink(named):
        raise FileChangedError(f"{link}: is no longer a symbolic link; not removed")
    os.unlink(named)


def rename(source: Path, target: Path) -> None:
    """`os.replace` of `source` by name onto `target` (both inside the root)."""
    _own_state_entry(source)
    _own_state_entry(target)
    os.replace(confine(source.parent) / source.name, confine(target.parent) / target.name)


def set_mode(path: Path, mode: int) -> None:
    """chmod what `path` names (under a root, inside it; never through a new link)."""
    _own_state(path, folder=is_dir(path))
    real = confine(path)
    fd = os.open(real, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC | _no_new_link(real, path))
    try:
        os.fchmod(fd, mode)
    finally:
        os.close(fd)


def write_setting(path: Path, text: str) -> None:
    """Write `text` to a kernel setting (``/proc/sys/...``): an existing regular file,
    opened without creating or truncating anything else."""
    real = confine(path)
    fd = os.open(real, os.O_WRONLY | os.O_CLOEXEC | os.O_NONBLOCK | _no_new_link(real, path))
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise ZsnError(f"{path}: not a regular file; not written")
        os.write(fd, text.encode())
    finally:
        os.close(fd)


def write_target(path: Path) -> Path:
    """The file an edit of `path` writes: its target when `path` is a symbolic link
    (resolved as reading it does: inside the root under ``--root``), else `path`."""
    if root_of(path) is not None:
        return confine(path)
    return Path(os.path.realpath(path)) if os.path.islink(path) else path


def backup_path(path: Path) -> Path:
    return path.with_name(path.name + BACKUP_SUFFIX)


def ensure_private_dir(path: Path) -> None:
    """Create `path` (and parents) and make it 0700: it holds private keys."""
    if own_state.is_own_state(path):
        make_dirs(path)  # its parents without group/other write, checked
    path = confine(path)
    path.mkdir(parents=True, exist_ok=True, mode=PRIVATE_DIR_MODE)
    os.chmod(path, PRIVATE_DIR_MODE)


def write_atomic(
    path: Path,
    content: str | bytes,
    *,
    previous: FileSnapshot | None,
    mode: int | None = None,
    backup: bool = True,
) -> None:
    """Replace `path` with `content` atomically.

    `previous` is the snapshot the edit was based on; ``None`` means the file is
    new and must not exist yet. `mode` forces a mode (0600 for anything holding a
    private key); without it an existing file keeps its mode and a new one gets 0644.
    An existing file that is a symbolic link is written through to its target (the
    link stays a link, the backup goes next to the target); see `write_target`.
    """
    data = content.encode("utf-8") if isinstance(content, str) else content
    _own_state(path)
    named = confine(path.parent) / path.name
    if previous is None and os.path.islink(named):
        # A new file is created where it is named, never wherever a link points.
        raise FileChangedError(f"{path}: is a symbolic link; not creating a file through it")
    path = write_target(named)
    directory = path.parent
    if not directory.is_dir():
        raise ZsnError(f"{directory}: directory does not exist")
    try:
        current = os.stat(path)
    except FileNotFoundError:
        current = None
    if previous is None and current is not None:
        raise FileChangedError(f"{path}: already exists; not overwriting a file zsn did not read")
    if previous is not None:
        if current is None:
            raise FileChangedError(f"{path}: was removed since zsn read it; nothing written")
        if not previous.matches(current):
            raise FileChangedError(
                f"{path}: changed on disk since zsn read it; reload before saving"
            )
    if mode is not None:
        final_mode = mode
    elif current is not None:
        final_mode = stat.S_IMODE(current.st_mode)
    else:
        final_mode = 0o644

    clean_stale_temps(directory)
    if backup and previous is not None:
        _write_replace(backup_path(path), previous.text.encode("utf-8"), final_mode, current)
    _write_replace(path, data, final_mode, current)


def publish(path: Path, content: str | bytes, *, mode: int = 0o644) -> None:
    """Replace `path` with `content` atomically, whatever it held: for output zsn owns
    and rewrites on every run (the textfile collector's ``.prom`` file), never for a
    config someone edits (`write_atomic`). A reader sees the old file or the new one,
    never part of one; the temporary file's name does not end like `path`'s, so a
    collector reading ``*.prom`` never picks it up."""
    data = content.encode("utf-8") if isinstance(content, str) else content
    _own_state(path)
    if not path.parent.is_dir():
        raise ZsnError(f"{path.parent}: directory does not exist")
    clean_stale_temps(path.parent)
    _write_replace(path, data, mode, None)


def _temp_name(path: Path) -> Path:
    # os.urandom is what `secrets.token_hex` reads; the `secrets` module itself would
    # load hmac and OpenSSL's hashes (~4 ms) into every start-up that imports files.
    return path.with_name(f".{path.name}.{TEMP_TAG}{os.getpid()}-{os.urandom(4).hex()}.tmp")


def clean_stale_temps(directory: Path) -> list[Path]:
    """Remove the temporary files a killed zsn left in `directory`; return them.

    zsn names its temporary files ``.NAME.zsn-PID-RANDOM.tmp``: one whose writer
    is no longer running is a leftover (it may hold a private key). Files in the
    ``mkstemp`` naming of earlier versions (``.NAME.XXXXXXXX.tmp``) are removed once
    they are ten minutes old.
    """
    removed: list[Path] = []
    try:
        entries = list(os.scandir(directory))
    except OSError:
        return removed
    now = time.time()
    for entry in entries:
        match = _TEMP_RE.fullmatch(entry.name)
        if match is None:
            continue
        try:
            if not entry.is_file(follow_symlinks=False):
                continue
            if match.group("pid") is not None:
                if _running(int(match.group("pid"))):
                    continue
            elif now - entry.stat(follow_symlinks=False).st_mtime < 600:
                continue
            os.unlink(entry.path)
        except OSError:
            continue
        removed.append(Path(entry.path))
    return removed


def _running(pid: int) -> bool:
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # someone else's process: alive
    return True


def remove_with_backup(path: Path, *, previous: FileSnapshot) -> None:
    """Delete `path`, keeping what it held as ``<name>.zsn-bak`` (same mode); refused
    when the file changed since `previous` was read."""
    _own_state(path)
    path = confine(path.parent) / path.name
    try:
        current = os.stat(path)
    except FileNotFoundError as exc:
        raise FileChangedError(f"{path}: was removed since zsn read it; nothing done") from exc
    if not previous.matches(current):
        raise FileChangedError(f"{path}: changed on disk since zsn read it; reload first")
    _write_replace(backup_path(path), previous.text.encode("utf-8"),
                   stat.S_IMODE(current.st_mode), current)
    os.unlink(path)
    _fsync_dir(path.parent)


def _write_replace(
    path: Path, data: bytes, mode: int, owner_from: os.stat_result | None
) -> None:
    tmp_name = _temp_name(path)
    # 0600 from the very start (umask can only narrow it), then the file's own mode,
    # then the content: a private key is never readable by others, even for a moment.
    fd = os.open(tmp_name, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC,
                 PRIVATE_FILE_MODE)
    try:
        # Mode first, content second: a private key is never readable by others.
        os.fchmod(fd, mode)
        if owner_from is not None and os.geteuid() == 0:
            os.fchown(fd, owner_from.st_uid, owner_from.st_gid)
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp_name, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp_name)
        raise
    _fsync_dir(path.parent)


def move(source: Path, target: Path) -> None:
    """Rename `source` to `target` (same filesystem), never over an existing file, and
    make the rename durable."""
    _own_state_entry(source)
    _own_state_entry(target)
    source = confine(source.parent) / source.name
    target = confine(target.parent) / target.name
    if os.path.lexists(target):
        raise FileChangedError(f"{target}: already exists; not moving {source.name} over it")
    os.rename(source, target)
    _fsync_dir(target.parent)


def _fsync_dir(directory: Path) -> None:
    dir_fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(dir_fd)
    finally:
        os.close(dir_fd)


def is_world_readable(path: Path) -> bool:
    try:
        return bool(os.stat(confine(path)).st_mode & stat.S_IROTH)
    except OSError:
        return False
