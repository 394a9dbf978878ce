"""The worker's runner of the dataflow: batches of Kafka records in, emits out (no Faust here).

The Faust agents (``services/streaming/app.py``) hand each batch they take from a topic to a
method of :class:`StreamRunner`; the runner threads every record through
:class:`~services.dataflow.flow.Dataflow` with the state of the record's partition, flushes the
state once per batch, and hands the batch's emits to ``send`` (the Faust producer in the worker,
a list in unit tests) without waiting for each record. Only a step with a follow-up
(:class:`~services.dataflow.records.Effects` ``then``: archive, then delete) waits for the
broker's acknowledgement of its records before the follow-up runs. The agents share one line
to ``send``: records reach their topics in the order the stages computed them, whichever agent
computed them (a compacted topic's last record per key is the state's latest).

At least once: the batch's offsets are acknowledged to Faust only after this returns, and Faust
commits them only after the producer has flushed, so a crash replays the batch; every stage is
idempotent per event (keyed by event id and offset). A record that fails in a stage becomes a
``processing_error`` dead letter; the batch goes on.
"""

from __future__ import annotations

import asyncio
import contextvars
import logging
import math
import time
from collections import deque
from collections.abc import Awaitable, Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, TypeVar

from pydantic import BaseModel, TypeAdapter, ValidationError

from schemas.evalset import KafkaSource
from schemas.review import ReviewLabel
from schemas.verdicts import JudgeLabel
from services.alerting.core import JsonView
from services.checking import CheckRequest
from services.dataflow.flow import DLQ, Dataflow, PartitionState, Source, Step
from services.dataflow.questions import QUESTIONS
from services.dataflow.records import Effects, Emit, encode
from services.dataflow.state import KeyedStore, MemoryStore
from services.evalsets.core import DECISIONS, SAMPLES
from services.evalsets.streaming import Decision, SampleIn, SamplerCore
from services.judge import Judge
from services.logs import RepeatFilter
from services.review.core import ReviewOutcome, ReviewState

__all__ = ["PACKED", "MemoryStates", "Record", "Send", "States", "StreamRunner", "pack", "unpack"]

log = logging.getLogger("vigil.worker")

#: ``send(emit)`` queues one record and returns the future of its delivery.
Send = Callable[[Emit], Awaitable["asyncio.Future[Any]"]]


@dataclass(frozen=True, slots=True)
class Record:
    """One consumed Kafka record."""

    value: bytes
    key: bytes | None
    topic: str
    partition: int
    offset: int

    @property
    def label(self) -> str:
        return f"{self.topic}/{self.partition}/{self.offset}"

    def source(self) -> Source:
        ref = KafkaSource(topic=self.topic, partition=self.partition, offset=self.offset)
        return Source(self.label, self.partition, self.offset, ref, self.key)


#: Internal channels whose records for one partition travel packed: a batch's messages to one
#: partition of ``evalset.samples`` or ``evalset.decisions`` are one Kafka record holding a JSON
#: array (one produce and one consumed event per batch instead of per message). The consuming
#: agents take packed and single messages alike.
PACKED = frozenset({SAMPLES, DECISIONS})
#: Largest packed record (well under the broker's default message size of 1 MiB).
PACK_BYTES = 256 * 1024

M = TypeVar("M", bound=BaseModel)


def pack(emits: Sequence[Emit], limit: int = PACK_BYTES) -> list[Emit]:
    """``emits`` with those of :data:`PACKED` channels joined per (channel, partition) into JSON
    arrays of at most ``limit`` bytes (a larger single message travels alone). Order is kept
    within a channel and partition; other emits come first, as they were."""
    out: list[Emit] = []
    groups: dict[tuple[str, int], list[bytes]] = {}
    for emit in emits:
        if emit.channel in PACKED and emit.partition is not None and emit.value is not None:
            data = encode(emit.value)
            assert data is not None
            groups.setdefault((emit.channel, emit.partition), []).append(data)
        else:
            out.append(emit)
    for (channel, partition), values in groups.items():
        chunk: list[bytes] = []
        size = 2
        for data in values:
            if chunk and size + len(data) + 1 > limit:
                out.append(Emit(channel, None, b"[" + b",".join(chunk) + b"]", partition))
                chunk, size = [], 2
            chunk.append(data)
            size += len(data) + 1
        if chunk:
            out.append(Emit(channel, None, b"[" + b",".join(chunk) + b"]", partition))
    return out


