"""The worker's runner of the dataflow, broker-free: batches of records in, a list of emits out.

``StreamRunner`` is what the Faust agents call with each batch; here it gets in-memory stores
and a list sink, as quix-streams tests its operators. A last test builds the Faust app itself.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from prometheus_client import CollectorRegistry

from schemas import DeadLetter, Finding, GroundingReport
from services.checking import CheckRequest
from services.dataflow.flow import CHECKS, DLQ, FINDINGS, VERDICTS, Dataflow
from services.dataflow.records import Emit, encode
from services.dataflow.state import StateSpec
from services.evalsets.core import CASES, DECISIONS, SAMPLES
from services.evalsets.state import Selection
from services.evalsets.streaming import Decision, SampleIn, sel_key
from services.settings import Settings
from services.streaming.runner import MemoryStates, Record, StreamRunner, pack, unpack
from services.streaming.state import TableBackend, TableStore

PACK = Path(__file__).parent.parent / "data" / "mini-pack.yaml"


class ListSink:
    """``send`` for the runner: every emit in a list, delivered at once."""

    def __init__(self) -> None:
        self.emits: list[Emit] = []

    async def __call__(self, emit: Emit) -> asyncio.Future[Any]:
        self.emits.append(emit)
        fut: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        fut.set_result(None)
        return fut

    def values(self, channel: str) -> list[bytes]:
        return [v for e in self.emits if e.channel == channel and (v := encode(e.value))]


def _event(turn: int, role: str, content: str, cid: str = "c1") -> bytes:
    return json.dumps(
        {
            "schema_version": 1,
            "event_id": f"{cid}-e{turn}",
            "conversation_id": cid,
            "turn_index": turn,
            "timestamp": "2026-11-02T10:00:00Z",
            "role": role,
            "content": content,
        }
    ).encode()


def _records(*values: bytes, partition: int = 0) -> list[Record]:
    return [Record(v, b"c1", "chat.events", partition, i) for i, v in enumerate(values)]


def _runner(tmp_path: Path, *, deferred: bool) -> tuple[StreamRunner, ListSink, CollectorRegistry]:
    registry = CollectorRegistry()
    # Answers with a leak are decided at once here; holding them is tested in test_reorder.py.
    settings = Settings(
        rules_dir=PACK, data_dir=tmp_path, store="memory://", reorder_window_seconds=0
    )
    flow = Dataflow(settings, registry, clock="wall", partitions=1)
    sink = ListSink()
    runner = StreamRunner(flow, MemoryStates(flow), sink, deferred=deferred, clock=lambda: 1.8e9)
    return runner, sink, registry


async def test_a_batch_is_screened_checked_and_dead_lettered(tmp_path: Path) -> None:
    runner, sink, registry = _runner(tmp_path, deferred=False)
    await runner.screen(
        _records(
            _event(0, "user", "I am anna@example.nl"),
            _event(1, "assistant", "Hi ANNA@example.nl, bob@example.com says hi"),
            b"\xff not utf-8",
        )
    )
    found = [Finding.model_validate_json(v) for v in sink.values(FINDINGS)]
    assert [(f.event_id, f.direction) for f in found] == [
        ("c1-e0", "input"),
        ("c1-e1", "echo"),
        ("c1-e1", "leak"),
    ]
    assert all(e.key == b"c1" for e in sink.emits if e.channel == FINDINGS)
    (dead,) = [DeadLetter.model_validate_json(v) for v in sink.values(DLQ)]
    assert dead.reason == "bad_utf8" and dead.source == "chat.events/0/2"
    # The answer has high-severity findings: always checked, inline without a judge.
    (report,) = [GroundingReport.model_validate_json(v) for v in sink.values(VERDICTS)]
    assert report.event_id == "c1-e1" and report.inclusion_probability == 1.0
    assert "bob@example.com" not in sink.values(VERDICTS)[0].decode()
    memory = runner.states.store("memory", 0)
    assert "anna" not in b"".join(memory[k] for k in memory).decode()
    assert sink.values(SAMPLES), "the eval-set sampler hears of the conversation"
    get = registry.get_sample_value
    assert get("vigil_events_total", {"role": "user", "tenant": "none"}) == 1
    assert get("vigil_invalid_events_total", {"reason": "bad_utf8"}) == 1
    labels = {"rule": "pii.email", "category": "pii", "severity": "high", "direction": "leak"}
    assert get("vigil_findings_total", labels) == 1
    assert get("vigil_sampled_checks_total", {"stratum": "always"}) == 1


async def test_redelivered_batch_keeps_memory_and_counts_idempotent(tmp_path: Path) -> None:
    runner, _, _ = _runner(tmp_path, deferred=False)
    batch = _records(_event(0, "user", "I am anna@example.nl"))
    await runner.screen(batch)
    before = dict(runner.states.store("memory", 0).items())
    await runner.screen(batch)  # at least once: the same offsets again
    assert dict(runner.states.store("memory", 0).items()) == before
    counts = runner.states.store("alerts-window-counts", 0)
    (value,) = [json.loads(counts[k]) for k in counts]
    assert sum(w["m"][m] for w in value["w"].values() for m in w["m"]) == 1


async def test_deferred_checks_go_through_the_checks_channel(tmp_path: Path) -> None:
    runner, sink, _ = _runner(tmp_path, deferred=True)
    await runner.screen(_records(_event(0, "assistant", "Mail bob@example.com now")))
    (raw,) = sink.values(CHECKS)
    request = CheckRequest.model_validate_json(raw)
    assert request.decision.stratum == "always" and not sink.values(VERDICTS)
    sink.emits.clear()
    await runner.check(
        [Record(raw, b"c1", "vigil.checks", 0, 0), Record(b"junk", b"c1", "vigil.checks", 0, 1)]
    )
    (report,) = [GroundingReport.model_validate_json(v) for v in sink.values(VERDICTS)]
    assert report.event_id == "c1-e0"
    (dead,) = [DeadLetter.model_validate_json(v) for v in sink.values(DLQ)]
    assert dead.reason == "processing_error" and dead.source == "vigil.checks/0/1"


def test_the_faust_app_builds_with_its_routes_agents_and_pages(tmp_path: Path) -> None:
    from services.streaming.app import create_app
    from services.streaming.batches import BatchConsumer

    settings = Settings(rules_dir=PACK, data_dir=tmp_path, web_port=6199, store="memory://")
    app = create_app(settings, CollectorRegistry())
    routed = set(app.vigil_routes.handlers)
    assert {settings.input_topic, "vigil.alerts.counts"} <= routed
    assert any(name.endswith("evalset-samples") for name in routed)
    assert {t.get_topic_name() for t in app.topics} >= routed  # the consumer subscribes to them
    assert issubclass(app.transport.Consumer, BatchConsumer)
    agents = {a.name for a in app.agents.values()}
    assert "vigil.check" not in agents  # no judge: the check runs inline
    assert app.vigil_state.name == "state"


def test_a_judge_keeps_the_claim_checks_on_an_agent_of_their_own(tmp_path: Path) -> None:
    from services.streaming.app import create_app

    settings = Settings(
        rules_dir=PACK,
        data_dir=tmp_path,
        web_port=6199,
        store="memory://",
        judge_url="http://127.0.0.1:9/judge",
    )
    app = create_app(settings, CollectorRegistry())
    assert "vigil.check" in {a.name for a in app.agents.values()}
    assert settings.checks_topic not in app.vigil_routes.handlers


def test_the_rocksdb_table_keeps_index_and_filter_blocks_in_its_block_cache(
    tmp_path: Path,
) -> None:
    """The worker's table opens its partitions with :class:`BoundedRocksDBOptions`: a partition
    with table files on disk holds their index and filter blocks in the block cache (bounded by
    ``VIGIL_ROCKSDB_BLOCK_CACHE_BYTES``), not beside it as Faust's own options do."""
    from faust.stores.rocksdb import RocksDBOptions

    from services.streaming.app import BoundedRocksDBOptions, create_app

    app = create_app(
        Settings(rules_dir=PACK, data_dir=tmp_path / "worker", web_port=6199),
        CollectorRegistry(),
    )
    options = app.vigil_state.data.rocksdb_options
    assert isinstance(options, BoundedRocksDBOptions)
    assert options.block_cache_size == Settings().rocksdb_block_cache_bytes

    def readers_and_cache(opts: RocksDBOptions, path: Path) -> tuple[int, int]:
        db = opts.open(path)
        try:
            _fill(db, 20_000)
            assert db[b"1|memory|conversation-00000001"] == b"x" * 64
            readers = int(db.property_value("rocksdb.estimate-table-readers-mem") or 0)
            cached = int(db.property_value("rocksdb.block-cache-usage") or 0)
            return readers, cached
        finally:
            db.close()

    faust_readers, _ = readers_and_cache(RocksDBOptions(use_rocksdict=True), tmp_path / "faust")
    ours_readers, ours_cached = readers_and_cache(options, tmp_path / "ours")
    assert faust_readers > 0  # Faust's options: index and filter beside the cache
    assert ours_readers < faust_readers
    assert ours_cached > 0  # ours: in the cache


