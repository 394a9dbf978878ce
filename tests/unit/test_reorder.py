"""Echo or leak by turn order, not arrival order, within a bounded reorder window.

The one dataflow serves both runners: ``vigil scan`` (event time) and the worker's
``StreamRunner`` (its clock), here broker-free with a list sink.
"""

from __future__ import annotations

import asyncio
import json
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from prometheus_client import CollectorRegistry

from schemas import Finding
from services.dataflow.flow import FINDINGS, Dataflow
from services.dataflow.records import Emit
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


class ChangelogStates(MemoryStates):
    """Memory stores, and what a changelog would hold: a copy of every store taken at each
    ``drain`` (the runner drains the state before it hands a delivery's records to ``send``).
    :meth:`after_crash` gives the stores a restarted worker would recover."""

    def __init__(self, flow: Dataflow) -> None:
        super().__init__(flow)
        self.changelog: dict[tuple[str, int], list[tuple[str, bytes]]] = {}

    async def drain(self) -> None:
        self.changelog = {k: list(s.stream_prefix("")) for k, s in self._stores.items()}

    def after_crash(self, flow: Dataflow) -> MemoryStates:
        states = MemoryStates(flow)
        for (kind, partition), items in self.changelog.items():
            store = states.store(kind, partition)
            for key, value in items:
                store[key] = value
        return states


class Unacknowledged(ListSink):
    """A sink whose records are handed over but never acknowledged (the broker is gone)."""

    async def __call__(self, emit: Emit) -> asyncio.Future[Any]:
        self.emits.append(emit)
        return asyncio.get_running_loop().create_future()


async def test_a_released_answer_stays_held_until_its_records_are_acknowledged() -> None:
    """A worker killed after releasing a held answer, before the broker acknowledged its
    findings, must find it still held when it restarts: the hold leaves the state only after.
    (It used to be deleted with the release, and its deletion went to the changelog first: the
    findings were lost.)"""
    settings = Settings(store="memory://", reorder_window_seconds=10)
    flow = Dataflow(settings, CollectorRegistry(), clock="wall", partitions=1)
    states = ChangelogStates(flow)
    now = [1.8e9]
    sink = Unacknowledged()
    runner = StreamRunner(flow, states, sink, clock=lambda: now[0])
    line = ev("a1", 1, "assistant", f"I noted {EMAIL}.", 0)
    await runner.screen([Record(line.encode(), b"c1", "chat.events", 0, 1)])
    assert sink.values(FINDINGS) == []  # held
    now[0] += 11
    release = asyncio.create_task(runner.release_held([0]))
    for _ in range(20):
        await asyncio.sleep(0)
    assert [Finding.model_validate_json(v).event_id for v in sink.values(FINDINGS)] == ["a1"]
    assert not release.done()  # waiting for the acknowledgement
    held = runner.partition_state(0).held
    assert held is not None and len(held) == 1  # still held meanwhile
    assert ("c1", "a1") in flow.releasing
    assert await runner.release_held([0]) == []  # not released twice by this process
    release.cancel()  # killed
    with pytest.raises(asyncio.CancelledError):
        await release

    flow2 = Dataflow(settings, CollectorRegistry(), clock="wall", partitions=1)
    sink2 = ListSink()
    runner2 = StreamRunner(flow2, states.after_crash(flow2), sink2, clock=lambda: now[0])
    [again] = await runner2.release_held([0])
    assert again.event is not None and again.event.event_id == "a1"
    found = [Finding.model_validate_json(v) for v in sink2.values(FINDINGS)]
    assert [(f.event_id, f.direction) for f in found] == [("a1", "leak")]
    # Acknowledged this time: it leaves the store and the conversation's memory.
    st = runner2.partition_state(0)
    assert st.held is not None and len(st.held) == 0
    assert json.loads(st.memory["c1"]).get("held", {}) == {}
    assert flow2.releasing == set()
    assert await runner2.release_held([0]) == []


