"""The one dataflow of Vigil: every stage, composed once, for ``vigil scan`` and ``vigil worker``.

For each input record::

    decode ─▶ screen ─▶ sampling decision ─▶ claim check ─▶ review intake
      │          │                              (sampled)      eval-set sample
      ▼          ▼                                             detector windows
     dlq      findings                      verdicts, findings

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

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Literal

from prometheus_client import CollectorRegistry

from schemas.evalset import SourceRef
from schemas.events import ChatEvent
from schemas.outputs import DeadLetter, Finding
from schemas.verdicts import GroundingReport, JudgeLabel
from services.alerting.core import WindowCounter, alerting_specs
from services.alerting.settings import AlertingSettings
from services.checking import CheckRequest
from services.dataflow.records import Emit
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
#: JSON of one remembered value: a 32-hex digest and a float.
_MEMORY_VALUE_BYTES = 64


@dataclass(frozen=True, slots=True)
class Source:
    """Where a record came from: ``label`` for logs and dead letters, the partition and offset
    (a line number in a file), and the reference eval-set cases keep."""

    label: str
    partition: int = 0
    offset: int = 0
    ref: SourceRef | None = None
    #: The record's key (a dead letter keeps it).
    key: bytes | None = None


@dataclass(slots=True)
class PartitionState:
    """The stores of one partition (the worker) or of one run (``vigil scan``)."""

    memory: KeyedStore
    review: ReviewState
    cases: KeyedStore | None = None
    counts: KeyedStore | None = None

    def stores(self) -> Iterator[KeyedStore]:
        yield self.memory
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
        self.specs: dict[str, StateSpec] = {"memory": self.memory_spec(settings)}
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
            max_value_bytes=32 + settings.memory_max_values * _MEMORY_VALUE_BYTES,
            description="Keyed hashes of the values users gave in their own turns.",
            setting="VIGIL_MEMORY_MAX_VALUES",
        )

    # ------------------------------------------------------------------ helpers

    def _at(self, event: ChatEvent, now: float) -> datetime:
        return event.timestamp if self.clock == "event" else datetime.fromtimestamp(now, UTC)

    def _decode(self, raw: bytes, source: Source) -> ChatEvent | Step:
        decoded = self.pipeline.decode(raw, source.label)
        if isinstance(decoded, DeadLetter):
            self.pipeline.reject(decoded)
            return Step([Emit(DLQ, source.key, decoded)], dead_letter=decoded)
        return decoded

    def _screen(self, event: ChatEvent, st: PartitionState, step: Step) -> None:
        cid = event.conversation_id
        raw = st.memory.get(cid)
        before = ConversationMemory.model_validate_json(raw) if raw else None
        out = self.pipeline.screen(event, before)
        if out.memory is not None and out.memory is not before:
            st.memory[cid] = out.memory.model_dump_json().encode()
        step.event = event
        step.abstained = out.abstained
        step.findings = list(out.findings)
        key = cid.encode()
        step.emits += [Emit(FINDINGS, key, f) for f in out.findings]
        step.decision = self.pipeline.decide(event, out.findings)

    def _count(
        self,
        event: ChatEvent,
        findings: list[Finding],
        st: PartitionState,
        source: Source,
        now: float,
    ) -> None:
        if self.counter is not None and st.counts is not None:
            self.counter.count(
                event,
                findings,
                st.counts,
                partition=source.partition,
                offset=source.offset,
                now=now,
            )

    def judge_requests(self, event: ChatEvent) -> list[JudgeRequest]:
        """What to ask the judge about an answer's claims."""
        return self.pipeline.checker.judge_requests(event)

    # ------------------------------------------------------------------ inline

    def process(
        self,
        raw: bytes,
        source: Source,
        st: PartitionState,
        *,
        now: float,
        judge: Callable[[ChatEvent], dict[str, JudgeLabel]] | None = None,
    ) -> Step:
        """Every stage for one record, the check inline (see the module docstring). ``judge``
        asks the judge about a sampled answer's claims (``vigil scan`` with a judge)."""
        decoded = self._decode(raw, source)
        if isinstance(decoded, Step):
            return decoded
        event = decoded
        step = Step()
        self._screen(event, st, step)
        screened = list(step.findings)
        decision = step.decision
        if decision is not None and decision.sampled:
            labels = judge(event) if judge is not None else None
            checked = self.pipeline.check(event, decision, labels, screened)
            step.report = checked.report
            step.findings += checked.findings
            key = event.conversation_id.encode()
            step.emits.append(Emit(VERDICTS, key, checked.report))
            step.emits += [Emit(FINDINGS, key, f) for f in checked.findings]
        self._after(event, step, st, source, now, screened=screened)
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
            self._count(event, screened, st, source, now)

    # ------------------------------------------------------------------ deferred

    def screen_deferred(
        self, raw: bytes, source: Source, st: PartitionState, *, now: float
    ) -> Step:
        """Screening and its hooks; a sampled answer becomes a :class:`CheckRequest` on the
        ``checks`` channel (for :meth:`check_deferred`)."""
        decoded = self._decode(raw, source)
        if isinstance(decoded, Step):
            return decoded
        event = decoded
        step = Step()
        self._screen(event, st, step)
        screened = list(step.findings)
        sampled = step.decision is not None and step.decision.sampled
        self._after(
            event, step, st, source, now, screened=screened, check="pending" if sampled else None
        )
        if sampled and step.decision is not None:
            request = CheckRequest(event=event, decision=step.decision, findings=screened)
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
        checked = self.pipeline.check(event, request.decision, judge, request.findings)
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
        self.review.forget_caches()
        if self.counter is not None:
            self.counter.reset()
        if self.evalsets is not None:
            self.evalsets.forget_caches()
