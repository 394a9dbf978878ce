"""Reading topics and Prometheus text in the integration tests (kafka-python, prometheus-client)."""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable
from typing import Any

from kafka import KafkaAdminClient, KafkaConsumer, KafkaProducer, TopicPartition
from kafka.errors import KafkaError
from prometheus_client.parser import text_string_to_metric_families

__all__ = [
    "TopicReader",
    "committed_offsets",
    "counter_values",
    "end_offsets",
    "events_total",
    "findings_by_rule_direction",
    "invalid_by_reason",
    "produce",
]


class TopicReader:
    """Reads a whole topic from the earliest offset, without a consumer group (nothing committed).

    Records accumulate in :attr:`records` across calls, so one reader can follow a topic through
    several phases of a test. ``committed_only``: read as a downstream consumer of a worker with
    Kafka transactions would (``read_committed``: records of aborted or open transactions are
    not returned).
    """

    def __init__(self, bootstrap: str, topic: str, *, committed_only: bool = False) -> None:
        self.topic = topic
        self.records: list[Any] = []
        self._consumer = KafkaConsumer(
            topic,
            bootstrap_servers=bootstrap,
            group_id=None,
            auto_offset_reset="earliest",
            enable_auto_commit=False,
            consumer_timeout_ms=1000,
            client_id=f"vigil-test-reader-{topic}",
            isolation_level="read_committed" if committed_only else "read_uncommitted",
        )

    def poll(self, timeout_ms: int = 1000) -> int:
        """Fetch what is there now; return how many records arrived."""
        got = 0
        for batch in self._consumer.poll(timeout_ms=timeout_ms).values():
            self.records.extend(batch)
            got += len(batch)
        return got

    def read_until(
        self,
        done: Callable[[list[Any]], bool],
        timeout_s: float,
        what: str,
        diagnostics: Callable[[], str] | None = None,
    ) -> list[Any]:
        """Poll until ``done(records)``; fail with ``what`` and ``diagnostics()`` on timeout."""
        deadline = time.monotonic() + timeout_s
        while not done(self.records):
            if time.monotonic() > deadline:
                extra = diagnostics() if diagnostics is not None else ""
                raise AssertionError(
                    f"timed out after {timeout_s:.0f}s waiting for {what} on {self.topic} "
                    f"({len(self.records)} records read)\n{extra}"
                )
            self.poll()
        return self.records

    def drain(self, quiet_s: float = 2.0) -> list[Any]:
        """Keep reading until nothing new arrives for ``quiet_s`` seconds."""
        last = time.monotonic()
        while time.monotonic() - last < quiet_s:
            if self.poll(timeout_ms=500):
                last = time.monotonic()
        return self.records

    def close(self) -> None:
        self._consumer.close()


def produce(bootstrap: str, topic: str, messages: list[tuple[bytes | None, bytes]]) -> list[Any]:
    """Send ``(key, value)`` pairs in order; return each one's ``RecordMetadata`` once acked."""
    producer = KafkaProducer(
        bootstrap_servers=bootstrap,
        acks="all",
        linger_ms=5,
        max_request_size=2 * 1024 * 1024,
        max_in_flight_requests_per_connection=1,
    )
    try:
        futures = [producer.send(topic, key=k, value=v) for k, v in messages]
        producer.flush(timeout=60)
        return [fut.get(timeout=60) for fut in futures]
    finally:
        producer.close()


def end_offsets(bootstrap: str, topic: str) -> dict[int, int]:
    """``{partition: end offset}`` of ``topic``."""
    consumer = KafkaConsumer(bootstrap_servers=bootstrap, client_id="vigil-test-end-offsets")
    try:
        parts = consumer.partitions_for_topic(topic) or set()
        ends = consumer.end_offsets([TopicPartition(topic, p) for p in parts])
        return {tp.partition: off for tp, off in ends.items()}
    finally:
        consumer.close()


def committed_offsets(bootstrap: str, group: str, topic: str) -> dict[int, int]:
    """``{partition: committed offset}`` of consumer group ``group`` on ``topic``.

    Empty while the group coordinator is not available yet (a fresh broker creates its offsets
    topic on first use).
    """
    admin = KafkaAdminClient(bootstrap_servers=bootstrap, client_id="vigil-test-offsets")
    try:
        if hasattr(admin, "list_group_offsets"):  # kafka-python 3.x
            offsets = admin.list_group_offsets({group: None})[group]
        else:  # kafka-python 2.x
            offsets = admin.list_consumer_group_offsets(group)
    except KafkaError as exc:
        if getattr(exc, "retriable", False):
            return {}
        raise
    finally:
        admin.close()
    return {tp.partition: meta.offset for tp, meta in offsets.items() if tp.topic == topic}


# --------------------------------------------------------------------------- Prometheus text


def counter_values(text: str, name: str) -> dict[frozenset[tuple[str, str]], float]:
    """``{labels: value}`` of the ``<name>_total`` samples of counter ``name`` (without _total)."""
    out: dict[frozenset[tuple[str, str]], float] = {}
    for family in text_string_to_metric_families(text):
        if family.name != name:
            continue
        for sample in family.samples:
            if sample.name == f"{name}_total":
                out[frozenset(sample.labels.items())] = sample.value
    return out


def _by(text: str, name: str, keys: tuple[str, ...]) -> Counter[tuple[str, ...]]:
    result: Counter[tuple[str, ...]] = Counter()
    for labels, value in counter_values(text, name).items():
        d = dict(labels)
        result[tuple(d[k] for k in keys)] += value
    return result


def events_total(text: str) -> float:
    return sum(counter_values(text, "vigil_events").values())


def findings_by_rule_direction(text: str) -> Counter[tuple[str, ...]]:
    return _by(text, "vigil_findings", ("rule", "direction"))


def invalid_by_reason(text: str) -> Counter[tuple[str, ...]]:
    return _by(text, "vigil_invalid_events", ("reason",))
