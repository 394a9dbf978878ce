"""Exactly-once processing (``VIGIL_PROCESSING_GUARANTEE=exactly_once``) for batches.

Kafka transactions make a batch's outputs, its state writes and its input offsets one atomic
unit: a crash aborts the open transaction, the batch is processed again, and a consumer reading
``read_committed`` sees every output once. faust-streaming's transaction manager keeps one
transactional producer per partition number of a co-partitioned group (``<app>-<group>-<p>``);
when it commits, it sends the acknowledged input offsets of partition ``p`` to that producer's
transaction and commits it. Faust assumes its agents produce one event at a time through
``topic.send`` and routes a record to the transaction of the record's *destination* partition.
The worker does not fit that (see ``docs/streaming.md``): its batches hold several partitions,
it sends to fixed partitions (the eval-set sampler and the spike detector live on partition 0),
its tables are written outside Faust's per-event iteration, and timers and the review API write
too. So in this mode:

- **One batch scope at a time** (:meth:`Transactions.process`). A batch is split by partition;
  under one lock, each part runs with :data:`CURRENT` set to the transactional id of its source
  partition, its emits (:class:`~services.streaming.app.FaustSender`) and its state writes
  (:class:`~services.streaming.state.TableBackend` holds them back and ``drain`` sends them)
  go to that transaction, and its events are acknowledged.
- **Commits take the same lock** (:class:`ScopedConsumer`): Faust's commits (its timer, every
  ``broker_commit_every`` messages, before a rebalance hands partitions over, at shutdown)
  compute the acknowledged offsets and commit the transactions only between two batch scopes.
  A commit between a batch's sends and its acknowledgement would commit the batch's records
  but not its input offsets; after a crash, or on the partition's next owner, the batch would
  run again and its records would be there twice.
- **Recovery reads to the broker's last stable offset** (:meth:`ScopedConsumer.highwaters`).
  faust-streaming, in a transaction, takes a changelog partition's end from aiokafka's cached
  last stable offset, which is ``None`` until the consumer has fetched from that partition:
  Faust reads that as an empty partition, recovers nothing of it and goes on with whatever the
  local store holds (nothing on a new machine; on the same data dir, the state without the
  writes of the transactions committed last). The worker asks the broker instead.
- **Outside a batch scope, nothing is transactional** (:class:`ScopedTransactionManager`). A
  timer's tombstones, a tick, a reviewer's claim answered by the API: sent at once, outside any
  transaction. In a transaction they would wait for the next commit of their partition, which
  an idle partition never makes (the broker aborts it after ``transaction.timeout.ms`` and
  fences the producer), and an answered claim would be lost in a crash.

The cost: batches of all agents run one after another (a slow judge in the check agent holds
up screening); outputs become visible to ``read_committed`` consumers, the worker's own agents
downstream included, at the next commit (``broker_commit_interval``, 2.8 s).
"""

from __future__ import annotations

import asyncio
import contextvars
from collections import defaultdict
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from faust.transport.consumer import TransactionManager
from faust.types import TP
from faust.types.transports import TPorTopicSet

from services.streaming.batches import BatchConsumer

if TYPE_CHECKING:
    from services.streaming.runner import Record
    from services.streaming.state import TableBackend

__all__ = [
    "CURRENT",
    "ScopedConsumer",
    "ScopedTransactionManager",
    "Transactions",
    "current_transaction",
    "last_stable_offsets",
]


#: The transactional id of the batch part being processed in this task (``None``: not in one).
CURRENT: contextvars.ContextVar[str | None] = contextvars.ContextVar(
    "vigil_transaction", default=None
)


def current_transaction() -> str | None:
    """The transactional id records sent now belong to, or ``None``."""
    return CURRENT.get()


class ScopedTransactionManager(TransactionManager):
    """Faust's transaction manager with sends routed by :data:`CURRENT` instead of by their
    destination partition: outside a batch scope they go out without a transaction."""

    async def send(
        self,
        topic: str,
        key: bytes | None,
        value: bytes | None,
        partition: int | None,
        timestamp: float | None,
        headers: Any,
        *,
        transactional_id: str | None = None,
    ) -> Awaitable[Any]:
        return await self.producer.send(
            topic,
            key,
            value,
            partition,
            timestamp,
            headers,
            transactional_id=transactional_id or current_transaction(),
        )


async def last_stable_offsets(consumer: Any, partitions: Sequence[TP]) -> dict[TP, int]:
    """The end of each partition for a ``read_committed`` reader, asked of the broker (a
    ListOffsets request carries the consumer's isolation level: the answer is the last stable
    offset), never aiokafka's value cached from the last fetch."""
    ends = await consumer.end_offsets(list(partitions))
    return {TP(tp.topic, tp.partition): int(offset) for tp, offset in ends.items()}


class ScopedConsumer(BatchConsumer):
    """The worker's consumer (:class:`~services.streaming.batches.BatchConsumer`) whose commits
    wait for the batch scope in progress, and whose recovery reads every changelog partition
    to its end."""

    async def highwaters(self, *partitions: TP) -> Mapping[TP, int]:
        """The last stable offset of each partition, from the broker (see the module
        docstring: Faust's own answer is ``None`` for a partition not yet fetched from, and
        its recovery then reads nothing of it)."""
        thread = self._thread
        consumer = thread._ensure_consumer()
        return await thread.call_thread(last_stable_offsets, consumer, list(partitions))

    async def commit(
        self, topics: TPorTopicSet | None = None, start_new_transaction: bool = True
    ) -> bool:
        async with self.app.vigil_transactions.lock:  # type: ignore[attr-defined]
            return await super().commit(topics, start_new_transaction=start_new_transaction)

    async def _commit_offsets(
        self, offsets: Mapping[TP, int], start_new_transaction: bool = True
    ) -> bool:
        """Faust's commit; then the state writes of the transactions it committed go into the
        local store (:meth:`~services.streaming.state.TableBackend.committed`)."""
        assigned = self.assignment()
        did_commit = await super()._commit_offsets(offsets, start_new_transaction)
        if did_commit:
            vt = self.app.vigil_transactions  # type: ignore[attr-defined]
            vt.backend.committed(
                {vt.transactional_id(tp.topic, tp.partition) for tp in offsets if tp in assigned}
            )
        return bool(did_commit)


class Transactions:
    """The batch scopes of one worker (see the module docstring)."""

    def __init__(self, app: Any, backend: TableBackend) -> None:
        self.app = app
        self.backend = backend
        self.lock = asyncio.Lock()
        app.transport.Consumer = ScopedConsumer
        app.transport.TransactionManager = ScopedTransactionManager

    def transactional_id(self, topic: str, partition: int) -> str:
        """Faust's id of the transaction that commits the offsets of ``topic``/``partition``."""
        group = self.app.assignor.group_for_topic(topic)
        return f"{self.app.conf.id}-{group}-{partition}"

    async def process(
        self,
        records: Sequence[Record],
        handle: Callable[[list[Record]], Awaitable[Any]],
        ack: Callable[[], None],
    ) -> None:
        """Handle ``records`` part by part in their partitions' transactions, then acknowledge
        the batch (``ack``), all in one scope."""
        parts: dict[tuple[str, int], list[Record]] = defaultdict(list)
        for record in records:
            parts[(record.topic, record.partition)].append(record)
        async with self.lock:
            for (topic, partition), part in parts.items():
                token = CURRENT.set(self.transactional_id(topic, partition))
                try:
                    await handle(part)
                    await self.backend.drain()
                finally:
                    CURRENT.reset(token)
            ack()
