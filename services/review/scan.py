"""The review stage in memory, for tools and tests: which items a run would enqueue.

:class:`ReviewScanner` is :class:`~services.review.core.ReviewCore` over in-memory stores with
the event time as the clock, as ``vigil scan`` runs it (which spills the same stores to disk):
``add`` each event with its findings and verdict in file order, then ``items()``. Matched values
are never kept: ``review.jsonl`` is a file on disk, not an access-controlled queue.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence

from schemas.events import ChatEvent
from schemas.outputs import Finding
from schemas.review import ReviewItem
from schemas.verdicts import GroundingReport
from services.dataflow.state import MemoryStore
from services.review.core import ReviewCore, ReviewState, count_outcome, review_specs
from services.review.policy import TriagePolicy
from services.review.settings import ReviewSettings

__all__ = ["DEFAULT_KEY", "ReviewScanner", "scan_review"]

#: Key of the overflow-sampling hash when none is given; pass ``Settings.sample_key_bytes``.
DEFAULT_KEY = b"vigil-review-scan"


class ReviewScanner:
    """Incremental: ``add`` each event, then ``items()``; ``stats`` counts every outcome
    (``created``, ``merged``, ``duplicate``, ``overflowed`` (distinct conversations),
    ``overflowed_flags``, ``enqueued_<band>``, ``sampled``, ``exempt``)."""

    def __init__(self, policy: TriagePolicy, *, key: bytes = DEFAULT_KEY) -> None:
        self.policy = policy
        rs = ReviewSettings()
        self.core = ReviewCore(
            policy,
            key=key,
            max_value_bytes=rs.max_value_bytes,
            cache_bytes=rs.cache_bytes,
            retain_originals=False,
        )
        specs = review_specs(rs, policy)
        self.state = ReviewState(
            items=MemoryStore(specs["review-items"]),
            context=MemoryStore(specs["review-context"]),
            caps=MemoryStore(specs["review-caps"]),
        )
        self.stats: Counter[str] = Counter()

    def add(
        self, event: ChatEvent, findings: Sequence[Finding], verdict: GroundingReport | None
    ) -> None:
        for store in self.state.stores():
            store.now = event.timestamp.timestamp()
        outcome = self.core.observe(event, findings, verdict, self.state, at=event.timestamp)
        if outcome is not None:
            counts: dict[str, int] = {}
            count_outcome(counts, outcome)
            self.stats.update(counts)

    def items(self) -> list[ReviewItem]:
        """The enqueued items, highest priority first, then oldest."""
        found = [ReviewItem.model_validate_json(self.state.items[k]) for k in self.state.items]
        return sorted(found, key=lambda i: (-i.priority, i.created_at, i.conversation_id))


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
