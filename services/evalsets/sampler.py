"""Stratified, keyed bottom-k sampling of conversations per period (SPEC §9).

Strata
    A conversation of a period falls in the stratum ``(flag, language, tenant)``. ``flag`` is the
    highest-priority finding category seen in the conversation during the period
    (:data:`~services.evalsets.config.DEFAULT_CATEGORY_PRIORITY`: medical > secret > pii >
    prompt_leak > grounding > abstention), or ``unflagged`` when it has none. ``language`` is the
    base language of its first event that carries one (``und`` if none), ``tenant`` likewise
    (``-`` if none). Flags only accumulate, so a conversation only ever moves *up*.

Bottom-k with a keyed hash
    Each conversation gets a priority ``u = hash(salt_period, conversation_id)`` uniform on
    ``[0, 1)``; a stratum of capacity ``k`` keeps its ``k`` members with the smallest ``u``. With
    independent uniform priorities this *is* a simple random sample without replacement of size
    ``min(k, N)`` — the same distribution as reservoir sampling — so a member's inclusion
    probability is ``k / N``. Unlike a reservoir, the result depends only on *which*
    conversations arrived, not on their order or on repeats: re-delivery, restarts and
    per-partition processing give the same sample.

Rotating salt
    ``salt_period = HMAC-SHA256(secret, "vigil.evalset.v1\\0" + period)``. Whoever holds the secret
    can recompute every period's membership; nobody else can predict it; priorities of different
    periods are independent, so a conversation that spans two periods is in both samples only by
    chance (probability ``π₁ · π₂``).

Moves and the reserve
    When a conversation gains a higher-priority flag it leaves its old stratum. Each stratum keeps
    ``k + reserve`` candidates: exactly its members whose ``(u, id)`` lies below ``bound`` (the
    first candidate ever evicted). As long as at least ``k`` candidates remain the sample is still
    the exact bottom-k. If more than ``reserve`` kept members leave, the stratum degrades to a
    threshold sample (every member with ``u`` below ``bound``), whose inclusion probability is
    ``bound``; :class:`Selection` reports it.

Inclusion probability while open
    ``N`` keeps growing until the period closes, so ``k / N`` is an upper estimate until
    :meth:`EvalsetSampler.close` (``inclusion_final`` false).

State
    :class:`PeriodState` (per period: strata with populations and candidates, a few KiB) and one
    :class:`MemberRecord` per conversation and period (where it was counted, its sources). Both are
    pydantic models; the sampler takes any ``MutableMapping`` for them, so a ``dict`` serves
    ``vigil scan`` and Faust tables serve the workers (write the value back after a change).
"""

from __future__ import annotations

import hmac
from collections.abc import Iterable, MutableMapping, Sequence
from typing import Final

from schemas.evalset import UNFLAGGED, FlagStratum, SourceRef
from schemas.events import ChatEvent
from schemas.outputs import Finding
from services.evalsets.config import EvalsetConfig
from services.evalsets.periods import kind_of, period_of, periods_order_key
from services.evalsets.state import (
    AddResult,
    ConversationSummary,
    KeptEntry,
    MemberRecord,
    PeriodState,
    Selection,
    StratumState,
    member_key,
    merge_states,
    select,
)
from services.evalsets.tables import keys_with_prefix
from services.sampling import Sampler

__all__ = [
    "SALT_DOMAIN",
    "AddResult",
    "ConversationSummary",
    "EvalsetSampler",
    "KeptEntry",
    "MemberRecord",
    "PeriodState",
    "Selection",
    "StratumState",
    "flag_of",
    "member_key",
    "merge_states",
    "period_salt",
    "priority",
    "select",
    "stratum_key",
    "summary_from_event",
]

SALT_DOMAIN: Final = b"vigil.evalset.v1\x00"
NO_LANGUAGE: Final = "und"
NO_TENANT: Final = "-"
OTHER: Final = "other"


def period_salt(secret: bytes, period: str) -> bytes:
    """The period's salt: ``HMAC-SHA256(secret, SALT_DOMAIN + period)``."""
    if not isinstance(secret, bytes | bytearray) or not secret:
        raise ValueError("the evaluation-set secret must be non-empty bytes")
    kind_of(period)
    return hmac.digest(bytes(secret), SALT_DOMAIN + period.encode("ascii"), "sha256")


