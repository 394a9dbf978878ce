"""recall@k, reciprocal rank and nDCG@k (SPEC §6): formulas, duplicates, validation, properties."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from services.evaluation import EvaluationInputError, ndcg_at_k, recall_at_k, reciprocal_rank

RETURNED = ["d3", "d1", "d9", "d2", "d7"]


@pytest.mark.parametrize(
    ("k", "expected"), [(1, 0.0), (2, 0.5), (3, 0.5), (4, 1.0), (5, 1.0), (50, 1.0)]
)
def test_recall_at_k_table(k: int, expected: float) -> None:
    assert recall_at_k(RETURNED, {"d1", "d2"}, k) == expected


def test_recall_denominator_is_all_relevant() -> None:
    assert recall_at_k(["d1"], {"d1", "d2", "d3", "d4"}, k=1) == 0.25


def test_recall_relevant_containers_and_duplicates() -> None:
    for relevant in ({"d1", "d2"}, frozenset({"d1", "d2"}), ["d1", "d2", "d2"], ("d2", "d1")):
        assert recall_at_k(RETURNED, relevant, k=2) == 0.5


def test_duplicates_use_a_slot_and_count_once() -> None:
    assert recall_at_k(["d1", "d1", "d2"], {"d1", "d2"}, k=2) == 0.5
    assert recall_at_k(["d1", "d1", "d2"], {"d1", "d2"}, k=3) == 1.0
    assert reciprocal_rank(["d9", "d1", "d1"], {"d1"}) == 0.5
    assert ndcg_at_k(["d1", "d1"], {"d1": 1, "d2": 1}, k=2) < 1.0


def test_empty_returned_scores_zero() -> None:
    assert recall_at_k([], {"d1"}, k=3) == 0.0
    assert reciprocal_rank((), {"d1"}) == 0.0
    assert ndcg_at_k([], {"d1": 2}, k=3) == 0.0


@pytest.mark.parametrize(
    ("returned", "expected"),
    [(["d1"], 1.0), (["d3", "d1"], 0.5), (["d3", "d9", "d2"], 1 / 3), (["d3", "d9"], 0.0)],
)
def test_reciprocal_rank_table(returned: list[str], expected: float) -> None:
    assert reciprocal_rank(returned, {"d1", "d2"}) == expected


def test_mrr_is_mean_of_reciprocal_ranks() -> None:
    queries = [(["a", "b"], {"b"}), (["c"], {"c"}), (["x"], {"y"})]
    mrr = sum(reciprocal_rank(r, rel) for r, rel in queries) / len(queries)
    assert mrr == 0.5


def _dcg(grades: list[float]) -> float:
    return sum((2**g - 1) / math.log2(i + 1) for i, g in enumerate(grades, start=1))


def test_ndcg_hand_computed() -> None:
    relevance = {"d1": 3, "d2": 2, "d3": 0, "d4": 1}
    returned = ["d3", "d2", "d5", "d1"]
    expected = _dcg([0, 2, 0, 3]) / _dcg([3, 2, 1, 0])
    assert ndcg_at_k(returned, relevance, k=4) == pytest.approx(expected)
    assert ndcg_at_k(returned, relevance, k=2) == pytest.approx(_dcg([0, 2]) / _dcg([3, 2]))
    assert ndcg_at_k(["d1", "d2", "d4"], relevance, k=3) == 1.0


def test_ndcg_zero_ideal_dcg_gives_zero() -> None:
    assert ndcg_at_k(["d1"], {}, k=1) == 0.0
    assert ndcg_at_k(["d1", "d2"], {"d1": 0, "d2": 0.0}, k=2) == 0.0


def test_ndcg_fractional_and_numpy_grades() -> None:
    value = ndcg_at_k(["b", "a"], {"a": np.float64(0.5), "b": np.int64(1)}, k=2)
    assert value == 1.0


def test_ndcg_grade_bound() -> None:
    assert ndcg_at_k(["a", "b"], {"a": 100, "b": 1}, k=2) == 1.0
    with pytest.raises(ValueError, match=r"relevance\[<doc id>\]: must be a finite number in"):
        ndcg_at_k(["a"], {"a": 100.5}, k=1)


@pytest.mark.parametrize("k", [0, -1])
def test_k_must_be_positive(k: int) -> None:
    with pytest.raises(EvaluationInputError, match=rf"k: must be >= 1, got {k}"):
        recall_at_k(["a"], {"a"}, k)
    with pytest.raises(EvaluationInputError, match=r"k: must be >= 1"):
        ndcg_at_k(["a"], {"a": 1}, k)


@pytest.mark.parametrize("k", [True, False, 1.0, "1", None, np.True_])
def test_k_must_be_an_int(k: Any) -> None:
    with pytest.raises(EvaluationInputError, match=r"k: must be an int"):
        recall_at_k(["a"], {"a"}, k)
    with pytest.raises(EvaluationInputError, match=r"k: must be an int"):
        ndcg_at_k(["a"], {"a": 1}, k)


def test_k_accepts_numpy_int() -> None:
    assert recall_at_k(["a"], {"a"}, np.int64(1)) == 1.0  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("returned", "relevant", "message"),
    [
        pytest.param("d1", {"d1"}, r"returned: must be a list or tuple, got str"),
        pytest.param({"d1"}, {"d1"}, r"returned: must be a list or tuple, got set"),
        pytest.param(["d1", ""], {"d1"}, r"returned\[1\]: must not be empty"),
        pytest.param([" "], {"d1"}, r"returned\[0\]: must not be empty"),
        pytest.param([1], {"d1"}, r"returned\[0\]: must be a str, got int"),
        pytest.param(["d1"], set(), r"relevant: needs at least 1 relevant doc id"),
        pytest.param(["d1"], [], r"relevant: needs at least 1"),
        pytest.param(["d1"], "d1", r"relevant: must be a set, frozenset, list or tuple, got str"),
        pytest.param(["d1"], {"d1": 1}, r"relevant: .*got a mapping \(graded: use ndcg_at_k\)"),
        pytest.param(["d1"], [None], r"relevant\[0\]: must be a str, got NoneType"),
        pytest.param(["d1"], [""], r"relevant\[0\]: must not be empty"),
    ],
)
def test_recall_and_rr_reject(returned: Any, relevant: Any, message: str) -> None:
    with pytest.raises(EvaluationInputError, match=message):
        recall_at_k(returned, relevant, 1)
    with pytest.raises(EvaluationInputError, match=message):
        reciprocal_rank(returned, relevant)


@pytest.mark.parametrize(
    ("relevance", "message"),
    [
        pytest.param({"d1"}, r"relevance: must be a mapping of doc id to grade, got set"),
        pytest.param([("d1", 1)], r"relevance: must be a mapping"),
        pytest.param({"d1": -1}, r"must be a finite number in \[0, 100\], got -1.0"),
        pytest.param({"d1": float("nan")}, r"must be a finite number"),
        pytest.param({"d1": float("inf")}, r"must be a finite number"),
        pytest.param({"d1": True}, r"relevance\[<doc id>\]: must be a real number, got bool"),
        pytest.param({"d1": 1j}, r"must be a real number, got complex"),
        pytest.param({"d1": "3"}, r"must be a real number, got str"),
        pytest.param({"": 1}, r"relevance key: must not be empty"),
        pytest.param({1: 1}, r"relevance key: must be a str, got int"),
    ],
)
def test_ndcg_rejects(relevance: Any, message: str) -> None:
    with pytest.raises(EvaluationInputError, match=message):
        ndcg_at_k(["d1"], relevance, 1)


_ids = st.sampled_from([f"d{i}" for i in range(8)])


@given(
    returned=st.lists(_ids, max_size=12),
    relevant=st.sets(_ids, min_size=1),
    k=st.integers(min_value=1, max_value=15),
)
def test_recall_and_rr_properties(returned: list[str], relevant: set[str], k: int) -> None:
    recall = recall_at_k(returned, relevant, k)
    assert 0.0 <= recall <= 1.0
    assert recall <= recall_at_k(returned, relevant, k + 1)  # never falls as k grows
    rr = reciprocal_rank(returned, relevant)
    assert rr == 0.0 or 1 / rr == pytest.approx(round(1 / rr))
    assert (rr > 0) == (recall_at_k(returned, relevant, max(len(returned), 1)) > 0)


@given(
    returned=st.lists(_ids, max_size=12),
    relevance=st.dictionaries(_ids, st.integers(min_value=0, max_value=3)),
    k=st.integers(min_value=1, max_value=15),
)
def test_ndcg_properties(returned: list[str], relevance: dict[str, int], k: int) -> None:
    value = ndcg_at_k(returned, relevance, k)
    assert 0.0 <= value <= 1.0
    ideal = sorted(relevance, key=relevance.__getitem__, reverse=True)
    if any(relevance.values()):
        assert ndcg_at_k(ideal, relevance, k) == pytest.approx(1.0)
    else:
        assert value == 0.0
