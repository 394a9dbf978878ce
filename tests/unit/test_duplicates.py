"""Idempotency by event_id within a bounded window, in the one dataflow both runners use.

A record whose event id an earlier record brought is skipped (nothing emitted, counted in
``vigil_duplicate_events_total`` and the scan summary); the same record read again — a Kafka
redelivery after a crash, same partition and offset — is processed as before, not dropped. The
ids live in the keyed state kind ``events``, bounded by ``VIGIL_DUPLICATE_MAX_EVENTS`` and
``VIGIL_DUPLICATE_WINDOW_SECONDS``.
"""

from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path

from prometheus_client import CollectorRegistry

from schemas import Finding
from services.dataflow.flow import FINDINGS, Dataflow
from services.scan import run_scan
from services.settings import Settings
from services.streaming.runner import MemoryStates, Record, StreamRunner
from tests.support.chat_events import event
from tests.unit.test_worker_agent import ListSink

PACK = Path(__file__).parent.parent / "data" / "mini-pack.yaml"


def line(eid: str, turn: int, role: str, content: str, at: str = "10:00:00") -> str:
    when = datetime.fromisoformat(f"2026-11-02T{at}+00:00")
    return json.dumps(event(eid, "c1", turn, role, content, when=when))


def test_scan_skips_repeated_event_ids_and_counts_them(tmp_path: Path) -> None:
    rows = [
        line("e0", 0, "user", "card 4111 1111 1111 1111"),
        line("e1", 1, "assistant", "noted: carl@example.com"),
        line("e1", 1, "assistant", "noted: carl@example.com"),  # re-sent by the producer
        line("e0", 0, "user", "card 4111 1111 1111 1111"),
        line("e2", 2, "user", "thanks"),
    ]
    src = tmp_path / "in.jsonl"
    src.write_text("\n".join(rows) + "\n")
    summary = run_scan(str(src), tmp_path / "out", Settings(rules_dir=PACK))
    assert (summary.events, summary.duplicates) == (3, 2)
    findings = (tmp_path / "out" / "findings.jsonl").read_text().splitlines()
    assert len(findings) == 2  # the card once, the leaked address once
    assert summary.findings_by_direction == {"input": 1, "leak": 1}
    metrics = (tmp_path / "out" / "metrics.prom").read_text()
    assert "vigil_duplicate_events_total 2.0" in metrics
    assert json.loads((tmp_path / "out" / "summary.json").read_text())["duplicates"] == 2


async def test_the_duplicate_window_is_bounded_in_time_and_size() -> None:
    settings = Settings(rules_dir=PACK, duplicate_window_seconds=60, duplicate_max_events=2)
    flow = Dataflow(settings, CollectorRegistry(), clock="wall", partitions=1)
    spec = flow.specs["events"]
    assert (spec.ttl_seconds, spec.max_entries) == (60, 2)
    now = [1.8e9]
    runner = StreamRunner(flow, MemoryStates(flow), ListSink(), clock=lambda: now[0])

    async def offer(eid: str, offset: int) -> bool:
        rec = Record(line(eid, 0, "user", "hi").encode(), b"c1", "chat.events", 0, offset)
        return (await runner.screen([rec]))[0].duplicate

    assert not await offer("e0", 1)
    now[0] += 30
    assert await offer("e0", 2)  # inside the window
    now[0] += 61
    runner.sweep([0])  # the worker's timer; vigil scan sweeps every SWEEP_EVERY lines
    assert not await offer("e0", 3)  # forgotten: a repeat after the window is new
    assert not await offer("e1", 4) and not await offer("e2", 5)  # e0 pushed out (bound 2)
    assert not await offer("e0", 6)


async def test_worker_redelivery_is_processed_a_new_record_with_the_same_id_is_not() -> None:
    registry = CollectorRegistry()
    settings = Settings(rules_dir=PACK, store="memory://")
    flow = Dataflow(settings, registry, clock="wall", partitions=1)
    sink = ListSink()
    runner = StreamRunner(flow, MemoryStates(flow), sink, clock=lambda: 1.8e9)
    first = line("e0", 0, "user", "card 4111 1111 1111 1111").encode()
    await runner.screen([Record(first, b"c1", "chat.events", 0, 7)])
    # A crash before the commit: Kafka delivers offset 7 again. Processed, same finding id.
    steps = await runner.screen([Record(first, b"c1", "chat.events", 0, 7)])
    assert not steps[0].duplicate
    # The producer sent the event twice: offset 8 holds the same event id. Skipped.
    steps = await runner.screen([Record(first, b"c1", "chat.events", 0, 8)])
    assert steps[0].duplicate and steps[0].emits == []
    found = [Finding.model_validate_json(v) for v in sink.values(FINDINGS)]
    assert len({f.finding_id for f in found}) == 1
    assert registry.get_sample_value("vigil_duplicate_events_total") == 1
    assert registry.get_sample_value("vigil_events_total", {"role": "user", "tenant": "none"}) == 2