def _fill(db: Any, n: int, offset: int = 0) -> None:
    for i in range(offset, offset + n):
        db[b"%d|memory|conversation-%08d" % (i % 4, i)] = b"x" * 64
    db.flush()


def test_every_partition_of_a_worker_shares_one_rocksdb_memory_budget(tmp_path: Path) -> None:
    """However many partitions a worker holds, RocksDB's memory is one budget: every partition
    reads through the same block cache, and their memtables are charged to it. A second
    partition opened beside a first sees the cache the first filled; Faust's own options give
    each partition a cache of its own."""
    from faust.stores.rocksdb import RocksDBOptions

    from services.streaming.app import BoundedRocksDBOptions

    budget = 4 * 1024 * 1024
    ours = BoundedRocksDBOptions(block_cache_size=budget, use_rocksdict=True)
    theirs = RocksDBOptions(block_cache_size=budget, use_rocksdict=True)
    for name, opts, shared in (("ours", ours, True), ("faust", theirs, False)):
        first = opts.open(tmp_path / f"{name}-0")
        second = opts.open(tmp_path / f"{name}-1")
        try:
            _fill(first, 20_000)
            assert first[b"1|memory|conversation-00000001"] == b"x" * 64
            used = int(first.property_value("rocksdb.block-cache-usage") or 0)
            beside = int(second.property_value("rocksdb.block-cache-usage") or 0)
            assert used > 0
            # the empty second partition reports the first's cache when it is shared (read a
            # moment later, so background flushes may move it a little), ~0 when it has its own
            assert (beside > used // 2) is shared, name
            capacity = int(second.property_value("rocksdb.block-cache-capacity") or 0)
            assert capacity == budget
        finally:
            first.close()
            second.close()
    # the memtables count against the cache: writing without a flush raises the cache's usage
    cache = ours.shared()[0]
    db = ours.open(tmp_path / "ours-2")
    try:
        before = cache.get_usage()
        for i in range(5_000):
            db[b"0|memory|unflushed-%08d" % i] = b"y" * 200
        assert cache.get_usage() > before
        assert cache.get_usage() <= budget * 1.25
    finally:
        db.close()


async def _sampled(tmp_path: Path, poison_at: int | None) -> tuple[int, list[bytes], StreamRunner]:
    """Screen a few conversations, then hand their summaries to the sampler as one batch (a
    summary the sampler cannot fold spliced in at ``poison_at``)."""
    runner, sink, _ = _runner(tmp_path, deferred=False)
    events = [
        _event(t, "user" if t % 2 == 0 else "assistant", f"question {t} about paracetamol", cid)
        for cid in ("c1", "c2", "c3", "c4")
        for t in range(4)
    ]
    await runner.screen([Record(e, b"k", "chat.events", 0, i) for i, e in enumerate(events)])
    packed = sink.values(SAMPLES)
    assert len(packed) == 1  # one batch, one partition: one record
    samples = [
        m.model_dump_json().encode()
        for m in unpack(Record(packed[0], None, "samples", 0, 0), SampleIn)
    ]
    assert len(samples) >= 4
    if poison_at is not None:
        bad = SampleIn(kind="summary", summary=None, partition=0, timestamp=1.8e9)
        samples.insert(poison_at, bad.model_dump_json().encode())
    sink.emits.clear()
    folded = await runner.samples([Record(v, b"k", "samples", 0, i) for i, v in enumerate(samples)])
    return folded, sink.values(DECISIONS), runner


async def test_the_sampler_commits_a_batch_and_drops_only_a_failing_summary(
    tmp_path: Path,
) -> None:
    folded, decisions, _ = await _sampled(tmp_path / "a", None)
    poisoned, decided, runner = await _sampled(tmp_path / "b", 2)
    assert poisoned == folded > 0

    def conversations(values: list[bytes]) -> list[str | None]:
        records = [Record(v, None, "decisions", 0, i) for i, v in enumerate(values)]
        return [d.conversation_id for r in records for d in unpack(r, Decision)]

    assert conversations(decided) == conversations(decisions)
    # The batch's state was committed: a fresh sampler over the same store knows every member.
    runner.reset()
    assert runner.sampler.periods()
    assert len(runner.sampler.sampler.members) == folded


def test_internal_messages_travel_packed_per_partition_and_unpack_alike() -> None:
    decisions = [
        Decision(kind="update", period="2026-W45", partition=p, conversation_id=f"c{i}")
        for i, p in enumerate([0, 1, 0, 1, 0])
    ]
    other = Emit(FINDINGS, b"k", b"{}")
    emits = [Emit(DECISIONS, b"x", d, d.partition) for d in decisions]
    size = len(encode(decisions[0]) or b"")
    out = pack([emits[0], other, *emits[1:]], limit=2 * size + 3)
    assert out[0] is other
    by_partition: dict[int | None, list[str | None]] = {}
    for emit in out[1:]:
        assert emit.channel == DECISIONS and isinstance(emit.value, bytes)
        got = unpack(Record(emit.value, None, "d", emit.partition or 0, 0), Decision)
        assert 1 <= len(got) <= 2  # split at the limit
        by_partition.setdefault(emit.partition, []).extend(d.conversation_id for d in got)
    assert by_partition == {0: ["c0", "c2", "c4"], 1: ["c1", "c3"]}
    single = Record(encode(decisions[1]) or b"", None, "d", 1, 0)
    assert unpack(single, Decision) == [decisions[1]]


class SlowFirstCase(ListSink):
    """A producer whose first eval-set case waits (its partition's batch is full, say) until
    released; every other record goes through at once."""

    def __init__(self) -> None:
        super().__init__()
        self.waiting = asyncio.Event()
        self.release = asyncio.Event()
        self.slow = False

    async def __call__(self, emit: Emit) -> asyncio.Future[Any]:
        if emit.channel == CASES and self.slow:
            self.slow = False
            self.waiting.set()
            await self.release.wait()
        return await super().__call__(emit)


async def test_a_case_computed_before_a_tombstone_never_lands_after_it(tmp_path: Path) -> None:
    """The screening agent updates a selected conversation's case while the decisions agent
    drops the conversation: however long the producer keeps the first waiting, the compacted
    case topic must end with the tombstone, as the state does."""
    runner, _, _ = _runner(tmp_path, deferred=False)
    sink = SlowFirstCase()
    runner.send = sink
    await runner.screen(_records(_event(0, "user", "How much paracetamol may I take?")))
    period = "2026-W45"  # 2026-11-02, the events' day, in the default ISO-week periods
    selection = Selection(
        period=period,
        conversation_id="c1",
        stratum="unflagged|en|-",
        flag_stratum="unflagged",
        language="en",
        tenant="-",
        inclusion_probability=1.0,
        inclusion_final=False,
        stratum_population=1,
        priority=0.5,
        categories=(),
        sources=(),
    )

    def decision(offset: int, selected: Selection | None) -> list[Record]:
        d = Decision(
            kind="update", period=period, partition=0, conversation_id="c1", selection=selected
        )
        return [Record(d.model_dump_json().encode(), b"c1", "decisions", 0, offset)]

    await runner.decisions(decision(0, selection))
    case_id = f"{period}:c1"
    assert [e.key for e in sink.emits if e.channel == CASES] == [case_id.encode()]

    sink.emits.clear()
    sink.slow = True
    answer = _event(1, "assistant", "Adults take 500 mg up to four times a day.")
    screening = asyncio.create_task(runner.screen(_records(answer)))
    await sink.waiting.wait()  # the updated case is computed; its send waits
    dropping = asyncio.create_task(runner.decisions(decision(1, None)))
    for _ in range(50):  # let the decisions agent run as far as it can
        await asyncio.sleep(0)
    sink.release.set()
    await asyncio.gather(screening, dropping)

    cases = [e for e in sink.emits if e.channel == CASES and e.key == case_id.encode()]
    assert [e.value is None for e in cases] == [False, True], "the update, then the tombstone"
    assert runner.partition_state(0).cases is not None
    assert not any(k.startswith("0|S|") for k in runner.partition_state(0).cases)


class _Producer:
    """The broker side of a changelog, as the backend sees it: each ``send`` waits for the test
    to acknowledge it (a real broker runs in tests/integration)."""

    def __init__(self) -> None:
        self.sent: list[tuple[bytes, bytes | None, asyncio.Future[Any]]] = []

    async def send(
        self, topic: str, key: bytes, value: bytes | None, partition: int, *_: Any
    ) -> Any:
        fut: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self.sent.append((key, value, fut))
        return fut

    def ack(self, n: int) -> None:
        for i, (_, _, fut) in enumerate(self.sent[:n]):
            tp = SimpleNamespace(topic="changelog", partition=0)
            fut.set_result(SimpleNamespace(topic_partition=tp, offset=i))
        del self.sent[:n]


async def test_the_local_store_holds_only_writes_the_changelog_acknowledged() -> None:
    """A worker killed with changelog records in flight restarts on its own data dir: the local
    store must then hold what the changelog holds, not a deletion the changelog never saw."""
    import faust

    app = faust.App("t-backend", store="memory://")
    table = app.Table("state", default=None, partitions=1, key_type=bytes, value_type=bytes)
    producer = _Producer()

    async def start_producer() -> _Producer:
        return producer

    app.maybe_start_producer = start_producer  # type: ignore[method-assign]
    spec = StateSpec(kind="sel", max_entries=10, max_value_bytes=64)
    store = TableStore(spec, TableBackend(table), 0)
    store["a"] = b"selected"
    store["b"] = b"other"
    store.flush()
    await store.backend.drain()
    producer.ack(2)
    await asyncio.sleep(0)
    del store["a"]
    store["b"] = b"changed"
    store.flush()
    await store.backend.drain()
    # This worker reads its own writes at once ...
    assert "a" not in store and store["b"] == b"changed"
    assert [k for k, _ in store.scan_prefix("")] == ["b"]
    assert store.keys_with_prefix("") == ["b"]
    # ... but a worker restarting on the same local store now (SIGKILL) finds the changelog's
    # state: the deletion and the change are not acknowledged.
    restarted = TableStore(spec, TableBackend(table), 0)
    assert restarted["a"] == b"selected" and restarted["b"] == b"other"
    producer.ack(2)
    await asyncio.sleep(0)
    restarted = TableStore(spec, TableBackend(table), 0)
    assert "a" not in restarted and restarted["b"] == b"changed"
    assert dict(store.scan_prefix("")) == {"b": b"changed"}


def test_a_table_store_pops_with_one_read_and_as_a_mapping_does() -> None:
    """Retiring a period pops thousands of keys: ``MutableMapping.pop`` read each one three
    times from RocksDB (get, then contains for the delete)."""
    import faust

    app = faust.App("t-pop", store="memory://")
    table = app.Table("state", default=None, partitions=1, key_type=bytes, value_type=bytes)
    backend = TableBackend(table)
    reads: list[bytes] = []
    read = backend.get

    def counted(partition: int, key: bytes) -> bytes | None:
        reads.append(key)
        return read(partition, key)

    backend.get = counted  # type: ignore[method-assign]
    store = TableStore(StateSpec(kind="k", max_entries=10, max_value_bytes=64), backend, 0)
    backend._store_put(0, b"0|k|a", b"\0" * 8 + b"one")
    assert store.pop("a") == b"one" and len(reads) == 1
    assert "a" not in store and store.pop("a", None) is None
    with pytest.raises(KeyError):
        store.pop("a")
    store["b"] = b"two"
    assert store.pop("b", None) == b"two" and "b" not in store


def test_a_table_store_deletes_a_key_it_holds_without_reading_it() -> None:
    """A period's close deletes every accumulator it listed: no read of the value (KiBs from
    RocksDB each), and the deletion is the tombstone a pop would have written."""
    import faust

    app = faust.App("t-delete-present", store="memory://")
    table = app.Table("state", default=None, partitions=1, key_type=bytes, value_type=bytes)
    backend = TableBackend(table)
    reads: list[bytes] = []
    puts: list[tuple[bytes, bytes | None]] = []
    read = backend.get
    backend.get = lambda p, k: reads.append(k) or read(p, k)  # type: ignore[method-assign]
    backend.put = lambda p, k, v: puts.append((k, v))  # type: ignore[method-assign]
    store = TableStore(StateSpec(kind="k", max_entries=10, max_value_bytes=64), backend, 0)
    backend._store_put(0, b"0|k|a", b"\0" * 8 + b"one")
    store.delete_present("a")
    assert not reads
    store.flush()
    assert puts == [(b"0|k|a", None)]


def test_a_table_store_streams_a_prefix_in_key_order_with_its_unacknowledged_writes() -> None:
    """``stream_prefix`` sees what ``scan_prefix`` sees (writes in flight over the local
    store, deletions hiding keys), in key order, one value at a time."""
    import faust

    app = faust.App("t-stream", store="memory://")
    table = app.Table("state", default=None, partitions=2, key_type=bytes, value_type=bytes)
    backend = TableBackend(table)
    store = TableStore(StateSpec(kind="k", max_entries=10, max_value_bytes=64), backend, 0)
    stamp = b"\0" * 8
    for key in (b"0|k|p|e", b"0|k|p|c", b"0|k|p|a", b"0|k|q|a", b"1|k|p|b"):
        backend._store_put(0 if key[0:1] == b"0" else 1, key, stamp + key)
    loop = asyncio.new_event_loop()
    try:
        for key, value in ((b"0|k|p|b", b"new"), (b"0|k|p|c", None), (b"0|k|p|e", b"changed")):
            backend._unacked[key] = (
                0,
                None if value is None else stamp + value,
                loop.create_future(),
            )
        backend._unacked[b"1|k|p|d"] = (1, stamp + b"other", loop.create_future())
        streamed = list(store.stream_prefix("p|"))
        assert streamed == list(store.scan_prefix("p|"))
        assert streamed == [
            ("p|a", b"0|k|p|a"),
            ("p|b", b"new"),
            ("p|e", b"changed"),
        ]
    finally:
        loop.close()


class YieldingSink(ListSink):
    """A sink that lets other tasks run before each record is taken, as a producer does."""

    async def __call__(self, emit: Emit) -> asyncio.Future[Any]:
        await asyncio.sleep(0)
        return await super().__call__(emit)


async def test_a_case_screened_while_its_eviction_is_applied_ends_evicted(tmp_path: Path) -> None:
    # Screening and the decisions agent share a partition's cases: a screening batch that
    # computed a case before an eviction must not publish it after the eviction's tombstone,
    # or the evicted case stays live on the compacted topic.
    _, decisions, runner = await _sampled(tmp_path, None)
    sink = YieldingSink()
    runner.send = sink
    records = [Record(v, None, "decisions", 0, i) for i, v in enumerate(decisions)]
    await runner.decisions(records)
    selected = [
        d
        for r in records
        for d in unpack(r, Decision)
        if d.kind == "update" and d.selection is not None
    ]
    assert selected and sink.values(CASES)
    chosen = selected[0]
    cid = chosen.conversation_id
    assert cid is not None
    key = f"{chosen.period}:{cid}".encode()
    evict = Decision(kind="update", period=chosen.period, partition=0, conversation_id=cid)
    sink.emits.clear()
    more = [_event(t, "user", f"more about paracetamol {t}", cid) for t in (10, 12)]
    await asyncio.gather(
        runner.screen([Record(e, b"k", "chat.events", 0, 100 + i) for i, e in enumerate(more)]),
        runner.decisions([Record(evict.model_dump_json().encode(), None, "decisions", 0, 99)]),
    )
    of_case = [e for e in sink.emits if e.channel == CASES and e.key == key]
    assert of_case and of_case[-1].value is None, [e.value is None for e in of_case]


async def test_the_close_tombstones_a_case_whose_selection_the_state_lost(tmp_path: Path) -> None:
    # A worker killed after its state dropped a selection but before the case's tombstone
    # reached the topic leaves a live case that no state remembers: the final sync of the
    # period tombstones the case of every conversation it does not keep.
    _, decisions, runner = await _sampled(tmp_path, None)
    records = [Record(v, None, "decisions", 0, i) for i, v in enumerate(decisions)]
    await runner.decisions(records)
    chosen = next(
        d for r in records for d in unpack(r, Decision) if d.kind == "update" and d.selection
    )
    assert chosen.conversation_id is not None
    cases = runner.partition_state(0).cases
    assert cases is not None
    cases.pop(sel_key(0, chosen.period, chosen.conversation_id))  # the lost selection
    cases.flush()
    sink = ListSink()
    runner.send = sink
    close = Decision(kind="sync", period=chosen.period, partition=0, keep=[], final=True)
    await runner.decisions([Record(close.model_dump_json().encode(), None, "decisions", 0, 99)])
    key = f"{chosen.period}:{chosen.conversation_id}".encode()
    assert [e.value for e in sink.emits if e.channel == CASES and e.key == key] == [None]


async def test_an_undelivered_changelog_record_is_logged_by_kind_and_cause_never_key(
    caplog: Any,
) -> None:
    class TooLarge(Exception):
        pass

    backend = TableBackend(table=None)
    done: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
    try:
        raise RuntimeError("send failed") from TooLarge()
    except RuntimeError as exc:
        backend._failed(done, exc, b"3|review-items|conv-secret-id")
    assert backend.failed == 1 and isinstance(done.exception(), RuntimeError)
    (message,) = [r.getMessage() for r in caplog.records if "not delivered" in r.getMessage()]
    assert (
        message == "a changelog record of review-items was not delivered: RuntimeError (TooLarge)"
    )
    assert "conv-secret-id" not in caplog.text
