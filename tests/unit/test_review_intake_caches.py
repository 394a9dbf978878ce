"""What review intake keeps between events gives what reading the stores gives: decoded items
(served only while the store holds the same bytes, bounded), the finding rule per kind of
finding, and context rings with their size bounds."""

from __future__ import annotations

import itertools

from schemas.review import ReviewItem
from services.dataflow.state import MemoryStore
from services.review.bounds import Ring, decode_ring, encode_ring, ring_bytes_at_most
from services.review.core import ReviewCore, ReviewState, review_specs
from services.review.decoded import DecodedItems
from services.review.evidence import mask_turn
from services.review.policy import ReasonIndex
from services.review.queue import apply
from services.review.settings import ReviewSettings
from tests.unit.test_review_support import POLICY, RULES, event, finding, leak_flag


def _item(cid: str = "c1") -> tuple[ReviewItem, bytes]:
    flag = leak_flag(cid)
    item = apply(None, flag, POLICY.queue).item
    assert item is not None
    return item, item.model_dump_json().encode()


def test_decoded_items_serve_only_the_bytes_the_store_holds() -> None:
    cache, store = DecodedItems(size=4, max_bytes=1 << 20), {}
    item, raw = _item()
    cache.put(store, "c1", item, raw)
    assert store["c1"] is raw and cache.get(store, "c1") is item
    other = item.model_copy(update={"priority": 10})
    store["c1"] = other.model_dump_json().encode()  # written by someone else
    assert cache.get(store, "c1") == other
    cache.delete(store, "c1")
    assert "c1" not in store and cache.get(store, "c1") is None and cache.bytes == 0


def test_decoded_items_are_bounded_in_entries_and_bytes() -> None:
    item, raw = _item()
    by_entries, store = DecodedItems(size=2, max_bytes=1 << 20), {}
    for key in "abc":
        by_entries.put(store, key, item, raw)
    assert len(by_entries._entries) == 2 and by_entries.bytes == 2 * len(raw)
    by_bytes = DecodedItems(size=100, max_bytes=len(raw) * 3 // 2)
    for key in "abc":
        by_bytes.put(store, key, item, raw)
    assert len(by_bytes._entries) == 1 and by_bytes.bytes == len(raw)
    too_big = DecodedItems(size=100, max_bytes=len(raw) - 1)
    too_big.put(store, "a", item, raw)
    assert too_big.bytes == 0 and store["a"] is raw


def test_the_reason_index_gives_the_policys_reasons() -> None:
    index = ReasonIndex(POLICY, size=3)  # small: the memo is cleared while in use
    ev = event("Mail bob@example.com or call 0612345678, IBAN NL91ABNA0417164300, 10.0.0.1.")
    values = {"pii.email": "bob@example.com", "pii.ipv4": "10.0.0.1"}
    found = []
    for rule_id, direction in itertools.product(values, ("leak", "echo", "input", "output")):
        found.append(finding(ev, values[rule_id], rule_id, direction=direction))
    for rule_id in RULES:
        if rule_id not in values:
            found.append(finding(ev, "bob@example.com", rule_id))
    for _ in range(2):
        for f in found:
            assert index.reasons([f]) == POLICY.reasons([f])
        assert index.reasons(found) == POLICY.reasons(found)


def test_a_ring_weighs_its_turns_once_and_as_ring_bytes_at_most() -> None:
    turns = [
        mask_turn(event(f"turn {i}: bob@example.com", eid=f"e{i}", turn=i), [])[0] for i in range(4)
    ]
    ring = Ring.of(turns)
    assert ring.weight == ring_bytes_at_most(turns)
    assert Ring.decode(ring.encode()) == ring


def test_intake_with_its_caches_leaves_the_stores_as_without_them() -> None:
    """Three cores over the same events: one keeps its caches, one forgets them before every
    event (every item and ring read from the stores), one keeps them and writes after every
    event (each ring encoded again with the JSON of the turns it held); the stores end up
    equal."""
    specs = review_specs(ReviewSettings(), POLICY)

    def state() -> ReviewState:
        return ReviewState(
            items=MemoryStore(specs["review-items"]),
            context=MemoryStore(specs["review-context"]),
            caps=MemoryStore(specs["review-caps"]),
        )

    cores = [ReviewCore(POLICY, key=b"k") for _ in range(3)]
    states = [state() for _ in range(3)]
    for i in range(12):
        ev = event(
            f"Answer {i}: write to bob{i % 3}@example.com", cid=f"c{i % 2}", eid=f"e{i}", turn=i
        )
        found = [finding(ev, f"bob{i % 3}@example.com", direction="leak")]
        for core, st, mode in zip(cores, states, ("keep", "forget", "write"), strict=True):
            if mode == "forget":
                core.flush()
                core.forget_caches()
            core.observe(ev, found, None, st, at=ev.timestamp)
            if mode == "write":
                core.flush()
    for core in cores:
        core.flush()
    for kind in ("items", "context", "caps"):
        a, b, c = (getattr(st, kind) for st in states)
        assert dict(a.items()) == dict(b.items()) == dict(c.items()), kind
    for raw in states[2].context.values():
        assert encode_ring(decode_ring(raw)) == raw
