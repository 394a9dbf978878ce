"""The in-process spike detector: a pure state machine over closed windows of counts.

Feed it counts with :meth:`Detector.observe` and close each window with
:meth:`Detector.close_window`; it returns the :class:`~schemas.alerts.Alert` events of the series
that started or stopped spiking. No clock, no I/O: the caller decides when a window is closed (the
worker, from a timer; a simulation, from a loop).

For each closed window, every series with a long enough baseline is tested (exact Poisson or
binomial test, :mod:`services.alerting.stats`); the p-values of all series in the window form one
family for multiple-testing control. A series' window is *significant* when its test is rejected
after correction **and** its count reaches the floor. ``fire_windows`` significant windows in a row
fire the series; ``resolve_windows`` non-significant ones in a row resolve it.

Windows that were significant, or closed while the series was firing, stay out of its baseline, so
a spike cannot raise the bar it is measured against. A lasting change of level therefore keeps
firing until somebody looks — on purpose, for a surveillance signal. Windows that were never closed
(a worker that was down) leave a gap in the baseline, not zeros.

For a binomial series, count *messages with at least one finding*, not findings: the test needs a
count of at most ``messages``, and several findings in one message are one event, not several.
"""

from __future__ import annotations

import hashlib
import math
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

import numpy as np

from schemas.alerts import Alert, AlertState, DetectorSettings, TestKind
from services.alerting.state import (
    DetectorState,
    PendingCount,
    SeriesKey,
    SeriesState,
    WindowCount,
)
from services.alerting.stats import binomial_test, correct, poisson_test

__all__ = ["Detector", "WindowClosedError", "window_start_of"]


class WindowClosedError(ValueError):
    """A count arrived for, or a close was asked of, a window that is already closed."""


def window_start_of(ts: datetime, window_seconds: int) -> datetime:
    """The start of the tumbling window (aligned on the Unix epoch) that contains ``ts``."""
    if ts.tzinfo is None:
        raise ValueError("timestamps must be timezone-aware")
    start = math.floor(ts.timestamp() / window_seconds) * window_seconds
    return datetime.fromtimestamp(start, tz=UTC)


@dataclass(slots=True)
class _Tally:
    count: int = 0
    messages: int | None = None


@dataclass(slots=True)
class _Sums:
    """Running sums over a series' baseline (derived, so not part of the exported state)."""

    count: int = 0
    known_windows: int = 0  # windows whose messages were reported
    known_count: int = 0
    known_messages: int = 0

    def add(self, w: WindowCount, sign: int = 1) -> None:
        self.count += sign * w.count
        if w.messages is not None:
            self.known_windows += sign
            self.known_count += sign * w.count
            self.known_messages += sign * w.messages


@dataclass(slots=True)
class _Test:
    series: SeriesState
    sums: _Sums
    tally: _Tally
    kind: TestKind
    baseline_windows: int
    p_value: float = 1.0
    expected: float = 0.0


