"""The byte ceiling of review state values (``services/review/bounds.py``), broker-free: the
review core over in-memory stores, as ``vigil scan`` runs it."""

from __future__ import annotations

import json
import re
from functools import cache

import pytest

from schemas.events import ChatEvent
from schemas.outputs import Finding
from schemas.review import LabelRecord, ReviewItem, Turn
from services.dataflow.state import (
    RECORD_ROOM,
    MemoryStore,
    ObjectCache,
    StateCeilingError,
    check_ceilings,
)
from services.review.bounds import ValueBound, encode_ring
from services.review.core import ReviewCore, ReviewState, review_specs
from services.review.evidence import mask_turn, shrink_turn
from services.review.settings import DEFAULT_MAX_VALUE_BYTES, ReviewSettings
from services.review.store import TableStore
from tests.support.long_conversation import email_of, long_conversation
from tests.unit.test_review_support import POLICY, event, finding

Q = POLICY.queue
LIMIT = DEFAULT_MAX_VALUE_BYTES
CID = "conv-vi-huge-01"
MARKER = re.compile(r"\n… ([\d,]+) characters …\n")


def _events() -> list[tuple[ChatEvent, list[Finding]]]:
    out = []
    for raw in long_conversation(CID):
        ev = ChatEvent.model_validate_json(json.dumps(raw))
        n = ev.turn_index // 2
        found = [finding(ev, email_of(n))] if ev.role == "assistant" else []
        out.append((ev, found))
    return out


@cache
def _run(max_value_bytes: int) -> tuple[ReviewItem, bytes, ReviewState]:
    rs = ReviewSettings(max_value_bytes=max_value_bytes)
    specs = review_specs(rs, POLICY)
    core = ReviewCore(POLICY, key=b"k", max_value_bytes=max_value_bytes)
    st = ReviewState(
        items=MemoryStore(specs["review-items"]),
        context=MemoryStore(specs["review-context"]),
        caps=MemoryStore(specs["review-caps"]),
    )
    for ev, found in _events():
        core.observe(ev, found, None, st, at=ev.timestamp)
        core.flush()
    raw = st.items[CID]
    return ReviewItem.model_validate_json(raw), raw, st


def _visible(item: ReviewItem) -> dict[str, str]:
    """finding id → the text a reviewer sees at its highlight."""
    return {m.finding_id: t.text[m.start : m.end] for t in item.turns for m in t.marks}


def test_a_conversation_of_55_kb_answers_fits_the_ceiling_and_shows_every_finding() -> None:
    unbounded, raw_unbounded, _ = _run(64 * 1024 * 1024)
    assert len(raw_unbounded) > LIMIT  # the case the ceiling is for
    assert not unbounded.trimmed

    item, raw, st = _run(LIMIT)
    assert len(raw) <= LIMIT and item.trimmed
    assert len(item.findings) == len(unbounded.findings) == 20
    seen = _visible(item)
    for f in item.findings:  # every finding, the late e-mail of every answer included
        assert seen[f.finding_id] == f.evidence == "[EMAIL_ADDRESS]"
    shown = "".join(t.text for t in item.turns)  # values only in ``originals`` (reveal role)
    assert not any(email_of(n) in shown for n in range(20))
    last = next(t for t in reversed(item.turns) if t.marks)
    assert last.truncated and MARKER.search(last.text)
    # What is left out is counted in characters of the original message.
    ev = next(e for e, _ in _events() if e.event_id == last.event_id)
    masked_len = len(ev.content) - len(email_of(19)) + len("[EMAIL_ADDRESS]")
    kept = len(last.text) - sum(g.end - g.start for g in last.gaps)
    assert kept + sum(g.omitted for g in last.gaps) == masked_len
    # Context rings obey the same ceiling.
    assert all(len(st.context[k]) <= LIMIT for k in st.context)


