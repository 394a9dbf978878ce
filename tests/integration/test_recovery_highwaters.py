"""Exactly once, recovery reads each changelog partition to the broker's last stable offset.

faust-streaming, in a transaction, takes the end of a changelog partition from aiokafka's
``last_stable_offset``, a value cached from fetch responses: ``None`` until the consumer has
fetched from the partition. Faust reads ``None`` as an empty partition, so a worker whose
recovery began before its first fetch recovered nothing and went on with its local store (on
2026-12-07 a restarted worker did so: it released held answers a committed transaction had
already let go, and never released others). Here, against the real broker, the state Faust
met (a ``read_committed`` consumer assigned, nothing fetched yet) and what the worker asks instead
(:func:`services.streaming.transactions.last_stable_offsets`).
"""

from __future__ import annotations

import asyncio
import uuid

from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition
from kafka import KafkaAdminClient
from kafka.admin import NewTopic

from services.streaming.transactions import last_stable_offsets

COMMITTED = 7  # records of the committed transaction
OPEN = 5  # records of a transaction left open


def _create_topic(bootstrap: str, name: str, partitions: int) -> None:
    admin = KafkaAdminClient(bootstrap_servers=bootstrap, client_id="vigil-test-admin")
    try:
        admin.create_topics([NewTopic(name, partitions, 1)], timeout_ms=30_000)
    finally:
        admin.close()


async def _until_high_watermark(bootstrap: str, tp: TopicPartition, offset: int) -> None:
    reader = AIOKafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False)
    await reader.start()
    try:
        for _ in range(300):
            if (await reader.end_offsets([tp]))[tp] >= offset:
                return
            await asyncio.sleep(0.1)
        raise AssertionError(f"{tp} never reached offset {offset}")
    finally:
        await reader.stop()


async def _ends(bootstrap: str, topic: str) -> tuple[object, dict[int, int], dict[int, int]]:
    committed = AIOKafkaProducer(
        bootstrap_servers=bootstrap, transactional_id=f"{topic}-a", enable_idempotence=True
    )
    left_open = AIOKafkaProducer(
        bootstrap_servers=bootstrap, transactional_id=f"{topic}-b", enable_idempotence=True
    )
    consumer = AIOKafkaConsumer(
        bootstrap_servers=bootstrap, isolation_level="read_committed", enable_auto_commit=False
    )
    await committed.start()
    await left_open.start()
    await consumer.start()
    try:
        async with committed.transaction():
            for i in range(COMMITTED):
                await committed.send(topic, f"c{i}".encode(), key=b"k", partition=0)
        # The coordinator writes the commit marker after the commit returns: wait for it, so
        # that the open transaction's records come after it.
        await _until_high_watermark(bootstrap, TopicPartition(topic, 0), COMMITTED + 1)
        await left_open.begin_transaction()
        for i in range(OPEN):
            await left_open.send(topic, f"o{i}".encode(), key=b"k", partition=0)
        await left_open.flush()
        tp0, tp1 = TopicPartition(topic, 0), TopicPartition(topic, 1)
        consumer.assign([tp0, tp1])
        cached = consumer.last_stable_offset(tp0)  # what Faust's recovery used
        asked = await last_stable_offsets(consumer, [tp0, tp1])
        uncommitted = AIOKafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False)
        await uncommitted.start()
        try:
            high = await uncommitted.end_offsets([tp0, tp1])
        finally:
            await uncommitted.stop()
        await left_open.abort_transaction()
        return (
            cached,
            {tp.partition: o for tp, o in asked.items()},
            {tp.partition: o for tp, o in high.items()},
        )
    finally:
        await consumer.stop()
        await left_open.stop()
        await committed.stop()


def test_recovery_ends_at_the_brokers_last_stable_offset_before_any_fetch(
    kafka_bootstrap: str,
) -> None:
    topic = f"vigil-lso-{uuid.uuid4().hex[:12]}"
    _create_topic(kafka_bootstrap, topic, 2)
    cached, asked, high = asyncio.run(_ends(kafka_bootstrap, topic))

    # Nothing fetched yet: the cached value is unknown, which Faust took for an empty partition.
    assert cached is None
    # The broker's answer: the committed transaction's records and its commit marker are below
    # the last stable offset; the open transaction's records are not (a read_committed reader
    # cannot read them yet), though they are below the high watermark.
    assert asked == {0: COMMITTED + 1, 1: 0}
    assert high == {0: COMMITTED + 1 + OPEN, 1: 0}
