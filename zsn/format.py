"""Human-readable numbers for the UI and notes: sizes, rates, ages, shortened keys."""

from __future__ import annotations

import re

# Anything that may be (part of) a key, base64 or hex: long runs of their alphabet.
_KEY_MATERIAL_RE = re.compile(r"[A-Za-z0-9+/]{20,}=*")

_UNITS = ("B", "KiB", "MiB", "GiB", "TiB", "PiB")


def human_bytes(count: float) -> str:
    value = float(count)
    for unit in _UNITS:
        if abs(value) < 1024 or unit == _UNITS[-1]:
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    raise AssertionError("unreachable")


SIZE_WIDTH = len("1023.9 KiB")
"""The widest `human_bytes` (below 1024 PiB): a column of sizes declares it as its
width, so its values never widen it (and shift the columns after it) as they change."""
RATE_WIDTH = SIZE_WIDTH + len("/s")
"""The widest `human_rate`."""


def human_rate(bytes_per_second: float | None) -> str:
    if bytes_per_second is None:
        return "-"
    return human_bytes(bytes_per_second) + "/s"


def human_duration(seconds: float) -> str:
    """Compact, most significant two units: ``45s``, ``3m 05s``, ``2h 10m``, ``4d 03h``."""
    total = max(0, int(seconds))
    days, rest = divmod(total, 86400)
    hours, rest = divmod(rest, 3600)
    minutes, secs = divmod(rest, 60)
    if days:
        return f"{days}d {hours:02d}h"
    if hours:
        return f"{hours}h {minutes:02d}m"
    if minutes:
        return f"{minutes}m {secs:02d}s"
    return f"{secs}s"


AGE_STEP_SECONDS = 5
"""Under a minute, an age on screen moves in steps of this many seconds (`coarse_duration`)."""


def coarse_duration(seconds: float) -> str:
    """`human_duration` at a step that suits its size, for an age in a table that is
    redrawn as it grows: under a minute in 5 s steps (``40s``), under an hour in whole
    minutes (``12m``), then hours and minutes, days and hours. The cell changes every
    few seconds at most, and once a minute for an old one, not every second."""
    total = max(0, int(seconds))
    if total < 60:
        return f"{total - total % AGE_STEP_SECONDS}s"
    if total < 3600:
        return f"{total // 60}m"
    return human_duration(total)


def short_key(key: str | None, length: int = 8) -> str:
    """The first characters of a base64 key followed by an ellipsis, as WireGuard UIs show it."""
    if not key:
        return "-"
    return key[:length] + "…"


def excerpt(text: str, length: int = 40) -> str:
    """The start of a line for an error message, with anything key-like hidden.

    Parse errors reach notifications and `zsn --export`; a malformed
    ``PrivateKey: ...`` line or a stray line of an inline ``<key>`` block must
    not put (part of) the key there.
    """
    return repr(_KEY_MATERIAL_RE.sub("(hidden)", text)[:length])


def human_nanoseconds(nanoseconds: float | None) -> str:
    """A latency: ``850 ns``, ``42 µs``, ``1.4 ms``, ``2.1 s``; ``-`` when there was none."""
    if nanoseconds is None:
        return "-"
    for unit, size in (("s", 1e9), ("ms", 1e6), ("µs", 1e3)):
        if nanoseconds >= size:
            value = nanoseconds / size
            return f"{value:.1f} {unit}" if value < 10 else f"{value:.0f} {unit}"
    return f"{nanoseconds:.0f} ns"


_SPARKS = "▁▂▃▄▅▆▇█"


def sparkline(values: list[float] | list[int], width: int) -> str:
    """The last `width` values as block characters scaled to their maximum; a flat
    line of ``▁`` when all are zero. Shorter histories are padded on the left."""
    shown = list(values)[-width:] if width > 0 else []
    peak = max(shown, default=0)
    marks = [_SPARKS[min(len(_SPARKS) - 1, int(value / peak * (len(_SPARKS) - 1) + 0.5))]
             if peak > 0 else _SPARKS[0] for value in shown]
    return " " * (width - len(marks)) + "".join(marks)
