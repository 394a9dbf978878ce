"""The Faust runner of the dataflow: ``vigil worker``.

It supplies only I/O and the store around :class:`~services.dataflow.flow.Dataflow`:

- **input**: the consumer hands each fetched batch of ``chat.events`` (at most
  ``VIGIL_BATCH_SIZE`` records) straight to :class:`~services.streaming.runner.StreamRunner`
  (a *route*, :mod:`services.streaming.batches`: no Faust stream per message in between); with a
  judge configured, sampled answers go to the claim-check agent over ``vigil.checks`` so a slow
  judge never stalls screening;
- **state**: one Faust table, ``state``, on RocksDB by default (``VIGIL_STORE``), every kind
  under its partition (:mod:`services.streaming.state`); expired keys are deleted by a timer;
- **output**: every channel of the dataflow is a topic (:func:`channel_topics`); records go to
  the producer a batch at a time.

The review queue, the evaluation sets and the spike detector add their own routes, timers and
web routes on top (``services/streaming/features/``), each thin wiring over its pure core.
Routes run one batch at a time, in the consumer's drain loop; the one agent (the claim checks
with a judge) runs with ``concurrency=1`` (faust-streaming #606). Scale with partitions and
worker processes. Topics with the input's partition count are co-partitioned, so a
conversation's events, its state and its internal records all live on the same worker. The
eval-set sampler and the spike detector are one per stream, on partition 0 (see
``docs/streaming.md``).
"""

from __future__ import annotations

import asyncio
import importlib
import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from functools import partial
from typing import Any, Final

import faust
from faust.sensors.prometheus import setup_prometheus_sensors
from faust.stores.rocksdb import RocksDBOptions
from prometheus_client import CollectorRegistry, Counter, generate_latest
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector

from services.checking import judge_config
from services.dataflow.flow import CHECKS, DLQ, FINDINGS, VERDICTS, Dataflow
from services.dataflow.records import Emit, encode
from services.dataflow.state import check_ceilings
from services.judge import Judge
from services.settings import Settings
from services.streaming.batches import (
    BatchConsumer,
    BatchRoutes,
    Handler,
    ReadOffsets,
    fresh_records,
)
from services.streaming.features import feature_modules
from services.streaming.heap import heap_trimmer
from services.streaming.produce import OutBatch, batch_producer
from services.streaming.runner import Record, StreamRunner
from services.streaming.state import STATE_TABLE, FaustStates, TableBackend
from services.streaming.transactions import Transactions

__all__ = [
    "WorkerContext",
    "channel_topics",
    "consume_batches",
    "create_app",
    "kafka_broker_url",
    "owned_partitions",
    "serving",
]

#: Feature modules, each with ``register(ctx: WorkerContext) -> None``: every module in
#: ``services/streaming/features/``.
FEATURES: tuple[str, ...] = feature_modules()

log = logging.getLogger("vigil.worker")


@dataclass
class WorkerContext:
    """What a feature module needs to plug into the worker."""

    app: faust.App
    settings: Settings
    flow: Dataflow
    runner: StreamRunner
    registry: CollectorRegistry
    backend: TableBackend
    #: channel -> topic name (features add theirs).
    channels: dict[str, str]
    topics: dict[str, Any] = field(default_factory=dict)
    #: consumed topic -> its label in ``vigil_consumer_lag_records``.
    consumed: dict[str, str] = field(default_factory=dict)
    #: Called after a rebalance or a recovery (caches must be dropped).
    on_reset: list[Callable[[], None]] = field(default_factory=list)

    @property
    def routes(self) -> BatchRoutes:
        """The topics whose batches go straight to their handlers (:mod:`.batches`)."""
        return self.app.vigil_routes  # type: ignore[attr-defined, no-any-return]


def kafka_broker_url(settings: Settings) -> str:
    return ",".join(f"kafka://{hp.strip()}" for hp in settings.kafka_bootstrap.split(","))


def _broker_credentials(settings: Settings) -> Any:
    if settings.kafka_sasl_mechanism is None:
        return None
    password = (
        settings.kafka_sasl_password.get_secret_value() if settings.kafka_sasl_password else ""
    )
    return faust.SASLCredentials(
        username=settings.kafka_sasl_username or "",
        password=password,
        mechanism=settings.kafka_sasl_mechanism,
    )


