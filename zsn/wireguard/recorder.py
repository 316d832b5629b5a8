"""Each poll's snapshot into the history store: totals stitched across counter resets,
bytes per hour, sessions and their events, the hooks.

Whichever zsn process polls records: the TUI's WireGuard pane, ``zsn serve``, and
``zsn wg record`` (the ``zsn-history.timer`` in ``contrib/``, where neither runs).
They may run at once. Every figure is derived from the device's own counters
against what the store last recorded, inside the store's write lock, so two
recorders never count the same bytes twice and only one of them records (and
hooks) an event.

- **Totals.** A peer's counters grow while its interface runs; a smaller value, or
  a new run of the interface (its `InterfaceState.instance`, with the boot), means
  they restarted from zero: what they show then is all new.
- **Sessions.** A peer is connected while its latest handshake is at most
  `CONNECTED_WITHIN` (270 s) old; see `zsn.wireguard.model.CONNECTED_MARGIN` for
  why. A connect is recorded at the handshake that began the session, a disconnect
  at the moment the peer was last heard from (bytes or a handshake), an endpoint
  change when a connected peer's endpoint moves.
- **Writes.** Most polls write nothing: counters are written at most every
  `FLUSH_SECONDS` (the device keeps counting meanwhile, so nothing is lost if zsn
  stops), an event, a new peer or a finished hour at once. An idle peer costs
  nothing.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable
from pathlib import Path
from types import MappingProxyType
from typing import NamedTuple

from zsn.errors import ZsnError
from zsn.system import files
from zsn.system.host import Host
from zsn.wireguard import hooks
from zsn.wireguard.actions import enforce
from zsn.wireguard.expiry import Expired, describe, due, due_in_snapshot
from zsn.wireguard.history import Event, HistoryStore, HourAmounts, LiveRow, PeerKey
from zsn.wireguard.model import (
    CONNECTED_WITHIN,
    HANDSHAKE_STALE_AFTER,
    PeerSession,
    PeerState,
    WireGuardSnapshot,
)

FLUSH_SECONDS = 60.0
"""Longest a poller keeps counter progress in memory before writing it."""
BOOT_ID_PATH = Path("/proc/sys/kernel/random/boot_id")


class Step(NamedTuple):
    """What one sample did to one peer."""

    row: LiveRow
    events: tuple[Event, ...]
    closed: HourAmounts | None
    """An hour that ended with bytes in it, to be added to the peer's period."""


def advance(row: LiveRow | None, peer: PeerState, instance: str, now: int) -> Step:
    """The peer's record after the sample `peer` taken at `now` (pure: no store)."""
    # Fields unpacked once and the new row made by tuple.__new__: this runs for every
    # moving peer at every poll (200 of them each second), where attribute reads and
    # the NamedTuple's Python-level __new__ were most of its time.
    _key, _psk, endpoint_now, _ips, handshake, peer_rx, peer_tx, _keepalive, _name = peer
    hour = now // 3600
    handshake = handshake or None
    connected = handshake is not None and now - handshake <= CONNECTED_WITHIN
    if row is None:
        row = LiveRow(0, instance, now, 0, 0, 0, 0, hour, 0, 0, None, None, False, None, None)
    (peer_id, row_instance, sampled_at, row_rx, row_tx, total_rx, total_tx, row_hour,
     hour_rx, hour_tx, row_handshake, row_endpoint, row_connected, since, last_seen) = row
    if row_instance != instance or peer_rx < row_rx or peer_tx < row_tx:
        restarted = True  # the counters began again at zero
        rx, tx = peer_rx, peer_tx
    else:
        restarted = False
        rx, tx = peer_rx - row_rx, peer_tx - row_tx
    closed = None
    if row_hour == hour:
        hour_rx, hour_tx = hour_rx + rx, hour_tx + tx
    else:
        if hour_rx or hour_tx:
            closed = HourAmounts(row_hour, hour_rx, hour_tx)
        hour_rx, hour_tx = rx, tx
    seen = last_seen
    if handshake is not None and (seen is None or handshake > seen):
        seen = handshake
    if rx and handshake is not None:
        # Received bytes: heard from since the last sample, and no later than the
        # session could carry data (a session ends 180 s after its handshake).
        heard = min(now, handshake + HANDSHAKE_STALE_AFTER)
        seen = max(seen or 0, heard)
    events: list[Event] = []
    was_connected = row_connected
    if was_connected and (restarted or not connected):
        end = max(last_seen or sampled_at, since or 0)
        if not restarted and seen is not None:
            end = max(end, min(seen, now))
        events.append(Event(end, "disconnect", row_endpoint, end - since if since else None))
        was_connected, since = False, None
    if connected and not was_connected:
        assert handshake is not None
        since = handshake
        events.append(Event(handshake, "connect", endpoint_now, None))
    elif connected and endpoint_now and row_endpoint and endpoint_now != row_endpoint:
        events.append(Event(now, "endpoint", endpoint_now, None))
    endpoint = endpoint_now or row_endpoint
    if not (rx or tx or events or closed or restarted) and peer_id and \
            (handshake, endpoint, connected, seen) == \
            (row_handshake, row_endpoint, row_connected, last_seen):
        # An idle peer: its record stays as it is, unwritten.
        return tuple.__new__(Step, (row, (), None))
    new = tuple.__new__(LiveRow, (
        peer_id, instance, now, peer_rx, peer_tx, total_rx + rx, total_tx + tx, hour, hour_rx,
        hour_tx, handshake, endpoint, connected, since if connected else None, seen))
    return tuple.__new__(Step, (new, tuple(events), closed))


