"""Evaluation sets in the worker, against the real broker: a worker killed with SIGKILL mid-stream
is replaced, and the sample goes on without duplicates or gaps.

A stream of three days (day periods, timestamps spread evenly) is replayed in three parts:

A. the first half (all of day 1, half of day 2). The test waits until day 1 has closed: its cases
   on ``vigil.evalset`` carry final inclusion probabilities.
B. the next fifth; part-way through it the worker is killed with SIGKILL.
C. after a new worker with the same app id has started: the rest (day 3).

Then the live cases of ``vigil.evalset`` (last value per key, tombstones applied) must be what
``EvalsetCollector`` — the in-process composition ``vigil scan`` uses — selects on the whole file
with the same key and configuration (two active periods, so day 1 retires): same case ids, same
strata, same questions, answers, checks and findings, the same Kafka positions as the file's lines
(every event of the conversation's period, once), and for the closed day 2 the same final
inclusion probabilities and populations. Day 1's cases are on the archive topic, final. A review
label sent afterwards joins its case.

A second test runs the sampler's pure core through the same stream in memory, with crashes
(staged state dropped, messages replayed), and checks it against the collector too.
"""

from __future__ import annotations

import random
import time
import uuid
from collections.abc import Callable, Iterator, MutableMapping
from pathlib import Path
from typing import Any

import pytest

from schemas.evalset import EvalCase
from schemas.review import ReviewLabel
from services.evalsets import attach_labels, label_from_review
from services.evalsets.settings import EvalsetSettings
from services.evalsets.streaming import Decision, SamplerCore, partition_for
from tests.support.chat_events import generate_events, write_jsonl
from tests.support.evalset_expect import (
    DAYS,
    EVALSET,
    Expected,
    converges_to,
    diff,
    input_positions,
    live,
    spread,
    view,
    worker_view,
)
from tests.support.kafka_io import TopicReader, events_total, produce
from tests.support.worker_process import VigilStack

N_EVENTS = 2400
TIMEOUT_S = 120.0


@pytest.fixture(scope="module")
def stream(tmp_path_factory: pytest.TempPathFactory) -> tuple[list[dict[str, Any]], Expected]:
    events = spread(generate_events(N_EVENTS, prefix="evs", seed=31))
    return events, Expected(events, EvalsetSettings(**EVALSET))  # type: ignore[arg-type]