def channel_topics(settings: Settings) -> dict[str, str]:
    """The topics of the dataflow's own channels (features add theirs)."""
    return {
        FINDINGS: settings.findings_topic,
        DLQ: settings.dlq_topic,
        VERDICTS: settings.verdicts_topic,
        CHECKS: settings.checks_topic,
    }


def serving(app: Any) -> bool:
    """Whether the tables are recovered and no rebalance is under way."""
    if getattr(app, "rebalancing", False) or getattr(app, "in_recovery", False):
        return False
    try:
        return bool(app.tables.recovery.completed.is_set())
    except AttributeError:
        return False


def owned_partitions(app: Any, topic: str) -> set[int]:
    """The partitions of ``topic`` this worker holds as active."""
    try:
        actives = app.assignor.assigned_actives()
    except Exception:
        return set()
    return {tp.partition for tp in actives if tp.topic == topic}


def records_of(app: Any, events: Any) -> list[Record]:
    """The records of a batch of Faust events (an agent's), filtered as a route's are
    (:func:`~services.streaming.batches.fresh_records`)."""
    return fresh_records(app, [ev.message for ev in events])


def process_batch(app: Any) -> Any:
    """How the worker runs one batch: ``handle(records)`` then ``ack()``; in exactly-once mode
    in the batch's transactions (:mod:`services.streaming.transactions`)."""
    transactions: Transactions | None = getattr(app, "vigil_transactions", None)
    if transactions is not None:
        return transactions.process

    async def process(records: list[Record], handle: Handler, ack: Callable[[], None]) -> None:
        if records:
            await handle(records)
        ack()

    return process


async def consume_batches(
    app: Any, stream: Any, settings: Settings, handle: Callable[[list[Record]], Awaitable[Any]]
) -> None:
    """The loop of an agent (a topic that is not a route: the claim checks with a judge):
    batches of ``stream.take_events``, each run by :func:`process_batch` and acknowledged
    when ``handle`` returns, stale records dropped."""
    process = process_batch(app)
    async for events in stream.take_events(settings.batch_size, within=settings.batch_seconds):

        def ack(events: list[Any] = events) -> None:
            for event in events:
                event.ack()

        await process(records_of(app, events), handle, ack)


class FaustSender:
    """``send(emit)`` for the runner: the emit's channel topic, at least once in batches per
    topic partition (:mod:`services.streaming.produce`, sent by :meth:`flush`), with
    ``exactly_once`` one by one through the producer Faust hands out
    (:meth:`faust.App.maybe_start_producer`: the transaction manager, which puts the record in
    the transaction of the batch being processed, none outside a batch;
    :mod:`services.streaming.transactions`); ``app.producer`` would bypass it."""

    def __init__(self, app: faust.App, channels: dict[str, str], registry: CollectorRegistry):
        self.app = app
        self.channels = channels
        self.emitted = Counter(
            "vigil_emitted_records_total",
            "Records the worker produced, by channel (tombstones included).",
            ["channel"],
            registry=registry,
        )
        self.failed = Counter(
            "vigil_emit_failures_total",
            "Produced records the broker did not acknowledge, by channel.",
            ["channel"],
            registry=registry,
        )
        self._children: dict[str, Any] = {}
        #: The records handed since the last :meth:`flush`, at least once.
        self._out: OutBatch | None = None

    def _count(self, channel: str) -> Any:
        child = self._children.get(channel)
        if child is None:
            child = self._children[channel] = self.emitted.labels(channel)
            self.failed.labels(channel)
        return child

    async def __call__(self, emit: Emit) -> asyncio.Future[Any]:
        topic = self.channels[emit.channel]
        value = encode(emit.value)
        if self._out is None:
            batched = await batch_producer(self.app)
            self._out = OutBatch(batched) if batched is not None else None
        future: asyncio.Future[Any]
        if self._out is not None:
            future = (await self._out.add(topic, emit.partition, emit.key, value)).future
        else:
            producer = await self.app.maybe_start_producer()
            fut = await producer.send(topic, emit.key, value, emit.partition, None, None)
            future = asyncio.ensure_future(fut)
        self._count(emit.channel).inc()
        future.add_done_callback(partial(self._done, emit.channel))
        return future

    async def flush(self) -> None:
        """Send the batches of the records handed since the last flush."""
        out, self._out = self._out, None
        if out is not None:
            await out.flush()

    def _done(self, channel: str, fut: asyncio.Future[Any]) -> None:
        if fut.cancelled() or fut.exception() is None:
            return
        self.failed.labels(channel).inc()
        log.error("a record on %s was not delivered: %s", channel, type(fut.exception()).__name__)


