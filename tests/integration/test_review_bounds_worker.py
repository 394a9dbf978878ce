"""A conversation whose review item would outgrow one Kafka record, through a real worker on the
real broker: the item is queued, shortened under ``VIGIL_REVIEW_MAX_VALUE_BYTES``, with every
finding in view, and every changelog record of the review state is under the ceiling.

Twenty answers of about 55 KB (Vietnamese and English), each with an e-mail address near its
end and eight retrieved passages of about 8 KB, under a policy that keeps whole passages and six
context turns. Without the ceiling the item is over 1 MB (``vigil scan`` with the ceiling
lifted measures it here), above the producer's ``max_request_size`` (1,000,000): its changelog
record would fail with ``MessageSizeTooLargeError`` and the state would not survive a restart.
The worker's log must name no changelog record that was not delivered.

Eval sets are on: the conversation's case accumulator (``evalset-cases``) would hold its sixteen
latest answers whole, several megabytes; it is shortened under ``VIGIL_EVALSET_MAX_CASE_BYTES``
(256 KiB) and the conversation's case, marked ``trimmed``, reaches ``vigil.evalset`` with the
masked e-mail address of its answer in view. Every record of the state's changelog is under its
kind's ceiling, and none fails.
"""

from __future__ import annotations

import json
import re
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml

from services.evalsets.settings import EvalsetSettings
from services.review.policy import DEFAULT_POLICY_PATH
from services.review.settings import DEFAULT_MAX_VALUE_BYTES
from services.scan import run_scan
from services.settings import Settings
from tests.support.kafka_io import TopicReader
from tests.support.long_conversation import email_of, long_conversation
from tests.support.worker_process import VigilStack, WorkerProcess

CID = "conv-vi-huge-it-01"
ANN = "it-bounds-token-ann-0001"
TOKENS = {ANN: {"name": "ann", "roles": ["reviewer"]}}
ANSWERS = 20
TIMEOUT_S = 180.0
STAMP = 8  # the state table's value carries the time of its last write
FAILED = re.compile(r"a changelog record of (\S+) was not delivered: (.*)")


def _policy(path: Path) -> Path:
    raw = yaml.safe_load(DEFAULT_POLICY_PATH.read_text(encoding="utf-8"))
    raw["caps"]["per_tenant_per_hour"] = None
    raw["queue"] |= {"max_passage_chars": 8000, "context_turns": 6}
    path.write_text(yaml.safe_dump(raw, sort_keys=False), encoding="utf-8")
    return path


def _write(path: Path) -> Path:
    events = long_conversation(CID, answers=ANSWERS, passage_bytes=8000)
    path.write_text("".join(json.dumps(e, ensure_ascii=False) + "\n" for e in events), "utf-8")
    return path


def _unbounded_size(source: Path, policy: Path, out: Path, monkeypatch: pytest.MonkeyPatch) -> int:
    """The item's size with the ceiling lifted, as ``vigil scan`` writes it (without the matched
    values the worker keeps for the reveal role: the worker's item is larger still)."""
    monkeypatch.setenv("VIGIL_REVIEW_POLICY_FILE", str(policy))
    monkeypatch.setenv("VIGIL_REVIEW_MAX_VALUE_BYTES", str(64 * 1024 * 1024))
    run_scan(str(source), out, Settings())
    (line,) = (out / "review.jsonl").read_bytes().splitlines()
    assert not json.loads(line)["trimmed"]
    return len(line)


def _wait_for_item(worker: WorkerProcess) -> dict[str, Any]:
    deadline = time.monotonic() + TIMEOUT_S
    headers = {"Authorization": f"Bearer {ANN}"}
    while True:
        r = httpx.get(f"{worker.url}/review/api/items/{CID}", headers=headers, timeout=30)
        if r.status_code == 200:
            item: dict[str, Any] = r.json()["item"]
            if len(item["findings"]) == ANSWERS:
                return item
        if time.monotonic() > deadline:
            raise AssertionError(f"no complete item for {CID}\n{worker.diagnostics()}")
        time.sleep(1.0)


def test_an_item_of_55_kb_answers_is_queued_under_the_ceiling(
    vigil_stack: Callable[..., VigilStack], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    policy = _policy(tmp_path / "triage.yaml")
    source = _write(tmp_path / "huge.jsonl")
    assert _unbounded_size(source, policy, tmp_path / "scan", monkeypatch) > 1_000_000

    monkeypatch.delenv("VIGIL_REVIEW_MAX_VALUE_BYTES")
    cases_topic = f"it-bounds-evalset-{uuid.uuid4().hex[:8]}"
    stack = vigil_stack(
        "bounds",
        VIGIL_REVIEW_TOKENS=json.dumps(TOKENS),
        VIGIL_REVIEW_POLICY_FILE=str(policy),
        VIGIL_EVALSET_TOPIC=cases_topic,
    )
    worker = stack.start_worker()
    stack.replay(source)
    item = _wait_for_item(worker)

    assert item["trimmed"] and item["status"] == "open"
    visible = {
        m["finding_id"]: t["text"][m["start"] : m["end"]] for t in item["turns"] for m in t["marks"]
    }
    for f in item["findings"]:  # every late e-mail address, masked, in view
        assert f["rule_id"] == "pii.email" and visible[f["finding_id"]] == f["evidence"]
    shown = "".join(t["text"] for t in item["turns"])
    assert not any(email_of(n) in shown for n in range(ANSWERS))
    assert "characters …" in shown

    # The state's changelog holds the item (and the context ring), each record under the ceiling.
    changelog = TopicReader(stack.bootstrap, stack.changelog_topic)
    key = f"|review-items|{CID}".encode()
    records = changelog.read_until(
        lambda recs: any(r.key.endswith(key) and r.value for r in recs),
        60,
        "the item's changelog record",
        stack.diagnostics,
    )
    review = [r for r in records if b"|review-" in r.key and r.value is not None]
    assert review and max(len(r.value) for r in review) <= DEFAULT_MAX_VALUE_BYTES + STAMP

    # The eval set's case of the conversation, from an accumulator under its own ceiling.
    case_key = f"2026-W45:{CID}".encode()
    cases = TopicReader(stack.bootstrap, cases_topic).read_until(
        lambda recs: any(r.key == case_key and r.value for r in recs),
        TIMEOUT_S,
        "the conversation's eval case",
        stack.diagnostics,
    )
    case = json.loads([r.value for r in cases if r.key == case_key and r.value][-1])
    assert case["trimmed"] and "characters …" in case["answer"]
    assert "n***@" in case["answer"] and not any(email_of(n) in case["answer"] for n in range(20))
    acc_key = f"|A|2026-W45|{CID}".encode()
    changelog.read_until(
        lambda recs: any(b"|evalset-cases|" in r.key and r.key.endswith(acc_key) for r in recs),
        60,
        "the accumulator's changelog record",
        stack.diagnostics,
    )
    accs = [r for r in changelog.drain() if b"|evalset-" in r.key and r.value is not None]
    ceiling = max(EvalsetSettings().max_case_bytes, EvalsetSettings().max_sampler_bytes)
    assert max(len(r.value) for r in accs) <= ceiling + STAMP
    assert FAILED.findall(worker.log_text()) == [], worker.diagnostics()
    assert worker.alive, worker.diagnostics()
