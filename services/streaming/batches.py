"""Batches of records from Faust's consumer straight to the runner, for the worker's busy topics.

A Faust agent receives a message through six layers: the fetcher's drain loop awaits each one
with :meth:`~mode.Service.wait_first` (two tasks per message), the conductor decodes it into an
event and puts it on the channel's queue under flow control, the stream takes it off the queue
and runs its sensors, and ``take_events`` buffers it until the batch is full. Measured with an
agent that only ``json.loads`` each message (``benchmarks/streaming.py --bare-faust``), that is
~200 µs of CPU per message on this machine, against ~20 µs for the same consumer handing each
fetched batch to one coroutine: for a worker whose whole budget is ~500 µs per event, the agent
machinery alone was half of it.

So the worker's busy topics (the chat events, the eval-set samples and decisions, review labels,
alert counts) are *routes* (:class:`BatchRoutes`): :class:`BatchConsumer` — Faust's own
aiokafka consumer, installed as the transport's consumer class — hands the records it fetched
for a partition of a routed topic to the route's handler in batches of ``VIGIL_BATCH_SIZE``,
then acknowledges them. Everything else Faust does stays as it was: the group, the assignment,
commits of acknowledged offsets, rebalances (which wait for the batch in progress:
its messages are tracked as unacknowledged until it returns), table recovery and standbys, the
web server, timers. Messages of other topics (the state table's changelog during recovery, the
claim-check agent's topic when a judge is configured, a slow consumer that must not hold up
screening) take Faust's usual path to their agents.

What a route does not get from Faust: its topic's per-stream sensors (``faust_*`` stream
metrics); the consumer's own sensors (messages received, read offsets) still count, and the
stream inbound time Faust's slow-processing warnings read is kept current.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from typing import Any

from faust.transport.consumer import CONSUMER_FETCHING
from faust.transport.drivers.aiokafka import Consumer
from faust.types import TP
from prometheus_client import CollectorRegistry, Counter

from services.streaming.runner import Record

__all__ = [
    "BatchConsumer",
    "BatchRoutes",
    "Handler",
    "ReadOffsets",
    "fresh_records",
]

log = logging.getLogger("vigil.worker")

#: What a route does with a batch of its records (the runner's ``screen``, ``samples`` …).
Handler = Callable[[list[Record]], Awaitable[Any]]


class ReadOffsets:
    """The last offset taken from each partition of each topic in the current consumer
    generation.

    Faust's consumer lets through a message at the offset it delivered last (its drop test is
    ``offset >= read offset``), so a message fetched again — seen after a worker took over
    from a killed one, on the last message of a partition — would be processed twice; within
    one generation an offset never needs to be processed again. A new generation (a rebalance,
    which seeks to the committed offsets) starts afresh.
    """

    def __init__(self, registry: CollectorRegistry) -> None:
        self.generation: int | None = None
        self.last: dict[tuple[str, int], int] = {}
        self.dropped = Counter(
            "vigil_redelivered_records_total",
            "Records delivered again in one consumer generation at an offset already taken "
            "(dropped, not processed twice).",
            registry=registry,
        )

    def fresh(self, generation: int | None, topic: str, partition: int, offset: int) -> bool:
        if generation != self.generation:
            self.generation, self.last = generation, {}
        tp = (topic, partition)
        if offset <= self.last.get(tp, -1):
            self.dropped.inc()
            return False
        self.last[tp] = offset
        return True


def fresh_records(app: Any, messages: Iterable[Any]) -> list[Record]:
    """The records of Faust messages, without those of an older generation (fetched before a
    rebalance: their partition may be another worker's now, which replays them) and without
    offsets taken before in this generation (:class:`ReadOffsets`)."""
    generation = getattr(app, "consumer_generation_id", None)
    read: ReadOffsets | None = getattr(app, "vigil_read_offsets", None)
    out = []
    for msg in messages:
        if generation is not None and getattr(msg, "generation_id", generation) != generation:
            continue
        if read is not None and not read.fresh(generation, msg.topic, msg.partition, msg.offset):
            continue
        value = msg.value if isinstance(msg.value, bytes) else b""
        key = msg.key if isinstance(msg.key, bytes) else None
        out.append(Record(value, key, msg.topic, msg.partition, msg.offset))
    return out


class BatchRoutes:
    """The routed topics of one worker and their handlers (see the module docstring).

    ``process(records, handle, ack)`` runs one batch: the worker's plain
    ``handle`` then ``ack``, or under ``exactly_once`` the batch in its partitions' transactions
    (:meth:`~services.streaming.transactions.Transactions.process`).
    """

    def __init__(
        self,
        app: Any,
        batch_size: int,
        process: Callable[[list[Record], Handler, Callable[[], None]], Awaitable[None]],
    ) -> None:
        self.app = app
        self.batch_size = batch_size
        self.process = process
        self.handlers: dict[str, Handler] = {}

    def add(self, topic: Any, handle: Handler) -> None:
        """Route ``topic`` (a Faust topic) to ``handle``; the consumer subscribes to it."""
        name = topic.get_topic_name()
        if name in self.handlers:
            raise ValueError(f"topic {name!r} is routed twice")
        self.handlers[name] = handle
        self.app.topics.add(topic)

    async def deliver(self, consumer: Consumer, tp: TP, messages: Sequence[Any]) -> None:
        """Hand the fetched ``messages`` of ``tp`` (offset order) to its handler, a batch at a
        time; each batch is acknowledged once its handler returned."""
        handle = self.handlers[tp.topic]
        monitor = getattr(self.app, "monitor", None)
        inbound = getattr(monitor, "stream_inbound_time", None)
        for start in range(0, len(messages), self.batch_size):
            chunk = messages[start : start + self.batch_size]
            for message in chunk:
                consumer.track_message(message)
            if inbound is not None:
                inbound[tp] = time.monotonic()
            records = fresh_records(self.app, chunk)

            def ack(chunk: Sequence[Any] = chunk) -> None:
                for message in chunk:
                    consumer.ack(message)

            await self.process(records, handle, ack)


class BatchConsumer(Consumer):
    """Faust's aiokafka consumer whose drain loop hands routed topics' records to their handlers
    in batches (:class:`BatchRoutes`, ``app.vigil_routes``) and every other message to Faust's
    conductor, one at a time, as Faust does."""

    async def _drain_messages(self, fetcher: Any) -> None:  # pragma: no cover - needs a broker
        routes: BatchRoutes | None = getattr(self.app, "vigil_routes", None)
        if routes is None or not routes.handlers:
            await super()._drain_messages(fetcher)
            return
        consumer_stopped = self._stopped.is_set
        fetcher_stopped = fetcher._stopped.is_set
        try:
            while not (consumer_stopped() or fetcher_stopped()):
                self.diag.set_flag(CONSUMER_FETCHING)
                records, active = await self._wait_next_records(1.0)
                await self.sleep(0)
                if records and not self.should_stop:
                    await self._dispatch(records, active, routes)
                self.diag.unset_flag(CONSUMER_FETCHING)
        except self.consumer_stopped_errors:
            if self.transport.app.should_stop:
                log.info("broker stopped the consumer, shutting down")
                return
            raise
        except asyncio.CancelledError:
            if self.transport.app.should_stop:
                return
            raise
        except Exception:
            log.exception("the consumer's drain loop failed")
            raise
        finally:
            self.diag.unset_flag(CONSUMER_FETCHING)

    async def _dispatch(
        self, records: Mapping[TP, list[Any]], active: set[TP] | None, routes: BatchRoutes
    ) -> None:
        """One fetch: each partition's records, in order, to its route or to the conductor.
        Stops at a new generation or when flow stops (a rebalance): what is left is fetched
        again from the committed offsets."""
        generation = self.app.consumer_generation_id
        for tp, fetched in records.items():
            if not self.flow_active or self.app.consumer_generation_id != generation:
                return
            if active is not None and tp not in active and tp not in self._buffered_partitions:
                continue
            self.app.monitor.track_tp_end_offset(tp, self.highwater(tp))
            read = self._read_offset[tp]
            messages = [
                self._to_message(tp, record)
                for record in fetched
                if read is None or record.offset >= read
            ]
            if not messages:
                continue
            await self._note_gaps(tp, read, messages)
            if tp.topic in routes.handlers:
                await routes.deliver(self, tp, messages)
                self._read_offset[tp] = messages[-1].offset
            else:
                for message in messages:
                    await self.wait_first(self.callback(message), self.suspend_flow.wait())
                    self._read_offset[tp] = message.offset
            await self._commit_if_due()

    async def _note_gaps(self, tp: TP, read: int | None, messages: Sequence[Any]) -> None:
        """Offsets with no message (transaction markers, compacted records) are gaps Faust's
        commit steps over, as its own drain loop records them."""
        if not self.app.topics.acks_enabled_for(tp.topic):
            return
        previous = read
        for message in messages:
            if previous and message.offset - previous > 1:
                await self._add_gap(tp, previous + 1, message.offset)
            previous = message.offset

    async def _commit_if_due(self) -> None:
        every = self._commit_every
        if every is not None and self._n_acked >= every:
            self._n_acked = 0
            await self.commit()
