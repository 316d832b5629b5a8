"""The numbers ZFS prints: exact (``-p``), human (``1.66T``), ratios, percents, times.

Every parser returns ``None`` for ZFS's "not applicable" (``-``, empty) and raises
`ParseError` for anything else it does not understand.
"""

from __future__ import annotations

import re
import time

from zsn.errors import ParseError

_SUFFIXES = "BKMGTPEZ"
_HUMAN_SIZE_RE = re.compile(r"([0-9]+(?:[.,][0-9]+)?)\s*([KMGTPEZ]?)(?:i?B)?", re.IGNORECASE)
_CLOCK_RE = re.compile(r"(?:(\d+) days? )?(\d+):(\d\d):(\d\d)")
_SHORT_DURATION_RE = re.compile(r"(?:(\d+)d)?(?:(\d+)h)?(?:(\d+)m)?(?:(\d+)s)?")
NOT_APPLICABLE = ("-", "", "none")


def is_number(text: str) -> bool:
    """ASCII digits only: `str.isdigit` also accepts ``²`` and other scripts' digits."""
    return text.isascii() and text.isdigit()


def size(text: str) -> int | None:
    """Bytes from ``123456`` (``-p``) or ``1.66T``/``29.9M``/``0B``/``7,34T`` (binary units)."""
    value = text.strip()
    if value in NOT_APPLICABLE:
        return None
    if is_number(value):
        return int(value)
    match = _HUMAN_SIZE_RE.fullmatch(value)
    if match is None:
        raise ParseError(f"not a size: {value[:40]!r}")
    number = float(match.group(1).replace(",", "."))
    power = _SUFFIXES.index(match.group(2).upper() or "B")
    return int(round(number * 1024 ** power))


def count(text: str) -> int | None:
    """An exact count, or a humanized one (``2.72K``: error counts without ``-p``)."""
    return size(text)


def integer(text: str) -> int | None:
    value = text.strip()
    if value in NOT_APPLICABLE:
        return None
    if not is_number(value.removeprefix("-")):
        raise ParseError(f"not a number: {value[:40]!r}")
    return int(value)


def percent(text: str) -> int | None:
    """``3`` (``-p``) or ``3%`` (older ``-p``, or without it)."""
    value = text.strip().removesuffix("%")
    return integer(value)


def on_off(text: str) -> bool | None:
    """A boolean property: ``on``/``off`` (``-`` and the like: None)."""
    value = text.strip()
    if value in NOT_APPLICABLE:
        return None
    if value not in ("on", "off"):
        raise ParseError(f"not on or off: {value[:40]!r}")
    return value == "on"


def ratio(text: str) -> float | None:
    """``1.00`` (``-p``) or ``1.00x``."""
    value = text.strip().removesuffix("x")
    if value in NOT_APPLICABLE:
        return None
    try:
        return float(value)
    except ValueError:
        raise ParseError(f"not a ratio: {value[:40]!r}") from None


def duration(text: str) -> int | None:
    """Seconds from ``00:00:06``, ``0 days 01:01:21`` or the old ``14h7m``/``0h3m``."""
    value = text.strip()
    match = _CLOCK_RE.fullmatch(value)
    if match:
        days, hours, minutes, seconds = (int(part or 0) for part in match.groups())
        return ((days * 24 + hours) * 60 + minutes) * 60 + seconds
    match = _SHORT_DURATION_RE.fullmatch(value)
    if match and any(match.groups()):
        days, hours, minutes, seconds = (int(part or 0) for part in match.groups())
        return ((days * 24 + hours) * 60 + minutes) * 60 + seconds
    return None


def ctime(text: str) -> float | None:
    """A Unix time from ``Tue Nov 24 18:20:07 2026`` (ctime(3) in the host's local time,
    which is how zpool prints scan times under ``LC_ALL=C``)."""
    value = " ".join(text.split())
    try:
        return time.mktime(time.strptime(value, "%a %b %d %H:%M:%S %Y"))
    except (ValueError, OverflowError):
        return None
