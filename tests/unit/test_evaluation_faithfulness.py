"""faithfulness (SPEC §5): score, counts, ungrounded list, input forms, validation."""

from __future__ import annotations

from typing import Any

import numpy as np
import pydantic
import pytest
from hypothesis import given
from hypothesis import strategies as st

from services.evaluation import EvaluationInputError, FaithfulnessResult, faithfulness


def test_no_claims_is_fully_faithful() -> None:
    result = faithfulness([])
    assert (result.score, result.grounded, result.total, result.ungrounded) == (1.0, 0, 0, [])
    assert faithfulness(()).score == 1.0


def test_fraction_and_ungrounded_in_order() -> None:
    result = faithfulness(
        [("A.", True), ("B 500 mg.", False), ("C.", True), ("D.", False), ("B 500 mg.", False)]
    )
    assert result.score == 0.4
    assert (result.grounded, result.total) == (2, 5)
    assert result.ungrounded == ["B 500 mg.", "D.", "B 500 mg."]


def test_mapping_form_and_mixed_forms() -> None:
    verdicts = [
        {"text": "A.", "grounded": True, "status": "supported"},
        {"text": "B.", "grounded": np.False_},
        ("C.", np.True_),
    ]
    result = faithfulness(verdicts)  # type: ignore[arg-type]
    assert (result.grounded, result.total, result.ungrounded) == (2, 3, ["B."])


def test_all_ungrounded_scores_zero() -> None:
    assert faithfulness([("A.", False)]).score == 0.0


def test_result_serialises_with_score() -> None:
    result = faithfulness([("A.", True), ("B.", False)])
    assert result.model_dump() == {"grounded": 1, "total": 2, "ungrounded": ["B."], "score": 0.5}
    assert (
        FaithfulnessResult.model_validate_json(result.model_dump_json(exclude={"score"})) == result
    )
    schema = FaithfulnessResult.model_json_schema(mode="serialization")
    assert "score" in schema["properties"]


def test_result_is_frozen_and_consistent() -> None:
    result = faithfulness([("A.", True)])
    with pytest.raises(pydantic.ValidationError):
        result.grounded = 0  # type: ignore[misc]
    with pytest.raises(pydantic.ValidationError, match="grounded cannot exceed total"):
        FaithfulnessResult(grounded=2, total=1, ungrounded=[])
    with pytest.raises(pydantic.ValidationError, match="exactly total - grounded"):
        FaithfulnessResult(grounded=1, total=2, ungrounded=[])
    with pytest.raises(pydantic.ValidationError):
        FaithfulnessResult(grounded=-1, total=0, ungrounded=[])


@pytest.mark.parametrize(
    ("claims", "message"),
    [
        pytest.param("A.", r"claims: must be a list or tuple, got str"),
        pytest.param({("A.", True)}, r"claims: must be a list or tuple, got set"),
        pytest.param([("A.",)], r"claims\[0\]: a tuple must be \(text, grounded\), got 1"),
        pytest.param([("A.", True, 1)], r"claims\[0\]: a tuple must be .*got 3"),
        pytest.param([["A.", True]], r"claims\[0\]: must be a \(text, grounded\) tuple or a map"),
        pytest.param(["A."], r"claims\[0\]: must be a .*got str"),
        pytest.param([{"text": "A."}], r"claims\[0\]: a mapping needs the keys"),
        pytest.param([{"grounded": True}], r"claims\[0\]: a mapping needs the keys"),
        pytest.param([("A.", 1)], r"claims\[0\] grounded: must be a bool, got int"),
        pytest.param([("A.", "yes")], r"claims\[0\] grounded: must be a bool, got str"),
        pytest.param([("A.", None)], r"claims\[0\] grounded: must be a bool, got NoneType"),
        pytest.param([("A.", True), ("", True)], r"claims\[1\] text: must not be empty"),
        pytest.param([("  ", True)], r"claims\[0\] text: must not be empty"),
        pytest.param([(None, True)], r"claims\[0\] text: must be a str, got NoneType"),
    ],
)
def test_rejects(claims: Any, message: str) -> None:
    with pytest.raises(EvaluationInputError, match=message):
        faithfulness(claims)


@given(st.lists(st.tuples(st.sampled_from(["A.", "B.", "C."]), st.booleans()), max_size=50))
def test_properties(claims: list[tuple[str, bool]]) -> None:
    result = faithfulness(claims)
    assert 0.0 <= result.score <= 1.0
    assert result.grounded + len(result.ungrounded) == result.total == len(claims)
    assert result.ungrounded == [text for text, grounded in claims if not grounded]
    assert result.score == (result.grounded / result.total if claims else 1.0)
