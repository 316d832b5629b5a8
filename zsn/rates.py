"""Byte rates from successive counter readings (counters come from the kernel or daemons)."""

from __future__ import annotations

from collections.abc import Collection, Hashable
from dataclasses import dataclass, field


@dataclass
class RateTracker:
    """Per key, the rate between the last two readings; a counter that went down resets."""

    _last: dict[Hashable, tuple[float, int, int]] = field(default_factory=dict)

    def update(
        self, key: Hashable, when: float, rx: int, tx: int
    ) -> tuple[float | None, float | None]:
        previous = self._last.get(key)
        self._last[key] = (when, rx, tx)
        if previous is None:
            return None, None
        then, old_rx, old_tx = previous
        elapsed = when - then
        if elapsed <= 0 or rx < old_rx or tx < old_tx:
            return None, None
        return (rx - old_rx) / elapsed, (tx - old_tx) / elapsed

    def forget_except(self, keys: Collection[Hashable]) -> None:
        """Drop state for keys no longer present, so a big churn does not grow memory."""
        for key in list(self._last):
            if key not in keys:
                del self._last[key]
