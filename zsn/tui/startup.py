"""What the terminal UI does before Textual is even imported, so its first frame comes
early and already has rows.

- **The first read.** The first pane's first snapshot is read by the domain's
  ``live`` reader (`zsn.domains`) in a child forked here, on another core, while
  the main process imports Textual and builds the screen: the reader's imports
  (config, netlink, UAPI, cryptography) and its parsing never take the main
  process's interpreter lock (with 5,000 peers, the rows on screen 347 -> 270 ms).
  The child sends the snapshot back through a pipe, pickled: it is zsn's own
  process, but what comes back is still read within `MAX_SNAPSHOT_BYTES` and decoded
  strictly (`decode_snapshot`: NamedTuples of a ``zsn.*.model`` module and read-only
  mappings, nothing callable else), and the child ends itself after
  `FIRST_READ_SECONDS`. Where a fork is not safe (threads already running) or
  fails, the read runs in a thread instead. The pane takes the snapshot when it is
  mounted: if it has arrived, the first frame has the rows; if not, the pane's
  first poll waits for it rather than reading again. A read that fails leaves the
  pane to read (and report) itself.
- **The cyclic garbage collector** is paused until the first frame is drawn:
  Textual's import and the first screen allocate hundreds of thousands of objects
  that all stay, and the collector would walk them again and again. They are then
  frozen (`gc.freeze`), so later collections, every second while zsn idles, do not
  walk them either.

No Textual here: `zsn.cli` uses this first.
"""

from __future__ import annotations

import contextlib
import gc
import importlib
import io
import os
import re
import signal
import sys
import threading
from collections.abc import Mapping
from types import MappingProxyType
from typing import Any, cast

from zsn.domains import Domain, load
from zsn.errors import ParseError, ZsnError
from zsn.system.host import Host

FIRST_READ_SECONDS = 10.0
"""How long the first read may take: the child ends then, the pane reads itself."""
MAX_SNAPSHOT_BYTES = 64 << 20
"""The largest snapshot taken from the child (5,000 peers pickle to ~0.5 MiB)."""
_MODEL = re.compile(r"zsn\.[a-z_]+\.model")


class Startup:
    """Made once by `begin`, handed to the app."""

    def __init__(self, first_read: FirstRead | None, *, collector_paused: bool = False) -> None:
        self._first_read = first_read
        self._collector_paused = collector_paused

    @classmethod
    def begin(cls, first: Domain | None, host: Host) -> Startup:
        """Pause the collector and start reading `first` (the first pane's domain)."""
        gc.disable()
        reader = first.live if first is not None else ""
        return cls(FirstRead(reader, host) if reader else None, collector_paused=True)

    def take_first_read(self) -> FirstRead | None:
        """The first read, for the first pane (once)."""
        first, self._first_read = self._first_read, None
        return first

    def first_frame_drawn(self) -> None:
        """Freeze what start-up made and let the collector run again."""
        if self._collector_paused:
            self._collector_paused = False
            gc.freeze()
            gc.enable()


class FirstRead:
    """A snapshot read by ``reader`` ("module:function", called with the host) in a
    forked child (a thread where forking is not safe)."""

    def __init__(self, reader: str, host: Host) -> None:
        self._done = threading.Event()
        self._snapshot: Any = None
        # Forked only with no other thread running: one could hold a lock the child needs.
        child = _fork_reader(reader, host) if threading.active_count() == 1 else None
        work, args = (self._read, (reader, host)) if child is None else (self._receive, child)
        threading.Thread(target=work, args=args, name="zsn-first-read", daemon=True).start()

    def _read(self, reader: str, host: Host) -> None:
        try:
            self._snapshot = load(reader)(host)
        except Exception:  # noqa: BLE001 - the pane reads again and reports it
            self._snapshot = None
        finally:
            self._done.set()

    def _receive(self, pid: int, pipe: int) -> None:
        data = None
        try:
            data = _read_all(pipe, MAX_SNAPSHOT_BYTES)
            self._snapshot = decode_snapshot(data) if data else None
        except (OSError, ZsnError):  # the pane reads again and reports it
            self._snapshot = None
        finally:
            os.close(pipe)
            with contextlib.suppress(OSError):
                if data is None:  # it sent too much (or the pipe failed): no more
                    os.kill(pid, signal.SIGKILL)
                os.waitpid(pid, 0)  # it has ended (or is ending) once its pipe is
            self._done.set()

    def ready(self) -> bool:
        return self._done.is_set()

    def take(self, timeout: float) -> Any:
        """The snapshot, waiting up to `timeout` seconds; ``None`` when the read failed
        or took longer (the pane then reads itself)."""
        if not self._done.wait(timeout):
            return None
        snapshot, self._snapshot = self._snapshot, None
        return snapshot