def test_killed_worker_is_replaced_and_the_sample_has_no_duplicates_or_gaps(
    vigil_stack: Callable[..., VigilStack],
    tmp_path: Path,
    stream: tuple[list[dict[str, Any]], Expected],
) -> None:
    events, expected = stream
    assert len(expected.active) > 60 and len(expected.retired) > 30
    assert expected.bounded == [], "a stratum outgrew its reserve: order would matter"
    sampler = expected.collector.sampler.sampler
    population = sum(s.population for p in DAYS[1:] for s in sampler.state(p).strata.values())
    drawn = [c for c in expected.active.values() if c.unit == "conversation"]
    assert population > 2 * len(drawn), "the sample must leave conversations out"
    assert len(drawn) < len(expected.active), "some conversations have a second critical answer"

    a, b = len(events) // 2, len(events) * 7 // 10
    paths = {
        name: write_jsonl(tmp_path / f"{name}.jsonl", part)
        for name, part in (("a", events[:a]), ("b", events[a:b]), ("c", events[b:]))
    }
    suffix = uuid.uuid4().hex[:8]
    topics = {
        "topic": f"it-evalset-cases-{suffix}",
        "archive_topic": f"it-evalset-archive-{suffix}",
        "labels_topic": f"it-evalset-labels-{suffix}",
    }
    env = {f"VIGIL_EVALSET_{k.upper()}": v for k, v in {**EVALSET, **topics}.items()}
    # Expected screens each event as it arrives; the worker must too. With a reorder window it
    # holds answers with a leak and releases them on its own clock, so the sampler would see
    # them in another order (tests/unit/test_reorder.py covers the window in the worker).
    env["VIGIL_REORDER_WINDOW_SECONDS"] = "0"
    stack = vigil_stack("evalset", **env)
    cases = TopicReader(stack.bootstrap, topics["topic"])
    archive = TopicReader(stack.bootstrap, topics["archive_topic"])
    inputs = TopicReader(stack.bootstrap, stack.input_topic)
    t0 = time.monotonic()
    try:
        first = stack.start_worker()
        stack.replay(paths["a"])

        def day1_closed(records: list[Any]) -> bool:
            return any(c.period == DAYS[0] and c.inclusion_final for c in live(records).values())

        cases.read_until(day1_closed, TIMEOUT_S, "day 1's final cases", stack.diagnostics)
        stack.replay(paths["b"])
        text = first.metrics_when(
            lambda text: events_total(text) >= a + (b - a) // 3,
            "a third of part B screened",
            TIMEOUT_S,
        )
        first.kill()
        killed_at = events_total(text)
        second = stack.start_worker()
        stack.replay(paths["c"])

        want_active = {
            k: view(c, expected.sources(c), c.period != DAYS[2]) for k, c in expected.active.items()
        }
        inputs.read_until(lambda r: len(r) >= len(events), 60, "the input topic")
        position = input_positions(inputs.records)
        try:
            cases.read_until(
                converges_to(want_active, position), TIMEOUT_S, "the live cases to match scan's"
            )
        except AssertionError:
            got = worker_view(live(cases.records), position)
            problem = diff(got, want_active, "live cases vs scan")
            odd = sorted(set(got) ^ set(want_active))
            history = _history(stack, expected, odd, cases.records)
            strata = _strata(stack, expected, sorted({k.split(":", 1)[0] for k in got}))
            where = f"killed at {killed_at:.0f} screened events (part B: {a}..{b})"
            raise AssertionError(
                f"{problem}\n{history}\n{where}\n{strata}\n{stack.diagnostics()}"
            ) from None
        took = time.monotonic() - t0
        found = live(cases.records)
        assert all(c.inclusion_final for c in found.values() if c.period == DAYS[1])
        assert not any(c.inclusion_final for c in found.values() if c.period == DAYS[2])

        # Day 1 retired: archived with final probabilities, and tombstoned above.
        want_archive = {k: view(c, expected.sources(c), True) for k, c in expected.retired.items()}

        try:
            archive.read_until(converges_to(want_archive, position), 60, "day 1 on the archive")
        except AssertionError:
            problem = diff(
                worker_view(live(archive.records), position), want_archive, "archive vs scan"
            )
            raise AssertionError(f"{problem}\n{stack.diagnostics()}") from None

        # A reviewer's label joins its (open) case.
        target = next(c for c in expected.active.values() if c.period == DAYS[2] and c.findings)
        review = _review(target)
        produce(
            stack.bootstrap,
            topics["labels_topic"],
            [(target.conversation_id.encode(), review.model_dump_json().encode())],
        )
        (labelled,) = attach_labels([target], [label_from_review(review)]).cases
        want_labelled = view(labelled, expected.sources(labelled), False)
        cases.read_until(
            lambda r: worker_view(live(r), position).get(target.case_id) == want_labelled,
            60,
            "the label on its case",
            stack.diagnostics,
        )
        assert second.alive, second.diagnostics()
        print(
            f"\nevalset: {len(found)} live cases, {len(expected.retired)} archived, "
            f"{len(cases.records)} records on the case topic; "
            f"killed after {killed_at:.0f} of {b} events; "
            f"converged {took:.1f}s after the start"
        )
    finally:
        cases.close()
        archive.close()
        inputs.close()


def _history(stack: VigilStack, expected: Expected, keys: list[str], records: list[Any]) -> str:
    """What happened to these cases: scan's member record, the decisions about them, and the
    records of the case topic."""
    from services.evalsets.state import member_key
    from services.streaming.features.evalsets import decisions_topic
    from services.streaming.runner import Record, unpack

    reader = TopicReader(stack.bootstrap, decisions_topic(stack.app_id))
    try:
        reader.drain(2.0)
    finally:
        reader.close()
    lines = []
    for key in keys[:5]:
        period, cid = key.split(":", 1)
        record = expected.collector.sampler.sampler.members.get(member_key(period, cid))
        lines.append(f"{key}: scan member {record}")
        decisions = [
            (r, d)
            for r in reader.records
            for d in unpack(Record(r.value, None, "decisions", r.partition, r.offset), Decision)
        ]
        for r, d in decisions:
            if d.period != period:
                continue
            if d.conversation_id == cid:
                sel = d.selection.stratum if d.selection else None
                lines.append(f"  @{r.partition}/{r.offset} update {sel}")
            elif d.kind != "update" and (
                cid in (d.keep or []) or any(x.conversation_id == cid for x in d.selections)
            ):
                lines.append(f"  @{r.partition}/{r.offset} {d.kind} final={d.final} lists it")
            elif d.kind == "sync" and d.last and d.partition == partition_for(cid, 4):
                lines.append(f"  @{r.partition}/{r.offset} sync final={d.final} without it")
        for r in records:
            if r.key.decode() == key:
                what = (
                    "tombstone"
                    if r.value is None
                    else EvalCase.model_validate_json(r.value).stratum
                )
                lines.append(f"  case record @{r.partition}/{r.offset}: {what}")
    return "\n".join(lines)


