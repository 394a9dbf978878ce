"""Where a running ``vigil worker`` spends its CPU per event (``streaming.py --profile``).

Two profilers, both on the steady state only (switched on once the worker is ready, off before
it stops):

- **py-spy** (``pip install -e '.[bench]'``), the default: samples every thread of the worker
  from outside, ``--rate`` times a second, idle threads left out; nothing is added to the
  worker. Each sample's stack is put in a *context* (which agent or timer is running: the
  outermost of Vigil's runner methods on the stack) and, inside the ``chat.events`` agent, in a
  *stage* (the innermost of the dataflow's stages); the rest of the main thread is split by
  library (aiokafka producer or consumer, Faust, mode, logging, the event loop). Shares are of
  samples, so they are unbiased by call counts.
- **cProfile** (``--cprofile``): the worker runs under :func:`profiled_worker` (the CLI's own
  command with cProfile on the main thread, started and stopped by signals), timed with
  ``time.thread_time``. It gives exact call counts (how many events were checked, how many
  batches) but charges its own overhead to code with many small calls.

:func:`categorize` and :func:`summarize_cprofile` are pure (tested without a worker).
"""

from __future__ import annotations

import cProfile
import io
import pstats
import re
import signal
import subprocess
import time
from collections import Counter
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

__all__ = [
    "CONTEXTS",
    "PROFILE_OFF",
    "PROFILE_ON",
    "STAGES",
    "PySpy",
    "callees",
    "categorize",
    "group_of",
    "profiled_worker",
    "summarize_cprofile",
]

PROFILE_ON = signal.SIGRTMIN + 1
PROFILE_OFF = signal.SIGRTMIN + 2

