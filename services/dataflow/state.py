"""Keyed state with a bound and a lifetime: the one state interface of every stage.

A stage keeps what it must remember between events in :class:`KeyedStore`\\ s, one per kind of
state (conversation memory, review context, review items, ...). Each kind has a
:class:`StateSpec`: a bound on the number of keys, a time-to-live since a key was last written,
and a bound on the size of one value. Together they bound the state: at most ``max_entries ×
max_value_bytes`` per partition, and nothing older than ``ttl_seconds``.

A store is a ``MutableMapping[str, bytes]`` (values are the stage's own encoding, usually compact
JSON) with a clock: the runner sets :attr:`KeyedStore.now` (epoch seconds: the event time in
``vigil scan``, the wall clock in the worker) and every write records it. :meth:`expire` deletes
the keys idle for longer than the TTL and, beyond the bound, the least recently written ones; the
runners call it regularly. In the worker a deletion is a tombstone in the table's changelog, so
the compacted changelog stays bounded too.

Implementations: :class:`MemoryStore` (here, exact LRU), ``SqliteStore``
(:mod:`services.dataflow.spill`, state that ``vigil scan`` keeps on disk) and the Faust table
adapter of the worker (:mod:`services.streaming.state`).
"""

from __future__ import annotations

import logging
import math
from collections import OrderedDict
from collections.abc import Iterable, Iterator, MutableMapping
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

__all__ = [
    "RECORD_ROOM",
    "KeyedStore",
    "MemoryStore",
    "ObjectCache",
    "StateCeilingError",
    "StateSpec",
    "StateValueTooLarge",
    "StoreStats",
    "check_ceilings",
]

log = logging.getLogger("vigil.state")


class StateValueTooLarge(ValueError):
    """A stage tried to store a value larger than its kind allows (a bug in the stage)."""


class StateCeilingError(ValueError):
    """A kind of state whose values could not be sent as one changelog record (a setting)."""


#: Room in a changelog record besides the value: key, timestamp, headers, batch framing.
RECORD_ROOM = 4096


