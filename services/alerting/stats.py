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
_LOG_WEIGHTS = np.log(_WEIGHTS)


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
    With a spread, the two likelihoods are expectations over the factor (the same quadrature), so a
    window that is high because the rate varies a lot weighs accordingly less.
    """
    k = np.asarray(counts, dtype=np.float64)[:, None]
    e = np.asarray(exposure, dtype=np.float64)[:, None]
    q = np.asarray(rate, dtype=np.float64)[:, None]
    is_binomial = np.asarray(binomial, dtype=bool)[:, None]
    sigma = np.sqrt(np.log1p(np.maximum(np.asarray(spread, dtype=np.float64), 0.0)))[:, None]
    factor = np.exp(sigma * _NODES[None, :] - 0.5 * sigma * sigma)
    q1 = np.where(is_binomial, np.minimum(ratio * q, 0.5 * (1.0 + q)), ratio * q)
    with np.errstate(all="ignore"):
        terms = []
        for base in (q1, q):
            r = base * factor
            cap = np.minimum(r, 1.0 - 1e-12)
            binom = k * np.log(cap) + (e - k) * np.log1p(-cap)
            pois = k * np.log(e * r) - e * r
            terms.append(np.where(is_binomial, binom, pois) + _LOG_WEIGHTS[None, :])
        out = _logsumexp(terms[0]) - _logsumexp(terms[1])
    return np.asarray(np.nan_to_num(out, nan=0.0), dtype=np.float64)


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