def vanished(row: LiveRow, now: int) -> Step:
    """A peer no longer on its interface (removed, or the interface went down)."""
    if not row.connected:
        return Step(row, (), None)
    end = max(row.last_seen or row.sampled_at, row.since or 0)
    event = Event(end, "disconnect", row.endpoint, end - row.since if row.since else None)
    return Step(row._replace(connected=False, since=None), (event,), None)


def session_of(row: LiveRow) -> PeerSession:
    (_peer, _instance, _at, _rx, _tx, total_rx, total_tx, _hour, _hour_rx, _hour_tx,
     _handshake, endpoint, connected, since, last_seen) = row
    return tuple.__new__(PeerSession, (connected, since, last_seen, endpoint, total_rx, total_tx))


def boot_id() -> str:
    """This boot's id: an interface's ifindex or socket repeats after a reboot."""
    try:
        return files.read_text(BOOT_ID_PATH, 64).strip()[:36]
    except (OSError, ZsnError):
        return ""


class Recorder:
    """Records the snapshots of one poller (one per process and thread).

    `record(snapshot)` returns the snapshot with each peer's `PeerSession` and, when
    history cannot be kept, the reason (`history_note`); it never raises.
    """

    def __init__(self, host: Host, *, report: Callable[[str], None] | None = None,
                 flush_seconds: float = FLUSH_SECONDS) -> None:
        self.host = host
        self.flush_seconds = flush_seconds
        self._report = report or (lambda message: None)
        self.hooks = hooks.HookRunner(self._report)
        self._store: HistoryStore | None = None
        self._state: dict[PeerKey, LiveRow] = {}
        self._names: dict[PeerKey, str | None] = {}
        self._version = -1
        self._dirty: set[PeerKey] = set()
        self._closed: list[tuple[PeerKey, HourAmounts]] = []
        self._last_flush = 0.0
        self._boot = boot_id()
        self._settings: hooks.HistorySettings | None = None
        self._settings_checked = 0.0
        self.note: str | None = None
        """Why history is not recorded now, if it is not."""
        self._extra_events: list[tuple[PeerKey, Event]] = []
        self._stored_names: dict[PeerKey, str | None] | None = None
        self._seen: dict[PeerKey, PeerState] = {}
        self._sessions: dict[tuple[str, str], PeerSession] = {}
        """Each peer's session as `record` returns it, from `_state`."""
        self._changed: set[PeerKey] = set()
        """Peers whose record changed since `_sessions` was brought up to date."""
        self._state_kept = False
        """The reading each peer's record was last advanced with."""
        self.failures_told: set[str] = set()
        """Problems already reported (an expired peer that cannot be disabled)."""

    # -- public ----------------------------------------------------------------------
    def record(self, snapshot: WireGuardSnapshot, *, flush: bool = False) -> WireGuardSnapshot:
        """Record `snapshot`; `flush` writes now (a one-shot process before it exits)."""
        try:
            settings = self._current_settings()
            if not settings.enabled or not self._state_kept:
                # Off by choice, or a tree that keeps no state (--root of configs only).
                self.note = None
                self.close()
                return snapshot
            store = self._open()
            self._record(store, settings, snapshot, flush)
            self.note = None
        except ZsnError as exc:
            self.note = f"history not recorded: {exc}"
            self.close()
            return snapshot._replace(history_note=self.note)
        # Only the sessions whose records changed are made again: with 200 peers whose
        # counters move, every peer's each second was a fifth of a poll's recording.
        sessions = self._sessions
        state = self._state
        for key in self._changed:  # a PeerKey is the (interface, public key) tuple itself
            row = state.get(key)
            if row is None:
                sessions.pop(key, None)
            else:
                sessions[key] = session_of(row)
        self._changed.clear()
        return snapshot._replace(sessions=MappingProxyType(dict(sessions)))

    def add_event(self, interface: str, public_key: str, event: Event) -> None:
        """An event found outside the counters (an expiry), written with the next poll."""
        self._extra_events.append((PeerKey(interface, public_key), event))

    def close(self) -> None:
        if self._store is not None:
            self._store.close()
            self._store = None
            self._state.clear()
            self._sessions.clear()
            self._changed.clear()
            self._version = -1

    # -- machinery ---------------------------------------------------------------------
    def _current_settings(self) -> hooks.HistorySettings:
        # Read at most every few seconds: the TUI polls every second.
        clock = time.monotonic()
        if self._settings is None or clock - self._settings_checked > 10:
            self._settings = hooks.load(self.host)
            # A tree that keeps no state (--root of configs only) has no /var/lib.
            self._state_kept = files.is_dir(self.host.path("/var/lib"))
            self._settings_checked = clock
        return self._settings

    def _open(self) -> HistoryStore:
        if self._store is None:
            self._store = HistoryStore.open(self.host)
            self._reload(self._store)
        return self._store

    def _reload(self, store: HistoryStore) -> None:
        self._version = store.data_version()
        self._state = store.live_rows()
        self._sessions.clear()
        self._changed = set(self._state)
        self._dirty.clear()
        self._closed.clear()
        self._stored_names = None
        self._seen.clear()

    def _record(self, store: HistoryStore, settings: hooks.HistorySettings,
                snapshot: WireGuardSnapshot, flush: bool) -> None:
        now = int(snapshot.taken_at or time.time())
        steps = self._steps(snapshot, self._state, now)
        pending = any(step.events or step.closed or step.row.peer == 0
                      for step in steps.values()) or bool(self._extra_events)
        due = time.monotonic() - self._last_flush >= self.flush_seconds
        if not (pending or flush or (due and (self._dirty or any(
                step.row != self._state.get(key) for key, step in steps.items())))):
            self._apply(steps)  # in memory until the next write
            return
        calls: list[hooks.HookCall] = []
        with store.transaction() as db:
            if store.data_version() != self._version:
                # Another zsn wrote: start again from what it recorded.
                self._reload(store)
                steps = self._steps(snapshot, self._state, now)
            self._apply(steps)
            for key, step in steps.items():
                if step.row.peer == 0:
                    peer_id = store.add_peer(db, key, self._names.get(key), now)
                    self._state[key] = step.row._replace(peer=peer_id)
                    self._changed.add(key)
            ids = {key: row.peer for key, row in self._state.items()}
            names = self._renamed(store)
            if names:
                store.rename_peers(db, names)
            store.put_live(db, [self._state[key] for key in self._dirty if key in self._state])
            store.close_hours(db, [(ids[key], hour) for key, hour in self._closed if key in ids])
            events = [(key, event) for key, step in steps.items() for event in step.events]
            events += [item for item in self._extra_events if item[0] in ids]
            store.add_events(db, [(ids[key], event) for key, event in events])
            calls = [hooks.HookCall(event.kind, key.interface, self._names.get(key),
                                    key.public_key, event.endpoint, event.at, event.seconds)
                     for key, event in events if event.kind in settings.hooks]
        self._version = store.data_version()
        self._dirty.clear()
        self._closed.clear()
        self._extra_events.clear()
        self._last_flush = time.monotonic()
        self.hooks.run([(settings.hooks[call.kind], call) for call in calls])

    def _steps(self, snapshot: WireGuardSnapshot, state: dict[PeerKey, LiveRow],
               now: int) -> dict[PeerKey, Step]:
        steps: dict[PeerKey, Step] = {}
        unread: set[str] = set()
        for interface in snapshot.interfaces:
            if not interface.in_namespace or (interface.public_key is None
                                              and not interface.peers):
                unread.add(interface.name)  # another namespace's, or not readable now
                continue
            instance = f"{self._boot}:{interface.instance}"
            seen = self._seen
            for peer in interface.peers:
                key = tuple.__new__(PeerKey, (interface.name, peer.public_key))
                row = state.get(key)
                if row is not None and not row.connected and row.peer \
                        and seen.get(key) is peer and row.instance == instance:
                    # The very same reading as last time (the live cache reuses an
                    # unchanged peer) of a peer with no session: nothing can change.
                    continue
                if row is not None and row.sampled_at > now:
                    continue  # another recorder already wrote a newer sample
                steps[key] = advance(row, peer, instance, now)
                seen[key] = peer
                self._names[key] = peer.name
        if not snapshot.errors and not snapshot.read_only_reason:
            for key, row in state.items():
                if key not in steps and key.interface not in unread and row.connected:
                    steps[key] = vanished(row, now)
        return steps

    def _apply(self, steps: dict[PeerKey, Step]) -> None:
        state, dirty, changed = self._state, self._dirty, self._changed
        for key, (row, _events, closed) in steps.items():
            previous = state.get(key)
            if previous is not None and row.peer != previous.peer:
                row = row._replace(peer=previous.peer)
            if row != previous:
                state[key] = row
                dirty.add(key)
                changed.add(key)
            if closed is not None:
                self._closed.append((key, closed))

    def _renamed(self, store: HistoryStore) -> list[tuple[int, str | None]]:
        """Peers whose name in the config changed since the store learnt it."""
        known = self._stored_names
        if known is None:
            known = {key: name for _id, (key, name, _first) in store.peer_names().items()}
            self._stored_names = known
        changes = []
        for key, name in self._names.items():
            row = self._state.get(key)
            if row is not None and row.peer and known.get(key, name) != name:
                changes.append((row.peer, name))
            known[key] = name
        return changes


