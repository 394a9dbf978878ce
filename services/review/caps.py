"""Per-tenant hourly caps on new review items, with keyed-hash sampling of the overflow.

A :class:`CapCounter` counts one tenant's new items in the current hour (of ``ReviewFlag.at``)
in one partition; :func:`admit` is a pure function from the counter and a flag to the new
counter and an :class:`AdmissionDecision`. In the worker each partition owns a share of the cap
(``Caps.limit(tenant, partitions)``), so counters never need cross-partition coordination; keep
them in a table keyed by :func:`counter_key`. A counter resets itself when the hour changes, so
the table holds one counter per tenant and partition.

Overflow sampling is deterministic: ``u = HMAC-SHA256(key, DOMAIN + conversation_id)`` as a
53-bit fraction; a conversation over the cap enters iff ``u < overflow_sample_rate``, so the
same conversation gets the same decision in every worker, replay and ``vigil scan``.
"""

from __future__ import annotations

import hashlib
import hmac
from dataclasses import dataclass
from datetime import datetime
from typing import Literal

from pydantic import AwareDatetime, BaseModel, ConfigDict, Field

from schemas.review import ReviewFlag
from services.review.policy import Band, Caps, band

__all__ = ["HASH_DOMAIN", "AdmissionDecision", "CapCounter", "admit", "counter_key", "hour_of"]

HASH_DOMAIN = b"vigil.review.overflow.v1\x00"


class CapCounter(BaseModel):
    """New review items of one tenant in one hour (in one partition)."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    tenant: str | None
    hour: AwareDatetime
    admitted: int = Field(default=0, ge=0)
    exempt: int = Field(default=0, ge=0)
    sampled: int = Field(default=0, ge=0)
    #: Distinct conversations over the cap and not sampled (exact up to the tracking bound).
    overflowed: int = Field(default=0, ge=0)
    #: Every flag that would have opened an item over the cap, repeats included.
    overflowed_flags: int = Field(default=0, ge=0)
    #: Reason code → how many overflowed flags carried it.
    overflowed_reasons: dict[str, int] = Field(default_factory=dict)
    overflowed_ids: list[str] = Field(default_factory=list)

    @property
    def used(self) -> int:
        return self.admitted + self.exempt


@dataclass(frozen=True, slots=True)
class AdmissionDecision:
    outcome: Literal["admitted", "exempt", "sampled", "overflowed"]
    inclusion_probability: float
    band: Band
    #: An overflowed conversation already counted in this hour.
    repeat: bool = False


def hour_of(at: datetime) -> datetime:
    return at.replace(minute=0, second=0, microsecond=0)


def counter_key(tenant: str | None, partition: int | None = None) -> str:
    """Table key of a counter: ``<partition>|<tenant>`` (``-`` for no tenant)."""
    return f"{'' if partition is None else partition}|{tenant if tenant is not None else '-'}"


def _hash(key: bytes, conversation_id: str) -> tuple[float, str]:
    digest = hmac.new(key, HASH_DOMAIN + conversation_id.encode("utf-8"), hashlib.sha256).digest()
    u = (int.from_bytes(digest[:8], "big") >> 11) * 2.0**-53
    return u, digest[8:16].hex()


def admit(
    counter: CapCounter | None,
    flag: ReviewFlag,
    caps: Caps,
    *,
    key: bytes,
    partitions: int = 1,
) -> tuple[CapCounter, AdmissionDecision]:
    """Decide whether ``flag`` may open a new review item, and count it."""
    hour = hour_of(flag.at)
    if counter is None or counter.hour != hour or counter.tenant != flag.tenant:
        counter = CapCounter(tenant=flag.tenant, hour=hour)
    priority = flag.priority
    b = band(priority)
    if caps.exempt_priority is not None and priority >= caps.exempt_priority:
        new = counter.model_copy(update={"exempt": counter.exempt + 1})
        return new, AdmissionDecision("exempt", 1.0, b)
    limit = caps.limit(flag.tenant, partitions)
    if limit is None or counter.used < limit:
        new = counter.model_copy(update={"admitted": counter.admitted + 1})
        return new, AdmissionDecision("admitted", 1.0, b)
    u, short = _hash(key, flag.conversation_id)
    rate = caps.overflow_sample_rate
    if u < rate:
        new = counter.model_copy(update={"sampled": counter.sampled + 1})
        return new, AdmissionDecision("sampled", rate, b)
    reasons = dict(counter.overflowed_reasons)
    for r in flag.reasons:
        reasons[r.code] = reasons.get(r.code, 0) + 1
    update: dict[str, object] = {
        "overflowed_flags": counter.overflowed_flags + 1,
        "overflowed_reasons": reasons,
    }
    repeat = short in counter.overflowed_ids
    if not repeat:
        update["overflowed"] = counter.overflowed + 1
        if len(counter.overflowed_ids) < caps.max_tracked_overflow:
            update["overflowed_ids"] = [*counter.overflowed_ids, short]
    return counter.model_copy(update=update), AdmissionDecision("overflowed", rate, b, repeat)
