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
