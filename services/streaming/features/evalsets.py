"""Rotating evaluation sets in the worker (SPEC §9): the sampler's state in Faust tables, cases
on the compacted topic ``vigil.evalset`` (key: case id), retired periods on the compacted
``vigil.evalset.archive``, reviewers' labels from ``vigil.review.labels``.

How the parts move (pure parts in :mod:`services.evalsets.streaming`, where the design is
explained):

- the screening and claim-check hooks fold each event into its conversation's
  ``CaseAccumulator`` (table ``evalset-cases``, on the partition that owns the conversation) and
  send a summary to partition 0 of ``<app>-evalset-samples``;
- one agent there runs the one sampler (table ``evalset-sampler``) and sends decisions — who is
  selected, with which stratum and inclusion probability — to ``<app>-evalset-decisions``;
- the conversation's partition turns decisions (and labels, and later events of a selected
  conversation) into the published case; a case is published again only when what it is built
  from changed; deselected cases get a tombstone, acknowledged before their selection is dropped;
- a timer sends ticks to the sampler, which closes periods (final probabilities) and retires old
  ones (archive first, acknowledged, then tombstones, then the state is dropped), and re-sends
  every period's selection now and then and after a restart (repairs what a crash lost).

Hooks never raise: a failure is logged (source position and exception type, never content) and
counted in ``vigil_evalset_errors_total``. Without a running producer (``agent.test_context()``
in unit tests) the hooks still fold state but send nothing.
"""

from __future__ import annotations

import asyncio
import logging
import math
import time
from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING, Any, Literal, cast

from prometheus_client import CollectorRegistry, Counter
from pydantic import ValidationError

from schemas.evalset import EvalLabel, KafkaSource
from schemas.events import ChatEvent
from schemas.outputs import Finding
from schemas.review import ReviewLabel
from schemas.verdicts import GroundingReport
from services.evalsets.cases import CaseAccumulator, case_id
from services.evalsets.labels import label_from_review
from services.evalsets.periods import period_of, period_start
from services.evalsets.sampler import summary_from_event
from services.evalsets.settings import EvalsetSettings
from services.evalsets.state import Selection
from services.evalsets.streaming import (
    Decision,
    SampleIn,
    SamplerCore,
    ShardMeta,
    acc_key,
    build_case,
    case_digest,
    label_key,
    meta_key,
    sel_key,
)
from services.settings import Settings

if TYPE_CHECKING:
    import faust

    from services.streaming.app import WorkerContext

__all__ = [
    "CASES_TABLE",
    "SAMPLER_TABLE",
    "EvalsetFeature",
    "decisions_topic",
    "register",
    "samples_topic",
    "topics",
]

SAMPLER_TABLE = "evalset-sampler"
CASES_TABLE = "evalset-cases"

log = logging.getLogger("vigil.worker.evalsets")

#: (topic, key, value, partition); value ``None`` is a tombstone.
Send = tuple["faust.TopicT", bytes | None, bytes | None, int | None]


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
        (f"{app}-{SAMPLER_TABLE}-changelog", True),
        (f"{app}-{CASES_TABLE}-changelog", True),
    ]


def register(ctx: WorkerContext) -> None:
    es = EvalsetSettings()
    if not es.enabled:
        return
    if es.uses_dev_key:
        log.warning("VIGIL_EVALSET_KEY is the development default: set it in production")
    ctx.app.vigil_evalset = EvalsetFeature(ctx, es)  # type: ignore[attr-defined]


def kafka_source(source: str) -> KafkaSource | None:
    """``topic/partition/offset`` (the hooks' ``source``) as a :class:`KafkaSource`."""
    parts = source.rsplit("/", 2)
    if len(parts) != 3:
        return None
    try:
        return KafkaSource(topic=parts[0], partition=int(parts[1]), offset=int(parts[2]))
    except ValueError:
        return None


