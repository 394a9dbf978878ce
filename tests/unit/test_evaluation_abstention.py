"""abstention_metrics and risk_coverage_curve (SPEC §6): examples, bounds, types, properties."""

from __future__ import annotations

import itertools
import math
from decimal import Decimal
from fractions import Fraction
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from services.evaluation import EvaluationInputError, abstention_metrics, risk_coverage_curve

# --- abstention_metrics ---------------------------------------------------------------------


def test_abstention_spec_example() -> None:
    m = abstention_metrics(["factuur", None, "factuur"], ["factuur", "storing", "vraag"])
    assert m == {
        "total": 3,
        "answered": 2,
        "correct": 1,
        "coverage": 2 / 3,
        "overall_accuracy": 1 / 3,
        "answered_accuracy": 0.5,
        "risk": 0.5,
    }


def test_abstention_all_abstained_keeps_denominators() -> None:
    m = abstention_metrics((None, None), ("a", "b"))
    assert m == {
        "total": 2,
        "answered": 0,
        "correct": 0,
        "coverage": 0.0,
        "overall_accuracy": 0.0,
        "answered_accuracy": None,
        "risk": None,
    }


def test_abstention_all_correct_and_exact_match() -> None:
    m = abstention_metrics(["a", "B", "c "], ["a", "b", "c"])
    assert (m["answered"], m["correct"], m["risk"]) == (3, 1, 2 / 3)


def test_abstention_item_bounds() -> None:
    assert abstention_metrics(["a"], ["a"])["total"] == 1
    assert abstention_metrics(["a"] * 1000, ["a"] * 1000)["correct"] == 1000
    with pytest.raises(ValueError, match=r"predictions: at most 1000 items allowed, got 1001"):
        abstention_metrics(["a"] * 1001, ["a"] * 1001)
    with pytest.raises(ValueError, match=r"targets: at most 1000"):
        abstention_metrics(["a"], ["a"] * 1001)
    with pytest.raises(ValueError, match=r"predictions: needs at least 1 item"):
        abstention_metrics([], [])


@pytest.mark.parametrize(
    ("predictions", "targets", "message"),
    [
        pytest.param(["a"], ["a", "b"], r"aligned, got 1 predictions and 2 targets", id="length"),
        pytest.param(["a", None], ["a"], r"aligned", id="length-2"),
        pytest.param("ab", ["a", "b"], r"predictions: must be a list or tuple, got str"),
        pytest.param(["a"], "a", r"targets: must be a list or tuple, got str"),
        pytest.param({"a"}, ["a"], r"predictions: must be a list or tuple, got set"),
        pytest.param(np.array(["a"]), ["a"], r"predictions: must be a list or tuple, got ndarray"),
        pytest.param([""], ["a"], r"predictions\[0\] \(None means abstain\): must not be empty"),
        pytest.param([" "], ["a"], r"predictions\[0\].*must not be empty", id="pred-blank"),
        pytest.param([False], ["a"], r"predictions\[0\].*must be a str, got bool"),
        pytest.param([0], ["a"], r"predictions\[0\].*must be a str, got int"),
        pytest.param(["a", 1], ["a", "1"], r"predictions\[1\].*got int"),
        pytest.param(["a"], [None], r"targets\[0\]: must be a str, got NoneType"),
        pytest.param(["a"], [""], r"targets\[0\]: must not be empty"),
        pytest.param(["a"], ["\t"], r"targets\[0\]: must not be empty"),
        pytest.param(["1"], [1], r"targets\[0\]: must be a str, got int"),
        pytest.param(["a"], [True], r"targets\[0\]: must be a str, got bool"),
    ],
)
def test_abstention_rejects(predictions: Any, targets: Any, message: str) -> None:
    with pytest.raises(EvaluationInputError, match=message):
        abstention_metrics(predictions, targets)


_labels = st.sampled_from(["factuur", "storing", "vraag"])


@settings(deadline=None)  # up to 1,000 pairs: hypothesis' 200 ms deadline fails under load
@given(st.lists(st.tuples(st.one_of(st.none(), _labels), _labels), min_size=1, max_size=1000))
def test_abstention_properties(pairs: list[tuple[str | None, str]]) -> None:
    preds, targets = [p for p, _ in pairs], [t for _, t in pairs]
    m = abstention_metrics(preds, targets)
    assert m["total"] == len(pairs)
    assert 0 <= m["correct"] <= m["answered"] <= m["total"]
    assert m["coverage"] == m["answered"] / m["total"]
    assert m["overall_accuracy"] <= m["coverage"]
    if m["answered"] == 0:
        assert m["risk"] is None and m["answered_accuracy"] is None
    else:
        assert m["risk"] is not None and m["answered_accuracy"] is not None
        assert 0.0 <= m["risk"] <= 1.0
        assert math.isclose(m["risk"] + m["answered_accuracy"], 1.0)


