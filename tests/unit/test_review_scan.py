"""``scan_review`` over the example log (what ``vigil scan`` writes to ``review.jsonl``), and the
review metrics with a fresh registry."""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path

import pytest
from prometheus_client import CollectorRegistry

from schemas.events import ChatEvent
from schemas.outputs import Finding
from schemas.review import CorrectedClaim, LabeledFinding, ReviewItem, ReviewLabel
from schemas.verdicts import GroundingReport
from services.review.caps import AdmissionDecision
from services.review.metrics import FACT_CHECK_RULE, ReviewMetrics, precision_update
from services.review.policy import Caps
from services.review.queue import Tick, apply
from services.review.scan import ReviewScanner, scan_review
from services.scan import run_scan
from services.screening import VALUE_CATEGORIES
from services.settings import Settings
from tests.unit.test_review_support import POLICY, action, at, leak_flag

ROOT = Path(__file__).resolve().parents[2]
LOG = ROOT / "examples" / "chat-events.jsonl"


Scanned = tuple[list[ChatEvent], list[Finding], list[GroundingReport]]


@pytest.fixture(scope="module")
def scanned(tmp_path_factory: pytest.TempPathFactory) -> Scanned:
    out = tmp_path_factory.mktemp("scan")
    run_scan(str(LOG), out, Settings(sample_rate=1.0))
    events = [ChatEvent.model_validate_json(line) for line in LOG.read_text().splitlines()]
    findings = [
        Finding.model_validate_json(x) for x in (out / "findings.jsonl").read_text().splitlines()
    ]
    verdicts = [
        GroundingReport.model_validate_json(x)
        for x in (out / "verdicts.jsonl").read_text().splitlines()
    ]
    return events, findings, verdicts


def test_scan_review_on_the_example_log(scanned: Scanned) -> None:
    events, findings, verdicts = scanned
    items = scan_review(findings, verdicts, events, POLICY, key=b"k")
    assert items, "the example log plants leaks and ungrounded doses"
    cids = [i.conversation_id for i in items]
    assert len(cids) == len(set(cids))  # one item per conversation
    keys = [(-i.priority, i.created_at) for i in items]
    assert keys == sorted(keys)
    assert items[0].priority == 100  # an ungrounded dose first
    codes = {r.code for i in items for r in i.reasons}
    assert {"ungrounded_dose", "prompt_leak", "secret_in_input"} <= codes

    content = {e.event_id: e.content for e in events}
    by_event: defaultdict[str, list[Finding]] = defaultdict(list)
    for f in findings:
        by_event[f.event_id].append(f)
    for item in items:
        assert item.originals == {} and item.status == "open" and item.round == 1
        for turn in item.turns:
            for f in by_event[turn.event_id]:
                if f.category in VALUE_CATEGORIES:
                    raw = content[f.event_id][f.start : f.end]
                    assert raw not in turn.text, (item.item_id, f.rule_id)
    flagged = {f.conversation_id for f in findings if POLICY.finding_reason(f)}
    flagged |= {v.conversation_id for v in verdicts if POLICY.verdict_reason(v)}
    assert set(cids) == flagged  # no cap reached: every flagged conversation is in

    again = scan_review(findings, verdicts, events, POLICY, key=b"k")
    assert [i.model_dump_json() for i in again] == [i.model_dump_json() for i in items]
    line = items[0].model_dump_json()
    assert ReviewItem.model_validate_json(line) == items[0]  # review.jsonl round-trips


def test_scan_caps_count_the_overflow(scanned: Scanned) -> None:
    events, findings, verdicts = scanned
    capped = POLICY.model_copy(
        update={"caps": Caps(per_tenant_per_hour=0, overflow_sample_rate=0.0, exempt_priority=90)}
    )
    by_event: defaultdict[str, list[Finding]] = defaultdict(list)
    for f in findings:
        by_event[f.event_id].append(f)
    reports = {v.event_id: v for v in verdicts}
    scanner = ReviewScanner(capped, key=b"k")
    for e in events:
        scanner.add(e, by_event[e.event_id], reports.get(e.event_id))
    items = scanner.items()
    assert items and all(i.priority >= 90 and i.admission == "exempt" for i in items)
    assert scanner.stats["overflowed"] > 0
    assert scanner.stats["created"] == len(items)
    assert scanner.stats["overflowed_flags"] >= scanner.stats["overflowed"]


def test_precision_update_counts_findings_and_contradicted_fact_checks() -> None:
    item = apply(None, leak_flag()).item
    assert item is not None
    label = ReviewLabel(
        label_id="l",
        item_id=item.item_id,
        conversation_id="c1",
        round=1,
        reviewer="ann",
        labeled_at=at(),
        priority=90,
        admission="admitted",
        inclusion_probability=1.0,
        reasons=item.reasons,
        findings=[
            LabeledFinding(
                finding_id="f1",
                event_id="e1",
                rule_id="pii.email",
                category="pii",
                entity="EMAIL_ADDRESS",
                severity="medium",
                verdict="false_positive",
            )
        ],
        claims=[
            CorrectedClaim(
                event_id="e1",
                index=i,
                entity="x",
                attribute="y",
                value="z",
                sources=[],
                original=orig,  # type: ignore[arg-type]
                corrected=new,  # type: ignore[arg-type]
            )
            for i, (orig, new) in enumerate(
                [
                    ("contradicted", "contradicted"),
                    ("contradicted", "supported"),
                    ("unknown", "supported"),
                ]
            )
        ],
    )
    assert precision_update(label) == [
        ("pii.email", "false_positive"),
        (FACT_CHECK_RULE, "true_positive"),
        (FACT_CHECK_RULE, "false_positive"),
    ]


def test_review_metrics_count_enqueued_overflowed_expired() -> None:
    registry = CollectorRegistry()
    metrics = ReviewMetrics(registry, rule_ids=["pii.email"])
    get = registry.get_sample_value
    assert (
        get("vigil_review_items_enqueued_total", {"band": "critical", "admission": "admitted"}) == 0
    )
    assert get("vigil_review_labels_total", {"rule": "pii.email", "verdict": "false_positive"}) == 0
    created = apply(None, leak_flag())
    metrics.observe(created)
    over = AdmissionDecision("overflowed", 0.1, "critical")
    metrics.observe(apply(None, leak_flag("c2"), admission=over), over)
    repeat = AdmissionDecision("overflowed", 0.1, "critical", repeat=True)
    metrics.observe(apply(None, leak_flag("c2", "e2"), admission=repeat), repeat)
    assert created.item is not None
    expired = apply(created.item, Tick(at(POLICY.queue.open_ttl_hours * 60)))
    metrics.observe(expired)
    rejected = apply(expired.item, action("claim"))
    metrics.observe(rejected)
    assert (
        get("vigil_review_items_enqueued_total", {"band": "critical", "admission": "admitted"}) == 1
    )
    assert get("vigil_review_items_overflowed_total", {"band": "critical"}) == 1
    assert get("vigil_review_items_expired_total", {"band": "critical"}) == 1
    assert get("vigil_review_actions_total", {"action": "claim", "outcome": "rejected"}) == 1
