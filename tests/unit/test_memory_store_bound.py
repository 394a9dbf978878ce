"""The scan-mode memory store is bounded in values in total, not only in conversations."""

from __future__ import annotations

from services.screening import ConversationMemory, MemoryLimits, MemoryStore


def _memory(tag: str, n: int) -> ConversationMemory:
    return ConversationMemory(seen={f"{tag}-{i}": 1.0 for i in range(n)})


def test_least_recently_used_conversations_go_when_values_exceed_the_bound() -> None:
    store = MemoryStore(MemoryLimits(max_values=10, max_total_values=25))
    for c in range(5):
        store.put(f"c{c}", _memory(f"c{c}", 10))
    assert len(store) == 2
    assert store.get("c2") is None
    assert store.get("c3") is not None and store.get("c4") is not None


def test_replacing_a_memory_counts_its_values_once() -> None:
    store = MemoryStore(MemoryLimits(max_values=10, max_total_values=20))
    store.put("a", _memory("a", 10))
    store.put("b", _memory("b", 5))
    store.put("b", _memory("b", 10))  # replaces 5 values with 10: 20 in total, within the bound
    assert store.get("a") is not None and store.get("b") is not None
