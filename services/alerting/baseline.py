"""The numbers behind the spike detector, for many series at once (one array row per series).

Per series and closed window the detector has a count ``k`` and an exposure ``e``: the window's
messages (``binomial`` series: ``k`` of ``e`` messages) or 1 (``poisson`` series: counts with no
known denominator). From the baseline it forecasts the window's rate ``q`` and how far the count
may stray from ``e·q`` before it is surprising, then accumulates evidence across windows.

**Baseline (drift).** Two exponentially weighted ratio estimates of the rate, ``q_f = Σw·k / Σw·e``
with half-life ``H`` windows and ``q_s`` with ``2H``: weights per window, so a window of ten times
the traffic weighs ten times as much (the rate is conditioned on volume: a day/night cycle of the
traffic is not a change of rate). ``H`` is ``baseline_half_life`` windows, or as many as hold
``baseline_events`` expected findings if that is more: a series with one finding a window remembers
200 windows, one with a hundred a window 30 — each baseline about as precise. Their difference
estimates the local trend of ``log q``, and the forecast extrapolates ``q_f`` from its mean age to
the window tested (``q_f · (q_f / q_s)^g``, capped at ×2 either way), so a slow drift does not
leave the forecast behind; the trend is shrunk by its own signal-to-noise ratio, so noise is not
extrapolated. Windows reach the baseline ``guard_windows`` windows late: a spike that is building
up is judged before it can raise its own bar, and when the series fires the windows still in the
guard are dropped.

**Dispersion.** Real traffic varies from window to window more than a binomial. The squared
coefficient of variation ``κ`` of the per-window rate is estimated (method of moments, weighted
with half-life ``dispersion_half_life``) from the forecast errors of the windows that enter the
baseline: ``(k − e·q)² − e·v(q) − e²·q²·V`` estimates ``e(e−1)·q²·κ`` (binomial; ``e²·q²·κ``
Poisson), where ``v(q) = q(1−q)`` (``q``) and ``V`` is the forecast's own relative variance. So
``κ`` also absorbs whatever the forecast gets wrong systematically (drift it did not follow).

**Tests.** The window's rate may differ from the forecast by its variation between windows (``κ``)
and by the forecast's own error (``V``): the window test is the one-sided binomial (Poisson) tail
at a rate ``q·L``, ``L`` log-normal with mean 1 and variance ``κ + V``
(:func:`~services.alerting.stats.upper_tail`) — exact binomial when both are 0, and the variation
weighs with the volume, so a share that varies 10 % between windows matters at 10,000 messages, not
at 100. The predictive variance of the count is ``e·v(q) + e(e−1)·q²·κ + e²·q²·V``, the binomial
(Poisson) one times ``φ ≥ 1`` (reported with each alert). The **CUSUM** ``S ← max(0, S + ℓ)``
accumulates the log-likelihood ratio ``ℓ`` of "the rate is ``R`` times the forecast" against "it is
the forecast", on the same counts and under the same log-normal rate factor (so a window that is
high because the rate varies a lot weighs accordingly less); it signals at ``S ≥ h`` (capped at
``1.5·h`` so it can come down once the spike ends). With the forecast and the variation known,
``exp(S)`` restarted at 0 is a likelihood ratio, and a run reaches ``h`` with probability at most
``e^−h`` (Wald): at most one false signal per ``e^h`` windows.

Everything here is arithmetic on arrays (the tails in :mod:`services.alerting.stats`): no clock, no
I/O, no Python loop over series.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, NamedTuple

import numpy as np
from numpy.typing import NDArray

from schemas.alerts import DetectorSettings
from services.alerting.stats import log_likelihood_ratio, upper_tail

__all__ = ["FIELDS", "GUARD_FIELDS", "Bank", "Params", "WindowStats"]

F64 = NDArray[np.float64]

#: Scalar state of a series (one float each).
FIELDS = (
    "windows",  # windows absorbed into the baseline
    "n_f",  # Σ w_f          (fast weights, half-life H)
    "a_f",  # Σ w_f · e
    "b_f",  # Σ w_f · k
    "m_f",  # Σ w_f · e · age
    "a_s",  # the same with slow weights (half-life 2H)
    "b_s",
    "m_s",
    "c_ff",  # Σ w_f² · e                 variance of the baseline estimates:
    "d_ff",  # Σ w_f² · e(e−1)  (e² Poisson)  Var(Σ w k) = v·c + κ·q²·d
    "c_ss",
    "d_ss",
    "c_fs",  # Σ w_f w_s · e   (covariance of the two estimates)
    "d_fs",
    "disp_num",  # Σ w_d · (squared forecast error − what binomial noise explains)
    "disp_den",  # Σ w_d · e(e−1)·q²  (e²·q² Poisson)
    "cusum",  # the CUSUM statistic S (nats)
    "run_windows",  # windows since S last left 0
    "run_observed",  # their counts
    "run_expected",  # their forecasts e·q
)
#: What a window waiting in the guard keeps (count, exposure, its dispersion terms, kept?).
GUARD_FIELDS = ("k", "e", "num", "den", "keep")

_MAX_DISPERSION = 4.0  # a per-window rate CV of 200 %
_MAX_TREND = float(np.log(2.0))  # the trend moves the forecast at most ×2 either way
_MAX_EXTRAPOLATION = 3.0  # and is extended at most 3 × its own span ahead
_TINY = 1e-300
_MIN_EXPOSURE = 1e-9  # an empty baseline (nothing to test yet) must not divide by zero
_MAX_HALF_LIFE = 100_000.0


@dataclass(frozen=True)
class Params:
    """What the arithmetic needs from :class:`~schemas.alerts.DetectorSettings`."""

    half_life: float
    events: float
    lam_d: float
    guard: int
    prior: float
    trend: bool
    ratio: float
    threshold: float
    cap: float
    min_windows: int

    @classmethod
    def of(cls, s: DetectorSettings) -> Params:
        return cls(
            half_life=s.baseline_half_life,
            events=s.baseline_events,
            lam_d=0.5 ** (1.0 / s.dispersion_half_life),
            guard=s.guard_windows,
            prior=s.prior_count,
            trend=s.trend,
            ratio=s.cusum_ratio,
            threshold=s.cusum_threshold,
            cap=1.5 * s.cusum_threshold,
            min_windows=s.min_baseline_windows,
        )


class WindowStats(NamedTuple):
    """One closed window of some series (arrays aligned with the rows asked for)."""

    counts: F64  # k
    exposure: F64  # e
    testable: NDArray[np.bool_]  # enough baseline to decide
    expected: F64  # e·q, the forecast count
    rate: F64  # q
    phi: F64  # predictive variance / binomial (Poisson) variance
    dispersion: F64  # κ, the squared CV of the per-window rate
    p_value: F64  # window test, one-sided, uncorrected (1 where not testable)
    cusum: F64  # S after this window
    run_windows: F64
    run_observed: F64
    run_expected: F64
    num: F64  # dispersion terms of this window (0 where not testable)
    den: F64


class Bank:
    """The numeric state of a set of series: ``rows`` arrays of :data:`FIELDS`, a guard of
    ``guard`` windows per series, whether each series is binomial, and when it last had traffic
    (``seen``, epoch seconds of the window's start; NaN: not known yet). Rows ``0 … size − 1``
    are in use; :meth:`remove` keeps them contiguous."""

    def __init__(self, params: Params) -> None:
        self.params = params
        self.size = 0
        self.cols: dict[str, F64] = {name: np.zeros(0) for name in FIELDS}
        self.binomial = np.zeros(0, dtype=bool)
        self.seen = np.zeros(0)
        g = params.guard
        self.guard: dict[str, F64] = {name: np.zeros((0, g)) for name in GUARD_FIELDS}
        self.guard_len = np.zeros(0, dtype=np.int64)

    # ------------------------------------------------------------------ rows
    def add(self, binomial: bool, values: dict[str, Any] | None = None) -> int:
        """A new series (zeros, or ``values`` from :meth:`row`); returns its row."""
        row = self.size
        if row == len(self.binomial):
            grow = max(8, 2 * row)
            for name in FIELDS:
                self.cols[name] = np.concatenate([self.cols[name], np.zeros(grow)])
            for name in GUARD_FIELDS:
                self.guard[name] = np.concatenate(
                    [self.guard[name], np.zeros((grow, self.params.guard))]
                )
            self.binomial = np.concatenate([self.binomial, np.zeros(grow, dtype=bool)])
            self.seen = np.concatenate([self.seen, np.full(grow, np.nan)])
            self.guard_len = np.concatenate([self.guard_len, np.zeros(grow, dtype=np.int64)])
        self.size += 1
        self.binomial[row] = binomial
        self.seen[row] = np.nan
        if values is not None:
            for name in FIELDS:
                self.cols[name][row] = float(values[name])
            entries = values.get("guard", [])[-self.params.guard :] if self.params.guard else []
            self.guard_len[row] = len(entries)
            for j, entry in enumerate(entries):
                for name in GUARD_FIELDS:
                    self.guard[name][row, j] = float(entry[name])
        return row

    def remove(self, row: int) -> int | None:
        """Forget the series in ``row``: the last row moves into its place. Returns the row that
        moved (its series is now at ``row``), or None when ``row`` was the last."""
        last = self.size - 1
        moved = None
        if row != last:
            for name in FIELDS:
                self.cols[name][row] = self.cols[name][last]
            for name in GUARD_FIELDS:
                self.guard[name][row] = self.guard[name][last]
            self.binomial[row] = self.binomial[last]
            self.seen[row] = self.seen[last]
            self.guard_len[row] = self.guard_len[last]
            moved = last
        for name in FIELDS:
            self.cols[name][last] = 0.0
        for name in GUARD_FIELDS:
            self.guard[name][last] = 0.0
        self.guard_len[last] = 0
        self.size = last
        return moved

    def row(self, row: int) -> dict[str, Any]:
        """One series' numbers as plain JSON values (``guard`` oldest first)."""
        out: dict[str, Any] = {name: float(self.cols[name][row]) for name in FIELDS}
        out["guard"] = [
            {name: float(self.guard[name][row, j]) for name in GUARD_FIELDS}
            for j in range(int(self.guard_len[row]))
        ]
        return out

    # ------------------------------------------------------------------ the window
    def evaluate(self, rows: NDArray[np.int64], k: F64, e: F64) -> WindowStats:
        """Forecast, window test and CUSUM of one window for ``rows`` (state unchanged)."""
        p, c = self.params, {name: col[rows] for name, col in self.cols.items()}
        binomial = self.binomial[rows]
        testable = c["windows"] >= p.min_windows
        kappa = _dispersion(c)
        q, rel = self._forecast(c, binomial, kappa)
        v = np.where(binomial, q * (1.0 - q), q)
        base = e * v
        extra = np.where(binomial, e * (e - 1.0), e * e) * q * q * kappa + e * e * q * q * rel
        phi = np.where(base > 0, 1.0 + extra / np.maximum(base, _TINY), 1.0)
        expected = e * q
        p_value = np.where(
            testable, upper_tail(np.where(testable, k, 0.0), e, q, kappa + rel, binomial), 1.0
        )
        llr = np.where(testable, log_likelihood_ratio(k, e, q, p.ratio, kappa + rel, binomial), 0.0)
        s = np.minimum(np.maximum(c["cusum"] + llr, 0.0), p.cap)
        going = s > 0
        fresh = c["cusum"] <= 0
        run_w = np.where(going, np.where(fresh, 0.0, c["run_windows"]) + 1.0, 0.0)
        run_o = np.where(going, np.where(fresh, 0.0, c["run_observed"]) + k, 0.0)
        run_x = np.where(going, np.where(fresh, 0.0, c["run_expected"]) + expected, 0.0)
        sq = (k - expected) ** 2 - base - e * e * q * q * rel
        num = np.where(testable, sq, 0.0)
        den = np.where(testable, np.where(binomial, e * (e - 1.0), e * e) * q * q, 0.0)
        return WindowStats(
            k, e, testable, expected, q, phi, kappa, p_value, s, run_w, run_o, run_x, num, den
        )

    def commit(
        self,
        rows: NDArray[np.int64],
        k: F64,
        e: F64,
        stats: WindowStats,
        keep: NDArray[np.bool_],
        fired: NDArray[np.bool_],
        resolved: NDArray[np.bool_],
    ) -> None:
        """Apply one window to ``rows``: CUSUM, then the guard and the baseline.

        ``keep``: the window may enter the baseline (not significant, series not firing).
        ``fired``: the series started firing now (the windows in its guard are dropped).
        ``resolved``: it stopped firing now (the CUSUM starts again from 0).
        """
        cols = self.cols
        cols["cusum"][rows] = np.where(resolved, 0.0, stats.cusum)
        cols["run_windows"][rows] = np.where(resolved, 0.0, stats.run_windows)
        cols["run_observed"][rows] = np.where(resolved, 0.0, stats.run_observed)
        cols["run_expected"][rows] = np.where(resolved, 0.0, stats.run_expected)
        g = self.params.guard
        if g == 0:
            self._absorb(rows[keep], k[keep], e[keep], stats.num[keep], stats.den[keep])
            return
        guard, length = self.guard, self.guard_len
        if fired.any():
            guard["keep"][rows[fired]] = 0.0
        full = length[rows] >= g
        if full.any():
            out = rows[full]
            old = {name: guard[name][out, 0] for name in GUARD_FIELDS}
            kept = old["keep"] > 0
            self._absorb(
                out[kept], old["k"][kept], old["e"][kept], old["num"][kept], old["den"][kept]
            )
            for name in GUARD_FIELDS:
                guard[name][out, :-1] = guard[name][out, 1:]
            length[out] -= 1
        slot = length[rows]
        new = {"k": k, "e": e, "num": stats.num, "den": stats.den, "keep": keep.astype(float)}
        for name in GUARD_FIELDS:
            guard[name][rows, slot] = new[name]
        length[rows] += 1

    # ------------------------------------------------------------------ internals
    def _forecast(
        self, c: dict[str, F64], binomial: NDArray[np.bool_], kappa: F64
    ) -> tuple[F64, F64]:
        """(rate forecast q, relative variance of the forecast) — see the module docstring."""
        p = self.params
        pseudo = np.where(binomial, 2.0 * p.prior, 0.0)
        a_f = np.maximum(c["a_f"] + pseudo, _MIN_EXPOSURE)
        a_s = np.maximum(c["a_s"] + pseudo, _MIN_EXPOSURE)
        top = np.where(binomial, 1.0 - 1e-12, np.inf)  # a share stays below 1, a mean need not
        q_f = np.clip((c["b_f"] + p.prior) / a_f, _TINY, top)
        q_s = np.clip((c["b_s"] + p.prior) / a_s, _TINY, top)
        # Relative variances of the two estimates and their covariance (same weights, Var(k_i) =
        # e·v + e(e−1)·κq²: the c sums carry e, the d sums e(e−1)).
        v = np.where(binomial, 1.0 - q_f, 1.0) / q_f
        var_f = v * c["c_ff"] / a_f**2 + kappa * c["d_ff"] / a_f**2
        var_s = v * c["c_ss"] / a_s**2 + kappa * c["d_ss"] / a_s**2
        cov = v * c["c_fs"] / (a_f * a_s) + kappa * c["d_fs"] / (a_f * a_s)
        g = np.zeros_like(q_f)
        if p.trend:
            age_f = c["m_f"] / a_f
            span = c["m_s"] / a_s - age_f
            ok = span > 1.0
            g = np.where(ok, (age_f + p.guard + 1.0) / np.where(ok, span, 1.0), 0.0)
            g = np.minimum(g, _MAX_EXTRAPOLATION)
            # The trend counts only as far as it stands out from its own noise (shrunk towards
            # 0 by its signal-to-noise ratio): a quiet series has none to extrapolate.
            d = np.log(q_f) - np.log(q_s)
            noise = np.maximum(var_f + var_s - 2.0 * cov, 0.0)
            g = g * np.where(d * d > noise, 1.0 - noise / np.maximum(d * d, _TINY), 0.0)
            shift = np.clip(g * d, -_MAX_TREND, _MAX_TREND)
            q = np.clip(q_f * np.exp(shift), _TINY, top)
        else:
            q = q_f
        rel = (1.0 + g) ** 2 * var_f + g * g * var_s - 2.0 * g * (1.0 + g) * cov
        return q, np.maximum(rel, var_f)

    def _absorb(self, rows: NDArray[np.int64], k: F64, e: F64, num: F64, den: F64) -> None:
        if rows.size == 0:
            return
        p, c = self.params, self.cols
        binomial = self.binomial[rows]
        e2 = np.where(binomial, e * (e - 1.0), e * e)
        # Half-life: at least `half_life` windows, and long enough to hold `events` expected
        # findings, so a low-volume baseline is as precise as a busy one (it just remembers longer).
        per_window = (c["b_f"][rows] + p.prior) / np.maximum(c["n_f"][rows], 1.0)
        half = np.clip(p.events / per_window, p.half_life, _MAX_HALF_LIFE)
        lam_f = 0.5 ** (1.0 / half)
        lam_s = 0.5 ** (0.5 / half)
        c["n_f"][rows] = lam_f * c["n_f"][rows] + 1.0
        for lam, a, b, m in ((lam_f, "a_f", "b_f", "m_f"), (lam_s, "a_s", "b_s", "m_s")):
            c[m][rows] = lam * (c[m][rows] + c[a][rows])
            c[a][rows] = lam * c[a][rows] + e
            c[b][rows] = lam * c[b][rows] + k
        for lam, cc, dd in (
            (lam_f**2, "c_ff", "d_ff"),
            (lam_s**2, "c_ss", "d_ss"),
            (lam_f * lam_s, "c_fs", "d_fs"),
        ):
            c[cc][rows] = lam * c[cc][rows] + e
            c[dd][rows] = lam * c[dd][rows] + e2
        c["disp_num"][rows] = p.lam_d * c["disp_num"][rows] + num
        c["disp_den"][rows] = p.lam_d * c["disp_den"][rows] + den
        c["windows"][rows] += 1.0


def _dispersion(c: dict[str, F64]) -> F64:
    """κ, the squared coefficient of variation of the per-window rate (0 before any evidence)."""
    den = c["disp_den"]
    kappa = np.where(den > 0, c["disp_num"] / np.maximum(den, _TINY), 0.0)
    return np.asarray(np.clip(kappa, 0.0, _MAX_DISPERSION), dtype=np.float64)
