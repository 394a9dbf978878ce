"""Label events of the review queue (pure): what a label action records and how the item's
history, latest label and disagreement follow from it. :func:`services.review.queue.apply`
calls these for label and correction actions; the decision is checked against the label schema
first (:func:`services.review.labels.check_label`).
"""

from __future__ import annotations

from schemas.review import (
    CorrectedClaim,
    LabelDecision,
    LabeledFinding,
    LabelRecord,
    ReviewAction,
    ReviewItem,
    ReviewLabel,
)
from services.review.labels import LabelSchema, answer_turn, check_label
from services.review.policy import QueueSettings

__all__ = ["corrected_claims", "disagreement", "history_update", "label_record"]


def corrected_claims(base: ReviewItem, decision: LabelDecision) -> list[CorrectedClaim] | str:
    checks = {v.event_id: v.fact_checks for v in base.verdicts}
    pairs = [(c.event_id, c.index) for c in decision.claims]
    if len(set(pairs)) != len(pairs):
        return "a claim is corrected twice"
    claims: list[CorrectedClaim] = []
    for c in decision.claims:
        facts = checks.get(c.event_id, [])
        if c.index >= len(facts):
            return "a claim correction names no claim"
        fc = facts[c.index]
        claims.append(
            CorrectedClaim(
                event_id=c.event_id,
                index=c.index,
                entity=fc.claim.entity,
                attribute=fc.claim.attribute,
                value=fc.claim.value,
                sources=fc.sources,
                original=fc.status,
                corrected=c.status,
            )
        )
    return claims


def label_record(
    base: ReviewItem,
    action: ReviewAction,
    schema: LabelSchema,
    *,
    stage: int,
    supersedes: str | None,
) -> tuple[LabelRecord, ReviewLabel] | str:
    """The history entry and the label event of a label action, or what is wrong with it."""
    assert action.label is not None  # guaranteed by ReviewAction's validator
    decision = action.label.decision()
    if (problem := check_label(decision, base, schema)) is not None:
        return problem
    claims = corrected_claims(base, decision)
    if isinstance(claims, str):
        return claims
    answered = (
        decision.answer_event_id is not None
        or decision.answer_correct is not None
        or decision.relevant_doc_ids is not None
        or bool(decision.expected_answer)
    )
    if answered and decision.answer_event_id is None:
        turn = answer_turn(base)
        assert turn is not None  # check_label refused a label without an answer to judge
        decision = decision.model_copy(update={"answer_event_id": turn.event_id})
    label_id = f"{base.item_id}:label:{base.label_count + 1}"
    record = LabelRecord(
        label_id=label_id,
        reviewer=action.reviewer,
        at=action.at,
        stage=stage,
        supersedes=supersedes,
        decision=decision,
    )
    verdicts = {fl.finding_id: fl.verdict for fl in decision.findings}
    label = ReviewLabel(
        label_id=label_id,
        item_id=base.item_id,
        conversation_id=base.conversation_id,
        tenant=base.tenant,
        round=base.round,
        stage=stage,
        supersedes=supersedes,
        reviewer=action.reviewer,
        labeled_at=action.at,
        priority=base.priority,
        admission=base.admission,
        inclusion_probability=base.inclusion_probability,
        reasons=base.reasons,
        findings=[
            LabeledFinding(
                finding_id=f.finding_id,
                event_id=f.event_id,
                rule_id=f.rule_id,
                category=f.category,
                entity=f.entity,
                severity=f.severity,
                verdict=verdicts[f.finding_id],
            )
            for f in base.findings
        ],
        claims=claims,
        harm_severity=decision.harm_severity,
        error_categories=decision.error_categories,
        rubric=decision.rubric,
        answer_event_id=decision.answer_event_id,
        answer_correct=decision.answer_correct,
        relevant_doc_ids=decision.relevant_doc_ids,
        missed_categories=decision.missed_categories,
        note=decision.note,
        expected_answer=decision.expected_answer,
        turns=base.turns,
    )
    return record, label


def history_update(base: ReviewItem, record: LabelRecord, s: QueueSettings) -> dict[str, object]:
    """The item fields a new label event changes: history (bounded), count, disagreement."""
    labels = [*base.labels, record]
    dropped = max(0, len(labels) - s.max_label_history)
    labels = labels[dropped:]
    return {
        "labels": labels,
        "label_count": base.label_count + 1,
        "dropped_labels": base.dropped_labels + dropped,
        "disagreement": disagreement(labels),
        "label_id": record.label_id,
        "labeled_by": record.reviewer,
        "labeled_at": record.at,
    }


def disagreement(labels: list[LabelRecord]) -> list[str]:
    """The fields where the current labels (the latest of each reviewer) of the two most recent
    reviewers differ: ``finding:<id>``, ``claim:<event>:<index>``, ``harm_severity``,
    ``error_categories``, ``answer_correct``, ``relevant_doc_ids``, ``missed_categories``."""
    current: dict[str, LabelDecision] = {}
    for r in labels:
        current.pop(r.reviewer, None)
        current[r.reviewer] = r.decision
    if len(current) < 2:
        return []
    a, b = list(current.values())[-2:]
    out: list[str] = []
    va = {f.finding_id: f.verdict for f in a.findings}
    vb = {f.finding_id: f.verdict for f in b.findings}
    out += [f"finding:{k}" for k in sorted(va.keys() | vb.keys()) if va.get(k) != vb.get(k)]
    ca = {(c.event_id, c.index): c.status for c in a.claims}
    cb = {(c.event_id, c.index): c.status for c in b.claims}
    out += [
        f"claim:{e}:{i}"
        for e, i in sorted(ca.keys() | cb.keys())
        if ca.get((e, i)) != cb.get((e, i))
    ]
    for name in ("harm_severity", "answer_correct"):
        if getattr(a, name) != getattr(b, name):
            out.append(name)
    for name in ("error_categories", "relevant_doc_ids", "missed_categories"):
        if set(getattr(a, name) or ()) != set(getattr(b, name) or ()):
            out.append(name)
    return out
