"""The worker's partition preflight against the real broker (``services/streaming/admin.py``).

Every topic a worker co-partitions with its input (the checks topic, the table's changelog, the
eval-set and detector topics) must have the input's partition count.

- The input topic has 3 partitions and nothing else exists yet; ``VIGIL_TOPIC_PARTITIONS`` says
  2. The worker adopts 3, creates the rest with 3, and finds what ``vigil scan`` finds (before
  the preflight: ``AssertionError: Unrecognized partition`` at the first flagged event).
- The changelog exists with another count than the input: the worker refuses to start, with
  exit code 2 and a message naming the topic, both counts and the fix; no traceback.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from kafka import KafkaAdminClient
from kafka.admin import NewTopic

from tests.support.chat_events import generate_events, write_jsonl
from tests.support.kafka_io import TopicReader, events_total
from tests.support.parity import ScanResult, compare, findings_of
from tests.support.worker_process import VigilStack

N_EVENTS = 600


def _create(bootstrap: str, name: str, partitions: int, compacted: bool = False) -> None:
    admin = KafkaAdminClient(bootstrap_servers=bootstrap, client_id="vigil-test-preflight")
    try:
        configs = {"cleanup.policy": "compact"} if compacted else None
        admin.create_topics([NewTopic(name, partitions, 1, topic_configs=configs)])
    finally:
        admin.close()


def _partitions(bootstrap: str, name: str) -> int:
    admin = KafkaAdminClient(bootstrap_servers=bootstrap, client_id="vigil-test-preflight")
    try:
        (meta,) = admin.describe_topics([name])
        return len(meta["partitions"])
    finally:
        admin.close()


def test_the_worker_adopts_the_input_topics_partition_count(
    vigil_stack: Callable[..., VigilStack], tmp_path: Path
) -> None:
    path = write_jsonl(tmp_path / "events.jsonl", generate_events(N_EVENTS, prefix="pf3"))
    want = ScanResult(path, tmp_path / "scan").directions
    stack = vigil_stack("pf3", partitions=2, create=False)
    _create(stack.bootstrap, stack.input_topic, 3)
    worker = stack.start_worker()
    stack.wait(lambda: worker.partitions() == {0, 1, 2}, "the worker on 3 partitions", 120)
    assert "has 3 partitions; using 3 (VIGIL_TOPIC_PARTITIONS is 2)" in worker.log_text()
    findings = TopicReader(stack.bootstrap, stack.findings_topic)
    try:
        stack.replay(path)
        findings.read_until(
            lambda r: len({f.finding_id for f in findings_of(r)}) >= len(want),
            180,
            f"{len(want)} findings",
            stack.diagnostics,
        )
        worker.metrics_when(lambda t: events_total(t) >= N_EVENTS, f"{N_EVENTS} events")
        got = {
            (f.event_id, f.rule_id, f.start, f.end): f.direction
            for f in findings_of(findings.records)
        }
        problem = compare(got, want, "findings with 3 partitions vs scan")
        assert problem is None, problem
        for topic in (stack.changelog_topic, stack.checks_topic, stack.findings_topic):
            assert _partitions(stack.bootstrap, topic) == 3, topic
        assert worker.alive and "Unrecognized partition" not in worker.log_text()
    finally:
        findings.close()


def test_a_changelog_with_another_count_stops_the_worker_with_a_clear_error(
    vigil_stack: Callable[..., VigilStack],
) -> None:
    stack = vigil_stack("pfcl", partitions=4, create=False)
    _create(stack.bootstrap, stack.changelog_topic, 2, compacted=True)
    stack.create_topics(existing=(stack.changelog_topic,))
    worker = stack.start_worker(wait=False)
    assert worker.proc is not None
    code = worker.proc.wait(timeout=120)
    log = worker.log_text()
    assert code == 2, log
    assert f"{stack.input_topic} has 4 partitions but {stack.changelog_topic} has 2" in log, log
    assert "vigil topics create --partitions 4" in log, log
    assert "Traceback" not in log, log
