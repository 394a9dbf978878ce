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
    row = next(line for line in dose.splitlines() if "max_daily_dose" in line)
    assert "amoxicillin max_daily_dose" in row and "9 g" in row and "contradicted" in row
    no_purpose = run(served, "show", "conv-leak-1", "--reveal", token=RITA)
    assert no_purpose.exit_code == 2 and "--purpose" in no_purpose.stderr
    why = ("--purpose", "check the address against the patient file")
    denied = run(served, "show", "conv-leak-1", "--reveal", *why)
    assert denied.exit_code == 1
    assert "forbidden: this token's reviewer needs the reveal role" in denied.stderr
    assert served.store.published == []
    unclaimed = run(served, "show", "conv-leak-1", "--reveal", *why, token=RITA)
    assert unclaimed.exit_code == 1 and "claim it first" in unclaimed.stderr
    ok(served, "claim", "conv-leak-1", token=RITA)
    revealed = ok(served, "show", "conv-leak-1", "--reveal", *why, token=RITA)
    assert EMAIL in revealed.stdout and "this view was logged" in revealed.stdout
    (reveal,) = [r for r in served.store.published if isinstance(r, RevealEvent)]
    assert reveal.reviewer == "rita" and reveal.purpose == why[1]
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
        "--harm",
        "none",
    ).stdout
    assert (
        "labeled conv-dose:1 as conv-dose:1:label:1: 0 true positive, 1 false positive, 0 "
        "unsure, 1 fact check(s) corrected"
    ) in labeled
    item = served.store.items["conv-dose"]
    assert item.status == "labeled" and item.labeled_by == "ann"
    (label,) = [r for r in served.store.published if isinstance(r, ReviewLabel)]
    assert [f.verdict for f in label.findings] == ["false_positive"]
    assert [(c.original, c.corrected) for c in label.claims] == [("contradicted", "supported")]
    assert label.note == "the registry is wrong here"
    closed = run(served, "claim", "conv-dose")
    assert closed.exit_code == 1 and "the item is closed" in closed.stderr
    fixed = ok(
        served,
        "label",
        "conv-dose",
        "--all",
        "tp",
        "--harm",
        "moderate",
        "--category",
        "contradicts_source",
        "--corrects",
        "conv-dose:1:label:1",
        token=BOB,
    ).stdout
    assert "corrected conv-dose:1 as conv-dose:1:label:2: 1 true positive" in fixed
    history = ok(served, "show", "conv-dose").stdout
    assert "label conv-dose:1:label:1 by ann" in history
    assert "label conv-dose:1:label:2 by bob" in history and "(corrects conv-dose:1:label:1)" in (
        history
    )
    assert "reviewers disagree on: finding:" in history  # ann said fp, bob tp

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
    assert norole.exit_code == 1
    assert "forbidden: this token's reviewer needs the reviewer role" in norole.stderr
    assert "reveal" not in norole.stderr
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
        ["label", "conv-dose", "--all", "tp", "--missed", "weather"],
        ["label", "conv-dose", "--all", "tp", "--rubric", "clarity"],
        ["show", "conv-dose", "--reveal"],
        ["assign", "conv-dose"],
        ["assign", "conv-dose", "--to", "bob", "--unassign"],
        ["list", "--limit", "501"],
    ],
)
def test_usage_errors_exit_2(served: Served, args: list[str]) -> None:
    result = run(served, *args)
    assert result.exit_code == 2, result.output


def test_ids_are_never_cut_on_a_narrow_terminal(served: Served) -> None:
    long_id = "conv-" + "x" * 70 + "-end"
    served.store.put(long_id, _leak(long_id, 2))
    env = {"COLUMNS": "80", "VIGIL_REVIEW_URL": served.url, "VIGIL_REVIEW_TOKEN": ANN}
    out = CliRunner().invoke(review_app, ["list"], env=env).stdout
    assert long_id in out  # whole, on one line: it can be copied
    assert "tenant/a b" in out and "conv-dose" in out


def test_the_default_url_follows_vigil_web_port(monkeypatch: pytest.MonkeyPatch) -> None:
    from services.commands.review import default_url

    monkeypatch.delenv("VIGIL_REVIEW_URL", raising=False)
    monkeypatch.delenv("VIGIL_WEB_PORT", raising=False)
    assert default_url() == "http://127.0.0.1:6066"
    monkeypatch.setenv("VIGIL_WEB_PORT", "7123")
    assert default_url() == "http://127.0.0.1:7123"
    monkeypatch.setenv("VIGIL_REVIEW_URL", "http://review.example:8000")
    assert default_url() == "http://review.example:8000"


def test_the_port_of_vigil_web_port_is_used_when_no_url_is_given(served: Served) -> None:
    port = served.url.rsplit(":", 1)[1]
    env = {"VIGIL_WEB_PORT": port, "VIGIL_REVIEW_TOKEN": ANN, "COLUMNS": "200"}
    result = CliRunner().invoke(review_app, ["list", "--json"], env=env)
    assert result.exit_code == 0 and len(json.loads(result.stdout)["items"]) == 4


def test_assign_needs_the_assign_role_for_others_and_blocks_other_claims(served: Served) -> None:
    mine = ok(served, "assign", "conv-leak-2", "--to", "ann").stdout
    assert "assigned conv-leak-2:1 to ann until" in mine
    other = run(served, "assign", "conv-leak-2", "--to", "bob")
    assert other.exit_code == 1 and "needs the assign role" in other.stderr
    blocked = run(served, "claim", "conv-leak-2", token=BOB)
    assert blocked.exit_code == 1 and "assigned to ann" in blocked.stderr
    listed = json.loads(ok(served, "list", "--mine", "--json").stdout)["items"]
    assert [i["conversation_id"] for i in listed] == ["conv-leak-2"]
    back = ok(served, "assign", "conv-leak-2", "--unassign").stdout
    assert "is assigned to nobody" in back
    ok(served, "claim", "conv-leak-2", token=BOB)
