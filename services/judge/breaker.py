"""A consecutive-failure circuit breaker, so a dead judge costs nothing while it is dead.

``closed``: calls go through; ``failure_threshold`` failures in a row open it. ``open``: calls
are refused without a request until ``reset_seconds`` have passed. ``half_open``: exactly one trial
call goes through (the others are refused); its success closes the breaker, its failure opens it
again for another ``reset_seconds``.

Single-threaded by design: it lives on one event loop and never awaits, so no lock is needed.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Literal

__all__ = ["BreakerState", "CircuitBreaker"]

BreakerState = Literal["closed", "open", "half_open"]


class CircuitBreaker:
    def __init__(
        self,
        failure_threshold: int,
        reset_seconds: float,
        *,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if failure_threshold < 1 or reset_seconds <= 0:
            raise ValueError("failure_threshold must be >= 1 and reset_seconds > 0")
        self._threshold = failure_threshold
        self._reset = reset_seconds
        self._clock = clock
        self._state: BreakerState = "closed"
        self._failures = 0
        self._opened_at = 0.0
        self._trial_in_flight = False

    @property
    def state(self) -> BreakerState:
        """The state as of now (an open breaker past its reset time reads ``half_open``)."""
        if self._state == "open" and self._clock() - self._opened_at >= self._reset:
            return "half_open"
        return self._state

    def allow(self) -> bool:
        """May a call go out now? In ``half_open`` only the first caller gets True."""
        state = self.state
        if state == "closed":
            return True
        if state == "half_open" and not self._trial_in_flight:
            self._state = "half_open"
            self._trial_in_flight = True
            return True
        return False

    def record_success(self) -> None:
        self._state = "closed"
        self._failures = 0
        self._trial_in_flight = False

    def record_failure(self) -> None:
        if self._state == "half_open":
            self._open()
            return
        self._failures += 1
        if self._state == "closed" and self._failures >= self._threshold:
            self._open()

    def release(self) -> None:
        """Forget an allowed call that ended without a result (cancelled): free the trial slot."""
        self._trial_in_flight = False

    def _open(self) -> None:
        self._state = "open"
        self._opened_at = self._clock()
        self._trial_in_flight = False
        self._failures = 0
