"""Rotating evaluation sets in the worker (SPEC §9): thin wiring over
:mod:`services.evalsets.core`.

The dataflow folds each event into its conversation's accumulator on the conversation's
partition and sends the sampler a summary when what it knows changed (channel
``evalset.samples``: partition 0 of ``<app>-evalset-samples``). This module adds the agents of
the other channels — the one sampler (``vigil.evalset.sampler``), the case partitions' decisions
(``vigil.evalset.decisions``), the reviewers' labels (``vigil.evalset.labels``) — and the timer
whose ticks make the sampler close and retire periods. Cases go to the compacted
``vigil.evalset`` (key: case id), retired ones to the compacted ``vigil.evalset.archive``. The
design and its crash behaviour: :mod:`services.evalsets.streaming`; its limit (one sampler per
stream): ``docs/streaming.md``.
"""

from __future__ import annotations

import logging
import math
from typing import TYPE_CHECKING, Any

from prometheus_client import Counter

from services.dataflow.records import Effects, Emit
from services.evalsets.core import ARCHIVE, CASES, DECISIONS, SAMPLES
from services.evalsets.settings import EvalsetSettings
from services.evalsets.streaming import SampleIn
from services.settings import Settings

if TYPE_CHECKING:
    import faust

    from services.streaming.app import WorkerContext

__all__ = ["decisions_topic", "register", "samples_topic", "topics"]

log = logging.getLogger("vigil.worker.evalsets")


def samples_topic(app_id: str) -> str:
    return f"{app_id}-evalset-samples"


def decisions_topic(app_id: str) -> str:
    return f"{app_id}-evalset-decisions"


def topics(settings: Settings) -> list[tuple[str, bool]]:
    """Topics for ``vigil topics create``: ``(name, compacted)``. The archive is compacted too:
    keyed by case id and never tombstoned, it keeps every retired case without a time limit."""
    es = EvalsetSettings()
    if not es.enabled:
        return []
    app = settings.app_id
    return [
        (es.topic, True),
        (es.archive_topic, True),
        (es.labels_topic, False),
        (samples_topic(app), False),
        (decisions_topic(app), False),
    ]


def register(ctx: WorkerContext) -> None:
    es = EvalsetSettings()
    if not es.enabled:
        return
    from services.streaming.app import serving

    app, runner = ctx.app, ctx.runner
    n = ctx.settings.topic_partitions

    def topic(name: str, **kw: Any) -> faust.TopicT:
        return app.topic(name, key_type=bytes, value_type=bytes, partitions=n, **kw)

    cases_topic = topic(es.topic, compacting=True)
    archive_topic = topic(es.archive_topic, compacting=True)
    labels_topic = topic(es.labels_topic, internal=True)
    samples = topic(samples_topic(ctx.settings.app_id), internal=True)
    decisions = topic(decisions_topic(ctx.settings.app_id), internal=True)
    ctx.channels.update(
        {
            SAMPLES: samples.get_topic_name(),
            DECISIONS: decisions.get_topic_name(),
            CASES: es.topic,
            ARCHIVE: es.archive_topic,
        }
    )
    ctx.topics.update({CASES: cases_topic, ARCHIVE: archive_topic})
    ctx.consumed.update(
        {
            samples.get_topic_name(): "evalset-samples",
            decisions.get_topic_name(): "evalset-decisions",
            es.labels_topic: "evalset-labels",
        }
    )
    periods = Counter(
        "vigil_evalset_periods_total",
        "Evaluation-set periods closed and retired.",
        ["event"],
        registry=ctx.registry,
    )
    for event in ("closed", "retired"):
        periods.labels(event)

    ctx.routes.add(samples, runner.samples)
    ctx.routes.add(decisions, runner.decisions)
    ctx.routes.add(labels_topic, runner.labels)

    async def evalset_tick() -> None:
        if not serving(app):
            return
        tick = Emit(SAMPLES, b"tick", SampleIn(kind="tick"), 0)
        try:
            await runner.deliver(Effects([tick]))
        except Exception as exc:
            log.warning("evaluation-set tick not sent: %s", type(exc).__name__)

    app.timer(es.tick_seconds, name="vigil.evalset.tick")(evalset_tick)

    def counted(closed: list[str], retired: list[str]) -> None:
        periods.labels("closed").inc(len(closed))
        periods.labels("retired").inc(len(retired))
        for p in closed:
            log.info("evaluation-set period %s closed", p)
        for p in retired:
            log.info("evaluation-set period %s retired", p)

    runner.on_periods = counted

    def after_reset() -> None:
        runner.last_resync = -math.inf  # re-send every selection: repairs a crash's losses

    ctx.on_reset.append(after_reset)
