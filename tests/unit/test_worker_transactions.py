"""Exactly-once mode, broker-free: what goes into which transaction, and when commits may run.

The broker side (an aborted transaction's records stay invisible to ``read_committed`` readers)
is shown by ``tests/integration/test_worker_restart.py``; here the worker's part of the bargain:
a batch's emits and state writes carry the transactional id of their source partition, writes
outside a batch carry none (whatever partition they go to), and a commit waits for the batch
scope in progress.
"""

from __future__ import annotations

import asyncio
from functools import partial
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from faust.types import TP
from prometheus_client import CollectorRegistry

from services.settings import Settings
from services.streaming.runner import Record
from services.streaming.transactions import (
    CURRENT,
    ScopedConsumer,
    ScopedTransactionManager,
    Transactions,
    current_transaction,
)

PACK = Path(__file__).parent.parent / "data" / "mini-pack.yaml"


class FakeApp:
    """What :class:`Transactions` uses of a Faust app."""

    class conf:
        id = "vigil"

    class assignor:
        @staticmethod
        def group_for_topic(topic: str) -> int:
            return {"chat.events": 0, "vigil-evalset-samples": 0}[topic]

    class transport:
        pass


class FakeBackend:
    def __init__(self) -> None:
        self.drained: list[str | None] = []

    async def drain(self) -> None:
        self.drained.append(current_transaction())


class Acks:
    """The batch's acknowledgement, as the consumer's route gives it: when was it called."""

    def __init__(self, backend: FakeBackend | None = None) -> None:
        self.backend = backend
        self.calls: list[list[str | None]] = []

    def __call__(self) -> None:
        self.calls.append(list(self.backend.drained) if self.backend is not None else [])


def _record(partition: int, offset: int, topic: str = "chat.events") -> Record:
    return Record(b"{}", b"k", topic, partition, offset)


async def test_each_partition_of_a_batch_runs_in_its_own_transaction() -> None:
    backend = FakeBackend()
    tx = Transactions(FakeApp(), backend)  # type: ignore[arg-type]
    seen: list[tuple[str | None, list[int]]] = []

    async def handle(records: list[Record]) -> None:
        seen.append((current_transaction(), [r.offset for r in records]))

    acks = Acks(backend)
    batch = [_record(2, 10), _record(0, 5), _record(2, 11), _record(0, 6, "vigil-evalset-samples")]
    await tx.process(batch, handle, acks)
    assert seen == [("vigil-0-2", [10, 11]), ("vigil-0-0", [5]), ("vigil-0-0", [6])]
    assert backend.drained == ["vigil-0-2", "vigil-0-0", "vigil-0-0"]
    # Acknowledged once, after every part was sent.
    assert acks.calls == [["vigil-0-2", "vigil-0-0", "vigil-0-0"]]
    assert current_transaction() is None


def test_the_app_in_exactly_once_mode_uses_the_scoped_consumer(tmp_path: Path) -> None:
    from services.streaming.app import create_app

    app = create_app(
        Settings(
            rules_dir=PACK,
            data_dir=tmp_path,
            web_port=6198,
            store="memory://",
            processing_guarantee="exactly_once",
        ),
        CollectorRegistry(),
    )
    assert isinstance(app.vigil_transactions, Transactions)
    assert isinstance(app.consumer, ScopedConsumer)
    assert isinstance(app.consumer.transactions, ScopedTransactionManager)
    assert app.in_transaction is False  # not in a worker process: Faust's own flag


async def test_a_commit_waits_for_the_batch_scope_in_progress(tmp_path: Path) -> None:
    from services.streaming.app import create_app

    settings = Settings(
        rules_dir=PACK,
        data_dir=tmp_path,
        web_port=6197,
        store="memory://",
        processing_guarantee="exactly_once",
    )
    app = create_app(settings, CollectorRegistry())
    tx: Transactions = app.vigil_transactions
    tx.transactional_id = lambda topic, partition: f"vigil-0-{partition}"  # type: ignore[method-assign]
    order: list[str] = []
    inside = asyncio.Event()
    release = asyncio.Event()

    async def handle(records: list[Record]) -> None:
        order.append("batch sent")
        inside.set()
        await release.wait()
        order.append("batch done")

    batch = asyncio.create_task(tx.process([_record(0, 1)], handle, Acks()))
    await inside.wait()

    async def commit() -> None:
        await app.consumer.commit()  # Faust's timer, a rebalance, shutdown
        order.append("committed")

    committing = asyncio.create_task(commit())
    await asyncio.sleep(0.05)
    assert order == ["batch sent"]  # the commit waits for the scope
    release.set()
    await asyncio.gather(batch, committing)
    assert order == ["batch sent", "batch done", "committed"]