_ADAPTERS: dict[type[BaseModel], TypeAdapter[Any]] = {}


def unpack(record: Record, model: type[M]) -> list[M]:
    """The messages of a record: a JSON array of them (packed) or one. Raises ``ValueError``
    (pydantic's ``ValidationError``) when it is neither."""
    value = record.value
    if value[:1] == b"[":
        adapter = _ADAPTERS.get(model)
        if adapter is None:
            adapter = _ADAPTERS[model] = TypeAdapter(list[model])  # type: ignore[valid-type]
        return adapter.validate_json(value)  # type: ignore[no-any-return]
    return [model.model_validate_json(value)]


def _hold_reads(states: Iterable[PartitionState], on: bool) -> None:
    """:meth:`KeyedStore.hold_reads` on every store of ``states``."""
    for st in states:
        for store in st.stores():
            store.hold_reads(on)


class States(Protocol):
    """The stores of each partition: one :class:`KeyedStore` per (kind, partition)."""

    def store(self, kind: str, partition: int) -> KeyedStore: ...

    def forget(self) -> None:
        """Drop stores held for partitions (after a rebalance)."""

    async def drain(self) -> None:
        """Hand the flushed writes' changelog records to the producer."""


class MemoryStates:
    """:class:`States` in memory (unit tests and single-process use)."""

    def __init__(self, flow: Dataflow) -> None:
        self.flow = flow
        self._stores: dict[tuple[str, int], KeyedStore] = {}

    def store(self, kind: str, partition: int) -> KeyedStore:
        key = (kind, partition)
        found = self._stores.get(key)
        if found is None:
            found = self._stores[key] = MemoryStore(self.flow.specs[kind])
        return found

    def forget(self) -> None:
        """Memory stores are the state itself: nothing to drop."""

    async def drain(self) -> None:
        """Nothing to send."""


@dataclass(slots=True)
class _Queued:
    """Emits waiting in :meth:`StreamRunner._send_in_order`'s line."""

    emits: list[Emit]
    #: Set (to the delivery futures) once every emit was handed to ``send``.
    handed: asyncio.Future[list[asyncio.Future[Any]]]
    #: The caller's context: its emits and state records are sent in it (under exactly_once,
    #: in the transaction of the caller's batch, whichever caller hands them over).
    context: contextvars.Context
    futures: list[asyncio.Future[Any]] = field(default_factory=list)


class _RateLimited:
    """Errors of the agents' loops: one line per ``key`` per ``every`` seconds, the next one
    counting those held back (:class:`~services.logs.RepeatFilter` keyed by ``key``)."""

    def __init__(self, every: float = 10.0) -> None:
        self.filter = RepeatFilter(every)

    def error(self, key: str, msg: str, *args: Any, exc: BaseException | None = None) -> None:
        if not log.isEnabledFor(logging.ERROR):
            return
        info = (type(exc), exc, exc.__traceback__) if exc is not None else None
        record = log.makeRecord(
            log.name, logging.ERROR, __file__, 0, msg, args, info, extra={"repeat_key": key}
        )
        if self.filter.filter(record):
            log.handle(record)