def _retired(meta: ShardMeta, period: str) -> ShardMeta:
    through = [p for p in (meta.retired_through, period) if p is not None]
    return meta.model_copy(
        update={
            "periods": [p for p in meta.periods if p != period],
            "closed": [p for p in meta.closed if p != period],
            "retired_through": max(through, key=period_start),
        }
    )


class EvalsetMetrics:
    def __init__(self, registry: CollectorRegistry) -> None:
        self.summaries = Counter(
            "vigil_evalset_summaries",
            "Event summaries the evaluation-set sampler received, by outcome.",
            ["outcome"],
            registry=registry,
        )
        self.published = Counter(
            "vigil_evalset_published",
            "Records the evaluation-set agents published, by kind (case, tombstone, archive).",
            ["kind"],
            registry=registry,
        )
        self.periods = Counter(
            "vigil_evalset_periods",
            "Evaluation-set periods closed and retired.",
            ["event"],
            registry=registry,
        )
        self.errors = Counter(
            "vigil_evalset_errors",
            "Failures in the evaluation-set hooks and agents (processing went on), by stage.",
            ["stage"],
            registry=registry,
        )
        for outcome in ("accepted", "late", "repeat", "retired"):
            self.summaries.labels(outcome)
        for kind in ("case", "tombstone", "archive"):
            self.published.labels(kind)
        for event in ("closed", "retired"):
            self.periods.labels(event)
        for stage in ("hook", "sampler", "cases", "labels", "publish"):
            self.errors.labels(stage)


