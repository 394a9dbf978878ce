"""``VIGIL_ALERTS_*``: the spike detector's settings (windows, test, Alertmanager), no Faust."""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Annotated, get_args

from pydantic import Field, field_validator
from pydantic_settings import BaseSettings, NoDecode, SettingsConfigDict

from schemas.alerts import Correction, DetectorSettings
from schemas.outputs import Category, Direction
from services.alerting.alertmanager import AlertmanagerConfig

__all__ = ["ROLES_OF", "AlertingSettings"]

#: The roles whose messages a direction's findings come from (the binomial test's ``n``).
ROLES_OF: dict[str, frozenset[str]] = {
    "input": frozenset({"user", "system", "tool"}),
    "leak": frozenset({"assistant"}),
    "echo": frozenset({"assistant"}),
    "output": frozenset({"assistant"}),
}
#: Categories whose findings carry a personal or secret value (as ``services.screening``).
_VALUE_CATEGORIES = frozenset({"pii", "secret", "prompt_leak"})
_DEFAULTS = DetectorSettings()


class AlertingSettings(BaseSettings):
    """The spike detector in the worker. Environment: ``VIGIL_ALERTS_`` + the field name."""

    model_config = SettingsConfigDict(env_prefix="VIGIL_ALERTS_", extra="ignore", frozen=True)

    enabled: bool = True
    #: Output: one ``Alert`` per change of state, keyed by ``alert_id``.
    topic: str = "vigil.alerts"
    #: Internal: per-window totals and ticks for the detector (partition 0 only).
    counts_topic: str = "vigil.alerts.counts"
    window_seconds: int = Field(default=_DEFAULTS.window_seconds, ge=1)
    #: How long after a window ends it is closed: room for the other partitions' totals.
    grace_seconds: float = Field(default=10.0, ge=0)
    #: How often totals are sent and ticks checked; default ``min(window, grace) / 2`` in
    #: [0.2 s, 5 s].
    tick_seconds: float | None = Field(default=None, gt=0)
    #: The detector (``schemas.alerts.DetectorSettings`` says what each does; the defaults are
    #: the ones measured in docs/alerting.md).
    baseline_half_life: float = Field(default=_DEFAULTS.baseline_half_life, ge=1.0, le=100_000.0)
    baseline_events: float = Field(default=_DEFAULTS.baseline_events, ge=0.0, le=1_000_000.0)
    min_baseline_windows: int = Field(default=_DEFAULTS.min_baseline_windows, ge=1)
    guard_windows: int = Field(default=_DEFAULTS.guard_windows, ge=0, le=100)
    trend: bool = _DEFAULTS.trend
    dispersion_half_life: float = Field(
        default=_DEFAULTS.dispersion_half_life, ge=1.0, le=1_000_000.0
    )
    alpha: float = Field(default=_DEFAULTS.alpha, gt=0.0, lt=1.0)
    correction: Correction = _DEFAULTS.correction
    floor: int = Field(default=_DEFAULTS.floor, ge=1)
    cusum_ratio: float = Field(default=_DEFAULTS.cusum_ratio, gt=1.0, le=100.0)
    cusum_threshold: float = Field(default=_DEFAULTS.cusum_threshold, gt=0.0, le=100.0)
    fire_windows: int = Field(default=_DEFAULTS.fire_windows, ge=1)
    resolve_windows: int = Field(default=_DEFAULTS.resolve_windows, ge=1)
    prior_count: float = Field(default=_DEFAULTS.prior_count, gt=0.0)
    max_series: int = Field(default=_DEFAULTS.max_series, ge=1)
    series_idle_windows: int = Field(default=_DEFAULTS.series_idle_windows, ge=1)
    #: Directions that get series (comma-separated in the environment).
    directions: Annotated[list[Direction], NoDecode] = Field(
        default_factory=lambda: list(get_args(Direction))
    )
    #: ``category/direction`` pairs that get a series for every tenant label with traffic from
    #: its first window, before any finding (so a first-ever spike meets a baseline of zeros).
    #: Default: ``<category>/leak`` for each value-carrying category (pii, secret, prompt_leak)
    #: of the loaded rules. Other pairs get series once they have been seen for any tenant.
    watch: Annotated[list[str] | None, NoDecode] = None
    #: Base URL of Alertmanager (``http://alertmanager:9093``); unset: no push.
    alertmanager_url: str | None = None
    #: The largest value of the alerting state (a partition's window counts, the detector's
    #: pending totals, one series), one record of the worker's state changelog: counts of every
    #: series of a window, a series per category × tenant label × direction.
    max_value_bytes: int = Field(default=512 * 1024, ge=32 * 1024, le=64 * 1024 * 1024)
    alertmanager_severity: str = "warning"
    alertmanager_timeout_seconds: float = Field(default=5.0, gt=0)
    alertmanager_max_retries: int = Field(default=3, ge=0)
    generator_url: str | None = None

    @field_validator("directions", "watch", mode="before")
    @classmethod
    def _split(cls, value: object) -> object:
        if isinstance(value, str):
            text = value.strip()
            if text.startswith("["):
                return json.loads(text)
            return [v.strip() for v in text.split(",") if v.strip()]
        return value

    @field_validator("watch")
    @classmethod
    def _pairs(cls, value: list[str] | None) -> list[str] | None:
        for pair in value or []:
            category, _, direction = pair.partition("/")
            if category not in get_args(Category) or direction not in get_args(Direction):
                raise ValueError(f"not a category/direction pair: {pair!r}")
        return value

    def watched(self, rule_categories: Iterable[str]) -> frozenset[tuple[str, str]]:
        """The watched (category, direction) pairs, given the categories of the loaded rules."""
        if self.watch is None:
            pairs = {(c, "leak") for c in _VALUE_CATEGORIES if c in set(rule_categories)}
        else:
            pairs = {(p.partition("/")[0], p.partition("/")[2]) for p in self.watch}
        return frozenset((c, d) for c, d in pairs if d in self.directions)

    def detector_settings(self) -> DetectorSettings:
        return DetectorSettings.model_validate(
            {name: getattr(self, name) for name in DetectorSettings.model_fields}
        )

    @property
    def tick(self) -> float:
        if self.tick_seconds is not None:
            return self.tick_seconds
        return min(5.0, max(0.2, min(float(self.window_seconds), self.grace_seconds) / 2))

    @property
    def retention_seconds(self) -> float:
        """How long after its end a partition keeps a window's counts: until the detector has
        closed it (re-sends of late totals), plus two ticks. Later totals would be late anyway."""
        return self.grace_seconds + 2 * self.tick

    def alertmanager(self) -> AlertmanagerConfig | None:
        if not self.alertmanager_url:
            return None
        return AlertmanagerConfig(
            url=self.alertmanager_url,
            severity=self.alertmanager_severity,
            generator_url=self.generator_url,
            # Re-sent every window: the TTL must outlive a few of them.
            firing_ttl_seconds=max(900.0, 3.0 * (self.window_seconds + self.grace_seconds)),
            timeout_seconds=self.alertmanager_timeout_seconds,
            max_retries=self.alertmanager_max_retries,
        )
