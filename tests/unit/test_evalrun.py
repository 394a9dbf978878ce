"""``vigil eval run`` core: SPEC §6 seeds through run_eval, metrics from labels, weighting, and the
CLI function's outputs and exit codes."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest

from schemas.evalset import CaseContext, EvalCase, EvalLabel, GroundingCorrection
from schemas.events import Claim
from schemas.verdicts import ClaimCheck, ClaimVerdict
from services.evalrun import (
    EXIT_FAILED,
    EXIT_INPUT,
    EXIT_OK,
    RunOptions,
    case_facts,
    format_report,
    is_correct,
    run_eval,
    run_eval_cli,
)
from services.evalsets import load_cases
from services.evaluation import abstention_metrics, risk_coverage_curve

DATA = Path(__file__).resolve().parents[1] / "data"
ROOT = Path(__file__).resolve().parents[2]
GATES = ROOT / "rules" / "gates.example.yaml"


def case(cid: str, **kw: Any) -> EvalCase:
    pi = kw.pop("pi", 1.0)
    stratum = kw.pop("stratum", "unflagged|en|acme")
    return EvalCase(
        case_id=f"2026-W45:{cid}",
        period="2026-W45",
        conversation_id=cid,
        event_id=f"{cid}-a",
        stratum=stratum,
        flag_stratum=stratum.split("|")[0],
        language="en",
        tenant="acme",
        inclusion_probability=pi,
        inclusion_final=True,
        question=kw.pop("question", f"question {cid}?"),
        answer=kw.pop("answer", "an answer"),
        **kw,
    )


def label(cid: str, **kw: Any) -> EvalLabel:
    return EvalLabel(conversation_id=cid, **kw)


# --- SPEC §6 seeds --------------------------------------------------------------------------------


def test_seed_abstention_example_reproduces() -> None:
    report = run_eval(load_cases(DATA / "evalcases-seed-abstention.jsonl"))
    assert report.abstention == {
        "total": 3,
        "answered": 2,
        "correct": 1,
        "coverage": 2 / 3,
        "overall_accuracy": 1 / 3,
        "answered_accuracy": 0.5,
        "risk": 0.5,
    }
    # The same counts as the library on the SPEC's literal lists.
    spec = abstention_metrics(["factuur", None, "factuur"], ["factuur", "storing", "vraag"])
    assert report.abstention == dict(spec)
    v = report.overall.values
    assert (
        v["coverage"],
        v["overall_accuracy"],
        v["answered_accuracy"],
        v["risk"],
    ) == pytest.approx((2 / 3, 1 / 3, 0.5, 0.5))
    assert report.overall.counts["coverage"] == 3 and report.overall.counts["risk"] == 2


def test_seed_risk_coverage_example_reproduces() -> None:
    report = run_eval(
        load_cases(DATA / "evalcases-seed-risk-coverage.jsonl"),
        options=RunOptions(thresholds=(0.0, 0.5, 0.8, 1.0)),
    )
    rows = report.risk_coverage
    assert rows is not None
    assert [(r["threshold"], r["answered"], r["risk"]) for r in rows] == [
        (0.0, 4, 0.25),
        (0.5, 2, 0.5),
        (0.8, 1, 0.0),
        (1.0, 0, None),
    ]
    spec = risk_coverage_curve([0.1, 0.4, 0.7, 0.9], [True, True, False, True], [0, 0.5, 0.8, 1])
    assert rows == [dict(r) for r in spec]


def test_library_examples_reproduce_for_retrieval_and_faithfulness() -> None:
    cases = load_cases(DATA / "evalcases-seed-retrieval.jsonl")
    first, second = (case_facts(c, [2]) for c in cases)
    assert first.retrieval["recall@2"] == 0.5  # recall_at_k(["d3","d1","d9","d2"], {d1,d2}, 2)
    assert first.retrieval["mrr"] == 0.5
    assert round(second.retrieval["ndcg@2"], 4) == 0.7098  # ndcg_at_k(["d2","d1"], {d1:3,d2:1}, 2)
    report = run_eval(cases, options=RunOptions(ks=(2,)))
    assert report.overall.values["faithfulness"] == 0.5  # [("Take 500 mg.", T), ("Max 4 g…", F)]
    assert report.overall.values["faithfulness_pooled"] == 0.5
    assert report.overall.values["recall@2"] == pytest.approx((0.5 + 1.0) / 2)
    assert report.overall.counts["mrr"] == 2


# --- what feeds which metric ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("kw", "lab", "expected"),
    [
        ({"answer": "Factuur."}, {"expected_answer": "factuur"}, True),
        ({"answer": "factuur 2"}, {"expected_answer": "factuur"}, False),
        ({"answer": "long"}, {"expected_answer": "x", "answer_correct": True}, True),
        ({"answer": "anything"}, {"expected_abstention": True}, False),
        ({"abstained": True}, {"expected_answer": "x"}, None),
        ({"answer": None}, {"expected_answer": "x"}, None),
        ({}, {}, None),
    ],
)
def test_is_correct(kw: dict[str, Any], lab: dict[str, Any], expected: bool | None) -> None:
    assert is_correct(case("c", label=label("c", **lab), **kw)) is expected


def test_expected_abstention_counts_an_abstention_as_not_answered_and_an_answer_as_wrong() -> None:
    cases = [
        case("a", abstained=True, label=label("a", expected_abstention=True)),
        case("b", label=label("b", expected_abstention=True)),
        case("c", label=label("c", answer_correct=True)),
        case("d"),  # no target: not counted
    ]
    m = run_eval(cases).abstention
    assert m == {
        "total": 3,
        "answered": 2,
        "correct": 1,
        "coverage": 2 / 3,
        "overall_accuracy": 1 / 3,
        "answered_accuracy": 0.5,
        "risk": 0.5,
    }


def check(text: str, kind: str, grounded: bool) -> ClaimCheck:
    return ClaimCheck(
        text=text,
        start=0,
        end=len(text),
        kind=kind,  # type: ignore[arg-type]
        grounded=grounded,
        method="deterministic",
        support=0.5,
        best_doc=None,
    )


def verdict(value: str, status: str) -> ClaimVerdict:
    return ClaimVerdict(
        claim=Claim(entity="paracetamol", attribute="max", value=value),
        status=status,  # type: ignore[arg-type]
        sources=[],
        origin="event",
    )


def test_label_corrections_override_the_checker() -> None:
    c = case(
        "c",
        checked=True,
        claims=[check("Take 8 g.", "dose", True), check("Rest.", "other", False)],
        fact_checks=[verdict("8 g", "supported"), verdict("1 g", "unknown")],
        label=label(
            "c",
            claim_grounding=[GroundingCorrection(text="Take 8 g.", grounded=False)],
            claim_statuses=[
                {
                    "claim": {"entity": "paracetamol", "attribute": "max", "value": "8 g"},
                    "status": "contradicted",
                }
            ],
            finding_verdicts={
                "f1": "true_positive",
                "f2": "false_positive",
                "f3": "false_positive",
            },
        ),
    )
    r = run_eval([c])
    assert r.overall.values["ungrounded_dose_claims"] == 1
    assert r.ungrounded_dose_cases == ["2026-W45:c"]
    assert r.overall.values["faithfulness"] == 0.0
    assert r.claim_status_counts == {"supported": 0, "contradicted": 1, "conflict": 0, "unknown": 1}
    assert r.overall.values["claim_share_contradicted"] == 0.5
    assert r.overall.values["finding_precision"] == pytest.approx(1 / 3)
    plain = run_eval([c.model_copy(update={"label": None})])
    assert plain.overall.values["ungrounded_dose_claims"] == 0
    assert plain.claim_status_counts["supported"] == 1


def test_retrieval_uses_rank_order_and_graded_relevance() -> None:
    ctx = [CaseContext(doc_id="d2", text="b", rank=2), CaseContext(doc_id="d1", text="a", rank=1)]
    c = case("c", contexts=ctx, label=label("c", relevance={"d2": 2, "d9": 0}))
    f = case_facts(c, [1])
    assert f.retrieval["recall@1"] == 0.0 and f.retrieval["mrr"] == 0.5
    unlabelled = case_facts(case("u", contexts=ctx), [1])
    assert unlabelled.retrieval == {}
    # A label whose relevance grades are all zero has no relevant doc: no retrieval metric.
    assert (
        case_facts(case("z", contexts=ctx, label=label("z", relevance={"d1": 0})), [1]).retrieval
        == {}
    )


def test_population_weighting_and_strata() -> None:
    cases = [
        case("a", pi=0.5, stratum="medical|en|acme", label=label("a", answer_correct=False)),
        case("b", pi=0.5, stratum="medical|en|acme", label=label("b", answer_correct=False)),
        case("c", pi=0.1, label=label("c", answer_correct=True)),
        case("d", pi=0.1, label=label("d", answer_correct=True)),
        case("e", pi=0.1),  # unlabelled: its weight spreads over c and d
    ]
    r = run_eval(cases)
    assert r.overall.values["overall_accuracy"] == 0.5
    # Hájek: medical stands for 4 conversations, unflagged for 30 → 30/34.
    assert r.weighted.values["overall_accuracy"] == pytest.approx(30 / 34)
    lo, hi = r.weighted.intervals["overall_accuracy"]
    assert lo <= 30 / 34 <= hi
    assert r.weighted.values["cases"] == pytest.approx(4 + 30)
    assert r.strata["medical|en|acme"].values["overall_accuracy"] == 0.0
    assert r.flags["unflagged"].values["overall_accuracy"] == 1.0
    assert r.strata["unflagged|en|acme"].cases == 3


def test_more_than_a_thousand_cases_are_chunked_exactly() -> None:
    cases = [
        case(
            f"c{i}",
            confidence=(i % 100) / 100,
            abstained=i % 7 == 0,
            label=label(f"c{i}", answer_correct=i % 3 != 0),
        )
        for i in range(2500)
    ]
    r = run_eval(cases, options=RunOptions(thresholds=(0.0, 0.5, 0.99)))
    answered = [i for i in range(2500) if i % 7 != 0]
    correct = [i for i in answered if i % 3 != 0]
    assert r.abstention is not None
    assert (r.abstention["total"], r.abstention["answered"], r.abstention["correct"]) == (
        2500,
        len(answered),
        len(correct),
    )
    assert r.risk_coverage is not None
    row = r.risk_coverage[1]
    over = [i for i in answered if (i % 100) / 100 >= 0.5]
    assert row["answered"] == len(over)
    assert row["correct"] == len([i for i in over if i % 3 != 0])
    assert row["coverage"] == len(over) / len(answered)


def test_empty_case_list_gives_no_values() -> None:
    r = run_eval([])
    assert r.cases == 0 and r.abstention is None and r.risk_coverage is None
    assert r.overall.values["recall@5"] is None and r.weighted.values["mrr"] is None


# --- the CLI function -----------------------------------------------------------------------------


def test_cli_passing_file_exits_0_and_writes_json_table_and_plot(tmp_path: Path) -> None:
    out, err = io.StringIO(), io.StringIO()
    code = run_eval_cli(
        DATA / "evalcases-pass.jsonl",
        GATES,
        tmp_path / "report.json",
        tmp_path / "rc.png",
        stdout=out,
        stderr=err,
    )
    assert code == EXIT_OK, out.getvalue() + err.getvalue()
    report = json.loads((tmp_path / "report.json").read_text())
    assert report["passed"] is True and report["failed_gates"] == []
    assert {g["gate"] for g in report["gates"]} >= {"retrieval-recall", "no-ungrounded-dose-claims"}
    assert (tmp_path / "rc.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    table = (tmp_path / "rc.csv").read_text().splitlines()
    assert table[0] == "threshold,answered,correct,coverage,risk" and len(table) == 22
    assert "gates: PASSED" in out.getvalue()


def test_cli_failing_file_exits_1_and_names_the_gates(tmp_path: Path) -> None:
    out = io.StringIO()
    code = run_eval_cli(DATA / "evalcases-fail.jsonl", GATES, tmp_path / "r.json", stdout=out)
    assert code == EXIT_FAILED
    text = out.getvalue()
    assert "FAIL retrieval-recall: recall@5 = 0.7500 over 4 is not >= 0.8500" in text
    assert (
        "FAIL no-ungrounded-dose-claims: ungrounded_dose_claims = 1 (cases 2026-W45:c-med-2)"
        in text
    )
    report = json.loads((tmp_path / "r.json").read_text())
    failed = {g["gate"] for g in report["failed_gates"]}
    assert {"retrieval-recall", "no-ungrounded-dose-claims"} <= failed
    assert report["passed"] is False
    # No message carries case content.
    assert "80 mg" not in text and "omeprazol" not in text


def test_cli_input_errors_exit_2(tmp_path: Path) -> None:
    err = io.StringIO()
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"case_id": 1}\n')
    assert run_eval_cli(bad, stderr=err, stdout=io.StringIO()) == EXIT_INPUT
    assert "bad.jsonl:1:" in err.getvalue()
    gates = tmp_path / "g.yaml"
    gates.write_text("gates:\n  - metric: recal@5\n    threshold: 1\n")
    err = io.StringIO()
    code = run_eval_cli(DATA / "evalcases-pass.jsonl", gates, stderr=err, stdout=io.StringIO())
    assert code == EXIT_INPUT and "gate #1" in err.getvalue() and "unknown metric" in err.getvalue()


def test_cli_labels_file_and_no_plot_without_confidences(tmp_path: Path) -> None:
    labels = tmp_path / "labels.jsonl"
    labels.write_text(
        json.dumps({"conversation_id": "seed-abst-1", "answer_correct": False})
        + "\n"
        + json.dumps({"conversation_id": "nobody"})
        + "\n"
    )
    out, err = io.StringIO(), io.StringIO()
    code = run_eval_cli(
        DATA / "evalcases-seed-abstention.jsonl",
        plot_out=tmp_path / "p.png",
        json_out=tmp_path / "r.json",
        labels_path=labels,
        stdout=out,
        stderr=err,
    )
    assert code == EXIT_OK
    assert "1 label(s) matched no case" in err.getvalue()
    assert "no risk–coverage plot" in err.getvalue() and not (tmp_path / "p.png").exists()
    report = json.loads((tmp_path / "r.json").read_text())
    assert report["abstention"]["correct"] == 0  # the label file overrode the case's label


def test_format_report_lists_metrics_and_gates() -> None:
    text = format_report(run_eval(load_cases(DATA / "evalcases-pass.jsonl")))
    assert "recall@5" in text and "gates: none" in text and "6 cases" in text
