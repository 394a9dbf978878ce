"""Configuration of the evaluation-set sampler: periods, strata, capacities, masking, rotation."""

from __future__ import annotations

from typing import Final

from pydantic import BaseModel, ConfigDict, Field, field_validator

from schemas.evalset import UNFLAGGED, FlagStratum, PeriodKind
from schemas.outputs import Category

__all__ = ["DEFAULT_CAPACITIES", "DEFAULT_CATEGORY_PRIORITY", "EvalsetConfig"]

#: Highest priority first. A conversation with findings of several categories goes to the stratum
#: of the first one listed: patient harm (dose and contraindication statements), then credentials
#: (a leaked secret is exploitable at once), then personal data, then system-prompt leakage, then
#: ungrounded answers and fabricated citations, then abstentions (behaviour, not harm).
DEFAULT_CATEGORY_PRIORITY: Final[tuple[Category, ...]] = (
    "medical",
    "secret",
    "pii",
    "prompt_leak",
    "grounding",
    "abstention",
)
#: Cases per stratum (flag × language × tenant) and period. ``unflagged`` is the largest: the
#: random unflagged conversations are what the miss rate of the rules is estimated from.
DEFAULT_CAPACITIES: Final[dict[FlagStratum, int]] = {
    "medical": 25,
    "secret": 10,
    "pii": 15,
    "prompt_leak": 10,
    "grounding": 15,
    "abstention": 10,
    UNFLAGGED: 50,
}


class EvalsetConfig(BaseModel):
    """Every knob of the evaluation sets (the secret is passed apart, never stored here).

    ``reserve`` extra candidates are kept per stratum beyond its capacity so that a conversation
    leaving the stratum (it gained a higher-priority flag) can be replaced exactly; ``None``
    means as many as the capacity. ``languages``/``tenants``, when given, bound the number of
    strata: other values are pooled as ``other``.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    period_kind: PeriodKind = "iso_week"
    capacities: dict[FlagStratum, int] = Field(default_factory=lambda: dict(DEFAULT_CAPACITIES))
    default_capacity: int = Field(default=10, ge=0, le=100_000)
    reserve: int | None = Field(default=None, ge=0, le=100_000)
    category_priority: tuple[Category, ...] = DEFAULT_CATEGORY_PRIORITY
    languages: frozenset[str] | None = None
    tenants: frozenset[str] | None = None
    active_periods: int = Field(default=4, ge=1, le=520)
    max_sources: int = Field(default=64, ge=1, le=10_000)
    #: Replace finding spans in the question, answer and claim texts with the masked evidence.
    mask_pii: bool = True
    #: Categories whose spans are masked in case texts (medical statements are not personal data).
    mask_categories: frozenset[Category] = frozenset({"pii", "secret", "prompt_leak"})

    @field_validator("capacities")
    @classmethod
    def _capacities(cls, value: dict[FlagStratum, int]) -> dict[FlagStratum, int]:
        for flag, cap in value.items():
            if not 0 <= cap <= 100_000:
                raise ValueError(f"capacity of {flag!r} must be in [0, 100000], got {cap}")
        return value

    @field_validator("category_priority")
    @classmethod
    def _priority(cls, value: tuple[Category, ...]) -> tuple[Category, ...]:
        if len(set(value)) != len(value):
            raise ValueError("category_priority lists a category twice")
        return value

    def capacity(self, flag: str) -> int:
        """Capacity of a stratum with this flag part."""
        return self.capacities.get(flag, self.default_capacity)  # type: ignore[call-overload]

    def reserve_for(self, flag: str) -> int:
        return self.capacity(flag) if self.reserve is None else self.reserve
