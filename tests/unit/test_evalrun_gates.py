"""CI gates: both sides of every comparison, baselines with max_drop, missing values, strata and
weighted figures, and gates files that fail at load naming the gate."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from schemas.evalset import GateFile, GateSpec
from services.evalrun import (
    EXIT_FAILED,
    EXIT_INPUT,
    EXIT_OK,
    GateFileError,
    exit_code,
    load_baseline,
    load_gates,
    run_eval,
    run_eval_cli,
)
from services.evalsets import load_cases

DATA = Path(__file__).resolve().parents[1] / "data"
ROOT = Path(__file__).resolve().parents[2]
PASS = load_cases(DATA / "evalcases-pass.jsonl")
FAIL = load_cases(DATA / "evalcases-fail.jsonl")


def gate(**kw: Any) -> GateSpec:
    return GateSpec.model_validate(kw)


def outcome(spec: GateSpec, cases: Any = PASS, baselines: Any = None) -> Any:
    report = run_eval(cases, [spec], baselines=baselines)
    (result,) = report.gates
    assert report.passed is (result.status != "failed")
    assert exit_code(report) == (EXIT_OK if report.passed else EXIT_FAILED)
    return result


# The pass fixture has recall@5 = 1.0, mrr = 0.875 and no ungrounded dose claim.
@pytest.mark.parametrize(
    ("metric", "comparison", "threshold", "passes"),
    [
        ("mrr", ">=", 0.875, True),
        ("mrr", ">=", 0.876, False),
        ("mrr", ">", 0.874, True),
        ("mrr", ">", 0.875, False),
        ("mrr", "<=", 0.875, True),
        ("mrr", "<=", 0.874, False),
        ("mrr", "<", 0.876, True),
        ("mrr", "<", 0.875, False),
        ("mrr", "==", 0.875, True),
        ("mrr", "==", 0.8751, False),
        ("ungrounded_dose_claims", "==", 0, True),
        ("ungrounded_dose_claims", "<", 0, False),
        ("recall@5", ">=", 1.0, True),
        ("cases", ">=", 7, False),
    ],
)
def test_every_comparison_on_both_sides(
    metric: str, comparison: str, threshold: float, passes: bool
) -> None:
    r = outcome(gate(metric=metric, comparison=comparison, threshold=threshold))
    assert r.passed is passes
    assert r.message.startswith("ok   " if passes else "FAIL ")
    assert f"{metric} {comparison} {threshold:g}" in r.message


def test_the_dose_gate_names_the_gate_and_the_cases() -> None:
    r = outcome(
        gate(id="no-dose", metric="ungrounded_dose_claims", comparison="==", threshold=0), FAIL
    )
    assert r.status == "failed"
    assert r.message == (
        "FAIL no-dose: ungrounded_dose_claims = 1 (cases 2026-W45:c-med-2) is not == 0"
    )


def test_baseline_with_max_drop(tmp_path: Path) -> None:
    base = run_eval(PASS)
    path = tmp_path / "baseline.json"
    path.write_text(base.model_dump_json())
    values = load_baseline(path)
    assert values["mrr"] == 0.875 and values["weighted:mrr"] == base.weighted.values["mrr"]
    assert values["stratum:medical:recall@5"] == 1.0
    key = str(path)
    # The fail fixture's MRR (0.4583) is far below 0.875.
    r = outcome(gate(metric="mrr", baseline=key, max_drop=0.05), FAIL, {key: values})
    assert r.status == "failed" and r.baseline_value == 0.875
    assert "fell below baseline 0.8750 − max_drop 0.0500" in r.message
    assert outcome(gate(metric="mrr", baseline=key, max_drop=0.5), FAIL, {key: values}).passed
    # "Lower is better": risk may not rise by more than max_drop.
    r = outcome(
        gate(metric="risk", comparison="<=", baseline=key, max_drop=0.1), FAIL, {key: values}
    )
    assert r.status == "failed" and "rose above baseline" in r.message
    r = outcome(
        gate(metric="mrr", comparison="==", baseline=key, max_drop=0.0), PASS, {key: values}
    )
    assert r.passed
    # Threshold and baseline together: both must hold.
    r = outcome(gate(metric="mrr", threshold=0.99, baseline=key), PASS, {key: values})
    assert r.status == "failed" and "is not >= 0.9900" in r.message
    # A baseline that was not loaded, or lacks the metric, fails the gate.
    assert "was not loaded" in outcome(gate(metric="mrr", baseline="x.json")).message
    assert "has no value" in outcome(gate(metric="mrr", baseline=key), PASS, {key: {}}).message


def test_flat_baseline_file_and_bad_baselines(tmp_path: Path) -> None:
    p = tmp_path / "flat.json"
    p.write_text(json.dumps({"mrr": 0.5, "recall@5": None}))
    assert load_baseline(p) == {"mrr": 0.5, "recall@5": None}
    p.write_text(json.dumps({"mrr": "high"}))
    with pytest.raises(GateFileError, match="not a number"):
        load_baseline(p)
    p.write_text("{nope")
    with pytest.raises(GateFileError, match="not JSON"):
        load_baseline(p)
    with pytest.raises(GateFileError, match="cannot read"):
        load_baseline(tmp_path / "missing.json")


def test_missing_values_fail_unless_skipped() -> None:
    abst = load_cases(DATA / "evalcases-seed-abstention.jsonl")
    r = outcome(gate(metric="recall@5", threshold=0.5), abst)
    assert r.status == "failed"
    assert r.message == "FAIL recall@5 >= 0.5: no value for recall@5 — no case has relevance labels"
    r = outcome(gate(metric="recall@5", threshold=0.5, on_missing="skip"), abst)
    assert r.status == "skipped" and r.passed


def test_stratum_and_weighted_gates() -> None:
    r = outcome(gate(metric="answered_accuracy", stratum="medical", threshold=1.0), FAIL)
    assert r.status == "failed" and "[medical]" in r.gate
    r = outcome(
        gate(metric="answered_accuracy", stratum="unflagged|nl|rivierland", threshold=1.0), FAIL
    )
    assert r.passed
    r = outcome(gate(metric="cases", stratum="pii|xx|yy", threshold=0))
    assert r.status == "failed" and "no stratum" in r.message
    r = outcome(gate(metric="overall_accuracy", weighted=True, threshold=0.7), FAIL)
    report = run_eval(FAIL)
    assert (
        r.value
        == report.weighted.values["overall_accuracy"]
        != report.overall.values["overall_accuracy"]
    )


@pytest.mark.parametrize(
    ("spec", "error"),
    [
        ({"metric": "recal@5", "threshold": 1}, "unknown metric"),
        ({"metric": "recall", "threshold": 1}, "needs k"),
        ({"metric": "mrr", "k": 5, "threshold": 1}, "takes no k"),
        ({"metric": "recall@5", "k": 3, "threshold": 1}, "disagree"),
        ({"metric": "mrr"}, "threshold, a baseline"),
        ({"metric": "mrr", "threshold": 1, "comparison": "=>"}, "comparison"),
        ({"metric": "mrr", "threshold": 1, "max_drop": -1}, "max_drop"),
        ({"metric": "mrr", "threshold": 1, "colour": "red"}, "colour"),
    ],
)
def test_gate_spec_validation(spec: dict[str, Any], error: str) -> None:
    with pytest.raises(ValidationError, match=error):
        GateSpec.model_validate(spec)


def test_gate_names_and_keys() -> None:
    assert gate(metric="recall", k=5, threshold=0.85).name == "recall@5 >= 0.85"
    assert gate(metric="recall@5", threshold=0.85).key == "recall@5"
    g = gate(metric="mrr", baseline="b.json", max_drop=0.02, weighted=True)
    assert g.name == "weighted mrr (baseline b.json, max_drop 0.02)"
    with pytest.raises(ValidationError, match="duplicate gate"):
        GateFile.model_validate({"gates": [{"metric": "mrr", "threshold": 1}] * 2})


def _gates(tmp_path: Path, text: str) -> Path:
    p = tmp_path / "gates.yaml"
    p.write_text(text, encoding="utf-8")
    return p


def test_load_gates_errors_name_file_and_gate(tmp_path: Path) -> None:
    with pytest.raises(GateFileError, match=r"gates.yaml: gate recall: .*needs k"):
        load_gates(
            _gates(tmp_path, "gates:\n  - id: recall\n    metric: recall\n    threshold: 1\n")
        )
    with pytest.raises(GateFileError, match=r"gate #2: .*unknown metric"):
        load_gates(
            _gates(
                tmp_path, "gates:\n  - {metric: mrr, threshold: 1}\n  - {metric: x, threshold: 1}\n"
            )
        )
    with pytest.raises(GateFileError, match="not valid YAML"):
        load_gates(_gates(tmp_path, "gates: [unclosed\n"))
    with pytest.raises(GateFileError, match="'gates' list"):
        load_gates(_gates(tmp_path, "- metric: mrr\n"))
    with pytest.raises(GateFileError, match="duplicate gate"):
        load_gates(
            _gates(
                tmp_path,
                "gates:\n  - {metric: mrr, threshold: 1}\n  - {metric: mrr, threshold: 1}\n",
            )
        )
    with pytest.raises(GateFileError, match="cannot read"):
        load_gates(tmp_path / "none.yaml")


def test_baseline_paths_resolve_relative_to_the_gates_file(tmp_path: Path) -> None:
    (tmp_path / "ci").mkdir()
    report = tmp_path / "ci" / "baseline.json"
    report.write_text(run_eval(PASS).model_dump_json())
    gates = _gates(
        tmp_path / "ci",
        "gates:\n  - id: mrr-no-regression\n    metric: mrr\n    baseline: baseline.json\n"
        "    max_drop: 0.02\n",
    )
    (g,) = load_gates(gates)
    assert g.baseline == str(report.resolve())
    out = io.StringIO()
    assert run_eval_cli(DATA / "evalcases-pass.jsonl", gates, stdout=out) == EXIT_OK
    out = io.StringIO()
    assert run_eval_cli(DATA / "evalcases-fail.jsonl", gates, stdout=out) == EXIT_FAILED
    assert (
        "FAIL mrr-no-regression: mrr = 0.4583 over 4 fell below baseline 0.8750" in out.getvalue()
    )
    report.unlink()
    err = io.StringIO()
    code = run_eval_cli(DATA / "evalcases-pass.jsonl", gates, stdout=io.StringIO(), stderr=err)
    assert code == EXIT_INPUT and "baseline" in err.getvalue()


def test_example_gates_file_loads() -> None:
    gates = load_gates(ROOT / "rules" / "gates.example.yaml")
    assert [g.name for g in gates] == [
        "retrieval-recall",
        "retrieval-ndcg",
        "no-ungrounded-dose-claims",
        "faithfulness",
        "answered-risk",
    ]
