"""The ``Alert`` contract: what the in-process spike detector publishes (SPEC §7).

One alert episode of one series — (category, tenant, direction) — produces two messages with the
same ``alert_id``: ``firing`` when it starts and ``resolved`` when it ends. Every number a reader
needs to judge the decision travels with it: the window's count, what the baseline expected, the
test and its p-value, the threshold after multiple-testing control, the floor, and the detector
settings in force.
"""

from __future__ import annotations

from typing import Literal, Self

from pydantic import AwareDatetime, BaseModel, ConfigDict, Field, model_validator

from schemas.outputs import Category, Direction

__all__ = ["Alert", "AlertState", "Correction", "DetectorSettings", "TestKind"]

AlertState = Literal["firing", "resolved"]
#: ``poisson``: the window's count against the baseline count per window. ``binomial``: the count
#: as a share of the window's messages, against the baseline share.
TestKind = Literal["poisson", "binomial"]
#: Multiple-testing control across the series tested in one window: Benjamini–Hochberg (false
#: discovery rate), Holm (family-wise error rate), Bonferroni, or none.
Correction = Literal["bh", "holm", "bonferroni", "none"]


class _Frozen(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class DetectorSettings(_Frozen):
    """Settings of the statistical spike detector (``services.alerting.Detector``).

    The defaults are the ones measured in ``docs/alerting.md``: at most about one false alarm per
    10,000 baseline windows per series, and a 3× spike at 1,000 assistant messages per window
    (1% base rate) caught within 2 windows.
    """

    window_seconds: int = Field(default=60, ge=1, description="Length of a tumbling window.")
    baseline_windows: int = Field(
        default=60, ge=1, description="Most recent non-alerting windows kept as the baseline."
    )
    min_baseline_windows: int = Field(
        default=30, ge=1, description="No decision for a series until it has this many."
    )
    alpha: float = Field(
        default=1e-4, gt=0.0, lt=1.0, description="Level of the test after correction."
    )
    correction: Correction = "bh"
    floor: int = Field(
        default=3, ge=1, description="A window fires only with at least this many findings."
    )
    fire_windows: int = Field(
        default=1, ge=1, description="Consecutive significant windows needed to fire."
    )
    resolve_windows: int = Field(
        default=3, ge=1, description="Consecutive non-significant windows needed to resolve."
    )
    prior_count: float = Field(
        default=0.5,
        gt=0.0,
        description=(
            "Pseudo-count added to the baseline (Jeffreys prior), so that a baseline of zeros "
            "does not make a single finding infinitely surprising."
        ),
    )

    @model_validator(mode="after")
    def _check(self) -> Self:
        if self.min_baseline_windows > self.baseline_windows:
            raise ValueError("min_baseline_windows must not exceed baseline_windows")
        return self


class Alert(_Frozen):
    """A spike of one series started (``firing``) or ended (``resolved``).

    ``window_start``/``window_end`` and the statistics describe the window that caused the change
    of state: the window that fired, or the last quiet window before resolving.
    """

    schema_version: Literal[1] = 1
    alert_id: str = Field(description="Deterministic id of the episode: series and started_at.")
    category: Category
    tenant: str = Field(description="The tenant's metric label (allow-listed, other or none).")
    direction: Direction
    state: AlertState
    window_start: AwareDatetime
    window_end: AwareDatetime
    observed: int = Field(ge=0, description="Findings of the series in the window.")
    expected: float = Field(ge=0.0, description="What the baseline predicts for the window.")
    baseline_windows: int = Field(ge=0, description="Windows in the baseline used.")
    test: TestKind
    messages: int | None = Field(
        default=None, ge=0, description="Messages in the window (binomial test only)."
    )
    p_value: float = Field(ge=0.0, le=1.0, description="One-sided exact p-value, uncorrected.")
    adjusted_threshold: float = Field(
        ge=0.0, le=1.0, description="The p-value this series had to reach, after correction."
    )
    floor: int = Field(ge=1)
    started_at: AwareDatetime = Field(description="Start of the first significant window.")
    resolved_at: AwareDatetime | None = Field(
        default=None, description="End of the window that resolved the episode."
    )
    settings: DetectorSettings

    @model_validator(mode="after")
    def _check(self) -> Self:
        if self.window_end <= self.window_start:
            raise ValueError("window_end must be after window_start")
        if (self.state == "resolved") != (self.resolved_at is not None):
            raise ValueError("resolved_at is set exactly when state is resolved")
        if (self.test == "binomial") != (self.messages is not None):
            raise ValueError("messages is set exactly when the test is binomial")
        if self.resolved_at is not None and self.resolved_at < self.started_at:
            raise ValueError("resolved_at must not be before started_at")
        return self
