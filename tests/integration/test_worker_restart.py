"""A worker killed with SIGKILL mid-stream loses nothing, and its successor remembers.

An interleaved stream is replayed in three parts:

A. user turns of conversations that continue later, plus a quarter of the stream. The test waits
   until the worker has committed all of A (consumer-group offsets), so A's conversation memory
   now lives only in the table's changelog topic.
B. the second quarter; part-way through its findings the worker is killed with SIGKILL (nothing
   flushed: some of B processed and committed, some processed but not committed, some not read).
C. after a new worker with the same app id (consumer group) has started: the answers of A's
   conversations (echo of the user's own address, leak of another) and the second half.

Every event must be processed: findings deduplicated by ``finding_id`` equal ``vigil scan``'s over
the whole file, and the group's committed
offsets reach the end of the input topic (events without findings too). The new worker resumes from
committed offsets (it never re-reads A), so the echo/leak directions of C's answers to A's
conversations are right only if the memory table was recovered from its changelog.

The generated stream never gives, in a later user turn, a value an earlier answer leaked, so even
a re-processed answer has only one correct direction: every copy of a finding must have scan's.

Both processing guarantees run. At least once, copies are allowed, but only of findings of
events the killed worker had not committed, and of answers held for the reorder window (a leak),
which a release repeats when the worker dies between their findings' acknowledgement and the
deletion of the hold. Exactly once (Kafka transactions), a consumer
reading ``read_committed`` sees every finding once.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path

import pytest
from kafka import KafkaConsumer, TopicPartition

from services.dataflow.partitioning import partition_of
from tests.support.chat_events import generate_events, memory_probes, write_jsonl
from tests.support.kafka_io import TopicReader, committed_offsets, events_total
from tests.support.parity import ScanResult, compare, findings_of
from tests.support.worker_process import VigilStack

N_EVENTS = 4000
N_CROSS = 40  # conversations whose memory must cross the kill
TIMEOUT_S = 300.0


def _positions(events: list[dict[str, object]], partitions: int) -> dict[str, tuple[int, int]]:
    """``event_id -> (partition, offset)`` in the input topic, for events replayed in this order
    into empty partitions (``vigil replay`` keys by conversation: Kafka's default partitioner)."""
    next_offset = [0] * partitions
    out = {}
    for ev in events:
        p = partition_of(str(ev["conversation_id"]), partitions)
        out[str(ev["event_id"])] = (p, next_offset[p])
        next_offset[p] += 1
    return out


def _wait_committed(stack: VigilStack, n: int, timeout_s: float) -> None:
    """Until the worker's group has committed offsets covering ``n`` input messages."""
    stack.wait(
        lambda: sum(o for o in stack.committed().values() if o > 0) >= n,
        f"the group to commit {n} offsets (now {stack.committed()})",
        timeout_s,
    )


def _missing_report(
    missing: set[str],
    want: dict[tuple[str, str, int, int], str],
    events: list[dict[str, object]],
    ids_a: set[str],
) -> str:
    """What the findings the group never published have in common (a failure's evidence):
    their direction (a leak is held for the reorder window), and whether their answer was the
    last event of its conversation (then only the release timer lets it go)."""
    last = {str(ev["conversation_id"]): str(ev["event_id"]) for ev in events}
    conversation = {str(ev["event_id"]): str(ev["conversation_id"]) for ev in events}
    direction = {f"{e}:{r}:{s}-{n}": d for (e, r, s, n), d in want.items()}
    kinds = Counter(
        (
            direction[fid],
            "last event" if last[conversation[fid.split(":")[0]]] == fid.split(":")[0] else "",
            "part A" if fid in ids_a else "",
        )
        for fid in missing
    )
    return (
        f"{len(missing)} findings never published, by (direction, last event of its "
        f"conversation, part A): {dict(kinds)}; e.g. {sorted(missing)[:5]}"
    )


def _visibility(bootstrap: str, topic: str, missing: set[str]) -> str:
    """Where the missing findings are for a reader that sees uncommitted records too (records of
    an open or aborted transaction), and each partition's last stable offset against its high
    watermark (a transaction left open holds back every later record from a ``read_committed``
    reader)."""
    lines = []
    for level in ("read_committed", "read_uncommitted"):
        consumer = KafkaConsumer(
            bootstrap_servers=bootstrap,
            isolation_level=level,
            enable_auto_commit=False,
            group_id=None,
            consumer_timeout_ms=3000,
        )
        try:
            tps = [TopicPartition(topic, p) for p in sorted(consumer.partitions_for_topic(topic))]
            ends = sorted((tp.partition, o) for tp, o in consumer.end_offsets(tps).items())
            lines.append(f"{level}: end offsets {ends}")
            if level == "read_uncommitted":
                consumer.assign(tps)
                consumer.seek_to_beginning(*tps)
                where: dict[str, list[tuple[int, int]]] = {}
                for record in consumer:
                    for f in findings_of([record]):
                        if f.finding_id in missing:
                            where.setdefault(f.finding_id, []).append(
                                (record.partition, record.offset)
                            )
                lines.append(
                    f"missing findings present uncommitted: {len(where)} of {len(missing)}, "
                    f"(partition, offset): {sorted(where.items())[:10]}"
                )
        finally:
            consumer.close()
    return "\n".join(lines)


@pytest.mark.parametrize(
    "guarantee",
    [
        "at_least_once",
        pytest.param(
            "exactly_once",
            marks=pytest.mark.xfail(
                strict=False,
                reason="issue 9: exactly once, a restarted worker sometimes recovered nothing "
                "(faust-streaming's recovery took an unfetched changelog partition for an empty "
                "one; fixed in 8b88594, 0 failures in the runs since); one earlier failure, part "
                "A's findings not all seen read_committed within 60 s of its commit, is "
                "unexplained: the test now reports where such findings are",
            ),
        ),
    ],
)
def test_killed_worker_is_replaced_without_loss(
    vigil_stack: Callable[..., VigilStack], tmp_path: Path, guarantee: str
) -> None:
    events = generate_events(N_EVENTS, prefix="rst", seed=7, examples=None)
    cross_before, cross_after = memory_probes(N_CROSS, "rst")
    q = len(events) // 4
    part_a = cross_before + events[:q]
    part_b = events[q : 2 * q]
    part_c = cross_after + events[2 * q :]
    paths = {
        name: write_jsonl(tmp_path / f"{name}.jsonl", part)
        for name, part in (("a", part_a), ("b", part_b), ("c", part_c))
    }
    whole = write_jsonl(tmp_path / "whole.jsonl", part_a + part_b + part_c)

    scan = ScanResult(whole, tmp_path / "scan")
    want = scan.directions
    want_ids = {f"{eid}:{rule}:{start}-{end}" for eid, rule, start, end in want}
    want_a = scan.for_events({e["event_id"] for e in part_a})
    want_b = scan.for_events({e["event_id"] for e in part_b})
    cross_ids = {e["event_id"] for e in cross_after}
    want_cross = scan.for_events(cross_ids)
    assert Counter(want_cross.values()) == {"echo": N_CROSS, "leak": N_CROSS}, want_cross

    exactly_once = guarantee == "exactly_once"
    stack = vigil_stack("restart", VIGIL_PROCESSING_GUARANTEE=guarantee)
    findings = TopicReader(stack.bootstrap, stack.findings_topic, committed_only=exactly_once)
    try:
        first_worker = stack.start_worker()
        stack.replay(paths["a"])
        _wait_committed(stack, len(part_a), TIMEOUT_S)
        ids_a = {f"{eid}:{rule}:{start}-{end}" for eid, rule, start, end in want_a}
        try:
            findings.read_until(
                lambda r: {f.finding_id for f in findings_of(r)} >= ids_a,
                60,
                "part A's findings (published before its offsets were committed)",
                stack.diagnostics,
            )
        except AssertionError as exc:
            missing = ids_a - {f.finding_id for f in findings_of(findings.records)}
            raise AssertionError(
                _missing_report(missing, want, part_a, ids_a)
                + "\n"
                + _visibility(stack.bootstrap, stack.findings_topic, missing)
                + f"\n{exc}"
            ) from None
        n_a = len({f.finding_id for f in findings_of(findings.records)})

        stack.replay(paths["b"])
        findings.read_until(
            lambda r: len({f.finding_id for f in findings_of(r)}) >= n_a + len(want_b) // 3,
            TIMEOUT_S,
            "a third of part B's findings",
            stack.diagnostics,
        )
        first_worker.kill()
        kill_time = time.time()
        before_kill = {f.finding_id for f in findings_of(findings.records)}
        time.sleep(1.0)  # a commit request already on the wire when the process died lands
        committed_at_kill = committed_offsets(stack.bootstrap, stack.app_id, stack.input_topic)
        assert sum(committed_at_kill.values()) >= len(part_a), committed_at_kill

        t0 = time.monotonic()
        second_worker = stack.start_worker()
        stack.replay(paths["c"])
        try:
            findings.read_until(
                lambda r: {f.finding_id for f in findings_of(r)} >= want_ids,
                TIMEOUT_S,
                f"all {len(want_ids)} findings",
                stack.diagnostics,
            )
        except AssertionError as exc:
            missing = want_ids - {f.finding_id for f in findings_of(findings.records)}
            raise AssertionError(
                _missing_report(missing, want, part_a + part_b + part_c, ids_a)
                + "\n"
                + _visibility(stack.bootstrap, stack.findings_topic, missing)
                + f"\n{exc}"
            ) from None
        took = time.monotonic() - t0
        findings.drain()

        got_all = findings_of(findings.records)
        got: dict[tuple[str, str, int, int], str] = {}
        for f in got_all:
            k = (f.event_id, f.rule_id, f.start, f.end)
            assert f.finding_id == f"{k[0]}:{k[1]}:{k[2]}-{k[3]}"
            assert k in want, f"unexpected finding {f.finding_id}"
            assert f.direction == want[k], (
                f"{f.finding_id}: {f.direction}, scan says {want[k]} (a copy processed with "
                "the wrong conversation memory)"
            )
            got[k] = f.direction
        problem = compare(got, want, "findings after the restart vs scan")
        assert problem is None, problem
        cross = {k: d for k, d in got.items() if k[0] in cross_ids}
        assert cross == want_cross, "memory from before the kill was not recovered"

        # The new worker got through every event (those without findings too): its group
        # commits the end of the topic; and it resumed from committed offsets: it never re-read
        # part A, so the user turns of the cross-kill conversations were only in the changelog.
        assert second_worker.alive, second_worker.diagnostics()
        total = len(part_a) + len(part_b) + len(part_c)
        _wait_committed(stack, total, TIMEOUT_S)
        copies_a = Counter(f.finding_id for f in got_all if f.finding_id in ids_a)
        assert copies_a == Counter(ids_a), f"part A re-processed: {copies_a.most_common(3)}"
        copies = Counter(f.finding_id for f in got_all)
        repeated = {fid for fid, n in copies.items() if n > 1}
        where = _positions(part_a + part_b + part_c, stack.partitions)
        if exactly_once:
            seen = [
                (fid, where[fid.split(":")[0]], r.partition, r.offset, r.timestamp)
                for r, fid in ((r, findings_of([r])[0].finding_id) for r in findings.records)
                if fid in repeated
            ]
            assert not repeated, (
                f"{len(repeated)} findings twice (finding, input position, output partition, "
                f"offset, time): {seen[:6]}; committed at the kill: {committed_at_kill}, "
                f"killed at {kill_time}"
            )
        else:
            # Only what the killed worker had not committed is processed again, and answers
            # held for the reorder window (those with a leak): their offsets are committed when
            # they are held, and one released whose findings were acknowledged but whose hold
            # was not yet deleted is released again by the successor.
            held = {eid for (eid, _, _, _), direction in want.items() if direction == "leak"}
            committed_again = sorted(
                fid
                for fid in repeated
                if fid.split(":")[0] not in held
                and where[fid.split(":")[0]][1]
                < committed_at_kill.get(where[fid.split(":")[0]][0], 0)
            )
            assert not committed_again, f"committed events processed again: {committed_again[:3]}"
        uncommitted = total - sum(committed_at_kill.values())
        processed = events_total(second_worker.metrics())
        print(
            f"\nrestart: {len(want)} findings; {len(before_kill)} distinct before the kill; "
            f"{uncommitted} uncommitted at the kill, second worker processed {processed:.0f}; "
            f"{len(got_all) - len(got)} duplicate findings; all done {took:.1f}s after the kill"
        )
    finally:
        findings.close()
