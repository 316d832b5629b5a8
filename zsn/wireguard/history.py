"""The peer history store: one SQLite file, ``<root>/var/lib/zsn/history.sqlite``.

What WireGuard forgets at every ``wg-quick down``, reboot or zsn restart, kept per
peer (an interface name and a public key): received/sent totals stitched across
counter resets, bytes per hour, and the sessions' connect, disconnect and
endpoint events. `zsn.wireguard.recorder` writes it from every poll; readers (the
peer details, ``zsn peer log``, the export) only read.

The file is opened in WAL mode with ``synchronous=NORMAL``: a zsn killed during a
write (kill -9, a crash) leaves the last committed state, and several zsn
processes (the TUI, ``zsn serve``, the timer) write it in turn, each transaction
taking the write lock first (``BEGIN IMMEDIATE``). Its schema has a version
(``PRAGMA user_version``); a file written by a newer zsn is read by none and
written by none, never changed into something it does not understand.

Size: bytes per hour are kept as a 2-byte code each (`encode_amount`: exact below
32 KiB, within 1/2048 above), rx and tx of 96 hours (4 days) to a row, the open
period of each peer apart from the closed ones. Totals and per-peer counters are
exact integers. A year of hourly data for 500 peers is ~19 MB whatever the
traffic; hours with no traffic at the end of a period take no room
(`bench/history.py` measures it).
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
import struct
import time
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any, NamedTuple, TypeVar

from zsn import decode
from zsn.errors import ZsnError
from zsn.system import own_state
from zsn.system.host import Host
from zsn.terminal import one_line

T = TypeVar("T")

STORE_PATH = "/var/lib/zsn/history.sqlite"
SCHEMA_VERSION = 1
PERIOD_HOURS = 96
"""Hours kept in one row: 4 days of rx/tx codes fill a 4 KiB page to ~97 %."""
_PEER_BITS = 24
"""A closed period's row id is ``period << 24 | peer``: ascending ids append."""
BUSY_TIMEOUT_MS = 5000
"""How long a write waits for another zsn process's transaction to end."""
RESET_COMMAND = "zsn wg record --reset-store"
"""What sets a damaged store aside (`reset_store`): named in every error about one."""

_SCHEMA = """
CREATE TABLE peers (
    id INTEGER PRIMARY KEY,
    interface TEXT NOT NULL,
    public_key TEXT NOT NULL,
    name TEXT,
    first_seen INTEGER NOT NULL,
    UNIQUE (interface, public_key)
);
CREATE TABLE live (
    peer INTEGER PRIMARY KEY REFERENCES peers (id),
    instance TEXT NOT NULL,
    sampled_at INTEGER NOT NULL,
    rx INTEGER NOT NULL,
    tx INTEGER NOT NULL,
    total_rx INTEGER NOT NULL,
    total_tx INTEGER NOT NULL,
    hour INTEGER NOT NULL,
    hour_rx INTEGER NOT NULL,
    hour_tx INTEGER NOT NULL,
    handshake INTEGER,
    endpoint TEXT,
    connected INTEGER NOT NULL,
    since INTEGER,
    last_seen INTEGER
);
CREATE TABLE open_period (
    peer INTEGER PRIMARY KEY REFERENCES peers (id),
    period INTEGER NOT NULL,
    data BLOB NOT NULL
);
CREATE TABLE closed_period (
    id INTEGER PRIMARY KEY,
    data BLOB NOT NULL
);
CREATE TABLE events (
    id INTEGER PRIMARY KEY,
    peer INTEGER NOT NULL REFERENCES peers (id),
    at INTEGER NOT NULL,
    kind TEXT NOT NULL,
    endpoint TEXT,
    seconds INTEGER
);
CREATE INDEX events_of_peer ON events (peer, at);
"""


class HistoryError(ZsnError):
    """The store cannot be opened, read or written (named, with the reason)."""


class DamagedStoreError(HistoryError):
    """The store's file is damaged (pages SQLite cannot read, another file in its place,
    a value of the wrong type): named with the command that sets it aside."""

    def __init__(self, path: Path, reason: str) -> None:
        super().__init__(f"{path}: damaged ({one_line(reason)}): set it aside with {RESET_COMMAND} "
                         "(history then starts anew)")


