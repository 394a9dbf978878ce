"""Period ids of the evaluation sets: ISO week (default), UTC day or UTC month.

A period id is a string that sorts in time order within one kind: ``2026-W45`` (ISO 8601 week,
its year is the ISO year, so 2027-01-01 may belong to ``2026-W53``), ``2026-11-05``, ``2026-11``.
Timestamps are converted to UTC before cutting, so a conversation at 23:30 in Hanoi on a Sunday
belongs to the week that contains that instant in UTC.
"""

from __future__ import annotations

import re
from datetime import UTC, date, datetime, timedelta

from schemas.evalset import PeriodKind

__all__ = [
    "kind_of",
    "period_end",
    "period_of",
    "period_start",
    "periods_order_key",
    "shift_period",
]

_WEEK = re.compile(r"^(\d{4})-W(\d{2})$")
_DAY = re.compile(r"^(\d{4})-(\d{2})-(\d{2})$")
_MONTH = re.compile(r"^(\d{4})-(\d{2})$")


def period_of(when: datetime, kind: PeriodKind = "iso_week") -> str:
    """The period that contains the instant ``when`` (an aware datetime).

    >>> from datetime import datetime, timezone
    >>> t = datetime(2026, 11, 5, 12, tzinfo=timezone.utc)
    >>> period_of(t), period_of(t, "day"), period_of(t, "month")
    ('2026-W45', '2026-11-05', '2026-11')
    >>> period_of(datetime(2027, 1, 1, tzinfo=timezone.utc))
    '2026-W53'
    """
    if when.tzinfo is None:
        raise ValueError("period_of needs an aware datetime")
    utc = when.astimezone(UTC)
    if kind == "iso_week":
        year, week, _ = utc.isocalendar()
        return f"{year:04d}-W{week:02d}"
    if kind == "day":
        return utc.strftime("%Y-%m-%d")
    if kind == "month":
        return utc.strftime("%Y-%m")
    raise ValueError(f"unknown period kind {kind!r}")


def kind_of(period: str) -> PeriodKind:
    """The kind of a period id; ``ValueError`` when it is none of the three forms."""
    if _WEEK.match(period):
        return "iso_week"
    if _DAY.match(period):
        return "day"
    if _MONTH.match(period):
        return "month"
    raise ValueError(f"not a period id: {period!r} (want 2026-W45, 2026-11-05 or 2026-11)")


def period_start(period: str) -> datetime:
    """The first instant (UTC) of ``period``.

    >>> period_start("2026-W45").isoformat()
    '2026-11-02T00:00:00+00:00'
    """
    kind = kind_of(period)
    if kind == "iso_week":
        m = _WEEK.match(period)
        assert m is not None
        try:
            day = date.fromisocalendar(int(m[1]), int(m[2]), 1)
        except ValueError:
            raise ValueError(f"no such ISO week: {period!r}") from None
    elif kind == "day":
        try:
            day = date.fromisoformat(period)
        except ValueError:
            raise ValueError(f"no such day: {period!r}") from None
    else:
        year, month = (int(x) for x in period.split("-"))
        if not 1 <= month <= 12:
            raise ValueError(f"no such month: {period!r}")
        day = date(year, month, 1)
    return datetime(day.year, day.month, day.day, tzinfo=UTC)


def period_end(period: str) -> datetime:
    """The first instant (UTC) after ``period``.

    >>> period_end("2026-12").isoformat(), period_end("2026-11-05").isoformat()
    ('2027-01-01T00:00:00+00:00', '2026-11-06T00:00:00+00:00')
    """
    start = period_start(period)
    kind = kind_of(period)
    if kind == "iso_week":
        return start + timedelta(days=7)
    if kind == "day":
        return start + timedelta(days=1)
    year, month = (start.year + 1, 1) if start.month == 12 else (start.year, start.month + 1)
    return datetime(year, month, 1, tzinfo=UTC)


def periods_order_key(period: str) -> datetime:
    """Sort key putting periods in time order (``sorted(ps, key=periods_order_key)``)."""
    return period_start(period)


def shift_period(period: str, n: int) -> str:
    """The period ``n`` periods after ``period`` (before it when ``n < 0``), same kind.

    >>> shift_period("2026-W01", -1), shift_period("2026-12-31", 1), shift_period("2026-01", -13)
    ('2025-W52', '2027-01-01', '2024-12')
    """
    kind = kind_of(period)
    current = period
    for _ in range(abs(n)):
        if n > 0:
            current = period_of(period_end(current), kind)
        else:
            current = period_of(period_start(current) - timedelta(microseconds=1), kind)
    return current
