"""The worker's keyed state: :class:`~services.dataflow.state.KeyedStore`\\ s over one Faust table.

Every kind of state (conversation memory, review items and context, caps, eval-set cases, the
sampler, the detector's windows …) lives in one Faust table, ``state``, under keys
``<partition>|<kind>|<key>``; its changelog ``<app_id>-state-changelog`` is compacted and
partitioned like the input topic, so a partition's state moves with the partition (Faust
co-partitions topics of equal partition count). RocksDB (``rocksdb://``, the ``rocksdict``
package) holds it on disk by default; ``memory://`` is for tests.

:class:`TableStore` is one kind on one partition. It writes to the store of that partition and
sends the changelog record itself, with the partition explicit, so writes work from any task — a
batch of an agent, a timer, a web handler — not only inside Faust's per-event iteration. Writes
are buffered and coalesced until :meth:`TableStore.flush` (the runner flushes after each batch,
before the batch's offsets can be committed), so a key written by many events of a batch costs
one changelog record. Values carry the time of their last write (8 bytes) for
:meth:`~services.dataflow.state.KeyedStore.expire`, whose deletions are tombstones in the
changelog: the compacted changelog stays bounded as well (RocksDB's own TTL would drop keys only
locally, and a recovering worker would get them back).
"""

from __future__ import annotations

import asyncio
import logging
import math
import struct
from collections.abc import Iterable, Iterator, Mapping
from functools import partial
from typing import Any

from services.dataflow.state import KeyedStore, StateSpec
from services.streaming.produce import OutBatch, batch_producer
from services.streaming.transactions import current_transaction

__all__ = ["STATE_TABLE", "FaustStates", "TableBackend", "TableStore"]

log = logging.getLogger("vigil.worker")

STATE_TABLE = "state"
_STAMP = struct.Struct(">d")
#: Share of a kind's lifetime a key may outlive it before a sweep reads the kind to delete it
#: (:meth:`TableStore._sweep`): 7 days give 8.4 hours.
EXPIRY_SLACK = 0.05
_DELETED: Any = object()