class FakeProducer:
    """Records each send with the batch scope it was made in (what
    :class:`ScopedTransactionManager` routes by) and acknowledges it."""

    def __init__(self) -> None:
        self.sent: list[tuple[str, bytes | None, bytes | None, int | None, str | None]] = []

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
    ) -> Any:
        tid = transactional_id or current_transaction()
        self.sent.append((topic, key, value, partition, tid))
        fut = asyncio.get_running_loop().create_future()
        meta = SimpleNamespace(topic_partition=(topic, partition), offset=len(self.sent))
        fut.set_result(meta)
        return fut


async def test_sends_join_the_transaction_of_their_batch_not_of_their_destination() -> None:
    # Summaries go to partition 0 of the sampler's topic, decisions to the conversation's
    # partition: Faust's manager would pick the destination's transaction, which a worker that
    # does not own that partition has no producer for ("No transaction producer found").
    producer = FakeProducer()
    manager = object.__new__(ScopedTransactionManager)
    manager.producer = producer  # type: ignore[misc]
    token = CURRENT.set("vigil-0-2")
    try:
        await manager.send("vigil-evalset-samples", b"k", b"s", 0, None, None)
    finally:
        CURRENT.reset(token)
    await manager.send("vigil-evalset-samples", b"k", b"t", 0, None, None)  # a timer's tick
    assert producer.sent == [
        ("vigil-evalset-samples", b"k", b"s", 0, "vigil-0-2"),
        ("vigil-evalset-samples", b"k", b"t", 0, None),
    ]


class _Store:
    """The part of a Faust memory store the table backend uses."""

    def __init__(self) -> None:
        self.data: dict[bytes, bytes] = {}
        self._key_partition: dict[bytes, int] = {}
        self.persisted: dict[Any, int] = {}

    def set_persisted_offset(self, tp: Any, offset: int) -> None:
        self.persisted[tp] = offset


def _table(producer: FakeProducer) -> SimpleNamespace:
    class App:
        in_transaction = False

        async def maybe_start_producer(self) -> FakeProducer:
            return producer

    return SimpleNamespace(
        app=App(),
        data=_Store(),
        changelog_topic=SimpleNamespace(get_topic_name=lambda: "vigil-state-changelog"),
    )


async def test_state_writes_go_out_in_the_transaction_that_wrote_them() -> None:
    from services.streaming.state import TableBackend

    producer = FakeProducer()
    table = _table(producer)
    backend = TableBackend(table)
    settle = partial(asyncio.sleep, 0.01)
    backend.put(1, b"1|memory|a", b"x")  # a timer, the review API: no transaction
    await settle()
    assert [(k, tid) for _, k, _, _, tid in producer.sent] == [(b"1|memory|a", None)]
    token = CURRENT.set("vigil-0-1")
    try:
        backend.put(1, b"1|memory|b", b"y")
        backend.put(1, b"1|memory|a", None)
    finally:
        CURRENT.reset(token)
    # Read back at once; the local store gets a write only once its record is acknowledged.
    assert backend.get(1, b"1|memory|b") == b"y" and backend.get(1, b"1|memory|a") is None
    assert table.data.data == {b"1|memory|a": b"x"}
    backend.put(2, b"2|memory|c", b"z")  # a timer while the batch is in progress
    await settle()
    assert [(k, tid) for _, k, _, _, tid in producer.sent[1:]] == [(b"2|memory|c", None)]
    assert backend.pending(1, "memory", "b") is not None  # held for the batch's transaction
    token = CURRENT.set("vigil-0-1")
    try:
        await backend.drain()  # the end of the batch's scope
    finally:
        CURRENT.reset(token)
    assert [(k, v, tid) for _, k, v, _, tid in producer.sent[2:]] == [
        (b"1|memory|b", b"y", "vigil-0-1"),
        (b"1|memory|a", None, "vigil-0-1"),
    ]
    await settle()
    assert backend.pending(1, "memory", "b") is None
    # Acknowledged is not committed: the transaction's writes are read back from memory and
    # reach the local store only when it commits (an aborted one leaves the store as it was).
    assert table.data.data == {b"1|memory|a": b"x", b"2|memory|c": b"z"}
    assert backend.get(1, b"1|memory|b") == b"y" and backend.get(1, b"1|memory|a") is None
    backend.committed(["vigil-0-2"])  # another partition's transaction
    assert table.data.data == {b"1|memory|a": b"x", b"2|memory|c": b"z"}
    backend.committed(["vigil-0-1"])
    assert table.data.data == {b"1|memory|b": b"y", b"2|memory|c": b"z"}
    assert backend.get(1, b"1|memory|b") == b"y" and backend.get(1, b"1|memory|a") is None
    assert not backend._unacked  # nothing left shadowing the store
    # Offsets persist for records outside a transaction only (exactly once, none at all:
    # recovery then reads the committed changelog from its start).
    assert table.data.persisted == {
        ("vigil-state-changelog", 1): 1,
        ("vigil-state-changelog", 2): 2,
    }