def _long_turn(chars: int = 50_000) -> tuple[ChatEvent, Turn]:
    body = "word " * (chars // 5)
    content = body[: chars // 2] + "mail a.b@example.org now " + body[chars // 2 :]
    ev = event(content, turn=3)
    turn, _ = mask_turn(ev, [finding(ev, "a.b@example.org")], Q)
    return ev, turn


def _original_chars(turn: Turn) -> int:
    return (
        len(turn.text) - sum(g.end - g.start for g in turn.gaps) + sum(g.omitted for g in turn.gaps)
    )


@pytest.mark.parametrize("budget", [2000, 300, 0])
def test_shortening_again_keeps_the_marks_and_counts_what_the_old_gaps_stood_for(
    budget: int,
) -> None:
    ev, turn = _long_turn()
    masked_len = len(ev.content) - len("a.b@example.org") + len("[EMAIL_ADDRESS]")
    assert turn.gaps and _original_chars(turn) == masked_len
    again = shrink_turn(turn, budget=budget, context=budget // 8, passage_chars=0)
    assert len(again.text) < len(turn.text) and again.truncated
    assert _original_chars(again) == masked_len
    (mark,) = again.marks
    assert again.text[mark.start : mark.end] == "[EMAIL_ADDRESS]"
    for g in again.gaps:  # every gap is one whole marker saying what it stands for
        assert MARKER.fullmatch(again.text[g.start : g.end])
        assert again.text[g.start : g.end] == f"\n… {g.omitted:,} characters …\n"
    assert len(MARKER.findall(again.text)) == len(again.gaps)


def test_a_context_ring_over_the_ceiling_drops_its_oldest_turns_first() -> None:
    _, turn = _long_turn(60_000)
    bound = ValueBound(32 * 1024, Q.model_copy(update={"max_turn_chars": 20_000}))
    ring = [
        turn.model_copy(
            update={"event_id": f"e{i}", "turn_index": i, "text": turn.text + "ồ" * 4000}
        )
        for i in range(4)
    ]
    kept = bound.fit_ring(ring)
    assert len(encode_ring(kept)) <= 32 * 1024
    assert kept and kept[-1].event_id == "e3"
    assert [t.event_id for t in kept] == [t.event_id for t in ring[-len(kept) :]]
    small = ring[:1]
    small = [small[0].model_copy(update={"text": "short", "marks": [], "gaps": []})]
    assert bound.fit_ring(small) is small  # nothing to do: not even encoded


def _labelled(item: ReviewItem, n: int) -> ReviewItem:
    labels = [
        LabelRecord.model_validate(
            {
                "label_id": f"{item.item_id}:label:{i}",
                "reviewer": ("ann", "bob")[i % 2],
                "at": item.created_at.isoformat(),
                "stage": 1,
                "decision": {"note": "n" * 3900, "expected_answer": "ồ" * 8000},
            }
        )
        for i in range(n)
    ]
    return item.model_copy(update={"labels": labels, "label_id": labels[-1].label_id})


def test_keys_and_labels_go_last_and_each_reviewers_latest_label_stays() -> None:
    item, _, _ = _run(LIMIT)
    keys = [f"old_reason:finding-{i:05d}-{'x' * 40}" for i in range(4000)]
    big = _labelled(item.model_copy(update={"seen": [*keys, *item.seen]}), 10)
    fitted, raw = ValueBound(LIMIT, Q).encode_item(big)
    assert len(raw) <= LIMIT
    assert {r.key for r in item.reasons} <= set(fitted.seen)
    latest = {r.reviewer: r.label_id for r in big.labels}
    assert {r.label_id for r in fitted.labels} >= set(latest.values())
    assert fitted.dropped_labels == len(big.labels) - len(fitted.labels)
    assert [f.finding_id for f in fitted.findings] == [f.finding_id for f in item.findings]


def test_the_api_store_writes_items_under_the_ceiling() -> None:
    unbounded, _, _ = _run(64 * 1024 * 1024)
    table: dict[str, bytes] = {}

    async def send(**_: object) -> None:
        return None

    bound = ValueBound(LIMIT, Q)
    store = TableStore(table, actions=send, labels=send, encode=bound.encode_item)
    store.put(CID, unbounded)
    assert len(table[CID]) <= LIMIT
    got = store.get(CID)
    assert got is not None and got.trimmed and json.loads(table[CID])["trimmed"]


def test_the_ceiling_is_checked_against_the_producer_and_bounded_below() -> None:
    specs = review_specs(ReviewSettings(max_value_bytes=LIMIT), POLICY)
    assert specs["review-items"].max_value_bytes == LIMIT
    assert specs["review-context"].max_value_bytes == LIMIT
    check_ceilings(specs.values(), 1_000_000)  # the defaults fit the producer's default
    big = review_specs(ReviewSettings(max_value_bytes=1_000_000 - RECORD_ROOM + 1), POLICY)
    with pytest.raises(
        StateCeilingError, match=r"review-items.*max_request_size.*VIGIL_REVIEW_MAX_VALUE_BYTES"
    ):
        check_ceilings(big.values(), 1_000_000)
    with pytest.raises(ValueError):
        ReviewSettings(max_value_bytes=1024)


def test_the_caches_of_decoded_values_are_bounded_in_bytes_and_lose_nothing() -> None:
    cache = ObjectCache(bytes, bytes, size=100, weigh=len, max_weight=1000)
    store: dict[str, bytes] = {}
    for i in range(10):
        cache.put(store, f"k{i}", b"x" * 300)
        assert cache.weight <= 1000
    cache.flush()
    assert sorted(store) == [f"k{i}" for i in range(10)]  # pushed out = written first

    unbounded, _, _ = _run(64 * 1024 * 1024)
    bound = ValueBound(LIMIT, Q)

    async def send(**_: object) -> None:
        return None

    table: dict[str, bytes] = {}
    api = TableStore(table, actions=send, labels=send, encode=bound.encode_item, cache_bytes=LIMIT)
    for i in range(5):
        api.put(f"c{i}", unbounded.model_copy(update={"conversation_id": f"c{i}"}))
    assert api._cached_bytes <= LIMIT and len(table) == 5
    assert all(api.get(f"c{i}") is not None for i in range(5))
