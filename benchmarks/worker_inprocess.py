"""The worker's dataflow in one process, without Kafka or Faust: CPU per event of the runner.

:class:`~services.streaming.runner.StreamRunner` over in-memory stores, fed the events of a
benchmark mix in batches per partition (the input keyed by conversation, as on the topic), with
the internal channels looped back as the worker's agents would take them: the eval-set summaries
to :meth:`StreamRunner.samples`, the sampler's decisions to :meth:`StreamRunner.decisions`
(with ``--deferred``, claim-check requests to :meth:`StreamRunner.check`, without a judge).
Every other emit is encoded (as the producer would) and dropped. What this leaves out is Kafka
and Faust, and RocksDB unless ``--store rocksdb`` (``benchmarks/streaming.py`` measures them
through the broker); what it measures is the dataflow's own cost in the worker's composition,
repeatable and profilable::

    taskset -c 1 .venv/bin/python benchmarks/worker_inprocess.py --mix examples --events 20000
    .venv/bin/python benchmarks/worker_inprocess.py --mix rag --events 5000 --cprofile 40

``--store rocksdb`` keeps the state in the worker's RocksDB partitions (its options, written
directly, no changelog), ``--tick-every N`` fires the sampler's timer every N events (closing
and retiring periods, as the worker's 30-second timer does), ``--segment N`` reports the CPU per
event every N events (with RocksDB: point reads per event, the share of misses, µs per read),
and ``--cycle-shift`` spaces the example log's cycles in time (``BENCHMARKS.md`` section 8)::

    taskset -c 1 .venv/bin/python benchmarks/worker_inprocess.py --mix examples --events 200000 \
        --store rocksdb --tick-every 10000 --segment 25000 --cycle-shift 414

``evalset_sha256`` hashes every eval-set record sent, in order, and ``findings_sha256`` every
record of every channel (findings, review, checks, samples, decisions, cases …), in order,
encoded: a change meant to leave the worker's outputs as they were must leave both as they
were. Pin ``PYTHONHASHSEED`` to compare two runs (a summary's categories are a set, serialised
in the order of the strings' hashes).
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import gc
import hashlib
import io
import json
import os
import pstats
import resource
import shutil
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import _common as C
import _procs as P
from prometheus_client import CollectorRegistry

from services.cyclegc import tune_collector
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
        #: Every record of every channel, in the order sent (channel, partition, key, value).
        self.findings = hashlib.sha256()
        #: Encodes eval-set cases (timed apart by :class:`Split`: the producer's share).
        self.encode = encode

    async def __call__(self, emit: Emit) -> asyncio.Future[Any]:
        data = (self.encode if emit.channel in (CASES, ARCHIVE) else encode)(emit.value)
        if emit.channel in (SAMPLES, DECISIONS, CHECKS):
            self.queued[emit.channel].append(emit)
        else:
            self.bytes += len(data or b"")
        parts = (emit.channel.encode(), str(emit.partition).encode(), emit.key, data)
        for part in parts:
            self.findings.update(b"-" if part is None else len(part).to_bytes(8, "big") + part)
        if emit.channel.startswith("evalset."):
            for part in parts:
                self.digest.update(b"-" if part is None else len(part).to_bytes(8, "big") + part)
        self.counts[emit.channel] += 1
        fut: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        fut.set_result(None)
        return fut


def _lines(mix: str, n: int, folder: Path, shift: float = C.DAY_SECONDS) -> list[bytes]:
    path = folder / f"{mix}.jsonl"
    if mix == "examples":
        C.write_example_file(path, n, shift_seconds=shift)
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


class LocalRocks:
    """The worker's RocksDB partitions (its options: :class:`BoundedRocksDBOptions`) opened
    without Faust, for :class:`DirectBackend`: what Faust's store offers the backend."""

    def __init__(self, settings: Settings, folder: Path) -> None:
        from services.streaming.app import BoundedRocksDBOptions, _table_options

        options = _table_options(settings) or {}
        self.options = BoundedRocksDBOptions(**options, use_rocksdict=True)
        self.folder = folder
        self._dbs: dict[int, Any] = {}

    def _db_for_partition(self, partition: int) -> Any:
        import rocksdict

        db = self._dbs.get(partition)
        if db is None:
            path = str(self.folder / f"state-{partition}.db")
            db = self._dbs[partition] = rocksdict.Rdict(path, options=self.options.as_options())
        return db

    def close(self) -> None:
        for db in self._dbs.values():
            db.close()

    def memory_mib(self) -> dict[str, float]:
        """What RocksDB holds in memory over every partition, MiB: the one block cache they
        share (index and filter blocks, and the memtables charged to it) and the memtables."""
        cache = self.options.shared()[0].get_usage()
        tables = sum(
            db.property_int_value("rocksdb.cur-size-all-mem-tables") or 0
            for db in self._dbs.values()
        )
        return {
            "rocksdb_cache_mib": round(cache / 2**20, 1),
            "rocksdb_memtables_mib": round(tables / 2**20, 1),
        }


