"""Peers that expire: ``zsn peer expire IFACE NAME --at|--in|--never``.

The expiry is a comment inside the peer's block, the line after ``[Peer]``::

    # alice
    [Peer]
    # Expires = 2026-12-31T23:00:00Z
    PublicKey = ...

so it travels with the config (wg and wg-quick skip comments), moves with the peer
and goes when the peer is removed. Once the time has come, whichever zsn process
polls (the TUI, ``zsn serve``, ``zsn wg record`` from the timer) disables the peer
the way ``zsn peer disable`` does: the block commented out with ``#[disabled]`` and
the peer taken off the live interface. ``zsn peer enable`` refuses an expired peer,
naming its expiry, until a new time (or ``--never``) is set.
"""

from __future__ import annotations

import re
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

from zsn import decode
from zsn.errors import ValidationError, ZsnError
from zsn.system import files
from zsn.system.host import Host
from zsn.wireguard.config import (
    WIREGUARD_DIR,
    Section,
    WgConfig,
    config_path,
    expires_line,
    parse_shared,
)
from zsn.wireguard.schema import EXPIRES_KEY

if TYPE_CHECKING:
    from zsn.wireguard.model import WireGuardSnapshot

WARN_BEFORE = 7 * 86400
MAX_AHEAD = 100 * 366 * 86400
"""The furthest expiry zsn sets: further is --never."""
"""Lint warns of a peer expiring within this long."""
_DURATION_RE = re.compile(r"(\d+)\s*([wdhms])", re.IGNORECASE)
_UNITS = {"w": 604800, "d": 86400, "h": 3600, "m": 60, "s": 1}


class Expiry(NamedTuple):
    at: int | None
    """Unix time, ``None`` when the line cannot be read (lint says so)."""
    line: int
    text: str


def peer_expiry(config: WgConfig, peer: Section) -> Expiry | None:
    """The ``# Expires =`` line of `peer`, if it has one."""
    found = expires_line(config, peer)
    if found is None:
        return None
    return Expiry(parse_stored(found[1]), *found)


def parse_stored(text: str) -> int | None:
    """The time of an ``# Expires =`` comment; None when it is not one zsn can have
    written (no zone: zsn writes UTC; beyond the years zsn can show), which lint
    reports as unreadable."""
    try:
        return decode.timestamp(text, "# Expires")
    except decode.DecodeError:
        return None


def format_stored(at: int) -> str:
    return datetime.fromtimestamp(at, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def describe(at: int, now: float | None = None) -> str:
    """``2026-12-31 23:00 (in 5d 02h)`` in this machine's local time."""
    from zsn.format import human_duration

    clock = time.time() if now is None else now
    local = datetime.fromtimestamp(at).strftime("%Y-%m-%d %H:%M")
    if at <= clock:
        return f"{local} ({human_duration(clock - at)} ago)"
    return f"{local} (in {human_duration(at - clock)})"


def parse_when(at: str | None, within: str | None, now: float) -> int:
    """The moment ``--at DATETIME`` or ``--in DURATION`` names, checked to be ahead.

    DATETIME is ISO 8601 in local time unless it has a zone: ``2026-12-31``
    (the end of that day: it is the last day the peer works), ``2026-12-31 18:00``,
    ``2026-12-31T18:00+01:00``. DURATION is ``30d``, ``12h``, ``2w``, ``1d12h``."""
    if within is not None:
        text = within.strip()
        parts = _DURATION_RE.findall(text)
        if not parts or _DURATION_RE.sub("", text).strip():
            raise ValidationError(f"{within!r} is not a duration such as 30d, 12h, 2w or "
                                  "1d12h", field="within")
        seconds = sum(int(count) * _UNITS[unit.lower()] for count, unit in parts)
        if seconds <= 0:
            raise ValidationError("the duration must be more than 0", field="within")
        if seconds > MAX_AHEAD:
            raise ValidationError(f"{within!r} is more than 100 years: use --never",
                                  field="within")
        return int(now) + seconds
    assert at is not None
    text = at.strip()
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        raise ValidationError(f"{at!r} is not a date and time such as 2026-12-31 or "
                              "2026-12-31 18:00", field="at") from None
    try:
        if len(text) == 10:  # a date alone: the peer works through that day
            moment = moment + timedelta(days=1)
        if moment.tzinfo is None:
            moment = moment.astimezone()  # local time, as the admin typed it
        when = int(moment.timestamp())
    except (OverflowError, ValueError):  # the calendar's first or last day
        when = -1 if moment.year < 2 else int(now + MAX_AHEAD + 1)
    if when > now + MAX_AHEAD:
        raise ValidationError(f"{at} is more than 100 years ahead: use --never", field="at")
    if when <= now:
        raise ValidationError(f"{at} is in the past: to take the peer off now use "
                              "zsn peer disable", field="at")
    return when


def set_expiry(config: WgConfig, peer: Section, at: int | None) -> None:
    """Write, change or (``None``) remove the peer's ``# Expires =`` line."""
    current = peer_expiry(config, peer)
    config.set_comment(peer, EXPIRES_KEY, None if current is None else current.line,
                       None if at is None else format_stored(at))


def expiries(config: WgConfig) -> dict[str, int]:
    """Expiry by public key of the active peers that have one (the live read's)."""
    text = config.text
    if text is not None and "xpires" not in text and "XPIRES" not in text:
        return {}  # no line `expires_line` could take: 5,000 peers' lines cost ~5 ms
    found: dict[str, int] = {}
    for peer in config.peers:
        expiry = peer_expiry(config, peer)
        key = peer.get("PublicKey")
        if expiry is not None and expiry.at is not None and key:
            found[key] = expiry.at
    return found


def check_not_expired(config: WgConfig, peer: Section, interface: str, now: float) -> None:
    """`peer enable` refuses an expired peer, naming when it expired."""
    expiry = peer_expiry(config, peer)
    if expiry is None or expiry.at is None or expiry.at > now:
        return
    raise ValidationError(
        f"{peer.label} expired {describe(expiry.at, now)}: give it a new time first "
        f"(zsn peer expire {interface} {peer.name or peer.get('PublicKey')} --in 30d, or "
        "--never), then enable it")


class Expired(NamedTuple):
    interface: str
    name: str
    public_key: str
    at: int


def due(host: Host, interfaces: list[str] | None, now: float) -> list[Expired]:
    """Active peers whose expiry has come, in the configs of `interfaces` (``None``:
    every config in /etc/wireguard)."""
    if interfaces is None:
        paths = files.list_files(host.path(WIREGUARD_DIR), "*.conf")
    else:
        paths = [config_path(host, name) for name in interfaces]
    found: list[Expired] = []
    for path in paths:
        try:
            config = parse_shared(files.read_text(path), str(path))
        except ZsnError:
            continue  # lint reports a config zsn cannot read
        for key, at in expiries(config).items():
            if at <= now:
                peer = config.find_peer(key)
                assert peer is not None
                found.append(Expired(Path(path).stem, peer.name or key, key, at))
    return found


def due_in_snapshot(snapshot: WireGuardSnapshot) -> list[Expired]:
    """The peers of a live read whose expiry has come (the configs were read with it)."""
    clock = snapshot.taken_at or time.time()
    found: list[Expired] = []
    for interface in snapshot.interfaces:
        if not any(at <= clock for at in interface.expiries.values()):
            continue
        names = {peer.public_key: peer.name for peer in interface.peers if peer.name}
        found += [Expired(interface.name, names.get(key) or key, key, at)
                  for key, at in interface.expiries.items() if at <= clock]
    return found
