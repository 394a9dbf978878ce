"""The detector's state as pydantic models, so a worker can keep it in a Faust table.

``DetectorState.model_dump(mode="json")`` is plain JSON; ``DetectorState.model_validate`` reads it
back, and ``Detector.from_state`` resumes exactly where the dump was taken.
"""

from __future__ import annotations

from typing import Literal

from pydantic import AwareDatetime, BaseModel, ConfigDict, Field

from schemas.alerts import Alert, DetectorSettings
from schemas.outputs import Category, Direction

__all__ = [
    "DetectorState",
    "PendingCount",
    "SeriesKey",
    "SeriesState",
    "SeriesStatus",
    "WindowCount",
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


class WindowCount(BaseModel):
    """A closed window in a series' baseline. ``messages`` is None when it was not reported."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    count: int = Field(ge=0)
    messages: int | None = Field(default=None, ge=0)


class SeriesState(BaseModel):
    """Where one series stands. Mutated in place by the detector; copied when exported."""

    model_config = ConfigDict(extra="forbid")

    key: SeriesKey
    status: SeriesStatus = "ok"
    #: Oldest first; at most ``baseline_windows`` entries; never a window that was significant or
    #: closed while the series was firing, so a spike does not raise its own baseline.
    baseline: list[WindowCount] = Field(default_factory=list)
    significant_run: int = Field(default=0, ge=0)
    quiet_run: int = Field(default=0, ge=0)
    run_started: AwareDatetime | None = Field(
        default=None, description="Start of the first window of the current significant run."
    )
    alert: Alert | None = Field(default=None, description="The firing alert, while firing.")


class PendingCount(BaseModel):
    """Counts observed for a window that is not closed yet."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    window_start: AwareDatetime
    key: SeriesKey
    count: int = Field(ge=0)
    messages: int | None = Field(default=None, ge=0)


class DetectorState(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    schema_version: Literal[1] = 1
    settings: DetectorSettings
    last_closed: AwareDatetime | None = None
    series: list[SeriesState] = Field(default_factory=list)
    pending: list[PendingCount] = Field(default_factory=list)
