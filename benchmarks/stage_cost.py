"""CPU per event of the screening stage and of the review intake alone, warm (issue 9).

``benchmarks/worker_inprocess.py`` measures the worker's whole dataflow; on a shared machine its
total moves by more than one stage's share, and its first thousands of events also pay for the
rule set's DFA being built (RE2 builds its states lazily). This script runs the dataflow once as
``worker_inprocess.py`` does, records what :class:`~services.screening.stage.Screener` and
:meth:`~services.review.core.ReviewCore.observe` were called with, and then replays only those
calls, several times, on the same warm engine (review on fresh state each time): the best of the
repeats, in CPU µs per call, is the stage's own cost: the calls are timed in chunks of 100 and
each chunk's best time is kept (a chunk starts from the same state in every repeat), so a burst
of other work on a shared core spoils one chunk of one repeat, not the figure.
``--cprofile N`` profiles one more replay::

    taskset -c 1 .venv/bin/python benchmarks/stage_cost.py --mix rag --events 5000
    taskset -c 1 .venv/bin/python benchmarks/stage_cost.py --stage review --cprofile 30
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import io
import json
import pstats
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import worker_inprocess as W

from services.dataflow.state import MemoryStore
from services.review.core import ReviewCore, ReviewState, review_specs
from services.review.settings import load_settings
from services.screening.stage import Screener

Call = tuple[Any, ...]


def _capture(lines: list[bytes], partitions: int, batch: int) -> dict[str, Any]:
    """Run the dataflow once; the screener, the review core and the calls they were given."""
    screened: list[Call] = []
    observed: list[Call] = []
    seen: dict[str, Any] = {}
    screen, observe = Screener.__call__, ReviewCore.observe

    def screen_spy(self: Screener, event: Any, memory: Any) -> Any:
        seen["screener"] = self
        screened.append((event, memory))
        return screen(self, event, memory)

    def observe_spy(self: ReviewCore, event: Any, findings: Any, report: Any, st: Any, **kw: Any):  # type: ignore[no-untyped-def]
        seen["core"] = self
        observed.append((event, list(findings), report, kw))
        return observe(self, event, findings, report, st, **kw)

    Screener.__call__ = screen_spy  # type: ignore[method-assign]
    ReviewCore.observe = observe_spy  # type: ignore[method-assign]
    try:
        asyncio.run(W._run(lines, partitions, batch))
    finally:
        Screener.__call__ = screen  # type: ignore[method-assign]
        ReviewCore.observe = observe  # type: ignore[method-assign]
    return {"screen": screened, "review": observed, **seen}


#: A replay: runs the calls, calling ``tick()`` after every chunk of them.
Replay = Callable[[Callable[[], None]], None]
CHUNK = 100


def _screen_replay(screener: Screener, calls: list[Call]) -> Replay:
    def run(tick: Callable[[], None]) -> None:
        for i, (event, memory) in enumerate(calls):
            screener(event, memory)
            if i % CHUNK == CHUNK - 1:
                tick()
        tick()

    return run


def _review_replay(core: ReviewCore, calls: list[Call], batch: int) -> Replay:
    specs = review_specs(load_settings(), core.policy)

    def run(tick: Callable[[], None]) -> None:
        core.forget_caches()
        states: dict[int | None, ReviewState] = {}
        for i, (event, findings, report, kw) in enumerate(calls):
            st = states.get(kw.get("partition"))
            if st is None:
                st = states[kw.get("partition")] = ReviewState(
                    items=MemoryStore(specs["review-items"]),
                    context=MemoryStore(specs["review-context"]),
                    caps=MemoryStore(specs["review-caps"]),
                )
            for store in st.stores():
                store.now = kw["at"].timestamp()
            core.observe(event, findings, report, st, **kw)
            if i % batch == batch - 1:
                core.flush()
            if i % CHUNK == CHUNK - 1:
                tick()
        core.flush()
        tick()

    return run


class _Chunks:
    """``tick`` records the CPU time since the previous tick."""

    def __init__(self) -> None:
        self.times: list[float] = []
        self.last = time.process_time()

    def tick(self) -> None:
        now = time.process_time()
        self.times.append(now - self.last)
        self.last = now


def _best(run: Replay, repeat: int) -> float:
    """The sum over chunks of each chunk's best CPU time in ``repeat`` replays."""
    run(lambda: None)  # warm
    best: list[float] = []
    for _ in range(repeat):
        chunks = _Chunks()
        run(chunks.tick)
        times = chunks.times
        best = times if not best else [min(a, b) for a, b in zip(best, times, strict=True)]
    return sum(best)


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mix", choices=("examples", "rag"), default="examples")
    ap.add_argument("--events", type=int, default=5_000)
    ap.add_argument("--stage", choices=("screen", "review", "both"), default="both")
    ap.add_argument("--partitions", type=int, default=4)
    ap.add_argument("--batch", type=int, default=500)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--cprofile", type=int, default=0, help="print the top N functions")
    ap.add_argument("--sort", default="tottime")
    args = ap.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        lines = W._lines(args.mix, args.events, Path(tmp))
    got = _capture(lines, args.partitions, args.batch)
    runs: dict[str, tuple[Replay, int]] = {}
    if args.stage in ("screen", "both"):
        runs["screen"] = (_screen_replay(got["screener"], got["screen"]), len(got["screen"]))
    if args.stage in ("review", "both"):
        replay = _review_replay(got["core"], got["review"], args.batch)
        runs["review"] = (replay, len(got["review"]))
    result: dict[str, Any] = {"mix": args.mix, "events": args.events}
    for name, (run, calls) in runs.items():
        result[f"{name}_calls"] = calls
        result[f"{name}_us_per_call"] = round(_best(run, args.repeat) / calls * 1e6, 1)
        if args.cprofile:
            prof = cProfile.Profile()
            prof.enable()
            run(lambda: None)
            prof.disable()
            out = io.StringIO()
            pstats.Stats(prof, stream=out).sort_stats(args.sort).print_stats(args.cprofile)
            print(f"== {name}\n{out.getvalue()}")
    print(json.dumps(result))


if __name__ == "__main__":
    main()
