"""Settings of the evaluation sets from the environment (``VIGIL_EVALSET_*``).

One class for the three places that must sample alike: the streaming workers, ``vigil scan``'s
``evalset.jsonl`` and ``vigil evalset export``. The same ``key`` and configuration give the same
sample in all three (the sampler is keyed and order-independent), so an operator can reproduce a
worker's selection from a file.
"""

from __future__ import annotations

from typing import Final

from pydantic import Field, SecretStr, field_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from schemas.evalset import FLAG_STRATA, FlagStratum, PeriodKind
from services.evalsets.config import DEFAULT_CAPACITIES, EvalsetConfig

__all__ = ["DEV_EVALSET_KEY", "EvalsetSettings"]

DEV_EVALSET_KEY: Final = "vigil-evalset-development-key-change-me"


class EvalsetSettings(BaseSettings):
    """Every knob of the evaluation sets: ``VIGIL_EVALSET_`` + the field name in capitals.

    ``capacity`` gives every stratum the same capacity; ``capacities`` (JSON, e.g.
    ``{"unflagged": 50, "medical": 25}``) sets flags one by one on top of it or of the defaults.
    ``languages`` / ``tenants`` (comma-separated) bound the strata: other values pool as ``other``.
    """

    model_config = SettingsConfigDict(env_prefix="VIGIL_EVALSET_", extra="ignore", frozen=True)

    enabled: bool = True
    #: Secret the per-period salts derive from: whoever holds it can recompute the sample.
    key: SecretStr = SecretStr(DEV_EVALSET_KEY)
    period: PeriodKind = "iso_week"
    capacity: int | None = Field(default=None, ge=0, le=100_000)
    capacities: dict[FlagStratum, int] = Field(default_factory=dict)
    reserve: int | None = Field(default=None, ge=0, le=100_000)
    active_periods: int = Field(default=4, ge=1, le=520)
    languages: list[str] | None = None
    tenants: list[str] | None = None
    mask_pii: bool = True
    max_sources: int = Field(default=64, ge=1, le=10_000)

    # Topics (the workers' internal ones are named after the app id, see the feature module).
    topic: str = "vigil.evalset"
    archive_topic: str = "vigil.evalset.archive"
    labels_topic: str = "vigil.review.labels"

    # State bounds (per partition in the worker, per run in vigil scan) and lifetime.
    #: Keys of the case state: accumulators, selections and labels of conversations.
    max_conversations: int = Field(default=200_000, ge=1)
    #: The largest accumulator of one conversation and period (answers, findings, sources),
    #: one record of the worker's state changelog: a larger one has its texts shortened and
    #: its oldest sources left out (:mod:`services.evalsets.bounds`).
    max_case_bytes: int = Field(default=256 * 1024, ge=32 * 1024, le=64 * 1024 * 1024)
    #: The largest value of the sampler's state: a stratum's candidates (``capacity +
    #: reserve`` of them), a member record, the journal of one commit (a larger commit is
    #: written without one).
    max_sampler_bytes: int = Field(default=512 * 1024, ge=32 * 1024, le=64 * 1024 * 1024)
    #: Keys of the sampler's state: one member record per conversation and period, strata.
    max_members: int = Field(default=2_000_000, ge=1)
    #: Seconds after its last write a key of either is deleted; default the active periods
    #: plus two, plus ``grace_seconds`` (every period retires before its state goes).
    state_ttl_seconds: float | None = Field(default=None, gt=0.0)

    #: Conversations (per period) whose last summary sent to the sampler and last published
    #: case the case side remembers in memory, per process: a miss only costs a re-send.
    memo_conversations: int = Field(default=20_000, ge=1)
    #: Bytes of decoded case accumulators kept in memory between events, per process, counted
    #: at their last encoding (at most 512 of them besides; each is at most
    #: ``max_case_bytes`` stored).
    cache_bytes: int = Field(default=32 * 1024 * 1024, ge=1024 * 1024)

    # Streaming: when periods close and rotate.
    #: Event time past a period's end before it closes (late events within it still count).
    grace_seconds: float = Field(default=900.0, ge=0.0)
    #: How often the worker's timer asks the sampler to close and rotate periods.
    tick_seconds: float = Field(default=30.0, gt=0.0)
    #: A partition that sent nothing for this long no longer holds the watermark back.
    idle_seconds: float = Field(default=300.0, gt=0.0)
    #: A period waits this long at most for the claim checks of its answers before closing.
    check_wait_seconds: float = Field(default=600.0, ge=0.0)
    #: How often the sampler re-sends each open period's selection (repairs a lost update).
    resync_seconds: float = Field(default=600.0, gt=0.0)
    #: How long a publish may wait for the broker's acknowledgement.
    send_timeout_seconds: float = Field(default=60.0, gt=0.0)

    @field_validator("languages", "tenants", mode="before")
    @classmethod
    def _split(cls, value: object) -> object:
        if isinstance(value, str) and not value.startswith("["):
            return [v.strip() for v in value.split(",") if v.strip()]
        return value

    @property
    def secret(self) -> bytes:
        return self.key.get_secret_value().encode("utf-8")

    def config(self) -> EvalsetConfig:
        """The sampler configuration these settings describe."""
        base: dict[FlagStratum, int] = (
            dict.fromkeys(FLAG_STRATA, self.capacity)
            if self.capacity is not None
            else dict(DEFAULT_CAPACITIES)
        )
        base.update(self.capacities)
        return EvalsetConfig(
            period_kind=self.period,
            capacities=base,
            default_capacity=self.capacity if self.capacity is not None else 10,
            reserve=self.reserve,
            languages=frozenset(v.lower() for v in self.languages) if self.languages else None,
            tenants=frozenset(self.tenants) if self.tenants else None,
            active_periods=self.active_periods,
            max_sources=self.max_sources,
            mask_pii=self.mask_pii,
        )
