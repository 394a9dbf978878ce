"""The result of ``vigil eval run``: metrics overall, population-weighted and per stratum, the
risk–coverage table, and the gate outcomes. Serialised as JSON for CI."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from schemas.evalset import Comparison

__all__ = ["EvalReport", "GateResult", "MetricBlock", "RunOptions"]

DEFAULT_KS: tuple[int, ...] = (1, 3, 5, 10)
#: 0, 0.05, ..., 1.0 — the risk–coverage thresholds unless given.
DEFAULT_THRESHOLDS: tuple[float, ...] = tuple(round(i * 0.05, 2) for i in range(21))


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class RunOptions(_Model):
    """Cut-offs of the @k metrics, risk–coverage thresholds, interval confidence."""

    ks: tuple[int, ...] = DEFAULT_KS
    thresholds: tuple[float, ...] = DEFAULT_THRESHOLDS
    confidence: float = Field(default=0.95, gt=0.0, lt=1.0)


class MetricBlock(_Model):
    """Metrics over a set of cases.

    ``values`` maps a metric key (``recall@5``, ``mrr``, ``coverage``, ...) to its value, ``None``
    when no case carries what it needs; ``counts`` gives the number of items behind each value
    (queries, answers, claims, cases with targets); ``intervals`` the confidence interval of each
    population-weighted mean (weighted block only).
    """

    cases: int = Field(ge=0)
    values: dict[str, float | None]
    counts: dict[str, int]
    intervals: dict[str, tuple[float, float]] = Field(default_factory=dict)


class GateResult(_Model):
    """The outcome of one gate; ``message`` names the gate and says why it failed."""

    gate: str
    metric: str
    weighted: bool = False
    stratum: str | None = None
    comparison: Comparison
    threshold: float | None
    value: float | None
    baseline: str | None = None
    baseline_value: float | None = None
    max_drop: float = 0.0
    status: Literal["passed", "failed", "skipped"]
    message: str

    @property
    def passed(self) -> bool:
        return self.status != "failed"


class EvalReport(_Model):
    """Everything ``run_eval`` computed. ``failed_gates`` is the CI verdict."""

    schema_version: Literal[1] = 1
    source: str | None = Field(default=None, description="The case file, when run from one.")
    options: RunOptions
    cases: int
    periods: list[str]
    overall: MetricBlock
    weighted: MetricBlock = Field(description="Hájek estimates with weights 1/π.")
    strata: dict[str, MetricBlock] = Field(description="Per stratum (flag|language|tenant).")
    flags: dict[str, MetricBlock] = Field(description="Per flag stratum (all languages, tenants).")
    claim_status_counts: dict[str, int]
    abstention: dict[str, float | int | None] | None = Field(
        description="abstention_metrics over the cases with a target; None when none has one."
    )
    risk_coverage: list[dict[str, float | int | None]] | None = Field(
        description="risk_coverage_curve rows over answered cases with confidence and target."
    )
    ungrounded_dose_cases: list[str] = Field(
        description="Case ids with an ungrounded dose or contraindication claim."
    )
    critical_answers_unseen: int = Field(
        default=0,
        description="Checked answers with a critical finding that are in no case (more than a "
        "conversation's case keeps).",
    )
    rule_precision: dict[str, dict[str, float | int | None]] = Field(
        default_factory=dict,
        description="Reviewers' finding verdicts and precision per rule.",
    )
    gates: list[GateResult] = Field(default_factory=list)
    failed_gates: list[GateResult] = Field(default_factory=list)
    passed: bool = True
