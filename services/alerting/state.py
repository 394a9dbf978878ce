"""The detector's state as pydantic models, so a worker can keep it in a Faust table.

``DetectorState.model_dump(mode="json")`` is plain JSON; ``DetectorState.model_validate`` reads it
back, and ``Detector.from_state`` resumes exactly where the dump was taken. A series' state is
bounded: a fixed set of numbers (:class:`Baseline`) and at most ``guard_windows`` windows waiting
to enter the baseline, whatever its age; the detector keeps at most ``max_series`` series and
forgets those idle for ``series_idle_windows`` windows.
"""

from __future__ import annotations

from typing import Literal

from pydantic import AwareDatetime, BaseModel, ConfigDict, Field

from schemas.alerts import Alert, DetectorSettings, FiredBy, TestKind
from schemas.outputs import Category, Direction

__all__ = [
    "Baseline",
    "DetectorState",
    "GuardWindow",
    "PendingCount",
    "SeriesKey",
    "SeriesState",
    "SeriesStatus",
]

#: ``resolved`` behaves like ``ok`` (it can fire again); it says the last episode has ended.
SeriesStatus = Literal["ok", "firing", "resolved"]


class SeriesKey(BaseModel):
    """One series: findings of one category and direction for one tenant label. Hashable."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    category: Category
    tenant: str = Field(min_length=1)
    direction: Direction

    def __str__(self) -> str:
        return f"{self.category}/{self.tenant}/{self.direction}"

    def __hash__(self) -> int:  # the detector looks series up every window: keep it cheap
        return hash((self.category, self.tenant, self.direction))


class GuardWindow(BaseModel):
    """A closed window waiting to enter the baseline (``keep``: it will, unless the series fires
    first), with its count, exposure and dispersion terms."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    k: float = Field(ge=0)
    e: float = Field(ge=0)
    num: float
    den: float = Field(ge=0)
    keep: float = Field(ge=0, le=1)


class Baseline(BaseModel):
    """The numbers of one series (``services.alerting.baseline``: weighted sums of the baseline,
    of its variance and of the dispersion, and the CUSUM with its current run)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    windows: float = Field(ge=0)
    n_f: float = Field(ge=0)
    a_f: float = Field(ge=0)
    b_f: float = Field(ge=0)
    m_f: float = Field(ge=0)
    a_s: float = Field(ge=0)
    b_s: float = Field(ge=0)
    m_s: float = Field(ge=0)
    c_ff: float = Field(ge=0)
    d_ff: float = Field(ge=0)
    c_ss: float = Field(ge=0)
    d_ss: float = Field(ge=0)
    c_fs: float = Field(ge=0)
    d_fs: float = Field(ge=0)
    disp_num: float
    disp_den: float = Field(ge=0)
    cusum: float = Field(ge=0)
    run_windows: float = Field(ge=0)
    run_observed: float = Field(ge=0)
    run_expected: float = Field(ge=0)
    guard: list[GuardWindow] = Field(default_factory=list, description="Oldest first.")


class SeriesState(BaseModel):
    """Where one series stands."""

    model_config = ConfigDict(extra="forbid")

    key: SeriesKey
    #: ``binomial``: counts of messages with a finding among the window's messages; ``poisson``:
    #: counts with no known denominator. Fixed by the series' first window.
    kind: TestKind
    status: SeriesStatus = "ok"
    baseline: Baseline
    significant_run: int = Field(default=0, ge=0)
    quiet_run: int = Field(default=0, ge=0)
    run_started: AwareDatetime | None = Field(
        default=None, description="Start of the first window of the current significant run."
    )
    run_fired_by: FiredBy | None = Field(
        default=None, description="The test that made the current run's first window significant."
    )
    alert: Alert | None = Field(default=None, description="The firing alert, while firing.")
    last_seen: AwareDatetime | None = Field(
        default=None,
        description=(
            "Start of the last window with traffic (messages, or a reported count); the series "
            "is forgotten ``series_idle_windows`` after it. None in states saved before it was "
            "kept: counted from the next closed window."
        ),
    )


class PendingCount(BaseModel):
    """Counts observed for a window that is not closed yet."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    window_start: AwareDatetime
    key: SeriesKey
    count: int = Field(ge=0)
    messages: int | None = Field(default=None, ge=0)


class DetectorState(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    #: 2: baselines are weighted sums (issue 13); version 1 kept a list of windows.
    schema_version: Literal[2] = 2
    settings: DetectorSettings
    last_closed: AwareDatetime | None = None
    series: list[SeriesState] = Field(default_factory=list)
    pending: list[PendingCount] = Field(default_factory=list)
