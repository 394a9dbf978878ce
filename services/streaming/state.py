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

import struct
from collections.abc import Iterator, Mapping
from functools import partial
from typing import Any

from faust.types import TP

from services.dataflow.state import KeyedStore, StateSpec
from services.streaming.transactions import current_transaction

__all__ = ["STATE_TABLE", "FaustStates", "TableBackend", "TableStore"]

STATE_TABLE = "state"
_STAMP = struct.Struct(">d")
_DELETED: Any = object()


class TableBackend:
    """Direct access to a Faust table's store by partition (RocksDB or memory)."""

    def __init__(self, table: Any) -> None:
        self.table = table
        #: key -> the future of its last changelog record not yet acknowledged
        self.last_write: dict[bytes, Any] = {}
        #: (partition, key, value) written in a batch scope of the exactly-once mode, not sent
        self._outbox: list[tuple[int, bytes, bytes | None]] = []

    @property
    def store(self) -> Any:
        return self.table.data

    def _rocks(self) -> bool:
        return hasattr(self.store, "_db_for_partition")

    def get(self, partition: int, key: bytes) -> bytes | None:
        store = self.store
        if self._rocks():
            value = store._db_for_partition(partition).get(key)
            return None if value is None else bytes(value)
        value = store.data.get(key)
        return None if value is None else bytes(value)

    def put(self, partition: int, key: bytes, value: bytes | None) -> None:
        """Write (``None``: delete) locally and send the changelog record to ``partition``."""
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
        if current_transaction() is not None:  # exactly-once: drain() sends it in the batch's
            self._outbox.append((partition, key, value))
            return
        fut = self.table.send_changelog(partition, key, value, "raw", "raw")
        self.last_write[key] = fut
        fut.add_done_callback(partial(self._written, key))

    async def drain(self) -> None:
        """Send the changelog records held back in a batch scope (exactly-once mode) in the
        scope's transaction (:mod:`services.streaming.transactions`)."""
        outbox, self._outbox = self._outbox, []
        if not outbox:
            return
        tid = current_transaction()
        app = self.table.app
        topic = self.table.changelog_topic.get_topic_name()
        for partition, key, value in outbox:
            fut = await app.producer.send(
                topic, key, value, partition, None, None, transactional_id=tid
            )
            self.last_write[key] = fut
            fut.add_done_callback(partial(self._written, key))
            fut.add_done_callback(self._persist_on_commit)

    def _persist_on_commit(self, fut: Any) -> None:
        """RocksDB keeps the changelog offset it holds data up to; in a transaction it may
        only move when the transaction commits (as Faust's own changelog sends do)."""
        if fut.cancelled() or fut.exception() is not None:
            return
        meta = fut.result()
        tp = TP(meta.topic, meta.partition)
        self.table.app.tables.persist_offset_on_commit(self.table.data, tp, meta.offset)

    def _written(self, key: bytes, fut: Any) -> None:
        if self.last_write.get(key) is fut:
            del self.last_write[key]

    def pending(self, partition: int, kind: str, key: str) -> Any:
        """The future of the last unacknowledged changelog write of a key, or ``None``."""
        return self.last_write.get(f"{partition}|{kind}|{key}".encode())

    def scan(self, partition: int, prefix: bytes) -> Iterator[tuple[bytes, bytes]]:
        """``(key, value)`` of the keys of ``partition`` starting with ``prefix``."""
        store = self.store
        if self._rocks():
            db = store._db_for_partition(partition)
            for key, value in db.items(from_key=prefix):
                if not key.startswith(prefix):
                    break
                yield bytes(key), bytes(value)
            return
        for key, value in list(store.data.items()):
            if isinstance(key, bytes) and key.startswith(prefix) and value is not None:
                yield key, bytes(value)


class TableStore(KeyedStore):
    """One kind of state on one partition of the ``state`` table (see the module docstring)."""

    def __init__(self, spec: StateSpec, backend: TableBackend, partition: int) -> None:
        super().__init__(spec)
        self.backend = backend
        self.partition = partition
        self._prefix = f"{partition}|{spec.kind}|"
        self._bprefix = self._prefix.encode()
        self._buffer: dict[str, Any] = {}

    def _key(self, key: str) -> bytes:
        return (self._prefix + key).encode()

    # ------------------------------------------------------------------ mapping

    def get(self, key: str, default: Any = None) -> Any:
        hit = self._buffer.get(key)
        if hit is not None:
            return default if hit is _DELETED else hit
        raw = self.backend.get(self.partition, self._key(key))
        return default if raw is None else raw[_STAMP.size :]

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

    def __iter__(self) -> Iterator[str]:
        return iter([k for k, _ in self.scan_prefix("")])

    def __len__(self) -> int:
        return sum(1 for _ in self.scan_prefix(""))

    def scan_prefix(self, prefix: str) -> Iterator[tuple[str, bytes]]:
        self.flush()
        n = len(self._bprefix)
        found = [
            (key[n:].decode(), value[_STAMP.size :])
            for key, value in self.backend.scan(self.partition, self._bprefix + prefix.encode())
        ]
        return iter(found)

    # ------------------------------------------------------------------ lifecycle

    def flush(self) -> None:
        if not self._buffer:
            return
        stamp = _STAMP.pack(self.now)
        buffered, self._buffer = self._buffer, {}
        for key, value in buffered.items():
            raw = None if value is _DELETED else stamp + value
            self.backend.put(self.partition, self._key(key), raw)

    def discard(self) -> None:
        """Drop buffered writes (the batch failed and will be processed again)."""
        self._buffer.clear()

    def _sweep(self, cutoff: float, max_entries: int) -> tuple[int, int]:
        self.flush()
        stamps = [
            (_STAMP.unpack_from(value)[0], key)
            for key, value in self.backend.scan(self.partition, self._bprefix)
        ]
        doomed = [key for stamp, key in stamps if stamp < cutoff]
        expired = len(doomed)
        left = len(stamps) - expired
        evicted = 0
        if left > max_entries:
            alive = sorted((s, k) for s, k in stamps if s >= cutoff)
            extra = [k for _, k in alive[: left - max_entries]]
            doomed += extra
            evicted = len(extra)
        for key in doomed:
            self.backend.put(self.partition, key, None)
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
