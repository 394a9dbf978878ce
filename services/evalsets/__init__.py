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

from typing import TYPE_CHECKING

from services._lazy import lazy_exports

if TYPE_CHECKING:
    from services.evalsets.cases import (
        CaseAccumulator,
        attach_labels,
        build_case,
        build_cases,
        case_id,
    )
    from services.evalsets.collector import (
        EvalsetCollector,
        ExportSummary,
        ScanEvalset,
        export_cases,
        write_scan_evalset,
    )
    from services.evalsets.config import (
        EvalsetConfig,
    )
    from services.evalsets.export import (
        CaseFileError,
        ExportFormat,
        load_cases,
        load_labels,
        write_cases,
    )
    from services.evalsets.labels import (
        label_from_review,
    )
    from services.evalsets.missrate import (
        MissRateReport,
        estimate_miss_rates,
    )
    from services.evalsets.periods import (
        period_end,
        period_of,
        period_start,
    )
    from services.evalsets.rotation import (
        dedupe,
        normalise_question,
        rotate,
    )
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
    from services.evalsets.tables import (
        ModelMapping,
    )

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
    "build_cases",
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

_SOURCES = {
    "CaseAccumulator": "services.evalsets.cases",
    "attach_labels": "services.evalsets.cases",
    "build_case": "services.evalsets.cases",
    "build_cases": "services.evalsets.cases",
    "case_id": "services.evalsets.cases",
    "EvalsetCollector": "services.evalsets.collector",
    "ExportSummary": "services.evalsets.collector",
    "ScanEvalset": "services.evalsets.collector",
    "export_cases": "services.evalsets.collector",
    "write_scan_evalset": "services.evalsets.collector",
    "EvalsetConfig": "services.evalsets.config",
    "CaseFileError": "services.evalsets.export",
    "ExportFormat": "services.evalsets.export",
    "load_cases": "services.evalsets.export",
    "load_labels": "services.evalsets.export",
    "write_cases": "services.evalsets.export",
    "label_from_review": "services.evalsets.labels",
    "MissRateReport": "services.evalsets.missrate",
    "estimate_miss_rates": "services.evalsets.missrate",
    "period_end": "services.evalsets.periods",
    "period_of": "services.evalsets.periods",
    "period_start": "services.evalsets.periods",
    "dedupe": "services.evalsets.rotation",
    "normalise_question": "services.evalsets.rotation",
    "rotate": "services.evalsets.rotation",
    "AddResult": "services.evalsets.sampler",
    "ConversationSummary": "services.evalsets.sampler",
    "EvalsetSampler": "services.evalsets.sampler",
    "MemberRecord": "services.evalsets.sampler",
    "PeriodState": "services.evalsets.sampler",
    "Selection": "services.evalsets.sampler",
    "merge_states": "services.evalsets.sampler",
    "period_salt": "services.evalsets.sampler",
    "select": "services.evalsets.sampler",
    "summary_from_event": "services.evalsets.sampler",
    "ModelMapping": "services.evalsets.tables",
}
__getattr__ = lazy_exports(__name__, _SOURCES)
