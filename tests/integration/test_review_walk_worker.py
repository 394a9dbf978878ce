"""The reviewer's walk in Chromium against a worker on the real broker, and its labels joined to
the worker's evaluation cases by ``vigil evalset export --labels-topic``.

The example log and the long-answer example are replayed into the worker's input topic; once
the long answer's item carries its claim check, :func:`tests.support.review_walk.walk` runs on
the worker's page (the same walk as against ``vigil review serve``). The label and its
correction reach the labels topic as ``ReviewLabel`` records; the export reads the case topic
and that labels topic and writes cases whose label says what the reviewer decided.
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Callable
from pathlib import Path

import httpx

from schemas.review import ReviewLabel
from services.evalsets.export import load_cases
from tests.support.browser import chromium
from tests.support.json_schemas import schema_errors
from tests.support.kafka_io import TopicReader
from tests.support.review_walk import DOC, LONG, walk
from tests.support.worker_process import VigilStack, WorkerProcess, run_cli

ROOT = Path(__file__).resolve().parents[2]
ANN = "it-walk-token-ann-00001"
TOKENS = {ANN: {"name": "ann", "roles": ["reviewer"]}}
TIMEOUT_S = 240.0


def _wait_for_item(worker: WorkerProcess) -> None:
    """Until the long answer's item is there with its claim check and both findings."""
    deadline = time.monotonic() + TIMEOUT_S
    headers = {"Authorization": f"Bearer {ANN}"}
    while True:
        r = httpx.get(f"{worker.url}/review/api/items/{LONG}", headers=headers, timeout=30)
        if r.status_code == 200:
            item = r.json()["item"]
            rules = {f["rule_id"] for f in item["findings"]}
            if item["verdicts"] and {"pii.email", "grounding.ungrounded_dose"} <= rules:
                return
        if time.monotonic() > deadline:
            raise AssertionError(f"no complete item for {LONG}\n{worker.diagnostics()}")
        time.sleep(1.0)


async def test_the_walk_against_a_worker_and_its_labels_join_the_worker_cases(
    vigil_stack: Callable[..., VigilStack], tmp_path: Path
) -> None:
    suffix = uuid.uuid4().hex[:8]
    labels_topic = f"it-walk-labels-{suffix}"
    cases_topic = f"it-walk-cases-{suffix}"
    stack = vigil_stack(
        "walk",
        VIGIL_REVIEW_TOKENS=json.dumps(TOKENS),
        VIGIL_REVIEW_LABELS_TOPIC=labels_topic,
        VIGIL_REVIEW_ACTIONS_TOPIC=f"it-walk-actions-{suffix}",
        VIGIL_EVALSET_LABELS_TOPIC=labels_topic,
        VIGIL_EVALSET_TOPIC=cases_topic,
        VIGIL_EVALSET_ARCHIVE_TOPIC=f"it-walk-archive-{suffix}",
    )
    labels = TopicReader(stack.bootstrap, labels_topic)
    worker = stack.start_worker()
    stack.replay(ROOT / "examples" / "chat-events.jsonl")
    stack.replay(ROOT / "examples" / "long-answer.jsonl")
    _wait_for_item(worker)

    async with chromium() as browser:
        page = await browser.new_page()
        await walk(page, f"{worker.url}/review/", ANN, "ann", tmp_path, "worker")

    records = labels.read_until(
        lambda recs: len(recs) >= 2, 60, "the label and its correction", stack.diagnostics
    )
    first, second = (ReviewLabel.model_validate_json(r.value) for r in records)
    assert (first.reviewer, first.harm_severity, first.answer_correct) == ("ann", "severe", False)
    assert first.relevant_doc_ids == [DOC] and first.answer_event_id == "evt-long-000002"
    assert second.supersedes == first.label_id and second.harm_severity == "moderate"

    out = tmp_path / "cases.jsonl"
    env = stack.env()
    run_cli(
        [
            "evalset",
            "export",
            "--bootstrap",
            stack.bootstrap,
            "--topic",
            cases_topic,
            "--labels-topic",
            labels_topic,
            "--out",
            str(out),
            "--no-dedupe",
        ],
        env,
    )
    assert schema_errors("EvalCase", out) == []
    (case,) = [c for c in load_cases(out) if c.case_id.endswith(f":{LONG}")]
    assert case.label is not None and case.label.label_id == second.label_id
    assert (case.label.answer_correct, case.label.relevant_doc_ids) == (False, [DOC])
    assert case.label.harm_severity == "moderate" and case.event_id == "evt-long-000002"
    assert worker.alive, worker.diagnostics()