_SCREEN = "chat.events agent (StreamRunner.screen)"
_SAMPLER = "eval-set sampler agent (StreamRunner.samples, tick)"
_DECISIONS = "eval-set decisions agent (StreamRunner.decisions)"
#: (context, frame pattern): the outermost matching frame of a stack names its context.
CONTEXTS: tuple[tuple[str, str], ...] = (
    (_SCREEN, r"^StreamRunner\.screen \("),
    ("claim-check agent (StreamRunner.check)", r"^StreamRunner\.(check|_judge) \("),
    (_SAMPLER, r"(^StreamRunner\.(samples|tick_sampler)|(^|\.)evalset_(sampler|tick)\w*) \("),
    (_DECISIONS, r"(^StreamRunner\.decisions|(^|\.)evalset_decisions) \("),
    ("eval-set labels agent (StreamRunner.labels)", r"(^StreamRunner\.labels|\.evalset_labels) \("),
    ("alerting (window timer, detector)", r"\(services/streaming/features/alerting\.py"),
    ("review (timer, API)", r"\(services/streaming/features/review\.py"),
    ("state sweep timer", r"(^StreamRunner\.sweep|(^|\.)sweep_state) \("),
    ("changelog drain task (state written outside a batch)", r"^TableBackend\._drain_soon \("),
)
_CHANGELOG = "state: changelog records handed to the producer (TableBackend.drain)"
_STATE = "state table: get, put, scan (TableStore, TableBackend, RocksDB)"
_PRODUCE = "produce: encode and send the records (deliver, FaustSender)"
_RUNNER = "runner: batch loop, input parsing"
#: (component, frame pattern) inside Vigil's agents and timers: the innermost matching frame
#: decides (a stage's reads of the state table are the table's; its own encoding of what it
#: stores is the stage's).
STAGES: tuple[tuple[str, str], ...] = (
    ("decode: JSON and validation", r"^Dataflow\._decode \("),
    ("screening: rule engine and findings", r"^(Pipeline\.screen|Screener\.__call__) \("),
    ("question context: drugs and population of user turns", r"^QuestionContexts\.\w+ \("),
    ("screening: conversation memory (parse, write)", r"^Dataflow\._screen \("),
    ("sampling decision", r"^Pipeline\.decide \("),
    ("claim check", r"^Pipeline\.check \("),
    ("review intake (services/review)", r"\(services/review/"),
    ("eval-set core (services/evalsets)", r"\(services/evalsets/"),
    ("alert window counts (services/alerting)", r"\(services/alerting/"),
    ("Prometheus metrics (prometheus_client)", r"\(prometheus_client/"),
    ("logging", r"\(logging/"),
    ("dataflow: the rest of process()", r"^Dataflow\.(process|_after|_count|flush) \("),
    (_CHANGELOG, r"^(TableBackend|FaustStates)\.drain \("),
    (_STATE, r"^(TableStore|TableBackend|FaustStates)\.\w+ \("),
    (_STATE, r"\(faust/stores/"),
    (_PRODUCE, r"^(StreamRunner\.deliver|FaustSender\.\w+) \("),
    (_PRODUCE, r"^encode \(services/dataflow/records"),
    (_RUNNER, r"^(StreamRunner\.\w+|consume_batches|records_of|fresh_records) \("),
)
#: (library, frame pattern) for samples outside Vigil's agents, in three tiers: the innermost
#: cross-cutting cost (logging, metrics); else the outermost of aiokafka's producer or consumer
#: (a socket write under the producer's sender is the producer's); else the innermost library;
#: the event loop only when no library frame is on the stack.
CROSS_CUTTING: tuple[tuple[str, str], ...] = (
    ("logging", r"\(logging/"),
    ("prometheus_client", r"\(prometheus_client/"),
)
CLIENTS: tuple[tuple[str, str], ...] = (
    ("aiokafka producer", r"\(aiokafka/producer/"),
    ("aiokafka consumer, fetcher", r"\(aiokafka/consumer/"),
)
LIBRARIES: tuple[tuple[str, str], ...] = (
    ("Vigil's state table callbacks (acks, persisted offsets)", r"^TableBackend\.\w+ \("),
    ("aiokafka connections, protocol", r"\(aiokafka/"),
    ("Faust streams, agents, transport", r"^(BatchConsumer|BatchRoutes|ReadOffsets)\.\w+ \("),
    ("Faust tables and RocksDB store", r"\(faust/(tables|stores)/"),
    ("Faust streams, agents, transport", r"\(faust/"),
    ("mode (services, timers, supervisors)", r"\(mode/"),
)
_LOOP = "asyncio event loop, other"
_OTHER_THREADS = "other threads (Faust's consumer thread: aiokafka fetcher)"
_OUTSIDE = "main thread outside Vigil's agents"

#: The lead's view: every sample in one group. Produce and state-table work count there
#: whichever agent did it; the rest of an agent counts as its stage (``chat.events``) or as the
#: agent. (group, contexts or components or libraries that fall in it)
GROUP_CONSUME = "consume: Faust + aiokafka (consumer thread, fetch, streams, commit, mode)"
GROUP_PRODUCE = "produce: outputs and changelog (encode, send, aiokafka producer)"
GROUP_STATE = "state table (RocksDB get/put, changelog queue, persisted offsets)"
GROUP_LOOP = "asyncio event loop, other"
_GROUP_OF_LIBRARY = {
    "aiokafka producer": GROUP_PRODUCE,
    "aiokafka consumer, fetcher": GROUP_CONSUME,
    "aiokafka connections, protocol": GROUP_CONSUME,
    "Faust streams, agents, transport": GROUP_CONSUME,
    "mode (services, timers, supervisors)": GROUP_CONSUME,
    "Faust tables and RocksDB store": GROUP_STATE,
    "Vigil's state table callbacks (acks, persisted offsets)": GROUP_STATE,
    "prometheus_client": "Prometheus metrics (prometheus_client)",
    "logging": "logging",
    _LOOP: GROUP_LOOP,
}
_GROUP_OF_STAGE = {_CHANGELOG: GROUP_PRODUCE, _PRODUCE: GROUP_PRODUCE, _STATE: GROUP_STATE}

