"""Records produced a batch per topic partition (``services/streaming/produce.py``), broker-free:
an aiokafka-shaped producer that records what it is given. The real producer and broker are
exercised by every worker test in ``tests/integration``."""

from __future__ import annotations

import asyncio
from types import SimpleNamespace
from typing import Any

import pytest

from services.streaming.produce import OutBatch, batch_producer


class Builder:
    """``BatchBuilder``: takes ``capacity`` records, then answers ``None`` (full)."""

    def __init__(self, capacity: int) -> None:
        self.capacity = capacity
        self.records: list[tuple[bytes | None, bytes | None]] = []

    def append(self, *, key: bytes | None, value: bytes | None, timestamp: Any) -> Any:
        if len(self.records) >= self.capacity or (value is not None and len(value) > 100):
            return None
        self.records.append((key, value))
        return object()


class Producer:
    """What :class:`OutBatch` uses of ``aiokafka.AIOKafkaProducer``."""

    def __init__(self, capacity: int = 3, fail: set[tuple[str, int]] | None = None) -> None:
        self.capacity = capacity
        self.fail = fail or set()
        self.batches: list[tuple[str, int, list[tuple[bytes | None, bytes | None]]]] = []
        self.singles: list[tuple[str, int, bytes | None]] = []
        self.offsets: dict[tuple[str, int], int] = {}
        self.client = SimpleNamespace(_wait_on_metadata=self._metadata)

    async def _metadata(self, topic: str) -> None:
        return None

    def _partition(self, topic: str, partition: Any, key: Any, value: Any, *_: Any) -> int:
        return 7 if key == b"seven" else 0

    def create_batch(self) -> Builder:
        return Builder(self.capacity)

    def _ack(self, topic: str, partition: int, n: int) -> asyncio.Future[Any]:
        fut: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        base = self.offsets.get((topic, partition), 0)
        self.offsets[(topic, partition)] = base + n
        fut.set_result(SimpleNamespace(offset=base, topic_partition=(topic, partition)))
        return fut

    async def send_batch(self, batch: Builder, topic: str, *, partition: int) -> Any:
        if (topic, partition) in self.fail:
            raise RuntimeError("broker said no")
        self.batches.append((topic, partition, list(batch.records)))
        return self._ack(topic, partition, len(batch.records))

    async def send(self, topic: str, value: bytes | None, *, key: Any, partition: int) -> Any:
        self.singles.append((topic, partition, value))
        return self._ack(topic, partition, 1)


async def test_records_go_out_a_batch_per_topic_partition_in_the_order_given() -> None:
    producer = Producer(capacity=3)
    out = OutBatch(producer)
    slots = [await out.add("t", i % 2, b"k", b"v%d" % i) for i in range(8)]
    slots.append(await out.add("u", None, b"seven", b"x"))  # Kafka's partitioner: 7
    # A full batch goes out when the next record does not fit; the rest wait for the flush.
    assert [(t, p) for t, p, _ in producer.batches] == [("t", 0), ("t", 1)]
    await out.flush()
    assert [(t, p, [v for _, v in recs]) for t, p, recs in producer.batches] == [
        ("t", 0, [b"v0", b"v2", b"v4"]),
        ("t", 1, [b"v1", b"v3", b"v5"]),
        ("t", 0, [b"v6"]),
        ("t", 1, [b"v7"]),
        ("u", 7, [b"x"]),
    ]
    await asyncio.sleep(0)
    # Each record's offset: its batch's first offset and its place in it.
    assert [s.offset() for s in slots] == [0, 0, 1, 1, 2, 2, 3, 3, 0]


async def test_a_record_larger_than_a_batch_goes_alone_and_the_rest_keep_batching() -> None:
    producer = Producer()
    out = OutBatch(producer)
    await out.add("t", 0, b"k", b"small")
    big = await out.add("t", 1, b"k", b"x" * 200)
    await out.flush()
    assert producer.singles == [("t", 1, b"x" * 200)]
    assert producer.batches == [("t", 0, [(b"k", b"small")])]
    assert big.offset() == 0


async def test_a_refused_batch_fails_the_futures_of_its_records_only() -> None:
    producer = Producer(fail={("t", 1)})
    out = OutBatch(producer)
    good = await out.add("t", 0, b"k", b"a")
    bad = [await out.add("t", 1, b"k", b"b"), await out.add("t", 1, b"k", b"c")]
    await out.flush()
    await asyncio.sleep(0)
    assert good.future.result().offset == 0
    for slot in bad:
        with pytest.raises(RuntimeError, match="broker said no"):
            slot.future.result()


async def test_batches_only_at_least_once() -> None:
    aio = Producer()

    class FaustProducer:
        def _ensure_producer(self) -> Producer:
            return aio

    async def start() -> FaustProducer:
        return FaustProducer()

    def app(guarantee: str) -> Any:
        conf = SimpleNamespace(processing_guarantee=SimpleNamespace(value=guarantee))
        return SimpleNamespace(maybe_start_producer=start, conf=conf)

    assert await batch_producer(app("at_least_once")) is aio
    assert await batch_producer(app("exactly_once")) is None
