"""Reviewers' labels in ``vigil eval run``: answered / abstained accuracy, coverage and risk from
``answer_correct``, the miss rate from labelled random unflagged cases, retrieval metrics from
``relevant_doc_ids``, per-rule precision from finding verdicts; labels joined by the answer's
event id; gates on empty or too-small sets; critical answers the cases did not keep."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from schemas.evalset import CaseContext, EvalCase, EvalLabel, GateSpec
from schemas.outputs import Finding
from schemas.review import LabeledFinding, ReviewLabel
from services.evalrun import run_eval
from services.evalsets.cases import attach_labels
from services.evalsets.labels import label_from_review

T0 = datetime(2026, 11, 2, 10, tzinfo=UTC)


def _finding(cid: str, eid: str, rule: str, n: int) -> Finding:
    return Finding(
        finding_id=f"{eid}:{rule}:{n}",
        event_id=eid,
        conversation_id=cid,
        turn_index=1,
        timestamp=T0,
        role="assistant",
        rule_id=rule,
        category="pii" if rule.startswith("pii") else "medical",
        entity="X",
        severity="medium",
        start=n,
        end=n + 1,
        evidence="x",
        direction="leak",
        score=1.0,
        explanation="test",
    )


def case(cid: str, flag: str = "pii", **kw: Any) -> EvalCase:
    data: dict[str, Any] = {
        "case_id": f"2026-W45:{cid}",
        "period": "2026-W45",
        "conversation_id": cid,
        "event_id": f"{cid}-a",
        "stratum": f"{flag}|en|acme",
        "flag_stratum": flag,
        "language": "en",
        "tenant": "acme",
        "inclusion_probability": 0.5,
        "inclusion_final": True,
        "question": "q?",
        "answer": "a.",
        "contexts": [
            CaseContext(doc_id="d1", text="one", rank=1),
            CaseContext(doc_id="d2", text="two", rank=2),
            CaseContext(doc_id="d3", text="three", rank=3),
        ],
    }
    data.update(kw)
    return EvalCase.model_validate(data)


def label(cid: str, **kw: Any) -> EvalLabel:
    return EvalLabel(conversation_id=cid, event_id=f"{cid}-a", **kw)


def values(cases: list[EvalCase], gates: list[GateSpec] = ()) -> Any:  # type: ignore[assignment]
    return run_eval(cases, gates)


def test_answer_correct_gives_coverage_risk_and_abstained_accuracy() -> None:
    cases = [
        case("a1", label=label("a1", answer_correct=True)),
        case("a2", label=label("a2", answer_correct=False)),
        case("a3", label=label("a3", answer_correct=True)),
        case("b1", abstained=True, label=label("b1", answer_correct=True)),  # right to abstain
        case("b2", abstained=True, label=label("b2", answer_correct=False)),
        case("n1"),  # no label: in no figure
    ]
    report = values(cases)
    v = report.overall.values
    assert (v["coverage"], v["answered_accuracy"], v["risk"]) == (0.6, 2 / 3, pytest.approx(1 / 3))
    assert v["abstained_accuracy"] == 0.5 and report.overall.counts["abstained_accuracy"] == 2
    assert report.abstention is not None and report.abstention["answered"] == 3


def test_the_miss_rate_comes_from_labelled_random_unflagged_cases() -> None:
    cases = [
        case("u1", "unflagged", label=label("u1", missed_categories=["pii"])),
        case("u2", "unflagged", label=label("u2")),
        case("u3", "unflagged", label=label("u3")),
        case("u4", "unflagged", label=label("u4", missed_categories=["medical", "pii"])),
        case("u5", "unflagged"),  # not labelled: not counted
        case("f1", "pii", label=label("f1", missed_categories=["medical"])),  # flagged: not counted
    ]
    report = values(cases)
    v, counts = report.overall.values, report.overall.counts
    assert (v["miss_rate"], counts["miss_rate"]) == (0.5, 4)
    assert (v["miss_rate_pii"], v["miss_rate_medical"], v["miss_rate_secret"]) == (0.5, 0.25, 0.0)
    lo, hi = report.weighted.intervals["miss_rate"]
    assert lo < 0.5 < hi  # Clopper–Pearson on equal weights


def test_relevant_doc_ids_give_recall_mrr_and_ndcg() -> None:
    cases = [
        case("r1", label=label("r1", relevant_doc_ids=["d1"])),
        case("r2", label=label("r2", relevant_doc_ids=["d3"])),
    ]
    v = values(cases).overall.values
    assert (v["recall@1"], v["recall@3"]) == (0.5, 1.0)
    assert v["mrr"] == pytest.approx((1 + 1 / 3) / 2)
    assert v["ndcg@3"] == pytest.approx((1 + 0.5) / 2)


def test_precision_per_rule_from_finding_verdicts_without_unsure() -> None:
    f = [_finding("p1", "p1-a", "pii.email", n) for n in range(3)]
    f += [_finding("p1", "p1-a", "medical.dose_en", 9)]
    verdicts = {
        f[0].finding_id: "true_positive",
        f[1].finding_id: "false_positive",
        f[2].finding_id: "unsure",
        f[3].finding_id: "true_positive",
        "gone:x:1": "false_positive",
    }
    cases = [case("p1", findings=f, label=label("p1", finding_verdicts=verdicts))]
    report = values(cases)
    assert report.rule_precision == {
        "medical.dose_en": {"true_positive": 1, "false_positive": 0, "unsure": 0, "precision": 1.0},
        "pii.email": {"true_positive": 1, "false_positive": 1, "unsure": 1, "precision": 0.5},
        "unknown": {"true_positive": 0, "false_positive": 1, "unsure": 0, "precision": 0.0},
    }
    assert report.overall.values["finding_precision"] == pytest.approx(2 / 4)


def test_a_review_label_joins_the_case_of_the_answer_it_judged() -> None:
    review = ReviewLabel(
        label_id="c7:1:label:2",
        item_id="c7:1",
        conversation_id="c7",
        round=1,
        supersedes="c7:1:label:1",
        reviewer="ann",
        labeled_at=T0 + timedelta(hours=1),
        priority=100,
        admission="exempt",
        inclusion_probability=1.0,
        reasons=[],
        findings=[
            LabeledFinding(
                finding_id="f1",
                event_id="c7-b",
                rule_id="grounding.ungrounded_dose",
                category="medical",
                entity="UNGROUNDED_DOSE",
                severity="critical",
                verdict="true_positive",
            )
        ],
        harm_severity="severe",
        error_categories=["wrong_dose"],
        answer_event_id="c7-b",
        answer_correct=False,
        relevant_doc_ids=["d2"],
    )
    ev = label_from_review(review)
    assert (ev.event_id, ev.label_id, ev.supersedes, ev.harm_severity) == (
        "c7-b",
        "c7:1:label:2",
        "c7:1:label:1",
        "severe",
    )
    main = case("c7")
    other = case("c7", case_id="2026-W45:c7#c7-b", event_id="c7-b", unit="answer")
    joined = attach_labels([main, other], [ev])
    assert joined.cases[0].label is None and joined.cases[1].label == ev
    assert values(joined.cases).overall.values["recall@3"] == 1.0


@pytest.mark.parametrize(
    ("cases", "min_cases", "passes", "says"),
    [
        ([], 1, False, "rests on 0 case(s); the gate needs at least 1"),
        ([], 0, True, "ok"),
        ([case("c1", checked=True, faithfulness=1.0)], 1, True, "ok"),
        ([case("c1", checked=True, faithfulness=1.0)], 2, False, "needs at least 2"),
    ],
)
def test_a_gate_on_an_empty_or_too_small_set_fails_unless_it_says_min_cases_0(
    cases: list[EvalCase], min_cases: int, passes: bool, says: str
) -> None:
    spec = GateSpec(
        metric="ungrounded_dose_claims", comparison="==", threshold=0, min_cases=min_cases
    )
    (result,) = values(cases, [spec]).gates
    assert result.passed is passes and says in result.message


def test_the_dose_gate_says_how_many_critical_answers_it_did_not_see() -> None:
    cases = [case("c1", checked=True, faithfulness=1.0, critical_answers_unseen=2)]
    spec = GateSpec(metric="ungrounded_dose_claims", comparison="==", threshold=0)
    (result,) = values(cases, [spec]).gates
    assert not result.passed
    assert "2 checked answer(s) with a critical finding are in no case" in result.message


@pytest.mark.parametrize(("threshold", "passes"), [(0.5, True), (0.49, False)], ids=["at", "below"])
def test_miss_rate_gates_on_both_sides(threshold: float, passes: bool) -> None:
    cases = [
        case("u1", "unflagged", label=label("u1", missed_categories=["pii"])),
        case("u2", "unflagged", label=label("u2")),
    ]
    spec = GateSpec(metric="miss_rate", comparison="<=", threshold=threshold)
    (result,) = values(cases, [spec]).gates
    assert result.passed is passes