def take_off_expired(host: Host, recorder: Recorder, expired: list[Expired],
                     told: Callable[[str], None], failed: Callable[[str], None]) -> None:
    """Disable the peers whose expiry has come, each as an ``expire`` event: `told`
    what was done, `failed` what could not be."""
    if not expired:
        return

    def done(peer: Expired) -> None:
        recorder.add_event(peer.interface, peer.public_key, Event(peer.at, "expire", None, None))
        told(f"peer {peer.name} on {peer.interface} expired ({describe(peer.at)}): disabled "
             "and taken off the interface")

    for problem in enforce(host, expired, done):
        if problem not in recorder.failures_told:  # once, not at every poll
            recorder.failures_told.add(problem)
            failed(problem)


_LONG_RUNNING: dict[Host, Recorder] = {}


def on_poll(host: Host, snapshot: WireGuardSnapshot) -> None:
    """The domain's per-poll hook (`zsn serve` calls it after each reading): take
    expired peers off and record the reading; what goes wrong is logged."""
    import logging

    log = logging.getLogger("zsn.history")
    recorder = _LONG_RUNNING.get(host)
    if recorder is None:
        recorder = _LONG_RUNNING[host] = Recorder(host, report=log.warning)
    take_off_expired(host, recorder, due_in_snapshot(snapshot), log.info, log.warning)
    before = recorder.note
    recorder.record(snapshot)
    if recorder.note != before and recorder.note is not None:
        log.warning("%s", recorder.note)


def record_once(host: Host, snapshot: WireGuardSnapshot, report: Callable[[str], None],
                told: Callable[[str], None]) -> WireGuardSnapshot:
    """One recording by a one-shot process (``zsn wg record``): expired peers taken off
    (every config's), written now, its hooks waited for before it returns."""
    recorder = Recorder(host, report=report)
    try:
        take_off_expired(host, recorder, due(host, None, snapshot.taken_at or time.time()),
                         told, report)
        recorded = recorder.record(snapshot, flush=True)
        recorder.hooks.wait()
    finally:
        with contextlib.suppress(ZsnError):
            recorder.close()
    return recorded

