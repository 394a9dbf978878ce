"""The keyed state of the dataflow: bounds, lifetimes, and the same contract for every store."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from services.dataflow.spill import FLUSH_EVERY, SpillFile
from services.dataflow.state import (
    KeyedStore,
    MemoryStore,
    ObjectCache,
    StateSpec,
    StateValueTooLarge,
)

SPEC = StateSpec(kind="demo", max_entries=5, ttl_seconds=100.0, max_value_bytes=64)


@pytest.fixture(params=["memory", "sqlite"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[KeyedStore]:
    if request.param == "memory":
        yield MemoryStore(SPEC)
        return
    with SpillFile(tmp_path) as spill:
        yield spill.store(SPEC)


def test_reads_what_was_written_and_deletes(store: KeyedStore) -> None:
    store.now = 10.0
    store["a"] = b"1"
    store["b"] = b"2"
    assert store.get("a") == b"1" and store["b"] == b"2" and "a" in store
    del store["a"]
    assert store.get("a") is None and "a" not in store
    assert sorted(store) == ["b"] and len(store) == 1
    with pytest.raises(KeyError):
        del store["missing"]


def test_keys_idle_beyond_the_ttl_expire(store: KeyedStore) -> None:
    store.now = 0.0
    store["old"] = b"x"
    store.now = 50.0
    store["new"] = b"y"
    assert store.expire(now=120.0) == 1
    assert sorted(store) == ["new"]
    assert store.stats.expired == 1
    # A rewrite renews the lifetime.
    store["new"] = b"z"
    assert store.expire(now=200.0) == 0 and store.get("new") == b"z"


def test_the_bound_evicts_the_least_recently_written(store: KeyedStore) -> None:
    for i in range(8):
        store.now = float(i)
        store[f"k{i}"] = b"v"
    store.expire()
    assert sorted(store) == ["k3", "k4", "k5", "k6", "k7"]
    assert store.stats.evicted == 3


def test_expiry_by_bound_only_keeps_old_keys(store: KeyedStore) -> None:
    store.now = 0.0
    store["kept"] = b"v"
    assert store.expire(now=1e9, by_age=False) == 0 and "kept" in store


def test_a_value_over_the_bound_is_refused(store: KeyedStore) -> None:
    with pytest.raises(StateValueTooLarge, match="demo"):
        store["big"] = b"x" * 65
    with pytest.raises(TypeError):
        store["text"] = "not bytes"  # type: ignore[assignment]


def test_prefix_scan(store: KeyedStore) -> None:
    for key in ("0|A|x", "0|A|y", "0|S|x", "1|A|z"):
        store[key] = key.encode()
    assert [k for k, _ in store.scan_prefix("0|A|")] == ["0|A|x", "0|A|y"]
    # Keys alone (the eval-set close lists a period's accumulators without loading them).
    store["0|A|w"] = b"w"
    del store["0|A|x"]
    assert store.keys_with_prefix("0|A|") == ["0|A|w", "0|A|y"]
    assert store.keys_with_prefix("2|") == []


def test_memory_store_bounds_bytes_too() -> None:
    s = MemoryStore(SPEC, max_bytes=100)
    for i in range(4):
        s[f"k{i}"] = b"x" * 40
    assert sorted(s) == ["k2", "k3"] and s.bytes == 80


def test_sqlite_store_flushes_in_batches_and_removes_its_file(tmp_path: Path) -> None:
    spec = StateSpec(kind="many", max_entries=10 * FLUSH_EVERY, max_value_bytes=64)
    with SpillFile(tmp_path) as spill:
        s = spill.store(spec)
        for i in range(FLUSH_EVERY + 10):
            s[f"k{i:06d}"] = b"v"
        assert len(s) == FLUSH_EVERY + 10
        assert s.get("k000005") == b"v"
        folder = spill.folder
        assert oct(folder.stat().st_mode & 0o777) == "0o700"
    assert not folder.exists()


def test_importing_the_file_runner_loads_no_kafka_faust_web_or_scipy() -> None:
    code = (
        "import sys, services.scan;"
        "bad = {'faust', 'aiokafka', 'aiohttp', 'kafka', 'mode', 'scipy', 'matplotlib'};"
        "print(sorted({m.split('.')[0] for m in sys.modules} & bad))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_sqlite_store_lists_keys_sorted_by_their_values(tmp_path: Path) -> None:
    spec = StateSpec(kind="items", max_entries=10_000, max_value_bytes=64)
    with SpillFile(tmp_path) as spill:
        s = spill.store(spec)
        for i in range(1500):  # more than a page of the temporary table
            s[f"k{i:05d}"] = f"{i % 7},{1500 - i}".encode()

        def rank(value: bytes) -> tuple[int, str]:
            prio, age = value.decode().split(",")
            return -int(prio), f"{int(age):06d}"

        got = list(s.keys_sorted_by(rank))
        assert got == sorted(s, key=lambda k: (*rank(s[k]), k))
        assert len(got) == 1500 and got[0] == "k01497"  # priority 6, the smallest age
        assert list(s.keys_sorted_by(rank)) == got  # the temporary table is dropped and redone


def _counting_selects(spill: SpillFile) -> list[str]:
    seen: list[str] = []
    spill.db.set_trace_callback(
        lambda sql: seen.append(sql) if sql.startswith("SELECT v") else None
    )
    return seen


def test_a_scan_store_reads_a_key_never_written_without_a_query(tmp_path: Path) -> None:
    spec = StateSpec(kind="ids", max_entries=4 * FLUSH_EVERY, max_value_bytes=64)
    with SpillFile(tmp_path) as spill:
        s = spill.store(spec)
        for i in range(2 * FLUSH_EVERY):
            s[f"seen-{i}"] = b"v"
        s.flush()
        selects = _counting_selects(spill)
        assert all(s.get(f"seen-{i}") == b"v" for i in range(2 * FLUSH_EVERY))
        assert len(selects) == 2 * FLUSH_EVERY  # every written key is read from the table
        selects.clear()
        assert all(s.get(f"new-{i}") is None for i in range(2 * FLUSH_EVERY))
        assert len(selects) < FLUSH_EVERY // 10  # the filter's false positives only
        del s["seen-1"]
        s.flush()
        assert s.get("seen-1") is None  # deleted keys stay in the filter, and the query answers


def test_a_durable_store_reads_what_another_connection_wrote(tmp_path: Path) -> None:
    path = tmp_path / "queue.sqlite"
    with SpillFile.durable(path) as first, SpillFile.durable(path) as second:
        reader, writer = first.store(SPEC), second.store(SPEC)
        assert reader.get("k") is None
        writer["k"] = b"from the other process"
        writer.flush()
        assert reader.get("k") == b"from the other process"


def test_an_object_cache_without_weigh_is_bounded_by_the_values_last_encodings() -> None:
    store: dict[str, bytes] = {}
    cache = ObjectCache(bytes.decode, str.encode, size=100, max_weight=3000)
    for i in range(10):
        cache.put(store, f"k{i}", "x" * 1000)  # new values weigh nothing until encoded
    assert cache.weight == 0
    cache.flush()  # written: now weighed, and the oldest pushed out down to the bound
    assert cache.weight <= 3000 and len(store) == 10
    assert cache.get(store, "k0") == "x" * 1000  # read back from the store, 1,000 bytes
    assert cache.weight <= 3000
    cache.put(store, "k0", "y" * 2000)  # counted at its old size until the next flush
    cache.flush()
    assert store["k0"] == b"y" * 2000 and cache.weight <= 3000


def test_delete_present_deletes_a_key_and_ignores_one_not_held(store: KeyedStore) -> None:
    store["a"] = b"1"
    store["b"] = b"2"
    store.delete_present("a")
    store.delete_present("missing")
    assert "a" not in store and sorted(store) == ["b"]
    assert store.keys_with_prefix("") == ["b"]


def test_stream_prefix_gives_what_scan_prefix_gives_in_key_order(store: KeyedStore) -> None:
    for key in ("p|c", "p|a", "q|a", "p|b"):
        store[key] = key.encode()
    assert list(store.stream_prefix("p|")) == [(k, k.encode()) for k in ("p|a", "p|b", "p|c")]
    assert sorted(store.stream_prefix("p|")) == sorted(store.scan_prefix("p|"))