# -- amounts: two bytes per hour and direction -------------------------------------

_EXACT_BELOW = 0x8000
_MAX_AMOUNT = 2047 << 36
"""The largest amount a code holds (~140 TB in one hour); more is kept as this."""


def encode_amount(value: int) -> bytes:
    """Bytes of one hour as a 2-byte code: exact below 32 KiB, else an exponent and 10
    bits of mantissa (within 1/2048). Fixed width, so any hour is found by its offset."""
    value = min(max(value, 0), _MAX_AMOUNT)
    if value < _EXACT_BELOW:
        return value.to_bytes(2, "big")
    exponent = value.bit_length() - 11
    mantissa = (value + (1 << exponent >> 1)) >> exponent  # rounded: 1024..2048
    if mantissa == 2048:
        exponent, mantissa = exponent + 1, 1024
    return (0x8000 | (exponent - 5) << 10 | (mantissa - 1024)).to_bytes(2, "big")


def decode_amounts(data: bytes) -> list[int]:
    """The amounts `encode_amount` wrote, in order."""
    return [code if code < _EXACT_BELOW else (1024 + (code & 0x3FF)) << ((code >> 10 & 0x1F) + 5)
            for code in struct.unpack(f">{len(data) // 2}H", data)]


def period_of(hour: int) -> int:
    return hour // PERIOD_HOURS


# -- records ---------------------------------------------------------------------------


class LiveRow(NamedTuple):
    """What the store knows of one peer now: its counters as last sampled, its totals,
    the hour being counted, and its session."""

    peer: int
    instance: str
    """Which run of the interface the counters belong to (a restart starts at zero)."""
    sampled_at: int
    rx: int
    tx: int
    total_rx: int
    total_tx: int
    hour: int
    """Hours since the epoch (UTC) that `hour_rx`/`hour_tx` count."""
    hour_rx: int
    hour_tx: int
    handshake: int | None
    endpoint: str | None
    connected: bool
    since: int | None
    """Start of the current session (the handshake that opened it)."""
    last_seen: int | None
    """Last time the peer was heard from: a handshake, or bytes received."""


class Event(NamedTuple):
    at: int
    kind: str
    """``connect``, ``disconnect``, ``endpoint`` (roamed), ``expire``."""
    endpoint: str | None
    seconds: int | None
    """For a disconnect: how long the session lasted."""


class PeerKey(NamedTuple):
    interface: str
    public_key: str


class HourAmounts(NamedTuple):
    hour: int
    rx: int
    tx: int


# The rows of the store's queries, as they are decoded (`HistoryStore._rows`): SQLite
# keeps any value in any column, so each is checked to have its column's type.


_LIVE_QUERY = ("SELECT p.interface, p.public_key, l.peer, l.instance, l.sampled_at, l.rx, "
               "l.tx, l.total_rx, l.total_tx, l.hour, l.hour_rx, l.hour_tx, l.handshake, "
               "l.endpoint, l.connected, l.since, l.last_seen FROM live l "
               "JOIN peers p ON p.id = l.peer")


def _flag(value: object) -> object:
    return bool(value) if value in (0, 1) and not isinstance(value, float) else value


class _PeerRow(NamedTuple):
    id: int
    interface: str
    public_key: str
    name: str | None
    first_seen: int


class _Period(NamedTuple):
    """A period's hour codes: ``key`` is the closed row's id or the open one's period."""

    key: int
    data: bytes


class _OpenPeriod(NamedTuple):
    peer: int
    period: int
    data: bytes


class _LiveHour(NamedTuple):
    peer: int
    hour: int
    rx: int
    tx: int


class _PeerEvent(NamedTuple):
    peer: int
    at: int
    kind: str
    endpoint: str | None
    seconds: int | None


# -- the store -------------------------------------------------------------------------


def store_path(host: Host) -> Path:
    """Where the store is (no link on the way: the state rule refuses one)."""
    return host.path(STORE_PATH)