def priority(salt: bytes, conversation_id: str) -> float:
    """The conversation's priority in ``[0, 1)`` under ``salt`` (53-bit keyed hash)."""
    return Sampler(salt, 1.0).unit(conversation_id)


def summary_from_event(
    event: ChatEvent,
    findings: Iterable[Finding],
    source: SourceRef | None,
    config: EvalsetConfig,
    *,
    period: str | None = None,
) -> ConversationSummary:
    """The summary of one screened (and possibly checked) event (``period``: the event's
    period, when the caller has it already)."""
    return ConversationSummary(
        conversation_id=event.conversation_id,
        period=period if period is not None else period_of(event.timestamp, config.period_kind),
        categories=frozenset(f.category for f in findings),
        language=event.base_language,
        tenant=event.tenant,
        sources=(source,) if source is not None else (),
    )


def flag_of(categories: Iterable[str], order: Sequence[str]) -> FlagStratum:
    """The highest-priority category in ``categories`` by ``order``, else ``unflagged``."""
    present = set(categories)
    for category in order:
        if category in present:
            return category  # type: ignore[return-value]
    return UNFLAGGED


def _bucket(value: str | None, allowed: frozenset[str] | None, missing: str) -> str:
    if value is None:
        return missing
    value = value.replace("|", "_")
    return value if allowed is None or value in allowed else OTHER


def stratum_key(flag: str, language: str | None, tenant: str | None, config: EvalsetConfig) -> str:
    """``<flag>|<language>|<tenant>`` with unknowns and unlisted values bucketed."""
    lang = _bucket(language.lower() if language else None, config.languages, NO_LANGUAGE)
    return f"{flag}|{lang}|{_bucket(tenant, config.tenants, NO_TENANT)}"


def _merge(
    record: MemberRecord | None,
    summary: ConversationSummary,
    prio: float,
    config: EvalsetConfig,
) -> MemberRecord:
    if (
        record is not None
        and summary.categories.issubset(record.categories)
        and (record.language or summary.language is None)
        and (record.tenant or summary.tenant is None)
        and set(summary.sources).issubset(record.sources)
    ):
        return record  # nothing new: the idempotent fast path
    categories = set(summary.categories) | set(record.categories if record else ())
    language = record.language if record and record.language else summary.language
    tenant = record.tenant if record and record.tenant else summary.tenant
    sources = list(record.sources) if record else []
    known = set(sources)
    dropped = record.sources_dropped if record else 0
    for src in summary.sources:
        if src in known:
            continue
        known.add(src)
        if len(sources) < config.max_sources:
            sources.append(src)
        else:
            dropped += 1  # not idempotent past the cap: a re-delivered drop counts again
    flag = flag_of(categories, config.category_priority)
    # Validated, although every part already was: pydantic builds a model this small faster
    # than model_construct does (and a bug cannot store a record it would refuse to read).
    return MemberRecord(
        stratum=stratum_key(flag, language, tenant, config),
        priority=prio,
        categories=tuple(sorted(categories)),
        language=language,
        tenant=tenant,
        sources=tuple(sources),
        sources_dropped=dropped,
    )


