"""Evaluation cases from a conversation's events, findings and verdicts, and label joins.

Which answer a case evaluates
    Of the conversation's assistant answers in the period, the latest one that was claim-checked
    (it has a :class:`~schemas.verdicts.GroundingReport`); when none was checked, the latest
    answer. The question is the last user turn before that answer. A conversation whose period
    slice has no answer gives a case with ``answer = None`` (its question is the last user turn).
    Every *other* checked answer that carries a critical finding (an ungrounded dose, a leaked
    credential, ...) becomes a case of its own (``unit: answer``, case id
    ``<period>:<conversation_id>#<event_id>``), so a gate on critical answers sees each of them.
    Answers are kept up to :data:`MAX_ANSWERS` per conversation, critical checked ones first;
    a critical answer that still had to go is counted on the conversation's case
    (``critical_answers_unseen``).

Incremental
    :class:`CaseAccumulator` folds events in as they arrive (the streaming agent keeps one per
    sampled conversation and period; ``vigil scan`` one per conversation in an LRU), masking every
    text on the way in, so unmasked content never enters state. :func:`build_case` is the same
    fold over lists.

Labels
    :func:`attach_labels` joins review labels to cases: by ``case_id`` when the label has one,
    else by ``event_id`` (the answer the reviewer judged), else to every case of the
    conversation. When several labels reach one case, the latest ``labeled_at`` wins.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Final, Literal, Protocol, TypeVar

from pydantic import AwareDatetime, BaseModel, ConfigDict, Field

from schemas.evalset import CaseContext, EvalCase, EvalLabel, SourceRef
from schemas.events import ChatEvent
from schemas.outputs import Finding
from schemas.review import Gap
from schemas.verdicts import GroundingReport
from services.evalsets.config import EvalsetConfig
from services.evalsets.masking import mask_text, masked_values, replace_values
from services.evalsets.sampler import Selection

__all__ = [
    "MAX_ANSWERS",
    "MAX_FINDINGS",
    "AnswerSnapshot",
    "CaseAccumulator",
    "LabelJoin",
    "attach_labels",
    "build_case",
    "build_cases",
    "case_id",
    "stored_case_ids",
]

MAX_ANSWERS: Final = 16
MAX_FINDINGS: Final = 256


def case_id(period: str, conversation_id: str, answer: str | None = None) -> str:
    """The case id, also the key of the compacted ``vigil.evalset`` topic; with ``answer``, the
    id of the case of one more critical answer of the conversation."""
    base = f"{period}:{conversation_id}"
    return base if answer is None else f"{base}#{answer}"


class _Rank:
    """How an answer ranks (as the conversation's evaluated answer, as a case of its own).

    The fields are the models' own (declared for type checking only: pydantic would take
    annotations here for fields, ahead of the models' own order)."""

    if TYPE_CHECKING:
        report: object | None
        turn_index: int
        timestamp: datetime
        critical: bool

    @property
    def rank(self) -> tuple[bool, int, datetime]:
        """Which answer a conversation's case evaluates: the latest checked one."""
        return (self.report is not None, self.turn_index, self.timestamp)

    @property
    def critical_case(self) -> bool:
        return self.critical and self.report is not None


class AnswerSnapshot(_Rank, BaseModel):
    """One assistant answer as the case needs it (texts already masked)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    event_id: str
    turn_index: int
    timestamp: AwareDatetime
    question: str | None
    answer: str
    abstained: bool
    confidence: float | None
    contexts: list[CaseContext]
    citations: list[str]
    report: GroundingReport | None = None
    critical: bool = False
    #: Elision markers in ``answer`` / ``question`` (set when the accumulator was shortened to
    #: fit its byte ceiling, :mod:`services.evalsets.bounds`).
    answer_gaps: list[Gap] = Field(default_factory=list)
    question_gaps: list[Gap] = Field(default_factory=list)

    @property
    def keep_rank(self) -> tuple[bool, bool, int, datetime]:
        """Which answers are kept: critical checked ones, then checked ones, then the latest."""
        checked = self.report is not None
        return (checked and self.critical, checked, self.turn_index, self.timestamp)


def _mask_report(report: GroundingReport, values: Sequence[tuple[str, str]]) -> GroundingReport:
    """Mask the report's texts (``services.checking`` already does; this is idempotent):
    ``values`` are the answer's :func:`~services.evalsets.masking.masked_values` (none: the
    report as it is)."""
    if not values:
        return report

    def m(text: str) -> str:
        return replace_values(text, values)

    claims = [c.model_copy(update={"text": m(c.text)}) for c in report.claims]
    return report.model_copy(
        update={
            "claims": claims,
            "ungrounded": [m(t) for t in report.ungrounded],
            "unsupported_citations": [
                i.model_copy(update={"claim": m(i.claim)}) for i in report.unsupported_citations
            ],
        }
    )


def _values(
    content: str, findings: Sequence[Finding], config: EvalsetConfig
) -> list[tuple[str, str]]:
    """The values matched in a message that texts derived from it have masked (none when
    masking is off)."""
    return masked_values(content, findings, config.mask_categories) if config.mask_pii else []


def _has_source(sources: Sequence[SourceRef], source: SourceRef) -> bool:
    """``source in sources``, as pydantic's ``==`` decides it for these models (same class,
    same field values: they have no private or extra attributes), without its cost per item."""
    kind, fields = type(source), source.__dict__
    return any(type(s) is kind and s.__dict__ == fields for s in sources)


class CaseAccumulator(BaseModel):
    """What a case of one conversation and period needs, folded event by event (idempotent)."""

    model_config = ConfigDict(extra="forbid")

    conversation_id: str
    period: str
    last_user_turn: int | None = None
    last_user_text: str | None = None
    answers: list[AnswerSnapshot] = Field(default_factory=list)
    findings: list[Finding] = Field(default_factory=list)
    findings_dropped: int = 0
    sources: list[SourceRef] = Field(default_factory=list)
    critical_dropped: int = 0
    #: Shortening to the byte ceiling (:mod:`services.evalsets.bounds`): the elision markers of
    #: ``last_user_text``, the oldest sources left out, whether anything was shortened.
    last_user_gaps: list[Gap] = Field(default_factory=list)
    sources_dropped: int = 0
    trimmed: bool = False

    def _mask(self, text: str, findings: Sequence[Finding], config: EvalsetConfig) -> str:
        return mask_text(text, findings, config.mask_categories) if config.mask_pii else text

    def _masked_findings(
        self, own: Sequence[Finding], values: Sequence[tuple[str, str]], config: EvalsetConfig
    ) -> list[Finding]:
        """Findings of unmasked categories (medical, grounding, ...) keep their evidence text,
        which may contain a value another finding masks (``values``): mask those values in it
        too. A finding with nothing to mask is kept as it is."""
        cats = config.mask_categories
        out = []
        for f in own:
            evidence = f.evidence if f.category in cats else replace_values(f.evidence, values)
            out.append(f if evidence == f.evidence else f.model_copy(update={"evidence": evidence}))
        return out

    def observe(
        self,
        event: ChatEvent,
        findings: Sequence[Finding],
        config: EvalsetConfig,
        report: GroundingReport | None = None,
    ) -> None:
        """Fold in one event with its findings (and its verdict when it was checked)."""
        if event.conversation_id != self.conversation_id:
            raise ValueError("event of another conversation")
        own = [f for f in findings if f.event_id == event.event_id]
        values = _values(event.content, own, config)
        known = {f.finding_id for f in self.findings}
        for f in self._masked_findings(own, values, config):
            if f.finding_id in known:
                continue
            if len(self.findings) < MAX_FINDINGS:
                self.findings.append(f)
                known.add(f.finding_id)
            else:
                self.findings_dropped += 1
        if event.role == "user":
            if self.last_user_turn is None or event.turn_index >= self.last_user_turn:
                self.last_user_turn = event.turn_index
                self.last_user_text = self._mask(event.content, own, config)
                self.last_user_gaps = []
            return
        critical = any(f.severity == "critical" for f in own)
        if event.role != "assistant" or any(a.event_id == event.event_id for a in self.answers):
            if report is not None:
                self._attach_report(report, own, values)
            elif critical:
                self._mark_critical(event.event_id)
            return
        asked = self.last_user_turn is not None and self.last_user_turn < event.turn_index
        question = self.last_user_text if asked else None
        abstained = (
            event.abstained
            if event.abstained is not None
            else any(f.category == "abstention" for f in own)
        )
        snapshot = AnswerSnapshot(
            event_id=event.event_id,
            turn_index=event.turn_index,
            timestamp=event.timestamp,
            question=question,
            answer=self._mask(event.content, own, config),
            abstained=abstained,
            confidence=event.confidence,
            contexts=[
                CaseContext(
                    doc_id=p.doc_id, text=replace_values(p.text, values), score=p.score, rank=p.rank
                )
                for p in event.retrieval or []
            ],
            citations=list(event.citations or []),
            report=_mask_report(report, values) if report else None,
            critical=critical,
            question_gaps=list(self.last_user_gaps) if asked else [],
        )
        self.answers.append(snapshot)
        self._bound()

    def _bound(self) -> None:
        if len(self.answers) > MAX_ANSWERS:
            # Drop the least preferred answer: unchecked before checked, older before newer,
            # critical checked ones last.
            dropped = min(self.answers, key=lambda a: a.keep_rank)
            self.answers.remove(dropped)
            self.critical_dropped += dropped.critical_case

    def _mark_critical(self, event_id: str) -> None:
        for i, answer in enumerate(self.answers):
            if answer.event_id == event_id and not answer.critical:
                self.answers[i] = answer.model_copy(update={"critical": True})

    def observe_report(
        self,
        report: GroundingReport,
        event: ChatEvent,
        findings: Sequence[Finding],
        config: EvalsetConfig,
    ) -> None:
        """Attach a verdict that arrives after its answer (streaming: another agent's output)."""
        own = [f for f in findings if f.event_id == event.event_id]
        self._attach_report(report, own, _values(event.content, own, config))

    def _attach_report(
        self, report: GroundingReport, own: Sequence[Finding], values: Sequence[tuple[str, str]]
    ) -> None:
        critical = any(f.severity == "critical" for f in own)
        for i, answer in enumerate(self.answers):
            if answer.event_id == report.event_id:
                self.answers[i] = answer.model_copy(
                    update={
                        "report": _mask_report(report, values),
                        "critical": answer.critical or critical,
                    }
                )

    def add_source(self, source: SourceRef, limit: int) -> None:
        if len(self.sources) < limit and not _has_source(self.sources, source):
            self.sources.append(source)

    def target(self) -> AnswerSnapshot | None:
        """The evaluated answer: the latest checked one, else the latest one."""
        return _target(self.answers)

    def to_case(
        self, selection: Selection, config: EvalsetConfig, label: EvalLabel | None = None
    ) -> EvalCase:
        """The conversation's case (the answer it evaluates: :meth:`target`)."""
        if (selection.conversation_id, selection.period) != (self.conversation_id, self.period):
            raise ValueError("selection of another conversation or period")
        return self._case(selection, config, self.target(), label, unit="conversation")

    def extra_answers(self) -> list[AnswerSnapshot]:
        """The checked answers with a critical finding that are not the conversation's target:
        each is a case of its own."""
        return _extra_answers(self.answers)

    def case_ids(self) -> list[str]:
        """The ids of every case this conversation gives (the conversation's, then answers')."""
        return _case_ids(self.period, self.conversation_id, self.extra_answers())

    def to_cases(
        self, selection: Selection, config: EvalsetConfig, labels: Sequence[EvalLabel] = ()
    ) -> list[EvalCase]:
        """The conversation's case and one case per other critical checked answer; each label
        joins the case of the answer it names (``event_id``), else the conversation's case; the
        latest wins."""
        main = self.to_case(selection, config)
        extras = [
            self._case(selection, config, a, None, unit="answer") for a in self.extra_answers()
        ]
        cases = [main, *extras]
        return attach_labels(cases, labels).cases if labels else cases

    def _case(
        self,
        selection: Selection,
        config: EvalsetConfig,
        target: AnswerSnapshot | None,
        label: EvalLabel | None,
        *,
        unit: Literal["conversation", "answer"],
    ) -> EvalCase:
        report = target.report if target else None
        sources = list(selection.sources) or list(self.sources)
        answer = target.event_id if unit == "answer" and target is not None else None
        return EvalCase(
            case_id=case_id(self.period, self.conversation_id, answer),
            period=self.period,
            conversation_id=self.conversation_id,
            event_id=target.event_id if target else None,
            unit=unit,
            stratum=selection.stratum,
            flag_stratum=selection.flag_stratum,
            language=selection.language,
            tenant=selection.tenant,
            inclusion_probability=selection.inclusion_probability,
            inclusion_final=selection.inclusion_final,
            stratum_population=selection.stratum_population,
            sources=sources,
            timestamp=target.timestamp if target else None,
            question=target.question if target else self.last_user_text,
            answer=target.answer if target else None,
            abstained=target.abstained if target else None,
            confidence=target.confidence if target else None,
            contexts=target.contexts if target else [],
            citations=target.citations if target else [],
            checked=report is not None,
            faithfulness=report.faithfulness if report else None,
            claims=report.claims if report else [],
            fact_checks=report.fact_checks if report else [],
            fabricated_citations=report.fabricated_citations if report else [],
            unsupported_citations=report.unsupported_citations if report else [],
            findings=(
                [f for f in self.findings if f.event_id == answer]
                if answer is not None
                else self.findings
            ),
            critical_answers_unseen=0 if answer is not None else self.critical_dropped,
            masked=config.mask_pii,
            trimmed=self.trimmed,
            label=label,
        )


class _Ranked(Protocol):
    """What choosing a conversation's evaluated answer and its answer cases reads."""

    @property
    def event_id(self) -> str: ...
    @property
    def rank(self) -> tuple[bool, int, datetime]: ...
    @property
    def critical_case(self) -> bool: ...


_R = TypeVar("_R", bound=_Ranked)


def _target(answers: Sequence[_R]) -> _R | None:
    return max(answers, key=lambda a: a.rank) if answers else None


def _extra_answers(answers: Sequence[_R]) -> list[_R]:
    target = _target(answers)
    return [a for a in answers if a.critical_case and a is not target]


def _case_ids(period: str, conversation_id: str, extra: Iterable[_Ranked]) -> list[str]:
    return [
        case_id(period, conversation_id),
        *(case_id(period, conversation_id, a.event_id) for a in extra),
    ]


class _Checked(BaseModel):
    """A stored verdict, of which :func:`stored_case_ids` reads only that it is there."""

    model_config = ConfigDict(extra="ignore")


class _StoredAnswer(_Rank, BaseModel):
    """What :func:`stored_case_ids` reads of a stored answer (the rest is skipped unread)."""

    model_config = ConfigDict(extra="ignore")

    event_id: str
    turn_index: int
    timestamp: AwareDatetime
    report: _Checked | None = None
    critical: bool = False


class _StoredAnswers(BaseModel):
    model_config = ConfigDict(extra="ignore")

    answers: list[_StoredAnswer] = Field(default_factory=list)


def stored_case_ids(period: str, conversation_id: str, accumulator: bytes) -> list[str]:
    """:meth:`CaseAccumulator.case_ids` of a stored accumulator, reading only what names the
    cases (what a tombstone needs: a fraction of the cost of decoding the accumulator)."""
    answers = _StoredAnswers.model_validate_json(accumulator).answers
    return _case_ids(period, conversation_id, _extra_answers(answers))


def build_case(
    selection: Selection,
    events: Iterable[ChatEvent],
    findings: Iterable[Finding],
    reports: Iterable[GroundingReport],
    config: EvalsetConfig,
    label: EvalLabel | None = None,
) -> EvalCase:
    """The case of a selected conversation from all its events of the period (any order)."""
    return _fold(selection, events, findings, reports, config).to_case(selection, config, label)


def build_cases(
    selection: Selection,
    events: Iterable[ChatEvent],
    findings: Iterable[Finding],
    reports: Iterable[GroundingReport],
    config: EvalsetConfig,
    labels: Sequence[EvalLabel] = (),
) -> list[EvalCase]:
    """Every case of a selected conversation (see :meth:`CaseAccumulator.to_cases`)."""
    acc = _fold(selection, events, findings, reports, config)
    return acc.to_cases(selection, config, labels)


def _fold(
    selection: Selection,
    events: Iterable[ChatEvent],
    findings: Iterable[Finding],
    reports: Iterable[GroundingReport],
    config: EvalsetConfig,
) -> CaseAccumulator:
    by_event: dict[str, list[Finding]] = {}
    for f in findings:
        by_event.setdefault(f.event_id, []).append(f)
    report_of = {r.event_id: r for r in reports}
    acc = CaseAccumulator(conversation_id=selection.conversation_id, period=selection.period)
    for event in sorted(events, key=lambda e: (e.turn_index, e.timestamp)):
        acc.observe(event, by_event.get(event.event_id, []), config, report_of.get(event.event_id))
    return acc


class LabelJoin(BaseModel):
    """Cases with their labels attached, and labels that matched no case."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    cases: list[EvalCase]
    unmatched: list[EvalLabel]


def attach_labels(cases: Sequence[EvalCase], labels: Iterable[EvalLabel]) -> LabelJoin:
    """Attach each label to its case(s); see the module docstring for the join rules."""
    by_case = {c.case_id: i for i, c in enumerate(cases)}
    by_event: dict[str, list[int]] = {}
    by_conv: dict[str, list[int]] = {}
    for i, c in enumerate(cases):
        if c.event_id:
            by_event.setdefault(c.event_id, []).append(i)
        by_conv.setdefault(c.conversation_id, []).append(i)
    chosen: dict[int, EvalLabel] = {}
    unmatched: list[EvalLabel] = []
    ordered = sorted(labels, key=lambda lab: (lab.labeled_at is not None, lab.labeled_at or 0))
    for label in ordered:
        if label.case_id is not None:
            hit = [by_case[label.case_id]] if label.case_id in by_case else []
        elif label.event_id is not None:
            hit = by_event.get(label.event_id, [])
        else:
            hit = by_conv.get(label.conversation_id, [])
        hit = [i for i in hit if cases[i].conversation_id == label.conversation_id]
        if not hit:
            unmatched.append(label)
        for i in hit:
            chosen[i] = label
    out = [
        EvalCase.model_validate({**c.model_dump(), "label": chosen[i].model_dump()})
        if i in chosen
        else c
        for i, c in enumerate(cases)
    ]
    return LabelJoin(cases=out, unmatched=unmatched)