def _rocks_states(flow: Dataflow, settings: Settings, folder: Path) -> Any:
    """:class:`FaustStates` over local RocksDB partitions, each write straight into its store
    (no changelog: that is the broker's share, measured by ``benchmarks/streaming.py``)."""
    from types import SimpleNamespace

    from services.streaming.state import FaustStates, TableBackend

    class DirectBackend(TableBackend):
        def __init__(self, table: Any) -> None:
            super().__init__(table)
            #: reads of the local store: [hits, misses, seconds in them] (for ``segments``)
            self.reads: list[float] = [0, 0, 0.0]

        def put(self, partition: int, key: bytes, value: bytes | None) -> None:
            self._store_put(partition, key, value)

        def get(self, partition: int, key: bytes) -> bytes | None:
            start = time.perf_counter()
            value = super().get(partition, key)
            self.reads[0 if value is not None else 1] += 1
            self.reads[2] += time.perf_counter() - start
            return value

    backend = DirectBackend(SimpleNamespace(data=LocalRocks(settings, folder)))
    return FaustStates(backend, flow.specs), backend


class GcTime:
    """CPU seconds and count of the cyclic collector's collections by generation, while
    installed (``gc.callbacks``): cProfile charges a collection to whichever allocation
    triggered it, so it never shows as a line of its own (``BENCHMARKS.md`` section 12)."""

    def __init__(self) -> None:
        self.cpu = [0.0, 0.0, 0.0]
        self.count = [0, 0, 0]
        self._start = 0.0

    def __call__(self, phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            self._start = time.process_time()
        else:
            self.cpu[info["generation"]] += time.process_time() - self._start
            self.count[info["generation"]] += 1

    def report(self) -> dict[str, Any]:
        return {"cpu_s": round(sum(self.cpu), 3), "collections": self.count}


def _rss_mib() -> float:
    """The process's resident memory now, MiB."""
    return round((P.tree_rss_kib(os.getpid()) or 0) / 1024, 1)


async def _run(
    lines: list[bytes],
    partitions: int,
    batch: int,
    *,
    deferred: bool = False,
    store: str = "memory",
    tick_every: int = 0,
    segment: int = 0,
) -> dict[str, Any]:
    folder = Path(tempfile.mkdtemp())
    settings = Settings(store="rocksdb://" if store == "rocksdb" else "memory://", data_dir=folder)
    tune_collector(settings.gc_gen0_threshold)  # as `vigil worker` does at start
    flow = Dataflow(settings, CollectorRegistry(), clock="wall", partitions=partitions)
    sink = LoopSink()
    states: Any = MemoryStates(flow)
    backend: Any = None
    if store == "rocksdb":
        states, backend = _rocks_states(flow, settings, folder)
    runner = StreamRunner(flow, states, sink, deferred=deferred)
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

    # Round-robin over partitions, a batch at a time, as one worker holding them all would;
    # with ``tick_every``, the sampler's timer (closing and retiring periods) every so many
    # events, as the worker's fires every 30 s.
    cursors = dict.fromkeys(per_part, 0)
    collector = GcTime()
    gc.callbacks.append(collector)
    cpu0 = time.process_time()
    wall0 = time.perf_counter()
    done = ticked = 0
    segments: list[dict[str, float]] = []
    seg_cpu, seg_done = cpu0, 0
    while any(cursors[p] < len(per_part[p]) for p in per_part):
        for p, recs in per_part.items():
            i = cursors[p]
            if i >= len(recs):
                continue
            cursors[p] = i + batch
            await runner.screen(recs[i : i + batch])
            await drain_internal()
            done += len(recs[i : i + batch])
            if tick_every and done - ticked >= tick_every:
                ticked = done
                await runner.tick_sampler()
                await drain_internal()
            if segment and done - seg_done >= segment:
                now = time.process_time()
                row = {
                    "events": done,
                    "us_per_event": round((now - seg_cpu) / (done - seg_done) * 1e6, 1),
                    "rss_mib": _rss_mib(),
                }
                if backend is not None:  # point reads of RocksDB in this segment
                    hits, misses, spent = backend.reads
                    row.update(
                        reads_per_event=round((hits + misses) / (done - seg_done), 2),
                        miss_share=round(misses / max(1, hits + misses), 3),
                        us_per_read=round(spent / max(1, hits + misses) * 1e6, 1),
                    )
                    backend.reads[:] = [0, 0, 0.0]
                    row.update(backend.store.memory_mib())
                segments.append(row)
                seg_cpu, seg_done = now, done
    await drain_internal()
    cpu = time.process_time() - cpu0
    wall = time.perf_counter() - wall0
    gc.callbacks.remove(collector)
    if backend is not None:
        backend.store.close()
    shutil.rmtree(folder, ignore_errors=True)
    return {
        "events": len(lines),
        "cpu_s": round(cpu, 3),
        "wall_s": round(wall, 3),
        "us_per_event": round(cpu / len(lines) * 1e6, 1),
        "events_per_cpu_s": round(len(lines) / cpu, 1),
        "emits": dict(sink.counts),
        "evalset_sha256": sink.digest.hexdigest(),
        "findings_sha256": sink.findings.hexdigest(),
        "evalset_us_per_event": split.per_event(len(lines)),
        "gc": collector.report(),
        "maxrss_mib": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
        "segments": segments,
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
    ap.add_argument(
        "--store",
        choices=("memory", "rocksdb"),
        default="memory",
        help="rocksdb: the worker's RocksDB partitions, written directly (no changelog)",
    )
    ap.add_argument(
        "--tick-every", type=int, default=0, help="a sampler tick every N events (0: none)"
    )
    ap.add_argument("--segment", type=int, default=0, help="report CPU per event every N events")
    ap.add_argument(
        "--cycle-shift",
        type=float,
        default=C.DAY_SECONDS,
        help="examples: seconds the timestamps move per cycle of the log (86400: a day, an "
        f"ISO week every ~2,900 events; {C.DENSE_SHIFT:.0f}: about a second per event)",
    )
    args = ap.parse_args(argv)
    opts = {
        "deferred": args.deferred,
        "store": args.store,
        "tick_every": args.tick_every,
        "segment": args.segment,
    }
    with tempfile.TemporaryDirectory() as tmp:
        lines = _lines(args.mix, args.events, Path(tmp), args.cycle_shift)
    if args.cprofile:
        prof = cProfile.Profile()
        prof.enable()
        result = asyncio.run(_run(lines, args.partitions, args.batch, **opts))
        prof.disable()
        out = io.StringIO()
        pstats.Stats(prof, stream=out).sort_stats(args.sort).print_stats(args.cprofile)
        print(out.getvalue())
    else:
        result = asyncio.run(_run(lines, args.partitions, args.batch, **opts))
    result.update(
        mix=args.mix, partitions=args.partitions, batch=args.batch, deferred=args.deferred
    )
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
