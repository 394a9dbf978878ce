"""``vigil review`` (typer, CliRunner) against the real reviewer API served on a loopback port
with the in-memory store: list, show, claim, label, release, reveal, JSON output, and the errors
(401, 403, 404, 409, 422, unreachable, usage) with a clear message and no token in it."""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from aiohttp import web
from typer.testing import CliRunner

from schemas.review import RevealEvent, ReviewAction, ReviewItem, ReviewLabel
from services.commands.review import review_app
from services.review.api import ReviewAPI, create_review_app
from services.review.auth import Reviewer, TokenAuth
from services.review.evidence import make_flag
from services.review.queue import apply
from services.review.store import MemoryStore
from tests.unit.test_review_support import POLICY, event, finding, verdict

ANN = "cli-reviewer-token-ann-01"
BOB = "cli-reviewer-token-bob-02"
RITA = "cli-reveal-token-rita-003"
NORA = "cli-noroles-token-nora-04"
AUTH = TokenAuth(
    {
        ANN: Reviewer(name="ann", roles=frozenset({"reviewer"})),
        BOB: Reviewer(name="bob", roles=frozenset({"reviewer"})),
        RITA: Reviewer(name="rita", roles=frozenset({"reviewer", "reveal"})),
        NORA: Reviewer(name="nora", roles=frozenset()),
    }
)
EMAIL = "linh.tran@example.org"
NOW = datetime.now(UTC).replace(microsecond=0)


def _leak(cid: str, minutes: float, tenant: str = "t1", content: str | None = None) -> ReviewItem:
    """An assistant turn leaking an e-mail address (pii_leak, priority 90)."""
    text = content or f"Write to {EMAIL} today."
    ev = event(text, cid=cid, eid=f"{cid}-e1", tenant=tenant, when=NOW + timedelta(minutes=minutes))
    flag = make_flag(ev, [finding(ev, EMAIL)], None, POLICY, at=ev.timestamp)
    assert flag is not None
    item = apply(None, flag, POLICY.queue).item
    assert item is not None
    return item


def _dose(cid: str) -> ReviewItem:
    """An ungrounded dose (priority 100) with a contradicted fact check (contradicted_fact)."""
    ev = event("Take 9 g of amoxicillin a day.", cid=cid, eid=f"{cid}-e1", when=NOW)
    fs = [finding(ev, "9 g of amoxicillin", "grounding.ungrounded_dose")]
    flag = make_flag(ev, fs, verdict(ev), POLICY, at=ev.timestamp)
    assert flag is not None
    item = apply(None, flag, POLICY.queue).item
    assert item is not None
    return item


@dataclass
class Served:
    url: str
    store: MemoryStore


@pytest.fixture
def served() -> Iterator[Served]:
    """The API and page on 127.0.0.1:<free port>, in a thread with its own event loop."""
    store = MemoryStore(
        [
            _leak("conv-leak-1", 0),
            _leak("conv-leak-2", 5, tenant="t2"),
            _dose("conv-dose"),
            _leak("tenant/a b", 9),
        ]
    )
    loop = asyncio.new_event_loop()
    runner = web.AppRunner(create_review_app(ReviewAPI(store, AUTH, POLICY.queue)))
    thread = threading.Thread(target=loop.run_forever, daemon=True)
    thread.start()

    async def start() -> int:
        await runner.setup()
        await web.TCPSite(runner, "127.0.0.1", 0).start()
        return int(runner.addresses[0][1])

    port = asyncio.run_coroutine_threadsafe(start(), loop).result(10)
    try:
        yield Served(f"http://127.0.0.1:{port}", store)
    finally:
        asyncio.run_coroutine_threadsafe(runner.cleanup(), loop).result(10)
        loop.call_soon_threadsafe(loop.stop)
        thread.join(10)
        loop.close()


def run(served: Served, *args: str, token: str | None = ANN) -> Any:
    env = {"COLUMNS": "250", "VIGIL_REVIEW_URL": served.url}
    if token is not None:
        env["VIGIL_REVIEW_TOKEN"] = token
    return CliRunner().invoke(review_app, list(args), env=env)


def ok(served: Served, *args: str, token: str | None = ANN) -> Any:
    result = run(served, *args, token=token)
    assert result.exit_code == 0, (result.stdout, result.stderr)
    return result


# --- reading ------------------------------------------------------------------------------------


def test_list_as_a_table_and_as_json(served: Served) -> None:
    table = ok(served, "list").stdout
    rows = [line for line in table.splitlines() if "conv-" in line or "tenant/a b" in line]
    assert len(rows) == 4 and "conv-dose" in rows[0]
    assert "100 critical" in rows[0] and "ungrounded_dose" in rows[0]
    assert EMAIL not in table
    data = json.loads(ok(served, "list", "--json").stdout)
    assert [i["conversation_id"] for i in data["items"]] == [
        "conv-dose",
        "conv-leak-1",
        "conv-leak-2",
        "tenant/a b",
    ]
    t2 = json.loads(ok(served, "list", "--json", "--tenant", "t2", "--limit", "5").stdout)
    assert [i["conversation_id"] for i in t2["items"]] == ["conv-leak-2"]
    assert "no items" in ok(served, "list", "--status", "labeled").stdout


