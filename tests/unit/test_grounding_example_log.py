"""Issue 3 acceptance on the bundled example log, at the library level (no scan, no sampling):
every fabricated citation and every ungrounded dose claim is found, and no grounded dose claim
is flagged."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from schemas.events import ChatEvent
from schemas.verdicts import GroundingReport
from services.grounding import (
    FactRegistry,
    GroundingConfig,
    check,
    critical_claims,
    load_extractors,
)

ROOT = Path(__file__).resolve().parents[2]
LOG = ROOT / "examples" / "chat-events.jsonl"
MANIFEST = ROOT / "examples" / "planted.json"

pytestmark = pytest.mark.skipif(
    not (LOG.exists() and MANIFEST.exists()), reason="the example log is not bundled"
)


@pytest.fixture(scope="module")
def reports() -> dict[str, GroundingReport]:
    registry, extractors, config = FactRegistry.load(), load_extractors(), GroundingConfig()
    out = {}
    for line in LOG.read_text(encoding="utf-8").splitlines():
        event = ChatEvent.model_validate_json(line)
        if event.role == "assistant":
            out[event.event_id] = check(
                event,
                registry,
                extractors=extractors,
                config=config,
                inclusion_probability=1.0,
                stratum="always",
            )
    return out


@pytest.fixture(scope="module")
def manifest() -> dict:
    return json.loads(MANIFEST.read_text(encoding="utf-8"))


def test_every_fabricated_citation_and_no_other(reports, manifest) -> None:
    want = {(f["event_id"], f["doc_id"]) for f in manifest["fabricated_citations"]}
    got = {(e, d) for e, r in reports.items() for d in r.fabricated_citations}
    assert got == want


def test_every_ungrounded_dose_is_critical_and_nothing_else(reports, manifest) -> None:
    want = {u["event_id"] for u in manifest["ungrounded_doses"]}
    got = {e for e, r in reports.items() if any(c.kind == "dose" for c in critical_claims(r))}
    assert got == want
    for u in manifest["ungrounded_doses"]:
        texts = [c.text for c in critical_claims(reports[u["event_id"]])]
        assert any(t.rstrip(".") in u["claim_text"] for t in texts), (u, texts)


def test_no_grounded_dose_is_flagged(reports, manifest) -> None:
    for event_id in manifest["grounded_doses"]:
        assert critical_claims(reports[event_id]) == [], event_id


def test_a_contradicted_dose_names_the_passage_claim(reports) -> None:
    """evt-000039 says "up to a maximum of 8 g in 24 hours"; its leaflet says 4 g."""
    (claim,) = critical_claims(reports["evt-000039"])
    bad = [m for m in claim.medical if m.status == "contradicted"]
    assert bad and bad[0].reading.amount is not None and bad[0].reading.amount.high == 8000
    closest = bad[0].contradicting[0]
    assert closest.doc_id == "pil-paracetamol-en-02"
    assert closest.reading.summary.startswith("max 4000 mg per 24 h")
    assert "passage pil-paracetamol-en-02: max 4000 mg per 24 h" in bad[0].explanation


def test_the_review_item_carries_the_contradicting_passage_claim(tmp_path) -> None:
    from services.scan import run_scan
    from services.settings import Settings

    run_scan(str(LOG), tmp_path, Settings())
    items = [json.loads(line) for line in (tmp_path / "review.jsonl").read_text().splitlines()]
    found = [
        m["contradicting"][0]
        for item in items
        for v in item["verdicts"]
        if v["event_id"] == "evt-000039"
        for c in v["claims"]
        for m in c["medical"]
        if m["status"] == "contradicted"
    ]
    assert found and found[0]["doc_id"] == "pil-paracetamol-en-02"
    assert found[0]["reading"]["basis"] == "day" and found[0]["reading"]["qualifier"] == "max"
    findings = [json.loads(line) for line in (tmp_path / "findings.jsonl").read_text().splitlines()]
    why = [f["explanation"] for f in findings if f["event_id"] == "evt-000039"]
    assert any("max 4000 mg per 24 h" in w for w in why)
