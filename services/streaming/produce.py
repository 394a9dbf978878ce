"""Records to Kafka a batch at a time: aiokafka's batch builders instead of a send per record.

Each record the worker produces (an output, a state changelog record) went through Faust's
``Producer.send`` and aiokafka's ``send``: a sensor signal, a metadata wait, a partitioner call,
a future and its callbacks per record — ~23 µs of CPU per record here, for ~4 records per chat
event. :class:`OutBatch` appends a caller's records to one aiokafka ``BatchBuilder`` per topic
partition and sends each builder once (``send_batch``): ~5 µs per record, one future per
batch. A record's delivery is its batch's (:class:`Slot`: the batch's future and the record's
place in it, for its offset).

Only at least once: in exactly-once mode records go to Faust's transaction manager one at a time
(each to the transaction of its batch scope, :mod:`services.streaming.transactions`), and
:func:`batch_producer` gives ``None``. Order is kept per topic partition (records are appended
in the order given, and a builder goes to aiokafka's accumulator, which sends a partition's
batches in order, before the next one of that partition is started). Faust's producer sensors
(``faust_*`` messages sent) do not see batched records.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any

__all__ = ["OutBatch", "Slot", "batch_producer"]


async def batch_producer(app: Any) -> Any | None:
    """The aiokafka producer to send batches with, started; ``None`` in exactly-once mode."""
    producer = await app.maybe_start_producer()
    ensure = getattr(producer, "_ensure_producer", None)  # Faust's aiokafka driver has it
    if ensure is None:
        return None
    guarantee = getattr(app.conf.processing_guarantee, "value", app.conf.processing_guarantee)
    return None if guarantee == "exactly_once" else ensure()


@dataclass(frozen=True, slots=True)
class Slot:
    """Where a record went: the future of its batch (its ``RecordMetadata`` carries the batch's
    first offset) and its place in the batch."""

    future: asyncio.Future[Any]
    index: int

    def offset(self) -> int:
        """The record's offset, once the batch is acknowledged."""
        return int(self.future.result().offset) + self.index


class _Open:
    __slots__ = ("builder", "count", "future")

    def __init__(self, builder: Any) -> None:
        self.builder = builder
        self.count = 0
        self.future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()


class OutBatch:
    """One caller's records, batched per topic partition until :meth:`flush`."""

    def __init__(self, producer: Any) -> None:
        self.producer = producer
        self._open: dict[tuple[str, int], _Open] = {}

    async def add(
        self, topic: str, partition: int | None, key: bytes | None, value: bytes | None
    ) -> Slot:
        """Append a record (``partition=None``: Kafka's default partitioner on ``key``)."""
        if partition is None:
            await self.producer.client._wait_on_metadata(topic)
            partition = self.producer._partition(topic, None, key, value, key, value)
        at = (topic, partition)
        batch = self._open.get(at)
        if batch is None:
            batch = self._open[at] = _Open(self.producer.create_batch())
        if batch.builder.append(key=key, value=value, timestamp=None) is None:
            if batch.count == 0:  # larger than a batch: on its own, as aiokafka would send it
                del self._open[at]
                return Slot(await self.producer.send(topic, value, key=key, partition=partition), 0)
            await self._send(at, self._open.pop(at))
            return await self.add(topic, partition, key, value)
        batch.count += 1
        return Slot(batch.future, batch.count - 1)

    async def flush(self) -> None:
        """Send every open batch to aiokafka's accumulator."""
        while self._open:
            at = next(iter(self._open))
            await self._send(at, self._open.pop(at))

    async def _send(self, at: tuple[str, int], batch: _Open) -> None:
        try:
            sent = await self.producer.send_batch(batch.builder, at[0], partition=at[1])
        except Exception as exc:
            batch.future.set_exception(exc)
            batch.future.exception()  # retrieved: the records' callbacks report it
            return
        sent.add_done_callback(lambda done, mine=batch.future: _copy(done, mine))


def _copy(done: asyncio.Future[Any], into: asyncio.Future[Any]) -> None:
    if into.done():
        return
    if done.cancelled():
        into.cancel()
    elif (exc := done.exception()) is not None:
        into.set_exception(exc)
    else:
        into.set_result(done.result())