def test_show_is_masked_and_reveal_needs_the_role_and_is_logged(served: Served) -> None:
    shown = ok(served, "show", "conv-leak-1")
    assert "conv-leak-1:1" in shown.stdout and "pii_leak" in shown.stdout
    assert EMAIL not in shown.stdout and "[EMAIL_ADDRESS]" in shown.stdout
    dose = ok(served, "show", "conv-dose").stdout
    assert "amoxicillin max_daily_dose = 9 g" in dose and "contradicted" in dose
    denied = run(served, "show", "conv-leak-1", "--reveal")
    assert denied.exit_code == 1 and "forbidden" in denied.stderr and "reveal" in denied.stderr
    assert served.store.published == []
    revealed = ok(served, "show", "conv-leak-1", "--reveal", token=RITA)
    assert EMAIL in revealed.stdout and "this view was logged" in revealed.stdout
    (reveal,) = served.store.published
    assert isinstance(reveal, RevealEvent) and reveal.reviewer == "rita"
    item = json.loads(ok(served, "show", "tenant/a b", "--json").stdout)["item"]
    assert item["conversation_id"] == "tenant/a b"  # quoted into the path


def test_control_characters_in_chat_text_never_reach_the_terminal(served: Served) -> None:
    hostile = f"\x1b]0;owned\x07\x1b[2J Write to {EMAIL} today."
    served.store.put("conv-hostile", _leak("conv-hostile", 1, content=hostile))
    out = ok(served, "show", "conv-hostile").stdout
    assert "\x1b]0;" not in out and "\x07" not in out and "\x1b[2J" not in out
    assert "\ufffd]0;owned\ufffd" in out


# --- acting -------------------------------------------------------------------------------------


def test_claim_label_by_number_and_release(served: Served) -> None:
    claimed = ok(served, "claim", "conv-dose", "--lease", "600").stdout
    assert "claimed conv-dose:1 until" in claimed
    taken = run(served, "claim", "conv-dose", token=BOB)
    assert taken.exit_code == 1
    assert "already claimed" in taken.stderr and "claimed by ann until" in taken.stderr
    not_mine = run(served, "label", "conv-dose", "--all", "tp", token=BOB)
    assert not_mine.exit_code == 1 and "another reviewer holds the item" in not_mine.stderr
    missing = run(served, "label", "conv-dose", "--finding", "conv-dose-e1:nope:0-1=tp")
    assert missing.exit_code == 1 and "rejected (invalid_label)" in missing.stderr
    labeled = ok(
        served,
        "label",
        "conv-dose",
        "--all",
        "tp",
        "--finding",
        "1=fp",
        "--claim",
        "conv-dose-e1:0=supported",
        "--note",
        "the registry is wrong here",
    ).stdout
    assert "labeled conv-dose:1: 0 true positive, 1 false positive, 1 fact check" in labeled
    item = served.store.items["conv-dose"]
    assert item.status == "labeled" and item.labeled_by == "ann"
    (label,) = [r for r in served.store.published if isinstance(r, ReviewLabel)]
    assert [f.verdict for f in label.findings] == ["false_positive"]
    assert [(c.original, c.corrected) for c in label.claims] == [("contradicted", "supported")]
    assert label.note == "the registry is wrong here"
    closed = run(served, "claim", "conv-dose")
    assert closed.exit_code == 1 and "the item is closed" in closed.stderr

    ok(served, "claim", "conv-leak-1", token=BOB)
    released = ok(served, "release", "conv-leak-1", "--json", token=BOB)
    assert json.loads(released.stdout)["item"]["status"] == "open"
    unclaimed = run(served, "release", "conv-leak-1", token=BOB)
    assert unclaimed.exit_code == 1 and "claim it first" in unclaimed.stderr
    kinds = [(r.kind, r.outcome) for r in served.store.published if isinstance(r, ReviewAction)]
    assert ("release", "applied") in kinds and ("claim", "rejected") in kinds


def test_a_stale_item_id_is_a_conflict(served: Served) -> None:
    stale = run(served, "claim", "conv-leak-2", "--item-id", "conv-leak-2:7")
    assert stale.exit_code == 1 and "a new round replaced that item" in stale.stderr


# --- errors -------------------------------------------------------------------------------------


@pytest.mark.parametrize("token", ["wrong-token-wrong-token-1", "short"], ids=["unknown", "short"])
def test_a_wrong_token_is_401_and_never_printed(served: Served, token: str) -> None:
    for args in (["list"], ["show", "conv-leak-1"], ["claim", "conv-leak-1"]):
        result = run(served, *args, token=token)
        assert result.exit_code == 1 and "unauthorized" in result.stderr
        assert token not in result.output
    as_json = run(served, "list", "--json", token="wrong-token-wrong-token-1")
    assert json.loads(as_json.stdout) == {"status": 401, "error": "unauthorized", "detail": None}


def test_missing_token_role_item_and_server(served: Served) -> None:
    none = run(served, "list", token=None)
    assert none.exit_code == 2 and "VIGIL_REVIEW_TOKEN" in none.stderr
    norole = run(served, "list", token=NORA)
    assert norole.exit_code == 1 and "forbidden" in norole.stderr
    unknown = run(served, "show", "conv-nope")
    assert unknown.exit_code == 1 and "no review item for conversation 'conv-nope'" in (
        unknown.stderr
    )
    gone = CliRunner().invoke(
        review_app, ["list", "--url", "http://127.0.0.1:9", "--token", ANN], env={}
    )
    assert gone.exit_code == 1 and "cannot reach the review API" in gone.stderr
    assert ANN not in gone.output


@pytest.mark.parametrize(
    "args",
    [
        ["label", "conv-dose"],
        ["label", "conv-dose", "--all", "maybe"],
        ["label", "conv-dose", "--finding", "x"],
        ["label", "conv-dose", "--all", "tp", "--claim", "e1:0=wrong"],
        ["label", "conv-dose", "--finding", "9=tp"],
        ["list", "--limit", "501"],
    ],
)
def test_usage_errors_exit_2(served: Served, args: list[str]) -> None:
    result = run(served, *args)
    assert result.exit_code == 2, result.output
