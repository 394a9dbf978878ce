"""How long to wait before the next attempt: exponential back-off, full jitter, Retry-After."""

from __future__ import annotations

import random
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime

__all__ = ["backoff_delay", "retry_after_seconds"]


def backoff_delay(
    retry: int, base: float, cap: float, *, jitter: bool, rng: random.Random
) -> float:
    """The pause before retry number ``retry`` (1 for the first retry).

    Without jitter: ``min(cap, base * 2**(retry-1))``. With full jitter: uniform in [0, that], which
    spreads the retries of many callers so they do not hit a recovering judge in lockstep.
    """
    ceiling = min(cap, base * 2.0 ** min(retry - 1, 60))
    return rng.uniform(0.0, ceiling) if jitter else ceiling


def retry_after_seconds(value: str | None, *, now: datetime | None = None) -> float | None:
    """``Retry-After`` as seconds (delta-seconds or an HTTP date), or None if absent or invalid."""
    if value is None:
        return None
    text = value.strip()
    try:
        seconds = float(text)
    except ValueError:
        try:
            when = parsedate_to_datetime(text)
        except (TypeError, ValueError, IndexError):
            return None
        if when.tzinfo is None:
            when = when.replace(tzinfo=UTC)
        seconds = (when - (now or datetime.now(UTC))).total_seconds()
    if seconds != seconds or seconds in (float("inf"), float("-inf")):
        return None
    return max(0.0, seconds)
