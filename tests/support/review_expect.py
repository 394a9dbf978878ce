"""The review queue the integration tests expect, and the worker's queue read through its API.

:func:`expected_items` is what ``vigil scan`` enqueues from a file under a policy;
:func:`uncapped_policy` is the default triage policy without its per-tenant cap (the worker
counts the cap per partition and processing hour, scan per event hour, so with a cap the two
overflow different conversations); :func:`item_views` reads a worker's items (any worker of the
group: the API forwards to the owner of the conversation's partition); :func:`compare_items`
says how they differ from scan's.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx
import yaml

from schemas.events import ChatEvent
from schemas.outputs import Finding
from schemas.review import ReviewItem
from schemas.verdicts import GroundingReport
from services.review.policy import DEFAULT_POLICY_PATH, TriagePolicy, load_policy
from services.review.scan import scan_review
from services.scan import run_scan
from services.settings import Settings
from tests.support.worker_process import WorkerProcess

__all__ = ["compare_items", "expected_items", "item_views", "review_client", "uncapped_policy"]


def uncapped_policy(path: Path) -> TriagePolicy:
    """The default policy without the tenant cap, written to ``path``."""
    raw = yaml.safe_load(DEFAULT_POLICY_PATH.read_text(encoding="utf-8"))
    raw["caps"]["per_tenant_per_hour"] = None
    path.write_text(yaml.safe_dump(raw, sort_keys=False), encoding="utf-8")
    return load_policy(path)


def expected_items(
    path: Path,
    out: Path,
    policy: TriagePolicy,
    *,
    scanned: bool = False,
    settings: Settings | None = None,
) -> dict[str, ReviewItem]:
    """What ``vigil scan`` enqueues from the file (findings once each, as scan gives an event);
    ``scanned``: ``out`` already holds scan's outputs of the file; ``settings``: scan's (the
    defaults and ``VIGIL_*`` when not given)."""
    if not scanned:
        run_scan(str(path), out, settings if settings is not None else Settings())
    lines = (out / "findings.jsonl").read_text().splitlines()
    findings = {f.finding_id: f for f in map(Finding.model_validate_json, lines)}
    lines = (out / "verdicts.jsonl").read_text().splitlines()
    verdicts = {v.event_id: v for v in map(GroundingReport.model_validate_json, lines)}
    events = [ChatEvent.model_validate_json(x) for x in path.read_text().splitlines()]
    items = scan_review(findings.values(), verdicts.values(), events, policy)
    return {i.conversation_id: i for i in items}


def review_client(worker: WorkerProcess, token: str) -> httpx.Client:
    return httpx.Client(
        base_url=worker.url, headers={"Authorization": f"Bearer {token}"}, timeout=30.0
    )


def item_views(worker: WorkerProcess, cids: list[str], token: str) -> dict[str, dict[str, Any]]:
    """``{cid: item view}`` for the conversations that have an item; fails on anything but
    200 and 404."""
    out: dict[str, dict[str, Any]] = {}
    with review_client(worker, token) as http:
        for cid in cids:
            r = http.get(f"/review/api/items/{cid}")
            assert r.status_code in (200, 404), (cid, r.status_code, r.text)
            if r.status_code == 200:
                out[cid] = r.json()["item"]
    return out


def compare_items(views: dict[str, dict[str, Any]], want: dict[str, ReviewItem]) -> str | None:
    """How the worker's open items differ from scan's: one item per flagged conversation (none
    for the others), in round 1, with scan's priority, reasons and findings; ``None`` if not."""
    problems = []
    missing, unexpected = sorted(set(want) - set(views)), sorted(set(views) - set(want))
    if missing or unexpected:
        problems.append(f"missing items {missing[:5]}, unexpected items {unexpected[:5]}")
    for cid in sorted(set(views) & set(want)):
        view, item = views[cid], want[cid]
        if view["item_id"] != f"{cid}:1" or view["status"] != "open":
            problems.append(f"{cid}: item {view['item_id']} {view['status']}")
        if view["priority"] != item.priority:
            problems.append(f"{cid}: priority {view['priority']}, scan {item.priority}")
        got_reasons = {(r["code"], r["finding_id"] or r["event_id"]) for r in view["reasons"]}
        if got_reasons != {(r.code, r.finding_id or r.event_id) for r in item.reasons}:
            problems.append(f"{cid}: other reasons")
        ids = [f["finding_id"] for f in view["findings"]]
        if len(ids) != len(set(ids)) or set(ids) != {f.finding_id for f in item.findings}:
            problems.append(f"{cid}: other or repeated findings")
    if not problems:
        return None
    return f"{len(problems)} differences from scan's queue:\n  " + "\n  ".join(problems[:10])
