"""The adversarial grounding set (tests/data/grounding-cases/) is well formed and labelled.

These checks read the data only; they do not run the grounding check. They hold the set to what its
README promises: one JSON object per line, unique ids, at least eight cases of every kind in every
language with both tuning splits (and thirty-seven later held-out splits, *fresh*, *fresh2*, …
*fresh37*, of at least twenty cases per language over every kind),
passages that are valid ``Passage`` wire objects, citations that are fabricated exactly where the
kind says so, and labels that follow the kind.
"""

from __future__ import annotations

import json
import re
import unicodedata
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from schemas.events import Passage

DATA = Path(__file__).resolve().parents[1] / "data" / "grounding-cases"
LANGUAGES = ("en", "nl", "vi")
MIN_PER_KIND = 8
SPLITS = (
    "dev",
    *("test", "fresh", "fresh2", "fresh3", "fresh4", "fresh5", "fresh6", "fresh7", "fresh8"),
    "fresh9",
    "fresh10",
    "fresh11",
    "fresh12",
    "fresh13",
    "fresh14",
    "fresh15",
    "fresh16",
    "fresh17",
    "fresh18",
    "fresh19",
    "fresh20",
    "fresh21",
    "fresh22",
    "fresh23",
    "fresh24",
    "fresh25",
    "fresh26",
    "fresh27",
    "fresh28",
    "fresh29",
    "fresh30",
    "fresh31",
    "fresh32",
    "fresh33",
    "fresh34",
    "fresh35",
    "fresh36",
    "fresh37",
)
#: the later held-out splits: at least so many cases per language, and per kind in each language
MIN_FRESH_PER_LANGUAGE = 20
MIN_FRESH_PER_KIND = {
    "fresh": 2,
    "fresh2": 1,
    "fresh3": 2,
    "fresh4": 2,
    "fresh5": 2,
    "fresh6": 2,
    "fresh7": 2,
    "fresh8": 2,
    "fresh9": 2,
    "fresh10": 2,
    "fresh11": 2,
    "fresh12": 2,
    "fresh13": 2,
    "fresh14": 2,
    "fresh15": 2,
    "fresh16": 2,
    "fresh17": 2,
    "fresh18": 2,
    "fresh19": 2,
    "fresh20": 2,
    "fresh21": 2,
    "fresh22": 2,
    "fresh23": 2,
    "fresh24": 2,
    "fresh25": 2,
    "fresh26": 2,
    "fresh27": 2,
    "fresh28": 2,
    "fresh29": 2,
    "fresh30": 2,
    "fresh31": 2,
    "fresh32": 2,
    "fresh33": 2,
    "fresh34": 2,
    "fresh35": 2,
    "fresh36": 2,
    "fresh37": 2,
}

#: kind -> (flagged, critical); ``None`` for critical means either (a citation case is critical
#: only when it also states a wrong dose).
LABEL_RULES: dict[str, tuple[bool, bool | None]] = {
    "correct_paraphrase": (False, False),
    "correct_citation": (False, False),
    "correct_dose": (False, False),
    "abstention": (False, False),
    "wrong_number": (True, True),
    "wrong_unit": (True, True),
    "wrong_drug": (True, True),
    "wrong_population": (True, True),
    "polarity_flip": (True, True),
    "fabricated_citation": (True, None),
    "unsupported_citation": (True, None),
}
KEYS = {"id", "language", "kind", "split", "question", "answer", "retrieval", "expected"}
EXPECTED_KEYS = {"flagged", "critical", "drug", "why"}

_DOC_MARKER = re.compile(r"\[\s*(doc:[^\[\]]+)\]")
_NUM_MARKER = re.compile(r"\[\s*(\d+(?:\s*[-–]\s*\d+)?(?:\s*,\s*\d+(?:\s*[-–]\s*\d+)?)*)\s*\]")


def _load(lang: str) -> list[dict[str, Any]]:
    cases = []
    path = DATA / f"{lang}.jsonl"
    for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        assert line.strip(), f"{path.name}:{n}: blank line"
        obj = json.loads(line)
        assert isinstance(obj, dict), f"{path.name}:{n}: not a JSON object"
        cases.append(obj)
    return cases


ALL: dict[str, list[dict[str, Any]]] = {lang: _load(lang) for lang in LANGUAGES}
CASES = [case for lang in LANGUAGES for case in ALL[lang]]


