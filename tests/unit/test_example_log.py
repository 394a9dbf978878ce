"""Acceptance on the bundled example log: every planted case is found, no look-alike fires.

`examples/planted.json` is the manifest written by `examples/generate_chat_events.py`.
"""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path

import pytest

from services.scan import run_scan
from services.settings import Settings

ROOT = Path(__file__).resolve().parents[2]
LOG = ROOT / "examples" / "chat-events.jsonl"
MANIFEST = json.loads((ROOT / "examples" / "planted.json").read_text(encoding="utf-8"))
VALUE_CATEGORIES = {"pii", "secret", "prompt_leak"}
KIND_ENTITY = {
    "dose": "DOSE_STATEMENT",
    "contraindication": "CONTRAINDICATION",
    "abstention": "ABSTENTION",
}


@pytest.fixture(scope="module")
def scanned(tmp_path_factory: pytest.TempPathFactory) -> tuple[list[dict], dict[str, str]]:
    out = tmp_path_factory.mktemp("scan")
    run_scan(str(LOG), out, Settings())
    findings = [json.loads(x) for x in (out / "findings.jsonl").read_text().splitlines()]
    contents = {}
    for line in LOG.read_text(encoding="utf-8").splitlines():
        ev = json.loads(line)
        contents[ev["event_id"]] = ev["content"]
    return findings, contents


def test_every_planted_value_is_found_with_its_direction(scanned) -> None:
    findings, contents = scanned
    got = {
        (f["event_id"], f["entity"], contents[f["event_id"]][f["start"] : f["end"]], f["direction"])
        for f in findings
        if f["category"] in VALUE_CATEGORIES
    }
    want = {(p["event_id"], p["entity"], p["value"], p["direction"]) for p in MANIFEST["findings"]}
    assert want - got == set(), "planted values missed"
    assert got - want == set(), "value findings that were not planted"


def test_every_planted_statement_is_found_and_nothing_else(scanned) -> None:
    findings, _ = scanned
    got = defaultdict(set)
    for f in findings:
        if f["category"] in {"medical", "abstention"}:
            got[f["entity"]].add(f["event_id"])
    for kind, entity in KIND_ENTITY.items():
        want = {s["event_id"] for s in MANIFEST["statements"] if s["kind"] == kind}
        assert want - got[entity] == set(), f"{kind} statements missed"
        assert got[entity] - want == set(), f"{kind} fired outside the planted statements"


def test_no_decoy_fires(scanned) -> None:
    findings, contents = scanned
    by_event = defaultdict(list)
    for f in findings:
        by_event[f["event_id"]].append(f)
    fired = []
    for decoy in MANIFEST["decoys"]:
        text = contents[decoy["event_id"]]
        at = text.find(decoy["text"])
        assert at >= 0, f"decoy text {decoy['text']!r} not in {decoy['event_id']}"
        span = (at, at + len(decoy["text"]))
        for f in by_event[decoy["event_id"]]:
            if f["category"] in VALUE_CATEGORIES and f["start"] < span[1] and span[0] < f["end"]:
                fired.append((decoy["kind"], decoy["text"], f["rule_id"]))
    assert fired == []


@pytest.fixture(scope="module")
def checked(tmp_path_factory: pytest.TempPathFactory) -> tuple[list[dict], list[dict]]:
    out = tmp_path_factory.mktemp("scan-checked")
    run_scan(str(LOG), out, Settings(sample_rate=1.0))
    verdicts = [json.loads(x) for x in (out / "verdicts.jsonl").read_text().splitlines()]
    findings = [json.loads(x) for x in (out / "findings.jsonl").read_text().splitlines()]
    return verdicts, findings


def test_every_answer_is_checked_at_rate_one(checked) -> None:
    verdicts, _ = checked
    lines = LOG.read_text(encoding="utf-8").splitlines()
    assistant = sum(1 for line in lines if json.loads(line)["role"] == "assistant")
    assert len(verdicts) == assistant
    assert {v["inclusion_probability"] for v in verdicts} == {1.0}


def test_fabricated_citations_are_all_found_and_only_they(checked) -> None:
    verdicts, findings = checked
    got = {(v["event_id"], d) for v in verdicts for d in v["fabricated_citations"]}
    want = {(c["event_id"], c["doc_id"]) for c in MANIFEST["fabricated_citations"]}
    assert got == want
    raised = {
        (f["event_id"], f["evidence"]) for f in findings if f["entity"] == "FABRICATED_CITATION"
    }
    assert raised == want


def test_ungrounded_doses_reach_findings_as_critical_and_grounded_ones_do_not(checked) -> None:
    verdicts, findings = checked
    critical = {
        f["event_id"]
        for f in findings
        if f["rule_id"] == "grounding.ungrounded_dose" and f["severity"] == "critical"
    }
    assert critical == {c["event_id"] for c in MANIFEST["ungrounded_doses"]}
    assert critical.isdisjoint(MANIFEST["grounded_doses"])
    by_event = {v["event_id"]: v for v in verdicts}
    for case in MANIFEST["ungrounded_doses"]:
        claims = by_event[case["event_id"]]["claims"]
        assert any(c["kind"] == "dose" and not c["grounded"] for c in claims)


def test_verdict_texts_are_masked(checked) -> None:
    verdicts, _ = checked
    text = json.dumps(verdicts, ensure_ascii=False)
    for planted in MANIFEST["findings"]:
        if planted["category"] in {"pii", "secret"}:
            assert planted["value"] not in text, planted["entity"]


def test_review_items_are_one_per_conversation_and_masked(tmp_path: Path) -> None:
    run_scan(str(LOG), tmp_path, Settings())
    items = [json.loads(x) for x in (tmp_path / "review.jsonl").read_text().splitlines()]
    assert items, "the example log has leaks and ungrounded doses: something must go to review"
    conversations = [i["conversation_id"] for i in items]
    assert len(conversations) == len(set(conversations))
    leaked = {p["conversation_id"] for p in MANIFEST["findings"] if p["direction"] == "leak"}
    assert leaked <= set(conversations), "every conversation with a leak is queued"
    text = (tmp_path / "review.jsonl").read_text()
    for planted in MANIFEST["findings"]:
        if planted["category"] in {"pii", "secret"}:
            assert planted["value"] not in text, planted["entity"]
