"""``vigil eval run`` as one function: read the files, run, write the outputs, return the code.

Exit codes: ``0`` every gate passed, ``1`` a gate failed, ``2`` a case, gate or baseline file
could not be read (the message names file and line or gate).
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TextIO

from schemas.evalset import EvalLabel
from services.evalrun.compute import run_eval
from services.evalrun.gates import (
    EXIT_INPUT,
    GateFileError,
    exit_code,
    load_baseline,
    load_gates,
)
from services.evalrun.plot import write_risk_coverage_plot, write_risk_coverage_table
from services.evalrun.report import EvalReport, RunOptions
from services.evalsets.cases import attach_labels
from services.evalsets.export import CaseFileError, load_cases, load_labels

__all__ = ["format_report", "run_eval_cli"]

_SUMMARY = (
    "recall@5",
    "mrr",
    "ndcg@5",
    "faithfulness",
    "coverage",
    "overall_accuracy",
    "answered_accuracy",
    "risk",
    "abstained_accuracy",
    "miss_rate",
    "ungrounded_dose_claims",
    "fabricated_citations",
    "finding_precision",
)


def _fmt(v: float | None) -> str:
    if v is None:
        return "n/a"
    return f"{v:.0f}" if float(v).is_integer() else f"{v:.4f}"


def format_report(report: EvalReport) -> str:
    """A short plain-text report: headline metrics (overall and weighted) and every gate."""
    lines = [f"{report.cases} cases, periods {', '.join(report.periods) or '-'}"]
    lines.append(f"{'metric':<24}{'overall':>10}{'n':>7}{'weighted':>10}  interval")
    for key in _SUMMARY:
        o, w = report.overall, report.weighted
        interval = w.intervals.get(key)
        shown = f"[{interval[0]:.3f}, {interval[1]:.3f}]" if interval else ""
        lines.append(
            f"{key:<24}{_fmt(o.values.get(key)):>10}{o.counts.get(key, 0):>7}"
            f"{_fmt(w.values.get(key)):>10}  {shown}"
        )
    counts = ", ".join(f"{k} {v}" for k, v in report.claim_status_counts.items())
    lines.append(f"claim statuses: {counts}")
    if report.critical_answers_unseen:
        lines.append(
            f"critical answers in no case: {report.critical_answers_unseen} (not evaluated)"
        )
    for rule, c in report.rule_precision.items():
        precision = c["precision"]
        shown = "n/a" if precision is None else f"{precision:.4f}"
        lines.append(
            f"precision {rule}: {shown} (tp {c['true_positive']}, fp {c['false_positive']}, "
            f"unsure {c['unsure']})"
        )
    for gate in report.gates:
        lines.append(gate.message)
    verdict = "PASSED" if report.passed else f"FAILED ({len(report.failed_gates)} gate(s))"
    lines.append(f"gates: {verdict}" if report.gates else "gates: none")
    return "\n".join(lines) + "\n"


def run_eval_cli(
    cases_path: Path | str,
    gates_path: Path | str | None = None,
    json_out: Path | str | None = None,
    plot_out: Path | str | None = None,
    *,
    table_out: Path | str | None = None,
    labels_path: Path | str | None = None,
    labels: Sequence[EvalLabel] = (),
    thresholds: Sequence[float] | None = None,
    ks: Sequence[int] | None = None,
    stdout: TextIO | None = None,
    stderr: TextIO | None = None,
) -> int:
    """Run ``vigil eval run`` and return its exit code (see the module docstring).

    Writes the report JSON to ``json_out``, the risk–coverage PNG to ``plot_out`` and its table to
    ``table_out`` (default: ``plot_out`` with ``.csv``), when the cases have confidences and
    targets; prints :func:`format_report` to ``stdout``. ``labels_path`` (JSONL of labels) and
    ``labels`` (e.g. read from the review queue's topic) join to the cases first.
    """
    out = stdout or sys.stdout
    err = stderr or sys.stderr
    try:
        cases = load_cases(cases_path)
        given = [*(load_labels(labels_path) if labels_path is not None else []), *labels]
        if given:
            joined = attach_labels(cases, given)
            cases = joined.cases
            if joined.unmatched:
                err.write(f"note: {len(joined.unmatched)} label(s) matched no case\n")
        gates = load_gates(gates_path) if gates_path is not None else []
        baselines = {g.baseline: load_baseline(g.baseline) for g in gates if g.baseline is not None}
        options = RunOptions()
        if thresholds is not None:
            options = options.model_copy(update={"thresholds": tuple(thresholds)})
        if ks is not None:
            options = options.model_copy(update={"ks": tuple(ks)})
        report = run_eval(cases, gates, options, baselines=baselines, source=str(cases_path))
    except (CaseFileError, GateFileError) as exc:
        err.write(f"error: {exc}\n")
        return EXIT_INPUT
    except ValueError as exc:
        err.write(f"error: {cases_path}: {exc}\n")
        return EXIT_INPUT
    if json_out is not None:
        path = Path(json_out)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(report.model_dump_json(indent=2) + "\n", encoding="utf-8")
    rows = report.risk_coverage
    if rows and (plot_out is not None or table_out is not None):
        table = table_out or Path(plot_out).with_suffix(".csv")  # type: ignore[arg-type]
        write_risk_coverage_table(rows, table)
        if plot_out is not None:
            write_risk_coverage_plot(rows, plot_out, title=f"Risk–coverage ({report.cases} cases)")
    elif plot_out is not None:
        err.write("note: no case has both a confidence and a target; no risk–coverage plot\n")
    out.write(format_report(report))
    return exit_code(report)
