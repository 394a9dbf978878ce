"""The evaluation-set stage in memory, for tools and tests, and ``vigil evalset export``.

:class:`EvalsetCollector` is :class:`~services.evalsets.core.EvalsetCore` with its sampler over
in-memory stores, as ``vigil scan`` runs it (which spills the same stores to disk): ``observe``
each screened event, then read the selection's cases, close the periods or rotate them.
:func:`export_cases` writes cases (from a collector, a topic or a file) as JSONL or RAGAS.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from pydantic import BaseModel, ConfigDict

from schemas.evalset import EvalCase, EvalLabel, SourceRef
from schemas.events import ChatEvent
from schemas.outputs import Finding
from schemas.verdicts import GroundingReport
from services.dataflow.records import Effects
from services.dataflow.state import MemoryStore
from services.evalsets.cases import attach_labels
from services.evalsets.config import EvalsetConfig
from services.evalsets.core import ARCHIVE, CASES, DECISIONS, SAMPLES, EvalsetCore, evalset_specs
from services.evalsets.export import ExportFormat, WriteResult, write_cases
from services.evalsets.periods import period_of, periods_order_key
from services.evalsets.rotation import Rotation, dedupe
from services.evalsets.settings import EvalsetSettings
from services.evalsets.streaming import Decision, SampleIn

__all__ = ["EvalsetCollector", "ExportSummary", "ScanEvalset", "export_cases", "write_scan_evalset"]


class EvalsetCollector:
    """Sample conversations and build their cases from a stream of screened events.

    >>> from services.evalsets.config import EvalsetConfig
    >>> c = EvalsetCollector(EvalsetConfig(), b"secret")
    >>> c.cases()
    []
    """

    def __init__(self, config: EvalsetConfig, secret: bytes) -> None:
        es = EvalsetSettings()
        self.config = config
        self.core = EvalsetCore(es, partitions=1, live=False, config=config, secret=secret)
        specs = evalset_specs(es)
        self.store = MemoryStore(specs["evalset-cases"])
        self.sampler = self.core.new_sampler(MemoryStore(specs["evalset-sampler"]), now=0.0)
        self._cases: dict[str, EvalCase] = {}
        self._archive: dict[str, EvalCase] = {}

    def _deliver(self, effects: Effects) -> None:
        pending: Effects | None = effects
        while pending is not None:
            for emit in pending.emits:
                value = emit.value
                if emit.channel == SAMPLES and isinstance(value, SampleIn):
                    for out in self.core.on_sample(self.sampler, value, wall=0.0, mono=0.0):
                        self._deliver(Effects([out]))
                elif emit.channel == DECISIONS and isinstance(value, Decision):
                    self._deliver(self.core.on_decision(0, value, self.store))
                elif emit.channel in (CASES, ARCHIVE) and isinstance(value, EvalCase):
                    target = self._cases if emit.channel == CASES else self._archive
                    target[value.case_id] = value
            pending = pending.then() if pending.then is not None else None

    def observe(
        self,
        event: ChatEvent,
        findings: Sequence[Finding],
        source: SourceRef | None = None,
        report: GroundingReport | None = None,
    ) -> None:
        """Fold one screened event (its findings, its verdict if checked) into the sample."""
        self.store.now = event.timestamp.timestamp()
        emits = self.core.observe(event, findings, report, source, self.store, 0)
        self._deliver(Effects(emits))

    def periods(self) -> list[str]:
        return self.sampler.periods()

    def close(self, period: str) -> None:
        """Close ``period``: its population is final, later summaries of it are refused."""
        for d in self.sampler.close(period):
            self._deliver(self.core.on_decision(0, d, self.store))
        self.sampler.commit()

    def close_all(self) -> None:
        """Close every period (end of a scan): inclusion probabilities become final."""
        for period in self.periods():
            self.close(period)

    def cases(self, period: str | None = None, labels: Sequence[EvalLabel] = ()) -> list[EvalCase]:
        """The selected cases of ``period`` (all periods when ``None``), labels attached."""
        periods = [period] if period is not None else self.periods()
        out: list[EvalCase] = []
        for p in periods:
            for sel in self.sampler.selection(p):
                out += self.core.cases_for(self.store, 0, sel)
        return attach_labels(out, labels).cases if labels else out

    def rotate(self, current: str | None = None) -> Rotation:
        """Close every period, retire those older than the last ``active_periods`` up to
        ``current`` (default: the latest period seen) and forget their state; the retired cases
        come back for the archive."""
        periods = self.periods()
        if not periods:
            return Rotation(active_periods=[], retired_periods=[], active=[], retired=[])
        self._cases.clear()
        self._archive.clear()
        active, retired = self.core.finish(self.sampler, self.store, self._deliver, current=current)
        return Rotation(
            active_periods=active,
            retired_periods=retired,
            active=sorted(self._cases.values(), key=_order),
            retired=sorted(self._archive.values(), key=_order),
        )

    def period_of(self, event: ChatEvent) -> str:
        return period_of(event.timestamp, self.config.period_kind)


def _order(case: EvalCase) -> tuple[object, str, str]:
    return (periods_order_key(case.period), case.stratum, case.case_id)


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
    rot = collector.rotate()
    archive = write_cases(rot.retired, out / "evalset-archive.jsonl") if rot.retired else None
    return ScanEvalset(
        active=write_cases(rot.active, out / "evalset.jsonl"),
        archive=archive,
        active_periods=rot.active_periods,
        retired_periods=rot.retired_periods,
    )
