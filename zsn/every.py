"""`Every`: a value worked out again only when due, for readers that poll."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any


class Every:
    """A value worked out again only when its inputs' key changes or it is older than
    `seconds` (lint findings and config owners between polls: they change rarely and
    cost more than the live read)."""

    def __init__(self, seconds: float, clock: Callable[[], float] = time.monotonic) -> None:
        self.seconds = seconds
        self._clock = clock
        self._at = float("-inf")
        self._key: object = object()
        self._value: Any = None

    def get(self, key: object, compute: Callable[[], Any]) -> Any:
        now = self._clock()
        if key != self._key or now - self._at >= self.seconds:
            self._value = compute()
            self._key, self._at = key, now
        return self._value