def _strata(stack: VigilStack, expected: Expected, periods: list[str]) -> str:
    """Conversations the worker's sampler counts in another stratum than scan's, read from the
    state table's changelog (the last member records, with the journal of the last commit
    applied): where a population differs, these are the conversations that moved or did not."""
    import json

    from services.evalsets.state import MemberRecord

    reader = TopicReader(stack.bootstrap, f"{stack.app_id}-state-changelog")
    try:
        reader.drain(3.0)
    finally:
        reader.close()
    prefix = "0|evalset-sampler|"
    state: dict[str, bytes] = {}
    for r in reader.records:
        key = r.key.decode()
        if key.startswith(prefix):
            if r.value is None:
                state.pop(key[len(prefix) :], None)
            else:
                state[key[len(prefix) :]] = r.value[8:]
    for key, text in json.loads(state.pop("J", b"{}") or b"{}").items():
        if text is None:
            state.pop(key, None)
        else:
            state[key] = text.encode()
    members = expected.collector.sampler.sampler.members
    lines = []
    for period in periods:
        worker = {
            k.split("|", 2)[2]: MemberRecord.model_validate_json(v)
            for k, v in state.items()
            if k.startswith(f"M|{period}|")
        }
        scan = {k.split("|", 1)[1]: members[k] for k in members if k.startswith(f"{period}|")}
        for cid in sorted({*worker, *scan}):
            w, c = worker.get(cid), scan.get(cid)
            if (w.stratum if w else None) != (c.stratum if c else None):
                lines.append(
                    f"{period} {cid} (partition {partition_for(cid, 4)}): worker "
                    f"{w.stratum if w else None} {w.categories if w else ''}, scan "
                    f"{c.stratum if c else None} {c.categories if c else ''}"
                )
    return "members counted elsewhere:\n" + ("\n".join(lines) or "none")


def _review(case: EvalCase) -> ReviewLabel:
    return ReviewLabel.model_validate(
        {
            "label_id": f"lab-{case.conversation_id}",
            "item_id": f"item-{case.conversation_id}",
            "conversation_id": case.conversation_id,
            "round": 1,
            "reviewer": "it-reviewer",
            "labeled_at": "2026-11-05T09:00:00Z",
            "priority": 50,
            "admission": "admitted",
            "inclusion_probability": 1.0,
            "reasons": [],
            "findings": [
                {
                    "finding_id": f.finding_id,
                    "event_id": f.event_id,
                    "rule_id": f.rule_id,
                    "category": f.category,
                    "entity": f.entity,
                    "severity": f.severity,
                    "verdict": "false_positive",
                }
                for f in case.findings
            ],
            "expected_answer": "Ask your pharmacist.",
            "note": "integration test",
        }
    )


# --------------------------------------------------------------------------- no broker


class _Partitions:
    """The case partitions' selections, driven by decisions as the worker's agent applies them."""

    def __init__(self, partitions: int) -> None:
        self.n = partitions
        self.selected: dict[tuple[str, str], Any] = {}
        self.archived: dict[tuple[str, str], Any] = {}

    def apply(self, decisions: list[Decision]) -> None:
        for d in decisions:
            if d.kind == "update":
                assert d.conversation_id is not None
                assert d.partition == partition_for(d.conversation_id, self.n)
                if d.selection is None:
                    self.selected.pop((d.period, d.conversation_id), None)
                else:
                    self.selected[(d.period, d.conversation_id)] = d.selection
                continue
            for s in d.selections:
                assert partition_for(s.conversation_id, self.n) == d.partition
                store = self.selected if d.kind == "sync" else self.archived
                store[(d.period, s.conversation_id)] = s
            if d.last:
                keep = set(d.keep or ()) if d.kind == "sync" else set()
                for key in [
                    k
                    for k in self.selected
                    if k[0] == d.period
                    and partition_for(k[1], self.n) == d.partition
                    and k[1] not in keep
                ]:
                    del self.selected[key]