def cited(case: dict[str, Any]) -> tuple[list[str], list[int]]:
    """Document ids (from ``[doc:…]`` markers and the ``citations`` list) and ``[n]`` indices."""
    answer = case["answer"]
    doc_ids = [
        part.strip().removeprefix("doc:").strip()
        for group in _DOC_MARKER.findall(answer)
        for part in group.split(",")
    ]
    doc_ids += case.get("citations", [])
    indices: list[int] = []
    for group in _NUM_MARKER.findall(answer):
        for part in group.split(","):
            bounds = [int(x) for x in re.split(r"[-–]", part)]
            indices.extend(range(bounds[0], bounds[-1] + 1))
    return doc_ids, indices


def fabricated(case: dict[str, Any]) -> list[str]:
    retrieved = {p["doc_id"] for p in case["retrieval"]}
    doc_ids, indices = cited(case)
    n = len(case["retrieval"])
    missing = [d for d in doc_ids if d not in retrieved]
    return missing + [f"[{i}]" for i in indices if not 1 <= i <= n]


def test_marker_reader_itself() -> None:
    case = {
        "answer": "a [doc:x] b [doc:y, doc:z] c [1] d [2-3] e [1, 5][0]",
        "citations": ["w"],
        "retrieval": [{"doc_id": d} for d in ("x", "y", "v")],
    }
    assert cited(case) == (["x", "y", "z", "w"], [1, 2, 3, 1, 5, 0])
    assert fabricated(case) == ["z", "w", "[5]", "[0]"]


@pytest.mark.parametrize("lang", LANGUAGES)
def test_shape(lang: str) -> None:
    for case in ALL[lang]:
        cid = str(case.get("id"))
        assert KEYS <= case.keys() <= KEYS | {"citations"}, cid
        assert case["language"] == lang, cid
        assert case["kind"] in LABEL_RULES, cid
        assert re.fullmatch(rf"{lang}-{case['kind']}-\d{{2}}", cid), cid
        assert case["split"] in SPLITS, cid
        for field in ("question", "answer"):
            assert isinstance(case[field], str), cid
            assert case[field].strip(), cid
        assert isinstance(case.get("citations", []), list), cid
        assert all(isinstance(c, str) and c for c in case.get("citations", [])), cid
        expected = case["expected"]
        assert expected.keys() == EXPECTED_KEYS, cid
        assert isinstance(expected["flagged"], bool), cid
        assert isinstance(expected["critical"], bool), cid
        assert expected["drug"] is None or (isinstance(expected["drug"], str) and expected["drug"])
        assert isinstance(expected["why"], str), cid
        assert expected["why"].strip(), cid


def test_ids_unique() -> None:
    counts = Counter(case["id"] for case in CASES)
    assert [i for i, n in counts.items() if n > 1] == []


@pytest.mark.parametrize("lang", LANGUAGES)
def test_balance_and_splits(lang: str) -> None:
    per_kind: dict[str, Counter[str]] = {kind: Counter() for kind in LABEL_RULES}
    for case in ALL[lang]:
        per_kind[case["kind"]][case["split"]] += 1
    for kind, splits in per_kind.items():
        assert splits["dev"] + splits["test"] >= MIN_PER_KIND, (lang, kind, splits)
        assert splits["dev"] and splits["test"], (lang, kind, splits)
        assert abs(splits["dev"] - splits["test"]) <= 1, (lang, kind, splits)
        for split, least in MIN_FRESH_PER_KIND.items():
            assert splits[split] >= least, (lang, kind, split, splits)
    for split in MIN_FRESH_PER_KIND:
        held = sum(splits[split] for splits in per_kind.values())
        assert held >= MIN_FRESH_PER_LANGUAGE, (lang, split, held)


@pytest.mark.parametrize("lang", LANGUAGES)
def test_retrieval_items_are_wire_passages(lang: str) -> None:
    for case in ALL[lang]:
        retrieval = case["retrieval"]
        assert 1 <= len(retrieval) <= 5, case["id"]
        passages = [Passage.model_validate(item) for item in retrieval]
        assert [p.rank for p in passages] == list(range(1, len(passages) + 1)), case["id"]
        assert len({p.doc_id for p in passages}) == len(passages), case["id"]
        assert all(p.text.strip() for p in passages), case["id"]