class LagCollector(Collector):
    """``vigil_consumer_lag_records{topic}``: records behind the end of each consumed topic,
    summed over this worker's partitions (read at scrape time, not per message)."""

    def __init__(self, app: faust.App, topics: dict[str, str]) -> None:
        self.app = app
        self.topics = topics  # topic -> label

    def collect(self):  # type: ignore[no-untyped-def]
        family = GaugeMetricFamily(
            "vigil_consumer_lag_records",
            "Records not yet processed by this worker, by consumed topic (its partitions).",
            labels=["topic"],
        )
        lags: dict[str, float] = dict.fromkeys(self.topics.values(), 0.0)
        try:
            consumer = self.app.consumer
            for tp in self.app.assignor.assigned_actives():
                label = self.topics.get(tp.topic)
                if label is None:
                    continue
                high = consumer.highwater(tp)
                done = consumer._committed_offset.get(tp)
                if high is not None and high >= 0:
                    lags[label] += max(0, high - (done or 0))
        except Exception:  # a scrape must never fail on a worker that is starting or stopping
            pass
        for label, lag in sorted(lags.items()):
            family.add_metric([label], lag)
        yield family

    def describe(self):  # type: ignore[no-untyped-def]
        return [GaugeMetricFamily("vigil_consumer_lag_records", "", labels=["topic"])]


def _table_options(settings: Settings) -> dict[str, Any] | None:
    if settings.store != "rocksdb://":
        return None
    return {
        "write_buffer_size": settings.rocksdb_write_buffer_bytes,
        "max_write_buffer_number": 2,
        "block_cache_size": settings.rocksdb_block_cache_bytes,
    }


#: Bloom filter bits per key of the state table's files: ~1 % false positives. Most of the
#: dataflow's reads look for a key that is not there (a conversation not selected, an event id
#: not seen, no review context yet: 99 % of them in ``benchmarks/worker_inprocess.py --store
#: rocksdb``), and a read that a filter does not stop reads a data block of every file it may be
#: in. Faust's default, 3 bits in the legacy per-block format, let those reads grow from ~14 to
#: ~80 µs as the table grew over 200,000 events.
BLOOM_BITS_PER_KEY: Final = 10
#: Share of the block cache the memtables of all partitions may take before RocksDB flushes
#: one (their memory is charged to the cache, so the two share one budget).
MEMTABLE_SHARE: Final = 0.5


class BoundedRocksDBOptions(RocksDBOptions):
    """Faust's RocksDB options (rocksdict driver) with one memory budget for every partition the
    worker opens: one block cache of ``block_cache_size`` shared by all of them, holding the
    table files' index and filter blocks too, and the memtables charged to that cache by one
    write-buffer manager, which flushes a memtable when all of them together pass
    :data:`MEMTABLE_SHARE` of it. So RocksDB's memory in a worker stays near the cache's size
    whatever the number of partitions it is assigned (``BENCHMARKS.md`` section 9). Faust's own
    options give every partition its own cache and keep index and filters beside it, where they
    grow with the state on disk (pinned for level 0, which every read consults). Table files
    carry whole-file Bloom filters of :data:`BLOOM_BITS_PER_KEY`."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._shared: tuple[Any, Any] | None = None

    def shared(self) -> tuple[Any, Any]:
        """The block cache and the write-buffer manager every partition's options get."""
        if self._shared is None:
            import rocksdict

            cache = rocksdict.Cache(self.block_cache_size)
            buffers = rocksdict.WriteBufferManager.new_write_buffer_manager_with_cache(
                int(self.block_cache_size * MEMTABLE_SHARE), False, cache
            )
            self._shared = (cache, buffers)
        return self._shared

    def as_options(self) -> Any:
        options = super().as_options()
        if not self.use_rocksdict:
            return options
        import rocksdict

        cache, buffers = self.shared()
        table = rocksdict.BlockBasedOptions()
        table.set_bloom_filter(BLOOM_BITS_PER_KEY, block_based=False)
        table.set_format_version(5)
        table.set_block_cache(cache)
        table.set_index_type(rocksdict.BlockBasedIndexType.binary_search())
        table.set_cache_index_and_filter_blocks(True)
        table.set_pin_l0_filter_and_index_blocks_in_cache(True)
        options.set_block_based_table_factory(table)
        options.set_write_buffer_manager(buffers)
        return options


