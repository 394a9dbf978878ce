"""Population rates estimated from the sampled checks (SPEC §5): ``RateEstimate`` and the
``estimates.json`` file ``vigil scan`` writes (``PopulationEstimates``).

A rate is either *estimable* — a point estimate with a confidence interval — or it is not, and
then it says why and carries no numbers that could be mistaken for an estimate: an interval of
[0, 1] "covers" every rate and says nothing. ``services.estimation`` computes them; the
definitions of the estimator and the interval are in ``docs/sampling.md``.
"""

from __future__ import annotations

from typing import Literal, Self

from pydantic import BaseModel, ConfigDict, Field, model_validator

__all__ = ["EstimateMethod", "NotEstimable", "PopulationEstimates", "RateEstimate"]

#: ``census``: every answer checked, no sampling error. ``clopper-pearson``: exact binomial
#: interval (answers independent, or one answer per conversation). ``korn-graubard``:
#: Clopper–Pearson on the effective sample size (design effect and degrees of freedom from the
#: sampled conversations). ``not-estimable``: see :data:`NotEstimable`.
EstimateMethod = Literal["census", "clopper-pearson", "korn-graubard", "not-estimable"]
#: Why a rate is not estimable. ``no-answers``: nothing was screened. ``unchecked-stratum``:
#: answers of a stratum (or of a sampling rate) were counted but none of them was checked, so
#: nothing is known of them (e.g. sampling rate 0). ``unchecked-always``: answers that must
#: always be checked were counted, none was.
NotEstimable = Literal["no-answers", "unchecked-stratum", "unchecked-always"]


class RateEstimate(BaseModel):
    """A population rate with its confidence interval and the counts behind it.

    ``population`` = every assistant answer seen (``always_population + sampled_population``);
    ``checked`` and ``hits`` count the checked answers and those with the property, over both
    strata. When ``estimable`` is false, ``estimate``, ``lower`` and ``upper`` are null and
    ``not_estimable`` says why; the counts are still given. When it is true, all three are set
    and ``lower ≤ estimate ≤ upper``.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    schema_version: Literal[1] = 1
    estimable: bool
    not_estimable: NotEstimable | None = Field(
        default=None, description="Why there is no estimate (null when estimable)."
    )
    estimate: float | None = Field(ge=0.0, le=1.0)
    lower: float | None = Field(ge=0.0, le=1.0)
    upper: float | None = Field(ge=0.0, le=1.0)
    confidence: float = Field(gt=0.0, lt=1.0)
    method: EstimateMethod
    population: int = Field(ge=0)
    checked: int = Field(ge=0)
    hits: int = Field(ge=0)
    horvitz_thompson: float | None = Field(
        default=None, ge=0.0, description="Σ y_i/π_i / N over checked answers; may exceed 1."
    )
    design_effect: float = Field(
        default=1.0, ge=1.0, description="Largest design effect applied (sampled stratum)."
    )
    conversations: int | None = Field(
        default=None,
        ge=0,
        description=(
            "Sampled-stratum conversations checked (the clusters), when conversation ids were "
            "given; null when answers are treated as independent."
        ),
    )
    degrees_of_freedom: float | None = Field(
        default=None,
        ge=1.0,
        description=(
            "Degrees of freedom of the between-conversation variance behind the design effect: "
            "conversations − 1, lower when a few conversations carry the variance (at least 1)."
        ),
    )
    effective_sample_size: float | None = Field(
        default=None,
        gt=0.0,
        description=(
            "Sampled-stratum answers the interval is worth: checked / design effect, times the "
            "Korn–Graubard degrees-of-freedom factor (smallest over sub-strata)."
        ),
    )
    always_population: int = Field(ge=0)
    always_checked: int = Field(ge=0)
    always_hits: int = Field(ge=0)
    sampled_population: int = Field(ge=0)
    sampled_checked: int = Field(ge=0)
    sampled_hits: int = Field(ge=0)

    @model_validator(mode="after")
    def _check(self) -> Self:
        numbers = (self.estimate, self.lower, self.upper)
        if self.estimable:
            if self.not_estimable is not None or self.method == "not-estimable":
                raise ValueError("an estimable rate has a method and no reason")
            if self.estimate is None or self.lower is None or self.upper is None:
                raise ValueError("an estimable rate has an estimate, a lower and an upper bound")
            if not self.lower <= self.estimate <= self.upper:
                raise ValueError("the estimate must lie in its interval")
        elif (
            self.not_estimable is None
            or self.method != "not-estimable"
            or numbers != (None, None, None)
        ):
            raise ValueError("a rate that is not estimable has a reason and no numbers")
        return self


class PopulationEstimates(BaseModel):
    """``estimates.json``: the population rates of one run, by measure."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    schema_version: Literal[1] = 1
    confidence: float = Field(gt=0.0, lt=1.0)
    measures: dict[str, RateEstimate] = Field(
        description="Measure name (e.g. unsupported_claim) → its estimate."
    )