# --- risk_coverage_curve --------------------------------------------------------------------

SPEC_SCORES = [0.1, 0.4, 0.7, 0.9]
SPEC_CORRECT = [True, True, False, True]


def test_curve_spec_example() -> None:
    rows = risk_coverage_curve(SPEC_SCORES, SPEC_CORRECT, [0, 0.5, 0.8, 1])
    assert rows == [
        {"threshold": 0.0, "answered": 4, "correct": 3, "coverage": 1.0, "risk": 0.25},
        {"threshold": 0.5, "answered": 2, "correct": 1, "coverage": 0.5, "risk": 0.5},
        {"threshold": 0.8, "answered": 1, "correct": 1, "coverage": 0.25, "risk": 0.0},
        {"threshold": 1.0, "answered": 0, "correct": 0, "coverage": 0.0, "risk": None},
    ]


def test_curve_risk_can_rise_with_threshold() -> None:
    rows = risk_coverage_curve(SPEC_SCORES, SPEC_CORRECT, [0, 0.5])
    assert rows[1]["risk"] > rows[0]["risk"]  # type: ignore[operator]


def test_curve_thresholds_unique_and_ascending() -> None:
    rows = risk_coverage_curve(SPEC_SCORES, SPEC_CORRECT, (1, 0.5, 0, 0.5, 0.0, -0.0, 1.0))
    assert [r["threshold"] for r in rows] == [0.0, 0.5, 1.0]
    assert math.copysign(1.0, rows[0]["threshold"]) == 1.0  # no "-0.0" row


def test_curve_score_equal_to_threshold_is_answered() -> None:
    rows = risk_coverage_curve([0.5, 0.5, 1.0], [True, False, True], [0.5, 1.0])
    assert [(r["answered"], r["correct"]) for r in rows] == [(3, 2), (1, 1)]


def test_curve_accepts_numpy_and_other_reals() -> None:
    expected = risk_coverage_curve(SPEC_SCORES, SPEC_CORRECT, [0, 0.5, 0.8, 1])
    as_arrays = risk_coverage_curve(
        np.array(SPEC_SCORES), np.array(SPEC_CORRECT), np.array([0, 0.5, 0.8, 1])
    )
    assert as_arrays == expected
    scalars = risk_coverage_curve(
        [np.float32(0.1), np.float64(0.4), Fraction(7, 10), 0.9],
        [np.True_, True, np.False_, True],
        [np.int64(0), 0.5, 0.8, 1],
    )
    assert [(r["answered"], r["risk"]) for r in scalars] == [
        (4, 0.25),
        (2, 0.5),
        (1, 0.0),
        (0, None),
    ]
    assert all(type(r["threshold"]) is float for r in scalars)
    assert all(type(r["answered"]) is int for r in scalars)


def test_curve_bounds() -> None:
    assert len(risk_coverage_curve([0.5], [True], [0.5])) == 1
    rows = risk_coverage_curve([0.5] * 1000, [True] * 1000, [i / 100 for i in range(101)])
    assert len(rows) == 101
    with pytest.raises(ValueError, match=r"scores: at most 1000 items allowed, got 1001"):
        risk_coverage_curve([0.5] * 1001, [True] * 1001, [0.5])
    with pytest.raises(ValueError, match=r"thresholds: at most 101 items allowed, got 102"):
        risk_coverage_curve([0.5], [True], [0.5] * 102)
    with pytest.raises(ValueError, match=r"scores: needs at least 1 item"):
        risk_coverage_curve([], [], [0.5])
    with pytest.raises(ValueError, match=r"thresholds: needs at least 1 item"):
        risk_coverage_curve([0.5], [True], [])


def test_curve_value_bounds_inclusive() -> None:
    rows = risk_coverage_curve([0, 1], [True, False], [0, 1])
    assert [(r["answered"], r["risk"]) for r in rows] == [(2, 0.5), (1, 1.0)]


_nan, _inf = float("nan"), float("inf")


