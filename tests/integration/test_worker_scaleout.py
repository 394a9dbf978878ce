"""Scale-out on Kafka itself: workers of one consumer group share the stream, a third joins, the
one that owns partition 0 is killed with SIGKILL, and nothing is lost or doubled.

A stream of three days (day periods, as ``test_evalset_worker.py``) with conversation-memory
probes (a user's address in the first part, the answer echoing it in the last) goes into six
partitions in three parts:

A. two workers share the partitions; the test waits until day 1's eval-set cases are final.
B. a third worker joins (partitions move to it with their state); a third of the way through
   B the worker that owns partition 0 — where the stream's one eval-set sampler and one spike
   detector live — is killed with SIGKILL; its partitions, partition 0 among them, move to the
   two others with their state.
C. the rest; day 2 closes after the kill, on partition 0's new owner.

Then what the group produced must be what ``vigil scan`` makes of the whole file:

- **findings**: every one of scan's, each copy with scan's direction (the memory probes' echo
  and leak are right only if conversation memory moved with the partitions); copies are allowed
  (at least once) and counted;
- **the group committed the whole input** and every claim check it asked for;
- **review items**: one per flagged conversation, scan's priority, reasons and findings (read
  through a survivor's API, which forwards to the owner of each conversation);
- **eval-set cases**: the live cases are the collector's selection — none lost, none twice, each
  event of a case once in its sources — with day 2's final inclusion probabilities computed by
  the sampler on partition 0's new owner from the state it recovered, and day 1 archived.
"""

from __future__ import annotations

import json
import time
import uuid
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from services.evalsets.settings import EvalsetSettings
from tests.support.chat_events import generate_events, memory_probes, write_jsonl
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
from tests.support.kafka_io import TopicReader, events_total
from tests.support.parity import ScanResult, compare, findings_of
from tests.support.review_expect import compare_items, expected_items, item_views, uncapped_policy
from tests.support.worker_process import VigilStack

N_EVENTS = 2400
N_PROBES = 30
PARTITIONS = 6
TIMEOUT_S = 300.0
TOKEN = "it-scaleout-token-0001"


def _stream() -> tuple[list[dict[str, Any]], int, int, set[str]]:
    """``(events, end of A, end of B, the probe answers' event ids)``."""
    events = generate_events(N_EVENTS, prefix="sco", seed=47)
    asks, answers = memory_probes(N_PROBES, "sco")
    a, b = len(events) * 4 // 10, len(events) * 7 // 10
    stream = spread(asks + events[:a] + events[a:b] + events[b:] + answers)
    return stream, len(asks) + a, len(asks) + b, {str(e["event_id"]) for e in answers}


