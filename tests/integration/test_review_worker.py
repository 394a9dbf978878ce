"""The review queue in a real worker on the real broker: one item per flagged conversation, a
queue that survives SIGKILL, one winner when two reviewers claim at once, labels that flow back.

5,000 events: 4,000 generated ones, some of their conversations replayed whole at the end (same
event ids: a producer re-sending a batch) and the rest individual messages re-delivered a little
after their first copy. The expectation is what ``vigil scan`` would enqueue from the same file
(``services.review.scan`` over scan's findings and verdicts) under the test's policy: the default
``rules/triage.yaml`` without the tenant cap (the worker counts the cap per partition and
processing hour, scan per event hour, so with a cap the two would overflow different
conversations).

1. Every conversation of the file is looked up in the worker's API: an item exactly for the
   flagged ones, each in round 1 with scan's priority, reasons and findings;
   ``vigil_review_items_enqueued_total`` counts each once.
2. Two reviewers claim the top item at the same moment: one ``200``, one ``409 claimed``; the
   winner labels it: a ``ReviewLabel`` arrives on the labels topic, the actions topic has the
   claim, the rejected claim and the label, and ``vigil_review_labels_total{rule,verdict}`` goes
   up by the label's pairs. Another item stays claimed.
3. The worker is killed with SIGKILL and a new one starts with the same app id: every item's view
   (status, claimer, lease, priority, reasons, findings, turns, version) is the same.
4. The replayed conversations are re-delivered once more to the new worker: nothing changes.
"""

from __future__ import annotations

import json
import random
import threading
import time
import uuid
from collections import Counter, defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import yaml
from kafka import KafkaConsumer, TopicPartition

from schemas.events import ChatEvent
from schemas.outputs import Finding
from schemas.review import ReviewAction, ReviewItem, ReviewLabel
from schemas.verdicts import GroundingReport
from services.review.metrics import precision_update
from services.review.policy import DEFAULT_POLICY_PATH, TriagePolicy, load_policy
from services.review.scan import scan_review
from services.scan import run_scan
from services.settings import Settings
from tests.support.chat_events import generate_events, write_jsonl
from tests.support.kafka_io import TopicReader, committed_offsets, counter_values
from tests.support.worker_process import VigilStack, WorkerProcess

N_EVENTS = 5000
N_BASE = 4000
REPLAY_EVENTS = 400  # about: whole conversations, replayed at the end
TIMEOUT_S = 150.0
ANN = "it-review-token-ann-0001"
BOB = "it-review-token-bob-0002"
TOKENS = {
    ANN: {"name": "ann", "roles": ["reviewer"]},
    BOB: {"name": "bob", "roles": ["reviewer", "reveal"]},
}

Event = dict[str, Any]


def _stream(seed: int = 11) -> tuple[list[Event], list[Event]]:
    """``(the 5,000 events, the replayed conversations' events)``."""
    base = generate_events(N_BASE, prefix="rvw", seed=seed, examples=None)
    rng = random.Random(seed)
    by_conv: defaultdict[str, list[Event]] = defaultdict(list)
    for e in base:
        by_conv[str(e["conversation_id"])].append(e)
    replayed: list[str] = []
    size = 0
    for cid in rng.sample(sorted(by_conv), len(by_conv)):
        if size + len(by_conv[cid]) > REPLAY_EVENTS:
            continue
        replayed.append(cid)
        size += len(by_conv[cid])
    chosen = set(replayed)
    replay = [e for e in base if e["conversation_id"] in chosen]  # file order per conversation
    # Re-delivered messages: a copy 1 to 40 positions after the first one.
    keyed: list[tuple[float, Event]] = [(float(i), e) for i, e in enumerate(base)]
    for i in rng.sample(range(len(base)), N_EVENTS - N_BASE - len(replay)):
        keyed.append((i + rng.randint(1, 40) + 0.5, base[i]))
    keyed.sort(key=lambda k: k[0])
    return [e for _, e in keyed] + replay, replay


