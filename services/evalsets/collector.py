"""One object holding the sampler, the case accumulators and rotation: ``vigil scan``'s evaluation
set, and the CLI's ``vigil evalset export``.

The streaming workers use the same parts (sampler with Faust tables for state, one
:class:`CaseAccumulator` per sampled conversation in a table); this class is their in-process
composition, with case accumulators in an LRU bounded by ``max_conversations`` (a conversation
whose accumulator was evicted and that is selected later gets a case built from its later events
only; :attr:`EvalsetCollector.accumulators_evicted` counts evictions).
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Sequence
from pathlib import Path

from pydantic import BaseModel, ConfigDict

from schemas.evalset import EvalCase, EvalLabel, SourceRef
from schemas.events import ChatEvent
from schemas.outputs import Finding
from schemas.verdicts import GroundingReport
from services.evalsets.cases import CaseAccumulator, attach_labels
from services.evalsets.config import EvalsetConfig
from services.evalsets.export import ExportFormat, WriteResult, write_cases
from services.evalsets.periods import period_of, periods_order_key
from services.evalsets.rotation import Rotation, dedupe, rotate
from services.evalsets.sampler import AddResult, EvalsetSampler, summary_from_event

__all__ = ["EvalsetCollector", "ExportSummary", "ScanEvalset", "export_cases", "write_scan_evalset"]


class EvalsetCollector:
    """Sample conversations and build their cases from a stream of screened events.

    >>> from services.evalsets.config import EvalsetConfig
    >>> c = EvalsetCollector(EvalsetConfig(), b"secret")
    >>> c.cases()
    []
    """

    def __init__(
        self, config: EvalsetConfig, secret: bytes, *, max_conversations: int = 10_000
    ) -> None:
        if max_conversations < 1:
            raise ValueError("max_conversations must be >= 1")
        self.config = config
        self.sampler = EvalsetSampler(config, secret)
        self.max_conversations = max_conversations
        self._acc: OrderedDict[tuple[str, str], CaseAccumulator] = OrderedDict()
        self.accumulators_evicted = 0

    def observe(
        self,
        event: ChatEvent,
        findings: Sequence[Finding],
        source: SourceRef | None = None,
        report: GroundingReport | None = None,
    ) -> AddResult:
        """Fold one screened event (its findings, its verdict if checked) into the sample."""
        summary = summary_from_event(event, findings, source, self.config)
        result = self.sampler.add(summary)
        key = (summary.period, event.conversation_id)
        acc = self._acc.get(key)
        if acc is None:
            acc = CaseAccumulator(conversation_id=event.conversation_id, period=summary.period)
            self._acc[key] = acc
            if len(self._acc) > self.max_conversations:
                self._acc.popitem(last=False)
                self.accumulators_evicted += 1
        else:
            self._acc.move_to_end(key)
        acc.observe(event, findings, self.config, report)
        if source is not None:
            acc.add_source(source, self.config.max_sources)
        return result

    def periods(self) -> list[str]:
        return self.sampler.periods()

    def close_all(self) -> None:
        """Close every period (end of a scan): inclusion probabilities become final."""
        for period in self.periods():
            self.sampler.close(period)

    def cases(self, period: str | None = None, labels: Sequence[EvalLabel] = ()) -> list[EvalCase]:
        """The selected cases of ``period`` (all periods when ``None``), labels attached."""
        periods = [period] if period is not None else self.periods()
        out: list[EvalCase] = []
        for p in periods:
            for sel in self.sampler.selection(p):
                acc = self._acc.get((p, sel.conversation_id)) or CaseAccumulator(
                    conversation_id=sel.conversation_id, period=p
                )
                out.append(acc.to_case(sel, self.config))
        return attach_labels(out, labels).cases if labels else out

    def rotate(self, current: str | None = None) -> Rotation:
        """Retire periods older than the last ``active_periods`` up to ``current`` (default: the
        latest period seen) and forget their state. Archive ``Rotation.retired`` before dropping
        it: it is the only copy left."""
        periods = self.periods()
        if not periods:
            return Rotation(active_periods=[], retired_periods=[], active=[], retired=[])
        now = current or periods[-1]
        result = rotate(self.cases(), now, self.config.active_periods)
        for p in result.retired_periods:
            self.sampler.forget(p)
            for key in [k for k in self._acc if k[0] == p]:
                del self._acc[key]
        return result

    def period_of(self, event: ChatEvent) -> str:
        return period_of(event.timestamp, self.config.period_kind)


class ExportSummary(BaseModel):
    """What :func:`export_cases` wrote."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    written: WriteResult
    periods: list[str]
    duplicates: int


def export_cases(
    state_or_cases: EvalsetCollector | Sequence[EvalCase],
    period: str | None,
    fmt: ExportFormat,
    out_path: Path | str,
    *,
    labels: Sequence[EvalLabel] = (),
    deduplicate: bool = True,
) -> ExportSummary:
    """``vigil evalset export``: write the cases of ``period`` (or the whole active set).

    ``state_or_cases`` is a collector (its current selection) or cases already read (e.g. from
    the ``vigil.evalset`` topic or a file). Without ``period`` the active set — the last
    ``active_periods`` periods when a collector is given, everything given otherwise — is
    written, near-duplicate questions removed unless ``deduplicate`` is false.
    """
    if isinstance(state_or_cases, EvalsetCollector):
        collector = state_or_cases
        periods = collector.periods()
        if period is None and periods:
            keep = set(periods[-collector.config.active_periods :])
            cases = [c for c in collector.cases() if c.period in keep]
        else:
            cases = collector.cases(period) if period is not None else []
    else:
        cases = [c for c in state_or_cases if period is None or c.period == period]
    if labels:
        cases = attach_labels(cases, labels).cases
    duplicates = 0
    if deduplicate:
        dd = dedupe(cases)
        cases, duplicates = dd.kept, len(dd.duplicates)
    written = write_cases(cases, out_path, fmt)
    return ExportSummary(
        written=written,
        periods=sorted({c.period for c in cases}, key=periods_order_key),
        duplicates=duplicates,
    )


class ScanEvalset(BaseModel):
    """What :func:`write_scan_evalset` wrote."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    active: WriteResult
    archive: WriteResult | None
    active_periods: list[str]
    retired_periods: list[str]


def write_scan_evalset(collector: EvalsetCollector, out_dir: Path | str) -> ScanEvalset:
    """End of ``vigil scan``: close every period, rotate, write ``evalset.jsonl`` (the active
    periods' cases, not deduplicated so their inclusion probabilities hold) and, when periods
    retired, ``evalset-archive.jsonl``."""
    out = Path(out_dir)
    collector.close_all()
    rot = collector.rotate()
    archive = write_cases(rot.retired, out / "evalset-archive.jsonl") if rot.retired else None
    return ScanEvalset(
        active=write_cases(rot.active, out / "evalset.jsonl"),
        archive=archive,
        active_periods=rot.active_periods,
        retired_periods=rot.retired_periods,
    )
