"""The claim check called the way the grounding unit tests need it: a whole answer against
passages (:func:`check_report`, :func:`numbered_report` with ids ``doc-0``, ``doc-1`` …, and
:func:`critical` of its report), or each reading of an answer against one passage's readings
(:func:`reading_statuses`)."""

from __future__ import annotations

from datetime import UTC, datetime

from schemas.events import ChatEvent, Passage
from schemas.verdicts import GroundingReport, MedicalContext
from services.grounding import GroundingConfig, check
from services.grounding.claims import atomic_claims, skip_reason
from services.grounding.extractors import ExtractorSet
from services.grounding.facts import FactRegistry
from services.grounding.medical.compare import PassageReading, compare
from services.grounding.medical.lexicon import load_lexicon
from services.grounding.prepared import prepare_passage
from services.grounding.quantities import quantities

__all__ = ["check_report", "critical", "numbered_report", "reading_statuses", "skip_reason_of"]


def check_report(
    answer: str,
    passages: list[tuple[str, str]],
    language: str,
    context: MedicalContext | None = None,
    citations: list[str] | None = None,
) -> GroundingReport:
    """The report of ``answer`` (an assistant turn) against ``(doc id, text)`` passages, with
    the event's ``citations`` list when given."""
    event = ChatEvent(
        schema_version=1,
        event_id="e",
        conversation_id="c",
        turn_index=1,
        timestamp=datetime(2026, 1, 1, tzinfo=UTC),
        role="assistant",
        content=answer,
        language=language,
        retrieval=[Passage(doc_id=d, text=t) for d, t in passages],
        citations=citations,
    )
    return check(
        event,
        FactRegistry(),
        extractors=ExtractorSet(),
        config=GroundingConfig(),
        inclusion_probability=1.0,
        stratum="always",
        context=context,
    )


def numbered_report(
    answer: str, passages: list[str], language: str, context: MedicalContext | None = None
) -> GroundingReport:
    """:func:`check_report` against ``passages`` numbered ``doc-0``, ``doc-1`` …"""
    return check_report(
        answer, [(f"doc-{i}", p) for i, p in enumerate(passages)], language, context
    )


def critical(report: GroundingReport) -> bool:
    """Whether the report has an ungrounded dose or contraindication claim."""
    return any(c.kind in ("dose", "contraindication") and not c.grounded for c in report.claims)


def reading_statuses(answer: str, passage: str, language: str) -> list[str]:
    """The comparison status of each medical reading of ``answer`` against ``passage``."""
    lex = load_lexicon()
    prepared = prepare_passage(Passage(doc_id="p", text=passage), language, lex)
    readings = [PassageReading("p", 0, s, r) for s, r in prepared.readings]
    return [
        compare(r, readings).status for c in atomic_claims(answer, language) for r in c.readings
    ]


def skip_reason_of(sentence: str, language: str) -> str | None:
    """Why ``sentence`` is no claim (an abstention, a referral, a pleasantry …), or ``None``."""
    return skip_reason(sentence, language, quantities(sentence, language))