async def test_a_delivery_that_fails_leaves_the_answer_held_for_the_next_release() -> None:
    settings = Settings(store="memory://", reorder_window_seconds=10)
    flow = Dataflow(settings, CollectorRegistry(), clock="wall", partitions=1)
    now = [1.8e9]

    class Failing(ListSink):
        fail = True

        async def __call__(self, emit: Emit) -> asyncio.Future[Any]:
            fut = await super().__call__(emit)
            if self.fail:
                fut = asyncio.get_running_loop().create_future()
                fut.set_exception(OSError("broker gone"))
            return fut

    sink = Failing()
    runner = StreamRunner(flow, MemoryStates(flow), sink, clock=lambda: now[0])
    line = ev("a1", 1, "assistant", f"I noted {EMAIL}.", 0)
    await runner.screen([Record(line.encode(), b"c1", "chat.events", 0, 1)])
    now[0] += 11
    with pytest.raises(OSError):
        await runner.release_held([0])
    held = runner.partition_state(0).held
    assert held is not None and len(held) == 1 and flow.releasing == set()
    sink.fail = False
    [again] = await runner.release_held([0])
    assert again.event is not None and again.event.event_id == "a1"
    assert len(held) == 0


async def test_a_later_turn_releases_the_held_answer_once_within_a_batch() -> None:
    """Two later turns in one batch: the first releases the held answer, the second must not
    release it again although it is still listed until the batch is acknowledged."""
    settings = Settings(store="memory://", reorder_window_seconds=10)
    flow = Dataflow(settings, CollectorRegistry(), clock="wall", partitions=1)
    sink = ListSink()
    runner = StreamRunner(flow, MemoryStates(flow), sink, clock=lambda: 1.8e9)
    rows = [
        ev("a1", 1, "assistant", f"I noted {EMAIL}.", 0),
        ev("u2", 2, "user", "thanks", 1),
        ev("u3", 3, "user", "bye", 2),
    ]
    await runner.screen(
        [Record(r.encode(), b"c1", "chat.events", 0, i) for i, r in enumerate(rows)]
    )
    found = [Finding.model_validate_json(v) for v in sink.values(FINDINGS)]
    assert [(f.event_id, f.direction) for f in found] == [("a1", "leak")]
    st = runner.partition_state(0)
    assert st.held is not None and len(st.held) == 0 and flow.releasing == set()


async def test_a_rebalance_while_a_release_waits_leaves_the_answer_to_the_new_owner() -> None:
    """After a reset (a rebalance) the partition may be another worker's: an acknowledgement
    that arrives then does not write to its state (the new owner releases the answer again)."""
    settings = Settings(store="memory://", reorder_window_seconds=10)
    flow = Dataflow(settings, CollectorRegistry(), clock="wall", partitions=1)
    now = [1.8e9]
    runner = StreamRunner(flow, MemoryStates(flow), Unacknowledged(), clock=lambda: now[0])
    line = ev("a1", 1, "assistant", f"I noted {EMAIL}.", 0)
    await runner.screen([Record(line.encode(), b"c1", "chat.events", 0, 1)])
    st = runner.partition_state(0)
    now[0] += 11
    [released] = flow.release_held(st, now=now[0])
    follow_up = flow.delivery([released]).then
    assert follow_up is not None and ("c1", "a1") in flow.releasing
    flow.reset()
    follow_up()  # acknowledged after the reset
    assert st.held is not None and len(st.held) == 1
    assert "a1" in json.loads(st.memory["c1"]).get("held", {})
    # without a reset, the same follow-up lets it go
    [released] = flow.release_held(st, now=now[0])
    follow_up = flow.delivery([released]).then
    assert follow_up is not None
    follow_up()
    assert len(st.held) == 0 and flow.releasing == set()


