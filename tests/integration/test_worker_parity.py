"""The Faust worker on the real broker finds exactly what ``vigil scan`` finds in the same file.

10,000 events (and a few invalid lines) are scanned in-process and replayed with ``vigil replay``
into a worker's input topic. The worker's ``vigil.findings`` must equal scan's ``findings.jsonl``
as sets of ``(event_id, rule_id, start, end)`` with the same ``direction`` each (leak/echo needs
the conversation memory, which works across turns because key = conversation id keeps a
conversation's events in order on one partition), its dead letters must have scan's reasons, and
its ``/metrics`` counters must equal scan's ``metrics.prom``.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path

from schemas import DeadLetter, Finding, GroundingReport
from tests.support.chat_events import generate_events, invalid_lines, write_jsonl
from tests.support.kafka_io import (
    TopicReader,
    events_total,
    invalid_by_reason,
)
from tests.support.parity import (
    ScanResult,
    compare,
    compared_findings_counts,
    findings_of,
    key_of,
)
from tests.support.worker_process import VigilStack

N_EVENTS = 10_000
FINDINGS_TIMEOUT_S = 480.0


def _lines() -> list[dict[str, object] | bytes]:
    """The events with the invalid lines spread through them."""
    lines: list[dict[str, object] | bytes] = list(generate_events(N_EVENTS, prefix="par"))
    bad = [raw for _, raw in invalid_lines("par-bad")]
    step = len(lines) // (len(bad) + 1)
    for i, raw in enumerate(bad, start=1):
        lines.insert(i * step + i - 1, raw)
    return lines


def test_worker_findings_and_metrics_equal_scan(
    vigil_stack: Callable[..., VigilStack], tmp_path: Path
) -> None:
    path = write_jsonl(tmp_path / "events.jsonl", _lines())
    scan = ScanResult(path, tmp_path / "scan")
    want = scan.directions
    assert scan.summary.events == N_EVENTS
    # The file exercises every direction, or the comparison below would prove little.
    directions = Counter(want.values())
    assert {"input", "echo", "leak"} <= set(directions), directions
    assert len(want) > 1000, f"only {len(want)} findings in the scan"

    stack = vigil_stack("parity")
    worker = stack.start_worker()
    findings = TopicReader(stack.bootstrap, stack.findings_topic)
    dlq = TopicReader(stack.bootstrap, stack.dlq_topic)
    verdicts = TopicReader(stack.bootstrap, stack.verdicts_topic)
    try:
        t0 = time.monotonic()
        stack.replay(path)
        replayed = time.monotonic() - t0

        def have_all(records: list[object]) -> bool:
            return len({key_of(f) for f in findings_of(records)}) >= len(want)

        findings.read_until(
            have_all, FINDINGS_TIMEOUT_S, f"{len(want)} findings", stack.diagnostics
        )
        dlq.read_until(
            lambda r: len(r) >= len(scan.dead_letters),
            120,
            f"{len(scan.dead_letters)} dead letters",
            stack.diagnostics,
        )
        verdicts.read_until(
            lambda r: len(r) >= len(scan.verdicts),
            FINDINGS_TIMEOUT_S,
            f"{len(scan.verdicts)} verdicts",
            stack.diagnostics,
        )
        processed = time.monotonic() - t0
        verdicts.drain(quiet_s=1.0)
        findings.drain()  # anything the worker found beyond scan would arrive by now
        dlq.drain(quiet_s=1.0)

        for record in findings.records:
            f = Finding.model_validate_json(record.value)
            assert record.key == f.conversation_id.encode(), "findings are keyed by conversation"
        got_findings = findings_of(findings.records)
        got: dict[tuple[str, str, int, int], str] = {}
        for f in got_findings:
            k = key_of(f)
            assert got.setdefault(k, f.direction) == f.direction, f"{k}: two directions"
        problem = compare(got, want, "worker findings vs scan findings.jsonl")
        assert problem is None, problem
        duplicates = len(got_findings) - len(got)
        assert not duplicates, (
            f"{duplicates} findings published twice: the worker re-processed events (a "
            "rebalance?), which would also inflate its counters"
        )

        # The sampled claim checks: same answers sampled (same key and rate), same verdicts.
        got_verdicts = {}
        for record in verdicts.records:
            report = GroundingReport.model_validate_json(record.value)
            assert record.key == report.conversation_id.encode()
            assert report.event_id not in got_verdicts, f"{report.event_id}: verdict twice"
            got_verdicts[report.event_id] = report.model_dump()
        want_verdicts = {v.event_id: v.model_dump() for v in scan.verdicts}
        assert set(got_verdicts) == set(want_verdicts), "different answers were checked"
        differ = [e for e in want_verdicts if got_verdicts[e] != want_verdicts[e]]
        assert not differ, f"{len(differ)} verdicts differ from scan's, e.g. {differ[:3]}"
        assert {v["stratum"] for v in want_verdicts.values()} == {"always", "sampled"}

        dead = [DeadLetter.model_validate_json(r.value) for r in dlq.records]
        assert Counter(d.reason for d in dead) == Counter(d.reason for d in scan.dead_letters)
        assert all(d.source.startswith(f"{stack.input_topic}/") for d in dead)

        # Events without findings leave no trace but the counters: wait until all are counted.
        text = worker.metrics_when(
            lambda t: (
                events_total(t) >= N_EVENTS
                and sum(invalid_by_reason(t).values()) >= len(scan.dead_letters)
            ),
            f"{N_EVENTS} events and {len(scan.dead_letters)} invalid ones",
        )
        scan_text = scan.metrics_text
        assert events_total(text) == events_total(scan_text) == N_EVENTS
        assert compared_findings_counts(text) == compared_findings_counts(scan_text)
        assert invalid_by_reason(text) == invalid_by_reason(scan_text)
        assert sum(invalid_by_reason(text).values()) == len(scan.dead_letters)
        assert worker.alive, worker.diagnostics()
        print(
            f"\nparity: {N_EVENTS} events, {len(want)} findings "
            f"({dict(sorted(directions.items()))}), {len(dead)} dead letters; "
            f"replay {replayed:.1f}s, all findings after {processed:.1f}s"
        )
    finally:
        findings.close()
        dlq.close()
        verdicts.close()
