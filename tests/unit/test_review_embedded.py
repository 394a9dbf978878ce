"""Review without Kafka: the queue over a ``vigil scan`` output folder (``vigil review serve``).

A real scan of the long-answer example, the folder's store (SQLite beside the outputs) behind
the same API as the worker's: claim, label, correct; the labels land in ``labels.jsonl`` as
``EvalLabel`` and in ``review-labels.jsonl`` as ``ReviewLabel``; the state survives a restart and
a re-import; random unflagged evaluation cases become audit items; the timer expires items.
"""

from __future__ import annotations

import json
import os
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from aiohttp.test_utils import TestClient, TestServer
from typer.testing import CliRunner

from schemas.evalset import EvalLabel
from schemas.review import ReviewItem, ReviewLabel
from services.commands.review import review_app
from services.evalsets.export import load_labels
from services.review.auth import Reviewer, TokenAuth
from services.review.embedded import FolderError, FolderQueue, folder_app
from services.review.policy import load_policy
from services.review.settings import ReviewSettings
from services.scan import run_scan
from services.settings import Settings
from tests.support.json_schemas import schema_errors

ROOT = Path(__file__).resolve().parents[2]
POLICY = load_policy()
ANN = "embedded-token-ann-0001"
BOB = "embedded-token-bob-0002"
AUTH = TokenAuth({ANN: Reviewer(name="ann"), BOB: Reviewer(name="bob")})
LONG = "conv-en-long-0001"


