"""CI gates: loading ``gates.yaml``, evaluating gates on a report, the exit code.

A gate reads one value of the report — overall, population-weighted (``weighted: true``) or of
one stratum (``stratum: medical|nl|acme`` or a flag such as ``stratum: medical``) — and compares
it with its ``threshold`` and/or with the same value of a ``baseline`` report (see
:class:`~schemas.evalset.GateSpec`). Messages name the gate, the value and what it was held to,
and never include case content.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Final

import yaml
from pydantic import ValidationError

from schemas.evalset import Comparison, GateFile, GateSpec
from services.evalrun.report import EvalReport, GateResult
from services.yamlload import safe_load as load_yaml

__all__ = [
    "EXIT_FAILED",
    "EXIT_INPUT",
    "EXIT_OK",
    "GateFileError",
    "evaluate_gates",
    "exit_code",
    "load_baseline",
    "load_gates",
]

EXIT_OK: Final = 0
EXIT_FAILED: Final = 1
EXIT_INPUT: Final = 2
_TOLERANCE: Final = 1e-12

_WHAT: Final[dict[str, str]] = {
    "recall": "no case has relevance labels",
    "ndcg": "no case has relevance labels",
    "mrr": "no case has relevance labels",
    "faithfulness": "no case was claim-checked",
    "faithfulness_pooled": "no case was claim-checked",
    "coverage": "no case has an answer target",
    "overall_accuracy": "no case has an answer target",
    "answered_accuracy": "no answered case has an answer target",
    "risk": "no answered case has an answer target",
    "finding_precision": "no finding has a review verdict",
    "abstained_accuracy": "no abstained case has a label that judges it",
    "miss_rate": "no random unflagged case is labelled",
}


class GateFileError(ValueError):
    """A gates or baseline file is unreadable or invalid; the message names file and gate."""


def load_gates(path: Path | str) -> list[GateSpec]:
    """Read and validate a ``gates.yaml`` (``{gates: [...]}``); baselines resolve relative to it."""
    p = Path(path)
    try:
        data = load_yaml(p.read_text(encoding="utf-8"))
    except OSError as exc:
        raise GateFileError(f"{p}: cannot read: {exc.strerror}") from None
    except yaml.YAMLError as exc:
        raise GateFileError(f"{p}: not valid YAML: {exc}") from None
    if not isinstance(data, dict) or "gates" not in data:
        raise GateFileError(f"{p}: expected a mapping with a 'gates' list")
    raw = data["gates"]
    if isinstance(raw, list):
        for i, item in enumerate(raw):
            try:
                GateSpec.model_validate(item)
            except ValidationError as exc:
                where = item.get("id") if isinstance(item, dict) and item.get("id") else f"#{i + 1}"
                msgs = "; ".join(e["msg"] for e in exc.errors())
                raise GateFileError(f"{p}: gate {where}: {msgs}") from None
    try:
        gates = GateFile.model_validate(data).gates
    except ValidationError as exc:
        msgs = "; ".join(e["msg"] for e in exc.errors())
        raise GateFileError(f"{p}: {msgs}") from None
    return [
        g.model_copy(update={"baseline": str((p.parent / g.baseline).resolve())})
        if g.baseline is not None and not Path(g.baseline).is_absolute()
        else g
        for g in gates
    ]


def _block_values(data: Mapping[str, Any], part: str) -> dict[str, float | None]:
    block = data.get(part)
    if isinstance(block, Mapping) and isinstance(block.get("values"), Mapping):
        return dict(block["values"])
    return {}


def load_baseline(path: Path | str) -> dict[str, float | None]:
    """Metric values of a baseline: a report JSON of an earlier run, or a flat ``{key: value}``.

    Keys are the report keys (``recall@5``), ``weighted:<key>`` for the weighted block and
    ``stratum:<name>:<key>`` for strata and flags.
    """
    p = Path(path)
    try:
        data = json.loads(p.read_text(encoding="utf-8"))
    except OSError as exc:
        raise GateFileError(f"baseline {p}: cannot read: {exc.strerror}") from None
    except json.JSONDecodeError as exc:
        raise GateFileError(f"baseline {p}: not JSON: {exc}") from None
    if not isinstance(data, dict):
        raise GateFileError(f"baseline {p}: expected a JSON object")
    if "overall" not in data:
        flat: dict[str, float | None] = {}
        for k, v in data.items():
            if v is not None and (isinstance(v, bool) or not isinstance(v, int | float)):
                raise GateFileError(f"baseline {p}: value of {k!r} is not a number")
            flat[str(k)] = None if v is None else float(v)
        return flat
    values = _block_values(data, "overall")
    values.update({f"weighted:{k}": v for k, v in _block_values(data, "weighted").items()})
    for part in ("strata", "flags"):
        for name, block in (data.get(part) or {}).items():
            if isinstance(block, Mapping):
                for k, v in (block.get("values") or {}).items():
                    values[f"stratum:{name}:{k}"] = v
    return values


def _lookup_key(gate: GateSpec) -> str:
    if gate.stratum is not None:
        return f"stratum:{gate.stratum}:{gate.key}"
    return f"weighted:{gate.key}" if gate.weighted else gate.key


def _value(report: EvalReport, gate: GateSpec) -> tuple[float | None, int, bool]:
    """The gated value, the count behind it, and whether the block exists."""
    if gate.stratum is not None:
        block = report.strata.get(gate.stratum) or report.flags.get(gate.stratum)
        if block is None:
            return None, 0, False
    else:
        block = report.weighted if gate.weighted else report.overall
    return block.values.get(gate.key), block.counts.get(gate.key, 0), True


def _holds(value: float, comparison: Comparison, threshold: float) -> bool:
    if comparison == ">=":
        return value >= threshold - _TOLERANCE
    if comparison == ">":
        return value > threshold
    if comparison == "<=":
        return value <= threshold + _TOLERANCE
    if comparison == "<":
        return value < threshold
    return math.isclose(value, threshold, rel_tol=0.0, abs_tol=_TOLERANCE)


def _fmt(x: float) -> str:
    return f"{x:.0f}" if float(x).is_integer() else f"{x:.4f}"


def _evaluate(
    report: EvalReport, gate: GateSpec, baselines: Mapping[str, Mapping[str, float | None]]
) -> GateResult:
    value, count, exists = _value(report, gate)
    base_value: float | None = None
    problems: list[str] = []
    skipped = False
    if not exists:
        problems.append(f"no stratum {gate.stratum!r} in the cases")
    elif value is None:
        base = gate.key.split("@", 1)[0]
        why = _WHAT.get("miss_rate" if base.startswith("miss_rate") else base, "no value")
        if gate.on_missing == "skip":
            skipped = True
        else:
            problems.append(f"no value for {gate.key} — {why}")
    elif count < gate.min_cases:
        problems.append(
            f"{gate.key} rests on {count} case(s); the gate needs at least {gate.min_cases} "
            "(set min_cases: 0 to accept an empty or smaller set)"
        )
    else:
        label = f"{gate.key} = {_fmt(value)}"
        if gate.key == "ungrounded_dose_claims" and value and report.ungrounded_dose_cases:
            shown = ", ".join(report.ungrounded_dose_cases[:5])
            more = len(report.ungrounded_dose_cases) - 5
            label += f" (cases {shown}{f' and {more} more' if more > 0 else ''})"
        elif count:
            label += f" over {count}"
        if gate.threshold is not None and not _holds(value, gate.comparison, gate.threshold):
            problems.append(f"{label} is not {gate.comparison} {_fmt(gate.threshold)}")
        if gate.key == "ungrounded_dose_claims" and report.critical_answers_unseen:
            problems.append(
                f"{report.critical_answers_unseen} checked answer(s) with a critical finding "
                "are in no case (a conversation keeps at most 16 answers): the gate did not see "
                "them"
            )
        if gate.baseline is not None:
            values = baselines.get(gate.baseline)
            base_value = None if values is None else values.get(_lookup_key(gate))
            if values is None:
                problems.append(f"baseline {gate.baseline} was not loaded")
            elif base_value is None:
                problems.append(f"baseline {gate.baseline} has no value for {gate.key}")
            else:
                problems += _against_baseline(value, base_value, gate, label)
    if skipped:
        status, message = "skipped", f"SKIP {gate.name}: no value for {gate.key}"
    elif problems:
        status, message = "failed", f"FAIL {gate.name}: " + "; ".join(problems)
    else:
        shown = "n/a" if value is None else _fmt(value)
        status, message = "passed", f"ok   {gate.name}: {gate.key} = {shown}"
    return GateResult(
        gate=gate.name,
        metric=gate.key,
        weighted=gate.weighted,
        stratum=gate.stratum,
        comparison=gate.comparison,
        threshold=gate.threshold,
        value=value,
        baseline=gate.baseline,
        baseline_value=base_value,
        max_drop=gate.max_drop,
        status=status,  # type: ignore[arg-type]
        message=message,
    )


def _against_baseline(value: float, base: float, gate: GateSpec, label: str) -> list[str]:
    drop = gate.max_drop
    if gate.comparison in (">=", ">"):
        floor = base - drop
        if value < floor - _TOLERANCE:
            return [f"{label} fell below baseline {_fmt(base)} − max_drop {_fmt(drop)}"]
    elif gate.comparison in ("<=", "<"):
        ceiling = base + drop
        if value > ceiling + _TOLERANCE:
            return [f"{label} rose above baseline {_fmt(base)} + max_drop {_fmt(drop)}"]
    elif abs(value - base) > drop + _TOLERANCE:
        return [f"{label} differs from baseline {_fmt(base)} by more than {_fmt(drop)}"]
    return []


def evaluate_gates(
    report: EvalReport,
    gates: Sequence[GateSpec],
    baselines: Mapping[str, Mapping[str, float | None]],
) -> list[GateResult]:
    """One :class:`GateResult` per gate, in order."""
    return [_evaluate(report, g, baselines) for g in gates]


def exit_code(report: EvalReport) -> int:
    """``0`` when every gate passed (or was skipped), ``1`` when a gate failed.

    (``2``, :data:`EXIT_INPUT`, is for unreadable case, gate or baseline files.)
    """
    return EXIT_FAILED if report.failed_gates else EXIT_OK
