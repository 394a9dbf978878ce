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

from schemas.review import ReviewAction, ReviewLabel
from services.review.metrics import precision_update
from services.settings import Settings
from tests.support.chat_events import generate_events, write_jsonl
from tests.support.kafka_io import TopicReader, counter_values
from tests.support.review_expect import (
    compare_items,
    expected_items,
    item_views,
    review_client,
    uncapped_policy,
)
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


def _metric(worker: WorkerProcess, name: str) -> Counter[tuple[tuple[str, str], ...]]:
    text = worker.metrics()
    return Counter({tuple(sorted(k)): v for k, v in counter_values(text, name).items()})


def _depth(text: str) -> float:
    return sum(
        float(line.rsplit(" ", 1)[1])
        for line in text.splitlines()
        if line.startswith("vigil_review_queue_depth{")
    )


def _claim_race(worker: WorkerProcess, cid: str) -> dict[str, httpx.Response]:
    clients = {"ann": review_client(worker, ANN), "bob": review_client(worker, BOB)}
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
    policy = uncapped_policy(tmp_path / "triage.yaml")
    want = expected_items(
        path, tmp_path / "scan", policy, settings=Settings(reorder_window_seconds=0)
    )
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
        stack.wait(stack.caught_up(N_EVENTS), "the worker committed every event", TIMEOUT_S)
        took = time.monotonic() - t0

        # 1. One item per flagged conversation, what scan enqueues, created once each.
        assert httpx.get(f"{worker.url}/review/api/items").status_code == 401
        views = item_views(worker, cids, ANN)
        problem = compare_items(views, want)
        assert problem is None, problem
        enqueued = _metric(worker, "vigil_review_items_enqueued")
        assert sum(enqueued.values()) == len(want), enqueued

        # 2. Two reviewers claim the top item at once: one wins. The winner labels it.
        with review_client(worker, ANN) as http:
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
        with review_client(worker, ANN if winner == "ann" else BOB) as http:
            r = http.post(f"/review/api/items/{target}/label", json=body)
            assert r.status_code == 200, r.text
            assert r.json()["item"]["status"] == "labeled"
        with review_client(worker, ANN) as http:
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
        queue = item_views(worker, sorted(want), ANN)
        assert queue[target]["status"] == "labeled" and queue[other]["claimed_by"] == "ann"
        worker.kill()
        t1 = time.monotonic()
        second = stack.start_worker()
        stack.wait(
            lambda: _depth(second.metrics()) == len(want),
            f"the new worker holds {len(want)} items",
            TIMEOUT_S,
        )
        stack.wait(
            lambda: (
                httpx.get(
                    f"{second.url}/review/api/me", headers={"Authorization": f"Bearer {ANN}"}
                ).status_code
                == 200
            ),
            "the new worker's API serves",
            60,
        )
        recovered = time.monotonic() - t1
        assert item_views(second, cids, ANN) == queue, "the queue changed across the restart"

        # 4. Re-delivered again, to the new worker: nothing changes.
        again = write_jsonl(tmp_path / "again.jsonl", replay)
        stack.replay(again)
        stack.wait(stack.caught_up(N_EVENTS + len(replay)), "the re-delivery", TIMEOUT_S)
        assert item_views(second, cids, ANN) == queue, (
            "a re-delivery after the restart changed the queue"
        )
        assert sum(_metric(second, "vigil_review_items_enqueued").values()) == 0
        print(
            f"\nreview: {len(want)} items from {N_EVENTS} events ({len(replay)} replayed, "
            f"{N_EVENTS - N_BASE - len(replay)} re-delivered) in {took:.1f}s; "
            f"queue recovered {recovered:.1f}s after the kill"
        )
    finally:
        labels.close()
        actions.close()