_CTX = [(name, re.compile(p)) for name, p in CONTEXTS]
_STG = [(name, re.compile(p)) for name, p in STAGES]
_CROSS = [(name, re.compile(p)) for name, p in CROSS_CUTTING]
_CLIENTS = [(name, re.compile(p)) for name, p in CLIENTS]
_LIB = [(name, re.compile(p)) for name, p in LIBRARIES]


def _library(frames: Sequence[str]) -> str:
    return (
        _innermost(frames, _CROSS)
        or _outermost(frames, _CLIENTS)
        or _innermost(frames, _LIB)
        or _LOOP
    )


def _innermost(frames: Sequence[str], rules: Sequence[tuple[str, re.Pattern[str]]]) -> str | None:
    for frame in reversed(frames):
        for name, rx in rules:
            if rx.search(frame):
                return name
    return None


def _outermost(frames: Sequence[str], rules: Sequence[tuple[str, re.Pattern[str]]]) -> str | None:
    for frame in frames:
        for name, rx in rules:
            if rx.search(frame):
                return name
    return None


def group_of(context: str, part: str) -> str:
    """The group (:data:`GROUP_CONSUME` …) of a sample in ``context`` and ``part`` (its stage
    inside an agent, or its library outside them)."""
    if context == _OTHER_THREADS:
        return GROUP_CONSUME
    if context == _OUTSIDE:
        return _GROUP_OF_LIBRARY.get(part, GROUP_LOOP)
    if part in _GROUP_OF_STAGE:
        return _GROUP_OF_STAGE[part]
    if context.startswith("changelog drain"):
        return GROUP_PRODUCE
    if context == _SCREEN:
        return "chat.events: " + part
    return context


def categorize(lines: Iterable[str], top: int = 25) -> dict[str, Any]:
    """Sample counts of py-spy's raw (collapsed) output, recorded with ``--threads``: one line per
    distinct stack, ``thread (TID): NAME;frame;frame;… COUNT``, root first. Returns counts by
    context (agent, timer), by component inside every context (``parts``; ``stages`` is the
    ``chat.events`` agent's), by library for the rest of the main thread, by group
    (:func:`group_of`), and the top leaf frames (own time)."""
    contexts: Counter[str] = Counter()
    parts: dict[str, Counter[str]] = {}
    libraries: Counter[str] = Counter()
    groups: Counter[str] = Counter()
    leaves: Counter[str] = Counter()
    total = 0
    for line in lines:
        line = line.rstrip("\n")
        if not line.strip():
            continue
        stack, _, count = line.rpartition(" ")
        n = int(count)
        thread, *frames = stack.split(";")
        total += n
        leaves[re.sub(r":\d+\)$", ")", frames[-1] if frames else thread)] += n
        if not thread.endswith("MainThread"):
            contexts[_OTHER_THREADS] += n
            groups[GROUP_CONSUME] += n
            continue
        context = _outermost(frames, _CTX)
        if context is None:
            context = _OUTSIDE
            part = _library(frames)
            libraries[part] += n
        else:
            part = _innermost(frames, _STG) or _RUNNER
            parts.setdefault(context, Counter())[part] += n
        contexts[context] += n
        groups[group_of(context, part)] += n
    return {
        "samples": total,
        "contexts": dict(contexts.most_common()),
        "stages": dict(parts.get(_SCREEN, Counter()).most_common()),
        "parts": {c: dict(p.most_common()) for c, p in parts.items()},
        "libraries": dict(libraries.most_common()),
        "groups": dict(groups.most_common()),
        "top_leaves": dict(leaves.most_common(top)),
    }


