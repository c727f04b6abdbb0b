"""How many model requests may be in flight: at most the configured concurrency, fewer while the API pushes back.

A 429 (rate limited) or 529 (overloaded) halves the number allowed (never below one) and holds every new request
until the `retry-after` the API asked for has passed; then each run of as many successes as are allowed adds one
back, up to the configured concurrency (additive increase, multiplicative decrease). The SDK retries the refused
request itself, after the same `retry-after`.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

from distiller.config import MIN_CONCURRENCY

# The pause after a 429/529 that names no retry-after: about what the SDK waits before its first retry.
DEFAULT_PAUSE_SECONDS = 0.5
# A pushed-back request waits this long at most before the pause is over (a retry-after of hours is the SDK's
# and the next run's business, not a reason to hold a run's other requests).
MAX_PAUSE_SECONDS = 60.0


class Pace:
    """Thread-safe: workers report overloads and successes; the dispatcher asks when the next request may go."""

    def __init__(self, concurrency: int, clock: Callable[[], float] = time.monotonic) -> None:
        self.ceiling = max(MIN_CONCURRENCY, concurrency)
        self.limit = self.ceiling
        self.lowest = self.ceiling  # the lowest limit reached, for the run's report
        self.overloads = 0
        self._clock = clock
        self._paused_until = 0.0
        self._streak = 0
        self._lock = threading.Lock()

    def overloaded(self, status: int, retry_after: float | None) -> None:
        """A 429 or 529 was answered (to any request): fewer at a time, and none new before retry-after."""
        pause = DEFAULT_PAUSE_SECONDS if retry_after is None or retry_after <= 0 else retry_after
        with self._lock:
            self.overloads += 1
            self.limit = max(MIN_CONCURRENCY, self.limit // 2)
            self.lowest = min(self.lowest, self.limit)
            self._streak = 0
            self._paused_until = max(self._paused_until, self._clock() + min(pause, MAX_PAUSE_SECONDS))

    def succeeded(self) -> None:
        """A request was answered: after as many successes in a row as are allowed, one more is allowed."""
        with self._lock:
            self._streak += 1
            if self.limit < self.ceiling and self._streak >= self.limit:
                self.limit += 1
                self._streak = 0

    def wait_seconds(self, in_flight: int) -> float | None:
        """0 when one more request may go now; else how long until the pause ends (None: wait for one in
        flight to finish)."""
        with self._lock:
            if in_flight >= self.limit:
                return None
            return max(0.0, self._paused_until - self._clock())
