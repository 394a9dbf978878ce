"""The Faust worker: ``chat.events`` → screening → ``vigil.findings`` / ``vigil.dlq``, and the
sampled claim checks → ``vigil.verdicts``.

Features built on these outputs (review queue, evaluation sets, spike detection) register
themselves through :class:`WorkerContext`: they add their own topics, tables, agents and web
routes, and hooks that the two agents await after screening an event and after checking an
answer. A hook must not raise for bad data; it gets masked findings and the event.

One agent with ``concurrency=1`` (faust-streaming #606: higher concurrency can commit past a
message still in flight); scale with partitions and worker processes. Conversation memory lives
in a Faust table whose changelog topic makes it survive restarts; it is keyed like the input
topic, so a conversation's memory sits on the partition that owns its events.
"""

from __future__ import annotations

import importlib
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

import faust
from faust.sensors.prometheus import setup_prometheus_sensors
from prometheus_client import CollectorRegistry

from schemas.events import ChatEvent
from schemas.outputs import DeadLetter, Finding
from schemas.verdicts import GroundingReport, JudgeLabel
from services.checking import CheckRequest, judge_config
from services.ingest import dead_letter
from services.judge import Judge
from services.pipeline import Pipeline
from services.screening import ConversationMemory
from services.settings import Settings
from services.streaming.admin import MEMORY_TABLE
from services.streaming.features import feature_modules

__all__ = ["AfterCheck", "AfterScreen", "WorkerContext", "create_app", "kafka_broker_url"]

#: ``(event, findings, source)`` after an event is screened (findings of screening only).
AfterScreen = Callable[[ChatEvent, list[Finding], str], Awaitable[None]]
#: ``(event, findings, report, source)`` after a sampled answer is checked (all its findings).
AfterCheck = Callable[[ChatEvent, list[Finding], GroundingReport, str], Awaitable[None]]


@dataclass
class WorkerContext:
    """What a feature module needs to plug into the worker (see ``FEATURES``)."""

    app: faust.App
    settings: Settings
    pipeline: Pipeline
    registry: CollectorRegistry
    topics: dict[str, Any] = field(default_factory=dict)
    after_screen: list[AfterScreen] = field(default_factory=list)
    after_check: list[AfterCheck] = field(default_factory=list)


#: Feature modules, each with ``register(ctx: WorkerContext) -> None``: every module in
#: ``services/streaming/features/``.
FEATURES: tuple[str, ...] = feature_modules()

log = logging.getLogger("vigil.worker")


def kafka_broker_url(settings: Settings) -> str:
    return ",".join(f"kafka://{hp.strip()}" for hp in settings.kafka_bootstrap.split(","))


def _broker_credentials(settings: Settings) -> Any:
    if settings.kafka_sasl_mechanism is None:
        return None
    password = (
        settings.kafka_sasl_password.get_secret_value() if settings.kafka_sasl_password else ""
    )
    return faust.SASLCredentials(
        username=settings.kafka_sasl_username or "",
        password=password,
        mechanism=settings.kafka_sasl_mechanism,
    )


