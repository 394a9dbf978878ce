"""The in-process spike detector: a pure state machine over closed windows of counts.

Feed it counts with :meth:`Detector.observe` and close each window with
:meth:`Detector.close_window`; it returns the :class:`~schemas.alerts.Alert` events of the series
that started or stopped spiking. No clock, no I/O: the caller decides when a window is closed (the
worker, from a timer; a simulation, from a loop).

For each closed window every series is forecast from its baseline and tested twice
(:mod:`services.alerting.baseline` has the arithmetic):

- the **window test**: how surprising is this window's count alone, given the forecast, the
  volume and the dispersion estimated from the series' own history? The p-values of all series
  tested in the window form one family for multiple-testing control (Benjamini–Hochberg by
  default); rejected and at least ``floor`` findings: significant;
- the **CUSUM**: the evidence of the last windows together that the rate is ``cusum_ratio`` times
  the forecast; at ``cusum_threshold`` nats, with at least ``floor`` findings in its run:
  significant. It catches the sustained small-volume spike no single window shows.

``fire_windows`` significant windows in a row fire the series; ``resolve_windows`` quiet ones in a
row resolve it (and restart its CUSUM). Windows enter the baseline ``guard_windows`` late, and only
those that were not significant and not closed while the series was firing: a spike cannot raise
the bar it is measured against, and a lasting change of level keeps firing until somebody looks —
on purpose, for a surveillance signal. Windows that were never closed (a worker that was down),
and windows of a binomial series with no messages, leave a gap, not zeros.

The state is bounded: each series is a fixed set of numbers plus at most ``guard_windows`` waiting
windows, and at each closed window the detector forgets the series without traffic for
``series_idle_windows`` windows, then, beyond ``max_series``, those whose traffic it saw least
recently (firing series last). A series forgotten while firing is resolved first.

For a binomial series, count *messages with at least one finding*, not findings: the test needs a
count of at most ``messages``, and several findings in one message are one event, not several.
"""

from __future__ import annotations

import hashlib
import math
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Literal

import numpy as np

from schemas.alerts import (
    Alert,
    AlertState,
    CusumEvidence,
    DetectorSettings,
    FiredBy,
    TestKind,
)
from services.alerting.baseline import Bank, Params, WindowStats
from services.alerting.state import (
    Baseline,
    DetectorState,
    PendingCount,
    SeriesKey,
    SeriesState,
    SeriesStatus,
)
from services.alerting.stats import correct_arrays

__all__ = ["Detector", "DropReason", "WindowClosedError", "window_start_of"]

#: Why a series was forgotten: no traffic for ``series_idle_windows`` (``idle``), or more series
#: than ``max_series`` (``bound``).
DropReason = Literal["idle", "bound"]


class WindowClosedError(ValueError):
    """A count arrived for, or a close was asked of, a window that is already closed."""


def window_start_of(ts: datetime, window_seconds: int) -> datetime:
    """The start of the tumbling window (aligned on the Unix epoch) that contains ``ts``."""
    if ts.tzinfo is None:
        raise ValueError("timestamps must be timezone-aware")
    start = math.floor(ts.timestamp() / window_seconds) * window_seconds
    return datetime.fromtimestamp(start, tz=UTC)


@dataclass(slots=True)
class _Series:
    """The state machine of one series; its numbers live in the bank's row ``row``."""

    key: SeriesKey
    kind: TestKind
    row: int
    status: SeriesStatus = "ok"
    significant_run: int = 0
    quiet_run: int = 0
    run_started: datetime | None = None
    run_fired_by: FiredBy | None = None
    alert: Alert | None = None

    @property
    def busy(self) -> bool:
        """Firing, or in a run of significant windows: the state machine has work to do."""
        return self.status == "firing" or self.significant_run > 0


@dataclass(slots=True)
class _Tally:
    series: _Series
    count: int = 0
    messages: int | None = None


