"""The review queue in ``vigil scan``: which items a run would enqueue, under the same policy.

:class:`ReviewScanner` takes events one at a time with their findings and verdict (the order of
the file), keeps the last few masked turns per conversation as context, and runs the same intake
(policy, cap, reducer) as the worker, with the event time as the clock. Matched values are never
kept: ``review.jsonl`` is a file on disk, not an access-controlled queue.
"""

from __future__ import annotations

from collections import Counter, OrderedDict, defaultdict, deque
from collections.abc import Iterable, Sequence

from schemas.events import ChatEvent
from schemas.outputs import Finding
from schemas.review import ReviewItem, Turn
from schemas.verdicts import GroundingReport
from services.review.caps import CapCounter
from services.review.evidence import make_flag, mask_turn
from services.review.intake import intake
from services.review.policy import TriagePolicy, band

__all__ = ["DEFAULT_KEY", "ReviewScanner", "scan_review"]

#: Key of the overflow-sampling hash when none is given; pass ``Settings.sample_key_bytes``.
DEFAULT_KEY = b"vigil-review-scan"
MAX_CONTEXT_CONVERSATIONS = 100_000


class ReviewScanner:
    """Incremental: ``add`` each event, then ``items()``; ``stats`` counts every outcome."""

    def __init__(self, policy: TriagePolicy, *, key: bytes = DEFAULT_KEY) -> None:
        self.policy = policy
        self.key = key
        self._items: dict[str, ReviewItem] = {}
        self._counters: dict[str | None, CapCounter] = {}
        self._context: OrderedDict[str, deque[Turn]] = OrderedDict()
        #: ``created``, ``merged``, ``duplicate``, ``overflowed`` (distinct conversations),
        #: ``overflowed_flags``, ``enqueued_<band>``, ``sampled``, ``exempt``.
        self.stats: Counter[str] = Counter()

    def add(
        self, event: ChatEvent, findings: Sequence[Finding], verdict: GroundingReport | None
    ) -> None:
        cid = event.conversation_id
        context = self._context.get(cid)
        flag = make_flag(
            event,
            findings,
            verdict,
            self.policy,
            at=event.timestamp,
            context=list(context or ()),
            retain_originals=False,
        )
        if flag is not None:
            result = intake(
                self._items.get(cid),
                self._counters.get(event.tenant),
                flag,
                self.policy,
                key=self.key,
            )
            t = result.transition
            if result.counter is not None:
                self._counters[event.tenant] = result.counter
            if t.item is not None and t.changed:
                self._items[cid] = t.item
            if t.outcome == "overflowed":
                self.stats["overflowed_flags"] += 1
                repeat = result.admission is not None and result.admission.repeat
                self.stats["overflowed"] += 0 if repeat else 1
            else:
                self.stats[t.outcome] += 1
            if t.outcome == "created" and t.item is not None:
                self.stats[f"enqueued_{band(t.item.priority)}"] += 1
                self.stats[t.item.admission] += 1
        self._remember(event, findings)

    def _remember(self, event: ChatEvent, findings: Sequence[Finding]) -> None:
        size = self.policy.queue.context_turns
        if size == 0:
            return
        cid = event.conversation_id
        turn, _ = mask_turn(event, findings, max_chars=self.policy.queue.max_turn_chars)
        ring = self._context.get(cid)
        if ring is None:
            ring = self._context[cid] = deque(maxlen=size)
            if len(self._context) > MAX_CONTEXT_CONVERSATIONS:
                self._context.popitem(last=False)
        else:
            self._context.move_to_end(cid)
        ring.append(turn)

    def items(self) -> list[ReviewItem]:
        """The enqueued items, highest priority first, then oldest."""
        return sorted(
            self._items.values(), key=lambda i: (-i.priority, i.created_at, i.conversation_id)
        )


def scan_review(
    findings: Iterable[Finding],
    verdicts: Iterable[GroundingReport],
    events: Iterable[ChatEvent],
    policy: TriagePolicy,
    *,
    key: bytes = DEFAULT_KEY,
) -> list[ReviewItem]:
    """The review items a scan of ``events`` enqueues (events in file order)."""
    by_event: defaultdict[str, list[Finding]] = defaultdict(list)
    for f in findings:
        by_event[f.event_id].append(f)
    reports = {v.event_id: v for v in verdicts}
    scanner = ReviewScanner(policy, key=key)
    for event in events:
        scanner.add(event, by_event.get(event.event_id, []), reports.get(event.event_id))
    return scanner.items()
