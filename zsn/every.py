"""`Every`: a value worked out again only when due, for readers that poll."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

from zsn.errors import ZsnError


class Every:
    """A value worked out again only when its inputs' key changes or it is older than
    `seconds` (lint findings and config owners between polls: they change rarely and
    cost more than the live read).

    With `background`, a value that is only old is worked out again in a thread of its
    own while the old one is still given out, so a slow one (a big history store)
    never holds up the poll that finds it due; a new key is still worked out at once.
    """

    def __init__(self, seconds: float, clock: Callable[[], float] = time.monotonic, *,
                 background: bool = False) -> None:
        self.seconds = seconds
        self.background = background
        self._clock = clock
        self._at = float("-inf")
        self._key: object = object()
        self._value: Any = None
        self._lock = threading.Lock()
        self._refreshing: threading.Thread | None = None

    def get(self, key: object, compute: Callable[[], Any]) -> Any:
        now = self._clock()
        with self._lock:
            fresh = key == self._key
            if fresh and now - self._at < self.seconds:
                return self._value
            if fresh and self.background:
                if self._refreshing is None:
                    self._refreshing = threading.Thread(
                        target=self._refresh, args=(key, compute), daemon=True,
                        name="zsn-every")
                    self._refreshing.start()
                return self._value
        value = compute()
        with self._lock:
            self._value, self._key, self._at = value, key, now
        return value

    def _refresh(self, key: object, compute: Callable[[], Any]) -> None:
        started = self._clock()
        try:
            value = compute()
        except (ZsnError, OSError):
            # The old value stays; the next poll that finds it due tries again (and a
            # new key is worked out at once, where the error reaches the poll).
            with self._lock:
                self._refreshing = None
            return
        except BaseException:
            with self._lock:
                self._refreshing = None
            raise
        with self._lock:
            if self._key == key:
                self._value, self._at = value, started
            self._refreshing = None
