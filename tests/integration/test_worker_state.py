"""The worker's state on the real broker: kept on disk across a restart, and really gone once it
expires.

**RocksDB across a restart.** A worker remembers what users said (conversation memory), then
stops. Every record of the state table's changelog is then deleted (``DeleteRecords``), so a
restarted worker can only know what its data dir holds. A worker on the same data dir finds the
answers that repeat a user's address to be ``echo`` (remembered), the other addresses ``leak``;
a control worker on an empty data dir finds the user's own address to be a ``leak`` too.

**Expiry.** With a memory lifetime of 3 s and a sweep every second, the remembered values expire:
``vigil_state_expired_total{kind="memory"}`` counts them, the compacted changelog's last record
of each is a tombstone, and a worker restarted on an empty data dir (recovering from the
changelog) does not get them back: the answers repeating the users' addresses are leaks.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

from kafka import KafkaAdminClient, TopicPartition
from kafka.admin import ConfigResource, ConfigResourceType

from services.dataflow.partitioning import partition_of
from tests.support.chat_events import memory_probes, write_jsonl
from tests.support.kafka_io import TopicReader, counter_values, end_offsets
from tests.support.parity import findings_of
from tests.support.worker_process import VigilStack, WorkerProcess

N_PROBES = 20
TIMEOUT_S = 180.0


def _directions(
    stack: VigilStack, reader: TopicReader, answers: list[dict[str, Any]]
) -> dict[str, Counter[str]]:
    """``{answer event id: directions of its two email findings}`` once all are published."""
    ids = {str(a["event_id"]) for a in answers}

    def mine(records: list[Any]) -> list[Any]:
        return [f for f in findings_of(records) if f.event_id in ids]

    reader.read_until(
        lambda r: len({f.finding_id for f in mine(r)}) >= 2 * len(ids),
        TIMEOUT_S,
        f"the findings of {len(ids)} answers",
        stack.diagnostics,
    )
    out: dict[str, Counter[str]] = {i: Counter() for i in ids}
    for f in {f.finding_id: f for f in mine(reader.records)}.values():
        out[f.event_id][f.direction] += 1
    return out


def _processed(worker: WorkerProcess, n: int) -> Callable[[], bool]:
    def done() -> bool:
        return sum(counter_values(worker.metrics(), "vigil_events").values()) >= n

    return done


def _delete_changelog(stack: VigilStack) -> int:
    """Delete every record of the state changelog (compacted topics refuse ``DeleteRecords``:
    allow deletion first); return how many were there."""
    topic = stack.changelog_topic
    ends = end_offsets(stack.bootstrap, topic)
    admin = KafkaAdminClient(bootstrap_servers=stack.bootstrap, client_id="vigil-test-state")
    try:
        policy = {"cleanup.policy": "compact,delete"}
        admin.alter_configs([ConfigResource(ConfigResourceType.TOPIC, topic, configs=policy)])
        admin.delete_records({TopicPartition(topic, p): end for p, end in ends.items()})
    finally:
        admin.close()
    return sum(ends.values())


def test_rocksdb_state_survives_a_restart_without_its_changelog(
    vigil_stack: Callable[..., VigilStack], tmp_path: Path
) -> None:
    asks, answers = memory_probes(N_PROBES, "rdb")
    half = N_PROBES // 2
    stack = vigil_stack("rocksdb")
    first = stack.start_worker()
    stack.replay(write_jsonl(tmp_path / "asks.jsonl", asks))
    stack.wait(_processed(first, len(asks)), "the users' turns screened", TIMEOUT_S)
    stack.wait(lambda: sum(stack.committed().values()) >= len(asks), "their offsets committed", 60)
    first.stop()  # graceful: RocksDB flushed and closed
    deleted = _delete_changelog(stack)
    assert deleted >= len(asks), deleted

    findings = TopicReader(stack.bootstrap, stack.findings_topic)
    try:
        same = stack.start_worker()  # takes the first worker's data dir
        assert same.env["VIGIL_DATA_DIR"] == first.env["VIGIL_DATA_DIR"]
        stack.replay(write_jsonl(tmp_path / "answers-1.jsonl", answers[:half]))
        remembered = _directions(stack, findings, answers[:half])
        assert all(d == {"echo": 1, "leak": 1} for d in remembered.values()), remembered
        same.stop()

        empty = stack.start_worker(VIGIL_DATA_DIR=str(tmp_path / "empty-data"))
        stack.replay(write_jsonl(tmp_path / "answers-2.jsonl", answers[half:]))
        forgotten = _directions(stack, findings, answers[half:])
        assert all(d == {"leak": 2} for d in forgotten.values()), forgotten
        assert empty.alive, empty.diagnostics()
        print(f"\nrocksdb: {deleted} changelog records deleted; {half} answers echo, {half} leak")
    finally:
        findings.close()


def test_expired_state_is_deleted_and_tombstoned(
    vigil_stack: Callable[..., VigilStack], tmp_path: Path
) -> None:
    asks, answers = memory_probes(N_PROBES, "exp")
    # Answers decided at arrival: a reorder window (10 s by default) longer than the memory's
    # 3 s lifetime would hold the probes' answers until their memories had expired.
    stack = vigil_stack(
        "expiry",
        VIGIL_MEMORY_MAX_AGE_SECONDS="3",
        VIGIL_STATE_SWEEP_SECONDS="1",
        VIGIL_REORDER_WINDOW_SECONDS="0",
    )
    worker = stack.start_worker()
    changelog = TopicReader(stack.bootstrap, stack.changelog_topic)
    findings = TopicReader(stack.bootstrap, stack.findings_topic)
    conversations = [str(a["conversation_id"]) for a in asks]
    keys = {f"{partition_of(c, stack.partitions)}|memory|{c}".encode() for c in conversations}
    try:
        stack.replay(write_jsonl(tmp_path / "asks.jsonl", asks))

        def expired() -> bool:
            counts = counter_values(worker.metrics(), "vigil_state_expired")
            return counts.get(frozenset({("kind", "memory")}), 0) >= len(asks)

        stack.wait(expired, f"{len(asks)} memories expired", TIMEOUT_S)

        def tombstoned(records: list[Any]) -> bool:
            last = {r.key: r.value for r in records if r.key in keys}
            return len(last) == len(keys) and all(v is None for v in last.values())

        changelog.read_until(tombstoned, 60, "a tombstone as the last record of each memory")
        written = Counter(r.key for r in changelog.records if r.key in keys and r.value)
        assert set(written) == keys, "every memory was written before it expired"
        worker.stop()

        fresh = stack.start_worker(VIGIL_DATA_DIR=str(tmp_path / "fresh-data"))
        stack.replay(write_jsonl(tmp_path / "answers.jsonl", answers))
        directions = _directions(stack, findings, answers)
        assert all(d == {"leak": 2} for d in directions.values()), directions
        assert fresh.alive, fresh.diagnostics()
    finally:
        changelog.close()
        findings.close()
