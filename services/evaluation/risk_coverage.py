"""Risk–coverage curve of a confidence score (SPEC §6).

Answering only when ``score >= threshold`` trades coverage for risk. Raising the threshold never
raises coverage, but it *can* raise risk: confidence scores are not calibrated probabilities, so
the curve is reported as measured, point by point, with its counts.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Sequence
from typing import Any, Final, SupportsFloat, TypeAlias, TypedDict

import numpy as np
import numpy.typing as npt

from services.evaluation._checks import (
    check_bool,
    check_unit_real,
    fail,
    sequence_items,
)

__all__ = [
    "MAX_SCORES",
    "MAX_THRESHOLDS",
    "Labels",
    "Reals",
    "RiskCoverageRow",
    "risk_coverage_curve",
]

MAX_SCORES: Final = 1000
MAX_THRESHOLDS: Final = 101

Reals: TypeAlias = Sequence[SupportsFloat] | npt.NDArray[Any]
"""Scores or thresholds: a list/tuple of real numbers or a 1-D numpy array."""
Labels: TypeAlias = Sequence[bool | np.bool_] | npt.NDArray[np.bool_]
"""Correctness labels: a list/tuple of ``bool``/``numpy.bool_`` or a 1-D bool array."""


class RiskCoverageRow(TypedDict):
    """One point of the curve; ``risk`` is ``None`` when nothing is answered."""

    threshold: float
    answered: int
    correct: int
    coverage: float
    risk: float | None


def risk_coverage_curve(scores: Reals, correct: Labels, thresholds: Reals) -> list[RiskCoverageRow]:
    """One row per unique threshold, ascending: what answering at ``score >= threshold`` gives.

    ``scores``: 1 to 1000 finite real numbers in [0, 1] (list, tuple or 1-D numpy array; bools
    and complex numbers are refused). ``correct``: the same number of real booleans (``bool`` or
    ``numpy.bool_``; the integers 0 and 1 are refused). ``thresholds``: 1 to 101 finite reals in
    [0, 1]; duplicates collapse into one row. All values are compared as floats. For each
    threshold ``t`` over ``n`` items::

        answered = #{i : scores[i] >= t}
        correct  = #{i : scores[i] >= t and correct[i]}
        coverage = answered / n
        risk     = (answered - correct) / answered     (None when answered == 0)

    The SPEC example:

    >>> scores, correct = [0.1, 0.4, 0.7, 0.9], [True, True, False, True]
    >>> rows = risk_coverage_curve(scores, correct, [0, 0.5, 0.8, 1])
    >>> [(r["threshold"], r["answered"], r["risk"]) for r in rows]
    [(0.0, 4, 0.25), (0.5, 2, 0.5), (0.8, 1, 0.0), (1.0, 0, None)]
    >>> [r["coverage"] for r in rows]
    [1.0, 0.5, 0.25, 0.0]
    """
    score_items = sequence_items("scores", scores, low=1, high=MAX_SCORES, allow_array=True)
    label_items = sequence_items("correct", correct, low=1, high=MAX_SCORES, allow_array=True)
    if len(label_items) != len(score_items):
        fail(
            f"correct must have the same length as scores, got {len(label_items)} labels "
            f"for {len(score_items)} scores"
        )
    threshold_items = sequence_items(
        "thresholds", thresholds, low=1, high=MAX_THRESHOLDS, allow_array=True
    )
    values = [check_unit_real(f"scores[{i}]", v) for i, v in enumerate(score_items)]
    labels = [check_bool(f"correct[{i}]", v) for i, v in enumerate(label_items)]
    cuts = sorted({check_unit_real(f"thresholds[{i}]", v) for i, v in enumerate(threshold_items)})

    # Sort once; for a threshold t the answered items are a suffix of the ascending order.
    order = sorted(range(len(values)), key=values.__getitem__)
    ascending = [values[i] for i in order]
    correct_from = [0] * (len(order) + 1)  # correct_from[j]: correct items at sorted positions >= j
    for j in range(len(order) - 1, -1, -1):
        correct_from[j] = correct_from[j + 1] + labels[order[j]]

    total = len(values)
    rows: list[RiskCoverageRow] = []
    for t in cuts:
        first = bisect_left(ascending, t)
        answered = total - first
        right = correct_from[first]
        rows.append(
            {
                "threshold": t,
                "answered": answered,
                "correct": right,
                "coverage": answered / total,
                "risk": (answered - right) / answered if answered else None,
            }
        )
    return rows
