"""The ``Alert`` contract: what the in-process spike detector publishes (SPEC §7).

One alert episode of one series — (category, tenant, direction) — produces two messages with the
same ``alert_id``: ``firing`` when it starts and ``resolved`` when it ends. Every number a reader
needs to judge the decision travels with it: which test fired (the window's own count, the
evidence accumulated over windows, or both), the window's count and what the baseline forecast,
the window test's p-value and the threshold after multiple-testing control, the CUSUM's evidence
(windows, observed, expected), the dispersion the tests allowed for, the floor, and the detector
settings in force.
"""

from __future__ import annotations

from typing import Literal, Self

from pydantic import AwareDatetime, BaseModel, ConfigDict, Field, model_validator

from schemas.outputs import Category, Direction

__all__ = [
    "Alert",
    "AlertState",
    "Correction",
    "CusumEvidence",
    "DetectorSettings",
    "FiredBy",
    "TestKind",
]

AlertState = Literal["firing", "resolved"]
#: ``poisson``: the window's count against the baseline count per window. ``binomial``: the count
#: as a share of the window's messages, against the baseline share.
TestKind = Literal["poisson", "binomial"]
#: Multiple-testing control across the series tested in one window: Benjamini–Hochberg (false
#: discovery rate), Holm (family-wise error rate), Bonferroni, or none.
Correction = Literal["bh", "holm", "bonferroni", "none"]
#: Which test made the window significant: the window's own count (``window``), the evidence
#: accumulated over several windows (``cusum``), or both.
FiredBy = Literal["window", "cusum", "both"]


class _Frozen(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class DetectorSettings(_Frozen):
    """Settings of the statistical spike detector (``services.alerting.Detector``).

    The defaults are the ones measured in ``docs/alerting.md``: at most about one false alarm per
    10,000 baseline windows per series on steady, drifting, day/night and overdispersed traffic,
    a 3× spike at 1,000 assistant messages per window (1 % base rate) caught within 2 windows,
    and sustained small-volume spikes within 1.5× of the delay of a CUSUM that knows the baseline.
    """

    window_seconds: int = Field(default=60, ge=1, description="Length of a tumbling window.")
    baseline_half_life: float = Field(
        default=30.0,
        ge=1.0,
        le=100_000.0,
        description=(
            "Half-life, in windows, of the weights of the baseline's rate estimate (a second "
            "estimate with twice the half-life gives the trend)."
        ),
    )
    baseline_events: float = Field(
        default=200.0,
        ge=0.0,
        le=1_000_000.0,
        description=(
            "The half-life is longer for low-volume series: as many windows as hold this many "
            "expected findings (a series with one a window remembers 200 windows)."
        ),
    )
    min_baseline_windows: int = Field(
        default=30, ge=1, description="No decision for a series until this many windows entered."
    )
    guard_windows: int = Field(
        default=5,
        ge=0,
        le=100,
        description=(
            "Windows enter the baseline this many windows late; those still waiting when the "
            "series fires never do (the start of a spike does not raise its own bar)."
        ),
    )
    trend: bool = Field(
        default=True, description="Extrapolate the baseline's trend to the window tested."
    )
    dispersion_half_life: float = Field(
        default=240.0,
        ge=1.0,
        le=1_000_000.0,
        description="Half-life, in windows, of the estimate of the window-to-window dispersion.",
    )
    alpha: float = Field(
        default=2e-5, gt=0.0, lt=1.0, description="Level of the window test after correction."
    )
    correction: Correction = "bh"
    floor: int = Field(
        default=3,
        ge=1,
        description="A test fires only with at least this many findings (in the window, or in "
        "the CUSUM's run).",
    )
    cusum_ratio: float = Field(
        default=3.0,
        gt=1.0,
        le=100.0,
        description="The CUSUM weighs the evidence that the rate is this many times the forecast.",
    )
    cusum_threshold: float = Field(
        default=8.5,
        gt=0.0,
        le=100.0,
        description="The CUSUM signals when its log-likelihood ratio reaches this (nats).",
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
    max_series: int = Field(
        default=50_000,
        ge=1,
        description=(
            "The most series the detector keeps. A new series beyond it replaces the one whose "
            "traffic was seen least recently (a firing one only when every series fires; it is "
            "resolved first)."
        ),
    )
    series_idle_windows: int = Field(
        default=43_200,
        ge=1,
        description=(
            "A series without traffic for this many windows is forgotten with its baseline "
            "(resolved first if it fires); 43,200 one-minute windows are 30 days."
        ),
    )


class CusumEvidence(_Frozen):
    """The CUSUM's evidence at the window of the alert: since it last stood at 0, ``windows``
    windows held ``observed`` findings where the baseline forecast ``expected``."""

    statistic: float = Field(ge=0.0, description="Log-likelihood ratio accumulated (nats).")
    threshold: float = Field(gt=0.0, description="The statistic it signals at.")
    ratio: float = Field(gt=1.0, description="The rise it tests for (× the forecast).")
    windows: int = Field(ge=0)
    observed: int = Field(ge=0)
    expected: float = Field(ge=0.0)


class Alert(_Frozen):
    """A spike of one series started (``firing``) or ended (``resolved``).

    ``window_start``/``window_end`` and the statistics describe the window that caused the change
    of state: the window that fired, or the last quiet window before resolving. A series the
    detector forgets while it fires (no traffic for ``series_idle_windows``, or beyond
    ``max_series``) is resolved with the numbers of its firing window, ``resolved_at`` the end of
    the window at whose close it was forgotten.
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
    expected: float = Field(ge=0.0, description="What the baseline forecast for the window.")
    baseline_windows: int = Field(ge=0, description="Windows that entered the baseline so far.")
    test: TestKind
    messages: int | None = Field(
        default=None, ge=0, description="Messages in the window (binomial test only)."
    )
    p_value: float = Field(
        ge=0.0, le=1.0, description="One-sided p-value of the window test, uncorrected."
    )
    adjusted_threshold: float = Field(
        ge=0.0, le=1.0, description="The p-value this series had to reach, after correction."
    )
    floor: int = Field(ge=1)
    fired_by: FiredBy = Field(
        default="window",
        description=(
            "The test that made the episode's first significant window: its own count "
            "(window), the evidence of several windows (cusum), or both."
        ),
    )
    dispersion: float = Field(
        default=0.0,
        ge=0.0,
        description=(
            "Squared coefficient of variation of the rate between windows, estimated from the "
            "baseline (0: binomial / Poisson variation only)."
        ),
    )
    variance_factor: float = Field(
        default=1.0,
        ge=1.0,
        description=(
            "Variance of the window's count expected from the baseline, over the binomial "
            "(Poisson) variance: the tests use it as their dispersion."
        ),
    )
    cusum: CusumEvidence | None = Field(
        default=None, description="The evidence accumulated over windows (the CUSUM)."
    )
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