async def test_a_sweep_reads_the_state_only_when_something_can_be_due() -> None:
    """The state timer's sweep of a kind reads every key's stamp only when the last sweep's
    outcome (keys left, their oldest write, writes since) says a key may be past its lifetime
    (by more than the slack) or beyond the bound; what is due is deleted with a tombstone."""
    from services.dataflow.state import StateSpec
    from services.streaming.state import EXPIRY_SLACK, TableBackend, TableStore

    backend = TableBackend(_table(FakeProducer()))
    reads: list[int] = []
    stamps = backend.stamps

    def counted(partition: int, prefix: bytes) -> list[tuple[float, bytes]]:
        found = stamps(partition, prefix)
        reads.append(len(found))
        return found

    backend.stamps = counted  # type: ignore[method-assign]
    spec = StateSpec(kind="memory", max_entries=4, ttl_seconds=100.0, max_value_bytes=64)
    store = TableStore(spec, backend, 1)
    store.now = 0.0
    store["a"] = b"1"
    store["b"] = b"2"
    store.flush()  # the runner flushes after each batch: writes are stamped with its clock
    assert store.expire(now=10.0) == 0 and reads == [2]  # the first sweep reads
    assert store.expire(now=20.0) == 0 and reads == [2]  # nothing can be due: not read
    store.now = 30.0
    store["c"] = b"3"
    store.flush()
    assert store.expire(now=40.0) == 0 and reads == [2]  # 3 keys at most, the oldest at 0
    # Past the lifetime, but within the slack: not yet read.
    assert store.expire(now=100.0 + 100.0 * EXPIRY_SLACK / 2) == 0 and reads == [2]
    assert store.expire(now=100.0 + 100.0 * EXPIRY_SLACK * 2) == 2 and reads == [2, 3]
    assert sorted(store) == ["c"] and store.stats.expired == 2
    assert store.expire(now=110.0) == 0 and reads == [2, 3]  # the oldest left is at 30
    store.now = 111.0
    for key in ("d", "e", "f", "g"):  # five keys now, one over the bound
        store[key] = key.encode()
    store.flush()
    assert store.expire(now=112.0) == 1 and reads == [2, 3, 5]
    assert sorted(store) == ["d", "e", "f", "g"] and store.stats.evicted == 1
    await asyncio.sleep(0.01)
    assert backend.get(1, b"1|memory|a") is None and backend.get(1, b"1|memory|c") is None
    # A store opened afresh (after a rebalance) reads at its first sweep.
    again = TableStore(spec, backend, 1)
    assert again.expire(now=113.0) == 0 and reads == [2, 3, 5, 4]
    # A sweep that leaves nothing: keys written after it still expire in their time.
    empty = TableStore(spec, backend, 2)
    assert empty.expire(now=200.0) == 0 and reads[-1] == 0
    empty.now = 210.0
    empty["late"] = b"x"
    empty.flush()
    assert empty.expire(now=250.0) == 0 and reads[-1] == 0  # not due: not read
    assert empty.expire(now=210.0 + 100.0 * (1 + 2 * EXPIRY_SLACK)) == 1
    assert reads[-1] == 1 and list(empty) == []


def test_recovery_reads_each_changelog_partition_to_the_end_the_broker_gives() -> None:
    """Faust's consumer, in a transaction, answers ``highwaters`` from aiokafka's cached last
    stable offset (``None`` before the first fetch: recovery then reads nothing); the worker's
    asks the broker (``end_offsets`` of a ``read_committed`` consumer). The broker's side is
    ``tests/integration/test_recovery_highwaters.py``."""

    class Aiokafka:
        def last_stable_offset(self, tp: TP) -> int | None:
            return None  # nothing fetched yet

        async def end_offsets(self, partitions: list[TP]) -> dict[TP, int]:
            return {tp: 100 + tp.partition for tp in partitions}

    class Thread:  # Faust's consumer thread: calls run on its own loop
        def __init__(self) -> None:
            self.calls = 0

        def _ensure_consumer(self) -> Aiokafka:
            return Aiokafka()

        async def call_thread(self, fun: Any, *args: Any) -> Any:
            self.calls += 1
            return await fun(*args)

    consumer = ScopedConsumer.__new__(ScopedConsumer)
    thread = Thread()
    consumer._thread = thread  # type: ignore[assignment]
    tps = [TP("vigil-state-changelog", 0), TP("vigil-state-changelog", 3)]
    assert asyncio.run(consumer.highwaters(*tps)) == {tps[0]: 100, tps[1]: 103}
    assert thread.calls == 1
