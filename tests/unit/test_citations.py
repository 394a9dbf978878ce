"""Citations: fabricated (not retrieved, [n] out of range) and unsupported (does not ground)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from schemas.events import ChatEvent
from schemas.verdicts import CitationIssue, GroundingReport
from services.grounding import ExtractorSet, FactRegistry, GroundingConfig, check

DOSE = ("leaflet", "The maximum dose of paracetamol is 4 g per day for adults.")
LIVER = ("liver", "Do not use paracetamol if you have severe liver disease.")
STOMACH = ("stomach", "Ibuprofen can cause stomach ulcers and bleeding.")


def run(
    content: str,
    passages: list[tuple[str, str]] | list[dict[str, Any]],
    citations: list[str] | None = None,
) -> GroundingReport:
    retrieval = [p if isinstance(p, dict) else {"doc_id": p[0], "text": p[1]} for p in passages]
    data: dict[str, Any] = {
        "schema_version": 1,
        "event_id": "e",
        "conversation_id": "c",
        "turn_index": 1,
        "timestamp": "2024-05-01T10:00:00Z",
        "role": "assistant",
        "content": content,
        "language": "en",
        "retrieval": retrieval,
    }
    if citations is not None:
        data["citations"] = citations
    return check(
        ChatEvent.model_validate_json(json.dumps(data)),
        FactRegistry(),
        extractors=ExtractorSet(),
        config=GroundingConfig(),
        inclusion_probability=1.0,
        stratum="always",
    )


SUPPORTED = "The maximum dose of paracetamol is 4 g per day"


@pytest.mark.parametrize(
    ("content", "fabricated", "unsupported", "cited"),
    [
        pytest.param(f"{SUPPORTED} [doc:leaflet].", [], [], [["leaflet"]], id="supported"),
        pytest.param(f"{SUPPORTED} [doc:ghost].", ["ghost"], [], [["ghost"]], id="fabricated"),
        pytest.param(
            f"{SUPPORTED} [doc:stomach].",
            [],
            [("stomach", f"{SUPPORTED}.")],
            [["stomach"]],
            id="unsupported",
        ),
        pytest.param(f"{SUPPORTED} [1].", [], [], [["leaflet"]], id="n-marker"),
        pytest.param(
            f"{SUPPORTED} [3].",
            [],
            [("stomach", f"{SUPPORTED}.")],
            [["stomach"]],
            id="n-marker-unsupported",
        ),
        pytest.param(f"{SUPPORTED} [4].", ["[4]"], [], [["[4]"]], id="n-out-of-range"),
        pytest.param(f"{SUPPORTED} [0].", ["[0]"], [], [["[0]"]], id="n-zero"),
        pytest.param(
            f"{SUPPORTED} [1, 2].",
            [],
            [("liver", f"{SUPPORTED}.")],
            [["leaflet", "liver"]],
            id="two-numbers",
        ),
        pytest.param(
            f"{SUPPORTED} [doc:leaflet, doc:ghost].",
            ["ghost"],
            [],
            [["leaflet", "ghost"]],
            id="doc-list",
        ),
        pytest.param(
            "Is that right [doc:ghost]? Yes.", ["ghost"], [], [], id="marker-in-a-non-claim"
        ),
        pytest.param(
            "The maximum dose of paracetamol is 6 g per day [doc:leaflet].",
            [],
            [("leaflet", "The maximum dose of paracetamol is 6 g per day.")],
            [["leaflet"]],
            id="numbers-missing-in-cited-passage",
        ),
    ],
)
def test_markers(
    content: str,
    fabricated: list[str],
    unsupported: list[tuple[str, str]],
    cited: list[list[str]],
) -> None:
    report = run(content, [DOSE, LIVER, STOMACH])
    assert report.fabricated_citations == fabricated
    assert report.unsupported_citations == [
        CitationIssue(doc_id=d, claim=c) for d, c in unsupported
    ]
    assert [c.cited_docs for c in report.claims] == cited


def test_n_markers_count_by_rank_when_every_passage_has_one() -> None:
    passages = [
        {"doc_id": "stomach", "text": STOMACH[1], "rank": 2},
        {"doc_id": "leaflet", "text": DOSE[1], "rank": 1},
    ]
    report = run(f"{SUPPORTED} [1].", passages)
    assert report.claims[0].cited_docs == ["leaflet"]
    assert report.unsupported_citations == []
    partial = [{**passages[0]}, {"doc_id": "leaflet", "text": DOSE[1]}]  # one rank missing
    report = run(f"{SUPPORTED} [1].", partial)
    assert report.claims[0].cited_docs == ["stomach"]
    assert [i.doc_id for i in report.unsupported_citations] == ["stomach"]


def test_citations_list_fabricated_and_answer_level_support() -> None:
    content = f"{SUPPORTED}. Do not use paracetamol with severe liver disease."
    report = run(content, [DOSE, LIVER, STOMACH], citations=["leaflet", "ghost", "stomach"])
    assert report.fabricated_citations == ["ghost"]
    # leaflet grounds a claim; stomach grounds none and is reported with its closest claim
    assert [i.doc_id for i in report.unsupported_citations] == ["stomach"]


def test_listed_and_marked_fabrications_are_reported_once() -> None:
    report = run(f"{SUPPORTED} [doc:ghost]. Again [doc:ghost].", [DOSE], citations=["ghost"])
    assert report.fabricated_citations == ["ghost"]


def test_chunks_of_one_document_are_read_together() -> None:
    chunks = [("leaflet", "The maximum dose of paracetamol is"), ("leaflet", "4 g per day.")]
    report = run(f"{SUPPORTED} [doc:leaflet].", chunks)
    assert report.fabricated_citations == [] and report.unsupported_citations == []


def test_no_retrieval_makes_every_citation_fabricated() -> None:
    report = run(f"{SUPPORTED} [doc:leaflet] [1].", [])
    assert report.fabricated_citations == ["leaflet", "[1]"]
