"""``vigil scan``: the file runner of the dataflow (no Kafka, no Faust).

It supplies only I/O and the stores around :class:`~services.dataflow.flow.Dataflow`: lines of a
file (read in binary, so invalid UTF-8 is a dead letter, not a crash) in, output files out, and
state in bounded stores — kinds with few keys in memory; the per-conversation and per-event
kinds (conversation memory, recent event ids, review and question context) and what must survive
to the end of the run (review items, eval-set cases and the sampler's members) spilled to a
private SQLite file (:mod:`services.dataflow.spill`). Memory therefore stays flat however long
the file. The internal channels are handed straight to the stage that consumes them: eval-set
summaries to the sampler, its decisions back to the case side. At the end every period is
closed, the old ones retire to ``evalset-archive.jsonl``, and ``review.jsonl`` and
``evalset.jsonl`` are written.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from contextlib import ExitStack
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import IO, BinaryIO, get_args

from pydantic import BaseModel

from schemas.evalset import EvalCase, FileSource
from schemas.events import ChatEvent
from schemas.outputs import Severity
from schemas.review import ReviewItem
from schemas.verdicts import GroundingReport, JudgeLabel, MedicalContext
from services.checking import judge_config
from services.dataflow.flow import (
    DLQ,
    FINDINGS,
    KEPT_TO_END,
    VERDICTS,
    Dataflow,
    Judging,
    PartitionState,
    Source,
    Step,
)
from services.dataflow.questions import QUESTIONS
from services.dataflow.records import Effects, Emit, encode
from services.dataflow.spill import SpillFile, SqliteStore
from services.dataflow.state import KeyedStore, MemoryStore
from services.evalsets.core import ARCHIVE, CASES, DECISIONS, SAMPLES
from services.evalsets.export import case_record
from services.evalsets.streaming import Decision, SampleIn, SamplerCore
from services.grounding import critical_claims
from services.judge import BlockingJudge
from services.pipeline import Pipeline
from services.review.core import ReviewState, count_outcome
from services.settings import Settings

__all__ = [
    "OUTPUT_FILES",
    "SEVERITY_ORDER",
    "ScanOutputError",
    "ScanSummary",
    "iter_lines",
    "prepare_output",
    "run_scan",
]

#: Kinds kept in memory in a scan (few keys); the others are spilled. The conversation memory is
#: spilled too: one entry per conversation of the last week (100k by default), ~50 MiB held in
#: memory on a 1 GB file; a conversation's turns come close together, so its reads mostly hit
#: the spill's write buffer.
IN_MEMORY = frozenset({"held", "review-caps", "alerts-window-counts", "alerts-detector"})
#: Events between two expiry sweeps of the stores.
SWEEP_EVERY = 5000
#: Every file a scan writes into its output folder. All are created readable by their owner
#: only (most can hold masked chat content), and all are removed when a run starts, so a reused
#: folder never mixes a past run's files (an old ``evalset-archive.jsonl``) with this one's.
OUTPUT_FILES = (
    "findings.jsonl",
    "verdicts.jsonl",
    "dead_letters.jsonl",
    "review.jsonl",
    "evalset.jsonl",
    "evalset-archive.jsonl",
    "estimates.json",
    "metrics.prom",
    "summary.json",
)
_CHANNEL_FILES = {FINDINGS: "findings.jsonl", VERDICTS: "verdicts.jsonl", DLQ: "dead_letters.jsonl"}
#: Severities from lowest to highest (``vigil scan --fail-on``).
SEVERITY_ORDER: tuple[Severity, ...] = get_args(Severity)


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
    findings_by_severity: Counter[str] = field(default_factory=Counter)
    dead_letters: int = 0
    dead_letters_by_reason: Counter[str] = field(default_factory=Counter)
    #: Events skipped because an earlier line had the same event id.
    duplicates: int = 0
    #: Answers with a leak held for the reorder window (each released and counted later).
    held_answers: int = 0
    answered: int = 0
    abstained: int = 0
    checks: int = 0
    checks_by_stratum: Counter[str] = field(default_factory=Counter)
    answers_with_ungrounded_claims: int = 0
    ungrounded_critical_claims: int = 0
    fabricated_citations: int = 0
    unsupported_citations: int = 0
    #: Claims the judge was asked about and could not answer (down, timeout, malformed).
    unverified_claims: int = 0
    #: Judge calls by outcome (empty without a judge).
    judge_calls: Counter[str] = field(default_factory=Counter)
    estimates: dict[str, object] = field(default_factory=dict)
    review_items: int = 0
    evalset_cases: int = 0
    review: Counter[str] = field(default_factory=Counter)

    def as_dict(self) -> dict[str, object]:
        out: dict[str, object] = {
            k: dict(sorted(v.items())) if isinstance(v, Counter) else v
            for k, v in vars(self).items()
        }
        out["judge_failures"] = self.judge_failures
        out["dead_letter_share"] = round(self.dead_letter_share, 6)
        return out

    def count(self, step: Step) -> None:
        """Add what one record did."""
        if step.dead_letter is not None:
            self.dead_letters += 1
            self.dead_letters_by_reason[step.dead_letter.reason] += 1
            return
        if step.duplicate:
            self.duplicates += 1
            return
        if step.held:
            self.held_answers += 1
            return
        event = step.event
        if event is None:
            return
        self.events += 1
        self.events_by_role[event.role] += 1
        if step.abstained is not None:
            self.abstained += step.abstained
            self.answered += not step.abstained
        for f in step.findings:
            self.findings += 1
            self.findings_by_category[f.category] += 1
            self.findings_by_entity[f.entity] += 1
            self.findings_by_direction[f.direction] += 1
            self.findings_by_severity[f.severity] += 1
        if step.report is not None:
            self._count_check(step.report)
        stats: dict[str, int] = {}
        for outcome in step.review:
            count_outcome(stats, outcome)
        self.review.update(stats)

    def _count_check(self, report: GroundingReport) -> None:
        self.checks += 1
        self.checks_by_stratum[report.stratum] += 1
        self.answers_with_ungrounded_claims += bool(report.ungrounded)
        self.ungrounded_critical_claims += len(critical_claims(report))
        self.fabricated_citations += len(report.fabricated_citations)
        self.unsupported_citations += len(report.unsupported_citations)
        self.unverified_claims += sum(c.judge == "unverified" for c in report.claims)

    @property
    def judge_failures(self) -> int:
        """Judge calls that ended without a verdict (cached verdicts are answers)."""
        return sum(n for outcome, n in self.judge_calls.items() if outcome not in ("ok", "cached"))

    @property
    def dead_letter_share(self) -> float:
        """Dead letters among the non-blank lines."""
        read = self.events + self.dead_letters
        return self.dead_letters / read if read else 0.0

    def findings_at_or_above(self, severity: Severity) -> int:
        """Findings of ``severity`` or a higher one (``vigil scan --fail-on``)."""
        above = SEVERITY_ORDER[SEVERITY_ORDER.index(severity) :]
        return sum(self.findings_by_severity[s] for s in above)


def iter_lines(stream: BinaryIO) -> Iterator[tuple[int, bytes]]:
    """Yield ``(line_number, bytes)`` without the line ending; one line in memory at a time."""
    for number, line in enumerate(stream, start=1):
        yield number, line.rstrip(b"\r\n")


class ScanOutputError(Exception):
    """The output folder cannot be used (the message says which and why, for the user)."""


def prepare_output(out_dir: Path) -> None:
    """Make ``out_dir`` ready for a run: created (mode 0700) if missing, writable, and without
    the files of a previous run. Raises :class:`ScanOutputError`."""
    if out_dir.exists() and not out_dir.is_dir():
        raise ScanOutputError(f"--out {out_dir}: exists and is not a folder")
    try:
        out_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
    except OSError as exc:
        raise ScanOutputError(
            f"--out {out_dir}: cannot create the folder: {exc.strerror or exc}"
        ) from None
    try:
        with tempfile.TemporaryFile(dir=out_dir):
            pass
        for name in OUTPUT_FILES:
            (out_dir / name).unlink(missing_ok=True)
    except IsADirectoryError as exc:
        raise ScanOutputError(
            f"--out {out_dir}: {Path(str(exc.filename)).name} is a folder, where the scan "
            "writes a file"
        ) from None
    except OSError as exc:
        why = exc.strerror or str(exc)
        raise ScanOutputError(f"--out {out_dir}: cannot write there: {why}") from None


def _private(path: Path) -> IO[str]:
    """A new file readable by its owner only (outputs can hold masked chat content)."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    os.fchmod(fd, 0o600)
    return os.fdopen(fd, "w", encoding="utf-8")