def side_files(path: Path) -> tuple[Path, ...]:
    """The files SQLite keeps beside the store and reads as part of it: its write-ahead
    log, its shared-memory index and its rollback journal."""
    return tuple(path.with_name(path.name + suffix) for suffix in ("-wal", "-shm", "-journal"))


def reset_store(host: Host) -> Path | None:
    """Set the store aside (renamed beside itself with its write-ahead log, for a human
    to look at or delete) so the next recording starts a new one: what `RESET_COMMAND`
    does. The name it now has; None when there was no store."""
    path = store_path(host)
    if own_state.check(path) is None:  # the state rule: nothing moved in a folder of others
        return None
    aside = path.with_name(f"{path.name}.damaged-{time.strftime('%Y%m%dT%H%M%S')}")
    for part in (path, *side_files(path)):
        if own_state.check(part) is not None:
            try:
                os.replace(part, aside.with_name(aside.name + part.name[len(path.name):]))
            except OSError as exc:
                raise HistoryError(f"{part}: cannot be set aside ({_reason(exc)})") from exc
    return aside


class HistoryStore:
    """An open history file. Not shared between threads: each poller opens its own."""

    def __init__(self, path: Path, *, create: bool = True) -> None:
        self.path = path
        # SQLite opens the file itself, so the state rule is called here (not by
        # zsn.system.files): nobody but root (or zsn's user) may have put it there.
        own_state.check(path)
        for part in side_files(path):  # SQLite reads them as part of the store
            own_state.check(part)
        if not create and not path.exists():
            raise HistoryError(f"{path}: no history yet (zsn records it while the TUI, "
                               "zsn serve or the zsn-history timer runs)")
        if create:
            _prepare_directory(path.parent)
        try:
            # isolation_level=None: transactions are begun explicitly (BEGIN IMMEDIATE).
            self._db = sqlite3.connect(path, isolation_level=None, timeout=BUSY_TIMEOUT_MS / 1000,
                                       check_same_thread=False)
        except sqlite3.Error as exc:
            raise self._failure(exc, "cannot be opened") from None
        try:
            if create:
                os.chmod(path, 0o600)  # endpoints are where people are
            self._setup(create)
        except sqlite3.Error as exc:
            self._db.close()
            raise self._failure(exc) from None
        except UnicodeDecodeError:  # its header's text
            self._db.close()
            raise DamagedStoreError(path, "text that is not UTF-8") from None
        except OSError as exc:
            self._db.close()
            raise HistoryError(f"{path}: {_reason(exc)}") from exc
        except HistoryError:
            self._db.close()
            raise

    @classmethod
    def open(cls, host: Host, *, create: bool = True) -> HistoryStore:
        return cls(store_path(host), create=create)

    def _failure(self, exc: sqlite3.Error, doing: str | None = None) -> HistoryError:
        """The error to report for `exc`: a damaged file is named with `RESET_COMMAND`."""
        name = getattr(exc, "sqlite_errorname", "") or ""
        if name.startswith(("SQLITE_CORRUPT", "SQLITE_NOTADB")) or \
                type(exc) in (sqlite3.DatabaseError, sqlite3.DataError):
            return DamagedStoreError(self.path, str(exc))
        return HistoryError(f"{self.path}: {doing + ' (' if doing else ''}{_reason(exc)}"
                            f"{')' if doing else ''}")

    def _rows(self, kind: type[T], query: str, parameters: Sequence[Any] = ()) -> list[T]:
        """The rows `query` finds, each checked to be a `kind` (its columns' types)."""
        return self._decoded(kind, self._fetch(query, parameters))

    def _fetch(self, query: str, parameters: Sequence[Any]) -> list[tuple[Any, ...]]:
        try:
            rows: list[tuple[Any, ...]] = self._db.execute(query, parameters).fetchall()
        except sqlite3.Error as exc:
            raise self._failure(exc, "cannot be read") from None
        except UnicodeDecodeError:  # a TEXT value that is not UTF-8
            raise DamagedStoreError(self.path, "text that is not UTF-8") from None
        return rows

    def _decoded(self, kind: type[T], rows: Iterable[Sequence[Any]]) -> list[T]:
        try:
            return [decode.convert(row, kind, str(self.path)) for row in rows]
        except decode.DecodeError as exc:
            columns = getattr(kind, "_fields", ())
            index = (exc.field or "").strip("[]")
            column = columns[int(index)] if index.isdigit() and int(index) < len(columns) \
                else exc.field
            raise DamagedStoreError(self.path, f"{column}: {exc.reason}" if column
                                    else exc.reason) from None

    def _live(self, where: str = "", parameters: Sequence[Any] = ()
              ) -> list[tuple[PeerKey, LiveRow]]:
        """Rows of `live` with their peers' keys; SQLite's 0 and 1 of ``connected`` as
        the bool they stand for (anything else is refused as a bool would be)."""
        rows = self._fetch(_LIVE_QUERY + where, parameters)
        keys = self._decoded(PeerKey, (row[:2] for row in rows))
        connected = LiveRow._fields.index("connected") + 2
        lives = self._decoded(LiveRow, ((*row[2:connected], _flag(row[connected]),
                                         *row[connected + 1:]) for row in rows))
        return list(zip(keys, lives, strict=True))

    def _value(self, query: str) -> int:
        """One number (a pragma's)."""
        [(value,)] = self._rows(tuple[int], query)
        return value

    def _setup(self, create: bool) -> None:
        db = self._db
        db.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
        version = self._value("PRAGMA user_version")
        if version > SCHEMA_VERSION:
            raise HistoryError(f"{self.path}: schema version {version} is newer than this "
                               f"zsn's ({SCHEMA_VERSION}); not read or written")
        if version == 0 and not create:
            raise HistoryError(f"{self.path}: not a zsn history file (no schema version)")
        if db.execute("PRAGMA journal_mode").fetchone()[0].lower() != "wal":
            db.execute("PRAGMA journal_mode = WAL")
        db.execute("PRAGMA synchronous = NORMAL")
        if version == 0:
            with self.transaction():
                again = db.execute("PRAGMA user_version").fetchone()[0]
                if again == 0:  # another process may have created it meanwhile
                    if db.execute("SELECT count(*) FROM sqlite_schema").fetchone()[0]:
                        raise HistoryError(f"{self.path}: holds tables of something else; "
                                           "not a zsn history file")
                    # One statement at a time: executescript would commit first.
                    for statement in _SCHEMA.split(";"):
                        if statement.strip():
                            db.execute(statement)
                    db.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")

    def close(self) -> None:
        self._db.close()

    @contextmanager
    def transaction(self) -> Iterator[sqlite3.Connection]:
        """A write transaction holding the write lock from its start."""
        db = self._db
        try:
            db.execute("BEGIN IMMEDIATE")
        except sqlite3.Error as exc:
            raise self._failure(exc, "cannot write") from None
        try:
            yield db
        except BaseException as exc:
            with contextlib.suppress(sqlite3.Error):  # a damaged file may refuse that too
                db.execute("ROLLBACK")
            if isinstance(exc, sqlite3.Error):
                raise self._failure(exc, "cannot write") from None
            raise
        try:
            db.execute("COMMIT")
        except sqlite3.Error as exc:
            with contextlib.suppress(sqlite3.Error):
                db.execute("ROLLBACK")
            raise self._failure(exc, "cannot write") from None

    def data_version(self) -> int:
        """Changes whenever another connection (another zsn process) committed."""
        return self._value("PRAGMA data_version")

    # -- reads ----------------------------------------------------------------------
    def peer_ids(self, interface: str | None = None) -> dict[PeerKey, int]:
        query = "SELECT id, interface, public_key, name, first_seen FROM peers"
        rows = self._rows(_PeerRow, query + " WHERE interface = ?", (interface,)) \
            if interface is not None else self._rows(_PeerRow, query)
        return {PeerKey(row.interface, row.public_key): row.id for row in rows}

    def peer_names(self) -> dict[int, tuple[PeerKey, str | None, int]]:
        """Every peer ever seen: (key, last known name, first seen) by id."""
        return {row.id: (PeerKey(row.interface, row.public_key), row.name, row.first_seen)
                for row in self._rows(_PeerRow, "SELECT id, interface, public_key, name, "
                                                "first_seen FROM peers")}

    def live_rows(self) -> dict[PeerKey, LiveRow]:
        return dict(self._live())

    def hourly(self, peer: int, first_hour: int, last_hour: int) -> list[HourAmounts]:
        """Bytes per hour of `peer` from `first_hour` to `last_hour` (inclusive), the
        hours with no record as zeros; the hour being counted comes from `live`."""
        amounts: dict[int, tuple[int, int]] = {}
        first_period, last_period = period_of(first_hour), period_of(last_hour)
        for period, data in self._rows(
                _Period, "SELECT id >> ?, data FROM closed_period WHERE id IN "
                f"({', '.join('?' * (last_period - first_period + 1))})",
                (_PEER_BITS, *(period << _PEER_BITS | peer
                               for period in range(first_period, last_period + 1)))):
            _add_period(amounts, period, data, first_hour, last_hour)
        for period, data in self._rows(
                _Period, "SELECT period, data FROM open_period WHERE peer = ?", (peer,)):
            _add_period(amounts, period, data, first_hour, last_hour)
        for live in self._rows(_LiveHour, "SELECT peer, hour, hour_rx, hour_tx FROM live "
                                          "WHERE peer = ?", (peer,)):
            if first_hour <= live.hour <= last_hour:
                rx, tx = amounts.get(live.hour, (0, 0))
                amounts[live.hour] = (rx + live.rx, tx + live.tx)
        return [HourAmounts(hour, *amounts.get(hour, (0, 0)))
                for hour in range(first_hour, last_hour + 1)]

    def recent_hours(self, peers: list[int], first_hour: int, last_hour: int
                     ) -> dict[int, list[HourAmounts]]:
        """`hourly` for many peers at once (the export): a few queries, whatever the count."""
        wanted = set(peers)
        amounts: dict[int, dict[int, tuple[int, int]]] = {peer: {} for peer in wanted}
        first_period, last_period = period_of(first_hour), period_of(last_hour)
        for row_id, data in self._rows(
                _Period, "SELECT id, data FROM closed_period WHERE id >= ? AND id < ?",
                (first_period << _PEER_BITS, (last_period + 1) << _PEER_BITS)):
            peer = row_id & ((1 << _PEER_BITS) - 1)
            if peer in wanted:
                _add_period(amounts[peer], row_id >> _PEER_BITS, data, first_hour, last_hour)
        for peer, period, data in self._rows(
                _OpenPeriod, "SELECT peer, period, data FROM open_period WHERE period >= ?",
                (first_period,)):
            if peer in wanted:
                _add_period(amounts[peer], period, data, first_hour, last_hour)
        for peer, hour, rx, tx in self._rows(
                _LiveHour, "SELECT peer, hour, hour_rx, hour_tx FROM live WHERE hour >= ?",
                (first_hour,)):
            if peer in wanted and hour <= last_hour:
                old_rx, old_tx = amounts[peer].get(hour, (0, 0))
                amounts[peer][hour] = (old_rx + rx, old_tx + tx)
        return {peer: [HourAmounts(hour, *found.get(hour, (0, 0)))
                       for hour in range(first_hour, last_hour + 1)]
                for peer, found in amounts.items()}

    def latest_events(self, peers: list[int], limit: int, since: int = 0
                      ) -> dict[int, list[Event]]:
        """The newest `limit` events of each of `peers` from `since` on, oldest first."""
        wanted = set(peers)
        found: dict[int, list[Event]] = {}
        for row in self._rows(
                _PeerEvent, "SELECT peer, at, kind, endpoint, seconds FROM (SELECT *, "
                "row_number() OVER (PARTITION BY peer ORDER BY at DESC, id DESC) AS n FROM "
                "events WHERE at >= ?) WHERE n <= ? ORDER BY peer, at, id", (since, limit)):
            if row.peer in wanted:
                found.setdefault(row.peer, []).append(Event(*row[1:]))
        return found

    def read_peer(self, interface: str, public_key: str, now: int, *, hours: int,
                  events: int) -> PeerHistory | None:
        """`read_peer`'s work (the store's rows stay its own)."""
        found = self._rows(_PeerRow, "SELECT id, interface, public_key, name, first_seen "
                                     "FROM peers WHERE interface = ? AND public_key = ?",
                           (interface, public_key))
        if not found:
            return None
        peer = found[0].id
        live = self._live(" WHERE l.peer = ?", (peer,))
        last_hour = now // 3600
        return PeerHistory(found[0].first_seen, live[0][1] if live else None,
                           self.hourly(peer, last_hour - hours + 1, last_hour),
                           self.events(peer, events))

    def events(self, peer: int, limit: int = 1000, since: int | None = None) -> list[Event]:
        """The newest `limit` events of `peer` (from `since` on), oldest first."""
        rows = self._rows(
            Event, "SELECT at, kind, endpoint, seconds FROM events WHERE peer = ? AND at >= ? "
            "ORDER BY at DESC, id DESC LIMIT ?", (peer, since or 0, limit))
        return rows[::-1]

    # -- writes (inside `transaction()`) ---------------------------------------------
    def add_peer(self, db: sqlite3.Connection, key: PeerKey, name: str | None,
                 first_seen: int) -> int:
        cursor = db.execute(
            "INSERT INTO peers (interface, public_key, name, first_seen) VALUES (?, ?, ?, ?) "
            "ON CONFLICT (interface, public_key) DO UPDATE SET name = excluded.name "
            "RETURNING id", (key.interface, key.public_key, name, first_seen))
        peer_id: int = cursor.fetchone()[0]
        return peer_id

    def rename_peers(self, db: sqlite3.Connection, names: Iterable[tuple[int, str | None]]
                     ) -> None:
        db.executemany("UPDATE peers SET name = ? WHERE id = ?",
                       [(name, peer) for peer, name in names])

    def put_live(self, db: sqlite3.Connection, rows: Iterable[LiveRow]) -> None:
        # An upsert changes the row in place (INSERT OR REPLACE deletes and inserts).
        db.executemany(
            "INSERT INTO live VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) "
            "ON CONFLICT (peer) DO UPDATE SET instance = excluded.instance, "
            "sampled_at = excluded.sampled_at, rx = excluded.rx, tx = excluded.tx, "
            "total_rx = excluded.total_rx, total_tx = excluded.total_tx, "
            "hour = excluded.hour, hour_rx = excluded.hour_rx, hour_tx = excluded.hour_tx, "
            "handshake = excluded.handshake, endpoint = excluded.endpoint, "
            "connected = excluded.connected, since = excluded.since, "
            "last_seen = excluded.last_seen",
            [(*row[:12], int(row.connected), row.since, row.last_seen) for row in rows])

    def close_hours(self, db: sqlite3.Connection, closed: Iterable[tuple[int, HourAmounts]]
                    ) -> None:
        """Add finished hours (peer, amounts) to their periods, closing periods that ended."""
        by_peer: dict[int, list[HourAmounts]] = {}
        for peer, amounts in closed:
            by_peer.setdefault(peer, []).append(amounts)
        archive: list[tuple[int, bytes]] = []
        for peer, hours in sorted(by_peer.items()):
            rows = self._rows(_Period, "SELECT period, data FROM open_period WHERE peer = ?",
                              (peer,))
            period, data = (rows[0].key, rows[0].data) if rows else (None, b"")
            for amounts in sorted(hours):
                hour_period = period_of(amounts.hour)
                if period is not None and hour_period < period:
                    self._merge_closed(db, peer, amounts)  # a late hour of a closed period
                    continue
                if period is not None and hour_period != period and data:
                    archive.append((period << _PEER_BITS | peer, data))
                    data = b""
                if hour_period != period:
                    period, data = hour_period, b""
                data = _put_hour(data, amounts.hour % PERIOD_HOURS, amounts.rx, amounts.tx)
            db.execute("INSERT OR REPLACE INTO open_period VALUES (?, ?, ?)",
                       (peer, period, data))
        if archive:
            db.executemany("INSERT OR REPLACE INTO closed_period VALUES (?, ?)", sorted(archive))

    def _merge_closed(self, db: sqlite3.Connection, peer: int, amounts: HourAmounts) -> None:
        row_id = period_of(amounts.hour) << _PEER_BITS | peer
        rows = self._rows(_Period, "SELECT id, data FROM closed_period WHERE id = ?", (row_id,))
        data = _put_hour(rows[0].data if rows else b"", amounts.hour % PERIOD_HOURS,
                         amounts.rx, amounts.tx)
        db.execute("INSERT OR REPLACE INTO closed_period VALUES (?, ?)", (row_id, data))

    def add_events(self, db: sqlite3.Connection, events: Iterable[tuple[int, Event]]) -> None:
        db.executemany("INSERT INTO events (peer, at, kind, endpoint, seconds) "
                       "VALUES (?, ?, ?, ?, ?)", [(peer, *event) for peer, event in events])


