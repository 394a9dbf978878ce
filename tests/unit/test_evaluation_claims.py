"""Claim support against facts (SPEC §5): semantics table, every bound, properties."""

from __future__ import annotations

from collections import OrderedDict
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from services.evaluation import (
    CLAIM_STATUSES,
    EvaluationInputError,
    SupportDecision,
    claim_support,
    support_status,
)


def claim(entity: Any = "e", attribute: Any = "a", value: Any = "v") -> dict[str, Any]:
    return {"entity": entity, "attribute": attribute, "value": value}


def fact(
    entity: Any = "e", attribute: Any = "a", value: Any = "v", source: Any = "s"
) -> dict[str, Any]:
    return {"entity": entity, "attribute": attribute, "value": value, "source": source}


# --- semantics ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("claims", "facts", "expected"),
    [
        pytest.param([claim()], [], [("unknown", [])], id="no-facts-unknown"),
        pytest.param([claim()], [fact(entity="x")], [("unknown", [])], id="other-entity"),
        pytest.param([claim()], [fact(attribute="x")], [("unknown", [])], id="other-attribute"),
        pytest.param(
            [claim()], [fact(entity="a", attribute="e")], [("unknown", [])], id="swapped-pair"
        ),
        pytest.param([claim()], [fact()], [("supported", ["s"])], id="supported"),
        pytest.param([claim(value="w")], [fact()], [("contradicted", ["s"])], id="contradicted"),
        pytest.param(
            [claim()],
            [fact(source="s2"), fact(source="s1")],
            [("supported", ["s1", "s2"])],
            id="same-value-two-sources-no-conflict",
        ),
        pytest.param(
            [claim()],
            [fact(source="s1"), fact(source="s1")],
            [("supported", ["s1"])],
            id="duplicate-fact-source-once",
        ),
        pytest.param(
            [claim()],
            [fact(value="v", source="s2"), fact(value="w", source="s1")],
            [("conflict", ["s1", "s2"])],
            id="conflict-even-if-one-matches",
        ),
        pytest.param(
            [claim(value="z")],
            [fact(value="v", source="s1"), fact(value="w", source="s1")],
            [("conflict", ["s1"])],
            id="conflict-one-source-two-values",
        ),
        pytest.param(
            [claim(value="V")], [fact(value="v")], [("contradicted", ["s"])], id="case-kept"
        ),
        pytest.param(
            [claim(value="4g")], [fact(value="4 g")], [("contradicted", ["s"])], id="no-unit-norm"
        ),
        pytest.param(
            [claim(value="v ")], [fact(value="v")], [("contradicted", ["s"])], id="no-strip"
        ),
        pytest.param([claim(entity="E")], [fact()], [("unknown", [])], id="entity-case-sensitive"),
        pytest.param(
            [claim(value="é")],
            [fact(value="e\u0301")],
            [("contradicted", ["s"])],
            id="no-unicode-normalisation",
        ),
    ],
)
def test_claim_support_semantics(
    claims: list[dict[str, str]], facts: list[dict[str, str]], expected: list[tuple[str, list[str]]]
) -> None:
    result = claim_support(claims, facts)
    assert result == [{"status": s, "sources": src} for s, src in expected]


def test_results_follow_claim_order_and_repeat_claims() -> None:
    facts = [fact("p", "dose", "4 g", "b"), fact("p", "dose", "4 g", "a"), fact("q", "x", "1")]
    claims = [claim("q", "x", "2"), claim("p", "dose", "4 g"), claim("r", "x", "1"), claim("q")]
    assert claim_support(claims, facts) == [
        {"status": "contradicted", "sources": ["s"]},
        {"status": "supported", "sources": ["a", "b"]},
        {"status": "unknown", "sources": []},
        {"status": "unknown", "sources": []},
    ]
    assert claim_support(claims + claims[:1], facts)[-1] == claim_support(claims, facts)[0]


def test_empty_claims_give_empty_list() -> None:
    assert claim_support([], [fact()]) == []
    assert claim_support([], []) == []


def test_result_rows_are_fresh_lists() -> None:
    first, second = claim_support([claim(), claim()], [fact()])
    first["sources"].append("mutated")
    assert second["sources"] == ["s"]
    assert claim_support([claim()], [fact()])[0]["sources"] == ["s"]


