r"""Population-weighted means of case values (Hájek estimator) with confidence intervals.

Each case ``i`` of stratum ``h`` carries its inclusion probability ``π_i``; its weight is
``w_i = 1 / π_i`` (the number of population conversations it stands for). For a value ``y_i``
defined on a subset of cases (e.g. recall where relevance labels exist)::

    R̂ = Σ w_i y_i / Σ w_i                                        (Hájek)

— a ratio, so it stays in the range of ``y`` and does not need the population size. It estimates
the population mean *among conversations like the ones where y is defined*: when labels cover only
part of a stratum, the labelled cases are assumed to be a random subsample of it (reweight with
:func:`subsample_weights` to spread the stratum's weight over them).

Variance by linearisation over strata (``e_i = y_i − R̂``, ``z_i = w_i e_i``, ``n_h`` cases and
``N̂_h = Σ_h w_i`` in stratum ``h``, ``f_h = n_h / N̂_h``)::

    V = Σ_h (1 − f_h) · n_h / (n_h − 1) · Σ_{i∈h} (z_i − z̄_h)²  /  (Σ w_i)²

(a stratum with one case contributes ``(1 − f_h) z_i²``, its variance being unknowable). For a
0/1 value the interval is Korn–Graubard: Clopper–Pearson (``services.estimation``) on the
effective sample size ``n* = R̂(1 − R̂)/V``, capped at ``n``; with ``R̂`` at 0 or 1 (``V = 0``),
Kish's ``n* = (Σw)² / Σw²``. With equal weights this is exactly Clopper–Pearson on the counts. For
other values, a normal interval ``R̂ ± z·√V``, clipped to the value range.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Hashable, Sequence
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field
from scipy.stats import norm

from services.estimation import clopper_pearson

__all__ = ["WeightedEstimate", "hajek", "subsample_weights"]

_EQUAL = 1e-9


class WeightedEstimate(BaseModel):
    """A Hájek estimate with its interval and the counts behind it."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    estimate: float
    lower: float
    upper: float
    confidence: float = Field(gt=0.0, lt=1.0)
    n: int = Field(ge=1, description="Cases with a value.")
    effective_n: float = Field(gt=0.0)
    weight_total: float = Field(gt=0.0, description="Σw: population size the cases stand for.")
    method: Literal["clopper-pearson", "korn-graubard", "normal"]


def subsample_weights(
    weights: Sequence[float], groups: Sequence[Hashable], used: Sequence[bool]
) -> list[float]:
    """Weights of the ``used`` cases, scaled so each group keeps its total weight.

    ``w'_i = w_i · Σ_{h} w / Σ_{h, used} w`` for used cases of group ``h``; 0 for the others.
    """
    total: dict[Hashable, float] = defaultdict(float)
    sub: dict[Hashable, float] = defaultdict(float)
    for w, g, u in zip(weights, groups, used, strict=True):
        total[g] += w
        if u:
            sub[g] += w
    return [
        w * total[g] / sub[g] if u and sub[g] > 0 else 0.0
        for w, g, u in zip(weights, groups, used, strict=True)
    ]


def hajek(
    values: Sequence[float],
    weights: Sequence[float],
    groups: Sequence[Hashable],
    *,
    binary: bool = False,
    confidence: float = 0.95,
    bounds: tuple[float, float] = (0.0, 1.0),
) -> WeightedEstimate | None:
    """The Hájek mean of ``values`` with weights and strata ``groups`` (see the module doc).

    ``None`` when there is no value. ``binary`` values must be 0 or 1.

    >>> e = hajek([1, 0, 0, 1], [1, 1, 1, 1], ["a", "a", "b", "b"], binary=True)
    >>> e.estimate, e.method, (round(e.lower, 4), round(e.upper, 4))
    (0.5, 'clopper-pearson', (0.0676, 0.9324))
    >>> hajek([1, 0], [1, 3], ["a", "b"]).estimate
    0.25
    """
    n = len(values)
    if not (len(weights) == len(groups) == n):
        raise ValueError("values, weights and groups must have the same length")
    if n == 0:
        return None
    if any(not math.isfinite(w) or w <= 0 for w in weights):
        raise ValueError("weights must be finite and > 0")
    if binary and any(v not in (0, 1) for v in values):
        raise ValueError("binary values must be 0 or 1")
    sw = math.fsum(weights)
    r = math.fsum(w * y for w, y in zip(weights, values, strict=True)) / sw
    lo_b, hi_b = bounds
    r = min(max(r, lo_b), hi_b)

    by: dict[Hashable, list[tuple[float, float]]] = defaultdict(list)
    for y, w, g in zip(values, weights, groups, strict=True):
        by[g].append((w, w * (y - r)))
    ss = 0.0
    for members in by.values():
        nh = len(members)
        big_nh = math.fsum(w for w, _ in members)
        fpc = max(0.0, 1.0 - nh / big_nh) if big_nh > 0 else 0.0
        if nh == 1:
            ss += fpc * members[0][1] ** 2
            continue
        zbar = math.fsum(z for _, z in members) / nh
        ss += fpc * nh / (nh - 1) * math.fsum((z - zbar) ** 2 for _, z in members)
    var = ss / (sw * sw)
    kish = sw * sw / math.fsum(w * w for w in weights)

    if binary:
        equal = max(weights) - min(weights) <= _EQUAL * max(weights)
        if equal:
            hits = round(math.fsum(values))
            lo, hi = clopper_pearson(hits, n, confidence)
            return WeightedEstimate(
                estimate=r,
                lower=min(lo, r),
                upper=max(hi, r),
                confidence=confidence,
                n=n,
                effective_n=float(n),
                weight_total=sw,
                method="clopper-pearson",
            )
        n_eff = min(float(n), r * (1 - r) / var) if 0 < r < 1 and var > 0 else min(float(n), kish)
        lo, hi = clopper_pearson(r * n_eff, n_eff, confidence)
        return WeightedEstimate(
            estimate=r,
            lower=min(lo, r),
            upper=max(hi, r),
            confidence=confidence,
            n=n,
            effective_n=n_eff,
            weight_total=sw,
            method="korn-graubard",
        )
    z = float(norm.ppf(0.5 + confidence / 2))
    half = z * math.sqrt(var)
    return WeightedEstimate(
        estimate=r,
        lower=max(lo_b, r - half),
        upper=min(hi_b, r + half),
        confidence=confidence,
        n=n,
        effective_n=min(float(n), kish),
        weight_total=sw,
        method="normal",
    )