def _put_hour(data: bytes, slot: int, rx: int, tx: int) -> bytes:
    """`data` (a period's codes, 4 bytes an hour) with hour `slot` added: appended in
    the usual case, hours skipped before it as zeros."""
    count = len(data) // 4
    if slot >= count:
        return data + bytes(4 * (slot - count)) + encode_amount(rx) + encode_amount(tx)
    values = decode_amounts(data)
    values[2 * slot] += rx
    values[2 * slot + 1] += tx
    return b"".join(encode_amount(value) for value in values)


def _add_period(amounts: dict[int, tuple[int, int]], period: int, data: bytes,
                first_hour: int, last_hour: int) -> None:
    """Add the hours of one period's `data` that fall in the range (only those are
    decoded: every hour is 4 bytes at its own offset)."""
    start = period * PERIOD_HOURS
    first = max(first_hour - start, 0)
    last = min(last_hour - start, len(data) // 4 - 1)
    if last < first:
        return
    values = decode_amounts(bytes(data[4 * first:4 * (last + 1)]))
    for index in range(0, len(values), 2):
        hour = start + first + index // 2
        rx, tx = amounts.get(hour, (0, 0))
        amounts[hour] = (rx + values[index], tx + values[index + 1])


def _prepare_directory(directory: Path) -> None:
    """Create the store's folder 0700 (root's) when it is missing (the state rule
    checked what exists)."""
    if own_state.check(directory, folder=True) is None:
        try:
            # Only the last level: a root without /var/lib is not a system to write to.
            directory.mkdir(mode=0o700)
        except FileExistsError:
            own_state.check(directory, folder=True)  # another zsn made it meanwhile
        except OSError as exc:
            raise HistoryError(f"{directory}: cannot be created ({_reason(exc)})") from exc


def _reason(exc: BaseException) -> str:
    if isinstance(exc, OSError):
        return exc.strerror or str(exc)
    text = str(exc)
    if "readonly" in text or "read-only" in text:
        return "read-only (root needed?)"
    return text


# -- one peer over time (details, `zsn peer log`, the export) -------------------------


class PeerHistory(NamedTuple):
    """What the store holds about one peer, read at `now`."""

    first_seen: int
    live: LiveRow | None
    hours: list[HourAmounts]
    """The last `hours` hours, oldest first, the current one last."""
    events: list[Event]


def read_peer(store: HistoryStore, interface: str, public_key: str, now: int, *,
              hours: int = 30 * 24, events: int = 1000) -> PeerHistory | None:
    """`public_key` on `interface` as the store has it; ``None`` when never recorded."""
    return store.read_peer(interface, public_key, now, hours=hours, events=events)


def buckets(hours: list[HourAmounts], size: int) -> list[tuple[int, int]]:
    """(rx, tx) summed over groups of `size` hours, ending with the newest hour."""
    start = len(hours) % size
    return [(sum(h.rx for h in hours[i:i + size]), sum(h.tx for h in hours[i:i + size]))
            for i in range(start, len(hours), size)]
