"""A message delivered again in one consumer generation is not processed twice
(``services/streaming/batches.py`` ``ReadOffsets``, ``fresh_records``: routes and agents
alike)."""

from __future__ import annotations

from types import SimpleNamespace

from prometheus_client import CollectorRegistry

from services.streaming.batches import ReadOffsets, fresh_records


def _event(topic: str, partition: int, offset: int, generation: int) -> SimpleNamespace:
    """A Faust message as the consumer makes it."""
    return SimpleNamespace(
        topic=topic,
        partition=partition,
        offset=offset,
        generation_id=generation,
        value=b"v",
        key=b"k",
    )


def test_an_offset_taken_before_in_the_generation_is_dropped_and_counted() -> None:
    registry = CollectorRegistry()
    app = SimpleNamespace(consumer_generation_id=3, vigil_read_offsets=ReadOffsets(registry))
    first = fresh_records(app, [_event("in", 2, o, 3) for o in (10, 11, 12)])
    assert [r.offset for r in first] == [10, 11, 12]
    # The last message of the partition fetched again, with a new one and another partition's.
    again = fresh_records(
        app, [_event("in", 2, 12, 3), _event("in", 2, 13, 3), _event("in", 1, 5, 3)]
    )
    assert [(r.partition, r.offset) for r in again] == [(2, 13), (1, 5)]
    assert registry.get_sample_value("vigil_redelivered_records_total") == 1


def test_a_new_generation_starts_afresh_and_old_generations_are_dropped() -> None:
    registry = CollectorRegistry()
    app = SimpleNamespace(consumer_generation_id=3, vigil_read_offsets=ReadOffsets(registry))
    fresh_records(app, [_event("in", 0, o, 3) for o in range(5)])
    app.consumer_generation_id = 4  # a rebalance: the partition is sought to its commit
    replayed = fresh_records(
        app, [_event("in", 0, 2, 3), _event("in", 0, 2, 4), _event("in", 0, 3, 4)]
    )
    assert [r.offset for r in replayed] == [2, 3]  # generation 3's copy is stale
    assert registry.get_sample_value("vigil_redelivered_records_total") == 0