class _Files:
    """The output files of one scan, opened as they are first written."""

    def __init__(self, stack: ExitStack, out_dir: Path) -> None:
        self.stack = stack
        self.out_dir = out_dir
        self._open: dict[str, IO[str]] = {}
        self.counts: Counter[str] = Counter()

    def open(self, name: str) -> IO[str]:
        fh = self._open.get(name)
        if fh is None:
            fh = self._open[name] = self.stack.enter_context(_private(self.out_dir / name))
        return fh

    def write(self, name: str, line: str) -> None:
        self.open(name).write(line + "\n")
        self.counts[name] += 1


class _ScanRunner:
    """The stores, the router of channels and the output files of one scan."""

    def __init__(self, flow: Dataflow, spill: SpillFile, files: _Files) -> None:
        self.flow = flow
        self.files = files
        self.stores: dict[str, KeyedStore] = {}
        for kind, spec in flow.specs.items():
            if kind in IN_MEMORY:
                self.stores[kind] = MemoryStore(spec)
            else:
                self.stores[kind] = spill.store(spec)
        s = self.stores
        self.st = PartitionState(
            memory=s["memory"],
            events=s["events"],
            held=s["held"],
            questions=s[QUESTIONS],
            review=ReviewState(
                items=s["review-items"], context=s["review-context"], caps=s["review-caps"]
            ),
            cases=s.get("evalset-cases"),
            counts=s.get("alerts-window-counts"),
        )
        core = flow.evalsets
        self.sampler: SamplerCore | None = (
            core.new_sampler(s["evalset-sampler"], now=0.0) if core is not None else None
        )

    def set_clock(self, now: float) -> None:
        for store in self.stores.values():
            store.now = now

    def sweep(self) -> None:
        self.flow.flush()
        for kind, store in self.stores.items():
            store.expire(by_age=kind not in KEPT_TO_END)

    # ------------------------------------------------------------------ routing

    def deliver(self, effects: Effects) -> None:
        """Route every emit; a follow-up runs at once (a file write is acknowledged)."""
        pending: Effects | None = effects
        while pending is not None:
            for emit in pending.emits:
                self.route(emit)
            pending = pending.then() if pending.then is not None else None

    def route(self, emit: Emit) -> None:
        channel, value = emit.channel, emit.value
        if channel in _CHANNEL_FILES:
            data = encode(value)
            if data is not None:
                self.files.write(_CHANNEL_FILES[channel], data.decode("utf-8"))
        elif channel == SAMPLES:
            assert self.sampler is not None and self.flow.evalsets is not None
            msg = (
                value if isinstance(value, SampleIn) else SampleIn.model_validate_json(_raw(value))
            )
            for out in self.flow.evalsets.on_sample(self.sampler, msg, wall=0.0, mono=0.0):
                self.route(out)
        elif channel == DECISIONS:
            assert self.flow.evalsets is not None and self.st.cases is not None
            d = value if isinstance(value, Decision) else Decision.model_validate_json(_raw(value))
            self.deliver(self.flow.evalsets.on_decision(d.partition, d, self.st.cases))
        elif channel in (CASES, ARCHIVE):
            if value is None:
                return  # a tombstone: nothing of the case was written in this run
            case = (
                value if isinstance(value, EvalCase) else EvalCase.model_validate_json(_raw(value))
            )
            target = "evalset.jsonl" if channel == CASES else "evalset-archive.jsonl"
            self.files.write(target, json.dumps(case_record(case), ensure_ascii=False))
        else:
            raise ValueError(f"vigil scan has no route for channel {channel!r}")

    # ------------------------------------------------------------------ the end

    def finish_evalsets(self) -> int:
        core, sampler, cases = self.flow.evalsets, self.sampler, self.st.cases
        self.flow.flush()
        if core is None or sampler is None or cases is None:
            return 0
        core.finish(sampler, cases, self.deliver)
        self.files.open("evalset.jsonl")  # written even when empty
        return self.files.counts["evalset.jsonl"]

    def write_review(self) -> int:
        """``review.jsonl``: the items, highest priority first, then oldest (read from the spill
        file in that order, never all in memory)."""
        items = self.stores["review-items"]
        fh = self.files.open("review.jsonl")
        written = 0
        for cid in _review_order(items):
            found = items.get(cid)
            if found is not None:
                item = ReviewItem.model_validate_json(found)
                fh.write(item.model_dump_json() + "\n")
                written += 1
        return written