class EvalsetSampler:
    """The sampler over all periods: routes summaries to their period and keeps the state.

    ``states`` maps a state key (the period, or ``<period>#<shard>``) to :class:`PeriodState`;
    ``members`` maps :func:`member_key` to :class:`MemberRecord`. Both default to dicts.

    >>> s = EvalsetSampler(EvalsetConfig(), b"secret")
    >>> first = ConversationSummary(conversation_id="c1", period="2026-W45", language="nl")
    >>> r = s.add(first)
    >>> r.stratum, r.admitted, s.add(first).changed
    ('unflagged|nl|-', ['c1'], False)
    >>> s.add(first.model_copy(update={"categories": frozenset({"pii"})})).stratum
    'pii|nl|-'
    """

    def __init__(
        self,
        config: EvalsetConfig,
        secret: bytes,
        states: MutableMapping[str, PeriodState] | None = None,
        members: MutableMapping[str, MemberRecord] | None = None,
        *,
        shard: str | None = None,
    ) -> None:
        if not isinstance(secret, bytes | bytearray) or not secret:
            raise ValueError("the evaluation-set secret must be non-empty bytes")
        self.config = config
        self._secret = bytes(secret)
        self._units: dict[str, Sampler] = {}
        self.states: MutableMapping[str, PeriodState] = {} if states is None else states
        self.members: MutableMapping[str, MemberRecord] = {} if members is None else members
        self.shard = shard

    def __repr__(self) -> str:  # never shows the secret
        return f"EvalsetSampler(period_kind={self.config.period_kind!r}, shard={self.shard!r})"

    def priority(self, period: str, conversation_id: str) -> float:
        """The conversation's priority in ``period`` (see :func:`priority`)."""
        unit = self._units.get(period)
        if unit is None:
            unit = self._units[period] = Sampler(period_salt(self._secret, period), 1.0)
        return unit.unit(conversation_id)

    def state_key(self, period: str) -> str:
        return period if self.shard is None else f"{period}#{self.shard}"

    def state(self, period: str) -> PeriodState | None:
        return self.states.get(self.state_key(period))

    def periods(self) -> list[str]:
        """Periods with state, oldest first."""
        found = {key.split("#", 1)[0] for key in self.states}
        return sorted(found, key=periods_order_key)

    def _stratum(self, state: PeriodState, key: str) -> StratumState:
        if key not in state.strata:
            flag = key.split("|", 1)[0]
            state.strata[key] = StratumState(
                capacity=self.config.capacity(flag), reserve=self.config.reserve_for(flag)
            )
        return state.strata[key]

    def add(self, summary: ConversationSummary) -> AddResult:
        """Merge one summary into the period's sample. Idempotent: a repeat changes nothing."""
        period, cid = summary.period, summary.conversation_id
        if kind_of(period) != self.config.period_kind:
            raise ValueError(f"period {period!r} is not a {self.config.period_kind} period")
        skey = self.state_key(period)
        state = self.states.get(skey) or PeriodState(period=period)
        mkey = member_key(period, cid)
        record = self.members.get(mkey)
        if state.closed:
            if record is None or _merge(record, summary, record.priority, self.config) != record:
                state.late_after_close += 1
                self.states[skey] = state
            return AddResult(
                period=period,
                conversation_id=cid,
                accepted=False,
                changed=False,
                stratum=record.stratum if record else None,
            )
        prio = record.priority if record else self.priority(period, cid)
        merged = _merge(record, summary, prio, self.config)
        if merged is record:
            return AddResult(
                period=period,
                conversation_id=cid,
                accepted=True,
                changed=False,
                stratum=merged.stratum,
            )
        self.members[mkey] = merged
        if record is not None and record.stratum == merged.stratum:
            # Only sources or categories below the top one changed: the sample is unchanged.
            return AddResult(
                period=period,
                conversation_id=cid,
                accepted=True,
                changed=True,
                stratum=merged.stratum,
                previous_stratum=record.stratum,
            )
        entry = KeptEntry(priority=prio, conversation_id=cid)
        # Who is selected before and after, from what the move changed (not from a comparison
        # of the strata's whole selections): a conversation is a candidate of one stratum only.
        into = self._stratum(state, merged.stratum)
        left = pulled = None
        if record is not None:
            left, pulled = self._stratum(state, record.stratum).remove(entry)
        joined, pushed = into.insert(entry)
        before = {c for c in (left, pushed) if c is not None}
        after = {c for c in (pulled, joined) if c is not None}
        self.states[skey] = state
        return AddResult(
            period=period,
            conversation_id=cid,
            accepted=True,
            changed=True,
            stratum=merged.stratum,
            previous_stratum=record.stratum if record else None,
            admitted=sorted(after - before),
            evicted=sorted(before - after),
        )

    def close(self, period: str) -> None:
        """Mark the period closed: populations are final, late summaries are refused."""
        state = self.state(period)
        if state is None:
            state = PeriodState(period=period)
        state.closed = True
        self.states[self.state_key(period)] = state

    def selection(self, period: str) -> list[Selection]:
        """The selected conversations of ``period`` (this shard), by stratum then priority."""
        state = self.state(period)
        return [] if state is None else select(state, self.members)

    def forget(self, period: str) -> int:
        """Drop the state and member records of a retired period; returns records dropped.

        Call only after the period's cases are archived (``services.evalsets.rotation``).
        """
        self.states.pop(self.state_key(period), None)
        prefix = f"{period}|"
        doomed = keys_with_prefix(self.members, prefix)
        for key in doomed:
            del self.members[key]
        return len(doomed)