class TableBackend:
    """Direct access to a Faust table's store by partition (RocksDB or memory), and the sending
    of its changelog records.

    A write is read back at once, but lands in the local store only when the broker has
    acknowledged its changelog record (before that record's offset becomes the store's persisted
    offset): the local store never holds a write the changelog lacks. A worker killed with
    writes in flight restarts on its own data dir with exactly the changelog's state, as a new
    machine would, and the batches it replays find the state they were computed from (a
    deletion that never reached the changelog would otherwise stay done locally, and a replayed
    deselection would no longer find the cases to tombstone). The changelog record goes to an
    outbox that :meth:`drain` hands to the producer in write order (one task at a time, so a
    key's records reach the broker in the order they were written). The runner drains after
    every batch, before the batch's offsets can be acknowledged; writes from anywhere else
    (timers, web handlers) are drained by a task scheduled on the first write. Faust's own
    ``send_soon`` is not used: it queues every record behind a single sending task and blocks
    all streams once a hundred records wait, which a batch of state writes always exceeds.

    The producer is Faust's (:meth:`faust.App.maybe_start_producer`): with
    ``exactly_once`` it is the transaction manager, and a record written in a batch scope joins
    that scope's transaction (the one of the batch's source partition), drained by the scope
    itself; a record written outside one goes out without a transaction
    (:mod:`services.streaming.transactions`). Acknowledged offsets become the store's persisted
    offsets (where recovery starts reading the changelog), as Faust's own tables do. Under
    ``exactly_once`` a transaction's records reach the local store only when it commits
    (:meth:`committed`), and no offset is persisted: recovery reads the compacted changelog,
    ``read_committed``, from its start, so an aborted transaction leaves nothing behind.
    """

    def __init__(self, table: Any) -> None:
        self.table = table
        #: key -> the future of its last changelog record not yet acknowledged
        self.last_write: dict[bytes, asyncio.Future[Any]] = {}
        #: key -> (partition, value or ``None`` for a deletion, its write's future) of that
        #: last record: what reads see until it is in the local store
        self._unacked: dict[bytes, tuple[int, bytes | None, asyncio.Future[Any]]] = {}
        #: acknowledged records of a transaction not yet committed, by transactional id: they
        #: reach the local store when it commits (:meth:`committed`)
        self._uncommitted: dict[str, list[tuple[int, bytes, bytes | None, Any]]] = {}
        #: records not yet handed to the producer, by the transaction they belong to (``None``:
        #: none, the only one at least once; exactly once, a batch scope's transactional id)
        self._outboxes: dict[str | None, list[tuple[int, bytes, bytes | None, Any]]] = {}
        self._lock: asyncio.Lock | None = None
        self._drainer: asyncio.Task[None] | None = None
        self._acked: dict[Any, int] = {}
        self._persist_scheduled = False
        self.failed = 0

    @property
    def store(self) -> Any:
        return self.table.data

    def _rocks(self) -> bool:
        return hasattr(self.store, "_db_for_partition")

    def get(self, partition: int, key: bytes) -> bytes | None:
        hit = self._unacked.get(key)
        if hit is not None:
            return hit[1]
        store = self.store
        if self._rocks():
            value = store._db_for_partition(partition).get(key)
            return None if value is None else bytes(value)
        value = store.data.get(key)
        return None if value is None else bytes(value)

    def put(self, partition: int, key: bytes, value: bytes | None) -> None:
        """Write (``None``: delete) and queue the changelog record for ``partition``; the local
        store gets the write once the record is acknowledged."""
        loop = asyncio.get_running_loop()
        done: asyncio.Future[Any] = loop.create_future()
        self.last_write[key] = done
        self._unacked[key] = (partition, value, done)
        done.add_done_callback(partial(self._written, key))
        transaction = current_transaction()
        self._outboxes.setdefault(transaction, []).append((partition, key, value, done))
        if transaction is None and self._drainer is None:
            # Outside a batch scope: drained soon, by a task that inherits no scope. In a
            # scope, the scope drains its outbox before it ends (and acknowledges its input).
            self._drainer = loop.create_task(self._drain_soon())

    def _store_put(self, partition: int, key: bytes, value: bytes | None) -> None:
        store = self.store
        if self._rocks():
            db = store._db_for_partition(partition)
            if value is None:
                db.delete(key)
            else:
                db.put(key, value)
        elif value is None:
            store.data.pop(key, None)
            store._key_partition.pop(key, None)
        else:
            store.data[key] = value
            store._key_partition[key] = partition

    def _settle(self, partition: int, key: bytes, value: bytes | None, done: Any) -> None:
        """The record is acknowledged (or failed for good): into the local store; reads go
        there once no later write of the key waits."""
        self._store_put(partition, key, value)
        hit = self._unacked.get(key)
        if hit is not None and hit[2] is done:
            del self._unacked[key]

    async def _drain_soon(self) -> None:
        try:
            await self.drain()
        finally:
            self._drainer = None

    async def drain(self) -> None:
        """Hand the queued changelog records of the current transaction (of the batch scope
        this task is in, or of none) to the producer, in write order."""
        transaction = current_transaction()
        if not self._outboxes.get(transaction):
            return
        if self._lock is None:
            self._lock = asyncio.Lock()
        async with self._lock:
            app = self.table.app
            producer = await app.maybe_start_producer()
            # At least once, a batch per partition (produce.py); in a transaction, one by one.
            batched = await batch_producer(app) if transaction is None else None
            out = OutBatch(batched) if batched is not None else None
            topic = self.table.changelog_topic.get_topic_name()
            try:
                while batch := self._outboxes.pop(transaction, None):
                    for partition, key, value, done in batch:
                        try:
                            if out is not None:
                                slot = await out.add(topic, partition, key, value)
                                fut, index = slot.future, slot.index
                            else:
                                fut = await producer.send(topic, key, value, partition, None, None)
                                index = 0
                        except Exception as exc:
                            self._settle(partition, key, value, done)
                            self._failed(done, exc, key)
                            continue
                        fut.add_done_callback(
                            partial(self._sent, (partition, key, value, done), transaction, index)
                        )
            finally:
                if out is not None:  # even when cancelled: what was appended goes out
                    await asyncio.shield(out.flush())

    def _sent(
        self,
        record: tuple[int, bytes, bytes | None, asyncio.Future[Any]],
        transaction: str | None,
        index: int,
        fut: asyncio.Future[Any],
    ) -> None:
        """``fut``: the record's delivery, or its batch's (``index``: its place in the batch)."""
        partition, key, value, done = record
        failed = fut.cancelled() or fut.exception() is not None
        if transaction is not None and not failed:
            # Acknowledged is not committed: a worker killed before the commit aborts the
            # transaction, and a local store holding its writes (an event marked seen, a
            # selection dropped) would outlive them on the same data dir: the batch replayed
            # after the restart would skip what it must redo. Into the store at the commit.
            self._uncommitted.setdefault(transaction, []).append(record)
            if not done.done():
                done.set_result(fut.result())
            return
        # Into the local store before the offset can be persisted (a store whose persisted
        # offset covers a record holds that record's write). A record that failed for good is
        # written locally all the same: this worker goes on from its own writes.
        self._settle(partition, key, value, done)
        if fut.cancelled():
            self._failed(done, asyncio.CancelledError(), key)
            return
        exc = fut.exception()
        if exc is not None:
            self._failed(done, exc, key)
            return
        meta = fut.result()
        tp = meta.topic_partition
        if meta.offset + index > self._acked.get(tp, -1):
            self._acked[tp] = meta.offset + index
        if not self._persist_scheduled:
            self._persist_scheduled = True
            asyncio.get_running_loop().call_soon(self._persist)
        if not done.done():
            done.set_result(meta)

    def _failed(self, done: asyncio.Future[Any], exc: BaseException, key: bytes) -> None:
        self.failed += 1
        # The kind of state and the cause's own type; never the key (a conversation id).
        kind = key.split(b"|", 2)[1].decode(errors="replace") if key.count(b"|") >= 2 else "?"
        cause = exc.__cause__ or exc.__context__
        why = type(exc).__name__ + (f" ({type(cause).__name__})" if cause is not None else "")
        log.error("a changelog record of %s was not delivered: %s", kind, why)
        if not done.done():
            done.set_exception(exc)
            done.exception()  # retrieved: waiting on it is optional

    def _persist(self) -> None:
        """Acknowledged offsets become persisted offsets (once per loop turn, not per record)."""
        self._persist_scheduled = False
        acked, self._acked = self._acked, {}
        if self.table.app.in_transaction:
            return  # exactly once: recovery reads the changelog from its start (committed)
        for tp, offset in acked.items():
            self.store.set_persisted_offset(tp, offset)

    def committed(self, transactions: Iterable[str]) -> None:
        """The transactions with these ids committed: their acknowledged records go into the
        local store. (Records acknowledged after the commit wait for the next one; a worker
        killed in between recovers them from the changelog, which under ``exactly_once`` is read
        from its start: no changelog offset is persisted in that mode.)"""
        for transaction in transactions:
            for partition, key, value, done in self._uncommitted.pop(transaction, ()):
                self._settle(partition, key, value, done)

    def _written(self, key: bytes, fut: Any) -> None:
        if self.last_write.get(key) is fut:
            del self.last_write[key]

    def pending(self, partition: int, kind: str, key: str) -> Any:
        """The future of the last unacknowledged changelog write of a key, or ``None``."""
        return self.last_write.get(f"{partition}|{kind}|{key}".encode())

    def _stored(self, partition: int, prefix: bytes) -> Iterator[tuple[bytes, Any]]:
        """``(key, value)`` in the local store of ``partition`` for the keys starting with
        ``prefix`` (unacknowledged writes not included), one at a time."""
        store = self.store
        if self._rocks():
            for key, value in store._db_for_partition(partition).items(from_key=prefix):
                if not key.startswith(prefix):
                    break
                yield bytes(key), value
        else:
            for key, value in list(store.data.items()):
                if isinstance(key, bytes) and key.startswith(prefix) and value is not None:
                    yield key, value

    def stream(
        self, partition: int, prefix: bytes, *, keys_only: bool = False
    ) -> Iterator[tuple[bytes, bytes]]:
        """``(key, value)`` of the keys of ``partition`` starting with ``prefix`` (writes not
        yet acknowledged included), in key order, one at a time: it holds one value of the
        local store at a time. ``keys_only``: every value is ``b""``, so nothing is copied."""
        pending = sorted(
            (key, b"" if keys_only and value is not None else value)
            for key, (part, value, _) in list(self._unacked.items())
            if part == partition and key.startswith(prefix)
        )
        stored: Iterable[tuple[bytes, Any]] = self._stored(partition, prefix)
        if not self._rocks():  # a memory store is not in key order
            stored = sorted(stored)
        i = 0
        for key, value in stored:
            while i < len(pending) and pending[i][0] < key:
                if pending[i][1] is not None:
                    yield pending[i]  # type: ignore[misc]
                i += 1
            if i < len(pending) and pending[i][0] == key:
                if pending[i][1] is not None:
                    yield pending[i]  # type: ignore[misc]
                i += 1
                continue
            yield key, b"" if keys_only else bytes(value)
        for key, value in pending[i:]:
            if value is not None:
                yield key, value

    def stamps(self, partition: int, prefix: bytes) -> list[tuple[float, bytes]]:
        """``(write time, key)`` of the keys of ``partition`` starting with ``prefix`` (writes
        not yet acknowledged included): only each value's 8-byte stamp is kept, so a sweep over
        many large values never holds them all."""
        unpack = _STAMP.unpack_from
        found: dict[bytes, float | None] = {
            key: unpack(value)[0] for key, value in self._stored(partition, prefix)
        }
        for key, (part, value, _) in list(self._unacked.items()):
            if part == partition and key.startswith(prefix):
                found[key] = None if value is None else unpack(value)[0]
        return [(stamp, key) for key, stamp in found.items() if stamp is not None]

    def scan(
        self, partition: int, prefix: bytes, *, keys_only: bool = False
    ) -> list[tuple[bytes, bytes]]:
        """:meth:`stream`, read to its end: a snapshot, which the caller may write beside."""
        return list(self.stream(partition, prefix, keys_only=keys_only))


