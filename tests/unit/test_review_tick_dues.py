"""The review timer decodes only what is due or changed: :func:`next_due` is the first moment a
tick changes an item (never earlier), and :meth:`ReviewCore.tick` skips an item whose bytes are
those it left and whose due moment has not come, yet sees an item the review API rewrote."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest

from schemas.review import ReviewAction, ReviewItem
from services.dataflow.state import MemoryStore
from services.review.core import ReviewCore, ReviewState, review_specs
from services.review.queue import Tick, apply, next_due
from services.review.settings import ReviewSettings
from tests.unit.test_review_support import POLICY, at, leak_flag

Q = POLICY.queue


def _open(cid: str = "c1", minutes: float = 0) -> ReviewItem:
    item = apply(None, leak_flag(cid, f"{cid}-e1", minutes=minutes), Q).item
    assert item is not None
    return item


def _act(item: ReviewItem, kind: str, minutes: float, **kw: Any) -> ReviewItem:
    action = ReviewAction(
        action_id=f"a-{kind}-{minutes}",
        kind=kind,  # type: ignore[arg-type]
        conversation_id=item.conversation_id,
        item_id=item.item_id,
        reviewer="ann",
        at=at(minutes),
        **kw,
    )
    t = apply(item, action, Q)
    assert t.item is not None and t.rejection is None, t
    return t.item


def _items() -> list[ReviewItem]:
    opened = _open()
    claimed = _act(opened, "claim", 5, lease_seconds=600)
    assigned = _act(opened, "assign", 5, assignee="bob", assignment_hours=2)
    expired = apply(opened, Tick(opened.expires_at + timedelta(seconds=1)), Q).item
    assert expired is not None and expired.status == "expired"
    return [opened, claimed, assigned, expired]


@pytest.mark.parametrize("index", range(4))
def test_no_tick_before_the_due_moment_changes_an_item_and_one_at_it_does(index: int) -> None:
    item = _items()[index]
    due = next_due(item, Q)
    assert due is not None
    span = due - item.updated_at
    for share in (0.0, 0.25, 0.5, 0.9, 0.999):
        moment = item.updated_at + span * share
        assert not apply(item, Tick(moment), Q).changed, (item.status, share)
    assert apply(item, Tick(due), Q).changed


def _state() -> ReviewState:
    specs = review_specs(ReviewSettings(), POLICY)
    return ReviewState(
        items=MemoryStore(specs["review-items"]),
        context=MemoryStore(specs["review-context"]),
        caps=MemoryStore(specs["review-caps"]),
    )


class Counting(ReviewCore):
    """Counts the items a tick reads into a model."""

    def __init__(self) -> None:
        super().__init__(POLICY, key=b"k")
        self.decoded: list[str] = []

    def item(self, st: ReviewState, conversation_id: str) -> ReviewItem | None:
        self.decoded.append(conversation_id)
        return super().item(st, conversation_id)

    def item_of(self, st: ReviewState, conversation_id: str, raw: bytes) -> ReviewItem:
        self.decoded.append(conversation_id)
        return super().item_of(st, conversation_id, raw)


def test_a_tick_decodes_only_what_is_due_or_was_rewritten() -> None:
    core, st = Counting(), _state()
    items = {f"c{i}": _open(f"c{i}", minutes=i) for i in range(20)}
    for cid, item in items.items():
        core.put_item(st, cid, item)
    now = at(30)
    assert core.tick(st, now) == [] and len(core.decoded) == 20
    core.decoded.clear()
    assert core.tick(st, now + timedelta(minutes=1)) == [] and core.decoded == []

    # the review API claims one (its own write, not through the core): seen at the next tick,
    # and its lease lapses at its own moment, long before any item expires
    claimed = _act(items["c3"], "claim", 31, lease_seconds=120)
    st.items["c3"] = claimed.model_dump_json().encode()
    assert core.tick(st, at(32)) == [] and core.decoded == ["c3"]
    core.decoded.clear()
    assert core.tick(st, at(32.5)) == [] and core.decoded == []
    lapsed = core.tick(st, at(33))
    assert [t.lease_lapsed for t in lapsed] == [True] and core.decoded == ["c3"]
    back = core.item(st, "c3")
    assert back is not None and back.status == "open"

    # at the open items' expiry every one of them is read and expires, as without the memory
    core.decoded.clear()
    late = max(i.expires_at for i in items.values()) + timedelta(seconds=1)
    expired = core.tick(st, late)
    assert len(expired) == 20 and all(t.item and t.item.status == "expired" for t in expired)


def test_the_memory_of_due_moments_is_bounded_and_forgotten_after_a_rebalance() -> None:
    core, st = ReviewCore(POLICY, key=b"k", due_entries=5), _state()
    for i in range(12):
        core.put_item(st, f"c{i}", _open(f"c{i}"))
    core.tick(st, at(1))
    assert len(core._dues) == 5
    core.forget_caches()
    assert len(core._dues) == 0


def test_ticks_with_and_without_the_memory_leave_the_same_items() -> None:
    """Two cores over the same items and actions, one forgetting its memory before every tick:
    the stores end up equal."""
    cores, states = (
        [ReviewCore(POLICY, key=b"k"), ReviewCore(POLICY, key=b"k")],
        [
            _state(),
            _state(),
        ],
    )
    for core, st in zip(cores, states, strict=True):
        for i in range(8):
            core.put_item(st, f"c{i}", _open(f"c{i}", minutes=i))
    moments = [at(m) for m in (10, 20, 90, 400, 2000, 5000, 20000, 60000)]
    for step, moment in enumerate(moments):
        for core, st, forget in zip(cores, states, (False, True), strict=True):
            if forget:
                core.forget_caches()
            if step == 2:  # a claim written from outside the core
                current = core.item(st, "c5")
                if current is not None and current.status == "open":
                    st.items["c5"] = (
                        _act(current, "claim", 91, lease_seconds=300).model_dump_json().encode()
                    )
            core.tick(st, moment)
    a, b = (dict(st.items.scan_prefix("")) for st in states)
    assert a == b
    statuses = {ReviewItem.model_validate_json(v).status for v in a.values()}
    assert len(a) < 8 or "expired" in statuses  # time did its work: items expired or purged


class Streaming(MemoryStore):
    """A store that refuses a snapshot of its values and any write while a stream of them is
    open: what a tick may do with a TableStore, whose snapshot held every item's bytes twice."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.open_streams = 0
        self.streamed = 0

    def scan_prefix(self, prefix: str) -> Any:
        raise AssertionError("a tick must not take a snapshot of every item")

    def stream_prefix(self, prefix: str) -> Any:
        self.open_streams += 1
        try:
            for key, value in list(super().scan_prefix(prefix)):
                self.streamed += 1
                yield key, value
        finally:
            self.open_streams -= 1

    def __setitem__(self, key: str, value: bytes) -> None:
        assert not self.open_streams, "written while a stream of the store was open"
        super().__setitem__(key, value)

    def __delitem__(self, key: str) -> None:
        assert not self.open_streams, "deleted while a stream of the store was open"
        super().__delitem__(key)


def test_a_tick_streams_the_items_and_writes_the_changed_ones_after_the_pass() -> None:
    specs = review_specs(ReviewSettings(), POLICY)
    items = Streaming(specs["review-items"])
    st = ReviewState(
        items=items,
        context=MemoryStore(specs["review-context"]),
        caps=MemoryStore(specs["review-caps"]),
    )
    core = ReviewCore(POLICY, key=b"k")
    opened = {f"c{i}": _open(f"c{i}", minutes=i) for i in range(6)}
    for cid, item in opened.items():
        core.put_item(st, cid, item)
    late = max(i.expires_at for i in opened.values()) + timedelta(seconds=1)
    expired = core.tick(st, late)
    assert items.streamed == 6
    assert len(expired) == 6
    for cid in opened:  # every change reached the store after the stream was consumed
        back = core.item(st, cid)
        assert back is None or back.status == "expired", (cid, back)
    assert {ReviewItem.model_validate_json(v).status for _, v in items.stream_prefix("")} <= {
        "expired"
    }
