"""FactRegistry: loading with errors that name file and line, and claim_support's decisions."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from schemas.events import Claim
from services.evaluation import claim_support
from services.grounding.facts import DEFAULT_FACTS_DIR, FactError, FactRegistry

HEADER = "entity,attribute,value,source\n"


def write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def jsonl(*rows: dict[str, object]) -> str:
    return "".join(json.dumps(r) + "\n" for r in rows)


def fact(entity: str = "e", attribute: str = "a", value: str = "v", source: str = "s") -> dict:
    return {"entity": entity, "attribute": attribute, "value": value, "source": source}


# --- loading ----------------------------------------------------------------------------------


def test_bundled_example_facts_load_and_decide() -> None:
    registry = FactRegistry.load()
    assert len(registry) >= 20
    assert {"paracetamol", "ibuprofen", "metformin", "warfarin"} <= registry.entities
    decision = registry.decide("paracetamol", "max_daily_dose_adult", "4 g")
    assert decision.status == "supported"
    assert decision.sources == ("leaflet-paracetamol-500mg-nl", "nhs-paracetamol-adults")
    assert registry.decide("paracetamol", "max_daily_dose_adult", "4000 mg").status == (
        "contradicted"
    )
    assert (DEFAULT_FACTS_DIR / "README.md").read_text().lower().count("illustrative") >= 1


def test_csv_and_jsonl_with_comments_blank_lines_and_duplicates(tmp_path: Path) -> None:
    write(tmp_path, "a.csv", "# source: test\n" + HEADER + "p,max,4 g,s1\n\np,max,4 g,s1\n")
    write(tmp_path, "b.jsonl", "# comment\n\n" + jsonl(fact("p", "max", "4 g", "s2")))
    write(tmp_path, "ignored.txt", "not a fact file")
    registry = FactRegistry.load(tmp_path)
    assert len(registry) == 2
    assert registry.pairs == 1
    assert dict(registry.values("p", "max")) == {"4 g": frozenset({"s1", "s2"})}
    assert registry.values("p", "other") == {}


def test_values_are_kept_as_written(tmp_path: Path) -> None:
    path = write(tmp_path, "f.csv", HEADER + 'p,max," 4 g",s\n')
    registry = FactRegistry.load(path)
    assert registry.decide("p", "max", " 4 g").status == "supported"
    assert registry.decide("p", "max", "4 g").status == "contradicted"


@pytest.mark.parametrize(
    ("name", "text", "where", "message"),
    [
        ("f.csv", HEADER + "p,max,,s\n", "f.csv:2", "value: must not be empty"),
        ("f.csv", HEADER + "p,max,  ,s\n", "f.csv:2", "value: must not be empty"),
        ("f.csv", "# c\n" + HEADER + "p,max,4 g\n", "f.csv:3", "expected 4 fields, got 3"),
        ("f.csv", "entity,attribute,value\np,max,4 g\n", "f.csv:1", "the header must be"),
        ("f.csv", HEADER + f"p,max,{'x' * 201},s\n", "f.csv:2", "at most 200 characters"),
        ("f.csv", HEADER + 'p,max,"4 g,s\n', "f.csv", "not valid CSV"),
        ("f.csv", "# only a comment\n", "f.csv", "no header row"),
        ("f.jsonl", jsonl(fact()) + "{bad json\n", "f.jsonl:2", "not valid JSON"),
        ("f.jsonl", "# c\n" + jsonl(fact(value=4)), "f.jsonl:2", "value: must be a string"),  # type: ignore[arg-type]
        (
            "f.jsonl",
            jsonl({"entity": "e", "attribute": "a", "value": "v"}),
            "f.jsonl:1",
            "missing ['source']",
        ),
        ("f.jsonl", jsonl({**fact(), "extra": "x"}), "f.jsonl:1", "unexpected ['extra']"),
        ("f.jsonl", "[1, 2]\n", "f.jsonl:1", "must be a JSON object"),
        ("f.jsonl", jsonl(fact(source=" ")), "f.jsonl:1", "source: must not be empty"),
    ],
)
def test_bad_rows_name_file_and_line(
    tmp_path: Path, name: str, text: str, where: str, message: str
) -> None:
    write(tmp_path, name, text)
    with pytest.raises(FactError) as err:
        FactRegistry.load(tmp_path)
    assert str(err.value).startswith(str(tmp_path / where))
    assert message in str(err.value)
    assert isinstance(err.value, ValueError)


def test_value_of_exactly_200_characters_loads(tmp_path: Path) -> None:
    write(tmp_path, "f.csv", HEADER + f"p,max,{'x' * 200},s\n")
    assert len(FactRegistry.load(tmp_path)) == 1


def test_missing_path_and_bad_encoding(tmp_path: Path) -> None:
    with pytest.raises(FactError, match="no such fact file"):
        FactRegistry.load(tmp_path / "nope")
    (tmp_path / "f.csv").write_bytes(b"entity,attribute,value,source\np,m,\xff,s\n")
    with pytest.raises(FactError, match="not UTF-8"):
        FactRegistry.load(tmp_path / "f.csv")


# --- decisions --------------------------------------------------------------------------------


def test_check_returns_claim_verdicts_with_origin() -> None:
    registry = FactRegistry.from_facts(
        [fact("ibu", "max", "1200 mg", "a"), fact("ibu", "max", "2400 mg", "b"), fact()]
    )
    claims = [
        Claim(entity="ibu", attribute="max", value="1200 mg"),
        Claim(entity="e", attribute="a", value="v"),
        Claim(entity="e", attribute="a", value="w"),
        Claim(entity="x", attribute="a", value="v"),
    ]
    verdicts = registry.check_many(claims, origin="extracted")
    assert [(v.status, v.sources, v.origin) for v in verdicts] == [
        ("conflict", ["a", "b"], "extracted"),
        ("supported", ["s"], "extracted"),
        ("contradicted", ["s"], "extracted"),
        ("unknown", [], "extracted"),
    ]
    assert registry.check(claims[1]).origin == "event"


def test_no_128_fact_limit() -> None:
    facts = [fact(f"e{i}", "a", "v", f"s{i}") for i in range(1000)]
    registry = FactRegistry.from_facts(facts)
    assert len(registry) == 1000
    assert registry.decide("e999", "a", "v").status == "supported"


_text = st.sampled_from(["a", "b", "c", "4 g", "4g", " a", "É"])
_fact = st.fixed_dictionaries(
    {"entity": _text, "attribute": _text, "value": _text, "source": _text}
)
_claim = st.fixed_dictionaries({"entity": _text, "attribute": _text, "value": _text})


@settings(max_examples=300, deadline=None)
@given(claims=st.lists(_claim, max_size=32), facts=st.lists(_fact, max_size=128))
def test_equivalent_to_claim_support(claims: list[dict], facts: list[dict]) -> None:
    expected = claim_support(claims, facts)
    registry = FactRegistry.from_facts(facts)
    got = [registry.decide(c["entity"], c["attribute"], c["value"]).as_dict() for c in claims]
    assert got == expected
    verdicts = registry.check_many([Claim(**c) for c in claims])
    assert [{"status": v.status, "sources": v.sources} for v in verdicts] == expected


@settings(max_examples=100, deadline=None)
@given(
    facts=st.lists(
        st.fixed_dictionaries(
            {
                "entity": st.text(min_size=1, max_size=3).filter(str.strip),
                "attribute": st.just("a"),
                "value": st.text(min_size=1, max_size=3).filter(str.strip),
                "source": st.text(min_size=1, max_size=3).filter(str.strip),
            }
        ),
        max_size=40,
    ),
    value=st.text(min_size=1, max_size=3).filter(str.strip),
)
def test_equivalent_on_arbitrary_text(facts: list[dict], value: str) -> None:
    claims = [{"entity": f["entity"], "attribute": "a", "value": value} for f in facts[:32]]
    registry = FactRegistry.from_facts(facts)
    got = [registry.decide(c["entity"], "a", value).as_dict() for c in claims]
    assert got == claim_support(claims, facts)


def test_from_facts_validates_like_files() -> None:
    with pytest.raises(FactError, match=r"facts\[1\]: value: must not be empty"):
        FactRegistry.from_facts([fact(), fact(value="   ")])