def _bound_rocksdb(table: Any, settings: Settings) -> None:
    """Open the table's RocksDB partitions with :class:`BoundedRocksDBOptions`."""
    options = _table_options(settings)
    store = table.data
    if options is None or not hasattr(store, "rocksdb_options"):
        return
    store.rocksdb_options = BoundedRocksDBOptions(**options, use_rocksdict=store.use_rocksdict)


def create_app(settings: Settings, registry: CollectorRegistry | None = None) -> faust.App:
    """Build the worker app; ``registry`` gets Vigil's metrics, served at ``/metrics``."""
    registry = registry if registry is not None else CollectorRegistry()
    parts = settings.topic_partitions
    flow = Dataflow(settings, registry, clock="wall", partitions=parts)
    app = faust.App(
        settings.app_id,
        broker=kafka_broker_url(settings),
        broker_credentials=_broker_credentials(settings),
        store=settings.store,
        topic_partitions=parts,
        topic_replication_factor=settings.topic_replication,
        web_host=settings.web_host,
        web_port=settings.web_port,
        web_bind=settings.web_host,
        datadir=str(settings.data_dir),
        broker_session_timeout=settings.session_timeout_seconds,
        broker_heartbeat_interval=min(3.0, settings.session_timeout_seconds / 3),
        processing_guarantee=settings.processing_guarantee,
        table_standby_replicas=settings.standby_replicas,
        producer_acks=-1,
        producer_linger_ms=5,
        key_serializer="raw",
        value_serializer="raw",
    )
    state_table = app.Table(
        STATE_TABLE,
        default=None,
        partitions=parts,
        key_type=bytes,
        value_type=bytes,
        options=_table_options(settings),
        help="Every stage's keyed state, under <partition>|<kind>|<key>.",
    )
    _bound_rocksdb(state_table, settings)
    # The busy topics go from the consumer to their handlers a batch at a time (batches.py);
    # in exactly-once mode Transactions installs its subclass of the same consumer.
    app.transport.Consumer = BatchConsumer  # type: ignore[misc]
    # Every kind of state once: each value must fit in one record of the state's changelog.
    check_ceilings(flow.specs.values(), app.conf.producer_max_request_size)
    backend = TableBackend(state_table)
    if settings.processing_guarantee == "exactly_once":
        app.vigil_transactions = Transactions(app, backend)  # type: ignore[attr-defined]
    app.vigil_routes = BatchRoutes(  # type: ignore[attr-defined]
        app, settings.batch_size, process_batch(app)
    )
    states = FaustStates(backend, flow.specs)
    channels = channel_topics(settings)
    chat_events = app.topic(settings.input_topic, key_type=bytes, value_type=bytes)
    checks_topic = app.topic(settings.checks_topic, key_type=bytes, value_type=bytes)
    jconf = judge_config(settings)
    sender = FaustSender(app, channels, registry)
    runner = StreamRunner(flow, states, sender, deferred=jconf is not None)
    ctx = WorkerContext(app, settings, flow, runner, registry, backend, channels)
    ctx.topics.update(input=chat_events, checks=checks_topic)
    ctx.consumed[settings.input_topic] = "input"

    ctx.routes.add(chat_events, runner.screen)

    if jconf is not None:
        ctx.consumed[settings.checks_topic] = "checks"

        @app.agent(checks_topic, name="vigil.check", concurrency=1)
        async def check_answers(stream: faust.StreamT[bytes]) -> None:
            """Claim checks of sampled answers, apart from screening so a slow judge never
            stalls it. The judge client lives as long as the agent (cache, circuit breaker)."""
            assert jconf is not None
            async with Judge(jconf, metrics=flow.pipeline.metrics.judge) as judge:
                runner.judge = judge
                await consume_batches(app, stream, settings, runner.check)

    expired = Counter(
        "vigil_state_expired_total",
        "Keys deleted from the worker's state by age or over the bound, by kind.",
        ["kind"],
        registry=registry,
    )
    for kind in flow.specs:
        expired.labels(kind)

    @app.timer(settings.state_sweep_seconds, name="vigil.state.sweep")
    async def sweep_state() -> None:
        if not serving(app):
            return
        try:
            partitions = owned_partitions(app, state_table.changelog_topic.get_topic_name())
            for kind, n in runner.sweep(sorted(partitions)).items():
                expired.labels(kind).inc(n)
        except Exception as exc:  # the timer must live on
            runner.errors.error("sweep", "state sweep failed: %s", type(exc).__name__, exc=exc)

    trim_heap = heap_trimmer() if settings.heap_trim_seconds > 0 else None
    if trim_heap is not None:

        @app.timer(settings.heap_trim_seconds, name="vigil.heap.trim")
        async def release_heap() -> None:
            """Free pages of the C heap back to the OS (:mod:`services.streaming.heap`)."""
            trim_heap()

    if settings.reorder_window_seconds > 0:

        @app.timer(max(0.5, settings.reorder_window_seconds / 2), name="vigil.reorder.release")
        async def release_held() -> None:
            """Answers held for the reorder window whose conversation went quiet: released
            here once due (the conversation's next event releases them otherwise)."""
            if serving(app):
                owned = owned_partitions(app, state_table.changelog_topic.get_topic_name())
                await runner.release_held(sorted(owned))

    def reset() -> None:
        runner.reset()
        for hook in ctx.on_reset:
            hook()

    async def recovered() -> None:
        reset()

    state_table.on_recover(recovered)

    @app.page("/healthz")
    async def healthz(self: faust.web.View, request: faust.web.Request) -> faust.web.Response:
        return self.json(
            {
                "status": "ok" if serving(app) else "starting",
                "rules": len(flow.pipeline.engine.rules),
                "partitions": sorted(owned_partitions(app, settings.input_topic)),
            }
        )

    if settings.faust_metrics:
        setup_prometheus_sensors(app, pattern="/metrics", registry=registry, name_prefix="faust")
    else:

        @app.page("/metrics")
        async def metrics(self: faust.web.View, request: faust.web.Request) -> faust.web.Response:
            return self.bytes(generate_latest(registry), content_type="text/plain; version=0.0.4")

    for name in FEATURES:
        importlib.import_module(name).register(ctx)
    registry.register(LagCollector(app, ctx.consumed))

    @app.task
    async def declare_outputs() -> None:
        """Create the produced-only topics (consumed ones Faust declares itself)."""
        for channel, name in ctx.channels.items():
            topic = ctx.topics.get(channel) or app.topic(name, key_type=bytes, value_type=bytes)
            try:
                await topic.maybe_declare()
            except Exception as exc:
                log.warning("could not declare %s: %s", name, type(exc).__name__)

    app.vigil_read_offsets = ReadOffsets(registry)  # type: ignore[attr-defined]

    # Handles for tests and for the web views of the features.
    app.vigil_flow = flow  # type: ignore[attr-defined]
    app.vigil_pipeline = flow.pipeline  # type: ignore[attr-defined]
    app.vigil_runner = runner  # type: ignore[attr-defined]
    app.vigil_context = ctx  # type: ignore[attr-defined]
    app.vigil_state = state_table  # type: ignore[attr-defined]
    app.vigil_started = time.time()  # type: ignore[attr-defined]
    return app
