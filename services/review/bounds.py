"""The byte ceiling of one review state value (``VIGIL_REVIEW_MAX_VALUE_BYTES``), pure.

A review item and a conversation's context ring are each one record of the worker's compacted
changelog, and Kafka refuses a record above the broker's ``max.message.bytes`` (and the
producer's ``max_request_size``), 1 MiB by default. The counts of the policy (turns, findings,
passages, claims, labels) bound a value only loosely: twenty long answers with their passages and
verdicts make several megabytes. :class:`ValueBound` fits a value under the ceiling, leaving out
what matters least first and never a finding:

item
    1. context turns (no highlight, no reason about them), oldest first (``dropped_turns``);
    2. then, in rounds that cut every budget by a quarter: the text of each turn around its
       highlights (:func:`~services.review.evidence.shrink_turn`: masked windows around every
       finding, ``… n characters …`` for the rest, never fewer characters than the
       highlights), the retrieved passages (shorter, finally only their document ids), the
       sentence claims of verdicts (fewer, shorter);
    3. then the oldest ``seen`` keys (never those of the item's reasons): a re-delivery of a flag
       that old could then open a new round;
    4. then label events other than each reviewer's latest (``dropped_labels``; every label is
       also an event on ``vigil.review.labels``).

    The item records that it was shortened (``trimmed``). Its reasons, findings, originals and
    current labels are never cut: a value that does not fit even so is refused by the store
    (:class:`~services.dataflow.state.StateValueTooLarge`), and the event goes to the dead-letter
    topic, not lost.

context ring
    the oldest turns first, then the same halving rounds on what is left.

Every step depends only on the value and the settings, so a replay gives the same value.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from schemas.review import ReviewItem, Turn
from services.review.evidence import ShrinkRounds, bounded_verdict, shrink_turn
from services.review.policy import QueueSettings

__all__ = [
    "Ring",
    "ValueBound",
    "decode_ring",
    "encode_ring",
    "ring_bytes_at_most",
    "turn_bytes_at_most",
]

#: JSON of one character at most (a control character escaped as ``\\u00XX``).
_BYTES_PER_CHAR = 6
#: JSON of a turn besides its texts, and of a mark besides its names (offsets, keys, enums).
_TURN_ROOM = 1024
_MARK_ROOM = 200
_GAP_ROOM = 64
_PASSAGE_ROOM = 256


def decode_ring(raw: bytes) -> list[Turn]:
    return [Turn.model_validate(t) for t in json.loads(raw)]


def encode_ring(ring: list[Turn]) -> bytes:
    return ("[" + ",".join(t.model_dump_json() for t in ring) + "]").encode()


def _encode_item(item: ReviewItem) -> bytes:
    return item.model_dump_json().encode()


def turn_bytes_at_most(t: Turn) -> int:
    """An upper bound of one turn's JSON in a ring."""
    chars = len(t.text) + sum(len(p.text) + len(p.doc_id) for p in t.passages) + len(t.event_id)
    names = sum(len(m.finding_id) + len(m.rule_id) + len(m.entity) for m in t.marks)
    return (
        (chars + names) * _BYTES_PER_CHAR
        + len(t.marks) * _MARK_ROOM
        + len(t.gaps) * _GAP_ROOM
        + len(t.passages) * _PASSAGE_ROOM
        + _TURN_ROOM
    )


def ring_bytes_at_most(ring: list[Turn]) -> int:
    """An upper bound of ``len(encode_ring(ring))``, without encoding."""
    return sum(map(turn_bytes_at_most, ring)) + len(ring) + 2


@dataclass(frozen=True, slots=True)
class Ring:
    """A context ring (oldest turn first) with each turn's :func:`turn_bytes_at_most`, so that
    adding a turn to a ring weighs only that turn; ``weight`` is :func:`ring_bytes_at_most`."""

    turns: tuple[Turn, ...]
    sizes: tuple[int, ...]
    weight: int

    @classmethod
    def of(cls, turns: list[Turn], sizes: list[int] | None = None) -> Ring:
        if sizes is None:
            sizes = [turn_bytes_at_most(t) for t in turns]
        return cls(tuple(turns), tuple(sizes), sum(sizes) + len(turns) + 2)

    @classmethod
    def decode(cls, raw: bytes) -> Ring:
        return cls.of(decode_ring(raw))

    def encode(self) -> bytes:
        return encode_ring(list(self.turns))


