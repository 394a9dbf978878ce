"""``vigil replay`` against the real broker: lines the broker will not take for their size are
reported and become dead letters; every other line is delivered, in order.

The input topic is created with ``max.message.bytes`` of 200 kB, under the broker's default
(1 MiB). Of the file's lines, one of 2 MiB is over both limits, one of 500 kB over the
topic's only. Both go to the dead-letter topic as ``oversize`` dead letters with their line
numbers, the command says so and exits 0, and every other line is on the topic in file order.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

from kafka import KafkaAdminClient
from kafka.admin import NewTopic

from schemas import DeadLetter
from tests.support.chat_events import event, generate_events, write_jsonl
from tests.support.kafka_io import TopicReader
from tests.support.worker_process import VigilStack, cli


def test_lines_over_the_size_limits_are_reported_and_dead_lettered(
    vigil_stack: Callable[..., VigilStack], tmp_path: Path
) -> None:
    events = generate_events(200, prefix="rpl", seed=5, examples=None)
    huge = event("rpl-huge", "rpl-big-1", 0, "user", "x" * (2 * 1024 * 1024))
    large = event("rpl-large", "rpl-big-2", 0, "user", "mail ann@example.org " + "y" * 500_000)
    lines = [*events[:50], huge, *events[50:120], large, *events[120:]]
    path = write_jsonl(tmp_path / "events.jsonl", lines)
    huge_line, large_line = 51, 122

    stack = vigil_stack("replay", create=False)
    admin = KafkaAdminClient(bootstrap_servers=stack.bootstrap, client_id="vigil-test-replay")
    try:
        admin.create_topics(
            [NewTopic(stack.input_topic, 4, 1, topic_configs={"max.message.bytes": "200000"})]
        )
    finally:
        admin.close()
    stack.create_topics(existing=(stack.input_topic,))
    proc = cli(["replay", str(path)], stack.env())
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert f"sent {len(events)} messages to {stack.input_topic}" in proc.stdout, proc.stdout
    report = " ".join(proc.stderr.split())
    assert "skipped 2 lines larger than the broker accepts" in report, proc.stderr
    assert f"line {huge_line} (2,097," in report and f"line {large_line} (500," in report, report
    assert "Traceback" not in proc.stderr

    inputs = TopicReader(stack.bootstrap, stack.input_topic)
    dlq = TopicReader(stack.bootstrap, stack.dlq_topic)
    try:
        inputs.read_until(lambda r: len(r) >= len(events), 60, "the delivered lines")
        dlq.read_until(lambda r: len(r) >= 2, 60, "two dead letters")
        inputs.drain(quiet_s=1.0)
        dlq.drain(quiet_s=1.0)
        got = sorted(inputs.records, key=lambda r: (r.partition, r.offset))
        by_partition: dict[int, list[str]] = {}
        for r in got:
            by_partition.setdefault(r.partition, []).append(json.loads(r.value)["event_id"])
        delivered = [i for ids in by_partition.values() for i in ids]
        assert sorted(delivered) == sorted(str(e["event_id"]) for e in events)
        order = {str(e["event_id"]): n for n, e in enumerate(events)}
        for ids in by_partition.values():  # in file order within each partition
            assert ids == sorted(ids, key=order.__getitem__)
        dead = sorted(
            (DeadLetter.model_validate_json(r.value) for r in dlq.records), key=lambda d: d.source
        )
        assert [(d.reason, d.source) for d in dead] == [
            ("oversize", f"events.jsonl:{large_line}"),
            ("oversize", f"events.jsonl:{huge_line}"),
        ]
        for d, line in zip(dead, (large, huge), strict=True):
            raw = json.dumps(line, ensure_ascii=False).encode()
            assert d.original_size == len(raw) and d.truncated
            # By default a dead letter keeps the text masked by the screening rules, no raw bytes.
            assert d.original_b64 is None and d.masked is not None
            assert d.masked.startswith(raw[:20].decode()) and "ann@example.org" not in d.masked
            assert "larger than the broker accepts" in d.detail and "y" * 10 not in d.detail
    finally:
        inputs.close()
        dlq.close()
