"""Miss rate of the rules: the share of unflagged conversations that should have been flagged.

Random unflagged conversations are always part of the evaluation sets (stratum flag
``unflagged``). A reviewer who labels one says which categories the rules missed
(``EvalLabel.missed_categories``; an empty list means "rightly unflagged"). Per category ``X``::

    miss rate(X) = share of unflagged conversations that should have been flagged X

estimated with the Hájek weighted mean of ``y_i = [X missed in case i]`` over the *labelled*
unflagged cases (``services.evalsets.weighting``). Strata are ``(period, stratum)``; a case's
weight is ``1 / inclusion_probability``, spread over the labelled cases of its stratum when only
some were labelled (labels assumed missing at random within a stratum). With equal inclusion
probabilities the interval is exact Clopper–Pearson (``services.estimation.clopper_pearson``) on
the counts; otherwise Korn–Graubard on the effective sample size. ``any`` is the share missed in
at least one category.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Final

from pydantic import BaseModel, ConfigDict, Field

from schemas.evalset import UNFLAGGED, EvalCase
from services.evalsets.config import DEFAULT_CATEGORY_PRIORITY
from services.evalsets.weighting import hajek, subsample_weights

__all__ = ["ANY", "MissRate", "MissRateReport", "estimate_miss_rates"]

ANY: Final = "any"


class MissRate(BaseModel):
    """The estimated miss rate of one category (or ``any``) with its interval and counts."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    category: str
    labelled: int = Field(ge=0, description="Labelled unflagged cases used.")
    missed: int = Field(ge=0, description="Of those, cases the reviewer says were missed.")
    estimate: float | None = Field(ge=0.0, le=1.0)
    lower: float | None = Field(ge=0.0, le=1.0)
    upper: float | None = Field(ge=0.0, le=1.0)
    confidence: float
    method: str | None
    effective_n: float | None
    population: float | None = Field(description="Unflagged conversations the cases stand for.")


class MissRateReport(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    unflagged_cases: int
    labelled: int
    rates: dict[str, MissRate]


def estimate_miss_rates(
    cases: Sequence[EvalCase],
    categories: Iterable[str] = DEFAULT_CATEGORY_PRIORITY,
    confidence: float = 0.95,
) -> MissRateReport:
    """Per-category (and ``any``) miss rates from the labelled random-unflagged cases."""
    unflagged = [c for c in cases if c.flag_stratum == UNFLAGGED]
    groups = [(c.period, c.stratum) for c in unflagged]
    used = [c.label is not None for c in unflagged]
    weights = subsample_weights([1.0 / c.inclusion_probability for c in unflagged], groups, used)
    rows = [(c, w, g) for c, w, g, u in zip(unflagged, weights, groups, used, strict=True) if u]
    names = list(dict.fromkeys(categories))
    for c, _, _ in rows:
        assert c.label is not None
        names += [x for x in c.label.missed_categories if x not in names]
    rates: dict[str, MissRate] = {}
    for name in [*names, ANY]:
        ys = []
        for c, _, _ in rows:
            assert c.label is not None
            missed = c.label.missed_categories
            ys.append(int(bool(missed)) if name == ANY else int(name in missed))
        est = hajek(
            ys,
            [w for _, w, _ in rows],
            [g for _, _, g in rows],
            binary=True,
            confidence=confidence,
        )
        rates[name] = MissRate(
            category=name,
            labelled=len(rows),
            missed=sum(ys),
            estimate=est.estimate if est else None,
            lower=est.lower if est else None,
            upper=est.upper if est else None,
            confidence=confidence,
            method=est.method if est else None,
            effective_n=est.effective_n if est else None,
            population=est.weight_total if est else None,
        )
    return MissRateReport(unflagged_cases=len(unflagged), labelled=len(rows), rates=rates)
