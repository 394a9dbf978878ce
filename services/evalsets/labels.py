"""Review labels (``vigil.review.labels``, :class:`~schemas.review.ReviewLabel`) as evaluation
ground truth (:class:`~schemas.evalset.EvalLabel`).

What carries over: the per-finding verdicts, the corrected claim statuses (matched to the case's
fact checks on ``entity, attribute, value``), the answer judged (``event_id``, which joins the
label to the case of that answer) with ``answer_correct``, ``relevant_doc_ids`` and the expected
answer, the harm severity, error categories, rubric, missed categories, the note, the time and
the label ids (a correction names the label it supersedes). The reviewer's name does not (cases
are shared more widely than the review queue). A label about no particular answer joins every
case of its conversation (:func:`~services.evalsets.cases.attach_labels`).
"""

from __future__ import annotations

from schemas.evalset import ClaimCorrection, EvalLabel
from schemas.events import Claim
from schemas.review import ReviewLabel

__all__ = ["label_from_review"]


def label_from_review(review: ReviewLabel) -> EvalLabel:
    """The evaluation label of a finished review."""
    return EvalLabel(
        conversation_id=review.conversation_id,
        event_id=review.answer_event_id,
        label_id=review.label_id,
        supersedes=review.supersedes,
        labeled_at=review.labeled_at,
        finding_verdicts={f.finding_id: f.verdict for f in review.findings},
        claim_statuses=[
            ClaimCorrection(
                claim=Claim(entity=c.entity, attribute=c.attribute, value=c.value),
                status=c.corrected,
            )
            for c in review.claims
        ],
        expected_answer=review.expected_answer or None,
        answer_correct=review.answer_correct,
        relevant_doc_ids=review.relevant_doc_ids,
        missed_categories=review.missed_categories,
        harm_severity=review.harm_severity,
        error_categories=review.error_categories,
        rubric=review.rubric,
        note=review.note or None,
    )