class StateSpec(BaseModel):
    """One kind of state: its name, bound, lifetime and largest value."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    kind: str = Field(pattern=r"^[a-z][a-z0-9-]*$")
    #: Keys kept (per partition in the worker, per run in ``vigil scan``).
    max_entries: int = Field(ge=1)
    #: Seconds since a key was last written after which it is deleted; ``None``: never by age.
    ttl_seconds: float | None = Field(default=None, gt=0)
    #: The largest encoded value a stage may store (the stage bounds what it writes).
    max_value_bytes: int = Field(ge=16)
    description: str = ""
    #: What bounds ``max_value_bytes`` (a setting's name), for the error of :func:`check_ceilings`.
    setting: str = ""

    @property
    def max_bytes(self) -> int:
        """The bound on the values of one partition (or one scan)."""
        return self.max_entries * self.max_value_bytes


def check_ceilings(specs: Iterable[StateSpec], max_request_size: int) -> None:
    """Refuse kinds of state whose values the producer could not send as one changelog record
    (the worker checks every kind once, at start; the broker's ``max.message.bytes`` is 1 MiB
    by default, the producer's ``max_request_size`` 1,000,000 bytes)."""
    over = [s for s in specs if s.max_value_bytes + RECORD_ROOM > max_request_size]
    if over:
        raise StateCeilingError(
            "; ".join(
                f"{s.kind}: values of up to {s.max_value_bytes} bytes leave no room under the "
                f"producer's max_request_size ({max_request_size} bytes, {RECORD_ROOM} for key "
                f"and framing); lower {s.setting or 'its bound'}"
                for s in over
            )
        )


class StoreStats(BaseModel):
    """Counts of what a store dropped, for metrics and summaries."""

    model_config = ConfigDict(extra="forbid")
    expired: int = 0
    evicted: int = 0


class KeyedStore(MutableMapping[str, bytes]):
    """A bounded keyed store of bytes. Subclasses implement the mapping and :meth:`_sweep`."""

    spec: StateSpec
    #: The runner's clock (epoch seconds); writes are stamped with it.
    now: float
    stats: StoreStats

    def __init__(self, spec: StateSpec) -> None:
        self.spec = spec
        self.now = 0.0
        self.stats = StoreStats()

    def _check(self, key: str, value: bytes) -> None:
        if not isinstance(value, bytes | bytearray):
            raise TypeError(f"{self.spec.kind}: values are bytes, not {type(value).__name__}")
        if len(value) > self.spec.max_value_bytes:
            raise StateValueTooLarge(
                f"{self.spec.kind}: a value of {len(value)} bytes is over the bound of "
                f"{self.spec.max_value_bytes}"
            )

    def expire(self, now: float | None = None, *, by_age: bool = True) -> int:
        """Delete keys idle beyond the TTL (unless ``by_age`` is false) and the least recently
        written beyond the bound; return how many were deleted."""
        if now is not None:
            self.now = now
        ttl = self.spec.ttl_seconds
        cutoff = self.now - ttl if ttl is not None and by_age else -math.inf
        expired, evicted = self._sweep(cutoff, self.spec.max_entries)
        self.stats.expired += expired
        self.stats.evicted += evicted
        return expired + evicted

    def _sweep(self, cutoff: float, max_entries: int) -> tuple[int, int]:
        """Delete keys written before ``cutoff``, then the oldest beyond ``max_entries``."""
        raise NotImplementedError

    def flush(self) -> None:
        """Make buffered writes durable (a no-op where writes are immediate)."""

    def discard(self) -> None:
        """Drop buffered writes not yet flushed (a no-op where writes are immediate)."""

    def hold_reads(self, on: bool) -> None:
        """``True``: from now until ``hold_reads(False)``, :meth:`flush` or :meth:`discard`,
        a key read again is answered from the first read (a miss too) unless it was written
        since; ``False``: forget them. A runner holds reads for one batch, during which nothing
        else writes the store (a no-op where reads cost nothing: in memory)."""

    def close(self) -> None:
        """Release what the store holds open."""

    def delete_present(self, key: str) -> None:
        """Delete ``key``, which the caller knows the store holds (it came from
        :meth:`keys_with_prefix` since the last write of it), without reading its value first:
        where a read costs (RocksDB), deleting a period's accumulators this way saves a read of
        each. Here, as :meth:`pop`; a store that writes a deletion blindly may send a tombstone
        for a key it does not hold when the caller was wrong."""
        self.pop(key, None)

    def scan_prefix(self, prefix: str) -> Iterator[tuple[str, bytes]]:
        """``(key, value)`` of the keys starting with ``prefix`` (a snapshot)."""
        for key in [k for k in self if k.startswith(prefix)]:
            value = self.get(key)
            if value is not None:
                yield key, value

    def keys_with_prefix(self, prefix: str) -> list[str]:
        """The keys starting with ``prefix``, in key order (a snapshot; no value is held)."""
        return sorted(k for k in self if k.startswith(prefix))

    def stream_prefix(self, prefix: str) -> Iterator[tuple[str, bytes]]:
        """``(key, value)`` of the keys starting with ``prefix``, one at a time, holding no
        more than one value: where values are large and many (a period's accumulators) and
        a read of one key costs (RocksDB: a point read finds its block again, a scan reads the
        blocks in order). Not a snapshot: the caller writes nothing to the store until it has
        consumed the iterator. Here, as :meth:`scan_prefix`."""
        return self.scan_prefix(prefix)


class MemoryStore(KeyedStore):
    """In process: an exact LRU by last write, bounded at every write, expired by :meth:`expire`.

    ``max_bytes`` bounds the values held in total as well (least recently written out first).

    >>> s = MemoryStore(StateSpec(kind="demo", max_entries=2, ttl_seconds=10, max_value_bytes=64))
    >>> s.now = 100.0
    >>> s["a"] = b"1"; s["b"] = b"2"; s["c"] = b"3"
    >>> sorted(s), s.stats.evicted
    (['b', 'c'], 1)
    >>> s.expire(now=111.0), len(s)
    (2, 0)
    """

    def __init__(self, spec: StateSpec, *, max_bytes: int | None = None) -> None:
        super().__init__(spec)
        self.max_bytes = max_bytes
        self.bytes = 0
        self._data: OrderedDict[str, tuple[bytes, float]] = OrderedDict()

    def __getitem__(self, key: str) -> bytes:
        return self._data[key][0]

    def get(self, key: str, default: Any = None) -> Any:
        hit = self._data.get(key)
        return default if hit is None else hit[0]

    def __setitem__(self, key: str, value: bytes) -> None:
        self._check(key, value)
        data = self._data
        old = data.get(key)
        if old is not None:
            self.bytes -= len(old[0])
        data[key] = (bytes(value), self.now)
        self.bytes += len(value)
        data.move_to_end(key)
        limit = self.max_bytes
        while len(data) > self.spec.max_entries or (
            limit is not None and self.bytes > limit and len(data) > 1
        ):
            self._pop_oldest()
            self.stats.evicted += 1

    def _pop_oldest(self) -> None:
        _, (value, _) = self._data.popitem(last=False)
        self.bytes -= len(value)

    def __delitem__(self, key: str) -> None:
        value, _ = self._data.pop(key)
        self.bytes -= len(value)

    def __contains__(self, key: object) -> bool:
        return key in self._data

    def stream_prefix(self, prefix: str) -> Iterator[tuple[str, bytes]]:
        data = self._data
        for key in sorted(k for k in data if k.startswith(prefix)):
            yield key, data[key][0]

    def delete_present(self, key: str) -> None:
        hit = self._data.pop(key, None)
        if hit is not None:
            self.bytes -= len(hit[0])

    def __iter__(self) -> Iterator[str]:
        return iter(list(self._data))

    def __len__(self) -> int:
        return len(self._data)

    def touched(self, key: str) -> float | None:
        hit = self._data.get(key)
        return None if hit is None else hit[1]

    def _sweep(self, cutoff: float, max_entries: int) -> tuple[int, int]:
        data = self._data
        expired = 0
        # Oldest write first: stop at the first key written at or after the cutoff. Writes are
        # stamped with a clock that can go backwards (event time), so this is approximate by at
        # most the clock's disorder; the bound below is exact.
        while data:
            _, (_, touched) = next(iter(data.items()))
            if touched >= cutoff:
                break
            self._pop_oldest()
            expired += 1
        evicted = 0
        while len(data) > max_entries:
            self._pop_oldest()
            evicted += 1
        return expired, evicted


def typed_get(store: MutableMapping[str, bytes], key: str, model: type[BaseModel]) -> Any:
    """The model stored at ``key``, or ``None``."""
    raw = store.get(key)
    return None if raw is None else model.model_validate_json(raw)


class ObjectCache:
    """Decoded values of keyed stores, written back at :meth:`flush` (write-back, bounded).

    A stage that reads, changes and writes the same value for every event of a conversation
    (an eval-set accumulator, the review context) decodes it once and encodes it once per
    batch instead of once per event. ``flush`` (the runners call it at the end of every batch,
    before the batch can be committed) writes every changed value to its store; an entry pushed
    out of the cache is written first. Entries remember their store, so one cache serves every
    partition. Bounded by entries (``size``) and, given ``weigh`` (an upper bound of a value's
    encoded size), by ``max_weight`` in total: a few large values do not take the memory that
    ``size`` small ones would. With ``max_weight`` and no ``weigh``, a value weighs its last
    encoding (read from the store, or written at a flush): a value changed since is counted at
    its old size until the next flush, so the bound holds between batches and is exceeded within
    one only by what its events added.
    """

    def __init__(
        self,
        decode: Any,
        encode: Any,
        size: int = 512,
        *,
        weigh: Any = None,
        max_weight: int | None = None,
    ) -> None:
        self.decode = decode
        self.encode = encode
        self.size = size
        self.weigh = weigh
        self.max_weight = max_weight
        #: The weight of the values held (0 without ``weigh``).
        self.weight = 0
        self._entries: OrderedDict[tuple[int, str], list[Any]] = OrderedDict()
        #: The entries changed since the last flush (a flush writes these, not the whole cache).
        self._dirty: dict[tuple[int, str], list[Any]] = {}

    def get(self, store: MutableMapping[str, bytes], key: str) -> Any:
        """The decoded value at ``key`` (``None`` when absent); cached."""
        entry = self._entries.get((id(store), key))
        if entry is not None and entry[0] is store:
            self._entries.move_to_end((id(store), key))
            return entry[1]
        raw = store.get(key)
        if raw is None:
            return None
        value = self.decode(raw)
        self._remember(store, key, value, dirty=False, encoded=len(raw))
        return value

    def put(self, store: MutableMapping[str, bytes], key: str, value: Any) -> None:
        """Set ``key`` to ``value`` (written at the next :meth:`flush`)."""
        self._remember(store, key, value, dirty=True)

    def delete(self, store: MutableMapping[str, bytes], key: str, *, present: bool = False) -> None:
        """Forget ``key`` and delete it from ``store``; ``present``: the caller knows the store
        holds it (:meth:`KeyedStore.delete_present`, no read of the value)."""
        entry = self._entries.pop((id(store), key), None)
        if entry is not None:
            self.weight -= entry[3]
        self._dirty.pop((id(store), key), None)
        if present and isinstance(store, KeyedStore):
            store.delete_present(key)
        else:
            store.pop(key, None)

    def raw(self, store: MutableMapping[str, bytes], key: str) -> bytes | None:
        """The encoded value as the store will hold it after the next flush."""
        ident = (id(store), key)
        entry = self._entries.get(ident)
        if entry is not None and entry[0] is store and entry[2]:
            self._write(entry, key)
            self._dirty.pop(ident, None)
        return store.get(key)

    def _remember(
        self,
        store: MutableMapping[str, bytes],
        key: str,
        value: Any,
        *,
        dirty: bool,
        encoded: int | None = None,
    ) -> None:
        ident = (id(store), key)
        old = self._entries.get(ident)
        if self.weigh is not None:
            weight = self.weigh(value)
        elif encoded is not None and self.max_weight is not None:
            weight = encoded
        else:  # weighed by its encoding: the last one known
            weight = old[3] if old is not None and old[0] is store else 0
        if old is not None and old[0] is store:
            old[1] = value
            self.weight += weight - old[3]
            old[3] = weight
            if dirty and not old[2]:
                old[2] = True
                self._dirty[ident] = old
            self._entries.move_to_end(ident)
        else:
            if old is not None:  # the key of a store that is gone (its id reused)
                self.weight -= old[3]
            entry = [store, value, dirty, weight]
            self.weight += weight
            self._entries[ident] = entry
            if dirty:
                self._dirty[ident] = entry
        self._evict()

    def _evict(self) -> None:
        """Push out the least recently used entries beyond the bounds (written first)."""
        limit = self.max_weight
        while len(self._entries) > self.size or (
            limit is not None and self.weight > limit and len(self._entries) > 1
        ):
            gone, entry = self._entries.popitem(last=False)
            if entry[2]:
                self._write(entry, gone[1])
                self._dirty.pop(gone, None)
            self.weight -= entry[3]

    def _write(self, entry: list[Any], key: str) -> None:
        store, value = entry[0], entry[1]
        raw = self.encode(value)
        store[key] = raw
        entry[2] = False
        if self.weigh is None and self.max_weight is not None:
            self.weight += len(raw) - entry[3]
            entry[3] = len(raw)

    def flush(self) -> None:
        """Write every changed value to its store (then the bounds hold again)."""
        dirty, self._dirty = self._dirty, {}
        for (_, key), entry in dirty.items():
            if entry[2]:
                self._write(entry, key)
        self._evict()

    def clear(self) -> None:
        """Forget every entry without writing (after a rebalance: the store is the truth)."""
        self._entries.clear()
        self._dirty.clear()
        self.weight = 0
