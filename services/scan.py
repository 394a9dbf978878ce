"""``vigil scan``: every stage in one process over a JSONL file, no Kafka (the embedded default).

The file is streamed line by line in binary (so invalid UTF-8 is a dead letter, not a crash) and
memory stays bounded: conversation memories live in an LRU, outputs are written as they come.
"""

from __future__ import annotations

import json
import sys
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, BinaryIO

from schemas.evalset import FileSource
from schemas.outputs import DeadLetter
from schemas.verdicts import GroundingReport
from services.checking import judge_config
from services.evalsets import EvalsetCollector, write_scan_evalset
from services.evalsets.settings import EvalsetSettings
from services.grounding import critical_claims
from services.judge import BlockingJudge
from services.pipeline import Pipeline
from services.review.policy import load_policy
from services.review.scan import ReviewScanner
from services.screening import MemoryStore
from services.settings import Settings
from services.streaming.features.review import load_settings as load_review_settings

__all__ = ["ScanSummary", "iter_lines", "run_scan"]


@dataclass
class ScanSummary:
    """Counts of one scan; also written to ``summary.json``."""

    lines: int = 0
    blank_lines: int = 0
    events: int = 0
    events_by_role: Counter[str] = field(default_factory=Counter)
    findings: int = 0
    findings_by_category: Counter[str] = field(default_factory=Counter)
    findings_by_entity: Counter[str] = field(default_factory=Counter)
    findings_by_direction: Counter[str] = field(default_factory=Counter)
    dead_letters: int = 0
    dead_letters_by_reason: Counter[str] = field(default_factory=Counter)
    answered: int = 0
    abstained: int = 0
    checks: int = 0
    checks_by_stratum: Counter[str] = field(default_factory=Counter)
    answers_with_ungrounded_claims: int = 0
    ungrounded_critical_claims: int = 0
    fabricated_citations: int = 0
    unsupported_citations: int = 0
    estimates: dict[str, object] = field(default_factory=dict)
    review_items: int = 0
    evalset_cases: int = 0
    review: Counter[str] = field(default_factory=Counter)

    def as_dict(self) -> dict[str, object]:
        return {
            k: dict(sorted(v.items())) if isinstance(v, Counter) else v
            for k, v in vars(self).items()
        }


def iter_lines(stream: BinaryIO) -> Iterator[tuple[int, bytes]]:
    """Yield ``(line_number, bytes)`` without the line ending; one line in memory at a time."""
    for number, line in enumerate(stream, start=1):
        yield number, line.rstrip(b"\r\n")


