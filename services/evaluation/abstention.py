"""Answer/abstain accounting (SPEC §6).

Abstentions stay in the denominators: ``coverage`` and ``overall_accuracy`` divide by every
item, ``answered_accuracy`` and ``risk`` divide by the answered items only, and the counts behind
every ratio are returned with it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final, TypedDict

from services.evaluation._checks import check_text, fail, sequence_items

__all__ = ["MAX_ITEMS", "AbstentionMetrics", "abstention_metrics"]

MAX_ITEMS: Final = 1000


class AbstentionMetrics(TypedDict):
    """Result of :func:`abstention_metrics`; ratios are ``None`` when their denominator is 0."""

    total: int
    answered: int
    correct: int
    coverage: float
    overall_accuracy: float
    answered_accuracy: float | None
    risk: float | None


def abstention_metrics(
    predictions: Sequence[str | None], targets: Sequence[str]
) -> AbstentionMetrics:
    """Coverage, accuracy and risk of predictions that may abstain.

    ``predictions`` and ``targets`` are aligned lists or tuples of 1 to 1000 items. A target is a
    ``str`` that is non-empty after ``strip()``; a prediction is such a string or ``None``, and
    only ``None`` means "abstained" (``""`` is an error, not an abstention). A prediction is
    correct when it equals its target exactly. With ``n`` items, ``a`` answered and ``c``
    correct::

        coverage          = a / n
        overall_accuracy  = c / n
        answered_accuracy = c / a          (None when a == 0)
        risk              = (a - c) / a    (None when a == 0)

    The SPEC example:

    >>> m = abstention_metrics(["factuur", None, "factuur"], ["factuur", "storing", "vraag"])
    >>> m["total"], m["answered"], m["correct"]
    (3, 2, 1)
    >>> m["coverage"] == 2 / 3, m["overall_accuracy"] == 1 / 3
    (True, True)
    >>> m["answered_accuracy"], m["risk"]
    (0.5, 0.5)
    >>> abstention_metrics([None], ["vraag"])["risk"] is None
    True
    """
    preds = sequence_items("predictions", predictions, low=1, high=MAX_ITEMS)
    targs = sequence_items("targets", targets, low=1, high=MAX_ITEMS)
    if len(preds) != len(targs):
        fail(
            f"predictions and targets must be aligned, got {len(preds)} predictions "
            f"and {len(targs)} targets"
        )
    for i, target in enumerate(targs):
        check_text(f"targets[{i}]", target)
    for i, prediction in enumerate(preds):
        if prediction is not None:
            check_text(f"predictions[{i}] (None means abstain)", prediction)

    total = len(preds)
    answered = sum(p is not None for p in preds)
    correct = sum(p is not None and p == t for p, t in zip(preds, targs, strict=True))
    return {
        "total": total,
        "answered": answered,
        "correct": correct,
        "coverage": answered / total,
        "overall_accuracy": correct / total,
        "answered_accuracy": correct / answered if answered else None,
        "risk": (answered - correct) / answered if answered else None,
    }
