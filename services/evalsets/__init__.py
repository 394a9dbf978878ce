"""Rotating evaluation sets from production (SPEC §9): pure parts, no Kafka, no clock.

- :mod:`~services.evalsets.periods` — period ids (ISO week, day, month)
- :mod:`~services.evalsets.sampler` — stratified keyed bottom-k sampler, per-period salts
- :mod:`~services.evalsets.state` — its state and results as pydantic models; shard merging
- :mod:`~services.evalsets.cases` — cases from events/findings/verdicts, masking, label joins
- :mod:`~services.evalsets.labels` — review labels as evaluation ground truth
- :mod:`~services.evalsets.rotation` — last N periods active, archive of retired, near-duplicates
- :mod:`~services.evalsets.export` — JSONL and RAGAS files
- :mod:`~services.evalsets.missrate` — miss rate of the rules from labelled unflagged cases
- :mod:`~services.evalsets.collector` — the in-process composition (``vigil scan``,
  :func:`write_scan_evalset`) and :func:`export_cases` (``vigil evalset export``)
- :mod:`~services.evalsets.tables` — :class:`ModelMapping`, pydantic values over a Faust table
- :mod:`~services.evalsets.settings` — ``VIGIL_EVALSET_*``, the same sample in scan and workers
- :mod:`~services.evalsets.streaming` — the workers' sampler and case state machines, messages

See ``docs/evaluation.md``.
"""

from __future__ import annotations

from services.evalsets.cases import CaseAccumulator, attach_labels, build_case, case_id
from services.evalsets.collector import (
    EvalsetCollector,
    ExportSummary,
    ScanEvalset,
    export_cases,
    write_scan_evalset,
)
from services.evalsets.config import EvalsetConfig
from services.evalsets.export import (
    CaseFileError,
    ExportFormat,
    load_cases,
    load_labels,
    write_cases,
)
from services.evalsets.labels import label_from_review
from services.evalsets.missrate import MissRateReport, estimate_miss_rates
from services.evalsets.periods import period_end, period_of, period_start
from services.evalsets.rotation import dedupe, normalise_question, rotate
from services.evalsets.sampler import (
    AddResult,
    ConversationSummary,
    EvalsetSampler,
    MemberRecord,
    PeriodState,
    Selection,
    merge_states,
    period_salt,
    select,
    summary_from_event,
)
from services.evalsets.tables import ModelMapping

__all__ = [
    "AddResult",
    "CaseAccumulator",
    "CaseFileError",
    "ConversationSummary",
    "EvalsetCollector",
    "EvalsetConfig",
    "EvalsetSampler",
    "ExportFormat",
    "ExportSummary",
    "MemberRecord",
    "MissRateReport",
    "ModelMapping",
    "PeriodState",
    "ScanEvalset",
    "Selection",
    "attach_labels",
    "build_case",
    "case_id",
    "dedupe",
    "estimate_miss_rates",
    "export_cases",
    "label_from_review",
    "load_cases",
    "load_labels",
    "merge_states",
    "normalise_question",
    "period_end",
    "period_of",
    "period_salt",
    "period_start",
    "rotate",
    "select",
    "summary_from_event",
    "write_cases",
    "write_scan_evalset",
]