def callees(lines: Iterable[str], frame: str, top: int = 15) -> tuple[int, dict[str, int]]:
    """Samples whose stack holds a frame matching ``frame`` (a regular expression), and how they
    split over the frame called right below its innermost match (``(self)``: the frame itself):
    a drill-down into one row of :func:`categorize`."""
    rx = re.compile(frame)
    below: Counter[str] = Counter()
    total = 0
    for line in lines:
        stack, _, count = line.rstrip("\n").rpartition(" ")
        if not stack:
            continue
        frames = stack.split(";")
        hits = [i for i, f in enumerate(frames) if rx.search(f)]
        if not hits:
            continue
        n = int(count)
        total += n
        rest = frames[hits[-1] + 1 :]
        below[re.sub(r":\d+\)$", ")", rest[0]) if rest else "(self)"] += n
    return total, dict(below.most_common(top))


class PySpy:
    """``py-spy record`` on a running process until :meth:`stop` (SIGINT: it writes and exits)."""

    def __init__(self, exe: str, pid: int, out: Path, rate: int = 100) -> None:
        self.out = out
        self.rate = rate
        cmd = [exe, "record", "--pid", str(pid), "--rate", str(rate), "--format", "raw"]
        cmd += ["--threads", "--nonblocking", "--output", str(out)]
        self.log = out.with_suffix(".log")
        with open(self.log, "wb") as log:
            self.proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT)
        self.started = time.monotonic()

    def stop(self) -> dict[str, Any]:
        seconds = time.monotonic() - self.started
        self.proc.send_signal(signal.SIGINT)
        try:
            self.proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        if not self.out.exists():
            return {"error": f"py-spy wrote nothing: {self.log.read_text(errors='replace')}"}
        with open(self.out, encoding="utf-8", errors="replace") as fh:
            got = categorize(fh)
        got.update(seconds=seconds, rate=self.rate, file=str(self.out))
        return got


def profiled_worker(out: str, worker_args: list[str]) -> None:
    """``vigil worker`` (the CLI's own command) with cProfile on the main thread switched on by
    :data:`PROFILE_ON` and off, with the stats written to ``out``, by :data:`PROFILE_OFF`."""
    from services.cli import app

    # CPU time of the main thread, not wall time: on a shared machine wall time would charge
    # the neighbours' turns (and every wait in epoll) to whatever function was running
    prof = cProfile.Profile(time.thread_time)
    signal.signal(PROFILE_ON, lambda *_: prof.enable())

    def off(*_: Any) -> None:
        prof.disable()
        prof.dump_stats(out)

    signal.signal(PROFILE_OFF, off)
    app(["worker", *worker_args], prog_name="vigil")


