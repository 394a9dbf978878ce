"""State that ``vigil scan`` keeps on disk: one SQLite file (standard library) per run.

What must survive to the end of a scan (review items, evaluation-set cases and their
accumulators) grows with the number of conversations in the file, so holding it in memory makes
a scan's memory grow with the file. A :class:`SqliteStore` keeps such a kind in a table of a
private temporary database, with a small write buffer in front: memory stays flat, the file
holds at most the kind's bound. :class:`SpillFile` owns the database (a private folder, mode
0700, removed when the scan ends); :meth:`SpillFile.durable` opens a database that stays (the
embedded review queue of ``vigil review serve --from DIR``), where every flush is a committed
transaction.
"""

from __future__ import annotations

import shutil
import sqlite3
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from services.dataflow.state import KeyedStore, StateSpec

__all__ = ["KeyFilter", "SpillFile", "SqliteStore"]

#: Buffered writes per store before they go to SQLite in one transaction.
FLUSH_EVERY = 2048


class SpillFile:
    """A private temporary SQLite database for the spilled stores of one run."""

    def __init__(
        self, parent: Path | None = None, *, cache_kib: int = 8192, path: Path | None = None
    ) -> None:
        self.keep = path is not None
        if path is None:
            self.folder = Path(tempfile.mkdtemp(prefix="vigil-spill-", dir=parent))
            self.folder.chmod(0o700)
            self.path = self.folder / "state.sqlite"
        else:
            self.folder = path.parent
            self.path = path
        self.db = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False)
        durable = ("journal_mode=WAL", "synchronous=FULL")
        scratch = ("journal_mode=OFF", "synchronous=OFF")
        for pragma in (
            *(durable if self.keep else scratch),
            "temp_store=FILE",
            f"cache_size=-{cache_kib}",
        ):
            self.db.execute(f"PRAGMA {pragma}")
        self.stores: list[SqliteStore] = []

    @classmethod
    def durable(cls, path: Path) -> SpillFile:
        """A database at ``path`` that outlives the process (created mode 0600)."""
        path.parent.mkdir(parents=True, exist_ok=True)
        path.touch(mode=0o600, exist_ok=True)
        return cls(path=path)

    def store(self, spec: StateSpec) -> SqliteStore:
        s = SqliteStore(spec, self)
        self.stores.append(s)
        return s

    def close(self) -> None:
        for s in self.stores:
            s.flush()
        self.db.close()
        if not self.keep:
            shutil.rmtree(self.folder, ignore_errors=True)

    def __enter__(self) -> SpillFile:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


_MISSING: Any = object()


class KeyFilter:
    """A Bloom filter over the keys a store has written, so that reading a key never written
    (every new event id, conversation, case …) answers without a query: in a scan most reads
    are of new keys, and each query costs more than the rest of the read. Eight bits per key
    of the kind's bound, two probes: at the bound ~5 % of absent keys still query, and the
    filter of the largest kind (a million event ids) holds 1 MiB. Per process (``hash`` is
    salted), never stored."""

    __slots__ = ("_bits", "_mask")

    def __init__(self, capacity: int) -> None:
        size = 1 << max(16, (8 * capacity - 1).bit_length())
        self._mask = size - 1
        self._bits = bytearray(size >> 3)

    def add(self, key: str) -> None:
        h = hash(key)
        a, b = h & self._mask, (h >> 32) & self._mask
        self._bits[a >> 3] |= 1 << (a & 7)
        self._bits[b >> 3] |= 1 << (b & 7)

    def may_hold(self, key: str) -> bool:
        h = hash(key)
        a, b = h & self._mask, (h >> 32) & self._mask
        return bool(self._bits[a >> 3] & (1 << (a & 7)) and self._bits[b >> 3] & (1 << (b & 7)))