def _review_rank(raw: bytes) -> tuple[int, str]:
    """Highest priority first, then oldest."""
    head = json.loads(raw)
    return -int(head["priority"]), _utc(head["created_at"])


def _review_order(store: KeyedStore) -> Iterator[str]:
    if isinstance(store, SqliteStore):
        return store.keys_sorted_by(_review_rank)
    return iter(sorted(store, key=lambda k: (*_review_rank(store[k]), k)))


def _utc(stamp: str) -> str:
    return datetime.fromisoformat(stamp).astimezone(UTC).isoformat()


def _raw(value: BaseModel | bytes | None) -> bytes:
    return value if isinstance(value, bytes) else b""


def _judge_fn(judge: BlockingJudge, pipe: Pipeline) -> Judging:
    def ask(event: ChatEvent, context: MedicalContext | None) -> dict[str, JudgeLabel]:
        requests = pipe.checker.judge_requests(event, context)
        results = judge.run(requests)
        return {r.hypothesis: res.label for r, res in zip(requests, results, strict=True)}

    return ask


def run_scan(
    source: str | Sequence[str],
    out_dir: Path,
    settings: Settings,
    *,
    progress: IO[str] | None = None,
    pipeline: Pipeline | None = None,
    spill_dir: Path | None = None,
) -> ScanSummary:
    """Scan ``source`` (a path, ``-`` for stdin, or several paths read one after the other as
    one log) and write the outputs into ``out_dir``.

    Runs every stage of the dataflow (screening, the sampled claim checks with the judge when
    one is configured, review intake, eval-set sampling) and writes ``findings.jsonl``,
    ``verdicts.jsonl``, ``dead_letters.jsonl``, ``review.jsonl``, ``evalset.jsonl`` (and
    ``evalset-archive.jsonl`` when periods retired), ``estimates.json`` (the population rates,
    :class:`~schemas.estimates.PopulationEstimates`), ``metrics.prom`` and ``summary.json``, each
    mode 0600, after removing those of a previous run (:func:`prepare_output`).
    """
    flow = Dataflow(settings, clock="event", pipeline=pipeline)
    pipe = flow.pipeline
    jconf = judge_config(settings)
    prepare_output(out_dir)
    summary = ScanSummary()
    sources = [source] if isinstance(source, str) else list(source)
    if "-" in sources and len(sources) > 1:
        raise ValueError("stdin (-) cannot be scanned together with files")
    with ExitStack() as stack:
        total = None if sources == ["-"] else sum(Path(p).stat().st_size for p in sources)
        files = _Files(stack, out_dir)
        for required in ("findings.jsonl", "dead_letters.jsonl", "verdicts.jsonl"):
            files.open(required)
        spill = stack.enter_context(SpillFile(spill_dir))
        runner = _ScanRunner(flow, spill, files)
        judge = (
            stack.enter_context(BlockingJudge(jconf, metrics=pipe.metrics.judge)) if jconf else None
        )
        ask = _judge_fn(judge, pipe) if judge is not None else None
        bar = _progress(stack, progress, total)
        clock = 0.0
        since_sweep = 0
        for name, number, raw in _records(stack, sources):
            summary.lines += 1
            if bar is not None:
                bar(len(raw) + 1)
            if not raw.strip():
                summary.blank_lines += 1
                continue
            src = Source(f"{name}:{number}", 0, number, FileSource(file=name, line=number))
            runner.set_clock(clock)
            step = flow.process(raw, src, runner.st, now=clock, judge=ask)
            if step.event is not None:
                clock = max(clock, step.event.timestamp.timestamp())
            for done in step.chain():
                runner.deliver(flow.delivery([done]))
                summary.count(done)
            since_sweep += 1
            if since_sweep >= SWEEP_EVERY:
                for done in flow.release_held(runner.st, now=clock, judge=ask):
                    runner.deliver(flow.delivery([done]))
                    summary.count(done)
                runner.sweep()
                since_sweep = 0
        # The end of the file: no late turn can come any more, every held answer is decided.
        for done in flow.release_held(runner.st, now=clock, everything=True, judge=ask):
            runner.deliver(flow.delivery([done]))
            summary.count(done)
        summary.evalset_cases = runner.finish_evalsets()
        summary.review_items = runner.write_review()
        estimates = pipe.metrics.estimates()
        summary.estimates = estimates.model_dump(mode="json")["measures"]
        if jconf is not None:
            summary.judge_calls = pipe.metrics.judge.counts()
        files.open("estimates.json").write(estimates.model_dump_json(indent=2) + "\n")
        files.open("metrics.prom").write(pipe.metrics.exposition().decode("utf-8"))
        files.open("summary.json").write(json.dumps(summary.as_dict(), indent=2) + "\n")
    return summary


def _records(stack: ExitStack, sources: list[str]) -> Iterator[tuple[str, int, bytes]]:
    """``(file name, line number, line)`` of every source in turn (``-``: stdin)."""
    for path in sources:
        if path == "-":
            stream: BinaryIO = sys.stdin.buffer
            name = "stdin"
        else:
            stream = stack.enter_context(open(path, "rb"))  # noqa: SIM115
            name = Path(path).name
        for number, raw in iter_lines(stream):
            yield name, number, raw


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