class Detector:
    """Spike detection over (category, tenant, direction) series. See the module docstring."""

    def __init__(self, settings: DetectorSettings | None = None) -> None:
        self.settings = settings if settings is not None else DetectorSettings()
        self._series: dict[SeriesKey, SeriesState] = {}
        self._sums: dict[SeriesKey, _Sums] = {}
        self._pending: dict[datetime, dict[SeriesKey, _Tally]] = {}
        self._last_closed: datetime | None = None

    # ----------------------------------------------------------------------------- state
    @classmethod
    def from_state(cls, state: DetectorState) -> Detector:
        detector = cls(state.settings)
        detector._last_closed = state.last_closed
        for series in state.series:
            detector._series[series.key] = series.model_copy(deep=True)
            sums = detector._sums[series.key] = _Sums()
            for w in series.baseline:
                sums.add(w)
        for p in state.pending:
            detector._pending.setdefault(p.window_start, {})[p.key] = _Tally(p.count, p.messages)
        return detector

    def state(self) -> DetectorState:
        pending = [
            PendingCount(window_start=w, key=k, count=t.count, messages=t.messages)
            for w, tallies in sorted(self._pending.items())
            for k, t in tallies.items()
        ]
        series = [s.model_copy(deep=True) for s in self._series.values()]
        return DetectorState(
            settings=self.settings, last_closed=self._last_closed, series=series, pending=pending
        )

    @property
    def last_closed(self) -> datetime | None:
        """The start of the last window closed (None before the first)."""
        return self._last_closed

    def series(self, key: SeriesKey) -> SeriesState | None:
        """A copy of one series' state (None if never observed)."""
        found = self._series.get(key)
        return found.model_copy(deep=True) if found is not None else None

    def firing(self) -> list[Alert]:
        """The firing alert of every series that is firing now (to re-send to Alertmanager)."""
        return [s.alert for s in self._series.values() if s.alert is not None]

    # ----------------------------------------------------------------------------- input
    def observe(
        self, key: SeriesKey, window_start: datetime, count: int, messages: int | None = None
    ) -> None:
        """Add ``count`` findings (and ``messages`` messages, when known) to a window.

        Calls add up, so a caller may report a window's totals once or increment as it goes.
        Raises :class:`WindowClosedError` for a window that is already closed.
        """
        self._check_window(window_start)
        if count < 0 or (messages is not None and messages < 0):
            raise ValueError("count and messages must not be negative")
        if key not in self._series:
            self._series[key] = SeriesState(key=key)
            self._sums[key] = _Sums()
        tally = self._pending.setdefault(window_start, {}).setdefault(key, _Tally())
        tally.count += count
        if messages is not None:
            tally.messages = (tally.messages or 0) + messages

    def close_window(self, window_start: datetime) -> list[Alert]:
        """Close ``window_start`` (and any earlier window still holding counts), in order."""
        self._check_window(window_start)
        alerts: list[Alert] = []
        for earlier in sorted(w for w in self._pending if w < window_start):
            alerts += self._close(earlier)
        alerts += self._close(window_start)
        return alerts

    def _check_window(self, window_start: datetime) -> None:
        if window_start_of(window_start, self.settings.window_seconds) != window_start:
            raise ValueError(
                f"{window_start} is not the start of a {self.settings.window_seconds} s window"
            )
        if self._last_closed is not None and window_start <= self._last_closed:
            raise WindowClosedError(f"window {window_start.isoformat()} is already closed")

    # ----------------------------------------------------------------------------- decision
    def _close(self, window_start: datetime) -> list[Alert]:
        cfg = self.settings
        tallies = self._pending.pop(window_start, {})
        self._last_closed = window_start
        tests: list[_Test] = []
        for key, series in self._series.items():
            tally = tallies.get(key, _Tally())
            test = self._prepare(series, tally)
            if test is None:
                self._remember(series, tally, significant=False)
            else:
                tests.append(test)
        self._p_values(tests)
        decisions = correct([t.p_value for t in tests], cfg.alpha, cfg.correction)
        alerts: list[Alert] = []
        for test, decision in zip(tests, decisions, strict=True):
            significant = decision.rejected and test.tally.count >= cfg.floor
            alert = self._step(test, significant, decision.threshold, window_start)
            if alert is not None:
                alerts.append(alert)
            self._remember(test.series, test.tally, significant=significant)
        return alerts

    def _prepare(self, series: SeriesState, tally: _Tally) -> _Test | None:
        need = self.settings.min_baseline_windows
        sums = self._sums[series.key]
        if tally.messages is not None:
            if tally.count > tally.messages:
                raise ValueError(
                    f"{series.key}: {tally.count} findings in {tally.messages} messages"
                )
            if sums.known_windows >= need:
                return _Test(series, sums, tally, "binomial", sums.known_windows)
        if len(series.baseline) >= need:
            return _Test(series, sums, tally, "poisson", len(series.baseline))
        return None

    def _p_values(self, tests: list[_Test]) -> None:
        prior = self.settings.prior_count
        poisson = [t for t in tests if t.kind == "poisson"]
        if poisson:
            p, mu = poisson_test(
                [t.tally.count for t in poisson],
                [t.sums.count for t in poisson],
                [t.baseline_windows for t in poisson],
                prior,
            )
            self._store(poisson, p, mu)
        binomial = [t for t in tests if t.kind == "binomial"]
        if binomial:
            p, mu = binomial_test(
                [t.tally.count for t in binomial],
                [t.tally.messages or 0 for t in binomial],
                [t.sums.known_count for t in binomial],
                [t.sums.known_messages for t in binomial],
                prior,
            )
            self._store(binomial, p, mu)

    @staticmethod
    def _store(tests: list[_Test], p: np.ndarray, expected: np.ndarray) -> None:
        for test, p_value, mu in zip(tests, p.tolist(), expected.tolist(), strict=True):
            test.p_value = min(1.0, max(0.0, p_value))
            test.expected = mu

    def _step(
        self, test: _Test, significant: bool, threshold: float, window_start: datetime
    ) -> Alert | None:
        cfg, series = self.settings, test.series
        if significant:
            if series.significant_run == 0:
                series.run_started = window_start
            series.significant_run += 1
            series.quiet_run = 0
            if series.status != "firing" and series.significant_run >= cfg.fire_windows:
                series.status = "firing"
                series.alert = self._alert(test, "firing", threshold, window_start, None)
                return series.alert
            return None
        series.significant_run = 0
        series.run_started = None
        if series.status != "firing":
            return None
        series.quiet_run += 1
        if series.quiet_run < cfg.resolve_windows:
            return None
        alert = self._alert(test, "resolved", threshold, window_start, series.alert)
        series.status, series.alert, series.quiet_run = "resolved", None, 0
        return alert

    def _remember(self, series: SeriesState, tally: _Tally, *, significant: bool) -> None:
        if significant or series.status == "firing":
            return
        window = WindowCount(count=tally.count, messages=tally.messages)
        sums = self._sums[series.key]
        series.baseline.append(window)
        sums.add(window)
        if len(series.baseline) > self.settings.baseline_windows:
            sums.add(series.baseline.pop(0), -1)

    def _alert(
        self,
        test: _Test,
        state: AlertState,
        threshold: float,
        window_start: datetime,
        firing: Alert | None,
    ) -> Alert:
        key = test.series.key
        window_end = window_start + timedelta(seconds=self.settings.window_seconds)
        started = firing.started_at if firing is not None else test.series.run_started
        assert started is not None
        return Alert(
            alert_id=firing.alert_id if firing is not None else _alert_id(key, started),
            category=key.category,
            tenant=key.tenant,
            direction=key.direction,
            state=state,
            window_start=window_start,
            window_end=window_end,
            observed=test.tally.count,
            expected=test.expected,
            baseline_windows=test.baseline_windows,
            test=test.kind,
            messages=test.tally.messages if test.kind == "binomial" else None,
            p_value=test.p_value,
            adjusted_threshold=threshold,
            floor=self.settings.floor,
            started_at=started,
            resolved_at=window_end if state == "resolved" else None,
            settings=self.settings,
        )


def _alert_id(key: SeriesKey, started_at: datetime) -> str:
    raw = f"{key.category}\x00{key.tenant}\x00{key.direction}\x00{started_at.isoformat()}"
    return hashlib.sha256(raw.encode("utf-8")).hexdigest()[:32]