class StreamRunner:
    """The dataflow over batches of records (see the module docstring).

    ``deferred``: sampled answers go to the claim-check agent (a judge is configured).
    ``on_review``: called with each review outcome (the worker's review metrics).
    """

    def __init__(
        self,
        flow: Dataflow,
        states: States,
        send: Send,
        *,
        deferred: bool = False,
        judge: Judge | None = None,
        on_review: Callable[[ReviewOutcome], None] | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.flow = flow
        self.states = states
        self.send = send
        self.deferred = deferred
        self.judge = judge
        self.on_review = on_review
        self.clock = clock
        self.errors = _RateLimited()
        self._partitions: dict[int, PartitionState] = {}
        self._sampler: SamplerCore | None = None
        #: Held by the handlers of the partitions' state (screening, checks, decisions, labels)
        #: from their first read of it until their emits and follow-ups are delivered. The
        #: order of emits on the topics is the line's job (:meth:`_send_in_order`, which the
        #: timers join without this lock); this lock keeps a step whose follow-up waits for the
        #: broker (a closing sync, a retirement: state dropped only once the tombstones and
        #: archive copies are acknowledged) whole: no other handler reads or changes that
        #: state in between, so none builds a case from what the follow-up is about to drop.
        self.lock = asyncio.Lock()
        #: Monotonic time of the last re-send of every selection (``-inf``: at the next tick).
        self.last_resync = -math.inf
        #: Called with the periods each sampler tick closed and retired.
        self.on_periods: Callable[[list[str], list[str]], None] | None = None
        #: Emits waiting to be handed to ``send``, in the order they were computed.
        self._outbox: deque[_Queued] = deque()
        self._sending: asyncio.Lock | None = None

    # ------------------------------------------------------------------ state

    def partition_state(self, partition: int) -> PartitionState:
        found = self._partitions.get(partition)
        if found is None:
            s = self.states.store
            specs = self.flow.specs
            found = PartitionState(
                memory=s("memory", partition),
                events=s("events", partition),
                held=s("held", partition),
                questions=s(QUESTIONS, partition),
                review=ReviewState(
                    items=s("review-items", partition),
                    context=s("review-context", partition),
                    caps=s("review-caps", partition),
                ),
                cases=s("evalset-cases", partition) if "evalset-cases" in specs else None,
                counts=(
                    s("alerts-window-counts", partition)
                    if "alerts-window-counts" in specs
                    else None
                ),
            )
            self._partitions[partition] = found
        return found

    @property
    def sampler(self) -> SamplerCore:
        """The stream's one eval-set sampler (its state on partition 0)."""
        core = self.flow.evalsets
        if core is None:
            raise RuntimeError("evaluation sets are disabled")
        if self._sampler is None:
            self._sampler = core.new_sampler(
                self.states.store("evalset-sampler", 0), now=time.monotonic()
            )
        return self._sampler

    def detector_store(self) -> JsonView:
        return JsonView(self.states.store("alerts-detector", 0))

    def reset(self) -> None:
        """After a rebalance or a recovery: drop everything cached from the stores."""
        for st in self._partitions.values():
            for store in st.stores():
                discard = getattr(store, "discard", None)
                if discard is not None:
                    discard()
        self._partitions.clear()
        self.states.forget()
        self.flow.reset()
        if self._sampler is not None:
            self._sampler.invalidate()
            self._sampler = None

    def flush(self, states: Iterable[PartitionState] = ()) -> None:
        """Write what the stages hold, then every buffered store write."""
        self.flow.flush()
        for st in states:
            for store in st.stores():
                store.flush()

    def _stamp(self, now: float, partitions: Iterable[int]) -> list[PartitionState]:
        touched = []
        for p in partitions:
            st = self.partition_state(p)
            st.set_clock(now)
            touched.append(st)
        return touched

    # ------------------------------------------------------------------ delivery

    async def deliver(self, effects: Effects) -> None:
        """Send the emits (in line, see :meth:`_send_in_order`); run the follow-up once they
        are all acknowledged."""
        pending: Effects | None = effects
        while pending is not None:
            try:
                futures = await self._send_in_order(pack(pending.emits))
                if pending.then is None:
                    return
                if futures:
                    await asyncio.gather(*futures)
            except BaseException:
                # Not acknowledged: whatever the follow-up would have let go stays (a held
                # answer may be released again).
                abandon = getattr(pending.then, "abandon", None)
                if abandon is not None:
                    abandon()
                raise
            pending = pending.then()
            self.flush_stores_of(pending)

    async def _send_in_order(self, emits: list[Emit]) -> list[asyncio.Future[Any]]:
        """Hand ``emits`` to ``send`` after the state's changelog records and after every emit
        queued before them, by any agent, timer or follow-up; their delivery futures.

        The agents run concurrently and ``send`` can wait (the producer's batch for a partition
        is full, its metadata is refreshed). Were each caller to send its own emits, a case
        computed before a tombstone of the same key could reach the compacted topic after it,
        and stay there. So a caller takes its place in line when it calls this (before any
        await: right after the stage changed the state), and one caller at a time hands the
        line to ``send`` from its head: the order on every topic is the order the stages
        computed. A caller cancelled while sending leaves the rest of its entry at the head,
        for the next caller.
        """
        loop = asyncio.get_running_loop()
        mine = _Queued(emits, loop.create_future(), contextvars.copy_context())
        self._outbox.append(mine)
        if self._sending is None:
            self._sending = asyncio.Lock()
        async with self._sending:
            while not mine.handed.done():
                head = self._outbox[0]
                try:
                    if head is mine:
                        await self._hand(head)
                    else:
                        await loop.create_task(self._hand(head), context=head.context)
                except Exception as exc:
                    self._outbox.popleft()
                    head.handed.set_exception(exc)
                    continue
                self._outbox.popleft()
                head.handed.set_result(head.futures)
        return mine.handed.result()

    async def _hand(self, entry: _Queued) -> None:
        """The state's changelog records, then the rest of ``entry``'s emits, to ``send``
        (then its ``flush``, when it batches what it is handed)."""
        await self.states.drain()
        while len(entry.futures) < len(entry.emits):
            entry.futures.append(await self.send(entry.emits[len(entry.futures)]))
        flush = getattr(self.send, "flush", None)
        if flush is not None:
            await flush()

    def flush_stores_of(self, _: Effects | None) -> None:
        """Follow-ups write state outside a batch: flush every store that was touched."""
        for st in self._partitions.values():
            for store in st.stores():
                store.flush()
        if self._sampler is not None:
            self.states.store("evalset-sampler", 0).flush()

    def _dead(self, record: Record, stage: str, exc: BaseException) -> Step:
        self.errors.error(
            f"{stage}:{type(exc).__name__}",
            "%s failed at %s: %s",
            stage,
            record.label,
            type(exc).__name__,
            exc=exc,
        )
        dl = self.flow.pipeline.dead_letter(
            record.value, "processing_error", f"{type(exc).__name__} while {stage}", record.label
        )
        return Step([Emit(DLQ, record.key, dl)], dead_letter=dl)

    def _observed(self, step: Step) -> None:
        if self.on_review is not None:
            for done in step.chain():
                for outcome in done.review:
                    self.on_review(outcome)

    # ------------------------------------------------------------------ agents

    async def screen(self, records: Sequence[Record]) -> list[Step]:
        """A batch of ``chat.events`` records: every stage (the check inline unless deferred)."""
        async with self.lock:
            return await self._screen(records)

    async def _screen(self, records: Sequence[Record]) -> list[Step]:
        now = self.clock()
        touched = self._stamp(now, {r.partition for r in records})
        steps: list[Step] = []
        # No await until the flush: nothing else writes these stores meanwhile, so a key read
        # again in the batch (another event of the conversation) is answered from memory.
        _hold_reads(touched, True)
        try:
            for record in records:
                st = self.partition_state(record.partition)
                try:
                    if self.deferred:
                        step = self.flow.screen_deferred(record.value, record.source(), st, now=now)
                    else:
                        step = self.flow.process(record.value, record.source(), st, now=now)
                except Exception as exc:  # a bug must not stop the worker nor lose the message
                    step = self._dead(record, "screening", exc)
                self._observed(step)
                steps.append(step)
        finally:
            _hold_reads(touched, False)
        self.flush(touched)
        await self.deliver(self.flow.delivery(d for s in steps for d in s.chain()))
        return steps

    async def release_held(self, partitions: Iterable[int]) -> list[Step]:
        """Release the held answers of ``partitions`` that are due (the state timer)."""
        now = self.clock()
        touched = self._stamp(now, partitions)
        steps: list[Step] = []

        def failed(exc: Exception) -> None:  # the timer must live on; the answers stay held
            self.errors.error("release", "releasing held answers failed", exc=exc)

        for st in touched:
            steps += self.flow.release_held(st, now=now, deferred=self.deferred, on_error=failed)
        for step in steps:
            self._observed(step)
        self.flush(touched)
        await self.deliver(self.flow.delivery(d for s in steps for d in s.chain()))
        return steps

    async def check(self, records: Sequence[Record]) -> list[Step]:
        """A batch of claim-check requests (deferred mode): ask the judge about all of them at
        once (its concurrency cap applies), then check each answer."""
        requests: list[tuple[Record, CheckRequest | None]] = []
        for record in records:
            try:
                requests.append((record, CheckRequest.model_validate_json(record.value)))
            except ValueError:
                requests.append((record, None))
        labels = await self._judge([r for _, r in requests if r is not None])
        async with self.lock:
            return await self._checked(records, requests, labels)

    async def _checked(
        self,
        records: Sequence[Record],
        requests: list[tuple[Record, CheckRequest | None]],
        labels: dict[str, dict[str, JudgeLabel]],
    ) -> list[Step]:
        now = self.clock()
        touched = self._stamp(now, {r.partition for r in records})
        steps: list[Step] = []
        for record, request in requests:
            st = self.partition_state(record.partition)
            try:
                if request is None:
                    raise ValueError("not a check request")
                got = labels.get(request.event.event_id)
                step = self.flow.check_deferred(request, record.source(), st, now=now, judge=got)
            except Exception as exc:
                step = self._dead(record, "checking claims", exc)
            self._observed(step)
            steps.append(step)
        self.flush(touched)
        await self.deliver(Effects([e for s in steps for e in s.emits]))
        return steps

    async def _judge(self, requests: list[CheckRequest]) -> dict[str, dict[str, JudgeLabel]]:
        if self.judge is None or not requests:
            return {}
        asks = [
            (r.event.event_id, q)
            for r in requests
            for q in self.flow.judge_requests(r.event, r.context)
        ]
        results = await self.judge.judge_all([q for _, q in asks])
        out: dict[str, dict[str, JudgeLabel]] = {}
        for (event_id, q), res in zip(asks, results, strict=True):
            out.setdefault(event_id, {})[q.hypothesis] = res.label
        return out

    async def samples(self, records: Sequence[Record]) -> int:
        """A batch of the eval-set sampler's input (partition 0): summaries and ticks. Returns
        how many summaries were folded in.

        The sampler's writes are committed once per run of summaries (up to the batch's end or
        a tick), not per summary. A summary that fails is dropped alone, as if committed one
        by one: the sampler reloads from its table and folds the run again without it.
        """
        core = self.flow.evalsets
        if core is None:
            return 0
        sampler = self.sampler
        store = self.states.store("evalset-sampler", 0)
        store.now = self.clock()
        messages: list[SampleIn | None] = []
        for record in records:
            try:
                messages += unpack(record, SampleIn)
            except ValueError:
                self.errors.error("sampler:parse", "evaluation-set sampler: not a sample message")
        folded = 0
        start, bad = 0, set[int]()
        effects = Effects()
        i = start
        while i < len(messages):
            msg = messages[i]
            if msg is None or i in bad:
                i += 1
                continue
            try:
                if msg.kind == "tick":
                    sampler.commit()
                    store.flush()
                    await self.deliver(effects)
                    effects = Effects()
                    await self.tick_sampler()
                    start = i = i + 1
                    continue
                effects.emits += core.on_sample(
                    sampler, msg, wall=time.time(), mono=time.monotonic(), commit=False
                )
                folded += 1
                i += 1
            except Exception as exc:
                self.errors.error(
                    f"sampler:{type(exc).__name__}", "evaluation-set sampler failed", exc=exc
                )
                sampler.invalidate()
                store.discard()  # type: ignore[attr-defined]
                bad.add(i)
                folded -= sum(1 for j in range(start, i) if j not in bad and messages[j])
                effects = Effects()
                i = start
        try:
            sampler.commit()
        except Exception as exc:  # a bug: the run's summaries are lost, the sampler lives on
            self.errors.error(
                f"sampler:{type(exc).__name__}", "evaluation-set sampler commit failed", exc=exc
            )
            sampler.invalidate()
            store.discard()  # type: ignore[attr-defined]
            return 0
        store.flush()
        await self.deliver(effects)
        return folded

    async def tick_sampler(self) -> tuple[list[str], list[str]]:
        core = self.flow.evalsets
        if core is None:
            return [], []
        mono = time.monotonic()
        due = mono - self.last_resync >= core.es.resync_seconds
        effects, closed, retired = core.on_tick(
            self.sampler, wall=time.time(), mono=mono, resync=due
        )
        self.states.store("evalset-sampler", 0).flush()
        await self.deliver(effects)
        if due:
            self.last_resync = mono
        if self.on_periods is not None and (closed or retired):
            self.on_periods(closed, retired)
        return closed, retired

    async def decisions(self, records: Sequence[Record]) -> None:
        """A batch of the sampler's decisions, each for the partition it was sent to. Their
        records go out together at the end of the batch, except where a decision has a
        follow-up (a retirement drops state only once its records are acknowledged): then
        what came before goes out with it."""
        async with self.lock:
            await self._decisions(records)

    async def _decisions(self, records: Sequence[Record]) -> None:
        core = self.flow.evalsets
        if core is None:
            return
        touched = self._stamp(self.clock(), {r.partition for r in records})
        emits: list[Emit] = []
        for record, decision in self._decisions_of(records):
            try:
                cases = self.partition_state(record.partition).cases
                assert cases is not None
                effects = core.on_decision(record.partition, decision, cases)
            except Exception as exc:
                self.errors.error(
                    f"cases:{type(exc).__name__}",
                    "evaluation-set decision failed at %s",
                    record.label,
                    exc=exc,
                )
                continue
            if effects.then is None:
                emits += effects.emits
                continue
            self.flush(touched)
            await self.deliver(Effects([*emits, *effects.emits], then=effects.then))
            emits = []
        self.flush(touched)
        await self.deliver(Effects(emits))

    def _decisions_of(self, records: Sequence[Record]) -> list[tuple[Record, Decision]]:
        out: list[tuple[Record, Decision]] = []
        for record in records:
            try:
                out += [(record, d) for d in unpack(record, Decision)]
            except ValidationError as exc:
                self.errors.error(
                    "cases:parse", "not an evaluation-set decision at %s", record.label, exc=exc
                )
        return out

    async def labels(self, records: Sequence[Record]) -> None:
        """A batch of reviewers' labels: joined to the cases of their conversations."""
        async with self.lock:
            await self._labels(records)

    async def _labels(self, records: Sequence[Record]) -> None:
        core = self.flow.evalsets
        if core is None:
            return
        touched = self._stamp(self.clock(), {r.partition for r in records})
        emits: list[Emit] = []
        for record in records:
            try:
                review = ReviewLabel.model_validate_json(record.value)
                cases = self.partition_state(record.partition).cases
                assert cases is not None
                emits += core.on_label(record.partition, review, cases)
            except Exception as exc:
                self.errors.error(
                    f"labels:{type(exc).__name__}",
                    "evaluation-set label failed at %s",
                    record.label,
                    exc=exc,
                )
        self.flush(touched)
        await self.deliver(Effects(emits))

    # ------------------------------------------------------------------ timers

    def sweep(self, partitions: Iterable[int], now: float | None = None) -> dict[str, int]:
        """Expire the state of ``partitions``; how many keys each kind lost."""
        now = self.clock() if now is None else now
        dropped: dict[str, int] = {}
        for p in partitions:
            for kind in self.flow.specs:
                if kind in ("evalset-sampler", "alerts-detector") and p != 0:
                    continue
                store = self.states.store(kind, p)
                store.now = now
                n = store.expire()
                store.flush()
                if n:
                    dropped[kind] = dropped.get(kind, 0) + n
        return dropped