def run_scan(
    source: str,
    out_dir: Path,
    settings: Settings,
    *,
    progress: IO[str] | None = None,
    pipeline: Pipeline | None = None,
) -> ScanSummary:
    """Scan ``source`` (a path, or ``-`` for stdin) and write the outputs into ``out_dir``.

    Screens every event, checks the sampled assistant answers (asking the judge when one is
    configured) and writes ``findings.jsonl``, ``verdicts.jsonl``, ``dead_letters.jsonl``,
    ``metrics.prom`` and ``summary.json``.
    """
    pipe = pipeline or Pipeline(settings)
    jconf = judge_config(settings)
    es = EvalsetSettings()
    collector = EvalsetCollector(es.config(), es.secret) if es.enabled else None
    review = ReviewScanner(
        load_policy(load_review_settings().policy_file), key=settings.sample_key_bytes
    )
    out_dir.mkdir(parents=True, exist_ok=True)
    store = MemoryStore(settings.memory_limits)
    summary = ScanSummary()
    name = "stdin" if source == "-" else Path(source).name
    with ExitStack() as stack:
        if source == "-":
            stream: BinaryIO = sys.stdin.buffer
            total = None
        else:
            stream = stack.enter_context(open(source, "rb"))
            total = Path(source).stat().st_size
        findings_out = stack.enter_context(open(out_dir / "findings.jsonl", "w", encoding="utf-8"))
        dead_out = stack.enter_context(open(out_dir / "dead_letters.jsonl", "w", encoding="utf-8"))
        verdicts_out = stack.enter_context(open(out_dir / "verdicts.jsonl", "w", encoding="utf-8"))
        judge = (
            stack.enter_context(BlockingJudge(jconf, metrics=pipe.metrics.judge)) if jconf else None
        )
        bar = _progress(stack, progress, total)
        for number, raw in iter_lines(stream):
            summary.lines += 1
            if bar is not None:
                bar(len(raw) + 1)
            if not raw.strip():
                summary.blank_lines += 1
                continue
            decoded = pipe.decode(raw, f"{name}:{number}")
            if isinstance(decoded, DeadLetter):
                pipe.reject(decoded)
                summary.dead_letters += 1
                summary.dead_letters_by_reason[decoded.reason] += 1
                dead_out.write(decoded.model_dump_json() + "\n")
                continue
            event = decoded
            out = pipe.screen(event, store.get(event.conversation_id))
            if out.memory is not None:
                store.put(event.conversation_id, out.memory)
            summary.events += 1
            summary.events_by_role[event.role] += 1
            if out.abstained is not None:
                summary.abstained += out.abstained
                summary.answered += not out.abstained
            findings = list(out.findings)
            report = None
            decision = pipe.decide(event, out.findings)
            if decision is not None and decision.sampled:
                labels = None
                if judge is not None:
                    requests = pipe.checker.judge_requests(event)
                    results = judge.run(requests)
                    labels = {
                        r.hypothesis: res.label for r, res in zip(requests, results, strict=True)
                    }
                checked = pipe.check(event, decision, labels, out.findings)
                report = checked.report
                _count_check(summary, report)
                verdicts_out.write(report.model_dump_json() + "\n")
                findings.extend(checked.findings)
            review.add(event, findings, report)
            if collector is not None:
                collector.observe(event, findings, FileSource(file=name, line=number), report)
            for f in findings:
                summary.findings += 1
                summary.findings_by_category[f.category] += 1
                summary.findings_by_entity[f.entity] += 1
                summary.findings_by_direction[f.direction] += 1
                findings_out.write(f.model_dump_json() + "\n")
    summary.estimates = pipe.metrics.estimates()
    items = review.items()
    summary.review_items = len(items)
    summary.review.update(review.stats)
    with open(out_dir / "review.jsonl", "w", encoding="utf-8") as review_out:
        for item in items:
            review_out.write(item.model_dump_json() + "\n")
    if collector is not None:
        summary.evalset_cases = write_scan_evalset(collector, out_dir).active.written
    (out_dir / "metrics.prom").write_bytes(pipe.metrics.exposition())
    (out_dir / "summary.json").write_text(json.dumps(summary.as_dict(), indent=2) + "\n")
    return summary


def _count_check(summary: ScanSummary, report: GroundingReport) -> None:
    summary.checks += 1
    summary.checks_by_stratum[report.stratum] += 1
    summary.answers_with_ungrounded_claims += bool(report.ungrounded)
    summary.ungrounded_critical_claims += len(critical_claims(report))
    summary.fabricated_citations += len(report.fabricated_citations)
    summary.unsupported_citations += len(report.unsupported_citations)


def _progress(
    stack: ExitStack, stream: IO[str] | None, total: int | None
) -> Callable[[int], None] | None:
    """A byte-count progress callback drawing on ``stream`` (a terminal), or ``None``."""
    if stream is None:
        return None
    from rich.console import Console
    from rich.progress import BarColumn, DownloadColumn, Progress, TransferSpeedColumn

    prog = Progress(
        "[progress.description]{task.description}",
        BarColumn(),
        DownloadColumn(),
        TransferSpeedColumn(),
        console=Console(file=stream),
        transient=True,
    )
    stack.enter_context(prog)
    task = prog.add_task("scanning", total=total)
    pending = 0

    def advance(n: int) -> None:
        nonlocal pending
        pending += n
        if pending >= 1 << 20:
            prog.update(task, advance=pending)
            pending = 0

    return advance