async def test_a_release_that_fails_keeps_its_answer_held_and_lets_the_others_go(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """One conversation's release raising (a stage's bug) must neither keep the other
    conversations' answers from going nor leave any answer marked as being released: a marked
    answer is skipped by every later sweep, so an answer no later turn releases (its
    conversation's last) would never have its findings published."""
    settings = Settings(store="memory://", reorder_window_seconds=10)
    flow = Dataflow(settings, CollectorRegistry(), clock="wall", partitions=1)
    sink = ListSink()
    now = [1.8e9]
    runner = StreamRunner(flow, MemoryStates(flow), sink, clock=lambda: now[0])
    rows = [
        (ev("a1", 1, "assistant", f"I noted {EMAIL}.", 0, cid="c1"), b"c1"),
        (ev("b1", 1, "assistant", f"I noted {EMAIL}.", 0, cid="c2"), b"c2"),
    ]
    await runner.screen(
        [Record(line.encode(), key, "chat.events", 0, i) for i, (line, key) in enumerate(rows)]
    )
    held = runner.partition_state(0).held
    assert held is not None and len(held) == 2
    now[0] += 11
    inline = flow._inline

    def failing(event: Any, *args: Any, **kwargs: Any) -> Any:
        if event.conversation_id == "c1":
            raise RuntimeError("a stage's bug")
        return inline(event, *args, **kwargs)

    monkeypatch.setattr(flow, "_inline", failing)
    released = await runner.release_held([0])
    assert [s.event.event_id for s in released if s.event] == ["b1"]
    assert flow.releasing == set() and len(held) == 1
    found = [Finding.model_validate_json(v) for v in sink.values(FINDINGS)]
    assert [f.event_id for f in found] == ["b1"]
    monkeypatch.setattr(flow, "_inline", inline)  # fixed: the next sweep releases it
    [again] = await runner.release_held([0])
    assert again.event is not None and again.event.event_id == "a1"
    assert len(held) == 0 and flow.releasing == set()


def test_a_release_that_raises_leaves_nothing_marked(monkeypatch: pytest.MonkeyPatch) -> None:
    """Without an error callback (``vigil scan``) the error is raised, and neither the answer
    that failed nor those released before it in the same call stay marked."""
    settings = Settings(store="memory://", reorder_window_seconds=10)
    flow = Dataflow(settings, CollectorRegistry(), clock="wall", partitions=1)
    runner = StreamRunner(flow, MemoryStates(flow), ListSink(), clock=lambda: 1.8e9)
    st = runner.partition_state(0)
    rows = [  # a2 logged before a1: neither releases the other, a1 is released first
        (ev("a2", 2, "assistant", f"Also {EMAIL}.", 1, cid="c1"), b"c1"),
        (ev("a1", 1, "assistant", f"I noted {EMAIL}.", 0, cid="c1"), b"c1"),
        (ev("b1", 1, "assistant", f"I noted {EMAIL}.", 0, cid="c2"), b"c2"),
    ]
    asyncio.run(
        runner.screen(
            [Record(line.encode(), key, "chat.events", 0, i) for i, (line, key) in enumerate(rows)]
        )
    )
    inline = flow._inline
    bugs = {"b1"}  # first another conversation's (c1's answers were released before it)

    def failing(event: Any, *args: Any, **kwargs: Any) -> Any:
        if event.event_id in bugs:
            raise RuntimeError("a stage's bug")
        return inline(event, *args, **kwargs)

    monkeypatch.setattr(flow, "_inline", failing)
    with pytest.raises(RuntimeError):
        flow.release_held(st, now=1.8e9 + 11)
    assert flow.releasing == set()
    bugs.clear()
    bugs.add("a2")  # then the second answer of the same conversation (after a1's)
    with pytest.raises(RuntimeError):
        flow.release_held(st, now=1.8e9 + 11)
    assert flow.releasing == set()
    assert st.held is not None and len(st.held) == 3
