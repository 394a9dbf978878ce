"""Exact one-sided tests of a window's count against a baseline, and multiple-testing control.

Both tests ask: how surprising is a count this high, if the window behaved like the baseline?

- **Poisson** (counts with no known denominator): ``P(X ≥ k)`` for ``X ~ Poisson(mu)``, where
  ``mu`` is the baseline's mean count per window.
- **Binomial** (a share of the window's ``n`` messages): ``P(X ≥ k)`` for ``X ~ Binomial(n, p)``,
  where ``p`` is the baseline's share.

The baseline rate is a posterior mean under a Jeffreys prior (``prior`` pseudo-findings), so a
baseline of zeros gives a small positive rate rather than zero — with a zero rate any single
finding would have p = 0. The functions take arrays so a detector tests every series of a window
in one call.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

import numpy as np
from numpy.typing import ArrayLike, NDArray

from schemas.alerts import Correction

__all__ = ["Decision", "binomial_test", "correct", "poisson_test"]


def poisson_test(
    counts: ArrayLike, baseline_counts: ArrayLike, baseline_windows: ArrayLike, prior: float
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """(p-values, expected counts): ``k`` findings in a window against the baseline's mean."""
    k = np.asarray(counts, dtype=np.float64)
    mu = (np.asarray(baseline_counts, dtype=np.float64) + prior) / np.asarray(
        baseline_windows, dtype=np.float64
    )
    from scipy import stats  # here: scipy.stats costs most of a second at import

    return np.asarray(stats.poisson.sf(k - 1, mu), dtype=np.float64), mu


def binomial_test(
    counts: ArrayLike,
    messages: ArrayLike,
    baseline_counts: ArrayLike,
    baseline_messages: ArrayLike,
    prior: float,
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """(p-values, expected counts): ``k`` of ``n`` messages against the baseline's share."""
    k = np.asarray(counts, dtype=np.float64)
    n = np.asarray(messages, dtype=np.float64)
    if np.any(k > n):
        raise ValueError("a binomial count cannot exceed the window's messages")
    share = (np.asarray(baseline_counts, dtype=np.float64) + prior) / (
        np.asarray(baseline_messages, dtype=np.float64) + 2.0 * prior
    )
    from scipy import stats

    return np.asarray(stats.binom.sf(k - 1, n, share), dtype=np.float64), n * share


class Decision(NamedTuple):
    """Whether a hypothesis is rejected, and the p-value it had to reach."""

    rejected: bool
    threshold: float


def correct(p_values: Sequence[float], alpha: float, method: Correction) -> list[Decision]:
    """Reject among one window's p-values at level ``alpha``, in input order.

    ``bh`` (Benjamini–Hochberg) controls the false discovery rate, and the family-wise error rate
    when every series is quiet; ``holm`` and ``bonferroni`` control the family-wise error rate.
    """
    m = len(p_values)
    if m == 0:
        return []
    if method == "none":
        return [Decision(p <= alpha, alpha) for p in p_values]
    if method == "bonferroni":
        return [Decision(p <= alpha / m, alpha / m) for p in p_values]
    order = sorted(range(m), key=lambda i: p_values[i])
    out = [Decision(False, alpha / m)] * m
    if method == "holm":
        passing = True
        for rank, i in enumerate(order):
            threshold = alpha / (m - rank)
            passing = passing and p_values[i] <= threshold
            out[i] = Decision(passing, threshold)
        return out
    # Benjamini–Hochberg: the largest rank r with p_(r) <= r·alpha/m; all p <= that cutoff pass.
    cutoff = alpha / m
    for rank in range(m, 0, -1):
        if p_values[order[rank - 1]] <= rank * alpha / m:
            cutoff = rank * alpha / m
            break
    return [Decision(p <= cutoff, cutoff) for p in p_values]
