"""Reads held for one batch (``TableStore.hold_reads``): a key read again in the batch is not
read from the table again, and nothing read is ever older than the store's own value."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from prometheus_client import CollectorRegistry

from services.dataflow.flow import Dataflow
from services.dataflow.records import encode
from services.dataflow.state import StateSpec
from services.settings import Settings
from services.streaming.runner import MemoryStates, Record, StreamRunner
from services.streaming.state import FaustStates, TableBackend, TableStore
from tests.unit.test_worker_agent import ListSink, _event

PACK = Path(__file__).parent.parent / "data" / "mini-pack.yaml"
STAMP = b"\0" * 8


class DirectBackend(TableBackend):
    """The table's partitions written at once (no changelog), every read counted."""

    def __init__(self, name: str) -> None:
        import faust

        app = faust.App(name, store="memory://")
        super().__init__(
            app.Table("state", default=None, partitions=2, key_type=bytes, value_type=bytes)
        )
        self.reads: list[bytes] = []

    def get(self, partition: int, key: bytes) -> bytes | None:
        self.reads.append(key)
        return super().get(partition, key)

    def put(self, partition: int, key: bytes, value: bytes | None) -> None:
        self._store_put(partition, key, value)


def _store(name: str) -> tuple[TableStore, DirectBackend]:
    backend = DirectBackend(name)
    spec = StateSpec(kind="k", max_entries=10, max_value_bytes=64)
    return TableStore(spec, backend, 0), backend


def test_held_reads_answer_a_key_read_again_hit_or_miss() -> None:
    store, backend = _store("t-held")
    backend._store_put(0, b"0|k|a", STAMP + b"one")
    store.hold_reads(True)
    assert store.get("a") == b"one" and store.get("a") == b"one"
    assert store.get("b") is None and "b" not in store
    assert backend.reads == [b"0|k|a", b"0|k|b"]
    store.hold_reads(False)
    assert store.get("a") == b"one"
    assert backend.reads[-1] == b"0|k|a" and len(backend.reads) == 3


def test_a_write_or_deletion_in_the_batch_is_read_back_not_the_held_read() -> None:
    store, backend = _store("t-write")
    backend._store_put(0, b"0|k|a", STAMP + b"one")
    store.hold_reads(True)
    assert store.get("a") == b"one" and store.get("b") is None
    store["a"] = b"two"
    store["b"] = b"new"
    assert store.get("a") == b"two" and store.get("b") == b"new"
    del store["a"]
    assert store.get("a") is None and store.pop("b") == b"new" and "b" not in store


def test_a_flush_or_a_discard_forgets_the_held_reads() -> None:
    store, backend = _store("t-flush")
    store.hold_reads(True)
    assert store.get("a") is None
    store["a"] = b"one"
    store.flush()  # the table changes: what was read before must not answer any more
    assert store.get("a") == b"one"
    backend._store_put(0, b"0|k|a", STAMP + b"other")  # another writer, after the batch
    store.flush()
    assert store.get("a") == b"other"
    store.discard()
    backend._store_put(0, b"0|k|a", STAMP + b"third")
    assert store.get("a") == b"third" and store._reads is None


def _batch() -> list[Record]:
    values = []
    for cid in ("c1", "c2"):
        values += [
            _event(0, "user", f"I am anna@example.nl ({cid})", cid),
            _event(1, "assistant", "Hi ANNA@example.nl, bob@example.com says hi", cid),
            _event(2, "user", "thanks", cid),
            _event(3, "assistant", "You are welcome", cid),
        ]
    return [Record(v, v[50:60], "chat.events", 0, i) for i, v in enumerate(values)]


async def test_a_batch_reads_each_key_once_and_emits_what_it_did_without(tmp_path: Path) -> None:
    settings = Settings(
        rules_dir=PACK, data_dir=tmp_path, store="memory://", reorder_window_seconds=0
    )
    outputs = []
    for states_of in ("memory", "table"):
        flow = Dataflow(settings, CollectorRegistry(), clock="wall", partitions=1)
        sink = ListSink()
        backend = DirectBackend(f"t-batch-{states_of}")
        states: Any = (
            MemoryStates(flow) if states_of == "memory" else FaustStates(backend, flow.specs)
        )
        runner = StreamRunner(flow, states, sink, clock=lambda: 1.8e9)
        await runner.screen(_batch())
        outputs.append([(e.channel, e.key, encode(e.value)) for e in sink.emits])
    memory, table = outputs
    assert table == memory and table
    # Every key of the batch was read from the table at most once ...
    assert len(backend.reads) == len(set(backend.reads))
    # ... and no store holds reads after the batch.
    st = runner.partition_state(0)
    assert all(getattr(s, "_reads", None) is None for s in st.stores())