def _uncapped_policy(path: Path) -> TriagePolicy:
    raw = yaml.safe_load(DEFAULT_POLICY_PATH.read_text(encoding="utf-8"))
    raw["caps"]["per_tenant_per_hour"] = None
    path.write_text(yaml.safe_dump(raw, sort_keys=False), encoding="utf-8")
    return load_policy(path)


def _expected(path: Path, out: Path, policy: TriagePolicy) -> dict[str, ReviewItem]:
    """What ``vigil scan`` enqueues from the file (findings once each, as scan gives an event)."""
    run_scan(str(path), out, Settings(reorder_window_seconds=0))
    lines = (out / "findings.jsonl").read_text().splitlines()
    findings = {f.finding_id: f for f in map(Finding.model_validate_json, lines)}
    lines = (out / "verdicts.jsonl").read_text().splitlines()
    verdicts = {v.event_id: v for v in map(GroundingReport.model_validate_json, lines)}
    events = [ChatEvent.model_validate_json(x) for x in path.read_text().splitlines()]
    items = scan_review(findings.values(), verdicts.values(), events, policy)
    return {i.conversation_id: i for i in items}


# --- HTTP and Kafka helpers ---------------------------------------------------------------------


def _client(worker: WorkerProcess, token: str) -> httpx.Client:
    return httpx.Client(
        base_url=worker.url, headers={"Authorization": f"Bearer {token}"}, timeout=30.0
    )


def _views(worker: WorkerProcess, cids: list[str]) -> dict[str, dict[str, Any]]:
    """``{cid: item view}`` for the conversations that have an item; fails on anything but
    200 and 404."""
    out: dict[str, dict[str, Any]] = {}
    with _client(worker, ANN) as http:
        for cid in cids:
            r = http.get(f"/review/api/items/{cid}")
            assert r.status_code in (200, 404), (cid, r.status_code, r.text)
            if r.status_code == 200:
                out[cid] = r.json()["item"]
    return out


def _metric(worker: WorkerProcess, name: str) -> Counter[tuple[tuple[str, str], ...]]:
    text = worker.metrics()
    return Counter({tuple(sorted(k)): v for k, v in counter_values(text, name).items()})


def _depth(text: str) -> float:
    return sum(
        float(line.rsplit(" ", 1)[1])
        for line in text.splitlines()
        if line.startswith("vigil_review_queue_depth{")
    )


def _end_offsets(bootstrap: str, topic: str) -> dict[int, int]:
    consumer = KafkaConsumer(bootstrap_servers=bootstrap, client_id="vigil-test-end-offsets")
    try:
        parts = consumer.partitions_for_topic(topic) or set()
        ends = consumer.end_offsets([TopicPartition(topic, p) for p in parts])
        return {tp.partition: off for tp, off in ends.items()}
    finally:
        consumer.close()


def _wait(done: Callable[[], bool], what: str, stack: VigilStack, timeout_s: float) -> None:
    deadline = time.monotonic() + timeout_s
    while not done():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout_s:.0f}s: {what}\n{stack.diagnostics()}")
        time.sleep(0.5)


def _caught_up(stack: VigilStack, n_input: int) -> Callable[[], bool]:
    """The group has committed the whole input topic and the whole checks topic."""

    def done() -> bool:
        inp = committed_offsets(stack.bootstrap, stack.app_id, stack.input_topic)
        if sum(o for o in inp.values() if o > 0) < n_input:
            return False
        ends = _end_offsets(stack.bootstrap, stack.checks_topic)
        got = committed_offsets(stack.bootstrap, stack.app_id, stack.checks_topic)
        return all(got.get(p, 0) >= end for p, end in ends.items() if end > 0)

    return done


def _claim_race(worker: WorkerProcess, cid: str) -> dict[str, httpx.Response]:
    clients = {"ann": _client(worker, ANN), "bob": _client(worker, BOB)}
    for http in clients.values():  # connections open before the race
        assert http.get("/review/api/me").status_code == 200
    barrier = threading.Barrier(len(clients))
    results: dict[str, httpx.Response] = {}

    def claim(name: str) -> None:
        barrier.wait()
        results[name] = clients[name].post(f"/review/api/items/{cid}/claim", json={})

    threads = [threading.Thread(target=claim, args=(n,)) for n in clients]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    for http in clients.values():
        http.close()
    return results