@pytest.mark.parametrize(
    ("scores", "correct", "thresholds", "message"),
    [
        # shapes
        pytest.param([0.5], [True, False], [0.5], r"correct must have the same length", id="len"),
        pytest.param([[0.5]], [True], [0.5], r"scores\[0\]: must be a real number, got list"),
        pytest.param(
            np.array([[0.5, 0.5]]), [True], [0.5], r"scores: must be 1-D, got .*shape \(1, 2\)"
        ),
        pytest.param(np.float64(0.5), [True], [0.5], r"scores: must be a list, tuple or 1-D"),
        pytest.param(np.array(0.5), [True], [0.5], r"scores: must be 1-D, got .*shape \(\)"),
        pytest.param([0.5], np.array([[True]]), [0.5], r"correct: must be 1-D", id="correct-2d"),
        pytest.param([0.5], [True], np.zeros((2, 2)), r"thresholds: must be 1-D"),
        pytest.param([0.5], [True], 0.5, r"thresholds: must be a list, tuple or 1-D"),
        pytest.param({0.5}, [True], [0.5], r"scores: must be a list, tuple or 1-D .*got set"),
        pytest.param("0.5", [True], [0.5], r"scores: must be a list.*got str"),
        # score values
        pytest.param([True], [True], [0.5], r"scores\[0\]: must be a real number, got bool"),
        pytest.param([np.True_], [True], [0.5], r"scores\[0\]: must be a real number, got bool"),
        pytest.param(np.array([True]), [True], [0.5], r"scores\[0\]: .*got bool", id="bool-arr"),
        pytest.param([0.5j], [True], [0.5], r"scores\[0\]: must be a real number, got complex"),
        pytest.param([0.5 + 0j], [True], [0.5], r"got complex", id="complex-zero-imag"),
        pytest.param(np.array([0.5 + 0j]), [True], [0.5], r"got complex", id="complex-array"),
        pytest.param(["0.5"], [True], [0.5], r"scores\[0\]: must be a real number, got str"),
        pytest.param([None], [True], [0.5], r"got NoneType"),
        pytest.param([Decimal("0.5")], [True], [0.5], r"got Decimal"),
        pytest.param([_nan], [True], [0.5], r"scores\[0\]: must be finite, got nan"),
        pytest.param([np.nan], [True], [0.5], r"must be finite, got nan"),
        pytest.param([_inf], [True], [0.5], r"must be finite, got inf"),
        pytest.param([0.5, -_inf], [True, True], [0.5], r"scores\[1\]: must be finite"),
        pytest.param([1.0000001], [True], [0.5], r"scores\[0\]: must lie in \[0, 1\]"),
        pytest.param([-1e-9], [True], [0.5], r"must lie in \[0, 1\]"),
        pytest.param([2], [True], [0.5], r"must lie in \[0, 1\], got 2.0"),
        # labels
        pytest.param([0.5], [1], [0.5], r"correct\[0\]: must be a bool, got int"),
        pytest.param([0.5], [0], [0.5], r"correct\[0\]: must be a bool, got int"),
        pytest.param([0.5], [1.0], [0.5], r"correct\[0\]: must be a bool, got float"),
        pytest.param([0.5], ["True"], [0.5], r"correct\[0\]: must be a bool, got str"),
        pytest.param([0.5], [None], [0.5], r"correct\[0\]: must be a bool, got NoneType"),
        pytest.param([0.5], np.array([1]), [0.5], r"correct\[0\]: must be a bool, got int"),
        pytest.param([0.5], np.array([1], dtype=np.uint8), [0.5], r"must be a bool, got int"),
        # thresholds
        pytest.param([0.5], [True], [_nan], r"thresholds\[0\]: must be finite"),
        pytest.param([0.5], [True], [0.5, 1.5], r"thresholds\[1\]: must lie in \[0, 1\]"),
        pytest.param([0.5], [True], [-0.1], r"thresholds\[0\]: must lie in \[0, 1\]"),
        pytest.param([0.5], [True], [False], r"thresholds\[0\]: must be a real number, got bool"),
        pytest.param([0.5], [True], [1j], r"thresholds\[0\]: .*got complex"),
        pytest.param([0.5], [True], [[0.5]], r"thresholds\[0\]: .*got list"),
    ],
)
def test_curve_rejects(scores: Any, correct: Any, thresholds: Any, message: str) -> None:
    with pytest.raises(EvaluationInputError, match=message):
        risk_coverage_curve(scores, correct, thresholds)


_unit = st.floats(min_value=0.0, max_value=1.0, allow_nan=False)


@given(
    items=st.lists(st.tuples(_unit, st.booleans()), min_size=1, max_size=1000),
    thresholds=st.lists(_unit, min_size=1, max_size=101),
)
def test_curve_properties(items: list[tuple[float, bool]], thresholds: list[float]) -> None:
    scores, correct = [s for s, _ in items], [c for _, c in items]
    rows = risk_coverage_curve(scores, correct, thresholds)
    assert [r["threshold"] for r in rows] == sorted(set(thresholds))
    coverages = [r["coverage"] for r in rows]
    assert all(b <= a for a, b in itertools.pairwise(coverages))
    for row in rows:
        t = row["threshold"]
        answered = [c for s, c in items if s >= t]  # brute-force oracle
        assert row["answered"] == len(answered)
        assert row["correct"] == sum(answered)
        assert row["coverage"] == len(answered) / len(items)
        if row["answered"] == 0:
            assert row["risk"] is None
        else:
            assert row["risk"] is not None and 0.0 <= row["risk"] <= 1.0