def test_inputs_are_not_mutated() -> None:
    claims, facts = [claim()], [fact(source="b"), fact(source="a")]
    snapshot = (repr(claims), repr(facts))
    claim_support(claims, facts)
    assert (repr(claims), repr(facts)) == snapshot


# --- support_status, the reusable decision -------------------------------------------------


def test_support_status_table() -> None:
    assert support_status({}, "v") == SupportDecision("unknown", ())
    assert support_status({"v": ["b", "a", "b"]}, "v") == SupportDecision("supported", ("a", "b"))
    assert support_status({"v": {"a"}}, "w") == SupportDecision("contradicted", ("a",))
    assert support_status({"v": {"a"}, "w": {"b"}}, "v") == SupportDecision("conflict", ("a", "b"))
    assert support_status({"v": {"a"}}, "v").as_dict() == {"status": "supported", "sources": ["a"]}


def test_support_decision_is_frozen() -> None:
    decision = support_status({"v": {"a"}}, "v")
    with pytest.raises(AttributeError):
        decision.status = "unknown"  # type: ignore[misc]


# --- bounds ---------------------------------------------------------------------------------


def test_claim_count_bound() -> None:
    assert len(claim_support([claim()] * 32, [fact()])) == 32
    with pytest.raises(ValueError, match=r"claims: at most 32 items allowed, got 33"):
        claim_support([claim()] * 33, [fact()])


def test_fact_count_bound() -> None:
    facts = [fact(source=f"s{i:03d}") for i in range(128)]
    result = claim_support([claim()], facts)
    assert result[0]["status"] == "supported"
    assert result[0]["sources"] == sorted(f["source"] for f in facts)
    with pytest.raises(ValueError, match=r"facts: at most 128 items allowed, got 129"):
        claim_support([claim()], [*facts, fact()])


def test_count_bounds_are_checked_before_items() -> None:
    with pytest.raises(ValueError, match="at most 32"):
        claim_support(["not a dict"] * 33, [])  # type: ignore[list-item]


@pytest.mark.parametrize("key", ["entity", "attribute", "value"])
def test_claim_value_length_bound(key: str) -> None:
    ok = claim(**{key: "x" * 200})
    claim_support([ok], [])
    with pytest.raises(ValueError, match=rf"claims\[0\]\['{key}'\]: at most 200 characters"):
        claim_support([claim(**{key: "x" * 201})], [])


@pytest.mark.parametrize("key", ["entity", "attribute", "value", "source"])
def test_fact_value_length_bound(key: str) -> None:
    claim_support([], [fact(**{key: "y" * 200})])
    with pytest.raises(ValueError, match=rf"facts\[1\]\['{key}'\]: at most 200 characters"):
        claim_support([], [fact(), fact(**{key: "y" * 201})])


def test_length_counts_characters_as_given() -> None:
    padded = " " + "x" * 199  # 200 characters including the leading space
    claim_support([claim(value=padded)], [])
    with pytest.raises(ValueError, match="got 201"):
        claim_support([claim(value=padded + " ")], [])
    claim_support([claim(value="é" * 200)], [])  # characters, not UTF-8 bytes


# --- rejected shapes and types --------------------------------------------------------------


class StrSub(str):
    pass


class DictSub(dict):  # type: ignore[type-arg]
    pass


