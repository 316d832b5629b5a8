"""Rates from successive counter readings (counters come from the kernel or daemons)."""

from __future__ import annotations

from collections.abc import Collection, Hashable, Sequence


def counter_rates(then: float, old: Sequence[int], when: float,
                  values: Sequence[int]) -> tuple[float, ...] | None:
    """Each counter's rate from the reading `old` at `then` to `values` at `when`;
    None when a counter went down (a reset, a recreated device) or no time passed."""
    elapsed = when - then
    if values == old and elapsed > 0:  # idle: the common case on a big host
        return (0.0,) * len(values)
    if elapsed <= 0 or len(old) != len(values) or any(
            new < before for new, before in zip(values, old, strict=True)):
        return None
    return tuple((new - before) / elapsed for new, before in zip(values, old, strict=True))


class CounterRates:
    """Per key, each counter's rate between the last two readings.

    A reading in which any counter went down (a reset, a recreated device) gives no
    rates: the sample is dropped, the next reading starts afresh. Key a device by its
    identity (e.g. name and ifindex) so a recreated one is a new key.
    """

    # A plain class, not a dataclass: made at every start, where a dataclass costs
    # ~0.3 ms to define.
    def __init__(self) -> None:
        self._last: dict[Hashable, tuple[float, Sequence[int]]] = {}

    def update(self, key: Hashable, when: float,
               values: Sequence[int]) -> tuple[float, ...] | None:
        previous = self._last.get(key)
        self._last[key] = (when, values)
        if previous is None:
            return None
        return counter_rates(*previous, when, values)

    def forget_except(self, keys: Collection[Hashable]) -> None:
        """Drop state for keys no longer present, so a big churn does not grow memory."""
        for key in list(self._last):
            if key not in keys:
                del self._last[key]


class RateTracker:
    """Per key, receive and transmit bytes/s between the last two readings."""

    def __init__(self) -> None:
        self._rates = CounterRates()

    def update(
        self, key: Hashable, when: float, rx: int, tx: int
    ) -> tuple[float | None, float | None]:
        rates = self._rates.update(key, when, (rx, tx))
        if rates is None:
            return None, None
        return rates[0], rates[1]

    def forget_except(self, keys: Collection[Hashable]) -> None:
        self._rates.forget_except(keys)