class TableStore(KeyedStore):
    """One kind of state on one partition of the ``state`` table (see the module docstring)."""

    def __init__(self, spec: StateSpec, backend: TableBackend, partition: int) -> None:
        super().__init__(spec)
        self.backend = backend
        self.partition = partition
        self._prefix = f"{partition}|{spec.kind}|"
        self._bprefix = self._prefix.encode()
        self._buffer: dict[str, Any] = {}
        #: What the backend returned for each key read since :meth:`hold_reads` (a miss as
        #: ``None``), while reads are held: at most the keys one batch reads, for one batch.
        self._reads: dict[str, bytes | None] | None = None
        #: What the last full sweep left: how many keys, and the oldest write among them (the
        #: sweep's own time when none is left; ``None``: no sweep since this store was opened);
        #: and the writes flushed since.
        self._swept: tuple[int, float] | None = None
        self._written = 0

    def _key(self, key: str) -> bytes:
        return (self._prefix + key).encode()

    # ------------------------------------------------------------------ mapping

    def get(self, key: str, default: Any = None) -> Any:
        hit = self._buffer.get(key)
        if hit is not None:
            return default if hit is _DELETED else hit
        reads = self._reads
        if reads is None:
            raw = self.backend.get(self.partition, self._key(key))
        elif key in reads:
            raw = reads[key]
        else:
            raw = reads[key] = self.backend.get(self.partition, self._key(key))
        return default if raw is None else raw[_STAMP.size :]

    def hold_reads(self, on: bool) -> None:
        """Most keys a batch reads are read again by a later event of the same conversation
        in that batch, and most are misses (an event id not seen, a conversation not selected,
        no memory): each read is a RocksDB lookup. A write goes to the buffer, which reads see
        first, so a held read is never older than the store's own value within the batch."""
        self._reads = {} if on else None

    def __getitem__(self, key: str) -> bytes:
        value = self.get(key)
        if value is None:
            raise KeyError(key)
        return value  # type: ignore[no-any-return]

    def __setitem__(self, key: str, value: bytes) -> None:
        self._check(key, value)
        self._buffer[key] = bytes(value)

    def __delitem__(self, key: str) -> None:
        if key not in self:
            raise KeyError(key)
        self._buffer[key] = _DELETED

    def __contains__(self, key: object) -> bool:
        return isinstance(key, str) and self.get(key) is not None

    def pop(self, key: str, default: Any = _DELETED) -> Any:
        """One read of the store (``MutableMapping.pop`` makes three: get, contains, delete)."""
        value = self.get(key)
        if value is None:
            if default is _DELETED:
                raise KeyError(key)
            return default
        self._buffer[key] = _DELETED
        return value

    def delete_present(self, key: str) -> None:
        """A tombstone without reading the value (the caller knows the key is held)."""
        self._buffer[key] = _DELETED

    def __iter__(self) -> Iterator[str]:
        return iter(self.keys_with_prefix(""))

    def __len__(self) -> int:
        return len(self.keys_with_prefix(""))

    def scan_prefix(self, prefix: str) -> Iterator[tuple[str, bytes]]:
        self.flush()
        n = len(self._bprefix)
        found = [
            (key[n:].decode(), value[_STAMP.size :])
            for key, value in self.backend.scan(self.partition, self._bprefix + prefix.encode())
        ]
        return iter(found)

    def stream_prefix(self, prefix: str) -> Iterator[tuple[str, bytes]]:
        self.flush()
        n = len(self._bprefix)
        for key, value in self.backend.stream(self.partition, self._bprefix + prefix.encode()):
            yield key[n:].decode(), value[_STAMP.size :]

    def keys_with_prefix(self, prefix: str) -> list[str]:
        self.flush()
        n = len(self._bprefix)
        found = self.backend.scan(self.partition, self._bprefix + prefix.encode(), keys_only=True)
        return [key[n:].decode() for key, _ in found]

    # ------------------------------------------------------------------ lifecycle

    def flush(self) -> None:
        if self._reads:
            self._reads.clear()  # the backend changes now
        if not self._buffer:
            return
        stamp = _STAMP.pack(self.now)
        buffered, self._buffer = self._buffer, {}
        self._written += len(buffered)
        for key, value in buffered.items():
            raw = None if value is _DELETED else stamp + value
            self.backend.put(self.partition, self._key(key), raw)

    def discard(self) -> None:
        """Drop buffered writes (the batch failed and will be processed again)."""
        self._buffer.clear()
        self._reads = None

    def _sweep(self, cutoff: float, max_entries: int) -> tuple[int, int]:
        """Delete what is due, reading the kind's keys only when something can be.

        A full sweep reads every key's stamp (cost and memory grow with the state), so it runs
        only when the last one's outcome says it may find work: keys beyond the bound (those it
        left plus every write since, an upper bound on the keys now), or its oldest key past
        the cutoff by more than :data:`EXPIRY_SLACK` of the lifetime. A key is thus deleted at
        most that much after it expired (plus one sweep interval), and a store within its bound
        and lifetime costs nothing to sweep.
        """
        self.flush()
        if self._swept is not None:
            left, oldest = self._swept
            ttl = self.spec.ttl_seconds
            slack = ttl * EXPIRY_SLACK if ttl is not None and cutoff > -math.inf else 0.0
            if left + self._written <= max_entries and oldest >= cutoff - slack:
                return 0, 0
        stamps = self.backend.stamps(self.partition, self._bprefix)
        doomed = [key for stamp, key in stamps if stamp < cutoff]
        expired = len(doomed)
        alive = [(s, k) for s, k in stamps if s >= cutoff]
        evicted = 0
        if len(alive) > max_entries:
            alive.sort()
            extra = [k for _, k in alive[: len(alive) - max_entries]]
            alive = alive[len(extra) :]
            doomed += extra
            evicted = len(extra)
        for key in doomed:
            self.backend.put(self.partition, key, None)
        # Every later write is stamped at this sweep's clock or after it.
        self._swept = (len(alive), min((s for s, _ in alive), default=self.now))
        self._written = 0
        return expired, evicted


class FaustStates:
    """:class:`~services.streaming.runner.States` over the ``state`` table."""

    def __init__(self, backend: TableBackend, specs: Mapping[str, StateSpec]) -> None:
        self.backend = backend
        self.specs = specs
        self._stores: dict[tuple[str, int], TableStore] = {}

    def store(self, kind: str, partition: int) -> TableStore:
        key = (kind, partition)
        found = self._stores.get(key)
        if found is None:
            found = self._stores[key] = TableStore(self.specs[kind], self.backend, partition)
        return found

    def forget(self) -> None:
        for store in self._stores.values():
            store.discard()
        self._stores.clear()

    async def drain(self) -> None:
        await self.backend.drain()
