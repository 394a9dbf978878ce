"""The review stage of the dataflow: flags → intake → the conversation's item (pure).

:class:`ReviewCore` runs in ``vigil scan`` and in the worker alike. For each screened (or
checked) event it builds the flag with the conversation's context turns, runs intake (policy,
tenant cap, queue reducer) against the item and the cap counter in their stores, writes back what
changed and remembers the event's masked turn as context for later flags. Its state is three
:class:`~services.dataflow.state.KeyedStore`\\ s (:class:`ReviewState`); it returns a
:class:`ReviewOutcome` that the runner counts (the scan summary, the worker's metrics).

Context keeps the last ``context_turns`` masked turns of each conversation (plus a little slack:
a claim check can come back after later turns were screened) and gives a flag the ones before
it in turn order.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from datetime import datetime

from schemas.events import ChatEvent
from schemas.outputs import Finding
from schemas.review import ReviewItem, Turn
from schemas.verdicts import GroundingReport
from services.dataflow.state import KeyedStore, ObjectCache, StateSpec
from services.review.bounds import ValueBound, decode_ring, encode_ring, ring_bytes_at_most
from services.review.caps import AdmissionDecision, CapCounter, counter_key
from services.review.evidence import make_flag, mask_turn
from services.review.intake import intake
from services.review.policy import TriagePolicy, band
from services.review.queue import Tick, Transition, apply
from services.review.settings import (
    DAY,
    DEFAULT_CACHE_BYTES,
    DEFAULT_MAX_VALUE_BYTES,
    ReviewSettings,
)

__all__ = [
    "CONTEXT_SLACK",
    "ReviewCore",
    "ReviewOutcome",
    "ReviewState",
    "review_specs",
]

#: Turns kept beyond ``context_turns``.
CONTEXT_SLACK = 2
#: Decoded context rings kept between events.
_RINGS = 1024


def review_specs(rs: ReviewSettings, policy: TriagePolicy) -> dict[str, StateSpec]:
    """The bounds and lifetimes of the review state kinds, from the settings and the policy."""
    q = policy.queue
    return {
        "review-context": StateSpec(
            kind="review-context",
            max_entries=rs.context_conversations,
            ttl_seconds=rs.context_ttl_seconds,
            max_value_bytes=rs.max_value_bytes,
            description="The last masked turns of each conversation (context of new items).",
            setting="VIGIL_REVIEW_MAX_VALUE_BYTES",
        ),
        "review-items": StateSpec(
            kind="review-items",
            max_entries=rs.max_items,
            # The queue's own lifetimes come first; this only removes what outlived them.
            ttl_seconds=(q.open_ttl_hours + q.retention_hours) * 3600 + DAY,
            max_value_bytes=rs.max_value_bytes,
            description="The review item of each flagged conversation.",
            setting="VIGIL_REVIEW_MAX_VALUE_BYTES",
        ),
        "review-caps": StateSpec(
            kind="review-caps",
            max_entries=100_000,
            ttl_seconds=2 * DAY,
            max_value_bytes=64 * 1024 + policy.caps.max_tracked_overflow * 24,
            description="New review items per tenant and hour (the tenant cap).",
            setting="the review policy's caps.max_tracked_overflow",
        ),
    }


@dataclass(slots=True)
class ReviewState:
    """The review stores of one partition (or of a scan)."""

    items: KeyedStore
    context: KeyedStore
    caps: KeyedStore

    def stores(self) -> tuple[KeyedStore, ...]:
        return (self.items, self.context, self.caps)


@dataclass(frozen=True, slots=True)
class ReviewOutcome:
    """What one flag did (``None`` from :meth:`ReviewCore.observe` when there was no flag)."""

    transition: Transition
    admission: AdmissionDecision | None


class ReviewCore:
    """Intake and context over :class:`ReviewState` (see the module docstring).

    ``max_value_bytes``: the ceiling of one item or context ring (:mod:`services.review.bounds`);
    ``cache_bytes``: of the decoded context rings kept between events.
    ``retain_originals``: keep the matched values of the policy's reveal categories beside the
    masked turn (the worker's access-controlled queue); ``vigil scan`` writes a file and keeps
    none. ``partitions``: the tenant cap is shared out over this many partitions.
    """

    def __init__(
        self,
        policy: TriagePolicy,
        *,
        key: bytes,
        max_value_bytes: int = DEFAULT_MAX_VALUE_BYTES,
        cache_bytes: int = DEFAULT_CACHE_BYTES,
        partitions: int = 1,
        retain_originals: bool = True,
    ) -> None:
        self.policy = policy
        self.key = key
        self.partitions = partitions
        self.retain_originals = retain_originals
        q = policy.queue
        self.turns = q.context_turns
        self.bound = ValueBound(max_value_bytes, q)
        self._rings = ObjectCache(
            decode_ring, encode_ring, size=_RINGS, weigh=ring_bytes_at_most, max_weight=cache_bytes
        )

    def flush(self) -> None:
        """Write the context rings changed since the last flush."""
        self._rings.flush()

    def forget_caches(self) -> None:
        self._rings.clear()

    # ------------------------------------------------------------------ items

    def item(self, st: ReviewState, conversation_id: str) -> ReviewItem | None:
        raw = st.items.get(conversation_id)
        return None if raw is None else ReviewItem.model_validate_json(raw)

    def put_item(self, st: ReviewState, conversation_id: str, item: ReviewItem | None) -> None:
        if item is None:
            st.items.pop(conversation_id, None)
        else:
            st.items[conversation_id] = self.bound.encode_item(item)[1]

    def observe(
        self,
        event: ChatEvent,
        findings: Sequence[Finding],
        report: GroundingReport | None,
        st: ReviewState,
        *,
        at: datetime,
        partition: int | None = None,
        remember: bool = True,
    ) -> ReviewOutcome | None:
        """Intake of one event's flag (if the policy gives one), then remember its turn."""
        outcome = self._flag(event, findings, report, st, at=at, partition=partition)
        if remember:
            self.remember(event, findings, st)
        return outcome

    def _flag(
        self,
        event: ChatEvent,
        findings: Sequence[Finding],
        report: GroundingReport | None,
        st: ReviewState,
        *,
        at: datetime,
        partition: int | None,
    ) -> ReviewOutcome | None:
        flag = make_flag(
            event,
            findings,
            report,
            self.policy,
            at=at,
            # Read only when the policy flags the event (most events are not flagged).
            context=_lazy(lambda: self.context_before(event, st)),
            retain_originals=self.retain_originals,
        )
        if flag is None:
            return None
        cid = event.conversation_id
        ckey = counter_key(event.tenant, partition)
        raw = st.caps.get(ckey)
        counter = CapCounter.model_validate_json(raw) if raw else None
        result = intake(
            self.item(st, cid),
            counter,
            flag,
            self.policy,
            key=self.key,
            partitions=self.partitions,
        )
        if result.admission is not None and result.counter is not None:
            st.caps[ckey] = result.counter.model_dump_json().encode()
        t = result.transition
        if t.changed:
            self.put_item(st, cid, t.item)
        return ReviewOutcome(t, result.admission)

    # ------------------------------------------------------------------ context

    def _ring(self, st: ReviewState, conversation_id: str) -> list[Turn]:
        found = self._rings.get(st.context, conversation_id)
        return list(found) if found else []

    def context_before(self, event: ChatEvent, st: ReviewState) -> list[Turn]:
        """The last ``context_turns`` remembered turns before ``event`` in turn order."""
        if not self.turns:
            return []
        earlier = [
            t
            for t in self._ring(st, event.conversation_id)
            if t.turn_index < event.turn_index and t.event_id != event.event_id
        ]
        return earlier[-self.turns :]

    def remember(self, event: ChatEvent, findings: Sequence[Finding], st: ReviewState) -> None:
        """Keep the event's masked turn as context (once per event; re-delivery changes
        nothing)."""
        if not self.turns:
            return
        ring = self._ring(st, event.conversation_id)
        if any(t.event_id == event.event_id for t in ring):
            return
        turn, _ = mask_turn(event, findings, self.policy.queue)
        ring.append(turn)
        ring.sort(key=lambda t: (t.turn_index, t.timestamp))
        kept = self.bound.fit_ring(ring[-(self.turns + CONTEXT_SLACK) :])
        self._rings.put(st.context, event.conversation_id, kept)

    # ------------------------------------------------------------------ time

    def tick(self, st: ReviewState, now: datetime) -> list[Transition]:
        """Apply the passage of time to every item in ``st``; the transitions that changed."""
        changed = []
        for cid in list(st.items):
            t = apply(self.item(st, cid), Tick(now), self.policy.queue)
            if t.changed:
                self.put_item(st, cid, t.item)
                changed.append(t)
        return changed


def _lazy(read: Callable[[], list[Turn]]) -> Iterator[Turn]:
    yield from read()


def count_outcome(stats: dict[str, int], outcome: ReviewOutcome) -> None:
    """Add one outcome to ``stats`` (the counts of ``summary.json``'s ``review``)."""
    t = outcome.transition
    if t.outcome == "overflowed":
        stats["overflowed_flags"] = stats.get("overflowed_flags", 0) + 1
        repeat = outcome.admission is not None and outcome.admission.repeat
        stats["overflowed"] = stats.get("overflowed", 0) + (0 if repeat else 1)
    else:
        stats[t.outcome] = stats.get(t.outcome, 0) + 1
    if t.outcome == "created" and t.item is not None:
        name = f"enqueued_{band(t.item.priority)}"
        stats[name] = stats.get(name, 0) + 1
        stats[t.item.admission] = stats.get(t.item.admission, 0) + 1
