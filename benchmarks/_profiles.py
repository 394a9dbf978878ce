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
    "profiled_worker",
    "summarize_cprofile",
]

PROFILE_ON = signal.SIGRTMIN + 1
PROFILE_OFF = signal.SIGRTMIN + 2

_SCREEN = "chat.events agent (StreamRunner.screen)"
#: (context, frame pattern): the outermost matching frame of a stack names its context.
CONTEXTS: tuple[tuple[str, str], ...] = (
    (_SCREEN, r"^StreamRunner\.screen \("),
    ("claim-check agent (StreamRunner.check)", r"^StreamRunner\.(check|_judge) \("),
    (
        "eval-set agents (sampler, decisions, labels, tick)",
        r"(^StreamRunner\.(samples|decisions|labels|tick_sampler)|(^|\.)evalset_\w+) \(",
    ),
    ("alerting (window timer, detector)", r"\(services/streaming/features/alerting\.py"),
    ("review (timer, API)", r"\(services/streaming/features/review\.py"),
    ("state sweep timer", r"(^StreamRunner\.sweep|(^|\.)sweep_state) \("),
)
#: (stage, frame pattern) inside the chat.events agent: the innermost matching frame decides.
STAGES: tuple[tuple[str, str], ...] = (
    ("decode: JSON and validation", r"^Dataflow\._decode \("),
    ("screening: rule engine and findings", r"^Pipeline\.screen \("),
    ("screening: conversation memory (read, parse, write)", r"^Dataflow\._screen \("),
    ("sampling decision", r"^Pipeline\.decide \("),
    ("claim check", r"^Pipeline\.check \("),
    ("review intake", r"\(services/review/"),
    ("eval-set observe", r"\(services/evalsets/"),
    ("alert window counts", r"\(services/alerting/"),
    ("dataflow: the rest of process()", r"^Dataflow\.(process|_after|_count) \("),
    ("state writes at batch end (stage caches, RocksDB, changelog)", r"^StreamRunner\.flush \("),
    ("produce the batch's records (encode, send)", r"^(StreamRunner\.deliver|FaustSender\.) "),
    ("runner: batch loop", r"^(StreamRunner\.\w+|consume_batches|records_of) \("),
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
    ("aiokafka connections, protocol", r"\(aiokafka/"),
    ("Faust tables and RocksDB store", r"\(faust/(tables|stores)/"),
    ("Faust streams, agents, transport", r"\(faust/"),
    ("mode (services, timers, supervisors)", r"\(mode/"),
)
_LOOP = "asyncio event loop, other"
_OTHER_THREADS = "other threads (aiokafka consumer thread, …)"

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


def categorize(lines: Iterable[str], top: int = 25) -> dict[str, Any]:
    """Sample counts of py-spy's raw (collapsed) output, recorded with ``--threads``: one line per
    distinct stack, ``thread (TID): NAME;frame;frame;… COUNT``, root first. Returns counts by
    context, by stage inside the chat.events agent, by library for the rest of the main thread,
    and the top leaf frames (own time)."""
    contexts: Counter[str] = Counter()
    stages: Counter[str] = Counter()
    libraries: Counter[str] = Counter()
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
            continue
        context = _outermost(frames, _CTX)
        if context is None:
            context = "main thread outside Vigil's agents"
            libraries[_library(frames)] += n
        elif context == _SCREEN:
            stages[_innermost(frames, _STG) or "runner: batch loop"] += n
        contexts[context] += n
    return {
        "samples": total,
        "contexts": dict(contexts.most_common()),
        "stages": dict(stages.most_common()),
        "libraries": dict(libraries.most_common()),
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
#: suffix, function, depth in the table).
CPROFILE_POINTS: tuple[tuple[str, str, str, int], ...] = (
    ("runner: a batch of chat.events", "services/streaming/runner.py", "screen", 0),
    ("dataflow, per event", "services/dataflow/flow.py", "process", 1),
    ("decode (JSON + validation)", "services/dataflow/flow.py", "_decode", 2),
    ("screening (+ conversation memory)", "services/dataflow/flow.py", "_screen", 2),
    ("rule engine and findings", "services/pipeline.py", "screen", 3),
    ("claim check (sampled)", "services/pipeline.py", "check", 2),
    ("review, eval-set, alert hooks", "services/dataflow/flow.py", "_after", 2),
    ("state writes at the end of a batch", "services/streaming/runner.py", "flush", 1),
    ("RocksDB put + changelog send", "services/streaming/state.py", "put", 2),
    ("produce the batch's records", "services/streaming/runner.py", "deliver", 1),
    ("encode records (JSON)", "services/dataflow/records.py", "encode", 2),
    ("eval-set sampler agent", "services/streaming/runner.py", "samples", 0),
    ("eval-set decisions agent", "services/streaming/runner.py", "decisions", 0),
    ("state sweep timer", "services/streaming/runner.py", "sweep", 0),
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
    events = next(r["calls"] for r in rows if r["what"] == "dataflow, per event")
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
