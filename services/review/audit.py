"""Random unflagged evaluation cases as review items, so reviewers can say what the rules missed.

The rules' miss rate is estimated from labelled random unflagged conversations (SPEC §9,
:mod:`services.evalsets.missrate`): a reviewer reads one and records the categories the rules
should have raised (``missed_categories``; none means rightly unflagged). :func:`item_from_case`
turns such a case (``flag_stratum: unflagged``) into a review item with the policy's ``audit``
reason, its inclusion probability kept, so it is reviewed on the same page as flagged ones and
its label joins the case by the answer's event id. Case texts are already masked.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from schemas.evalset import UNFLAGGED, EvalCase
from schemas.events import ChatEvent, Passage
from schemas.review import ReviewItem, ReviewReason
from schemas.verdicts import GroundingReport
from services.review.evidence import bounded_verdict, mask_turn
from services.review.policy import TriagePolicy

__all__ = ["item_from_case"]


def _event(case: EvalCase, role: str, event_id: str, turn: int, text: str) -> ChatEvent:
    return ChatEvent.model_validate(
        {
            "schema_version": 1,
            "event_id": event_id,
            "conversation_id": case.conversation_id,
            "turn_index": turn,
            "timestamp": case.timestamp,
            "role": role,
            "content": text,
            "tenant": None if case.tenant == "-" else case.tenant,
            "language": None if case.language == "und" else case.language,
            "retrieval": [
                Passage(doc_id=c.doc_id, text=c.text, score=c.score, rank=c.rank)
                for c in case.contexts
            ]
            if role == "assistant"
            else None,
        },
        context={"max_content_bytes": 1 << 30},
    )


def item_from_case(case: EvalCase, policy: TriagePolicy, *, now: datetime) -> ReviewItem | None:
    """The review item of a random unflagged case (``None`` for other cases, for a case without
    an answer, or when the policy's audit is off). Open until ``now`` + ``open_ttl_hours``."""
    audit = policy.audit
    if not audit.enabled or case.flag_stratum != UNFLAGGED:
        return None
    if case.event_id is None or case.answer is None or case.timestamp is None:
        return None
    q = policy.queue
    turns = []
    if case.question:
        asked = _event(case, "user", f"{case.event_id}:question", 0, case.question)
        turns.append(mask_turn(asked, [], q)[0])
    answer = _event(case, "assistant", case.event_id, 1, case.answer)
    turns.append(mask_turn(answer, [], q)[0])
    verdicts = []
    if case.checked:
        report = GroundingReport(
            event_id=case.event_id,
            conversation_id=case.conversation_id,
            turn_index=1,
            timestamp=case.timestamp,
            tenant=answer.tenant,
            language=answer.language,
            stratum="sampled",
            inclusion_probability=case.inclusion_probability,
            faithfulness=case.faithfulness if case.faithfulness is not None else 1.0,
            claims=case.claims,
            ungrounded=[c.text for c in case.claims if not c.grounded],
            fabricated_citations=case.fabricated_citations,
            unsupported_citations=case.unsupported_citations,
            fact_checks=case.fact_checks,
        )
        verdicts.append(bounded_verdict(report, q))
    reason = ReviewReason(
        code=audit.code, priority=audit.priority, source="sample", event_id=case.event_id
    )
    return ReviewItem(
        item_id=f"{case.conversation_id}:1",
        conversation_id=case.conversation_id,
        tenant=answer.tenant,
        round=1,
        status="open",
        priority=audit.priority,
        admission="sampled",
        inclusion_probability=case.inclusion_probability,
        reasons=[reason],
        findings=[],
        verdicts=verdicts,
        turns=turns,
        seen=[reason.key],
        created_at=case.timestamp,
        updated_at=now,
        expires_at=now + timedelta(hours=q.open_ttl_hours),
        reviews_required=q.reviews_for(audit.priority),
        version=1,
    )
