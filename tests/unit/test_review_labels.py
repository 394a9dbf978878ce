"""Labels richer than TP/FP: the label schema (configuration, checked on the server), labels as
events with a history (corrections), a second review with disagreement surfaced, assignment,
and what a reviewer sees of an item (evidence, explanations, long messages). Pure functions:
no broker, no clock."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import pytest

from schemas.events import ChatEvent, Claim, Passage
from schemas.review import FindingLabel, LabelInput, ReviewItem, ReviewLabel
from schemas.verdicts import ClaimCheck, ClaimVerdict, GroundingReport
from services.review.evidence import make_flag, mask_turn
from services.review.explain import ExplanationError, load_explanations
from services.review.label_events import disagreement
from services.review.labels import (
    LabelSchemaError,
    check_decision,
    check_label,
    load_label_schema,
)
from services.review.policy import QueueSettings
from services.review.queue import Tick, apply
from services.review.view import ViewContext, item_view, matching_span
from tests.unit.test_review_support import POLICY, action, at, event, finding

SCHEMA = load_label_schema()
PASSAGE = (
    "Adults and children aged 16 and over: take 500 mg to 1 g every 4 to 6 hours as needed. "
    "Do not take more than 4 g in 24 hours. Leave at least 4 hours between doses."
)
FILLER = "Gentle movement during the day often helps stiff joints more than staying in a chair. "
EMAIL = "m.jansen@apotheek-noord.nl"
DOSE = "Adults can take up to 8 g of paracetamol in any 24 hours."


def _answer(content: str, *, cid: str = "c1", eid: str = "a1") -> ChatEvent:
    ev = event(content, cid=cid, eid=eid, turn=1)
    return ev.model_copy(
        update={
            "retrieval": [
                Passage(doc_id="pil-02", text=PASSAGE, rank=1),
                Passage(doc_id="pil-03", text="Talk to a pharmacist first.", rank=2),
            ],
            "language": "en",
        }
    )


def _report(ev: ChatEvent, claim: str) -> GroundingReport:
    start = ev.content.index(claim)
    return GroundingReport(
        event_id=ev.event_id,
        conversation_id=ev.conversation_id,
        turn_index=ev.turn_index,
        timestamp=ev.timestamp,
        language="en",
        stratum="always",
        inclusion_probability=1.0,
        faithfulness=0.0,
        claims=[
            ClaimCheck(
                text=claim,
                start=start,
                end=start + len(claim),
                kind="dose",
                grounded=False,
                method="deterministic",
                support=0.4,
                best_doc="pil-02",
                numbers_missing=["8 g"],
            )
        ],
        ungrounded=[claim],
        fabricated_citations=[],
        unsupported_citations=[],
        fact_checks=[
            ClaimVerdict(
                claim=Claim(entity="paracetamol", attribute="max_daily_dose_adult", value="8 g"),
                status="contradicted",
                sources=["nhs"],
                registered=["4 g"],
                origin="extracted",
            )
        ],
    )


def _long_item(policy_queue: QueueSettings | None = None) -> ReviewItem:
    """A 55 KB answer: an e-mail leak 27 KB in, an ungrounded dose at the end."""
    ev = _answer(_answer_content())
    findings = [
        finding(ev, EMAIL, evidence="m***@***.nl"),
        finding(ev, DOSE, "grounding.ungrounded_dose"),
    ]
    policy = POLICY if policy_queue is None else POLICY.model_copy(update={"queue": policy_queue})
    flag = make_flag(ev, findings, _report(ev, DOSE), policy, at=at())
    assert flag is not None
    item = apply(None, flag, policy.queue).item
    assert item is not None
    return item


def _claim(item: ReviewItem, who: str = "ann", minutes: float = 1) -> ReviewItem:
    t = apply(item, action("claim", who, minutes=minutes))
    assert t.item is not None and t.item.status == "claimed", t.rejection
    return t.item


def _decision(item: ReviewItem, verdict: str = "true_positive", **kw: object) -> LabelInput:
    fields: dict[str, object] = {"harm_severity": "severe", "error_categories": ["wrong_dose"]}
    fields |= kw
    return LabelInput(
        findings=[FindingLabel(finding_id=f.finding_id, verdict=verdict) for f in item.findings],  # type: ignore[arg-type]
        **fields,  # type: ignore[arg-type]
    )


# --- the label schema ---------------------------------------------------------------------------


def test_the_shipped_schema_loads_and_its_examples_hold() -> None:
    levels = [lv.value for lv in SCHEMA.harm_severity.levels]
    assert levels == ["none", "mild", "moderate", "severe"]
    assert {f.name: f.data_type for f in SCHEMA.rubric} == {
        "completeness": "numeric",
        "tone_appropriate": "boolean",
        "follow_up": "categorical",
    }
    view = SCHEMA.view()
    assert "examples" not in view and view["error_categories"]["values"]


_LEVELS = "harm_severity:\n  levels: [{value: none, label: None}, {value: bad, label: Bad}]\n"
_CATEGORIES = "error_categories:\n  values: [{value: other, label: Other}]\n"


@pytest.mark.parametrize(
    ("body", "message"),
    [
        (
            "harm_severity:\n  levels: [{value: none, label: None}]\n" + _CATEGORIES,
            "harm_severity.levels: List should have at least 2 items",
        ),
        (
            _LEVELS + _CATEGORIES + "rubric:\n  - {name: x, label: X, data_type: categorical}\n",
            "rubric[0] (name x): Value error, a categorical field lists its categories",
        ),
        (
            _LEVELS
            + _CATEGORIES
            + "examples:\n  invalid:\n    - {decision: {harm_severity: none}, error: nope}\n",
            "examples.invalid[0] passes (expected 'nope')",
        ),
    ],
)
def test_a_broken_schema_names_the_file_and_the_field(
    tmp_path: Path, body: str, message: str
) -> None:
    path = tmp_path / "labels.yaml"
    path.write_text("version: 1\n" + body)
    with pytest.raises(LabelSchemaError) as info:
        load_label_schema(path)
    assert str(path) in str(info.value) and message in str(info.value)


def test_decisions_are_checked_against_the_schema() -> None:
    ok = LabelInput(harm_severity="none", rubric={"completeness": 4, "follow_up": "none"})
    assert check_decision(ok, SCHEMA) is None
    assert "harm_severity is required" in str(check_decision(LabelInput(), SCHEMA))
    harmful = LabelInput(harm_severity="severe")
    assert "needs at least one error category" in str(check_decision(harmful, SCHEMA))
    many = LabelInput(harm_severity="mild", error_categories=["other"] * 2)
    assert "given twice" in str(check_decision(many, SCHEMA))
    bad = LabelInput(harm_severity="none", rubric={"tone_appropriate": 3})
    assert "tone_appropriate is yes or no" in str(check_decision(bad, SCHEMA))
    unknown = LabelInput(harm_severity="none", rubric={"made_up": 1})
    assert "unknown rubric field" in str(check_decision(unknown, SCHEMA))
    strict = SCHEMA.model_copy(update={"allow_unsure": False})
    unsure = LabelInput(
        harm_severity="none", findings=[FindingLabel(finding_id="x", verdict="unsure")]
    )
    assert "'unsure' is not allowed" in str(check_decision(unsure, strict))


def test_relevant_documents_are_picked_from_the_answers_retrieved_passages() -> None:
    item = _long_item()
    body = _decision(item, answer_correct=False, relevant_doc_ids=["pil-02"])
    assert check_label(body, item, SCHEMA) is None
    stray = _decision(item, relevant_doc_ids=["pil-99"])
    assert "'pil-99' was not retrieved for answer a1" in str(check_label(stray, item, SCHEMA))
    wrong_answer = _decision(item, answer_event_id="nope", answer_correct=True)
    assert "not an answer of this item" in str(check_label(wrong_answer, item, SCHEMA))
    missing = LabelInput(harm_severity="none")
    assert "finding(s) without verdict" in str(check_label(missing, item, SCHEMA))


# --- labels are events; corrections add history -------------------------------------------------


def test_a_label_records_every_field_and_a_correction_is_a_new_event() -> None:
    item = _claim(_long_item())
    rubric = {"completeness": 2, "tone_appropriate": True, "follow_up": "escalate"}
    body = _decision(
        item,
        answer_correct=False,
        relevant_doc_ids=["pil-02"],
        rubric=rubric,
        missed_categories=["medical"],
        note="8 g is twice the maximum",
    )
    t = apply(item, action("label", "ann", minutes=2, label=body))
    assert t.rejection is None and t.item is not None
    labeled = t.item
    (record,) = labeled.labels
    assert (record.label_id, record.reviewer, record.at, record.stage) == (
        "c1:1:label:1",
        "ann",
        at(2),
        1,
    )
    assert record.decision.answer_event_id == "a1"  # defaulted to the flagged answer
    event = t.events[-1]
    assert isinstance(event, ReviewLabel)
    assert (event.harm_severity, event.error_categories, event.answer_correct) == (
        "severe",
        ["wrong_dose"],
        False,
    )
    assert (event.relevant_doc_ids, event.rubric, event.missed_categories) == (
        ["pil-02"],
        {"completeness": 2.0, "tone_appropriate": True, "follow_up": "escalate"},
        ["medical"],
    )

    closed = apply(labeled, action("label", "bob", minutes=3, label=body))
    assert closed.rejection is not None and closed.rejection.code == "closed"
    assert "corrects=c1:1:label:1" in closed.rejection.message
    stale = body.model_copy(update={"corrects": "c1:1:label:0"})
    again = apply(labeled, action("label", "bob", minutes=3, label=stale))
    assert again.rejection is not None and again.rejection.code == "stale"
    fix = body.model_copy(update={"corrects": "c1:1:label:1", "harm_severity": "moderate"})
    corrected = apply(labeled, action("label", "bob", minutes=4, label=fix))
    assert corrected.rejection is None and corrected.item is not None
    after = corrected.item
    assert after.status == "labeled"
    assert (after.label_id, after.labeled_by) == ("c1:1:label:2", "bob")
    assert [r.label_id for r in after.labels] == ["c1:1:label:1", "c1:1:label:2"]
    assert after.labels[0] == record  # nothing overwritten
    event2 = corrected.events[-1]
    assert isinstance(event2, ReviewLabel) and event2.supersedes == "c1:1:label:1"
    assert after.disagreement == ["harm_severity"]


def test_the_history_is_bounded_and_counts_what_it_dropped() -> None:
    q = POLICY.queue.model_copy(update={"max_label_history": 2})
    item = _claim(_long_item(q))
    t = apply(item, action("label", minutes=2, label=_decision(item)), q)
    assert t.item is not None
    current = t.item
    for n in range(3):
        body = _decision(item).model_copy(update={"corrects": current.label_id})
        t = apply(current, action("label", minutes=3 + n, label=body), q)
        assert t.item is not None, t.rejection
        current = t.item
    assert [r.label_id for r in current.labels] == ["c1:1:label:3", "c1:1:label:4"]
    assert (current.label_count, current.dropped_labels) == (4, 2)


# --- a second review of critical items ----------------------------------------------------------


def test_critical_items_need_a_second_reviewer_and_disagreement_is_surfaced() -> None:
    q = POLICY.queue.model_copy(update={"second_review_min_priority": 90})
    item = _long_item(q)
    assert item.reviews_required == 2
    first = apply(_claim(item, "ann"), action("label", "ann", minutes=2, label=_decision(item)), q)
    assert first.item is not None and first.item.status == "open"  # back for the second review
    again = apply(first.item, action("claim", "ann", minutes=3), q)
    assert again.rejection is not None and again.rejection.code == "second_reviewer"
    second = _claim(first.item, "bob", minutes=3)
    differing = _decision(item, "false_positive", harm_severity="none", error_categories=[])
    done = apply(second, action("label", "bob", minutes=4, label=differing), q)
    assert done.item is not None and done.item.status == "labeled"
    assert [r.stage for r in done.item.labels] == [1, 2]
    assert done.item.disagreement == [
        *sorted(f"finding:{f.finding_id}" for f in item.findings),
        "harm_severity",
        "error_categories",
    ]
    assert disagreement(done.item.labels[:1]) == []


# --- assignment ---------------------------------------------------------------------------------


def test_an_assigned_item_is_claimed_only_by_its_assignee_until_the_assignment_lapses() -> None:
    item = _long_item()
    t = apply(item, action("assign", "lead", minutes=1, assignee="ann"))
    assert t.item is not None and (t.item.assigned_to, t.item.assigned_by) == ("ann", "lead")
    assigned = t.item
    blocked = apply(assigned, action("claim", "bob", minutes=2))
    assert blocked.rejection is not None and blocked.rejection.code == "assigned"
    assert apply(assigned, action("claim", "ann", minutes=2)).rejection is None
    later = at(1) + timedelta(hours=POLICY.queue.assignment_hours)
    lapsed = apply(assigned, Tick(later))
    assert lapsed.changed and lapsed.item is not None and lapsed.item.assigned_to is None
    capped = apply(item, action("assign", minutes=1, assignee="ann", assignment_hours=10_000))
    assert capped.item is not None and capped.item.assignment_expires_at == at(1) + timedelta(
        hours=POLICY.queue.max_assignment_hours
    )


# --- what the reviewer sees ---------------------------------------------------------------------


def test_a_late_finding_in_a_55_kb_answer_is_shown_masked_in_its_context() -> None:
    item = _long_item()
    (turn,) = item.turns
    assert turn.truncated and len(turn.text) <= POLICY.queue.max_turn_chars + 100
    email = next(m for m in turn.marks if m.rule_id == "pii.email")
    assert turn.text[email.start : email.end] == "m***@***.nl"
    assert "Write to m***@***.nl with questions" in turn.text
    dose = next(m for m in turn.marks if m.rule_id == "grounding.ungrounded_dose")
    assert turn.text[dose.start : dose.end] == DOSE
    assert [turn.text[g.start : g.end] for g in turn.gaps] == [
        f"\n… {g.omitted:,} characters …\n" for g in turn.gaps
    ]
    shown = len(turn.text) - sum(g.end - g.start for g in turn.gaps)
    masked_length = len(turn_text := _answer_content()) - len(EMAIL) + len("m***@***.nl")
    assert shown + sum(g.omitted for g in turn.gaps) == masked_length and turn_text


def _answer_content() -> str:
    half = FILLER * (27_000 // len(FILLER))
    return f"{half}Write to {EMAIL} with questions. {half}{DOSE}"


def test_the_view_shows_the_passage_span_the_registry_value_and_plain_explanations() -> None:
    item = _long_item()
    view = item_view(item, ctx=ViewContext(policy=POLICY))
    (evidence,) = view["evidence"]
    (claim,) = evidence["claims"]
    passage = claim["passage"]
    assert passage["doc_id"] == "pil-02" and passage["text"] == PASSAGE
    a, b = passage["span"]
    assert PASSAGE[a:b] == "Do not take more than 4 g in 24 hours."
    (fact,) = evidence["fact_checks"]
    assert (fact["answer_value"], fact["registered"], fact["status"]) == (
        "8 g",
        ["4 g"],
        "contradicted",
    )
    plain = {f["rule_id"]: f["plain"] for f in view["findings"]}
    assert plain["pii.email"].startswith("An e-mail address (m***@***.nl) in the assistant's")
    assert "pattern" not in plain["pii.email"]
    groups = {g["code"]: g for g in view["reason_groups"]}
    assert groups["pii_leak"]["description"] == POLICY.describe("pii_leak")
    assert view["answer"] == {"event_id": "a1", "turn_index": 1, "passages": ["pil-02", "pil-03"]}
    assert EMAIL not in str(view)


def test_reasons_are_grouped_and_highlights_without_a_row_are_explained() -> None:
    ev = event("Mail bob@example.com or bob@example.com, or call 0612345678.", cid="c2", eid="e2")
    f1 = finding(ev, "bob@example.com")
    f2 = finding(ev, "bob@example.com", occurrence=1)
    phone = finding(ev, "0612345678", "pii.phone_nl", direction="echo")  # an echo: no reason
    flag = make_flag(ev, [f1, f2, phone], None, POLICY, at=at())
    assert flag is not None
    item = apply(None, flag).item
    assert item is not None
    view = item_view(item)
    (group,) = view["reason_groups"]
    assert (group["code"], group["count"], group["rule_ids"]) == ("pii_leak", 2, ["pii.email"])
    lone = view["highlights"][phone.finding_id]
    assert lone["has_row"] is False and lone["plain"].startswith("A phone number ([PHONE_NUMBER])")


def test_fields_a_claim_gains_later_are_passed_on_under_extra() -> None:
    item = _long_item()
    report = item.verdicts[0]
    claim = report.claims[0]
    data = claim.model_dump()
    # A claim model with one more field (what a structured reading of the claim adds later).
    richer = type(
        "Richer",
        (ClaimCheck,),
        {"__annotations__": {"reading": dict}, "reading": {"drug": "paracetamol", "amount": "8 g"}},
    )
    extended = richer(**data)
    verdict = report.model_copy(update={"claims": [extended]})
    view = item_view(item.model_copy(update={"verdicts": [verdict]}))
    assert view["evidence"][0]["claims"][0]["extra"] == {
        "reading": {"drug": "paracetamol", "amount": "8 g"}
    }


def test_matching_span_prefers_shared_quantities() -> None:
    text = "Keep it dry. Take 1 g every 6 hours. Never more than 4000 mg a day."
    assert matching_span("no more than 4 g a day", text, "en") == (37, 67)
    assert matching_span("completely unrelated words", text, "en") is None


# --- explanations as data -----------------------------------------------------------------------


def test_the_explanations_file_renders_its_examples_and_names_broken_templates(
    tmp_path: Path,
) -> None:
    shipped = load_explanations()
    assert len(shipped.examples) >= 5
    path = tmp_path / "explanations.yaml"
    path.write_text(
        "version: 1\ndirections: {input: a, leak: b, echo: c, output: d}\n"
        "templates:\n  - when: {category: pii}\n    text: '{Entity} {value}'\n"
        "  - when: {}\n    text: x\n"
    )
    with pytest.raises(ExplanationError) as info:
        load_explanations(path)
    assert str(path) in str(info.value) and "unknown placeholder {value}" in str(info.value)


def test_masked_turns_keep_passages_masked_and_bounded() -> None:
    ev = _answer(f"Write to {EMAIL}.")
    extra = Passage(doc_id="leak", text=f"cc {EMAIL} " * 900)
    ev = ev.model_copy(update={"retrieval": [*(ev.retrieval or []), extra]})
    turn, _ = mask_turn(ev, [finding(ev, EMAIL, evidence="m***@***.nl")], POLICY.queue)
    leak = next(p for p in turn.passages if p.doc_id == "leak")
    assert EMAIL not in leak.text and leak.truncated
    assert len(leak.text) == POLICY.queue.max_passage_chars


def test_a_correction_is_counted_apart_from_the_precision_counter() -> None:
    from prometheus_client import CollectorRegistry

    from services.review.metrics import ReviewMetrics

    registry = CollectorRegistry()
    metrics = ReviewMetrics(registry, rule_ids=["pii.email"])
    item = _claim(_long_item())
    first = apply(item, action("label", minutes=2, label=_decision(item, "unsure")))
    assert first.item is not None
    metrics.observe(first)
    fix = _decision(item, "false_positive").model_copy(update={"corrects": first.item.label_id})
    second = apply(first.item, action("label", "bob", minutes=3, label=fix))
    metrics.observe(second)
    get = registry.get_sample_value
    assert get("vigil_review_labels_total", {"rule": "pii.email", "verdict": "unsure"}) == 1
    assert get("vigil_review_labels_total", {"rule": "pii.email", "verdict": "false_positive"}) == 0
    assert get("vigil_review_label_corrections_total", {"band": "critical"}) == 1
    assert get("vigil_review_items_labeled_total", {"band": "critical"}) == 1
