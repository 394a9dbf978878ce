"""Review labels (``vigil.review.labels``, :class:`~schemas.review.ReviewLabel`) as evaluation
ground truth (:class:`~schemas.evalset.EvalLabel`).

What carries over: the per-finding verdicts, the corrected claim statuses (matched to the case's
fact checks on ``entity, attribute, value``), the expected answer, the note and the time. The
reviewer's name does not (cases are shared more widely than the review queue). A review label has
no ``event_id`` on the label level, so it joins every case of its conversation
(:func:`~services.evalsets.cases.attach_labels`).
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
        note=review.note or None,
    )