class SqliteStore(KeyedStore):
    """One kind of state in a table of a :class:`SpillFile`; writes buffered, then batched."""

    def __init__(self, spec: StateSpec, spill: SpillFile) -> None:
        super().__init__(spec)
        self._db = spill.db
        self._table = "kv_" + spec.kind.replace("-", "_")
        self._db.execute(
            f"CREATE TABLE IF NOT EXISTS {self._table} "
            "(k TEXT PRIMARY KEY, v BLOB NOT NULL, t REAL NOT NULL) WITHOUT ROWID"
        )
        self._db.execute(f"CREATE INDEX IF NOT EXISTS {self._table}_t ON {self._table} (t)")
        #: key -> (value, written at) or None (deleted), not yet in the table.
        self._buffer: dict[str, tuple[bytes, float] | None] = {}
        #: The keys written into a run's private database (``None`` for a durable one, as the
        #: queue of ``vigil review serve``: it holds rows from before, and other processes may
        #: write it; every read queries).
        self._written: KeyFilter | None = None if spill.keep else KeyFilter(spec.max_entries)

    # ------------------------------------------------------------------ mapping

    def get(self, key: str, default: Any = None) -> Any:
        hit = self._buffer.get(key, _MISSING)
        if hit is not _MISSING:
            return default if hit is None else hit[0]
        if self._written is not None and not self._written.may_hold(key):
            return default
        row = self._db.execute(f"SELECT v FROM {self._table} WHERE k = ?", (key,)).fetchone()
        return default if row is None else bytes(row[0])

    def __getitem__(self, key: str) -> bytes:
        value = self.get(key)
        if value is None:
            raise KeyError(key)
        return value  # type: ignore[no-any-return]

    def __setitem__(self, key: str, value: bytes) -> None:
        self._check(key, value)
        self._buffer[key] = (bytes(value), self.now)
        if self._written is not None:
            self._written.add(key)
        if len(self._buffer) >= FLUSH_EVERY:
            self.flush()

    def __delitem__(self, key: str) -> None:
        if key not in self:
            raise KeyError(key)
        self._buffer[key] = None
        if len(self._buffer) >= FLUSH_EVERY:
            self.flush()

    def __contains__(self, key: object) -> bool:
        return isinstance(key, str) and self.get(key) is not None

    def __iter__(self) -> Iterator[str]:
        self.flush()
        rows = self._db.execute(f"SELECT k FROM {self._table} ORDER BY k").fetchall()
        return iter([r[0] for r in rows])

    def __len__(self) -> int:
        self.flush()
        return int(self._db.execute(f"SELECT COUNT(*) FROM {self._table}").fetchone()[0])

    def scan_prefix(self, prefix: str) -> Iterator[tuple[str, bytes]]:
        self.flush()
        upper = prefix + "\U0010ffff"
        rows = self._db.execute(
            f"SELECT k, v FROM {self._table} WHERE k >= ? AND k < ? ORDER BY k", (prefix, upper)
        ).fetchall()
        return iter([(k, bytes(v)) for k, v in rows])

    def keys_with_prefix(self, prefix: str) -> list[str]:
        """Keys only: the values (an eval-set period's accumulators, KiBs each) stay on disk."""
        self.flush()
        upper = prefix + "\U0010ffff"
        rows = self._db.execute(
            f"SELECT k FROM {self._table} WHERE k >= ? AND k < ? ORDER BY k", (prefix, upper)
        ).fetchall()
        return [r[0] for r in rows]

    def items_by_key(self) -> Iterator[tuple[str, bytes]]:
        """Every ``(key, value)`` in key order, read in pages (for writing outputs)."""
        self.flush()
        last = ""
        while True:
            rows = self._db.execute(
                f"SELECT k, v FROM {self._table} WHERE k > ? ORDER BY k LIMIT 512", (last,)
            ).fetchall()
            if not rows:
                return
            for k, v in rows:
                yield k, bytes(v)
            last = rows[-1][0]

    def keys_sorted_by(self, order: Callable[[bytes], tuple[int, str]]) -> Iterator[str]:
        """Every key, sorted by ``order(value)`` then key, without holding the keys: the sort
        keys go into a temporary table of the same database (on disk: ``temp_store=FILE``) and
        are read back in pages."""
        table = f"{self._table}_order"
        db = self._db
        db.execute(f"DROP TABLE IF EXISTS temp.{table}")
        db.execute(f"CREATE TEMP TABLE {table} (a INTEGER NOT NULL, b TEXT NOT NULL, k TEXT)")
        try:
            page: list[tuple[int, str, str]] = []
            for key, value in self.items_by_key():
                page.append((*order(value), key))
                if len(page) >= 512:
                    db.executemany(f"INSERT INTO temp.{table} VALUES (?, ?, ?)", page)
                    page = []
            db.executemany(f"INSERT INTO temp.{table} VALUES (?, ?, ?)", page)
            cursor = db.execute(f"SELECT k FROM temp.{table} ORDER BY a, b, k")
            while rows := cursor.fetchmany(512):
                for (key,) in rows:
                    yield key
        finally:
            db.execute(f"DROP TABLE IF EXISTS temp.{table}")

    # ------------------------------------------------------------------ lifecycle

    def flush(self) -> None:
        if not self._buffer:
            return
        puts = [(k, v[0], v[1]) for k, v in self._buffer.items() if v is not None]
        dels = [(k,) for k, v in self._buffer.items() if v is None]
        self._buffer.clear()
        db = self._db
        db.execute("BEGIN")
        try:
            if puts:
                db.executemany(
                    f"INSERT OR REPLACE INTO {self._table} (k, v, t) VALUES (?, ?, ?)", puts
                )
            if dels:
                db.executemany(f"DELETE FROM {self._table} WHERE k = ?", dels)
            db.execute("COMMIT")
        except BaseException:
            db.execute("ROLLBACK")
            raise

    def _sweep(self, cutoff: float, max_entries: int) -> tuple[int, int]:
        self.flush()
        db = self._db
        expired = db.execute(f"DELETE FROM {self._table} WHERE t < ?", (cutoff,)).rowcount
        count = int(db.execute(f"SELECT COUNT(*) FROM {self._table}").fetchone()[0])
        evicted = 0
        if count > max_entries:
            evicted = db.execute(
                f"DELETE FROM {self._table} WHERE k IN "
                f"(SELECT k FROM {self._table} ORDER BY t, k LIMIT ?)",
                (count - max_entries,),
            ).rowcount
        return max(expired, 0), max(evicted, 0)
