"""The worker's dataflow in one process, without Kafka or Faust: CPU per event of the runner.

:class:`~services.streaming.runner.StreamRunner` over in-memory stores, fed the events of a
benchmark mix in batches per partition (the input keyed by conversation, as on the topic), with
the internal channels looped back as the worker's agents would take them: the eval-set summaries
to :meth:`StreamRunner.samples`, the sampler's decisions to :meth:`StreamRunner.decisions`
(with ``--deferred``, claim-check requests to :meth:`StreamRunner.check`, without a judge).
Every other emit is encoded (as the producer would) and dropped. What this leaves out is Kafka,
Faust and RocksDB (``benchmarks/streaming.py`` measures those through the broker); what it
measures is the dataflow's own cost in the worker's composition, repeatable and profilable::

    taskset -c 1 .venv/bin/python benchmarks/worker_inprocess.py --mix examples --events 20000
    .venv/bin/python benchmarks/worker_inprocess.py --mix rag --events 5000 --cprofile 40

``evalset_sha256`` hashes every eval-set record sent, in order: a change meant to leave the
worker's outputs as they were must leave it as it was. Pin ``PYTHONHASHSEED`` to compare two
runs (a summary's categories are a set, serialised in the order of the strings' hashes).
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import hashlib
import io
import json
import pstats
import resource
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import _common as C
from prometheus_client import CollectorRegistry

from services.dataflow.flow import CHECKS, Dataflow
from services.dataflow.partitioning import partition_of
from services.dataflow.records import Emit, encode
from services.evalsets.core import ARCHIVE, CASES, DECISIONS, SAMPLES
from services.settings import Settings
from services.streaming.runner import MemoryStates, Record, StreamRunner

INPUT = "chat.events"


class LoopSink:
    """``send`` for the runner: internal channels queued for their agents, the rest encoded.

    ``digest`` hashes every eval-set record in the order it was sent (channel, partition, key,
    value): a change that must not change the worker's outputs leaves it as it was.
    """

    def __init__(self) -> None:
        self.queued: dict[str, list[Emit]] = defaultdict(list)
        self.counts: dict[str, int] = defaultdict(int)
        self.bytes = 0
        self.digest = hashlib.sha256()
        #: Encodes eval-set cases (timed apart by :class:`Split`: the producer's share).
        self.encode = encode

    async def __call__(self, emit: Emit) -> asyncio.Future[Any]:
        data = (self.encode if emit.channel in (CASES, ARCHIVE) else encode)(emit.value)
        if emit.channel in (SAMPLES, DECISIONS, CHECKS):
            self.queued[emit.channel].append(emit)
        else:
            self.bytes += len(data or b"")
        if emit.channel.startswith("evalset."):
            for part in (emit.channel.encode(), str(emit.partition).encode(), emit.key, data):
                self.digest.update(b"-" if part is None else len(part).to_bytes(8, "big") + part)
        self.counts[emit.channel] += 1
        fut: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        fut.set_result(None)
        return fut


def _lines(mix: str, n: int, folder: Path) -> list[bytes]:
    path = folder / f"{mix}.jsonl"
    if mix == "examples":
        C.write_example_file(path, n)
    else:
        C.write_events_file(path, n, 1024, mix="rag")
    return path.read_bytes().splitlines()[:n]


def _partition(line: bytes, partitions: int) -> tuple[bytes, int]:
    """Kafka's default partition of the conversation (as ``vigil replay`` keys the input): the
    sampler sends its decisions there, so the case side finds the accumulator it built."""
    cid = json.loads(line)["conversation_id"]
    return cid.encode(), partition_of(cid, partitions)


class Split:
    """CPU seconds of the eval-set stage by part: wraps its entry points on the instances (a
    few thousand calls: the wrapping costs nothing measurable). A part called inside another
    (the cases' encoding inside a batch of decisions, a flush inside a decision) counts for
    itself only."""

    def __init__(self) -> None:
        self.cpu: dict[str, float] = defaultdict(float)
        #: CPU of the parts called inside each part running now
        self._inner: list[float] = []

    def _enter(self) -> float:
        self._inner.append(0.0)
        return time.process_time()

    def _leave(self, name: str, start: float) -> None:
        spent = time.process_time() - start
        self.cpu[name] += spent - self._inner.pop()
        if self._inner:
            self._inner[-1] += spent

    def wrap(self, name: str, fn: Any) -> Any:
        def timed(*args: Any, **kwargs: Any) -> Any:
            start = self._enter()
            try:
                return fn(*args, **kwargs)
            finally:
                self._leave(name, start)

        return timed

    def wrap_async(self, name: str, fn: Any) -> Any:
        async def timed(*args: Any, **kwargs: Any) -> Any:
            start = self._enter()  # the awaits below never wait: the sink's futures are done
            try:
                return await fn(*args, **kwargs)
            finally:
                self._leave(name, start)

        return timed

    def install(self, flow: Dataflow, runner: StreamRunner, sink: LoopSink) -> None:
        core = flow.evalsets
        if core is None:
            return
        core.observe = self.wrap("observe", core.observe)  # type: ignore[method-assign]
        core.flush = self.wrap("flush", core.flush)  # type: ignore[method-assign]
        runner.samples = self.wrap_async("samples", runner.samples)  # type: ignore[method-assign]
        runner.decisions = self.wrap_async(  # type: ignore[method-assign]
            "decisions", runner.decisions
        )
        sink.encode = self.wrap("publish", encode)

    def per_event(self, events: int) -> dict[str, float]:
        out = {k: round(v / events * 1e6, 1) for k, v in sorted(self.cpu.items())}
        out["total"] = round(sum(self.cpu.values()) / events * 1e6, 1)
        return out


async def _run(
    lines: list[bytes], partitions: int, batch: int, *, deferred: bool = False
) -> dict[str, Any]:
    settings = Settings(store="memory://", data_dir=Path(tempfile.mkdtemp()))
    flow = Dataflow(settings, CollectorRegistry(), clock="wall", partitions=partitions)
    sink = LoopSink()
    runner = StreamRunner(flow, MemoryStates(flow), sink, deferred=deferred)
    split = Split()
    split.install(flow, runner, sink)
    per_part: dict[int, list[Record]] = defaultdict(list)
    offsets: dict[tuple[str, int], int] = defaultdict(int)

    def record(topic: str, value: bytes, key: bytes | None, part: int) -> Record:
        off = offsets[(topic, part)]
        offsets[(topic, part)] = off + 1
        return Record(value, key, topic, part, off)

    for line in lines:
        key, part = _partition(line, partitions)
        per_part[part].append(record(INPUT, line, key, part))

    async def drain_internal() -> None:
        while sink.queued[SAMPLES] or sink.queued[DECISIONS] or sink.queued[CHECKS]:
            checks, sink.queued[CHECKS] = sink.queued[CHECKS], []
            by_check: dict[int, list[Record]] = defaultdict(list)
            for e in checks:
                p = partition_of(e.key.decode(), partitions) if e.key else 0
                by_check[p].append(record(CHECKS, encode(e.value) or b"", e.key, p))
            for recs in by_check.values():
                await runner.check(recs)
            samples, sink.queued[SAMPLES] = sink.queued[SAMPLES], []
            if samples:
                await runner.samples(
                    [record(SAMPLES, encode(e.value) or b"", e.key, 0) for e in samples]
                )
            decisions, sink.queued[DECISIONS] = sink.queued[DECISIONS], []
            by_part: dict[int, list[Record]] = defaultdict(list)
            for e in decisions:
                p = e.partition or 0
                by_part[p].append(record(DECISIONS, encode(e.value) or b"", e.key, p))
            for recs in by_part.values():
                await runner.decisions(recs)

    # Round-robin over partitions, a batch at a time, as one worker holding them all would.
    cursors = dict.fromkeys(per_part, 0)
    cpu0 = time.process_time()
    wall0 = time.perf_counter()
    while any(cursors[p] < len(per_part[p]) for p in per_part):
        for p, recs in per_part.items():
            i = cursors[p]
            if i >= len(recs):
                continue
            cursors[p] = i + batch
            await runner.screen(recs[i : i + batch])
            await drain_internal()
    await drain_internal()
    cpu = time.process_time() - cpu0
    wall = time.perf_counter() - wall0
    return {
        "events": len(lines),
        "cpu_s": round(cpu, 3),
        "wall_s": round(wall, 3),
        "us_per_event": round(cpu / len(lines) * 1e6, 1),
        "events_per_cpu_s": round(len(lines) / cpu, 1),
        "emits": dict(sink.counts),
        "evalset_sha256": sink.digest.hexdigest(),
        "evalset_us_per_event": split.per_event(len(lines)),
        "maxrss_mib": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
    }


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mix", choices=("examples", "rag"), default="examples")
    ap.add_argument("--events", type=int, default=10_000)
    ap.add_argument("--partitions", type=int, default=4)
    ap.add_argument("--batch", type=int, default=500)
    ap.add_argument("--cprofile", type=int, default=0, help="print the top N functions")
    ap.add_argument(
        "--deferred", action="store_true", help="claim checks on their own channel (no judge)"
    )
    ap.add_argument("--sort", default="cumulative")
    args = ap.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        lines = _lines(args.mix, args.events, Path(tmp))
    if args.cprofile:
        prof = cProfile.Profile()
        prof.enable()
        result = asyncio.run(_run(lines, args.partitions, args.batch, deferred=args.deferred))
        prof.disable()
        out = io.StringIO()
        pstats.Stats(prof, stream=out).sort_stats(args.sort).print_stats(args.cprofile)
        print(out.getvalue())
    else:
        result = asyncio.run(_run(lines, args.partitions, args.batch, deferred=args.deferred))
    result.update(
        mix=args.mix, partitions=args.partitions, batch=args.batch, deferred=args.deferred
    )
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
