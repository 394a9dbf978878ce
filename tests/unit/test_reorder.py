"""Echo or leak by turn order, not arrival order, within a bounded reorder window.

The one dataflow serves both runners: ``vigil scan`` (event time) and the worker's
``StreamRunner`` (its clock), here broker-free with a list sink.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

from prometheus_client import CollectorRegistry

from schemas import Finding
from services.dataflow.flow import FINDINGS, Dataflow
from services.scan import run_scan
from services.settings import Settings
from services.streaming.runner import MemoryStates, Record, StreamRunner
from tests.support.chat_events import event
from tests.unit.test_worker_agent import ListSink

T0 = datetime(2026, 11, 2, 10, 0, tzinfo=UTC)
EMAIL = "anna.devries@example.nl"


def ev(eid: str, turn: int, role: str, content: str, seconds: float, cid: str = "c1") -> str:
    return json.dumps(event(eid, cid, turn, role, content, when=T0 + timedelta(seconds=seconds)))


def scan(tmp_path: Path, rows: list[str], **settings: object) -> tuple[list[Finding], object]:
    src = tmp_path / "in.jsonl"
    src.write_text("\n".join(rows) + "\n")
    out = tmp_path / "out"
    summary = run_scan(str(src), out, Settings(**settings))  # type: ignore[arg-type]
    lines = (out / "findings.jsonl").read_text().splitlines()
    return [Finding.model_validate_json(x) for x in lines], summary


def directions(findings: list[Finding], event_id: str) -> list[str]:
    return [f.direction for f in findings if f.event_id == event_id and f.category == "pii"]


def test_a_late_user_turn_within_the_window_makes_an_echo(tmp_path: Path) -> None:
    rows = [
        ev("a1", 1, "assistant", f"I noted {EMAIL}.", 0),
        ev("u0", 0, "user", f"my mail is {EMAIL}", 3),  # turn 0, logged 3 s later
    ]
    found, summary = scan(tmp_path, rows)
    assert directions(found, "a1") == ["echo"]
    assert summary.held_answers == 1  # type: ignore[attr-defined]
    assert summary.findings_by_direction == {"input": 1, "echo": 1}  # type: ignore[attr-defined]


def test_a_later_turn_releases_the_held_answer_first(tmp_path: Path) -> None:
    rows = [
        ev("a1", 1, "assistant", f"I noted {EMAIL}.", 0),
        ev("u2", 2, "user", "thanks", 1),  # the conversation moved on: a1 is decided first
        ev("u0", 0, "user", f"my mail is {EMAIL}", 2),  # too late, although inside the window
    ]
    found, summary = scan(tmp_path, rows)
    assert directions(found, "a1") == ["leak"]
    assert summary.held_answers == 1  # type: ignore[attr-defined]


def test_a_duplicate_turn_index_counts_as_before(tmp_path: Path) -> None:
    rows = [
        ev("a2", 2, "assistant", f"Sent to {EMAIL}", 0),
        ev("u2", 2, "user", f"{EMAIL} please", 1),  # the same turn index, arriving later
    ]
    found, _ = scan(tmp_path, rows)
    assert directions(found, "a2") == ["echo"]


def test_after_the_window_a_late_turn_no_longer_counts(tmp_path: Path) -> None:
    rows = [
        ev("a1", 1, "assistant", f"I noted {EMAIL}.", 0),
        ev("u0", 0, "user", f"my mail is {EMAIL}", 30),  # 30 s later: past the 10 s window
    ]
    found, _ = scan(tmp_path, rows)
    assert directions(found, "a1") == ["leak"]
    found, _ = scan(tmp_path, rows, reorder_window_seconds=60)
    assert directions(found, "a1") == ["echo"]


def test_a_value_the_user_gives_only_later_in_turn_order_is_a_leak(tmp_path: Path) -> None:
    rows = [
        ev("a1", 1, "assistant", f"Is it {EMAIL}?", 0),
        ev("u2", 2, "user", f"yes, {EMAIL}", 1),  # turn 2: after the answer in turn order
    ]
    found, _ = scan(tmp_path, rows)
    assert directions(found, "a1") == ["leak"]


def test_window_zero_decides_at_arrival(tmp_path: Path) -> None:
    rows = [
        ev("a1", 1, "assistant", f"I noted {EMAIL}.", 0),
        ev("u0", 0, "user", f"my mail is {EMAIL}", 1),
    ]
    found, summary = scan(tmp_path, rows, reorder_window_seconds=0)
    assert directions(found, "a1") == ["leak"]
    assert summary.held_answers == 0  # type: ignore[attr-defined]


def test_the_end_of_a_scan_releases_every_held_answer(tmp_path: Path) -> None:
    rows = [ev(f"a{i}", 1, "assistant", f"Mail x{i}@example.org", i, cid=f"c{i}") for i in range(5)]
    found, summary = scan(tmp_path, rows, reorder_window_seconds=3600)
    assert summary.held_answers == 5 and summary.events == 5  # type: ignore[attr-defined]
    assert sorted(f.direction for f in found) == ["leak"] * 5


def test_bounds_per_conversation_decide_at_once(tmp_path: Path) -> None:
    # Four answers of the same turn index (a later turn would release the earlier ones).
    rows = [ev(f"a{i}", 1, "assistant", f"Mail x{i}@example.org", i) for i in range(4)]
    found, summary = scan(tmp_path, rows, reorder_max_held=2, reorder_window_seconds=3600)
    assert summary.held_answers == 2  # type: ignore[attr-defined]
    assert len(found) == 4  # the others were decided at arrival, none dropped


async def test_the_worker_holds_and_releases_on_its_clock() -> None:
    registry = CollectorRegistry()
    settings = Settings(store="memory://", reorder_window_seconds=10)
    flow = Dataflow(settings, registry, clock="wall", partitions=1)
    sink = ListSink()
    now = [1.8e9]
    runner = StreamRunner(flow, MemoryStates(flow), sink, clock=lambda: now[0])

    def rec(line: str, offset: int) -> Record:
        return Record(line.encode(), b"c1", "chat.events", 0, offset)

    await runner.screen([rec(ev("a1", 1, "assistant", f"I noted {EMAIL}.", 0), 1)])
    assert sink.values(FINDINGS) == []  # held
    assert registry.get_sample_value("vigil_held_answers_total") == 1
    now[0] += 3
    await runner.screen([rec(ev("u0", 0, "user", f"my mail is {EMAIL}", 3), 2)])
    assert await runner.release_held([0]) == []  # not due yet
    now[0] += 10
    released = await runner.release_held([0])
    assert [s.event.event_id for s in released if s.event] == ["a1"]
    found = [Finding.model_validate_json(v) for v in sink.values(FINDINGS)]
    assert [(f.event_id, f.direction) for f in found] == [("u0", "input"), ("a1", "echo")]
    # Counted once, when decided.
    assert (
        registry.get_sample_value("vigil_events_total", {"role": "assistant", "tenant": "none"})
        == 1
    )


async def test_a_released_answer_is_counted_by_the_spike_detector() -> None:
    """The detector's window counter skips offsets it counted (a redelivery); a released answer
    is behind those, and must be counted all the same."""
    settings = Settings(store="memory://", reorder_window_seconds=10)
    flow = Dataflow(settings, CollectorRegistry(), clock="wall", partitions=1)
    assert flow.counter is not None
    now = [1.8e9]
    runner = StreamRunner(flow, MemoryStates(flow), ListSink(), clock=lambda: now[0])

    def rec(line: str, offset: int, cid: str) -> Record:
        return Record(line.encode(), cid.encode(), "chat.events", 0, offset)

    await runner.screen([rec(ev("a1", 1, "assistant", f"I noted {EMAIL}.", 0), 1, "c1")])
    await runner.screen([rec(ev("x0", 0, "user", "hello", 1, cid="c2"), 2, "c2")])
    now[0] += 11
    [released] = await runner.release_held([0])
    assert released.event is not None and released.event.event_id == "a1"
    counts = json.loads(runner.partition_state(0).counts["p/0"])  # type: ignore[index]
    series = [json.loads(s) for w in counts["w"].values() for s in w["s"]]
    assert ["pii", "none", "leak"] in series, counts
    messages = sum(
        n
        for w in counts["w"].values()
        for k, n in w["m"].items()
        if json.loads(k)[1] == "assistant"
    )
    assert messages == 1
