"""Every file ``vigil scan`` writes validates against its published JSON Schema, and every checked
answer with a critical finding in a sampled conversation is a case of the evaluation set.

The scan is ``make demo``'s: the example log and the long-answer example, as one log.
"""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path

import pytest

from services.scan import run_scan
from services.settings import Settings
from tests.support.json_schemas import schema_errors
from tests.support.long_conversation import long_conversation

ROOT = Path(__file__).resolve().parents[2]
SOURCES = [
    str(ROOT / "examples" / "chat-events.jsonl"),
    str(ROOT / "examples" / "long-answer.jsonl"),
]
SCHEMAS = {
    "findings.jsonl": "Finding",
    "verdicts.jsonl": "GroundingReport",
    "review.jsonl": "ReviewItem",
    "evalset.jsonl": "EvalCase",
    "dead_letters.jsonl": "DeadLetter",
    "estimates.json": "PopulationEstimates",
}


@pytest.fixture(scope="module")
def out(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("demo")
    run_scan(SOURCES, folder, Settings())
    return folder


@pytest.mark.parametrize("name", sorted(SCHEMAS))
def test_every_output_file_validates_against_its_schema(out: Path, name: str) -> None:
    path = out / name
    assert path.is_file()
    records = [json.loads(path.read_text())] if name.endswith(".json") else path
    assert schema_errors(SCHEMAS[name], records) == []


def _jsonl(path: Path) -> list[dict[str, object]]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def test_every_critical_checked_answer_of_a_sampled_conversation_is_a_case(out: Path) -> None:
    checked = {str(v["event_id"]) for v in _jsonl(out / "verdicts.jsonl")}
    critical: defaultdict[str, set[str]] = defaultdict(set)
    for f in _jsonl(out / "findings.jsonl"):
        if f["severity"] == "critical" and f["event_id"] in checked:
            critical[str(f["conversation_id"])].add(str(f["event_id"]))
    cases = _jsonl(out / "evalset.jsonl")
    sampled = {str(c["conversation_id"]) for c in cases}
    evaluated = {str(c["event_id"]) for c in cases}
    wanted = {e for cid in sampled for e in critical.get(cid, ())}
    assert wanted and wanted <= evaluated
    answers = [c for c in cases if c["unit"] == "answer"]
    assert answers, "the example log has a conversation with two critical answers"
    for c in answers:
        assert c["case_id"] == f"{c['period']}:{c['conversation_id']}#{c['event_id']}"


def test_the_long_answer_is_reviewable_with_both_findings_in_view(out: Path) -> None:
    (item,) = [
        i for i in _jsonl(out / "review.jsonl") if i["conversation_id"] == "conv-en-long-0001"
    ]
    (answer,) = [t for t in item["turns"] if t["role"] == "assistant"]  # type: ignore[union-attr]
    assert len(answer["text"]) < 5000 and answer["truncated"] and len(answer["gaps"]) == 2
    rules = {m["rule_id"] for m in answer["marks"]}
    assert {"pii.email", "grounding.ungrounded_dose"} <= rules
    (email,) = [m for m in answer["marks"] if m["rule_id"] == "pii.email"]
    assert answer["text"][email["start"] : email["end"]] == "m***@***.nl"
    assert "apotheek-noord" not in json.dumps(item)
    assert answer["passages"][0]["doc_id"] == "pil-paracetamol-en-02"


def test_a_case_shortened_to_its_ceiling_validates_and_says_so(tmp_path: Path) -> None:
    """Twenty 55 KB answers: the conversation's accumulator is shortened under
    ``VIGIL_EVALSET_MAX_CASE_BYTES`` and its cases, ``trimmed``, still match the schema."""
    source = tmp_path / "huge.jsonl"
    events = long_conversation("conv-vi-huge-scan-01", answers=20)
    source.write_text("".join(json.dumps(e, ensure_ascii=False) + "\n" for e in events), "utf-8")
    run_scan(str(source), tmp_path / "out", Settings())
    path = tmp_path / "out" / "evalset.jsonl"
    assert schema_errors("EvalCase", path) == []
    cases = _jsonl(path)
    assert cases and all(c["trimmed"] for c in cases)
