"""Export sections kept warm for a long-running process (`zsn serve`).

One `Collector` per registered section, each with its own reader thread, so a
section that hangs (a `zpool` stuck on a suspended pool) never holds up another. A
collector reads through its domain's export ``Poller`` (warm caches, netlink
watchers, one `zpool iostat` stream per pool; see `zsn.domains`), or through the
section's ``collect`` when the domain has none, and renders the reading's Prometheus
text at once, in that thread: a scrape only joins pre-rendered pieces.

Readings are shared: a scrape that finds a reading under way waits for that one
instead of starting another, and one finished less than `REUSE_SECONDS` ago is
served again (two Prometheus servers scraping the same box at the same moment read
it once). The caller decides how long to wait (`zsn serve`'s per-collector
deadline); a reading that misses it goes on and serves the next scrape.

After each poll the domain's ``on_poll`` hook (if any) runs in the same thread, once
the reading is published: the scrape that asked for the poll does not wait for it
(one that comes while it runs does, as it would for a poll under way).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future
from typing import Any, NamedTuple, Protocol

from zsn.domains import Domain, ExportFace, export_face, load
from zsn.errors import ZsnError
from zsn.exporter.prometheus import render
from zsn.system.files import describe_os_error
from zsn.system.host import Host

REUSE_SECONDS = 1.0
"""A reading this fresh serves another scrape instead of reading again."""

log = logging.getLogger("zsn.exporter.serve")


class Poller(Protocol):
    """What a domain's export module offers as ``Poller`` (see `zsn.domains`)."""

    def poll(self) -> Any: ...

    def section(self, snapshot: Any) -> dict[str, Any]: ...

    def close(self) -> None: ...


class FreshCollect:
    """The poller of a section whose domain has none: ``collect`` each time."""

    def __init__(self, provider: ExportFace, host: Host) -> None:
        self._provider = provider
        self._host = host

    def poll(self) -> dict[str, Any]:
        data: dict[str, Any] = self._provider.collect(self._host, include_secrets=False)
        return data

    def section(self, snapshot: Any) -> dict[str, Any]:
        data: dict[str, Any] = snapshot
        return data

    def close(self) -> None:
        pass


class Reading(NamedTuple):
    """One poll of a section, ready to serve."""

    present: bool
    """False when the section does not exist on this host (and was not asked for by
    name): nothing else was read."""
    data: dict[str, Any]
    """The export section (``{}`` when not present)."""
    metrics: bytes
    """Its Prometheus text (UTF-8)."""
    finished_at: float
    """`time.monotonic()` when it was ready."""
    duration: float
    """Seconds the poll took."""

    @property
    def errors(self) -> list[str]:
        return list(self.data.get("errors", ()))

    @property
    def complete(self) -> bool:
        return not self.data.get("errors")


class Collector:
    """One section kept warm: its poller, its reader thread, its latest reading."""

    def __init__(self, domain: Domain, host: Host, *, forced: bool = False,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.name = domain.name
        self.host = host
        self.forced = forced
        """Read even when the section is not present (it was named on the command line)."""
        self._domain = domain
        self._clock = clock
        self._provider: ExportFace | None = None
        self._poller: Poller | None = None
        self._hook: Callable[[Host, Any], None] | None = None
        self._lock = threading.Lock()
        self._wake = threading.Condition(self._lock)
        self._pending: Future[Reading] | None = None
        self._queued: Future[Reading] | None = None
        self._closed = False
        self.latest: Reading | None = None
        self._thread = threading.Thread(target=self._run, name=f"zsn-collect-{self.name}",
                                        daemon=True)
        self._thread.start()

    # -- what the server calls ---------------------------------------------------------
    def refresh(self, reuse_seconds: float = REUSE_SECONDS) -> Future[Reading]:
        """The reading under way, a fresh enough one, or a new one started now."""
        with self._lock:
            if self._pending is not None:
                return self._pending
            latest = self.latest
            if latest is not None and self._clock() - latest.finished_at < reuse_seconds:
                done: Future[Reading] = Future()
                done.set_result(latest)
                return done
            future: Future[Reading] = Future()
            future.set_running_or_notify_cancel()  # nobody may cancel a shared reading
            self._pending = self._queued = future
            self._wake.notify()
            return future

    def close(self) -> None:
        """Stop the thread after its current poll and whatever the poller runs."""
        with self._lock:
            self._closed = True
            self._wake.notify()
            poller, self._poller = self._poller, None
        if poller is not None:
            try:
                poller.close()
            except Exception:  # shutting down: say so, stop the others
                log.exception("%s: closing its reader failed", self.name)

    # -- the reader thread ------------------------------------------------------------
    def _run(self) -> None:
        while True:
            with self._lock:
                while self._queued is None and not self._closed:
                    self._wake.wait()
                if self._closed:
                    if self._queued is not None:
                        self._queued.set_exception(ZsnError("zsn is stopping"))
                    return
                future, self._queued = self._queued, None
            assert future is not None
            reading, snapshot = self._read()
            with self._lock:
                self.latest = reading
                self._pending = None
            future.set_result(reading)
            if snapshot is not None and self._hook is not None:
                self._run_hook(snapshot)

    def _read(self) -> tuple[Reading, Any]:
        """One poll; failures become the section's error entry (never an exception)."""
        started = self._clock()
        snapshot: Any = None
        try:
            provider = self._load()
            if not self.forced and not provider.present(self.host):
                return Reading(False, {}, b"", self._clock(), self._clock() - started), None
            poller = self._poller_of(provider)
            snapshot = poller.poll()
            data = poller.section(snapshot)
            text = render(provider.prometheus(data))
        except ZsnError as exc:
            data, text = {"errors": [str(exc)]}, ""
        except OSError as exc:
            data, text = {"errors": [describe_os_error(exc)]}, ""
        except Exception as exc:  # a bug in one section must not stop serving
            log.exception("%s: reading failed", self.name)
            data, text = {"errors": [f"internal error: {type(exc).__name__}: {exc}"]}, ""
        finished = self._clock()
        return Reading(True, data, text.encode(), finished, finished - started), snapshot

    def _load(self) -> ExportFace:
        if self._provider is None:
            self._provider = export_face(self._domain)
            if self._domain.on_poll:
                self._hook = load(self._domain.on_poll)
        return self._provider

    def _poller_of(self, provider: ExportFace) -> Poller:
        with self._lock:
            if self._closed:
                raise ZsnError("zsn is stopping")
            if self._poller is None:
                factory = getattr(provider, "Poller", None)
                self._poller = factory(self.host) if factory is not None else FreshCollect(
                    provider, self.host)
            return self._poller

    def _run_hook(self, snapshot: Any) -> None:
        assert self._hook is not None
        try:
            self._hook(self.host, snapshot)
        except Exception:  # the hook's failure is logged, polling goes on
            log.exception("%s: the per-poll hook %s failed", self.name, self._domain.on_poll)

    @property
    def has_hook(self) -> bool:
        return bool(self._domain.on_poll)

