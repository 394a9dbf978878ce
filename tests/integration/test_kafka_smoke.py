"""Round trips through the real broker with kafka-python and aiokafka (which Faust uses)."""

from __future__ import annotations

import time
import uuid

from kafka import KafkaAdminClient, KafkaConsumer, KafkaProducer
from kafka.admin import NewTopic

N_MESSAGES = 100
PARTITIONS = 3


def _topic(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:12]}"


def _create_topic(bootstrap: str, name: str, partitions: int) -> None:
    admin = KafkaAdminClient(bootstrap_servers=bootstrap, client_id="vigil-smoke-admin")
    try:
        admin.create_topics([NewTopic(name, partitions, 1)], timeout_ms=30_000)
        deadline = time.monotonic() + 30
        while name not in admin.list_topics():
            assert time.monotonic() < deadline, f"topic {name} never appeared"
            time.sleep(0.2)
    finally:
        admin.close()


def test_produce_and_consume_keyed_messages(kafka_bootstrap: str) -> None:
    topic = _topic("vigil-smoke")
    _create_topic(kafka_bootstrap, topic, PARTITIONS)

    sent = {f"key-{i}": f"value-{i}" for i in range(N_MESSAGES)}
    producer = KafkaProducer(bootstrap_servers=kafka_bootstrap, acks="all", linger_ms=5)
    try:
        for key, value in sent.items():
            producer.send(topic, key=key.encode(), value=value.encode())
        producer.flush(timeout=30)
    finally:
        producer.close()

    consumer = KafkaConsumer(
        topic,
        bootstrap_servers=kafka_bootstrap,
        group_id=f"vigil-smoke-{uuid.uuid4().hex[:8]}",
        auto_offset_reset="earliest",
        enable_auto_commit=False,
    )
    received: dict[str, str] = {}
    partitions_by_key: dict[str, int] = {}
    try:
        deadline = time.monotonic() + 60
        while len(received) < N_MESSAGES and time.monotonic() < deadline:
            for records in consumer.poll(timeout_ms=1000).values():
                for record in records:
                    key = record.key.decode()
                    received[key] = record.value.decode()
                    partitions_by_key[key] = record.partition
    finally:
        consumer.close()

    assert received == sent
    # Keys spread over all partitions (murmur2 partitioning of 100 distinct keys).
    assert set(partitions_by_key.values()) == set(range(PARTITIONS))


async def test_aiokafka_round_trip(kafka_bootstrap: str) -> None:
    from aiokafka import AIOKafkaConsumer, AIOKafkaProducer

    topic = _topic("vigil-smoke-aio")
    _create_topic(kafka_bootstrap, topic, PARTITIONS)

    producer = AIOKafkaProducer(bootstrap_servers=kafka_bootstrap, acks="all")
    await producer.start()
    try:
        for i in range(20):
            await producer.send_and_wait(topic, key=f"k{i}".encode(), value=f"v{i}".encode())
    finally:
        await producer.stop()

    consumer = AIOKafkaConsumer(
        topic,
        bootstrap_servers=kafka_bootstrap,
        group_id=f"vigil-smoke-aio-{uuid.uuid4().hex[:8]}",
        auto_offset_reset="earliest",
        enable_auto_commit=False,
        session_timeout_ms=6000,
        heartbeat_interval_ms=1000,
    )
    await consumer.start()
    received: dict[bytes, bytes] = {}
    try:
        deadline = time.monotonic() + 60
        while len(received) < 20 and time.monotonic() < deadline:
            batches = await consumer.getmany(timeout_ms=1000)
            for records in batches.values():
                for record in records:
                    received[record.key] = record.value
        await consumer.commit()
    finally:
        await consumer.stop()

    assert received == {f"k{i}".encode(): f"v{i}".encode() for i in range(20)}