@pytest.fixture(scope="module")
def scanned(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("scan")
    run_scan(
        [
            str(ROOT / "examples" / "chat-events.jsonl"),
            str(ROOT / "examples" / "long-answer.jsonl"),
        ],
        folder,
        Settings(),
    )
    return folder


@pytest.fixture
def folder(scanned: Path, tmp_path: Path) -> Iterator[Path]:
    copy = tmp_path / "out"
    copy.mkdir()
    for name in ("review.jsonl", "evalset.jsonl", "findings.jsonl"):
        (copy / name).write_bytes((scanned / name).read_bytes())
    yield copy


@asynccontextmanager
async def served(folder: Path) -> AsyncIterator[tuple[TestClient, FolderQueue]]:  # type: ignore[type-arg]
    queue = FolderQueue(folder, POLICY)
    queue.import_folder()
    app = folder_app(queue, AUTH, ReviewSettings(), tick_seconds=3600)
    async with TestClient(TestServer(app)) as client:
        yield client, queue


def H(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def _body(item: dict[str, Any], **kw: Any) -> dict[str, Any]:
    return {
        "item_id": item["item_id"],
        "findings": [
            {"finding_id": f["finding_id"], "verdict": "true_positive"} for f in item["findings"]
        ],
        "harm_severity": "severe",
        "error_categories": ["wrong_dose", "personal_data_exposed"],
        "answer_correct": False,
        "relevant_doc_ids": ["pil-paracetamol-en-02"],
        **kw,
    }


async def test_label_and_correct_over_a_scan_folder_and_the_labels_land_as_evallabels(
    folder: Path,
) -> None:
    async with served(folder) as (client, _):
        listed = await (await client.get("/review/api/items?status=all", headers=H(ANN))).json()
        rows = {i["conversation_id"]: i for i in listed["items"]}
        assert rows[LONG]["priority"] == 100 and rows[LONG]["reasons"][:2] == [
            "ungrounded_dose",
            "pii_leak",
        ]
        shown = await (await client.get(f"/review/api/items/{LONG}", headers=H(ANN))).json()
        item = shown["item"]
        (answer,) = [t for t in item["turns"] if t["role"] == "assistant"]
        assert "m***@***.nl" in answer["text"] and len(answer["gaps"]) == 2
        assert item["status"] == "open"  # the import re-based its lifetime on the wall clock
        r = await client.post(f"/review/api/items/{LONG}/claim", headers=H(ANN), json={})
        assert r.status == 200
        r = await client.post(f"/review/api/items/{LONG}/label", headers=H(ANN), json=_body(item))
        assert r.status == 200, await r.text()
        done = (await r.json())["item"]
        assert done["labeled_by"] == "ann" and len(done["labels"]) == 1
        fix = _body(item, harm_severity="moderate", corrects=done["label_id"])
        r = await client.post(f"/review/api/items/{LONG}/label", headers=H(BOB), json=fix)
        assert r.status == 200, await r.text()
        assert len((await r.json())["item"]["labels"]) == 2

    labels = load_labels(folder / "labels.jsonl")
    assert [lab.label_id for lab in labels] == [f"{LONG}:1:label:1", f"{LONG}:1:label:2"]
    assert all(isinstance(lab, EvalLabel) for lab in labels)
    assert labels[1].supersedes == labels[0].label_id and labels[1].harm_severity == "moderate"
    assert labels[0].event_id == "evt-long-000002" and labels[0].answer_correct is False
    assert labels[0].relevant_doc_ids == ["pil-paracetamol-en-02"]
    assert schema_errors("EvalLabel", folder / "labels.jsonl") == []
    reviews = [
        ReviewLabel.model_validate_json(x)
        for x in (folder / "review-labels.jsonl").read_text().splitlines()
    ]
    assert [r.reviewer for r in reviews] == ["ann", "bob"]
    actions = [json.loads(x) for x in (folder / "review-actions.jsonl").read_text().splitlines()]
    assert [a["kind"] for a in actions] == ["claim", "label", "label"]
    for name in ("labels.jsonl", "review-labels.jsonl", "review-state.sqlite"):
        assert os.stat(folder / name).st_mode & 0o077 == 0, name  # private: masked chat text


async def test_the_state_survives_a_restart_and_a_new_round_replaces_an_old_one(
    folder: Path,
) -> None:
    async with served(folder) as (client, _):
        assert (await client.post(f"/review/api/items/{LONG}/claim", headers=H(ANN))).status == 200
    with FolderQueue(folder, POLICY) as queue:
        again = queue.import_folder()
        assert again.imported == 0 and again.kept >= 1
        stored = queue.store.get(LONG)
        assert stored is not None and stored.claimed_by == "ann"
    lines = (folder / "review.jsonl").read_text().splitlines()
    rows = [ReviewItem.model_validate_json(x) for x in lines]
    newer = [
        r.model_copy(update={"round": 2, "item_id": f"{LONG}:2"})
        if r.conversation_id == LONG
        else r
        for r in rows
    ]
    (folder / "review.jsonl").write_text("\n".join(r.model_dump_json() for r in newer) + "\n")
    with FolderQueue(folder, POLICY) as queue:
        summary = queue.import_folder()
        assert summary.replaced == 1
        replaced = queue.store.get(LONG)
        assert (
            replaced is not None and replaced.item_id == f"{LONG}:2" and replaced.status == "open"
        )


def test_random_unflagged_cases_become_audit_items(folder: Path) -> None:
    with FolderQueue(folder, POLICY) as queue:
        summary = queue.import_folder()
        assert summary.audit > 0
        audits = [
            i
            for i in queue.store.list(None, limit=500)
            if i.reasons and i.reasons[0].code == "evalset_unflagged"
        ]
        assert len(audits) == summary.audit
        item = audits[0]
        assert item.findings == [] and item.admission == "sampled"
        assert item.priority == POLICY.audit.priority and 0 < item.inclusion_probability <= 1
        assert [t.role for t in item.turns][-1] == "assistant"


def test_the_timer_expires_and_purges_as_the_worker_does(folder: Path) -> None:
    with FolderQueue(folder, POLICY) as queue:
        queue.import_folder()
        later = datetime.now(UTC) + timedelta(hours=POLICY.queue.open_ttl_hours + 1)
        assert queue.tick(later) > 0
        item = queue.store.get(LONG)
        assert item is not None and item.status == "expired"
        gone = later + timedelta(hours=POLICY.queue.retention_hours + 1)
        queue.tick(gone)
        assert queue.store.get(LONG) is None


def test_a_folder_without_review_jsonl_or_a_broken_line_is_refused(tmp_path: Path) -> None:
    with pytest.raises(FolderError, match=r"no review\.jsonl"):
        FolderQueue(tmp_path, POLICY)
    (tmp_path / "review.jsonl").write_text('{"not": "an item"}\n')
    with FolderQueue(tmp_path, POLICY) as queue, pytest.raises(FolderError, match=":1: not a"):
        queue.import_folder()


def test_serve_refuses_clearly_without_tokens_or_folder(
    folder: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("VIGIL_REVIEW_TOKENS", raising=False)
    monkeypatch.delenv("VIGIL_REVIEW_TOKENS_FILE", raising=False)
    no_tokens = CliRunner().invoke(review_app, ["serve", "--from", str(folder)])
    assert no_tokens.exit_code == 2 and "no reviewer tokens" in no_tokens.stderr
    monkeypatch.setenv("VIGIL_REVIEW_TOKENS", json.dumps({ANN: {"name": "ann"}}))
    missing = CliRunner().invoke(review_app, ["serve", "--from", str(folder / "nope")])
    assert missing.exit_code == 2 and "no such folder" in missing.stderr
    assert "Traceback" not in missing.output