#: Entry points whose inclusive time and call counts the cProfile summary reports: (label, file
#: suffix, function, depth in the table). Depth-0 rows do not call each other: what the main
#: thread spends outside them is the "rest". (pstats names no class: a name is matched in its
#: file only.)
CPROFILE_POINTS: tuple[tuple[str, str, str, int], ...] = (
    (
        "chat.events agent: a batch (StreamRunner.screen)",
        "services/streaming/runner.py",
        "screen",
        0,
    ),
    ("dataflow, per event (Dataflow.process)", "services/dataflow/flow.py", "process", 1),
    ("decode: JSON + validation", "services/dataflow/flow.py", "_decode", 2),
    (
        "screening + conversation memory (Dataflow._screen)",
        "services/dataflow/flow.py",
        "_screen",
        2,
    ),
    ("rule engine and findings (Pipeline.screen)", "services/pipeline.py", "screen", 3),
    ("sampling decision (Pipeline.decide)", "services/pipeline.py", "decide", 3),
    ("claim check, sampled answers (Pipeline.check)", "services/pipeline.py", "check", 2),
    ("hooks (Dataflow._after)", "services/dataflow/flow.py", "_after", 2),
    ("review intake (ReviewCore.observe)", "services/review/core.py", "observe", 3),
    ("eval-set observe (EvalsetCore.observe)", "services/evalsets/core.py", "observe", 3),
    ("alert window counts (WindowCounter.count)", "services/alerting/core.py", "count", 3),
    (
        "stage state written at batch end (StreamRunner.flush)",
        "services/streaming/runner.py",
        "flush",
        1,
    ),
    (
        "state table put: RocksDB + changelog queue (TableBackend.put)",
        "services/streaming/state.py",
        "put",
        2,
    ),
    ("produce the batch (StreamRunner.deliver)", "services/streaming/runner.py", "deliver", 1),
    (
        "changelog records to the producer (TableBackend.drain)",
        "services/streaming/state.py",
        "drain",
        2,
    ),
    ("outputs: encode + send (FaustSender.__call__)", "services/streaming/app.py", "__call__", 2),
    ("eval-set sampler agent (StreamRunner.samples)", "services/streaming/runner.py", "samples", 0),
    ("sampler tick (StreamRunner.tick_sampler)", "services/streaming/runner.py", "tick_sampler", 1),
    (
        "eval-set decisions agent (StreamRunner.decisions)",
        "services/streaming/runner.py",
        "decisions",
        0,
    ),
    ("eval-set labels agent (StreamRunner.labels)", "services/streaming/runner.py", "labels", 0),
    ("state sweep timer (StreamRunner.sweep)", "services/streaming/runner.py", "sweep", 0),
    (
        "changelog drain task (TableBackend._drain_soon)",
        "services/streaming/state.py",
        "_drain_soon",
        0,
    ),
    ("aiokafka producer: sender task", "aiokafka/producer/sender.py", "_sender_routine", 0),
    (
        "Faust: messages to the streams (Conductor on_message)",
        "faust/transport/conductor.py",
        "on_message",
        0,
    ),
    (
        "Faust: offset commits (Consumer._commit_handler)",
        "faust/transport/consumer.py",
        "_commit_handler",
        0,
    ),
)


def summarize_cprofile(path: Path, repo_root: Path, top: int = 30) -> dict[str, Any]:
    """Per-event inclusive CPU (µs, under the profiler) and call counts of
    :data:`CPROFILE_POINTS`, and the top functions by own time, from a cProfile dump."""
    st = pstats.Stats(str(path))
    raw: dict[Any, Any] = st.stats  # type: ignore[attr-defined]
    total = float(st.total_tt)  # type: ignore[attr-defined]
    rows = []
    for label, suffix, func, depth in CPROFILE_POINTS:
        calls, cum = 0, 0.0
        for (file, _line, name), (_cc, nc, _tt, ct, _callers) in raw.items():
            if name == func and file.endswith(suffix):
                calls += nc
                cum += ct
        rows.append({"what": label, "depth": depth, "calls": calls, "cum_s": cum})
    events = next(r["calls"] for r in rows if r["what"].startswith("dataflow, per event"))
    for r in rows:
        r["us_per_event"] = r["cum_s"] / events * 1e6 if events else None
        r["share"] = r["cum_s"] / total if total else None
    agents = sum(r["cum_s"] for r in rows if r["depth"] == 0)
    buf = io.StringIO()
    pstats.Stats(str(path), stream=buf).sort_stats("tottime").print_stats(top)
    text = re.sub(r"\S*/site-packages/", "", buf.getvalue()).replace(f"{repo_root}/", "")
    return {
        "events": events,
        "main_thread_cpu_s": total,
        "us_per_event_total": total / events * 1e6 if events else None,
        "points": rows,
        "other_s": total - agents,
        "other_us_per_event": (total - agents) / events * 1e6 if events else None,
        "top_by_own_time": re.sub(r"\S*/lib/python3\.\d+/", "", text),
    }


if __name__ == "__main__":  # python benchmarks/_profiles.py PY_SPY_RAW_FILE FRAME_REGEX
    import sys

    with open(sys.argv[1], encoding="utf-8", errors="replace") as fh:
        n, split = callees(fh, sys.argv[2])
    print(f"{n} samples under {sys.argv[2]!r}")
    for name, m in split.items():
        print(f"{m:8d}  {100 * m / max(n, 1):5.1f} %  {name}")
