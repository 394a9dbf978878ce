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
    "PartitionsError",
    "changelog_topics",
    "client_config",
    "copartitioned_topics",
    "create_topics",
    "feature_topics",
    "replay",
    "resolve_partitions",
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


class PartitionsError(RuntimeError):
    """Topics the worker co-partitions have different partition counts (the message says which
    and how to fix it)."""


def copartitioned_topics(settings: Settings) -> list[str]:
    """The topics whose partition ``p`` a worker must own together with the input's ``p``: the
    input, the checks topic, every internal or changelog topic the workers consume."""
    from services.alerting.settings import AlertingSettings
    from services.evalsets.settings import EvalsetSettings
    from services.streaming.features.evalsets import decisions_topic, samples_topic

    out = [settings.input_topic, settings.checks_topic, *changelog_topics(settings)]
    es = EvalsetSettings()
    if es.enabled:
        app = settings.app_id
        out += [samples_topic(app), decisions_topic(app), es.labels_topic]
    alerting = AlertingSettings()
    if alerting.enabled:
        out.append(alerting.counts_topic)
    return out


def resolve_partitions(settings: Settings, *, timeout_s: float = 10.0) -> tuple[int, str]:
    """The partition count the worker must use, and what it found.

    The input topic's own count wins over ``VIGIL_TOPIC_PARTITIONS`` (the worker's tables and
    internal topics must match the input, or Faust fails at the first table write). Every other
    co-partitioned topic that exists must have the same count, else :class:`PartitionsError`.
    When the broker cannot be reached the setting stands (the worker then waits for the broker).
    """
    try:
        admin = KafkaAdminClient(
            client_id="vigil-preflight",
            request_timeout_ms=int(timeout_s * 1000),
            **client_config(settings),
        )
    except Exception as exc:
        return settings.topic_partitions, f"broker not reachable ({type(exc).__name__})"
    try:
        wanted = copartitioned_topics(settings)
        counts = {
            t["name"]: len(t["partitions"])
            for t in admin.describe_topics(list(dict.fromkeys(wanted)))
            if not t.get("error_code") and t.get("partitions")
        }
    except Exception as exc:
        return settings.topic_partitions, f"could not read topic metadata ({type(exc).__name__})"
    finally:
        admin.close()
    n = counts.get(settings.input_topic, settings.topic_partitions)
    wrong = {t: c for t, c in counts.items() if c != n}
    if wrong:
        listed = ", ".join(f"{t} has {c}" for t, c in sorted(wrong.items()))
        raise PartitionsError(
            f"{settings.input_topic} has {n} partitions but {listed}: every topic a worker "
            "co-partitions needs the same count. Recreate those topics with "
            f"`vigil topics create --partitions {n}` (changelogs are rebuilt from their data), "
            "or point the VIGIL_*_TOPIC settings at topics with that count."
        )
    if n != settings.topic_partitions:
        return n, (
            f"{settings.input_topic} has {n} partitions; using {n} "
            f"(VIGIL_TOPIC_PARTITIONS is {settings.topic_partitions})"
        )
    return n, f"{n} partitions"


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
    # Each name once: a compacted feature topic is in both lists, and a second create of a
    # topic made a moment before would report it as "exists".
    names = list(dict.fromkeys([*names, *sorted(compacted)]))
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
