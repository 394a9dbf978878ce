"""The one dataflow of Vigil: every stage, composed once, for ``vigil scan`` and ``vigil worker``.

For each input record::

    decode ─▶ skip a repeated ─▶ screen ─▶ sampling decision ─▶ claim check ─▶ review intake
      │       event id             │  │                        (sampled)      eval-set sample
      ▼                            │  ▼                                       detector windows
     dlq          hold an answer ◀─┘ findings                 verdicts, findings
                  with a leak for the reorder window (released: screened again, and on)

:class:`Dataflow` holds the stages (:class:`~services.pipeline.Pipeline` for decode, screening,
sampling and the check; :class:`~services.review.core.ReviewCore`;
:class:`~services.evalsets.core.EvalsetCore`; :class:`~services.alerting.core.WindowCounter`)
and the specs of their state. It does no I/O: a call takes the record, the partition's state
(:class:`PartitionState`) and the runner's clock, and returns a :class:`Step` with the records to
emit on channels (:mod:`services.dataflow.records`) and what happened, for the runner's counts.

Two compositions of the same stages:

- **inline** (:meth:`Dataflow.process`): the check runs right after screening, and review,
  eval sets and the detector see the answer once with all its findings and its verdict. ``vigil
  scan`` always; the worker when no judge is configured.
- **deferred** (:meth:`Dataflow.screen_deferred` then :meth:`Dataflow.check_deferred`): the
  worker with a judge hands sampled answers to the claim-check agent on the ``checks`` channel,
  so a slow judge never stalls screening; review and eval sets see the answer twice, after
  screening and after its check.

The judge itself is I/O: the runner asks it (``judge_requests``) and passes its labels in.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Literal

from prometheus_client import CollectorRegistry

from schemas.events import ChatEvent
from schemas.outputs import DeadLetter, Finding
from schemas.verdicts import GroundingReport, JudgeLabel, MedicalContext
from services.alerting.core import WindowCounter, alerting_specs
from services.alerting.settings import AlertingSettings
from services.checking import CheckRequest
from services.dataflow.questions import QuestionContexts
from services.dataflow.records import Effects, Emit, Source
from services.dataflow.reorder import HELD, Reorder, held_spec
from services.dataflow.state import KeyedStore, StateSpec
from services.evalsets.core import EvalsetCore, evalset_specs
from services.evalsets.settings import EvalsetSettings
from services.judge import JudgeRequest
from services.pipeline import Pipeline
from services.review.core import ReviewCore, ReviewOutcome, ReviewState, review_specs
from services.review.settings import load_review_policy, load_settings
from services.sampling import SampleDecision
from services.screening import ConversationMemory
from services.settings import Settings

__all__ = [
    "CHECKS",
    "DLQ",
    "FINDINGS",
    "VERDICTS",
    "Dataflow",
    "Judging",
    "PartitionState",
    "Source",
    "Step",
]

FINDINGS = "findings"
DLQ = "dlq"
VERDICTS = "verdicts"
CHECKS = "checks"

#: Kinds whose keys must outlive a scan (written at its end); the scan applies only their bound.
KEPT_TO_END = frozenset({"review-items", "evalset-cases", "evalset-sampler"})
#: JSON of one remembered value: a 32-hex digest, the time, the turn and the rule id.
_MEMORY_VALUE_BYTES = 64 + 8 + 72
#: JSON of one held answer in the memory: its event id (at most 256 characters) and due time.
_HELD_ENTRY_BYTES = 300


class _Unread:
    """A memory argument not given: read it from the store."""


UNREAD = _Unread()
#: The runner's judge for an answer and its question's context: the judge's labels of its claims.
Judging = Callable[[ChatEvent, MedicalContext | None], dict[str, JudgeLabel]]
#: The position of a record (a Kafka offset or a line number), as ASCII digits.
_EVENT_MARK_BYTES = 24


@dataclass(slots=True)
class PartitionState:
    """The stores of one partition (the worker) or of one run (``vigil scan``)."""

    memory: KeyedStore
    review: ReviewState
    cases: KeyedStore | None = None
    counts: KeyedStore | None = None
    #: Event ids seen within the duplicate window (:meth:`Dataflow.events_spec`).
    events: KeyedStore | None = None
    #: Answers held for the reorder window (:mod:`services.dataflow.reorder`).
    held: KeyedStore | None = None
    #: Drugs and population of user turns, for their answers' checks
    #: (:mod:`services.dataflow.questions`).
    questions: KeyedStore | None = None

    def stores(self) -> Iterator[KeyedStore]:
        yield self.memory
        if self.questions is not None:
            yield self.questions
        if self.events is not None:
            yield self.events
        if self.held is not None:
            yield self.held
        yield from self.review.stores()
        if self.cases is not None:
            yield self.cases
        if self.counts is not None:
            yield self.counts

    def set_clock(self, now: float) -> None:
        for store in self.stores():
            store.now = now


@dataclass(slots=True)
class Step:
    """What one record did: the records to emit, and the facts the runner counts."""

    emits: list[Emit] = field(default_factory=list)
    event: ChatEvent | None = None
    dead_letter: DeadLetter | None = None
    #: Every finding of the event emitted in this step (screening and claim checks).
    findings: list[Finding] = field(default_factory=list)
    abstained: bool | None = None
    decision: SampleDecision | None = None
    report: GroundingReport | None = None
    #: Set by the deferred composition: the request handed to the claim-check agent.
    request: CheckRequest | None = None
    review: list[ReviewOutcome] = field(default_factory=list)
    #: The record repeats the event id of an earlier record (skipped, nothing emitted).
    duplicate: bool = False
    #: The answer is held for the reorder window (screened again when released).
    held: bool = False
    #: Held answers of the conversation this record released, each a step of its own.
    released: list[Step] = field(default_factory=list)
    #: This step is a held answer released: ``(state, conversation, event id)``. It stays held
    #: (in the store and the conversation's memory) until the step's records are acknowledged
    #: (:meth:`Dataflow.delivery`): a crash in between releases it again, never loses it.
    unhold: tuple[PartitionState, str, str] | None = None

    def chain(self) -> Iterator[Step]:
        """This step and every step it released, in order (what a runner delivers and counts)."""
        yield self
        for step in self.released:
            yield from step.chain()


class _Unhold:
    """The follow-up of a delivery with released held answers (:meth:`Dataflow.delivery`);
    :meth:`abandon` when the records were not acknowledged: they may be released again."""

    def __init__(self, flow: Dataflow, holds: list[tuple[PartitionState, str, str]]) -> None:
        self.flow = flow
        self.holds = holds

    def __call__(self) -> Effects:
        self.flow.unhold(self.holds)
        return Effects()

    def abandon(self) -> None:
        for _, conversation_id, event_id in self.holds:
            self.flow.releasing.discard((conversation_id, event_id))


@dataclass(frozen=True, slots=True)
class _Taken:
    """A record taken for screening (:meth:`Dataflow._take`)."""

    event: ChatEvent
    now: float
    released: list[Step]
    memory: ConversationMemory | _Unread | None


class Dataflow:
    """The stages and their state specs (see the module docstring).

    ``clock``: ``"event"`` in ``vigil scan`` (review items are stamped with the event time; state
    ages on event time), ``"wall"`` in the worker. ``partitions``: the input topic's partition
    count (the tenant cap is shared out over them; eval-set decisions are routed by it).
    """

    def __init__(
        self,
        settings: Settings,
        registry: CollectorRegistry | None = None,
        *,
        clock: Literal["event", "wall"] = "event",
        partitions: int = 1,
        pipeline: Pipeline | None = None,
    ) -> None:
        self.settings = settings
        self.clock = clock
        self.partitions = partitions
        self.pipeline = pipeline or Pipeline(settings, registry)
        self.review_settings = load_settings()
        policy = load_review_policy(self.review_settings)
        self.review = ReviewCore(
            policy,
            key=settings.sample_key_bytes,
            max_value_bytes=self.review_settings.max_value_bytes,
            cache_bytes=self.review_settings.cache_bytes,
            partitions=partitions if clock == "wall" else 1,
            retain_originals=clock == "wall",
        )
        es = EvalsetSettings()
        self.evalset_settings = es
        self.evalsets = (
            EvalsetCore(es, partitions=partitions, live=clock == "wall") if es.enabled else None
        )
        ac = AlertingSettings()
        self.alerting_settings = ac
        # The detector needs windows of processing time: only the worker counts them.
        self.counter = (
            WindowCounter(ac, self.pipeline.metrics.tenant_label)
            if ac.enabled and clock == "wall"
            else None
        )
        self.reorder = Reorder(settings)
        #: Held answers released whose records are not yet acknowledged: ``(conversation, event
        #: id)``. This process does not release them again meanwhile; a crash forgets them with
        #: the process, and the state, which still holds them, has them released again.
        self.releasing: set[tuple[str, str]] = set()
        self.questions = QuestionContexts(settings, self.pipeline.checker)
        self.specs: dict[str, StateSpec] = {
            "memory": self.memory_spec(settings),
            "events": self.events_spec(settings),
            HELD: held_spec(settings),
            self.questions.spec.kind: self.questions.spec,
        }
        self.specs.update(review_specs(self.review_settings, policy))
        if self.evalsets is not None:
            self.specs.update(evalset_specs(es))
        if self.counter is not None:
            self.specs.update(alerting_specs(ac))

    @staticmethod
    def memory_spec(settings: Settings) -> StateSpec:
        return StateSpec(
            kind="memory",
            max_entries=settings.memory_max_conversations,
            ttl_seconds=settings.memory_max_age_seconds,
            max_value_bytes=48
            + settings.memory_max_values * _MEMORY_VALUE_BYTES
            + settings.reorder_max_held * _HELD_ENTRY_BYTES,
            description="Keyed hashes of the values users gave in their own turns.",
            setting="VIGIL_MEMORY_MAX_VALUES",
        )

    @staticmethod
    def events_spec(settings: Settings) -> StateSpec:
        return StateSpec(
            kind="events",
            max_entries=settings.duplicate_max_events,
            ttl_seconds=settings.duplicate_window_seconds,
            max_value_bytes=_EVENT_MARK_BYTES,
            description="Event ids seen, each with the position of the record that brought it.",
            setting="a fixed size (an event id of at most 256 characters and a position)",
        )

    # ------------------------------------------------------------------ helpers

    def _duplicate(self, event: ChatEvent, st: PartitionState, source: Source) -> Step | None:
        """A :class:`Step` that skips ``event`` when an earlier record brought the same event id
        within the duplicate window; ``None`` to process it. The same record read again (a
        redelivery after a crash: same position) is not a duplicate: it is processed as before,
        and every stage is idempotent for it."""
        if st.events is None:
            return None
        mark = str(source.offset).encode()
        first = st.events.get(event.event_id)
        if first is None:
            st.events[event.event_id] = mark
            return None
        if first == mark:
            return None
        self.pipeline.metrics.observe_duplicate()
        return Step(duplicate=True)

    def _at(self, event: ChatEvent, now: float) -> datetime:
        return event.timestamp if self.clock == "event" else datetime.fromtimestamp(now, UTC)

    def _decode(self, raw: bytes, source: Source) -> ChatEvent | Step:
        decoded = self.pipeline.decode(raw, source.label)
        if isinstance(decoded, DeadLetter):
            self.pipeline.reject(decoded)
            return Step([Emit(DLQ, source.key, decoded)], dead_letter=decoded)
        return decoded

    def _screen(
        self,
        event: ChatEvent,
        st: PartitionState,
        step: Step,
        source: Source,
        now: float,
        *,
        released: bool = False,
        memory: ConversationMemory | _Unread | None = UNREAD,
    ) -> bool:
        """Screen ``event`` into ``step``; ``False`` when it is an answer with a leak now held
        for the reorder window (nothing more to do with it until it is released). ``memory``:
        the conversation's memory when the caller has just read it."""
        cid = event.conversation_id
        before = self._memory(st, cid) if isinstance(memory, _Unread) else memory
        t0 = time.perf_counter()
        out = self.pipeline.screener(event, before)
        seconds = time.perf_counter() - t0
        memory = out.memory
        if not released and any(f.direction == "leak" for f in out.findings):
            holding = self.reorder.hold(
                event, before, st.held, source, now, releasing=self._releasing_of(cid)
            )
            if holding is not None:
                st.memory[cid] = holding.model_dump_json().encode()
                self.pipeline.metrics.observe_held()
                step.held = True
                return False
        if memory is not None and memory is not before:
            st.memory[cid] = memory.model_dump_json().encode()
        self.pipeline.count(event, out, seconds)
        if st.questions is not None:
            self.questions.remember(st.questions, event)
        step.event = event
        step.abstained = out.abstained
        step.findings = list(out.findings)
        key = cid.encode()
        step.emits += [Emit(FINDINGS, key, f) for f in out.findings]
        step.decision = self.pipeline.decide(event, out.findings)
        return True

    @staticmethod
    def _memory(st: PartitionState, conversation_id: str) -> ConversationMemory | None:
        raw = st.memory.get(conversation_id)
        return ConversationMemory.load(raw) if raw else None

    def _release(
        self,
        conversation_id: str,
        st: PartitionState,
        now: float,
        run: Callable[[ChatEvent, Source], Step],
        *,
        everything: bool = False,
        next_turn: int | None = None,
        memory: ConversationMemory | _Unread | None = UNREAD,
    ) -> list[Step]:
        """Release the conversation's held answers that are due, or before ``next_turn``, or
        all of them (``everything``), each run through ``run`` as if it arrived now."""
        if st.held is None:
            return []
        if isinstance(memory, _Unread):
            memory = self._memory(st, conversation_id)
        due = self.reorder.due(memory, now, everything=everything, next_turn=next_turn)
        steps: list[Step] = []
        marked: list[tuple[str, str]] = []
        try:
            for event_id in due:
                ident = (conversation_id, event_id)
                if ident in self.releasing:  # released already, its records not yet acknowledged
                    continue
                found = self.reorder.peek(st.held, conversation_id, event_id)
                if found is None:  # gone from the store: only its entry in the memory is left
                    self._forget_held(st, conversation_id, event_id)
                    continue
                self.releasing.add(ident)
                marked.append(ident)
                step = run(*found)
                step.unhold = (st, conversation_id, event_id)
                steps.append(step)
        except BaseException:
            # None of these steps reaches a delivery: their answers stay held, and must not
            # stay marked as being released, or no later release would try them again.
            self.releasing.difference_update(marked)
            raise
        return steps

    def _releasing_of(self, conversation_id: str) -> set[str]:
        """The event ids of the conversation's held answers being released."""
        if not self.releasing:
            return set()
        return {eid for cid, eid in self.releasing if cid == conversation_id}

    def _forget_held(self, st: PartitionState, conversation_id: str, event_id: str) -> None:
        """Drop a held answer from the conversation's memory and from the store."""
        raw = st.memory.get(conversation_id)
        if raw:
            mem = ConversationMemory.load(raw)
            if event_id in mem.held:
                rest = {e: d for e, d in mem.held.items() if e != event_id}
                st.memory[conversation_id] = mem.with_held(rest).model_dump_json().encode()
        if st.held is not None:
            self.reorder.drop(st.held, conversation_id, event_id)

    def delivery(self, steps: Iterable[Step]) -> Effects:
        """What a runner delivers for ``steps`` (each step alone, not its chain): their emits,
        in order, and, for the held answers among them, the follow-up that lets them go once
        every record is acknowledged (a crash before that finds them still held)."""
        emits: list[Emit] = []
        holds: list[tuple[PartitionState, str, str]] = []
        for step in steps:
            emits += step.emits
            if step.unhold is not None:
                holds.append(step.unhold)
        return Effects(emits, then=_Unhold(self, holds) if holds else None)

    def unhold(self, holds: Iterable[tuple[PartitionState, str, str]]) -> None:
        """The released answers' records are acknowledged: they leave the state. One that is
        no longer being released (:meth:`reset` after a rebalance: its partition may be another
        worker's now, which releases it again) is left alone."""
        for st, conversation_id, event_id in holds:
            if (conversation_id, event_id) not in self.releasing:
                continue
            self.releasing.discard((conversation_id, event_id))
            self._forget_held(st, conversation_id, event_id)

    def release_held(
        self,
        st: PartitionState,
        *,
        now: float,
        deferred: bool = False,
        everything: bool = False,
        judge: Judging | None = None,
        on_error: Callable[[Exception], None] | None = None,
    ) -> list[Step]:
        """Release every held answer of the partition (or run) that is due, or all of them
        (``everything``: the end of a scan). The runners call this at their sweeps.

        A conversation whose release fails keeps its answers held (for the next sweep) and,
        given ``on_error``, is reported there while the other conversations are released;
        without it the error is raised, and nothing released by this call stays marked."""
        if st.held is None or not len(st.held):
            return []
        steps: list[Step] = []
        for cid in self.reorder.conversations(st.held):
            try:
                steps += self._release(
                    cid, st, now, self._runner(st, now, deferred, judge), everything=everything
                )
            except Exception as exc:
                if on_error is None:  # the steps so far are not delivered either
                    for step in steps:
                        if step.unhold is not None:
                            self.releasing.discard((step.unhold[1], step.unhold[2]))
                    raise
                on_error(exc)
        return steps

    def _runner(
        self,
        st: PartitionState,
        now: float,
        deferred: bool,
        judge: Judging | None,
    ) -> Callable[[ChatEvent, Source], Step]:
        """How a released answer is processed: as the runner processes records."""
        if deferred:
            return lambda event, source: self._deferred(event, source, st, now, released=True)
        return lambda event, source: self._inline(event, source, st, now, judge, released=True)

    def _count(
        self,
        event: ChatEvent,
        findings: list[Finding],
        st: PartitionState,
        source: Source,
        now: float,
        *,
        released: bool = False,
    ) -> None:
        if self.counter is not None and st.counts is not None:
            self.counter.count(
                event,
                findings,
                st.counts,
                partition=source.partition,
                offset=None if released else source.offset,
                now=now,
            )

    def judge_requests(
        self, event: ChatEvent, context: MedicalContext | None = None
    ) -> list[JudgeRequest]:
        """What to ask the judge about an answer's claims (``context``: as for its check)."""
        return self.pipeline.checker.judge_requests(event, context)

    def _question(self, event: ChatEvent, st: PartitionState) -> MedicalContext | None:
        """The context of the user turn before the answer ``event``, for its check."""
        return None if st.questions is None else self.questions.for_answer(st.questions, event)

    # ------------------------------------------------------------------ inline

    def process(
        self,
        raw: bytes,
        source: Source,
        st: PartitionState,
        *,
        now: float,
        judge: Judging | None = None,
    ) -> Step:
        """Every stage for one record, the check inline (see the module docstring). ``judge``
        asks the judge about a sampled answer's claims (``vigil scan`` with a judge)."""
        taken = self._take(raw, source, st, now, deferred=False, judge=judge)
        if isinstance(taken, Step):
            return taken
        step = self._inline(taken.event, source, st, taken.now, judge, memory=taken.memory)
        step.released = taken.released
        return step

    def _take(
        self,
        raw: bytes,
        source: Source,
        st: PartitionState,
        now: float,
        *,
        deferred: bool,
        judge: Judging | None,
    ) -> Step | _Taken:
        """What both compositions do before screening: decode (or a dead letter), skip a
        repeated event id, release the conversation's held answers that must go first."""
        decoded = self._decode(raw, source)
        if isinstance(decoded, Step):
            return decoded
        event = decoded
        skipped = self._duplicate(event, st, source)
        if skipped is not None:
            return skipped
        if self.clock == "event":  # the event's own time counts: the scan's clock follows it
            now = max(now, event.timestamp.timestamp())
        # Held answers first: a user turn after the window must not make them echoes, and a
        # later turn must come after them. The memory is read once when nothing is released.
        memory = self._memory(st, event.conversation_id)
        released = self._release(
            event.conversation_id,
            st,
            now,
            self._runner(st, now, deferred, judge),
            next_turn=event.turn_index,
            memory=memory,
        )
        return _Taken(event, now, released, UNREAD if released else memory)

    def _inline(
        self,
        event: ChatEvent,
        source: Source,
        st: PartitionState,
        now: float,
        judge: Judging | None,
        *,
        released: bool = False,
        memory: ConversationMemory | _Unread | None = UNREAD,
    ) -> Step:
        step = Step()
        if not self._screen(event, st, step, source, now, released=released, memory=memory):
            return step
        screened = list(step.findings)
        decision = step.decision
        if decision is not None and decision.sampled:
            context = self._question(event, st)
            labels = judge(event, context) if judge is not None else None
            checked = self.pipeline.check(event, decision, labels, screened, context)
            step.report = checked.report
            step.findings += checked.findings
            key = event.conversation_id.encode()
            step.emits.append(Emit(VERDICTS, key, checked.report))
            step.emits += [Emit(FINDINGS, key, f) for f in checked.findings]
        self._after(event, step, st, source, now, screened=screened, released=released)
        return step

    def _after(
        self,
        event: ChatEvent,
        step: Step,
        st: PartitionState,
        source: Source,
        now: float,
        *,
        screened: list[Finding],
        check: Literal["pending", "done"] | None = None,
        remember: bool = True,
        first: bool = True,
        released: bool = False,
    ) -> None:
        outcome = self.review.observe(
            event,
            step.findings,
            step.report,
            st.review,
            at=self._at(event, now),
            partition=source.partition if self.clock == "wall" else None,
            remember=remember,
        )
        if outcome is not None:
            step.review.append(outcome)
        if self.evalsets is not None and st.cases is not None:
            step.emits += self.evalsets.observe(
                event,
                step.findings,
                step.report,
                source.ref,
                st.cases,
                source.partition,
                screened=first,
                check=check,
            )
        if first:
            self._count(event, screened, st, source, now, released=released)

    # ------------------------------------------------------------------ deferred

    def screen_deferred(
        self, raw: bytes, source: Source, st: PartitionState, *, now: float
    ) -> Step:
        """Screening and its hooks; a sampled answer becomes a :class:`CheckRequest` on the
        ``checks`` channel (for :meth:`check_deferred`)."""
        taken = self._take(raw, source, st, now, deferred=True, judge=None)
        if isinstance(taken, Step):
            return taken
        step = self._deferred(taken.event, source, st, taken.now, memory=taken.memory)
        step.released = taken.released
        return step

    def _deferred(
        self,
        event: ChatEvent,
        source: Source,
        st: PartitionState,
        now: float,
        *,
        released: bool = False,
        memory: ConversationMemory | _Unread | None = UNREAD,
    ) -> Step:
        step = Step()
        if not self._screen(event, st, step, source, now, released=released, memory=memory):
            return step
        screened = list(step.findings)
        sampled = step.decision is not None and step.decision.sampled
        check: Literal["pending"] | None = "pending" if sampled else None
        self._after(event, step, st, source, now, screened=screened, check=check, released=released)
        if sampled and step.decision is not None:
            request = CheckRequest(
                event=event,
                decision=step.decision,
                findings=screened,
                context=self._question(event, st),
            )
            step.request = request
            step.emits.append(Emit(CHECKS, event.conversation_id.encode(), request))
        return step

    def check_deferred(
        self,
        request: CheckRequest,
        source: Source,
        st: PartitionState,
        *,
        now: float,
        judge: dict[str, JudgeLabel] | None = None,
    ) -> Step:
        """The claim check of a sampled answer and the hooks that see its verdict."""
        event = request.event
        checked = self.pipeline.check(
            event, request.decision, judge, request.findings, request.context
        )
        key = event.conversation_id.encode()
        step = Step(
            event=event, report=checked.report, findings=[*request.findings, *checked.findings]
        )
        step.emits.append(Emit(VERDICTS, key, checked.report))
        step.emits += [Emit(FINDINGS, key, f) for f in checked.findings]
        self._after(
            event,
            step,
            st,
            source,
            now,
            screened=request.findings,
            check="done",
            remember=False,
            first=False,
        )
        return step

    # ------------------------------------------------------------------ batches

    def flush(self) -> None:
        """End of a batch: write state the stages hold between writes."""
        self.review.flush()
        if self.evalsets is not None:
            self.evalsets.flush()
        if self.counter is not None:
            self.counter.flush()

    def reset(self) -> None:
        """After a rebalance or recovery: drop what the stages cached from the stores."""
        self.releasing.clear()
        self.review.forget_caches()
        if self.counter is not None:
            self.counter.reset()
        if self.evalsets is not None:
            self.evalsets.forget_caches()
