"""The broker goes away under running workers and comes back: nothing is lost.

A broker of the test's own (``tests/support/broker.PrivateBroker``; stopping the session's
broker would break every other test). A worker screens a stream; while it is a third of the
way through, the broker is stopped (controlled shutdown) and, while it is down, a second worker
of the same group is started: it waits for the broker (``vigil worker`` retries with growing
pauses instead of exiting). The broker comes back on the same address; the rest of the stream
is produced. Then the findings are ``vigil scan``'s, each with scan's direction (copies allowed:
at least once), the group has committed the whole input, both workers serve partitions, and the
first one reconnected rather than being restarted.
"""

from __future__ import annotations

import time
from pathlib import Path

from tests.support.broker import PrivateBroker
from tests.support.chat_events import generate_events, memory_probes, write_jsonl
from tests.support.kafka_io import TopicReader
from tests.support.parity import ScanResult, compare, findings_of
from tests.support.worker_process import VigilStack

N_EVENTS = 3000
OUTAGE_S = 15.0
TIMEOUT_S = 300.0


def test_workers_ride_out_a_broker_restart(tmp_path: Path) -> None:
    asks, answers = memory_probes(20, "brk")
    events = generate_events(N_EVENTS, prefix="brk", seed=13, examples=None)
    half = len(events) // 2
    first = write_jsonl(tmp_path / "first.jsonl", asks + events[:half])
    second = write_jsonl(tmp_path / "second.jsonl", events[half:] + answers)
    whole = write_jsonl(tmp_path / "whole.jsonl", asks + events + answers)
    scan = ScanResult(whole, tmp_path / "scan")
    want = scan.directions
    want_ids = {f"{e}:{r}:{s}-{t}" for e, r, s, t in want}
    total = len(asks) + len(events) + len(answers)

    marks = [("start", time.monotonic())]
    broker = PrivateBroker(tmp_path / "kafka")
    bootstrap = broker.start()
    marks.append(("broker up", time.monotonic()))
    stack = VigilStack(bootstrap, tmp_path / "stack", "brk")
    findings = None
    try:
        stack.create_topics()
        runner = stack.start_worker()
        findings = TopicReader(bootstrap, stack.findings_topic)
        stack.replay(first)
        findings.read_until(
            lambda r: len({f.finding_id for f in findings_of(r)}) >= len(want) // 6,
            TIMEOUT_S,
            "a third of the first half's findings",
            stack.diagnostics,
        )
        findings.close()
        marks.append(("a sixth of the findings", time.monotonic()))
        broker.stop()
        marks.append(("broker stopped", time.monotonic()))
        late = stack.start_worker(wait=False)
        down = time.monotonic()
        stack.wait(
            lambda: (
                "waiting for the broker" in late.log_text() and time.monotonic() - down >= OUTAGE_S
            ),
            "the second worker waiting for the broker",
            120,
        )
        assert runner.alive and late.alive, stack.diagnostics()
        broker.start()
        marks.append(("broker back", time.monotonic()))
        stack.wait(stack.settled, "both workers serving after the broker came back", TIMEOUT_S)
        marks.append(("both serving", time.monotonic()))
        stack.replay(second)
        findings = TopicReader(bootstrap, stack.findings_topic)
        findings.read_until(
            lambda r: {f.finding_id for f in findings_of(r)} >= want_ids,
            TIMEOUT_S,
            f"all {len(want_ids)} findings",
            stack.diagnostics,
        )
        marks.append(("all findings", time.monotonic()))
        stack.wait(stack.caught_up(total), "the group committed every event", TIMEOUT_S)
        marks.append(("all committed", time.monotonic()))
        findings.drain()
        got_all = findings_of(findings.records)
        got: dict[tuple[str, str, int, int], str] = {}
        for f in got_all:
            k = (f.event_id, f.rule_id, f.start, f.end)
            assert f.direction == want.get(k), f"{f.finding_id}: {f.direction} vs {want.get(k)}"
            got[k] = f.direction
        problem = compare(got, want, "findings across the broker restart vs scan")
        assert problem is None, problem
        assert runner.alive and late.alive, stack.diagnostics()
        assert all(stack.assignment().values()), stack.assignment()
        print(
            f"\nbroker restart: {len(want)} findings, {len(got_all) - len(got)} copies; "
            f"partitions {stack.assignment()}; "
            + ", ".join(f"{what} +{t - marks[0][1]:.0f}s" for what, t in marks[1:])
        )
    finally:
        if findings is not None:
            findings.close()
        stack.close()
        broker.stop()