def _fork_reader(reader: str, host: Host) -> tuple[int, int] | None:
    """Start a child that reads and writes the pickled snapshot to a pipe; its pid
    and the pipe's end to read, or ``None`` when it could not be started."""
    try:
        readable, writable = os.pipe()
    except OSError:
        return None
    try:
        pid = os.fork()
    except OSError:
        os.close(readable)
        os.close(writable)
        return None
    if pid:
        os.close(writable)
        return pid, readable
    try:  # the child: nothing here returns
        os.close(readable)
        signal.signal(signal.SIGALRM, signal.SIG_DFL)  # its default action ends the child
        signal.setitimer(signal.ITIMER_REAL, FIRST_READ_SECONDS)
        nothing = os.open(os.devnull, os.O_RDWR)  # the terminal is the app's alone
        for standard in (0, 1, 2):
            os.dup2(nothing, standard)
        sys.stdin = sys.stdout = sys.stderr = None
        try:
            data = encode_snapshot(load(reader)(host))
        except Exception:  # noqa: BLE001 - nothing sent: the pane reads and reports it
            data = b""
        sent = memoryview(data)
        while sent:
            sent = sent[os.write(writable, sent):]
    finally:
        os._exit(0)


def _read_all(pipe: int, limit: int) -> bytes | None:
    """Everything until the end of `pipe`; ``None`` past `limit` bytes."""
    chunks = []
    size = 0
    while chunk := os.read(pipe, 1 << 20):
        size += len(chunk)
        if size > limit:
            return None
        chunks.append(chunk)
    return b"".join(chunks)


def read_only_mapping(items: dict[Any, Any]) -> Mapping[Any, Any]:
    """A snapshot's mapping as the reader made it (read-only), when decoded."""
    return MappingProxyType(items)


def encode_snapshot(snapshot: tuple[Any, ...]) -> bytes:
    """`snapshot` pickled for `decode_snapshot` (read-only mappings included)."""
    import pickle

    buffer = io.BytesIO()
    pickler = pickle.Pickler(buffer, protocol=pickle.HIGHEST_PROTOCOL)
    pickler.dispatch_table = {MappingProxyType: lambda proxy: (read_only_mapping,
                                                                (dict(proxy),))}
    pickler.dump(snapshot)
    return buffer.getvalue()


def decode_snapshot(data: bytes) -> tuple[Any, ...]:
    """The snapshot the child pickled: a NamedTuple of a ``zsn.*.model`` module, made
    of them, plain values and read-only mappings; nothing else is looked up or
    called. A `ParseError` (one line) for anything else."""
    # The C unpickler alone: the pickle module's pure-Python one (never used here)
    # would cost the app ~1.5 ms to import before its first frame.
    import _pickle

    class Snapshots(_pickle.Unpickler):
        def find_class(self, module: str, name: str) -> Any:
            return _snapshot_class(module, name)

    try:
        snapshot = Snapshots(io.BytesIO(data)).load()
    except ParseError:
        raise
    except Exception as exc:  # noqa: BLE001 - pickle raises many kinds for bad bytes
        raise ParseError(f"not a snapshot: {type(exc).__name__}",
                         source="the first read") from None
    if not _is_model(type(snapshot)):
        raise ParseError(f"not a snapshot: {type(snapshot).__name__}", source="the first read")
    return cast(tuple[Any, ...], snapshot)


def _snapshot_class(module: str, name: str) -> Any:
    if (module, name) == (__name__, read_only_mapping.__name__):
        return read_only_mapping
    found = getattr(importlib.import_module(module), name, None) \
        if _MODEL.fullmatch(module) else None
    if not (isinstance(found, type) and _is_model(found)):
        raise ParseError("not a snapshot: it names another class", source="the first read")
    return found


def _is_model(kind: type) -> bool:
    """A NamedTuple class defined in a ``zsn.*.model`` module."""
    return (issubclass(kind, tuple) and hasattr(kind, "_fields")
            and _MODEL.fullmatch(kind.__module__) is not None)