def test_labels_follow_the_kind() -> None:
    for case in CASES:
        flagged, critical = LABEL_RULES[case["kind"]]
        expected = case["expected"]
        assert expected["flagged"] is flagged, case["id"]
        if critical is not None:
            assert expected["critical"] is critical, case["id"]
        if expected["critical"]:
            assert expected["drug"], f"{case['id']}: a critical case names its drug"


def test_fabricated_citations_exactly_where_the_kind_says() -> None:
    for case in CASES:
        bad = fabricated(case)
        if case["kind"] == "fabricated_citation":
            assert bad, f"{case['id']}: cites nothing that is missing from retrieval"
        else:
            assert bad == [], case["id"]


@pytest.mark.parametrize("kind", ["correct_citation", "unsupported_citation"])
def test_citation_kinds_cite_retrieved_passages(kind: str) -> None:
    for case in (c for c in CASES if c["kind"] == kind):
        doc_ids, indices = cited(case)
        assert doc_ids or indices, f"{case['id']}: cites nothing"
        assert fabricated(case) == [], case["id"]


def test_enough_drugs() -> None:
    drugs = {case["expected"]["drug"] for case in CASES} - {None}
    assert len(drugs) >= 25, sorted(drugs)


def test_vietnamese_keeps_its_diacritics() -> None:
    def marked(text: str) -> bool:
        return "đ" in text.lower() or any(
            unicodedata.combining(ch) for ch in unicodedata.normalize("NFD", text)
        )

    for case in ALL["vi"]:
        assert marked(case["question"]) and marked(case["answer"]), case["id"]
        assert all(marked(p["text"]) for p in case["retrieval"]), case["id"]


def _readme_table(section: str) -> dict[str, tuple[int, ...]]:
    """The ``| `kind` | en | nl | vi |`` rows of one ``## section`` of the README."""
    readme = (DATA / "README.md").read_text(encoding="utf-8")
    body = readme.split(f"\n## {section}\n", 1)[1].split("\n## ", 1)[0]
    return {
        m[0]: tuple(int(n) for n in m[1:])
        for m in re.findall(r"^\| `(\w+)` \| (\d+) \| (\d+) \| (\d+) \|$", body, re.M)
    }


@pytest.mark.parametrize(
    ("section", "splits"),
    [
        ("Counts", ("dev", "test")),
        ("Fresh", ("fresh",)),
        ("Fresh2", ("fresh2",)),
        ("Fresh3", ("fresh3",)),
        ("Fresh4", ("fresh4",)),
        ("Fresh5", ("fresh5",)),
        ("Fresh6", ("fresh6",)),
        ("Fresh7", ("fresh7",)),
        ("Fresh8", ("fresh8",)),
        ("Fresh9", ("fresh9",)),
        ("Fresh10", ("fresh10",)),
        ("Fresh11", ("fresh11",)),
        ("Fresh12", ("fresh12",)),
        ("Fresh13", ("fresh13",)),
        ("Fresh14", ("fresh14",)),
        ("Fresh15", ("fresh15",)),
        ("Fresh16", ("fresh16",)),
        ("Fresh17", ("fresh17",)),
        ("Fresh18", ("fresh18",)),
        ("Fresh19", ("fresh19",)),
        ("Fresh20", ("fresh20",)),
        ("Fresh21", ("fresh21",)),
        ("Fresh22", ("fresh22",)),
        ("Fresh23", ("fresh23",)),
        ("Fresh24", ("fresh24",)),
        ("Fresh25", ("fresh25",)),
        ("Fresh26", ("fresh26",)),
        ("Fresh27", ("fresh27",)),
        ("Fresh28", ("fresh28",)),
        ("Fresh29", ("fresh29",)),
        ("Fresh30", ("fresh30",)),
        ("Fresh31", ("fresh31",)),
        ("Fresh32", ("fresh32",)),
        ("Fresh33", ("fresh33",)),
        ("Fresh34", ("fresh34",)),
        ("Fresh35", ("fresh35",)),
        ("Fresh36", ("fresh36",)),
        ("Fresh37", ("fresh37",)),
    ],
)
def test_readme_counts_match_the_data(section: str, splits: tuple[str, ...]) -> None:
    counts = Counter((case["kind"], case["language"]) for case in CASES if case["split"] in splits)
    actual = {kind: tuple(counts[kind, lang] for lang in LANGUAGES) for kind in LABEL_RULES}
    assert _readme_table(section) == actual