@pytest.mark.parametrize(
    ("claims", "facts", "message"),
    [
        pytest.param((claim(),), [], r"claims: must be a list of dicts, got tuple", id="tuple"),
        pytest.param([], (fact(),), r"facts: must be a list of dicts, got tuple", id="f-tuple"),
        pytest.param(None, [], r"claims: must be a list", id="none"),
        pytest.param(claim(), [], r"claims: must be a list", id="bare-dict"),
        pytest.param("claims", [], r"claims: must be a list", id="string"),
        pytest.param([("e", "a", "v")], [], r"claims\[0\]: must be a dict, got tuple", id="row"),
        pytest.param([DictSub(claim())], [], r"claims\[0\]: must be a dict", id="dict-sub"),
        pytest.param([OrderedDict(claim())], [], r"claims\[0\]: must be a dict", id="ordered-dict"),
        pytest.param(
            [claim(), {"entity": "e", "attribute": "a"}],
            [],
            r"claims\[1\]: keys must be exactly .*missing \['value'\]",
            id="missing-key",
        ),
        pytest.param(
            [{**claim(), "source": "s"}],
            [],
            r"claims\[0\]: keys must be exactly .*unexpected \['source'\]",
            id="claim-with-source",
        ),
        pytest.param(
            [], [claim()], r"facts\[0\]: keys .*missing \['source'\]", id="fact-without-source"
        ),
        pytest.param(
            [{"Entity": "e", "attribute": "a", "value": "v"}],
            [],
            r"missing \['entity'\], unexpected \['Entity'\]",
            id="key-case",
        ),
        pytest.param([{**claim(), 1: "x"}], [], r"unexpected \[<int>\]", id="non-str-key"),
        pytest.param(
            [{**claim(), "k" * 41: "x"}], [], r"unexpected \[<str>\]", id="long-key-not-echoed"
        ),
        pytest.param([claim(value=1)], [], r"claims\[0\]\['value'\]: must be a str, got int"),
        pytest.param([claim(value=True)], [], r"\['value'\]: must be a str, got bool"),
        pytest.param([claim(value=None)], [], r"\['value'\]: must be a str, got NoneType"),
        pytest.param([claim(value=b"v")], [], r"\['value'\]: must be a str, got bytes"),
        pytest.param([claim(value=["v"])], [], r"\['value'\]: must be a str, got list"),
        pytest.param([claim(entity=StrSub("e"))], [], r"\['entity'\]: must be a str, got StrSub"),
        pytest.param([claim(attribute="")], [], r"\['attribute'\]: must not be empty"),
        pytest.param([claim(value=" \t\n")], [], r"\['value'\]: must not be empty"),
        pytest.param([claim(value="\u3000")], [], r"must not be empty", id="ideographic-space"),
        pytest.param([], [fact(source="")], r"facts\[0\]\['source'\]: must not be empty"),
        pytest.param([], [fact(source=2)], r"facts\[0\]\['source'\]: must be a str"),
    ],
)
def test_rejected_inputs(claims: Any, facts: Any, message: str) -> None:
    with pytest.raises(EvaluationInputError, match=message):
        claim_support(claims, facts)


def test_error_is_a_value_error_and_never_echoes_content() -> None:
    secret = "jan.jansen@example.org " + "x" * 300
    with pytest.raises(ValueError) as excinfo:
        claim_support([claim(value=secret)], [])
    assert "jan.jansen" not in str(excinfo.value)


# --- properties -----------------------------------------------------------------------------

_small = st.sampled_from(["a", "b", "c"])
_claims = st.lists(st.builds(claim, _small, _small, _small), max_size=32)
_facts = st.lists(
    st.builds(fact, _small, _small, _small, st.sampled_from(["s1", "s2", "s3"])), max_size=128
)


@given(claims=_claims, facts=_facts)
def test_properties_one_valid_row_per_claim(
    claims: list[dict[str, str]], facts: list[dict[str, str]]
) -> None:
    result = claim_support(claims, facts)
    assert len(result) == len(claims)
    for c, row in zip(claims, result, strict=True):
        assert row["status"] in CLAIM_STATUSES
        assert row["sources"] == sorted(set(row["sources"]))
        evidence = [
            f for f in facts if (f["entity"], f["attribute"]) == (c["entity"], c["attribute"])
        ]
        assert row["sources"] == sorted({f["source"] for f in evidence})
        values = {f["value"] for f in evidence}
        expected = (
            "unknown"
            if not values
            else "conflict"
            if len(values) > 1
            else "supported"
            if c["value"] in values
            else "contradicted"
        )
        assert row["status"] == expected


@given(claims=_claims, facts=_facts, data=st.data())
def test_property_fact_order_does_not_matter(
    claims: list[dict[str, str]], facts: list[dict[str, str]], data: st.DataObject
) -> None:
    shuffled = data.draw(st.permutations(facts))
    assert claim_support(claims, shuffled) == claim_support(claims, facts)
