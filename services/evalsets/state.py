"""The sampler's state and results as pydantic models (serialisable for Faust tables).

:class:`PeriodState` holds one period's strata (population, bottom-``k + reserve`` candidates and
the bound below which every member is a candidate); :class:`MemberRecord` where one conversation
of a period is counted. :func:`select` reads the selected conversations of a state and
:func:`merge_states` merges the per-partition shards of one period. The sampling logic is in
:mod:`services.evalsets.sampler`.
"""

from __future__ import annotations

import bisect
from collections.abc import Container, Iterable, Mapping, Sequence

from pydantic import BaseModel, ConfigDict, Field, field_serializer

from schemas.evalset import FlagStratum, SourceRef
from schemas.outputs import Category

__all__ = [
    "AddResult",
    "ConversationSummary",
    "KeptEntry",
    "MemberRecord",
    "PeriodState",
    "Selection",
    "StratumState",
    "member_key",
    "merge_states",
    "select",
]


class ConversationSummary(BaseModel):
    """What one observation says about a conversation in a period; merging is idempotent.

    Built per event by :func:`summary_from_event`; several summaries of one conversation merge by
    union (categories, sources) and first value wins (language, tenant).
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    conversation_id: str = Field(min_length=1)
    period: str
    categories: frozenset[Category] = frozenset()
    language: str | None = None
    tenant: str | None = None
    sources: tuple[SourceRef, ...] = ()

    @field_serializer("categories")
    def _categories_sorted(self, categories: frozenset[str]) -> list[str]:
        """Sorted: a set's order follows the process's hash seed, so the same summary would be
        encoded differently by two workers (or a worker and its restart)."""
        return sorted(categories)


class KeptEntry(BaseModel):
    """A candidate of a stratum; ordered by ``(priority, conversation_id)``."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    priority: float = Field(ge=0.0, lt=1.0)
    conversation_id: str

    @property
    def order(self) -> tuple[float, str]:
        return (self.priority, self.conversation_id)


def _order(entry: KeptEntry) -> tuple[float, str]:
    return (entry.priority, entry.conversation_id)


class StratumState(BaseModel):
    """Population count and bottom-(capacity + reserve) candidates of one stratum."""

    model_config = ConfigDict(extra="forbid")

    capacity: int = Field(ge=0)
    reserve: int = Field(ge=0)
    population: int = Field(default=0, ge=0)
    kept: list[KeptEntry] = Field(default_factory=list, description="Ascending candidates.")
    bound: KeptEntry | None = Field(
        default=None, description="First evicted candidate; None while every member is kept."
    )

    def _admits(self, entry: KeptEntry) -> bool:
        return self.bound is None or entry.order < self.bound.order

    def insert(self, entry: KeptEntry) -> tuple[str | None, str | None]:
        """Count ``entry`` and keep it if it is a candidate. Returns what that changed in the
        selection: the conversation that joined it (``entry``'s) and the one pushed out of it,
        each ``None`` when none did."""
        self.population += 1
        if not self._admits(entry):
            return None, None
        i = bisect.bisect_left(self.kept, entry.order, key=_order)
        joins = i < self.capacity
        pushed = (
            self.kept[self.capacity - 1].conversation_id
            if joins and len(self.kept) >= self.capacity
            else None
        )
        self.kept.insert(i, entry)
        if len(self.kept) > self.capacity + self.reserve:
            self.bound = self.kept.pop()
        return (entry.conversation_id if joins else None), pushed

    def remove(self, entry: KeptEntry) -> tuple[str | None, str | None]:
        """Uncount ``entry`` and drop it from the candidates. Returns what that changed in the
        selection: the conversation that left it (``entry``'s) and the one that took its place,
        each ``None`` when none did."""
        if self.population <= 0:
            raise ValueError("stratum population would become negative")
        self.population -= 1
        i = bisect.bisect_left(self.kept, entry.order, key=_order)
        if i >= len(self.kept) or self.kept[i].order != entry.order:
            return None, None
        leaves = i < self.capacity
        pulled = (
            self.kept[self.capacity].conversation_id
            if leaves and len(self.kept) > self.capacity
            else None
        )
        del self.kept[i]
        return (entry.conversation_id if leaves else None), pulled

    def selected(self) -> list[KeptEntry]:
        return self.kept[: self.capacity]

    def inclusion_probability(self) -> float:
        """``k / N`` (exact bottom-k) or ``bound`` (degraded threshold sample); 1 when ``N = 0``."""
        if self.population == 0:
            return 1.0
        if self.bound is None or len(self.kept) >= self.capacity:
            return min(self.capacity, self.population) / self.population
        return max(self.bound.priority, len(self.kept) / self.population)


