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

import math
from collections import OrderedDict
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from datetime import datetime

from schemas.events import ChatEvent
from schemas.outputs import Finding
from schemas.review import ReviewItem, Turn
from schemas.verdicts import GroundingReport
from services.dataflow.state import KeyedStore, ObjectCache, StateSpec
from services.review.bounds import Ring, ValueBound, turn_bytes_at_most
from services.review.caps import AdmissionDecision, CapCounter, counter_key
from services.review.decoded import DecodedItems
from services.review.evidence import make_flag, mask_turn
from services.review.intake import intake
from services.review.policy import ReasonIndex, TriagePolicy, band
from services.review.queue import Tick, Transition, apply, next_due
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
#: Decoded review items kept between flags, and the share of ``cache_bytes`` they may take.
_ITEMS = 256
#: Items whose next due moment :meth:`ReviewCore.tick` remembers (all partitions together;
#: ~250 bytes each). Beyond it, a tick decodes the others as before.
DEFAULT_DUE_ENTRIES = 50_000
_ITEMS_SHARE = 8


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
    ``cache_bytes``: of the decoded context rings kept between events (and an eighth of it for
    the decoded items, :class:`~services.review.decoded.DecodedItems`).
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
        due_entries: int = DEFAULT_DUE_ENTRIES,
    ) -> None:
        self.policy = policy
        self.key = key
        self.partitions = partitions
        self.retain_originals = retain_originals
        q = policy.queue
        self.turns = q.context_turns
        self.bound = ValueBound(max_value_bytes, q)
        self._rings = ObjectCache(
            Ring.decode, Ring.encode, size=_RINGS, weigh=_weight, max_weight=cache_bytes
        )
        self._items = DecodedItems(_ITEMS, max(1 << 20, cache_bytes // _ITEMS_SHARE))
        self._reasons = ReasonIndex(policy)
        #: (store, conversation) -> (digest of the item's bytes, when a tick next changes it),
        #: for :meth:`tick`; at most ``due_entries``, the least recently seen out.
        self._dues: OrderedDict[tuple[int, str], tuple[int, float]] = OrderedDict()
        self._dues_size = due_entries

    def flush(self) -> None:
        """Write the context rings changed since the last flush."""
        self._rings.flush()

    def forget_caches(self) -> None:
        self._rings.clear()
        self._items.clear()
        self._dues.clear()

    # ------------------------------------------------------------------ items

    def item(self, st: ReviewState, conversation_id: str) -> ReviewItem | None:
        return self._items.get(st.items, conversation_id)

    def item_of(self, st: ReviewState, conversation_id: str, raw: bytes) -> ReviewItem:
        """The item ``st`` holds as ``raw`` (bytes a scan read already: no second read)."""
        return self._items.of(st.items, conversation_id, raw)

    def put_item(self, st: ReviewState, conversation_id: str, item: ReviewItem | None) -> None:
        if item is None:
            self._items.delete(st.items, conversation_id)
        else:
            self._items.put(st.items, conversation_id, *self.bound.encode_item(item))

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
        masked = _Masked(event, findings, self.policy)
        outcome = self._flag(event, findings, report, st, at=at, partition=partition, masked=masked)
        if remember:
            self.remember(event, findings, st, masked=masked)
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
        masked: _Masked,
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
            masked=masked,
            reasons_of=self._reasons.reasons,
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

    def _ring(self, st: ReviewState, conversation_id: str) -> Ring | None:
        found: Ring | None = self._rings.get(st.context, conversation_id)
        return found

    def context_before(self, event: ChatEvent, st: ReviewState) -> list[Turn]:
        """The last ``context_turns`` remembered turns before ``event`` in turn order."""
        if not self.turns:
            return []
        ring = self._ring(st, event.conversation_id)
        earlier = [
            t
            for t in (ring.turns if ring else ())
            if t.turn_index < event.turn_index and t.event_id != event.event_id
        ]
        return earlier[-self.turns :]

    def remember(
        self,
        event: ChatEvent,
        findings: Sequence[Finding],
        st: ReviewState,
        *,
        masked: Callable[[], tuple[Turn, dict[str, str]]] | None = None,
    ) -> None:
        """Keep the event's masked turn as context (once per event; re-delivery changes
        nothing). ``masked``: gives ``mask_turn`` of this event and findings, when known."""
        if not self.turns:
            return
        ring = self._ring(st, event.conversation_id)
        if ring is not None and any(t.event_id == event.event_id for t in ring.turns):
            return
        q = self.policy.queue
        turn = masked()[0] if masked is not None else mask_turn(event, findings, q)[0]
        # Each turn travels with its size bound (weighed once, when it is masked).
        pairs = [*zip(ring.turns, ring.sizes, strict=True)] if ring is not None else []
        pairs.append((turn, turn_bytes_at_most(turn)))
        pairs.sort(key=lambda p: (p[0].turn_index, p[0].timestamp))
        pairs = pairs[-(self.turns + CONTEXT_SLACK) :]
        turns = [t for t, _ in pairs]
        sizes = [n for _, n in pairs]
        weight = sum(sizes) + len(sizes) + 2
        kept = self.bound.fit_ring(turns, weight)
        fitted = Ring(tuple(turns), tuple(sizes), weight) if kept is turns else Ring.of(kept)
        self._rings.put(st.context, event.conversation_id, fitted)

    # ------------------------------------------------------------------ time

    def tick(self, st: ReviewState, now: datetime) -> list[Transition]:
        """Apply the passage of time to every item in ``st``; the transitions that changed.

        An item a tick left unchanged is remembered with a digest of its stored bytes and the
        moment it is next due (:func:`~services.review.queue.next_due`); later ticks decode it
        again only when it is due or its bytes changed (a flag merged, a reviewer's action
        through the API). So a tick reads the items' bytes, not every item into a model: with
        thousands of items waiting, decoding them all every minute grew the worker's cost per
        event along a run (``BENCHMARKS.md`` section 8). It reads them one at a time
        (:meth:`~services.dataflow.state.KeyedStore.stream_prefix`) and writes the changed ones
        after the pass: a snapshot of every item's bytes made the worker's RSS jump by twice the
        partition's items each minute (section 11)."""
        changed: list[tuple[str, Transition]] = []
        moment = now.timestamp()
        store = id(st.items)
        dues = self._dues
        for cid, raw in st.items.stream_prefix(""):
            ident = (store, cid)
            digest = hash(raw)
            known = dues.get(ident)
            if known is not None and known[0] == digest and moment < known[1]:
                dues.move_to_end(ident)
                continue
            t = apply(self.item_of(st, cid, raw), Tick(now), self.policy.queue)
            if t.changed:
                dues.pop(ident, None)
                changed.append((cid, t))
            elif t.item is not None:
                due = next_due(t.item, self.policy.queue)
                dues[ident] = (digest, due.timestamp() if due is not None else math.inf)
                dues.move_to_end(ident)
                if len(dues) > self._dues_size:
                    dues.popitem(last=False)
        for cid, t in changed:  # the stream is consumed: the store may be written
            self.put_item(st, cid, t.item)
        return [t for _, t in changed]


def _lazy(read: Callable[[], list[Turn]]) -> Iterator[Turn]:
    yield from read()


def _weight(ring: Ring) -> int:
    return ring.weight


class _Masked:
    """``mask_turn`` of one event and its findings, computed at most once: the flag and the
    context ring of the same event need the same masked turn."""

    __slots__ = ("event", "findings", "policy", "value")

    def __init__(self, event: ChatEvent, findings: Sequence[Finding], policy: TriagePolicy) -> None:
        self.event = event
        self.findings = findings
        self.policy = policy
        self.value: tuple[Turn, dict[str, str]] | None = None

    def __call__(self) -> tuple[Turn, dict[str, str]]:
        if self.value is None:
            self.value = mask_turn(self.event, self.findings, self.policy.queue)
        return self.value


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