def test_three_workers_share_the_stream_and_a_killed_one_loses_nothing(
    vigil_stack: Callable[..., VigilStack], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Answers decided at arrival on both sides (scan reads VIGIL_* too): with a reorder window
    # the worker releases held answers on its own clock (tests/unit/test_reorder.py).
    monkeypatch.setenv("VIGIL_REORDER_WINDOW_SECONDS", "0")
    events, a, b, answer_ids = _stream()
    whole = write_jsonl(tmp_path / "whole.jsonl", events)
    parts = {
        name: write_jsonl(tmp_path / f"{name}.jsonl", chunk)
        for name, chunk in (("a", events[:a]), ("b", events[a:b]), ("c", events[b:]))
    }
    scan = ScanResult(whole, tmp_path / "scan")
    want = scan.directions
    want_ids = {f"{e}:{r}:{s}-{t}" for e, r, s, t in want}
    probes = scan.for_events(answer_ids)
    assert Counter(probes.values()) == {"echo": N_PROBES, "leak": N_PROBES}, probes
    policy = uncapped_policy(tmp_path / "triage.yaml")
    want_items = expected_items(whole, tmp_path / "scan", policy, scanned=True)
    expected = Expected(events, EvalsetSettings(**EVALSET), PARTITIONS)  # type: ignore[arg-type]
    want_active = {
        k: view(c, expected.sources(c), c.period != DAYS[2]) for k, c in expected.active.items()
    }
    want_archive = {k: view(c, expected.sources(c), True) for k, c in expected.retired.items()}
    # The file must exercise what the test claims.
    assert len(want_items) > 100 and len(expected.active) > 60 and len(expected.retired) > 30
    assert expected.bounded == [], "a stratum outgrew its reserve: order would matter"

    suffix = uuid.uuid4().hex[:8]
    evalset_topics = {
        "topic": f"it-sco-cases-{suffix}",
        "archive_topic": f"it-sco-archive-{suffix}",
        "labels_topic": f"it-sco-labels-{suffix}",
    }
    env = {f"VIGIL_EVALSET_{k.upper()}": v for k, v in {**EVALSET, **evalset_topics}.items()}
    env.update(
        VIGIL_REVIEW_TOKENS=json.dumps({TOKEN: {"name": "ann", "roles": ["reviewer"]}}),
        VIGIL_REVIEW_POLICY_FILE=str(tmp_path / "triage.yaml"),
        VIGIL_REORDER_WINDOW_SECONDS="0",
    )
    stack = vigil_stack("scaleout", partitions=PARTITIONS, **env)
    findings = TopicReader(stack.bootstrap, stack.findings_topic)
    cases = TopicReader(stack.bootstrap, evalset_topics["topic"])
    archive = TopicReader(stack.bootstrap, evalset_topics["archive_topic"])
    inputs = TopicReader(stack.bootstrap, stack.input_topic)
    t0 = time.monotonic()
    try:
        # A. Two workers.
        first, second = stack.start_worker(), stack.start_worker()
        stack.wait(stack.settled, "two workers sharing 6 partitions", 120)
        two = stack.assignment()
        stack.replay(parts["a"])

        def day1_closed(records: list[Any]) -> bool:
            return any(c.period == DAYS[0] and c.inclusion_final for c in live(records).values())

        cases.read_until(day1_closed, TIMEOUT_S, "day 1's final cases", stack.diagnostics)

        # B. A third joins; the owner of partition 0 is killed a third of the way through B.
        third = stack.start_worker()
        stack.wait(stack.settled, "three workers sharing 6 partitions", 120)
        three = stack.assignment()
        assert three[2], three  # the newcomer took partitions
        stack.replay(parts["b"])
        stack.wait(
            lambda: sum(events_total(w.metrics()) for w in stack.workers) >= a + (b - a) // 3,
            "a third of part B screened",
            TIMEOUT_S,
        )
        (victim,) = [i for i, owned in stack.assignment().items() if 0 in owned]
        stack.workers[victim].kill()
        committed_at_kill = stack.committed()
        survivors = [w for w in (first, second, third) if w.alive]
        stack.wait(stack.settled, "two survivors sharing 6 partitions", 120)
        after = stack.assignment()
        (heir,) = [i for i, owned in after.items() if 0 in owned]

        # C. The rest.
        stack.replay(parts["c"])
        findings.read_until(
            lambda r: {f.finding_id for f in findings_of(r)} >= want_ids,
            TIMEOUT_S,
            f"all {len(want_ids)} findings",
            stack.diagnostics,
        )
        stack.wait(stack.caught_up(len(events)), "the group committed every event", TIMEOUT_S)
        findings.drain()

        # Findings: scan's, with scan's directions (memory moved with its partitions).
        got_all = findings_of(findings.records)
        got: dict[tuple[str, str, int, int], str] = {}
        for f in got_all:
            k = (f.event_id, f.rule_id, f.start, f.end)
            assert k in want, f"unexpected finding {f.finding_id}"
            assert f.direction == want[k], f"{f.finding_id}: {f.direction}, scan {want[k]}"
            got[k] = f.direction
        problem = compare(got, want, "the group's findings vs scan")
        assert problem is None, problem
        assert {k: d for k, d in got.items() if k[0] in answer_ids} == probes

        # Review items: one per flagged conversation, as scan enqueues them.
        cids = sorted({str(e["conversation_id"]) for e in events})
        problem = compare_items(item_views(survivors[0], cids, TOKEN), want_items)
        assert problem is None, problem

        # Eval-set cases: the collector's selection, day 2 closed by partition 0's new owner.
        inputs.read_until(lambda r: len(r) >= len(events), 60, "the input topic")
        position = input_positions(inputs.records)
        try:
            cases.read_until(converges_to(want_active, position), TIMEOUT_S, "scan's live cases")
            archive.read_until(converges_to(want_archive, position), 60, "day 1 archived")
        except AssertionError:
            archive.drain()
            problems = [
                diff(worker_view(live(cases.records), position), want_active, "live cases"),
                diff(worker_view(live(archive.records), position), want_archive, "archive"),
            ]
            raise AssertionError(f"{problems}\n{stack.diagnostics()}") from None
        assert all(w.alive for w in survivors), stack.diagnostics()
        print(
            f"\nscale-out: {len(events)} events, {len(want)} findings "
            f"({len(got_all) - len(got)} copies), {len(want_items)} review items, "
            f"{len(expected.active)} live cases; partitions {two} -> {three} -> {after}; "
            f"killed worker {victim} (partition 0 -> worker {heir}) with "
            f"{sum(committed_at_kill.values())} of {b} events committed; "
            f"{time.monotonic() - t0:.0f}s"
        )
    finally:
        for reader in (findings, cases, archive, inputs):
            reader.close()
