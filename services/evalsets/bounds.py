"""The byte ceiling of one conversation's case accumulator (``VIGIL_EVALSET_MAX_CASE_BYTES``), pure.

An accumulator (:class:`~services.evalsets.cases.CaseAccumulator`) is one record of the worker's
compacted state changelog, and Kafka refuses a record above the broker's ``max.message.bytes``
(1 MiB by default). Its counts (16 answers, 256 findings, the sources) bound it only loosely:
sixteen answers of 55 KB with eight passages each make megabytes. :class:`CaseBound` fits an
accumulator under the ceiling before it is written, leaving out what a case needs least first:

1. in rounds that cut every budget by a quarter, the texts: each answer around its findings'
   (masked) evidence (:func:`~services.review.evidence.window`, the review queue's windowing:
   ``… n characters …`` for what is left out, never a finding's evidence), the questions and
   the retrieved passages from their beginning;
2. then the oldest sources (Kafka offsets or file lines), counted in ``sources_dropped``.

No answer is left out (every critical answer keeps its case), and no finding, verdict or label:
the accumulator says ``trimmed`` and so do its cases. Every round starts from the accumulator as
given, so a replay gives the same value; an accumulator read back shortened keeps its elision
markers whole (their ``Gap``\\ s travel with the texts).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from schemas.outputs import Finding
from schemas.review import Gap, Mark
from services.evalsets.cases import AnswerSnapshot, CaseAccumulator
from services.review.evidence import ShrinkRounds, window
from services.screening import VALUE_CATEGORIES

__all__ = ["CaseBound"]

#: Budgets (characters) of the first round: an answer or question, a passage, the window on
#: each side of a finding.
TEXT_CHARS = 16_000
PASSAGE_CHARS = 4_000
CONTEXT_CHARS = 400
#: How far before a finding's offset in the unmasked message its evidence is looked for
#: (masking moves text by the difference between values and their masks).
_SLACK = 4096


def _encode(acc: CaseAccumulator) -> bytes:
    return acc.model_dump_json().encode()


def _marks(text: str, findings: Sequence[Finding]) -> list[Mark]:
    """Where the findings of an answer stand in its masked text: their evidence (or the
    ``[ENTITY]`` a value without a mask became), the occurrence nearest their offset."""
    out: list[Mark] = []
    for f in findings:
        for shown in dict.fromkeys((f.evidence, f"[{f.entity}]")):
            if not shown:
                continue
            at = text.find(shown, max(0, f.start - _SLACK))
            at = at if at >= 0 else text.find(shown)
            if at < 0:
                continue
            out.append(
                Mark(
                    finding_id=f.finding_id,
                    start=at,
                    end=at + len(shown),
                    rule_id=f.rule_id,
                    category=f.category,
                    entity=f.entity,
                    severity=f.severity,
                    masked=f.category in VALUE_CATEGORIES,
                )
            )
            break
    return out


@dataclass(frozen=True, slots=True)
class CaseBound:
    """Fits case accumulators under ``limit`` bytes (see the module docstring)."""

    limit: int

    #: The largest budget is the text's.
    rounds = ShrinkRounds(TEXT_CHARS)

    def _scaled(self, value: int, level: int) -> int:
        return self.rounds.scaled(value, level)

    def encode(self, acc: CaseAccumulator) -> bytes:
        """The accumulator's encoding, shortened when it is over the ceiling."""
        raw = _encode(acc)
        return raw if len(raw) <= self.limit else self.fit(acc)[1]

    def fit(self, acc: CaseAccumulator) -> tuple[CaseAccumulator, bytes]:
        """The accumulator as stored (shortened when it is over the ceiling), and its encoding.
        Still over the ceiling only when its findings, verdicts and markers alone are: the store
        then refuses it."""
        raw = _encode(acc)
        if len(raw) <= self.limit:
            return acc, raw
        # Each round shortens the original texts (the budgets are absolute, not cumulative).
        fitted, raw = self.rounds.fit(
            acc, raw, self.limit, lambda _, level: self._shrink(acc, level), _encode
        )
        while len(raw) > self.limit and fitted.sources:
            gone = max(1, len(fitted.sources) // 2)  # oldest first
            fitted = fitted.model_copy(
                update={
                    "sources": fitted.sources[gone:],
                    "sources_dropped": fitted.sources_dropped + gone,
                }
            )
            raw = _encode(fitted)
        return fitted, raw

    def _text(
        self,
        text: str,
        gaps: Sequence[Gap],
        level: int,
        *,
        budget: int = TEXT_CHARS,
        marks: Sequence[Mark] = (),
    ) -> tuple[str, list[Gap]]:
        need = sum(m.end - m.start for m in marks)
        short, _, new_gaps, _ = window(
            text,
            list(marks),
            budget=max(self._scaled(budget, level), need),
            context=self._scaled(CONTEXT_CHARS, level),
            gaps=gaps,
        )
        return short, new_gaps

    def _answer(self, a: AnswerSnapshot, findings: Sequence[Finding], level: int) -> AnswerSnapshot:
        own = [f for f in findings if f.event_id == a.event_id]
        answer, answer_gaps = self._text(
            a.answer, a.answer_gaps, level, marks=_marks(a.answer, own)
        )
        question, question_gaps = (
            self._text(a.question, a.question_gaps, level) if a.question is not None else (None, [])
        )
        contexts = [
            c.model_copy(update={"text": self._text(c.text, (), level, budget=PASSAGE_CHARS)[0]})
            for c in a.contexts
        ]
        return a.model_copy(
            update={
                "answer": answer,
                "answer_gaps": answer_gaps,
                "question": question,
                "question_gaps": question_gaps,
                "contexts": contexts,
            }
        )

    def _shrink(self, acc: CaseAccumulator, level: int) -> CaseAccumulator:
        update: dict[str, object] = {
            "answers": [self._answer(a, acc.findings, level) for a in acc.answers],
            "trimmed": True,
        }
        if acc.last_user_text is not None:
            text, gaps = self._text(acc.last_user_text, acc.last_user_gaps, level)
            update |= {"last_user_text": text, "last_user_gaps": gaps}
        return acc.model_copy(update=update)