# --- the test -----------------------------------------------------------------------------------


def test_review_queue_in_the_worker(vigil_stack: Callable[..., VigilStack], tmp_path: Path) -> None:
    stream, replay = _stream()
    assert len(stream) == N_EVENTS
    path = write_jsonl(tmp_path / "events.jsonl", stream)
    policy = _uncapped_policy(tmp_path / "triage.yaml")
    want = _expected(path, tmp_path / "scan", policy)
    cids = sorted({str(e["conversation_id"]) for e in stream})
    seen_twice = Counter(str(e["event_id"]) for e in stream)
    flagged_events = {r.event_id for i in want.values() for r in i.reasons}
    # The file must exercise what the test claims, or it would prove little.
    assert 300 < len(want) < len(cids), (len(want), len(cids))
    assert len({str(e["conversation_id"]) for e in replay} & set(want)) >= 10
    assert sum(seen_twice[eid] > 1 for eid in flagged_events) >= 100

    suffix = uuid.uuid4().hex[:8]
    labels_topic = f"it-review-labels-{suffix}"
    actions_topic = f"it-review-actions-{suffix}"
    stack = vigil_stack(
        "review",
        VIGIL_REVIEW_TOKENS=json.dumps(TOKENS),
        VIGIL_REVIEW_POLICY_FILE=str(tmp_path / "triage.yaml"),
        VIGIL_REVIEW_LABELS_TOPIC=labels_topic,
        VIGIL_REVIEW_ACTIONS_TOPIC=actions_topic,
        # Decided at arrival on both sides: with a reorder window the worker releases held
        # answers on its own clock, after the input is committed (tests/unit/test_reorder.py).
        VIGIL_REORDER_WINDOW_SECONDS="0",
    )
    labels = TopicReader(stack.bootstrap, labels_topic)
    actions = TopicReader(stack.bootstrap, actions_topic)
    try:
        worker = stack.start_worker()
        t0 = time.monotonic()
        stack.replay(path)
        _wait(_caught_up(stack, N_EVENTS), "the worker committed every event", stack, TIMEOUT_S)
        took = time.monotonic() - t0

        # 1. One item per flagged conversation, what scan enqueues, created once each.
        assert httpx.get(f"{worker.url}/review/api/items").status_code == 401
        views = _views(worker, cids)
        assert set(views) == set(want), (
            f"missing {sorted(set(want) - set(views))[:5]}, "
            f"unexpected {sorted(set(views) - set(want))[:5]}"
        )
        for cid, view in views.items():
            item = want[cid]
            assert view["item_id"] == f"{cid}:1" and view["status"] == "open", view["item_id"]
            assert view["priority"] == item.priority, cid
            got_reasons = {(r["code"], r["finding_id"] or r["event_id"]) for r in view["reasons"]}
            assert got_reasons == {(r.code, r.finding_id or r.event_id) for r in item.reasons}
            assert {f["finding_id"] for f in view["findings"]} == {
                f.finding_id for f in item.findings
            }
        enqueued = _metric(worker, "vigil_review_items_enqueued")
        assert sum(enqueued.values()) == len(want), enqueued

        # 2. Two reviewers claim the top item at once: one wins. The winner labels it.
        with _client(worker, ANN) as http:
            top = http.get("/review/api/items", params={"limit": 2}).json()["items"]
        highest = sorted((i.priority for i in want.values()), reverse=True)[:2]
        assert [s["priority"] for s in top] == highest
        target, other = top[0]["conversation_id"], top[1]["conversation_id"]
        race = _claim_race(worker, target)
        assert sorted(r.status_code for r in race.values()) == [200, 409], {
            n: r.text for n, r in race.items()
        }
        (winner,) = [n for n, r in race.items() if r.status_code == 200]
        (loser,) = [n for n, r in race.items() if r.status_code == 409]
        assert race[loser].json()["error"] == "claimed"
        claimed = race[winner].json()["item"]
        assert claimed["claimed_by"] == winner
        verdicts = ["true_positive", "false_positive"]
        body = {
            "item_id": claimed["item_id"],
            "findings": [
                {"finding_id": f["finding_id"], "verdict": verdicts[i % 2]}
                for i, f in enumerate(claimed["findings"])
            ],
            "harm_severity": "none",
            "note": "integration test",
        }
        before = _metric(worker, "vigil_review_labels")
        with _client(worker, ANN if winner == "ann" else BOB) as http:
            r = http.post(f"/review/api/items/{target}/label", json=body)
            assert r.status_code == 200, r.text
            assert r.json()["item"]["status"] == "labeled"
        with _client(worker, ANN) as http:
            r = http.post(f"/review/api/items/{other}/claim", json={"lease_seconds": 3600})
            assert r.status_code == 200, r.text
        records = labels.read_until(
            lambda recs: any(ReviewLabel.model_validate_json(x.value) for x in recs),
            30,
            "the ReviewLabel",
            stack.diagnostics,
        )
        (record,) = records
        label = ReviewLabel.model_validate_json(record.value)
        assert record.key == target.encode() and label.item_id == claimed["item_id"]
        assert label.reviewer == winner and label.note == "integration test"
        assert [f.verdict for f in label.findings] == [f["verdict"] for f in body["findings"]]
        after = _metric(worker, "vigil_review_labels")
        increments = Counter(
            {
                (("rule", rule), ("verdict", verdict)): n
                for (rule, verdict), n in Counter(precision_update(label)).items()
            }
        )
        assert after - before == increments, (after - before, increments)
        logged = actions.read_until(
            lambda recs: len(recs) >= 4, 30, "the reviewers' actions", stack.diagnostics
        )
        kinds = sorted(
            (a.kind, a.reviewer, a.outcome, a.reason)
            for a in (ReviewAction.model_validate_json(x.value) for x in logged)
        )
        assert kinds == sorted(
            [
                ("claim", winner, "applied", None),
                ("claim", loser, "rejected", "claimed"),
                ("label", winner, "applied", None),
                ("claim", "ann", "applied", None),
            ]
        ), kinds

        # 3. SIGKILL; a new worker with the same app id recovers the queue from its changelog.
        queue = _views(worker, sorted(want))
        assert queue[target]["status"] == "labeled" and queue[other]["claimed_by"] == "ann"
        worker.kill()
        t1 = time.monotonic()
        second = stack.start_worker()
        _wait(
            lambda: _depth(second.metrics()) == len(want),
            f"the new worker holds {len(want)} items",
            stack,
            TIMEOUT_S,
        )
        _wait(
            lambda: (
                httpx.get(
                    f"{second.url}/review/api/me", headers={"Authorization": f"Bearer {ANN}"}
                ).status_code
                == 200
            ),
            "the new worker's API serves",
            stack,
            60,
        )
        recovered = time.monotonic() - t1
        assert _views(second, cids) == queue, "the queue changed across the restart"

        # 4. Re-delivered again, to the new worker: nothing changes.
        again = write_jsonl(tmp_path / "again.jsonl", replay)
        stack.replay(again)
        _wait(_caught_up(stack, N_EVENTS + len(replay)), "the re-delivery", stack, TIMEOUT_S)
        assert _views(second, cids) == queue, "a re-delivery after the restart changed the queue"
        assert sum(_metric(second, "vigil_review_items_enqueued").values()) == 0
        print(
            f"\nreview: {len(want)} items from {N_EVENTS} events ({len(replay)} replayed, "
            f"{N_EVENTS - N_BASE - len(replay)} re-delivered) in {took:.1f}s; "
            f"queue recovered {recovered:.1f}s after the kill"
        )
    finally:
        labels.close()
        actions.close()