class Detector:
    """Spike detection over (category, tenant, direction) series. See the module docstring."""

    def __init__(self, settings: DetectorSettings | None = None) -> None:
        self.settings = settings if settings is not None else DetectorSettings()
        self._bank = Bank(Params.of(self.settings))
        self._series: dict[SeriesKey, _Series] = {}
        self._rows: list[_Series] = []  # the series of each bank row
        self._poisson: list[_Series] = []  # count-only series: a window without counts is 0
        #: Series forgotten since this detector was made, by reason (for metrics; not state).
        self.dropped: dict[DropReason, int] = {"idle": 0, "bound": 0}
        self._pending: dict[datetime, dict[SeriesKey, _Tally]] = {}
        self._last_closed: datetime | None = None

    # ----------------------------------------------------------------------------- state
    @classmethod
    def from_state(cls, state: DetectorState) -> Detector:
        detector = cls(state.settings)
        detector._last_closed = state.last_closed
        for s in state.series:
            detector._restore(s)
        for p in state.pending:
            detector.observe(p.key, p.window_start, p.count, p.messages)
        return detector

    def _restore(self, s: SeriesState) -> None:
        row = self._bank.add(s.kind == "binomial", s.baseline.model_dump())
        if s.last_seen is not None:  # else (saved before it was kept): from the next close
            self._bank.seen[row] = s.last_seen.timestamp()
        self._series[s.key] = found = _Series(
            s.key,
            s.kind,
            row,
            s.status,
            s.significant_run,
            s.quiet_run,
            s.run_started,
            s.run_fired_by,
            s.alert,
        )
        self._rows.append(found)
        if s.kind == "poisson":
            self._poisson.append(found)

    def state(self) -> DetectorState:
        pending = [
            PendingCount(window_start=w, key=k, count=t.count, messages=t.messages)
            for w, tallies in sorted(self._pending.items())
            for k, t in tallies.items()
        ]
        series = [self._export(s) for s in self._series.values()]
        return DetectorState(
            settings=self.settings, last_closed=self._last_closed, series=series, pending=pending
        )

    def _export(self, s: _Series) -> SeriesState:
        seen = float(self._bank.seen[s.row])
        return SeriesState(
            key=s.key,
            kind=s.kind,
            status=s.status,
            baseline=Baseline.model_validate(self._bank.row(s.row)),
            last_seen=None if math.isnan(seen) else datetime.fromtimestamp(seen, UTC),
            significant_run=s.significant_run,
            quiet_run=s.quiet_run,
            run_started=s.run_started,
            run_fired_by=s.run_fired_by,
            alert=s.alert,
        )

    @property
    def last_closed(self) -> datetime | None:
        """The start of the last window closed (None before the first)."""
        return self._last_closed

    def __contains__(self, key: object) -> bool:
        """Whether the detector holds a series for ``key`` (it may have forgotten it)."""
        return key in self._series

    def __len__(self) -> int:
        """The number of series held."""
        return len(self._series)

    def series(self, key: SeriesKey) -> SeriesState | None:
        """A copy of one series' state (None if never observed)."""
        found = self._series.get(key)
        return self._export(found) if found is not None else None

    def firing(self) -> list[Alert]:
        """The firing alert of every series that is firing now (to re-send to Alertmanager)."""
        return [s.alert for s in self._series.values() if s.alert is not None]

    # ----------------------------------------------------------------------------- input
    def observe(
        self, key: SeriesKey, window_start: datetime, count: int, messages: int | None = None
    ) -> None:
        """Add ``count`` findings (and ``messages`` messages, when known) to a window.

        Calls add up, so a caller may report a window's totals once or increment as it goes. A
        series is ``binomial`` when its first window comes with messages, ``poisson`` when not,
        and stays so. Raises :class:`WindowClosedError` for a window that is already closed.
        """
        window = self._pending.get(window_start)
        if window is None:
            self._check_window(window_start)
            window = self._pending[window_start] = {}
        if count < 0 or (messages is not None and messages < 0):
            raise ValueError("count and messages must not be negative")
        tally = window.get(key)
        if tally is None:
            found = self._series.get(key)
            if found is None:
                kind: TestKind = "poisson" if messages is None else "binomial"
                found = self._series[key] = _Series(key, kind, self._bank.add(kind == "binomial"))
                self._bank.seen[found.row] = window_start.timestamp()
                self._rows.append(found)
                if kind == "poisson":
                    self._poisson.append(found)
            tally = window[key] = _Tally(found)
        if (tally.series.kind == "binomial") != (messages is not None):
            raise ValueError(
                f"{key} is a {tally.series.kind} series: "
                + ("report its messages" if messages is None else "it has no message counts")
            )
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
        chosen: list[_Series] = []
        counts: list[float] = []
        exposure: list[float] = []
        active: list[int] = []  # rows with traffic in this window
        for tally in tallies.values():
            s = tally.series
            if s.kind == "poisson":
                continue
            if tally.count > (tally.messages or 0):
                raise ValueError(f"{s.key}: {tally.count} findings in {tally.messages} messages")
            if tally.messages:  # a binomial series without messages this window: a gap
                chosen.append(s)
                counts.append(tally.count)
                exposure.append(tally.messages)
                active.append(s.row)
        for s in self._poisson:  # a closed window without counts is a count of 0
            reported = tallies.get(s.key)
            if reported is not None:
                active.append(s.row)
            chosen.append(s)
            counts.append(reported.count if reported is not None else 0)
            exposure.append(1.0)
        self._bank.seen[active] = window_start.timestamp()
        if not chosen:
            return self._forget(window_start)
        rows = np.fromiter((s.row for s in chosen), dtype=np.int64, count=len(chosen))
        k = np.asarray(counts, dtype=np.float64)
        e = np.asarray(exposure, dtype=np.float64)
        stats = self._bank.evaluate(rows, k, e)
        tested = stats.testable
        rejected = np.zeros(len(chosen), dtype=bool)
        threshold = np.full(len(chosen), cfg.alpha)
        rejected[tested], threshold[tested] = correct_arrays(
            stats.p_value[tested], cfg.alpha, cfg.correction
        )
        by_window = rejected & (k >= cfg.floor)
        by_cusum = (
            stats.testable
            & (stats.cusum >= cfg.cusum_threshold)
            & (stats.run_observed >= cfg.floor)
        )
        significant = by_window | by_cusum
        keep = ~significant
        fired = np.zeros(len(chosen), dtype=bool)
        resolved = np.zeros(len(chosen), dtype=bool)
        alerts: list[Alert] = []
        # Only series with something to do go through the state machine (one Python step each).
        todo = set(np.flatnonzero(significant).tolist())
        todo.update(i for i, s in enumerate(chosen) if s.busy)
        for i in sorted(todo):
            s = chosen[i]
            if not stats.testable[i]:
                keep[i] = s.status != "firing"
                continue
            fired_by: FiredBy | None = None
            if significant[i]:
                fired_by = (
                    "both"
                    if by_window[i] and by_cusum[i]
                    else "window"
                    if by_window[i]
                    else "cusum"
                )
            alert = self._step(s, fired_by, stats, i, float(threshold[i]), window_start)
            if alert is not None:
                alerts.append(alert)
                fired[i] = alert.state == "firing"
                resolved[i] = alert.state == "resolved"
            keep[i] = not significant[i] and s.status != "firing"
        self._bank.commit(rows, k, e, stats, keep, fired, resolved)
        return alerts + self._forget(window_start)

    # ----------------------------------------------------------------------------- bounds
    def _forget(self, window_start: datetime) -> list[Alert]:
        """Drop the series idle for ``series_idle_windows``, then the least recently seen
        beyond ``max_series`` (firing ones last); a firing series is resolved first."""
        cfg, bank = self.settings, self._bank
        now = window_start.timestamp()
        seen = bank.seen[: bank.size]
        seen[np.isnan(seen)] = now  # restored without it: its lifetime starts now
        idle = np.flatnonzero(seen <= now - cfg.series_idle_windows * cfg.window_seconds)
        drop: list[tuple[_Series, DropReason]] = [(self._rows[r], "idle") for r in idle]
        excess = bank.size - len(drop) - cfg.max_series
        if excess > 0:
            firing = np.fromiter(
                (s.status == "firing" for s in self._rows), dtype=bool, count=bank.size
            )
            order = np.lexsort((seen, firing))  # not firing first, then least recently seen
            gone = set(idle.tolist())
            drop += [(self._rows[r], "bound") for r in order if r not in gone][:excess]
        alerts: list[Alert] = []
        for s, reason in drop:
            if s.alert is not None:
                window_end = window_start + timedelta(seconds=cfg.window_seconds)
                alerts.append(
                    s.alert.model_copy(update={"state": "resolved", "resolved_at": window_end})
                )
            self._drop(s)
            self.dropped[reason] += 1
        return alerts

    def _drop(self, s: _Series) -> None:
        moved = self._bank.remove(s.row)
        last = self._rows.pop()
        if moved is not None:
            last.row = s.row
            self._rows[s.row] = last
        del self._series[s.key]
        if s.kind == "poisson":
            self._poisson.remove(s)
        for tallies in self._pending.values():
            tallies.pop(s.key, None)

    def _step(
        self,
        s: _Series,
        fired_by: FiredBy | None,
        stats: WindowStats,
        i: int,
        threshold: float,
        window_start: datetime,
    ) -> Alert | None:
        cfg = self.settings
        if fired_by is not None:
            if s.significant_run == 0:
                s.run_started, s.run_fired_by = window_start, fired_by
            s.significant_run += 1
            s.quiet_run = 0
            if s.status != "firing" and s.significant_run >= cfg.fire_windows:
                s.status = "firing"
                s.alert = self._alert(s, stats, i, "firing", threshold, window_start, None)
                return s.alert
            return None
        s.significant_run = 0
        s.run_started = s.run_fired_by = None
        if s.status != "firing":
            return None
        s.quiet_run += 1
        if s.quiet_run < cfg.resolve_windows:
            return None
        alert = self._alert(s, stats, i, "resolved", threshold, window_start, s.alert)
        s.status, s.alert, s.quiet_run = "resolved", None, 0
        return alert

    def _alert(
        self,
        s: _Series,
        stats: WindowStats,
        i: int,
        state: AlertState,
        threshold: float,
        window_start: datetime,
        firing: Alert | None,
    ) -> Alert:
        cfg = self.settings
        window_end = window_start + timedelta(seconds=cfg.window_seconds)
        started = firing.started_at if firing is not None else s.run_started
        fired_by = firing.fired_by if firing is not None else s.run_fired_by
        assert started is not None and fired_by is not None
        observed = int(stats.counts[i])
        messages = int(stats.exposure[i]) if s.kind == "binomial" else None
        return Alert(
            alert_id=firing.alert_id if firing is not None else _alert_id(s.key, started),
            category=s.key.category,
            tenant=s.key.tenant,
            direction=s.key.direction,
            state=state,
            window_start=window_start,
            window_end=window_end,
            observed=observed,
            expected=float(stats.expected[i]),
            baseline_windows=int(self._bank.cols["windows"][s.row]),
            test=s.kind,
            messages=messages,
            p_value=min(1.0, max(0.0, float(stats.p_value[i]))),
            adjusted_threshold=threshold,
            floor=cfg.floor,
            fired_by=fired_by,
            dispersion=float(stats.dispersion[i]),
            variance_factor=max(1.0, float(stats.phi[i])),
            cusum=CusumEvidence(
                statistic=float(stats.cusum[i]),
                threshold=cfg.cusum_threshold,
                ratio=cfg.cusum_ratio,
                windows=int(stats.run_windows[i]),
                observed=round(float(stats.run_observed[i])),
                expected=float(stats.run_expected[i]),
            ),
            started_at=started,
            resolved_at=window_end if state == "resolved" else None,
            settings=cfg,
        )


def _alert_id(key: SeriesKey, started_at: datetime) -> str:
    raw = f"{key.category}\x00{key.tenant}\x00{key.direction}\x00{started_at.isoformat()}"
    return hashlib.sha256(raw.encode("utf-8")).hexdigest()[:32]
