"""The detector's tests on arrays, and multiple-testing control across one window's series.

- :func:`upper_tail` — ``P(X ≥ k)`` for the window's count: binomial on ``e`` messages (or Poisson
  with mean ``e·q``) at a rate ``q·L`` whose factor ``L`` varies log-normally around 1 by the
  rate's variation between windows and the forecast's uncertainty; exact binomial (Poisson) when
  neither varies.
- :func:`log_likelihood_ratio` — of "the rate is ``R`` times ``q``" against "it is ``q``", for the
  CUSUM.
- :func:`correct` — Benjamini–Hochberg, Holm, Bonferroni or none over one window's p-values.

All take arrays, so a detector tests every series of a window in one call.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import NamedTuple

import numpy as np
from numpy.typing import ArrayLike, NDArray

from schemas.alerts import Correction

__all__ = ["Decision", "correct", "correct_arrays", "log_likelihood_ratio", "upper_tail"]

F64 = NDArray[np.float64]
_TINY = 1e-300


#: Gauss–Hermite nodes for the expectation over the window's rate (probabilists' weights).
_NODES, _WEIGHTS = np.polynomial.hermite_e.hermegauss(48)
_WEIGHTS = _WEIGHTS / math.sqrt(2.0 * math.pi)


def upper_tail(
    counts: ArrayLike,
    exposure: ArrayLike,
    rate: ArrayLike,
    spread: ArrayLike,
    binomial: ArrayLike,
) -> F64:
    """``P(X ≥ k)``: ``X`` binomial(``e``, ``q·L``) — Poisson(``e·q·L``) where ``binomial`` is
    false — with the window's rate factor ``L`` log-normal, mean 1 and variance ``spread``.

    ``spread`` is the squared coefficient of variation of the rate the window may have: the
    rate's variation between windows plus the uncertainty of its forecast. 0 gives the exact
    binomial (Poisson) tail. The expectation over ``L`` is taken by Gauss–Hermite quadrature (48
    nodes) of ``P(Bin(n, p) ≥ k) = I_p(k, n − k + 1)`` (``P(Pois(μ) ≥ k) = P(k, μ)``). The
    log-normal has a heavier upper tail than a gamma or beta of the same variance, so the test
    errs on the side of fewer alarms when the rate varies some other way. 1 for ``k ≤ 0``.
    """
    k = np.asarray(counts, dtype=np.float64)
    e = np.asarray(exposure, dtype=np.float64)
    q = np.asarray(rate, dtype=np.float64)
    tau2 = np.maximum(np.asarray(spread, dtype=np.float64), 0.0)
    is_binomial = np.asarray(binomial, dtype=bool)
    out = np.ones_like(k)
    need = k > 0
    if not need.any():
        return out
    # here: scipy.special costs a noticeable share of a second at import; vigil scan needs none
    from scipy.special import betainc, gammainc

    kk, ee, qq, bb = k[need, None], e[need, None], q[need, None], is_binomial[need, None]
    sigma = np.sqrt(np.log1p(tau2[need]))[:, None]
    rates = qq * np.exp(sigma * _NODES[None, :] - 0.5 * sigma * sigma)
    with np.errstate(all="ignore"):
        tail = np.where(
            bb,
            np.where(
                rates >= 1.0,
                1.0,
                betainc(kk, np.maximum(ee - kk, 0.0) + 1.0, np.minimum(rates, 1.0)),
            ),
            gammainc(kk, ee * rates),
        )
    out[need] = np.clip(np.nan_to_num(tail, nan=1.0) @ _WEIGHTS, 0.0, 1.0)
    return out


def log_likelihood_ratio(
    counts: ArrayLike,
    exposure: ArrayLike,
    rate: ArrayLike,
    ratio: float,
    spread: ArrayLike,
    binomial: ArrayLike,
) -> F64:
    """Log-likelihood ratio of the window's count under rate ``ratio·q`` against rate ``q``,
    both with the log-normal rate factor of :func:`upper_tail` (variance ``spread``).

    With ``spread = 0``: binomial ``k·ln(q₁/q) + (e − k)·ln((1 − q₁)/(1 − q))`` with
    ``q₁ = min(R·q, (1 + q)/2)`` (a share cannot triple past 1); Poisson ``k·ln R − e·q·(R − 1)``.
    With a spread, the two likelihoods are integrals over the log of the window's rate factor, so
    a window that is high because the rate varies a lot weighs accordingly less. Both integrals
    are sums over one common grid of log-factors that spans the two posterior modes, spaced at
    most half the narrower posterior's width. On a common grid the ratio is a posterior mean of
    a function increasing in the rate, so it can only grow with the count; two separate fixed
    quadratures, coarser than the likelihood at high counts, once let a higher count score lower.
    """
    k, e, q, sigma, is_binomial = np.broadcast_arrays(
        np.atleast_1d(np.asarray(counts, dtype=np.float64)),
        np.asarray(exposure, dtype=np.float64),
        np.asarray(rate, dtype=np.float64),
        np.sqrt(np.log1p(np.maximum(np.asarray(spread, dtype=np.float64), 0.0))),
        np.asarray(binomial, dtype=bool),
    )
    q1 = np.where(is_binomial, np.minimum(ratio * q, 0.5 * (1.0 + q)), ratio * q)
    with np.errstate(all="ignore"):
        shift = np.log(q1 / q)
        out = np.where(
            is_binomial,
            k * shift + (e - k) * (np.log1p(-q1) - np.log1p(-q)),
            k * shift - e * (q1 - q),
        )
    mixed = np.flatnonzero((sigma >= _MIN_SIGMA) & (q > 0) & (e > 0))
    if mixed.size:
        out[mixed] = _mixed_log_ratio(
            k[mixed], e[mixed], q[mixed], shift[mixed], sigma[mixed], is_binomial[mixed]
        )
    return np.asarray(np.nan_to_num(out, nan=0.0, posinf=0.0, neginf=0.0), dtype=np.float64)


#: Below this log-scale spread the rate factor is 1 to within 1e-4 and the exact formula holds.
_MIN_SIGMA = 1e-4
#: Largest grid (points per row) for the mixed likelihoods; enough for spreads down to _MIN_SIGMA.
_MAX_GRID = 2**14 + 1
#: A share is at most this (the binomial likelihood of a factor past 1/q).
_TOP_SHARE = 1.0 - 1e-12
#: Grid reach each side of a posterior mode, in its widths.
_REACH = 20.0


def _log_likelihood(u: F64, k: F64, e: F64, q: F64, binomial: NDArray[np.bool_]) -> F64:
    """Log-likelihood of ``k`` of ``e`` at rate ``q·exp(u)`` (without terms free of ``u``)."""
    with np.errstate(all="ignore"):
        p = np.minimum(q * np.exp(u), _TOP_SHARE)
        binom = k * np.log(p) + np.where(k < e, (e - k) * np.log1p(-p), 0.0)
        pois = k * u - e * q * np.exp(u)
    return np.asarray(np.where(binomial, binom, pois), dtype=np.float64)


def _posterior_mode(
    k: F64, e: F64, q: F64, mean: F64, sigma: F64, top: F64, binomial: NDArray[np.bool_]
) -> tuple[F64, F64]:
    """Mode and width of ``log-likelihood(u) + log N(u; mean, sigma²)`` for ``u ≤ top``.

    The log-likelihood is concave in ``u``, so its slope falls and the mode lies between ``mean``
    and ``mean + sigma²·slope(mean)``: bisection there (no starting guess to go wrong). The width
    is ``1 / √curvature`` at an inner mode; at ``top`` (every message flagged: the likelihood
    still rises there, up to a kink) it is the shorter of that and ``1 / slope``.
    """
    var = sigma * sigma

    def slope_and_curvature(u: F64) -> tuple[F64, F64]:
        with np.errstate(all="ignore"):
            r = q * np.exp(u)
            odds = r / (1.0 - r)
            b1 = k - (e - k) * odds
            b2 = -(e - k) * odds / (1.0 - r)
            return (
                np.where(binomial, b1, k - e * r) - (u - mean) / var,
                np.where(binomial, b2, -e * r) - 1.0 / var,
            )

    start, _ = slope_and_curvature(np.minimum(mean, top))
    lo = np.minimum(mean + var * np.minimum(start, 0.0), top)
    hi = np.minimum(mean + var * np.maximum(start, 0.0), top)
    for _ in range(60):
        mid = 0.5 * (lo + hi)
        up = slope_and_curvature(mid)[0] > 0
        lo, hi = np.where(up, mid, lo), np.where(up, hi, mid)
    mode = 0.5 * (lo + hi)
    slope, curve = slope_and_curvature(mode)
    width = 1.0 / np.sqrt(-np.minimum(curve, -1.0 / var))
    at_top = np.isfinite(top) & (slope > 0)  # bisection ends at ``top`` only while rising
    return mode, np.where(at_top, np.minimum(width, 1.0 / np.maximum(slope, _TINY)), width)


def _mixed_log_ratio(
    k: F64, e: F64, q: F64, shift: F64, sigma: F64, binomial: NDArray[np.bool_]
) -> F64:
    """The log-likelihood ratio with the log-normal factor, per row, on a common grid.

    Past ``top`` (a binomial share capped at :data:`_TOP_SHARE`) the likelihood is constant, so
    that part of each integral is exact: the likelihood there times the prior's upper tail.
    """
    from scipy.special import log_ndtr  # here: not on vigil scan's import path

    m0 = -0.5 * sigma * sigma
    m1 = m0 + shift
    top = np.where(binomial, np.log(_TOP_SHARE) - np.log(q), np.inf)
    c0, s0 = _posterior_mode(k, e, q, m0, sigma, top, binomial)
    c1, s1 = _posterior_mode(k, e, q, m1, sigma, top, binomial)
    lo = np.minimum(c0 - _REACH * s0, c1 - _REACH * s1)
    hi = np.minimum(np.maximum(c0 + _REACH * s0, c1 + _REACH * s1), top)
    # half a width between points; an eighth where a mode sits on the kink at ``top``
    kink = np.isfinite(top) & ((c0 >= top - s0) | (c1 >= top - s1))
    need = np.ceil((hi - lo) / (np.where(kink, 0.125, 0.5) * np.minimum(s0, s1))) + 1.0
    # rows are grouped by grid size (powers of two) so one fine row does not widen every row
    size = np.minimum(2.0 ** np.ceil(np.log2(np.maximum(need, 33.0) - 1.0)) + 1.0, _MAX_GRID)
    log_tail_width = np.log(sigma) + 0.5 * np.log(2.0 * np.pi)
    out = np.empty_like(k)
    for n in np.unique(size):
        rows = np.flatnonzero(size == n)
        t = np.linspace(0.0, 1.0, int(n))
        u = lo[rows, None] + (hi[rows, None] - lo[rows, None]) * t[None, :]
        # trapezoid weights: the grid's end at ``top`` is a kink, not a negligible tail
        log_w = np.log((hi[rows] - lo[rows]) / (n - 1.0))[:, None] + np.where(
            (t == 0.0) | (t == 1.0), np.log(0.5), 0.0
        )
        kr, er, qr = k[rows, None], e[rows, None], q[rows, None]
        ll = _log_likelihood(u, kr, er, qr, binomial[rows, None]) + log_w
        capped = binomial[rows]
        ll_top = _log_likelihood(top[rows, None], kr, er, qr, binomial[rows, None])[:, 0]
        two_var = 2.0 * sigma[rows, None] ** 2
        sums = []
        for m in (m1[rows], m0[rows]):
            grid = ll - (u - m[:, None]) ** 2 / two_var
            with np.errstate(all="ignore"):
                beyond = ll_top + log_tail_width[rows] + log_ndtr((m - top[rows]) / sigma[rows])
            beyond = np.where(capped, beyond, -np.inf)
            sums.append(_logsumexp(np.concatenate([grid, beyond[:, None]], axis=1)))
        out[rows] = sums[0] - sums[1]
    return out


def _logsumexp(x: F64) -> F64:
    top = np.max(x, axis=1, keepdims=True)
    return np.asarray((top + np.log(np.exp(x - top).sum(axis=1, keepdims=True)))[:, 0])


class Decision(NamedTuple):
    """Whether a hypothesis is rejected, and the p-value it had to reach."""

    rejected: bool
    threshold: float


def correct_arrays(
    p_values: ArrayLike, alpha: float, method: Correction
) -> tuple[NDArray[np.bool_], F64]:
    """(rejected, threshold each p-value had to reach) among one window's p-values, in order.

    ``bh`` (Benjamini–Hochberg) controls the false discovery rate, and the family-wise error rate
    when every series is quiet; ``holm`` and ``bonferroni`` control the family-wise error rate.
    """
    p = np.asarray(p_values, dtype=np.float64)
    m = p.size
    if m == 0 or method == "none":
        return p <= alpha, np.full(m, alpha)
    if method == "bonferroni":
        return p <= alpha / m, np.full(m, alpha / m)
    order = np.argsort(p, kind="stable")
    ranks = np.arange(1, m + 1)
    if method == "holm":
        steps = alpha / (m - ranks + 1)
        passing = np.logical_and.accumulate(p[order] <= steps)
        rejected = np.empty(m, dtype=bool)
        threshold = np.empty(m)
        rejected[order] = passing
        threshold[order] = steps
        return rejected, threshold
    # Benjamini–Hochberg: the largest rank r with p_(r) <= r·alpha/m; all p <= that cutoff pass.
    below = np.flatnonzero(p[order] <= ranks * alpha / m)
    cutoff = (below[-1] + 1) * alpha / m if below.size else alpha / m
    return p <= cutoff, np.full(m, cutoff)


def correct(p_values: Sequence[float], alpha: float, method: Correction) -> list[Decision]:
    """:func:`correct_arrays` as a list of :class:`Decision` (in input order)."""
    rejected, threshold = correct_arrays(list(p_values), alpha, method)
    return [Decision(bool(r), float(t)) for r, t in zip(rejected, threshold, strict=True)]