class MemberRecord(BaseModel):
    """Where a conversation of a period is counted, and what is known about it."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    stratum: str
    priority: float = Field(ge=0.0, lt=1.0)
    categories: tuple[Category, ...] = ()
    language: str | None = None
    tenant: str | None = None
    sources: tuple[SourceRef, ...] = ()
    sources_dropped: int = Field(default=0, ge=0)


class PeriodState(BaseModel):
    """The sampler state of one period (one shard, when workers keep one per partition)."""

    model_config = ConfigDict(extra="forbid")

    period: str
    closed: bool = False
    strata: dict[str, StratumState] = Field(default_factory=dict)
    late_after_close: int = Field(default=0, ge=0, description="Summaries refused after close.")


class AddResult(BaseModel):
    """What :meth:`EvalsetSampler.add` changed; ``admitted``/``evicted`` are conversation ids
    entering or leaving the selected sample (publish or tombstone their cases)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    period: str
    conversation_id: str
    accepted: bool
    changed: bool
    stratum: str | None
    previous_stratum: str | None = None
    admitted: list[str] = Field(default_factory=list)
    evicted: list[str] = Field(default_factory=list)


class Selection(BaseModel):
    """A selected conversation of a period with its design information."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    period: str
    conversation_id: str
    stratum: str
    flag_stratum: FlagStratum
    language: str
    tenant: str
    inclusion_probability: float = Field(gt=0.0, le=1.0)
    inclusion_final: bool
    stratum_population: int = Field(ge=1)
    priority: float
    categories: tuple[Category, ...]
    sources: tuple[SourceRef, ...]


def member_key(period: str, conversation_id: str) -> str:
    """Key of a :class:`MemberRecord` in the members mapping (one mapping for all periods)."""
    return f"{period}|{conversation_id}"


def select(
    state: PeriodState,
    members: Mapping[str, MemberRecord],
    *,
    strata: Iterable[str] | None = None,
    only: Container[str] | None = None,
) -> list[Selection]:
    """The selected conversations of a (possibly merged) period state; of the given ``strata``
    and conversations (``only``) when set."""
    out: list[Selection] = []
    keys = sorted(state.strata) if strata is None else sorted(set(strata) & state.strata.keys())
    for key in keys:
        stratum = state.strata[key]
        if stratum.population == 0:
            continue
        flag, language, tenant = key.split("|", 2)
        pi = stratum.inclusion_probability()
        for entry in stratum.selected():
            if only is not None and entry.conversation_id not in only:
                continue
            record = members.get(member_key(state.period, entry.conversation_id))
            out.append(
                Selection(
                    period=state.period,
                    conversation_id=entry.conversation_id,
                    stratum=key,
                    flag_stratum=flag,  # type: ignore[arg-type]
                    language=language,
                    tenant=tenant,
                    inclusion_probability=pi,
                    inclusion_final=state.closed,
                    stratum_population=stratum.population,
                    priority=entry.priority,
                    categories=record.categories if record else (),
                    sources=record.sources if record else (),
                )
            )
    return out


def merge_states(states: Sequence[PeriodState]) -> PeriodState:
    """Merge the shards of one period (members of different shards are disjoint).

    The bottom-k of a union is the bottom-k of the shards' bottom-k's, so the merged sample is the
    one a single sampler would have drawn over all shards' conversations.
    """
    if not states:
        raise ValueError("nothing to merge")
    period = states[0].period
    if any(s.period != period for s in states):
        raise ValueError("cannot merge states of different periods")
    merged = PeriodState(
        period=period,
        closed=all(s.closed for s in states),
        late_after_close=sum(s.late_after_close for s in states),
    )
    for key in sorted({k for s in states for k in s.strata}):
        parts = [s.strata[key] for s in states if key in s.strata]
        capacity, reserve = parts[0].capacity, parts[0].reserve
        if any(p.capacity != capacity or p.reserve != reserve for p in parts):
            raise ValueError(f"shards disagree on the capacity of stratum {key!r}")
        bounds = [p.bound for p in parts if p.bound is not None]
        bound = min(bounds, key=lambda e: e.order) if bounds else None
        kept = sorted(
            (e for p in parts for e in p.kept if bound is None or e.order < bound.order),
            key=lambda e: e.order,
        )
        if len(kept) > capacity + reserve:
            bound = kept[capacity + reserve]
            kept = kept[: capacity + reserve]
        merged.strata[key] = StratumState(
            capacity=capacity,
            reserve=reserve,
            population=sum(p.population for p in parts),
            kept=kept,
            bound=bound,
        )
    return merged
