"""The reviewer's walk in Chromium against ``vigil review serve --from DIR`` (no Kafka), then the
labels it wrote through ``vigil eval run``; the page at 1440 and 390 px, checked by axe-core and
for its focus order.

``DIR`` is what ``make demo`` writes (``vigil scan`` of the example log and the long-answer
example into ``out/demo``), made afresh in a temporary folder. The server is the real command in
a subprocess, on a free port; the walk is :mod:`tests.support.review_walk`.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml

from services.scan import run_scan
from services.settings import Settings
from tests.support.browser import chromium
from tests.support.json_schemas import schema_errors
from tests.support.review_walk import (
    DOC,
    LONG,
    NARROW,
    WIDE,
    accessibility_violations,
    focus_order_follows_the_page,
    save_shot,
    sign_in,
    wait_for_page,
    walk,
)
from tests.support.worker_process import free_port

ROOT = Path(__file__).resolve().parents[2]
ANN = "e2e-serve-token-ann-0001"
BOB = "e2e-serve-token-bob-0002"
TOKENS = {ANN: {"name": "ann", "roles": ["reviewer"]}, BOB: {"name": "bob", "roles": ["reviewer"]}}


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("out") / "demo"
    sources = [ROOT / "examples" / "chat-events.jsonl", ROOT / "examples" / "long-answer.jsonl"]
    run_scan([str(p) for p in sources], out, Settings())
    return out


@pytest.fixture
def serve(demo: Path, tmp_path: Path) -> Iterator[tuple[str, Path]]:
    """``vigil review serve --from DIR`` on a copy of the demo folder; its page URL."""
    folder = tmp_path / "demo"
    folder.mkdir()
    for name in ("review.jsonl", "evalset.jsonl", "findings.jsonl", "verdicts.jsonl"):
        (folder / name).write_bytes((demo / name).read_bytes())
    port = free_port()
    env = {**os.environ, "VIGIL_REVIEW_TOKENS": json.dumps(TOKENS), "VIGIL_WEB_PORT": str(port)}
    log = tmp_path / "serve.log"
    with log.open("wb") as fh:
        proc = subprocess.Popen(
            [sys.executable, "-m", "services.cli", "review", "serve", "--from", str(folder)],
            env=env,
            cwd=ROOT,
            stdout=fh,
            stderr=subprocess.STDOUT,
        )
    url = f"http://127.0.0.1:{port}/review/"
    try:
        try:
            wait_for_page(url)
        except AssertionError:
            raise AssertionError(log.read_text()) from None
        yield url, folder
    finally:
        proc.terminate()
        proc.wait(30)
    assert "Traceback" not in log.read_text(), log.read_text()


def _label_an_audit_item(url: str, missed: list[str], skip: set[str]) -> str:
    """Claim and label one random unflagged case through the API (the page does the same)."""
    api = url + "api"
    with httpx.Client(headers={"Authorization": f"Bearer {BOB}"}, timeout=30) as http:
        items = http.get(f"{api}/items", params={"reason": "evalset_unflagged"}).json()["items"]
        cid = next(i["conversation_id"] for i in items if i["conversation_id"] not in skip)
        assert http.post(f"{api}/items/{cid}/claim", json={}).status_code == 200
        item = http.get(f"{api}/items/{cid}").json()["item"]
        body = {
            "item_id": item["item_id"],
            "harm_severity": "mild" if missed else "none",
            "error_categories": ["other"] if missed else [],
            "missed_categories": missed,
            "answer_correct": True,
            "relevant_doc_ids": item["answer"]["passages"][:1],
        }
        r = http.post(f"{api}/items/{cid}/label", json=body)
        assert r.status_code == 200, r.text
    return cid


def _eval(folder: Path, tmp: Path, gates: list[dict[str, Any]]) -> tuple[int, dict[str, Any]]:
    path = tmp / "gates.yaml"
    path.write_text(yaml.safe_dump({"gates": gates}))
    report = tmp / "report.json"
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "services.cli",
            "eval",
            "run",
            "--cases",
            str(folder / "evalset.jsonl"),
            "--labels",
            str(folder / "labels.jsonl"),
            "--gates",
            str(path),
            "--json",
            str(report),
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode in (0, 1), proc.stderr
    return proc.returncode, json.loads(report.read_text())


async def test_the_walk_against_review_serve_and_its_labels_in_eval_run(
    serve: tuple[str, Path], tmp_path: Path
) -> None:
    url, folder = serve
    async with chromium() as browser:
        page = await browser.new_page()
        await walk(page, url, ANN, "ann", tmp_path, "serve")

    labels = [json.loads(x) for x in (folder / "labels.jsonl").read_text().splitlines()]
    assert [lab["label_id"] for lab in labels] == [f"{LONG}:1:label:1", f"{LONG}:1:label:2"]
    assert labels[0]["event_id"] == "evt-long-000002" and labels[0]["answer_correct"] is False
    assert labels[0]["relevant_doc_ids"] == [DOC] and labels[1]["supersedes"] == f"{LONG}:1:label:1"
    assert schema_errors("EvalLabel", folder / "labels.jsonl") == []

    first = _label_an_audit_item(url, ["pii"], set())
    _label_an_audit_item(url, [], {first})
    gates = [
        {"id": "coverage", "metric": "coverage", "threshold": 1.0},
        {"id": "risk", "metric": "risk", "comparison": "<=", "threshold": 0.5},
        {"id": "miss-rate", "metric": "miss_rate", "comparison": "<=", "threshold": 0.5},
        {"id": "recall", "metric": "recall@1", "threshold": 1.0},
        {"id": "mrr", "metric": "mrr", "threshold": 1.0},
        {"id": "ndcg", "metric": "ndcg@3", "threshold": 1.0},
    ]
    code, report = _eval(folder, tmp_path, gates)
    v, n = report["overall"]["values"], report["overall"]["counts"]
    # The long answer is wrong (answer_correct false), the two audited ones right.
    assert (v["coverage"], n["coverage"]) == (1.0, 3)
    assert v["risk"] == pytest.approx(1 / 3)
    assert (v["miss_rate"], n["miss_rate"], v["miss_rate_pii"]) == (0.5, 2, 0.5)
    assert (v["recall@1"], v["mrr"], v["ndcg@3"], n["mrr"]) == (1.0, 1.0, 1.0, 3)
    assert code == 0 and report["passed"], [g["message"] for g in report["gates"]]
    tighter = [
        {**g, "threshold": {"coverage": 1.01, "risk": 0.33, "miss-rate": 0.49}.get(g["id"], 1.01)}
        for g in gates
    ]
    code, report = _eval(folder, tmp_path, tighter)
    assert code == 1 and len(report["failed_gates"]) == len(gates)


@pytest.mark.parametrize("size", [WIDE, NARROW], ids=["1440", "390"])
async def test_the_page_at_1440_and_390_px_passes_axe_and_keeps_its_focus_order(
    serve: tuple[str, Path], tmp_path: Path, size: dict[str, int]
) -> None:
    url, _ = serve
    width = size["width"]
    async with chromium() as browser:
        page = await browser.new_page(viewport=size)
        await page.goto(url)
        await page.wait_for_selector("#login:not([hidden])")
        assert not await page.is_visible("#app")  # the hidden app does not show under the login
        assert await accessibility_violations(page) == []
        await save_shot(page, f"review-login-{width}", tmp_path)
        await sign_in(page, url, ANN)
        row = page.locator(f"#queue tbody tr[data-cid='{LONG}']")
        await row.click()
        await page.wait_for_selector(f"#item h2:has-text('{LONG}')")
        assert await page.is_disabled("#btn-label")  # not claimed yet: disabled, and looks it
        colours = await page.eval_on_selector(
            "#btn-label", "b => [getComputedStyle(b).backgroundColor, getComputedStyle(b).cursor]"
        )
        assert colours == ["rgb(233, 236, 239)", "not-allowed"]
        assert await accessibility_violations(page) == []
        wraps = await page.eval_on_selector(
            "#findings .verdict", "f => f.getBoundingClientRect().height"
        )
        assert wraps < 40  # the verdict radios stay on one line
        scroll = await page.evaluate("document.documentElement.scrollWidth")
        assert scroll <= width, f"the page is {scroll} px wide at {width} px"
        stops = await focus_order_follows_the_page(page)
        assert "status-filter" in stops and "btn-claim" in stops
        await save_shot(page, f"review-item-{width}", tmp_path)
