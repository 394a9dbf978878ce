"""``vigil eval run``: metrics of an evaluation-set case file and CI gates (SPEC §6, §9).

- :func:`run_eval` — cases + gates → :class:`EvalReport` (pure)
- :func:`load_gates`, :func:`load_baseline`, :func:`evaluate_gates`, :func:`exit_code`
- :func:`run_eval_cli` — files in, report JSON / risk–coverage PNG and CSV out, exit code back

See ``docs/evaluation.md``.
"""

from __future__ import annotations

from services.evalrun.compute import case_facts, is_correct, metric_block, run_eval
from services.evalrun.gates import (
    EXIT_FAILED,
    EXIT_INPUT,
    EXIT_OK,
    GateFileError,
    evaluate_gates,
    exit_code,
    load_baseline,
    load_gates,
)
from services.evalrun.plot import write_risk_coverage_plot, write_risk_coverage_table
from services.evalrun.report import EvalReport, GateResult, MetricBlock, RunOptions
from services.evalrun.runner import format_report, run_eval_cli

__all__ = [
    "EXIT_FAILED",
    "EXIT_INPUT",
    "EXIT_OK",
    "EvalReport",
    "GateFileError",
    "GateResult",
    "MetricBlock",
    "RunOptions",
    "case_facts",
    "evaluate_gates",
    "exit_code",
    "format_report",
    "is_correct",
    "load_baseline",
    "load_gates",
    "metric_block",
    "run_eval",
    "run_eval_cli",
    "write_risk_coverage_plot",
    "write_risk_coverage_table",
]