@dataclass(frozen=True, slots=True)
class ValueBound:
    """Fits review items and context rings under ``limit`` bytes (see the module docstring)."""

    limit: int
    queue: QueueSettings

    @property
    def rounds(self) -> ShrinkRounds:
        q = self.queue
        return ShrinkRounds(max(q.max_turn_chars, q.max_passage_chars, q.context_chars))

    def _scaled(self, value: int, level: int) -> int:
        return self.rounds.scaled(value, level)

    # ------------------------------------------------------------------ items

    def encode_item(self, item: ReviewItem) -> tuple[ReviewItem, bytes]:
        """The item as stored (shortened when it is over the ceiling) and its encoding."""
        raw = _encode_item(item)
        if len(raw) <= self.limit:
            return item, raw
        item, raw = self._drop_context(item, len(raw))
        item, raw = self.rounds.fit(item, raw, self.limit, self._shrink, _encode_item)
        while len(raw) > self.limit and (smaller := self._drop_seen(item)) is not None:
            item = smaller
            raw = _encode_item(item)
        if len(raw) > self.limit and (smaller := self._drop_labels(item)) is not None:
            item = smaller
            raw = _encode_item(item)
        return item, raw

    def _drop_context(self, item: ReviewItem, size: int) -> tuple[ReviewItem, bytes]:
        about = {r.event_id for r in item.reasons}
        turns = list(item.turns)
        over = size - self.limit
        for t in item.turns:  # oldest first
            if over <= 0:
                break
            if t.marks or t.event_id in about:
                continue
            turns.remove(t)
            over -= len(t.model_dump_json().encode()) + 1
        dropped = len(item.turns) - len(turns)
        item = item.model_copy(
            update={"turns": turns, "dropped_turns": item.dropped_turns + dropped, "trimmed": True}
        )
        return item, _encode_item(item)

    def _shrink_turns(self, turns: list[Turn], level: int) -> list[Turn]:
        q = self.queue
        return [
            shrink_turn(
                t,
                budget=self._scaled(q.max_turn_chars, level),
                context=self._scaled(q.context_chars, level),
                passage_chars=self._scaled(q.max_passage_chars, level),
            )
            for t in turns
        ]

    def _shrink(self, item: ReviewItem, level: int) -> ReviewItem:
        q = self.queue
        fewer = q.model_copy(
            update={
                "max_verdict_claims": max(1, self._scaled(q.max_verdict_claims, level)),
                "max_claim_chars": max(40, self._scaled(q.max_claim_chars, level)),
            }
        )
        return item.model_copy(
            update={
                "turns": self._shrink_turns(item.turns, level),
                "verdicts": [bounded_verdict(v, fewer) for v in item.verdicts],
            }
        )

    @staticmethod
    def _drop_seen(item: ReviewItem) -> ReviewItem | None:
        current = {r.key for r in item.reasons}
        older = [k for k in item.seen if k not in current]
        if not older:
            return None
        gone = set(older[: max(1, len(older) // 2)])
        return item.model_copy(update={"seen": [k for k in item.seen if k not in gone]})

    @staticmethod
    def _drop_labels(item: ReviewItem) -> ReviewItem | None:
        latest = {r.reviewer: r.label_id for r in item.labels}
        kept = [r for r in item.labels if latest[r.reviewer] == r.label_id]
        if len(kept) == len(item.labels):
            return None
        dropped = item.dropped_labels + len(item.labels) - len(kept)
        return item.model_copy(update={"labels": kept, "dropped_labels": dropped})

    # ------------------------------------------------------------------ context

    def fit_ring(self, ring: list[Turn], weight: int | None = None) -> list[Turn]:
        """``ring`` (oldest first) under the ceiling: the oldest turns left out first, then
        the newest ones shortened. ``weight``: ``ring_bytes_at_most(ring)`` when known."""
        if (ring_bytes_at_most(ring) if weight is None else weight) <= self.limit:
            return ring  # the common case: no encoding needed to know
        size = len(encode_ring(ring))
        while size > self.limit and len(ring) > 1:
            size -= len(ring[0].model_dump_json().encode()) + 1
            ring = ring[1:]
        ring, _ = self.rounds.fit(
            ring, encode_ring(ring), self.limit, self._shrink_turns, encode_ring
        )
        return ring