def create_app(settings: Settings, registry: CollectorRegistry | None = None) -> faust.App:
    """Build the worker app; ``registry`` gets Faust's and Vigil's metrics, served at /metrics."""
    registry = registry if registry is not None else CollectorRegistry()
    pipeline = Pipeline(settings, registry)
    app = faust.App(
        settings.app_id,
        broker=kafka_broker_url(settings),
        broker_credentials=_broker_credentials(settings),
        store="memory://",
        topic_partitions=settings.topic_partitions,
        topic_replication_factor=settings.topic_replication,
        web_host=settings.web_host,
        web_port=settings.web_port,
        web_bind=settings.web_host,
        datadir=str(settings.data_dir),
        broker_session_timeout=settings.session_timeout_seconds,
        broker_heartbeat_interval=min(3.0, settings.session_timeout_seconds / 3),
        producer_acks=-1,
        key_serializer="raw",
        value_serializer="raw",
    )
    setup_prometheus_sensors(app, pattern="/metrics", registry=registry, name_prefix="faust")
    chat_events = app.topic(settings.input_topic, key_type=bytes, value_type=bytes)
    findings_topic = app.topic(settings.findings_topic, key_type=bytes, value_type=bytes)
    dlq_topic = app.topic(settings.dlq_topic, key_type=bytes, value_type=bytes)
    checks_topic = app.topic(settings.checks_topic, key_type=bytes, value_type=bytes)
    verdicts_topic = app.topic(settings.verdicts_topic, key_type=bytes, value_type=bytes)
    jconf = judge_config(settings)
    ctx = WorkerContext(app, settings, pipeline, registry)
    memory = app.Table(
        MEMORY_TABLE,
        default=None,
        partitions=settings.topic_partitions,
        key_type=str,
        # Values are plain JSON dicts. Not ``value_type=dict``: Faust decodes a non-model type
        # with ``typ.from_data`` on changelog recovery, which dict lacks, so a restarted worker
        # would never finish recovering. ``None`` means JSON, returned as the dict it was.
        value_type=None,
        help="Keyed hashes of values users gave in their own turns, per conversation.",
    )

    @app.agent(chat_events, concurrency=1)
    async def screen_events(stream: faust.StreamT[bytes]) -> None:
        async for ev in stream.events():
            msg = ev.message
            raw = ev.value if isinstance(ev.value, bytes) else b""
            source = f"{msg.topic}/{msg.partition}/{msg.offset}"
            key = ev.key if isinstance(ev.key, bytes) else None
            try:
                decoded = pipeline.decode(raw, source)
                if isinstance(decoded, DeadLetter):
                    pipeline.reject(decoded)
                    await dlq_topic.send(key=key, value=decoded.model_dump_json().encode())
                    continue
                cid = decoded.conversation_id
                stored = memory.get(cid)
                before = ConversationMemory.model_validate(stored) if stored else None
                out = pipeline.screen(decoded, before)
                if out.memory is not None and out.memory is not before:
                    memory[cid] = out.memory.model_dump()
                for finding in out.findings:
                    await findings_topic.send(
                        key=cid.encode(), value=finding.model_dump_json().encode()
                    )
                for hook in ctx.after_screen:
                    await hook(decoded, out.findings, source)
                decision = pipeline.decide(decoded, out.findings)
                if decision is not None and decision.sampled:
                    request = CheckRequest(event=decoded, decision=decision, findings=out.findings)
                    await checks_topic.send(
                        key=cid.encode(), value=request.model_dump_json().encode()
                    )
            except Exception as exc:  # a bug must not stop the worker nor lose the message
                log.error("processing failed at %s: %s", source, type(exc).__name__)
                dl = dead_letter(
                    raw,
                    "processing_error",
                    f"{type(exc).__name__} while screening",
                    source,
                    settings.dead_letter_keep_bytes,
                )
                pipeline.reject(dl)
                await dlq_topic.send(key=key, value=dl.model_dump_json().encode())

    @app.agent(checks_topic, concurrency=settings.check_concurrency)
    async def check_answers(stream: faust.StreamT[bytes]) -> None:
        """Claim checks of sampled answers, apart from screening so a slow judge never stalls it.

        The judge client lives as long as the agent: its cache and circuit breaker carry over.
        """
        judge = Judge(jconf, metrics=pipeline.metrics.judge) if jconf is not None else None
        async for ev in stream.events():
            msg = ev.message
            raw = ev.value if isinstance(ev.value, bytes) else b""
            source = f"{msg.topic}/{msg.partition}/{msg.offset}"
            key = ev.key if isinstance(ev.key, bytes) else None
            try:
                request = CheckRequest.model_validate_json(raw)
                labels: dict[str, JudgeLabel] | None = None
                if judge is not None:
                    asks = pipeline.checker.judge_requests(request.event)
                    results = await judge.judge_all(asks)
                    labels = {a.hypothesis: r.label for a, r in zip(asks, results, strict=True)}
                checked = pipeline.check(request.event, request.decision, labels, request.findings)
                cid = request.event.conversation_id.encode()
                await verdicts_topic.send(key=cid, value=checked.report.model_dump_json().encode())
                for finding in checked.findings:
                    await findings_topic.send(key=cid, value=finding.model_dump_json().encode())
                every = [*request.findings, *checked.findings]
                for check_hook in ctx.after_check:
                    await check_hook(request.event, every, checked.report, source)
            except Exception as exc:  # as in screening: count it, keep the bytes, keep going
                log.error("claim check failed at %s: %s", source, type(exc).__name__)
                dl = dead_letter(
                    raw,
                    "processing_error",
                    f"{type(exc).__name__} while checking claims",
                    source,
                    settings.dead_letter_keep_bytes,
                )
                pipeline.reject(dl)
                await dlq_topic.send(key=key, value=dl.model_dump_json().encode())

    @app.page("/healthz")
    async def healthz(self: faust.web.View, request: faust.web.Request) -> faust.web.Response:
        return self.json({"status": "ok", "rules": len(pipeline.engine.rules)})

    # Handles for tests (agent.test_context()) and for the web views of later stages.
    app.vigil_pipeline = pipeline  # type: ignore[attr-defined]
    app.vigil_agent = screen_events  # type: ignore[attr-defined]
    app.vigil_check_agent = check_answers  # type: ignore[attr-defined]
    ctx.topics.update(
        findings=findings_topic, dlq=dlq_topic, checks=checks_topic, verdicts=verdicts_topic
    )
    for name in FEATURES:
        importlib.import_module(name).register(ctx)
    app.vigil_topics = ctx.topics  # type: ignore[attr-defined]
    app.vigil_context = ctx  # type: ignore[attr-defined]
    app.vigil_memory = memory  # type: ignore[attr-defined]
    return app