class EvalsetFeature:
    """Topics, tables, agents, timer and hooks of the evaluation sets in one worker."""

    def __init__(self, ctx: WorkerContext, es: EvalsetSettings) -> None:
        app = ctx.app
        n = ctx.settings.topic_partitions
        self.app = app
        self.es = es
        self.config = es.config()
        self.partitions = n
        self.checker = ctx.pipeline.checker
        self.metrics = EvalsetMetrics(ctx.registry)

        def topic(name: str, **kw: Any) -> faust.TopicT:
            return app.topic(name, key_type=bytes, value_type=bytes, partitions=n, **kw)

        self.cases_topic = topic(es.topic, compacting=True)
        self.archive_topic = topic(es.archive_topic, compacting=True)
        # Consumed topics are declared (created when absent) by Faust before it subscribes.
        self.labels_topic = topic(es.labels_topic, internal=True)
        self.samples_topic = topic(samples_topic(ctx.settings.app_id), internal=True)
        self.decisions_topic = topic(decisions_topic(ctx.settings.app_id), internal=True)
        self.sampler_table = app.Table(
            SAMPLER_TABLE,
            key_type=str,
            value_type=bytes,
            partitions=n,
            help="Evaluation-set sampler (partition 0): strata, members, checks in flight.",
        )
        self.cases_table = app.Table(
            CASES_TABLE,
            key_type=str,
            value_type=bytes,
            partitions=n,
            help="Evaluation-set cases per conversation partition: accumulators, selections.",
        )
        self.core = SamplerCore(
            self.config,
            es.secret,
            self.sampler_table,
            partitions=n,
            grace_seconds=es.grace_seconds,
            idle_seconds=es.idle_seconds,
            check_wait_seconds=es.check_wait_seconds,
            now=time.monotonic(),
        )
        self._published: dict[str, bytes] = {}  # case id -> digest, for this process's lifetime
        self._locks: dict[int, asyncio.Lock] = {}
        self._last_resync = time.monotonic()
        self.sampler_table.on_recover(self._sampler_recovered)
        self.cases_table.on_recover(self._cases_recovered)

        @app.agent(self.samples_topic, name="vigil.evalset.sampler", concurrency=1)
        async def evalset_sampler(stream: faust.StreamT[bytes]) -> None:
            async for ev in stream.events():
                await self.on_sample(ev.value)

        @app.agent(self.decisions_topic, name="vigil.evalset.decisions", concurrency=1)
        async def evalset_decisions(stream: faust.StreamT[bytes]) -> None:
            async for ev in stream.events():
                await self.on_decision(ev.message.partition, ev.value)

        @app.agent(self.labels_topic, name="vigil.evalset.labels", concurrency=1)
        async def evalset_labels(stream: faust.StreamT[bytes]) -> None:
            async for ev in stream.events():
                await self.on_label(ev.message.partition, ev.value)

        @app.timer(interval=es.tick_seconds)
        async def evalset_tick() -> None:
            tick = SampleIn(kind="tick").model_dump_json().encode()
            await self._send([(self.samples_topic, b"tick", tick, 0)])

        @app.task
        async def evalset_declare() -> None:
            for t in (self.cases_topic, self.archive_topic):
                await t.maybe_declare()

        self.agents = (evalset_sampler, evalset_decisions, evalset_labels)
        ctx.after_screen.append(self.after_screen)
        ctx.after_check.append(self.after_check)
        ctx.topics.update(
            evalset=self.cases_topic,
            evalset_archive=self.archive_topic,
            evalset_samples=self.samples_topic,
            evalset_decisions=self.decisions_topic,
            evalset_labels=self.labels_topic,
        )

    # ------------------------------------------------------------------ plumbing

    def ready(self) -> bool:
        """Whether records can be sent: the worker's producer runs (not under test_context)."""
        return bool(self.app.producer.started)

    async def _sampler_recovered(self) -> None:
        self.core.invalidate()
        self._last_resync = -math.inf  # re-send every selection: repairs a crash's losses

    async def _cases_recovered(self) -> None:
        self._published.clear()

    def _lock(self, partition: int) -> asyncio.Lock:
        return self._locks.setdefault(partition, asyncio.Lock())

    async def _send(
        self, sends: Sequence[Send], *, wait: bool = False, retry: bool = False
    ) -> bool:
        """Send records in order; with ``wait``, until the broker acknowledged all of them (and
        with ``retry`` again and again until it does). ``False`` when nothing could be sent."""
        if not sends:
            return True
        if not self.ready():
            return False
        delay = 1.0
        while True:
            why = ""
            try:
                futures = [
                    cast("asyncio.Future[Any]", await t.send(key=k, value=v, partition=p))
                    for t, k, v, p in sends
                ]
                if not wait:
                    return True
                done, pending = await asyncio.wait(futures, timeout=self.es.send_timeout_seconds)
                failed = [f for f in done if f.exception() is not None]
                if not pending and not failed:
                    return True
                why = f"{len(pending)} unacknowledged, {len(failed)} failed"
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                why = type(exc).__name__
            self.metrics.errors.labels("publish").inc()
            if not retry or self.app.should_stop:
                log.warning("evaluation-set publish failed: %s", why)
                return False
            log.warning("evaluation-set publish failed (%s); retrying in %.0fs", why, delay)
            await asyncio.sleep(delay)
            delay = min(delay * 2, 30.0)

    def _decision_sends(self, decisions: Iterable[Decision]) -> list[Send]:
        return [
            (
                self.decisions_topic,
                d.conversation_id.encode() if d.conversation_id else None,
                d.model_dump_json().encode(),
                d.partition,
            )
            for d in decisions
        ]

    # ------------------------------------------------------------------ hooks

    async def after_screen(self, event: ChatEvent, findings: list[Finding], source: str) -> None:
        try:
            await self._observe(event, findings, None, source, screened=True)
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            self.metrics.errors.labels("hook").inc()
            log.error("evaluation-set hook failed at %s: %s", source, type(exc).__name__)

    async def after_check(
        self, event: ChatEvent, findings: list[Finding], report: GroundingReport, source: str
    ) -> None:
        try:
            await self._observe(event, findings, report, source, screened=False)
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            self.metrics.errors.labels("hook").inc()
            log.error("evaluation-set check hook failed at %s: %s", source, type(exc).__name__)

    async def _observe(
        self,
        event: ChatEvent,
        findings: list[Finding],
        report: GroundingReport | None,
        source: str,
        *,
        screened: bool,
    ) -> None:
        src = kafka_source(source)
        if src is None:
            raise ValueError("source is not topic/partition/offset")
        part, cid = src.partition, event.conversation_id
        period = period_of(event.timestamp, self.config.period_kind)
        meta = self._meta(part)
        if meta.is_retired(period):
            return
        table = self.cases_table
        selected = sel_key(part, period, cid) in table
        if period not in meta.closed or selected:
            key = acc_key(part, period, cid)
            old = table.get(key)
            acc = (
                CaseAccumulator.model_validate_json(old)
                if old
                else CaseAccumulator(conversation_id=cid, period=period)
            )
            acc.observe(event, findings, self.config, report)
            if screened:
                acc.add_source(src, self.config.max_sources)
            new = acc.model_dump_json().encode()
            if new != old:
                table[key] = new
            if period not in meta.periods:
                self._note_period(part, period)
        check: Literal["pending", "done"] | None = "done"
        if screened:
            decision = self.checker.decide(event, findings)
            check = "pending" if decision is not None and decision.sampled else None
        msg = SampleIn(
            kind="summary",
            summary=summary_from_event(event, findings, None, self.config),
            partition=part,
            timestamp=event.timestamp.timestamp(),
            event_id=event.event_id,
            check=check,
        )
        await self._send([(self.samples_topic, cid.encode(), msg.model_dump_json().encode(), 0)])
        if selected:
            await self._reconcile(part, [(period, cid)])

    # ------------------------------------------------------------------ the sampler

    async def on_sample(self, value: Any) -> None:
        try:
            msg = SampleIn.model_validate_json(value if isinstance(value, bytes) else b"")
        except ValidationError:
            self.metrics.errors.labels("sampler").inc()
            log.error("evaluation-set sampler: not a sample message")
            return
        try:
            if msg.kind == "tick":
                await self._tick()
                return
            decisions = self.core.observe(msg, wall=time.time(), mono=time.monotonic())
            self.metrics.summaries.labels(self.core.last_outcome).inc()
            # Not waiting for acknowledgements: a crash before Faust's next commit replays the
            # summary, and the re-sent selections after recovery repair what it decided.
            await self._send(self._decision_sends(decisions))
            self.core.commit()
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            self.core.invalidate()
            self._last_resync = -math.inf
            self.metrics.errors.labels("sampler").inc()
            log.error("evaluation-set sampler failed: %s", type(exc).__name__)

    async def _tick(self) -> None:
        wall, mono = time.time(), time.monotonic()
        plan = self.core.plan(wall=wall, mono=mono)
        for period in plan.close:
            if not await self._send(self._decision_sends(self.core.close(period))):
                self.core.invalidate()
                return
            self.core.commit()
            self.metrics.periods.labels("closed").inc()
            log.info("evaluation-set period %s closed", period)
        for period in plan.retire:
            # Archive before anything is dropped: wait until every partition has its orders.
            decisions = self.core.retire(period)
            if not await self._send(self._decision_sends(decisions), wait=True, retry=True):
                self.core.invalidate()
                return
            self.core.forget(period)
            self.core.commit()
            self.metrics.periods.labels("retired").inc()
            log.info("evaluation-set period %s retired", period)
        due = mono - self._last_resync >= self.es.resync_seconds
        if due and await self._send(self._decision_sends(self.core.resync())):
            self._last_resync = mono

    # ------------------------------------------------------------------ case partitions

    def _meta(self, part: int) -> ShardMeta:
        raw = self.cases_table.get(meta_key(part))
        return ShardMeta.model_validate_json(raw) if raw else ShardMeta()

    def _note_period(self, part: int, period: str) -> None:
        self._update_meta(
            part, lambda m: m.model_copy(update={"periods": sorted({*m.periods, period})})
        )

    def _update_meta(self, part: int, change: Callable[[ShardMeta], ShardMeta]) -> None:
        """Read, change and write the partition's meta with no await in between."""
        meta = self._meta(part)
        new = change(meta)
        if new != meta or meta_key(part) not in self.cases_table:
            self.cases_table[meta_key(part)] = new.model_dump_json().encode()

    def _keys(self, prefix: str) -> list[str]:
        return [k for k in list(self.cases_table.keys()) if k.startswith(prefix)]

    def _selected(self, part: int, period: str) -> set[str]:
        prefix = sel_key(part, period, "")
        return {k[len(prefix) :] for k in self._keys(prefix)}

    async def _reconcile(self, part: int, keys: Iterable[tuple[str, str]]) -> None:
        """Publish the case of each selected ``(period, conversation)`` whose inputs changed."""
        table = self.cases_table
        async with self._lock(part):
            sends: list[Send] = []
            marks: list[tuple[str, bytes]] = []
            for period, cid in dict.fromkeys(keys):
                sel_raw = table.get(sel_key(part, period, cid))
                if sel_raw is None:
                    continue
                acc_raw = table.get(acc_key(part, period, cid))
                label_raw = table.get(label_key(part, cid))
                digest = case_digest(sel_raw, acc_raw, label_raw)
                key = case_id(period, cid)
                if self._published.get(key) == digest:
                    continue
                selection = Selection.model_validate_json(sel_raw)
                case = build_case(selection, acc_raw, label_raw, self.config)
                value = case.model_dump_json().encode()
                sends.append((self.cases_topic, key.encode(), value, None))
                marks.append((key, digest))
            if await self._send(sends):
                self._published.update(marks)
                self.metrics.published.labels("case").inc(len(sends))

    async def _tombstone(self, period: str, cids: Sequence[str]) -> bool:
        """Tombstones for the cases, acknowledged (without a producer: nothing to withdraw)."""
        if not cids or not self.ready():
            return True
        sends: list[Send] = [
            (self.cases_topic, case_id(period, cid).encode(), None, None) for cid in cids
        ]
        if not await self._send(sends, wait=True, retry=True):
            return False
        self.metrics.published.labels("tombstone").inc(len(sends))
        return True

    async def _deselect(self, part: int, period: str, cids: Iterable[str]) -> None:
        """Tombstone the cases; drop their selections once the broker has the tombstones (a
        crash in between replays the decision, which finds the selections and sends again)."""
        gone = sorted(set(cids))
        if not gone:
            return
        async with self._lock(part):
            if not await self._tombstone(period, gone):
                return
            for cid in gone:
                self.cases_table.pop(sel_key(part, period, cid), None)
                self._published.pop(case_id(period, cid), None)

    async def on_decision(self, part: int, value: Any) -> None:
        try:
            decision = Decision.model_validate_json(value if isinstance(value, bytes) else b"")
        except ValidationError:
            self.metrics.errors.labels("cases").inc()
            log.error("evaluation-set decisions: not a decision at partition %d", part)
            return
        try:
            meta = self._meta(part)
            if meta.is_retired(decision.period):
                return
            if decision.kind == "update":
                await self._apply_update(part, decision)
            elif decision.kind == "sync":
                await self._apply_sync(part, decision, meta)
            else:
                await self._apply_retire(part, decision)
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            self.metrics.errors.labels("cases").inc()
            why = type(exc).__name__
            log.error("evaluation-set decision failed at partition %d: %s", part, why)

    def _put_selection(self, part: int, selection: Selection) -> None:
        key = sel_key(part, selection.period, selection.conversation_id)
        raw = selection.model_dump_json().encode()
        if self.cases_table.get(key) != raw:
            self.cases_table[key] = raw
        if selection.period not in self._meta(part).periods:
            self._note_period(part, selection.period)

    async def _apply_update(self, part: int, d: Decision) -> None:
        cid = d.conversation_id
        if cid is None:
            raise ValueError("update without a conversation")
        if d.selection is None:
            await self._deselect(part, d.period, [cid])
            return
        self._put_selection(part, d.selection)
        await self._reconcile(part, [(d.period, cid)])

    async def _apply_sync(self, part: int, d: Decision, meta: ShardMeta) -> None:
        for selection in d.selections:
            self._put_selection(part, selection)
        await self._reconcile(part, [(d.period, s.conversation_id) for s in d.selections])
        if not d.last:
            return
        keep = set(d.keep or ())
        await self._deselect(part, d.period, self._selected(part, d.period) - keep)
        if d.final and d.period not in meta.closed:
            # Membership is final: accumulators of conversations that were not drawn can go.
            prefix = acc_key(part, d.period, "")
            for key in self._keys(prefix):
                if key[len(prefix) :] not in keep:
                    self.cases_table.pop(key, None)
            closed = d.period
            self._update_meta(
                part, lambda m: m.model_copy(update={"closed": sorted({*m.closed, closed})})
            )

    async def _apply_retire(self, part: int, d: Decision) -> None:
        table = self.cases_table
        archive: list[Send] = []
        for selection in d.selections:
            cid = selection.conversation_id
            case = build_case(
                selection,
                table.get(acc_key(part, d.period, cid)),
                table.get(label_key(part, cid)),
                self.config,
            )
            archive.append(
                (self.archive_topic, case.case_id.encode(), case.model_dump_json().encode(), None)
            )
        if self.ready():
            if not await self._send(archive, wait=True, retry=True):
                return
            self.metrics.published.labels("archive").inc(len(archive))
        if not d.last:
            return
        # Tombstones (acknowledged), then the retirement mark, then the deletions: a replay
        # after a crash either archives and tombstones again from intact state, or finds the
        # period retired and does nothing.
        selected = sorted(self._selected(part, d.period))
        async with self._lock(part):
            if not await self._tombstone(d.period, selected):
                return
        self._update_meta(part, lambda m: _retired(m, d.period))
        for cid in selected:
            table.pop(sel_key(part, d.period, cid), None)
            self._published.pop(case_id(d.period, cid), None)
        for key in self._keys(acc_key(part, d.period, "")):
            table.pop(key, None)
        # Labels of conversations with nothing left on this partition go too.
        left = {k.split("|", 3)[3] for k in self._keys(f"{part}|A|") + self._keys(f"{part}|S|")}
        prefix = label_key(part, "")
        for key in self._keys(prefix):
            if key[len(prefix) :] not in left:
                table.pop(key, None)

    # ------------------------------------------------------------------ labels

    async def on_label(self, part: int, value: Any) -> None:
        try:
            review = ReviewLabel.model_validate_json(value if isinstance(value, bytes) else b"")
            label = label_from_review(review)
        except (ValidationError, ValueError):
            self.metrics.errors.labels("labels").inc()
            log.error("evaluation-set labels: not a review label at partition %d", part)
            return
        try:
            cid = label.conversation_id
            key = label_key(part, cid)
            old = self.cases_table.get(key)
            if old:
                prev = EvalLabel.model_validate_json(old)
                if prev.labeled_at and label.labeled_at and prev.labeled_at > label.labeled_at:
                    label = prev  # the latest review wins, whatever order they arrive in
            raw = label.model_dump_json().encode()
            if raw != old:
                self.cases_table[key] = raw
            periods = self._meta(part).periods
            selected = [p for p in periods if sel_key(part, p, cid) in self.cases_table]
            await self._reconcile(part, [(p, cid) for p in selected])
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            self.metrics.errors.labels("labels").inc()
            log.error("evaluation-set label failed at partition %d: %s", part, type(exc).__name__)
