"""The history's settings (``<root>/etc/zsn/history.toml``) and its hook commands.

    enabled = true                      # false: no zsn process records history
    on_connect = ["/usr/local/bin/peer-event"]
    on_disconnect = ["/usr/local/bin/peer-event", "--quiet"]

A hook is an argv list run without a shell when a peer connects or disconnects, by
the zsn process that recorded the event (exactly one: events are recorded inside
the store's write lock). What happened is in its environment, never spliced into
its arguments (names and endpoints come from outside): ``ZSN_EVENT`` (connect,
disconnect), ``ZSN_INTERFACE``, ``ZSN_PEER`` (the name, empty when none),
``ZSN_PUBLIC_KEY``, ``ZSN_ENDPOINT``, ``ZSN_TIME`` (Unix seconds) and, for a
disconnect, ``ZSN_SESSION_SECONDS``. Each runs at most `HOOK_SECONDS`; its output
is kept (capped) for the error it reports when it fails.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, NamedTuple

from zsn import decode
from zsn.errors import ParseError, ZsnError
from zsn.system import files
from zsn.system.host import Host

SETTINGS_PATH = "/etc/zsn/history.toml"
MAX_BYTES = 1 << 20
HOOK_SECONDS = 30.0
HOOK_OUTPUT_BYTES = 64 * 1024
HOOK_EVENTS = ("connect", "disconnect")
_KNOWN_KEYS = {"enabled", *(f"on_{kind}" for kind in HOOK_EVENTS)}


class HistorySettings(NamedTuple):
    enabled: bool = True
    hooks: dict[str, tuple[str, ...]] = {}
    """argv by event kind (``connect``, ``disconnect``)."""
    path: Path | None = None


def load(host: Host) -> HistorySettings:
    """The settings, defaults when the file does not exist; `ParseError` naming the
    key when it cannot be used (a hook that is not a list of strings, say)."""
    path = host.path(SETTINGS_PATH)
    if not files.exists(path):
        return HistorySettings(path=path)
    return parse(files.read_text(path, MAX_BYTES), path)


def parse(text: str, path: Path) -> HistorySettings:
    raw = decode.from_toml(text, dict[str, Any], str(path), max_bytes=MAX_BYTES)
    unknown = sorted(set(raw) - _KNOWN_KEYS)
    if unknown:
        raise ParseError(f"unknown setting {unknown[0]!r} (known: "
                         f"{', '.join(sorted(_KNOWN_KEYS))})", None, str(path))
    enabled = raw.get("enabled", True)
    if not isinstance(enabled, bool):
        raise ParseError("enabled must be true or false", None, str(path))
    hooks: dict[str, tuple[str, ...]] = {}
    for kind in HOOK_EVENTS:
        argv = raw.get(f"on_{kind}")
        if argv is None:
            continue
        if not isinstance(argv, list) or not argv \
                or not all(isinstance(part, str) and part for part in argv):
            raise ParseError(f"on_{kind} must be a list of program and arguments, e.g. "
                             '["/usr/local/bin/notify", "--peer"] (no shell runs it)',
                             None, str(path))
        if not argv[0].startswith("/"):
            raise ParseError(f"on_{kind}: {argv[0]!r} is not an absolute path (hooks run "
                             "from timers and services, whose PATH is not yours)",
                             None, str(path))
        hooks[kind] = tuple(argv)
    return HistorySettings(enabled, hooks, path)


class HookCall(NamedTuple):
    kind: str
    interface: str
    peer: str | None
    public_key: str
    endpoint: str | None
    at: int
    seconds: int | None

    def environment(self) -> dict[str, str]:
        env = {"ZSN_EVENT": self.kind, "ZSN_INTERFACE": self.interface,
               "ZSN_PEER": self.peer or "", "ZSN_PUBLIC_KEY": self.public_key,
               "ZSN_ENDPOINT": self.endpoint or "", "ZSN_TIME": str(self.at)}
        if self.seconds is not None:
            env["ZSN_SESSION_SECONDS"] = str(self.seconds)
        return env


class HookRunner:
    """Runs hooks in threads, so a slow hook never holds a poll; `wait` lets a
    one-shot process (the timer's) finish its hooks before it exits."""

    def __init__(self, report: Callable[[str], None]) -> None:
        self._report = report
        self._threads: list[threading.Thread] = []

    def run(self, calls: Sequence[tuple[Sequence[str], HookCall]]) -> None:
        """Run one poll's hooks in order (a disconnect before the connect that
        followed it), in a thread of their own, after those of earlier polls."""
        if not calls:
            return
        earlier = self._threads[-1] if self._threads else None

        def run_all() -> None:
            if earlier is not None:
                earlier.join()
            for argv, call in calls:
                self._run_one(tuple(argv), call)

        thread = threading.Thread(target=run_all, name="zsn-hooks", daemon=True)
        self._threads = [t for t in self._threads if t.is_alive()]
        self._threads.append(thread)
        thread.start()

    def _run_one(self, argv: tuple[str, ...], call: HookCall) -> None:
        from zsn.system.commands import run

        try:
            result = run(argv, timeout=HOOK_SECONDS, check=False, env=call.environment(),
                         max_output=HOOK_OUTPUT_BYTES)
        except ZsnError as exc:
            self._report(f"{call.kind} hook for {call.peer or call.public_key[:8]} on "
                         f"{call.interface}: {exc}")
            return
        if not result.ok:
            self._report(f"{call.kind} hook {argv[0]} for {call.peer or call.public_key[:8]}"
                         f" on {call.interface} failed: {result.first_error_line()}")

    def wait(self, seconds: float = HOOK_SECONDS + 5) -> None:
        import time

        deadline = time.monotonic() + seconds
        for thread in self._threads:
            thread.join(max(0.0, deadline - time.monotonic()))