class _Raw(MutableMapping[str, bytes]):
    """A table that records its writes, so a crash can keep only a prefix of them (the
    changelog of one partition keeps their order)."""

    def __init__(self) -> None:
        self.data: dict[str, bytes] = {}
        self.log: list[tuple[str, bytes | None]] = []

    def __getitem__(self, key: str) -> bytes:
        return self.data[key]

    def __setitem__(self, key: str, value: bytes) -> None:
        self.data[key] = value
        self.log.append((key, value))

    def __delitem__(self, key: str) -> None:
        del self.data[key]
        self.log.append((key, None))

    def __iter__(self) -> Iterator[str]:
        return iter(self.data)

    def __len__(self) -> int:
        return len(self.data)


def test_sampler_core_with_crashes_matches_the_collector(
    stream: tuple[list[dict[str, Any]], Expected],
) -> None:
    """The sampler's core through the same stream, crashing now and then: each crash keeps a
    random prefix of the table writes and of the decisions sent since the last offset commit,
    reloads, re-sends every selection (as after recovery) and replays from that commit."""
    _, expected = stream
    es = EvalsetSettings(**EVALSET)  # type: ignore[arg-type]
    raw = _Raw()

    def new_core(now: float) -> SamplerCore:
        return SamplerCore(
            es.config(),
            es.secret,
            raw,
            partitions=4,
            grace_seconds=0,
            idle_seconds=30,
            check_wait_seconds=60,
            now=now,
        )

    rng = random.Random(3)
    core, parts = new_core(0.0), _Partitions(4)
    msgs = expected.samples
    committed, snapshot, unsent = 0, dict(raw.data), list[Decision]()
    raw.log.clear()
    i = crashes = 0
    while i < len(msgs):
        now = i / 100
        unsent += core.observe(msgs[i], wall=1e9, mono=now)
        core.commit()
        i += 1
        if i % 20 == 0:  # a tick, then Faust's commit: everything sent so far has landed
            plan = core.plan(wall=1e9, mono=now)
            for period in plan.close:
                unsent += core.close(period)
                core.commit()
            for period in plan.retire:
                parts.apply(unsent + core.retire(period))  # acknowledged before forgetting
                unsent = []
                core.forget(period)
                core.commit()
            parts.apply(unsent)
            committed, snapshot, unsent = i, dict(raw.data), []
            raw.log.clear()
        elif rng.random() < 0.01:
            crashes += 1
            writes = raw.log[: rng.randint(0, len(raw.log))]
            raw.data = dict(snapshot)
            for key, value in writes:
                if value is None:
                    raw.data.pop(key, None)
                else:
                    raw.data[key] = value
            raw.log.clear()
            parts.apply(unsent[: rng.randint(0, len(unsent))])
            core = new_core(now)
            unsent = core.resync()
            i = committed
    parts.apply(unsent + core.resync())
    assert crashes >= 5
    got = {
        f"{p}:{c}": (s.stratum, s.inclusion_probability, s.stratum_population)
        for (p, c), s in parts.selected.items()
    }
    want = {
        k: (c.stratum, c.inclusion_probability, c.stratum_population)
        for k, c in expected.active.items()
        if c.unit == "conversation"  # the sampler draws conversations; answer cases follow them
    }
    assert {k: v[0] for k, v in got.items()} == {k: v[0] for k, v in want.items()}
    closed = {k: v for k, v in want.items() if not k.startswith(DAYS[2])}
    assert {k: v for k, v in got.items() if k in closed} == closed
    retired = {k for k, c in expected.retired.items() if c.unit == "conversation"}
    assert {f"{p}:{c}" for p, c in parts.archived} == retired
    assert not any(k.startswith("M|" + DAYS[0]) for k in raw.data), "retired members left"
