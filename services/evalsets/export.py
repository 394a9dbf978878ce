"""Reading and writing case files: Vigil's JSONL form and the RAGAS dataset form.

JSONL (``fmt="jsonl"``)
    One :class:`~schemas.evalset.EvalCase` per line (``case_id, period, stratum,
    inclusion_probability, question, answer, contexts, claims, fact_checks, findings, label``,
    ...), valid against ``schemas/json/EvalCase.schema.json``; the relevant documents are in
    ``label.relevant_doc_ids``. :func:`load_cases` reads it back; a hand-written file may give
    ``relevant_doc_ids`` at the top level instead (it becomes, or joins, the label).

RAGAS (``fmt="ragas"``)
    The field names of a RAGAS ``SingleTurnSample``: ``user_input`` (question),
    ``retrieved_contexts`` (passage texts in retrieval order), ``response`` (answer) and
    ``reference`` (the label's expected answer, else ``null``); ``reference_contexts`` (the texts
    of the labelled relevant passages) when labelled. Cases without a question or an answer have
    no RAGAS form and are skipped (counted).
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, ValidationError

from schemas.evalset import EvalCase, EvalLabel

__all__ = [
    "CaseFileError",
    "ExportFormat",
    "WriteResult",
    "case_record",
    "load_cases",
    "load_labels",
    "ragas_record",
    "read_case_lines",
    "write_cases",
]

ExportFormat = Literal["jsonl", "ragas"]


class CaseFileError(ValueError):
    """A case or label file cannot be read; the message names the file and line."""


class WriteResult(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    path: str
    format: ExportFormat
    written: int
    skipped: int = 0


def case_record(case: EvalCase) -> dict[str, Any]:
    """The JSONL record of a case: the case as its JSON Schema describes it."""
    return case.model_dump(mode="json")


def ragas_record(case: EvalCase) -> dict[str, Any] | None:
    """The RAGAS ``SingleTurnSample`` fields of a case, or ``None`` when it has no Q/A pair."""
    if not case.question or case.answer is None:
        return None
    label = case.label
    record: dict[str, Any] = {
        "user_input": case.question,
        "retrieved_contexts": [c.text for c in case.contexts],
        "response": case.answer,
        "reference": label.expected_answer if label else None,
    }
    if label is not None and label.relevant_doc_ids:
        wanted = set(label.relevant_doc_ids)
        record["reference_contexts"] = [c.text for c in case.contexts if c.doc_id in wanted]
    return record


def _atomic_write(path: Path, lines: Iterable[str]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            for line in lines:
                fh.write(line + "\n")
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def write_cases(
    cases: Sequence[EvalCase], out_path: Path | str, fmt: ExportFormat = "jsonl"
) -> WriteResult:
    """Write ``cases`` to ``out_path`` (atomically: a temp file renamed into place)."""
    path = Path(out_path)
    if fmt == "jsonl":
        records = [case_record(c) for c in cases]
        skipped = 0
    elif fmt == "ragas":
        maybe = [ragas_record(c) for c in cases]
        records = [r for r in maybe if r is not None]
        skipped = len(maybe) - len(records)
    else:
        raise ValueError(f"unknown format {fmt!r} (jsonl or ragas)")
    _atomic_write(path, (json.dumps(r, ensure_ascii=False, sort_keys=False) for r in records))
    return WriteResult(path=str(path), format=fmt, written=len(records), skipped=skipped)


def read_case_lines(path: Path | str) -> Iterable[tuple[int, dict[str, Any]]]:
    """``(line number, JSON object)`` of each non-blank line; ``CaseFileError`` on bad JSON."""
    p = Path(path)
    try:
        fh = p.open("rb")
    except OSError as exc:
        raise CaseFileError(f"{p}: cannot open: {exc.strerror}") from None
    with fh:
        for number, raw in enumerate(fh, start=1):
            if not raw.strip():
                continue
            try:
                data = json.loads(raw.decode("utf-8"))
            except (UnicodeDecodeError, json.JSONDecodeError) as exc:
                raise CaseFileError(f"{p}:{number}: not a JSON line ({exc})") from None
            if not isinstance(data, dict):
                raise CaseFileError(f"{p}:{number}: expected a JSON object")
            yield number, data


def _errors(exc: ValidationError) -> str:
    return "; ".join(
        f"{'.'.join(str(x) for x in e['loc']) or '<case>'}: {e['msg']}" for e in exc.errors()
    )


def load_cases(path: Path | str) -> list[EvalCase]:
    """Read a JSONL case file (the form :func:`write_cases` writes, ``fmt="jsonl"``)."""
    cases: list[EvalCase] = []
    seen: set[str] = set()
    for number, data in read_case_lines(path):
        relevant = data.pop("relevant_doc_ids", None)
        if relevant is not None:
            label = data.get("label")
            if label is None:
                data["label"] = {
                    "conversation_id": data.get("conversation_id"),
                    "relevant_doc_ids": relevant,
                }
            elif isinstance(label, dict):
                given = label.get("relevant_doc_ids")
                if given is None:
                    label["relevant_doc_ids"] = relevant
                elif given != relevant:
                    raise CaseFileError(
                        f"{path}:{number}: relevant_doc_ids disagrees with label.relevant_doc_ids"
                    )
        try:
            case = EvalCase.model_validate(data)
        except ValidationError as exc:
            raise CaseFileError(f"{path}:{number}: {_errors(exc)}") from None
        if case.case_id in seen:
            raise CaseFileError(f"{path}:{number}: duplicate case_id {case.case_id!r}")
        seen.add(case.case_id)
        cases.append(case)
    return cases


def load_labels(path: Path | str) -> list[EvalLabel]:
    """Read a JSONL file of :class:`~schemas.evalset.EvalLabel` (one per line)."""
    labels = []
    for number, data in read_case_lines(path):
        try:
            labels.append(EvalLabel.model_validate(data))
        except ValidationError as exc:
            raise CaseFileError(f"{path}:{number}: {_errors(exc)}") from None
    return labels
