"""kafka-python helpers for the CLI: create topics, replay a file into a topic."""

from __future__ import annotations

import importlib
import json
import time
from collections.abc import Callable, Iterable
from typing import Any

from kafka import KafkaAdminClient, KafkaProducer
from kafka.admin import NewTopic
from kafka.errors import TopicAlreadyExistsError

from services.settings import Settings
from services.streaming.state import STATE_TABLE

__all__ = [
    "STATE_TABLE",
    "changelog_topics",
    "client_config",
    "create_topics",
    "feature_topics",
    "replay",
]


def changelog_topics(settings: Settings) -> list[str]:
    """The changelog topics of the worker's tables (compacted, partitioned like the input)."""
    return [f"{settings.app_id}-{STATE_TABLE}-changelog"]


def feature_topics(settings: Settings) -> tuple[list[str], set[str]]:
    """Topics of the worker's feature modules: ``(all names, the compacted ones)``.

    A feature module may define ``topics(settings) -> list[tuple[str, bool]]`` (name, compacted);
    its table changelogs belong there too, named ``<app_id>-<table>-changelog``.
    """
    from services.streaming.app import FEATURES

    names: list[str] = []
    compacted: set[str] = set()
    for module in FEATURES:
        declare = getattr(importlib.import_module(module), "topics", None)
        for name, is_compacted in declare(settings) if declare else []:
            names.append(name)
            if is_compacted:
                compacted.add(name)
    return names, compacted


def client_config(settings: Settings) -> dict[str, Any]:
    cfg: dict[str, Any] = {
        "bootstrap_servers": settings.kafka_bootstrap.split(","),
        "security_protocol": settings.kafka_security_protocol,
    }
    if settings.kafka_sasl_mechanism:
        cfg["sasl_mechanism"] = settings.kafka_sasl_mechanism
        cfg["sasl_plain_username"] = settings.kafka_sasl_username
        if settings.kafka_sasl_password is not None:
            cfg["sasl_plain_password"] = settings.kafka_sasl_password.get_secret_value()
    return cfg


def create_topics(
    settings: Settings, partitions: int | None = None, extra: Iterable[str] = ()
) -> dict[str, str]:
    """Create the input, output, internal and table changelog topics.

    Returns ``{topic: created|exists}``. The changelog is created here too, with the input topic's
    partition count: a worker that creates it itself races its own first metadata snapshot, and
    Faust then fails table writes with ``PartitionsMismatch`` until the next metadata refresh.
    """
    parts = partitions or settings.topic_partitions
    own, own_compacted = feature_topics(settings)
    names = [
        settings.input_topic,
        settings.findings_topic,
        settings.dlq_topic,
        settings.checks_topic,
        settings.verdicts_topic,
        *own,
        *extra,
    ]
    compacted = set(changelog_topics(settings)) | own_compacted
    names += sorted(compacted)
    admin = KafkaAdminClient(client_id="vigil-admin", **client_config(settings))
    result: dict[str, str] = {}
    try:
        existing = set(admin.list_topics())
        for name in names:
            if name in existing:
                result[name] = "exists"
                continue
            configs = {"cleanup.policy": "compact"} if name in compacted else None
            try:
                admin.create_topics(
                    [
                        NewTopic(
                            name,
                            num_partitions=parts,
                            replication_factor=settings.topic_replication,
                            topic_configs=configs,
                        )
                    ]
                )
                result[name] = "created"
            except TopicAlreadyExistsError:
                result[name] = "exists"
    finally:
        admin.close()
    return result


def _key_of(line: bytes) -> bytes | None:
    """The conversation id of a JSON line, as the message key; ``None`` when it cannot be read."""
    try:
        cid = json.loads(line).get("conversation_id")
    except (ValueError, AttributeError):
        return None
    return cid.encode("utf-8") if isinstance(cid, str) and cid else None


def replay(
    settings: Settings,
    lines: Iterable[bytes],
    topic: str,
    *,
    rate: float | None = None,
    on_sent: Callable[[int], None] | None = None,
) -> int:
    """Produce every line to ``topic`` keyed by its conversation id; at most ``rate`` per second.

    Lines are sent byte for byte (invalid ones included, so the worker's dead-letter path sees
    them). Returns the number sent, after every send is acknowledged.
    """
    producer = KafkaProducer(acks="all", linger_ms=5, **client_config(settings))
    sent = 0
    failures: list[BaseException] = []
    start = time.monotonic()
    try:
        for line in lines:
            producer.send(topic, key=_key_of(line), value=line).add_errback(failures.append)
            sent += 1
            if on_sent is not None:
                on_sent(len(line))
            if rate:
                ahead = sent / rate - (time.monotonic() - start)
                if ahead > 0:
                    time.sleep(ahead)
        producer.flush()
    finally:
        producer.close()
    if failures:
        raise RuntimeError(
            f"{len(failures)} of {sent} messages were not delivered: {failures[0]!r}"
        )
    return sent
