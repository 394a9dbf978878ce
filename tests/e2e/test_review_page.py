"""The reviewer page in a real browser: Debian's Chromium driven by Playwright, against the API
and page served on a loopback port with the in-memory store.

Open the queue, enter the token, move with the keyboard, claim, label, and see the item leave
the open queue; a reviewer with the reveal role reveals a value and the reveal is logged. Waits
use selectors, not JavaScript predicates: the page's Content-Security-Policy (kept on here)
forbids the ``eval`` that ``wait_for_function`` polls with. The screenshot of the conversation
view goes to the test's tmp dir and to ``out/screenshots/review-page.png`` (not tracked; copy it
to ``docs/review-page.png`` when the page changes).
"""

from __future__ import annotations

import shutil
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from aiohttp import web

from schemas.events import Claim
from schemas.review import RevealEvent, ReviewItem, ReviewLabel
from schemas.verdicts import ClaimCheck, ClaimVerdict, GroundingReport
from services.review.api import ReviewAPI, create_review_app
from services.review.auth import Reviewer, TokenAuth
from services.review.evidence import make_flag, mask_turn
from services.review.policy import load_policy
from services.review.queue import apply
from services.review.store import MemoryStore
from tests.support.browser import chromium
from tests.unit.test_review_support import event, finding

ROOT = Path(__file__).resolve().parents[2]
POLICY = load_policy()
ANN = "e2e-reviewer-token-ann"
RITA = "e2e-reveal-token-rita-01"
AUTH = TokenAuth(
    {
        ANN: Reviewer(name="ann", roles=frozenset({"reviewer"})),
        RITA: Reviewer(name="rita", roles=frozenset({"reviewer", "reveal"})),
    }
)
EMAIL = "ann.jansen@example.org"
NOW = datetime.now(UTC).replace(microsecond=0)


def _dose_item() -> ReviewItem:
    """An ungrounded paracetamol dose with a contradicted fact, after a question with an e-mail."""
    q = event(
        f"How much paracetamol can I take? Mail the answer to {EMAIL} please.",
        cid="conv-en-0042",
        eid="evt-1",
        turn=0,
        role="user",
        when=NOW - timedelta(minutes=9),
    )
    answer = "Take 2 g every 4 hours, up to 8 g a day [doc:pil-paracetamol-en-02]."
    a = event(answer, cid="conv-en-0042", eid="evt-2", turn=1, when=NOW - timedelta(minutes=8))
    claim = answer.split(" [doc")[0]
    report = GroundingReport(
        event_id="evt-2",
        conversation_id="conv-en-0042",
        turn_index=1,
        timestamp=a.timestamp,
        tenant="t1",
        stratum="always",
        inclusion_probability=1.0,
        faithfulness=0.0,
        claims=[
            ClaimCheck(
                text=answer,
                start=0,
                end=len(answer),
                kind="dose",
                grounded=False,
                method="deterministic",
                support=0.31,
                best_doc="pil-paracetamol-en-02",
                numbers_missing=["8 g"],
                cited_docs=["pil-paracetamol-en-02"],
            )
        ],
        ungrounded=[answer],
        fabricated_citations=[],
        unsupported_citations=[],
        fact_checks=[
            ClaimVerdict(
                claim=Claim(entity="paracetamol", attribute="max_daily_dose", value="8 g"),
                status="contradicted",
                sources=["pil-paracetamol-en-02"],
                origin="extracted",
            )
        ],
    )
    q_turn, _ = mask_turn(q, [finding(q, EMAIL, direction="input", evidence="a***@***.org")])
    why = "not grounded in the retrieved passages; numbers missing: 8 g"
    flag = make_flag(
        a,
        [finding(a, claim, "grounding.ungrounded_dose").model_copy(update={"explanation": why})],
        report,
        POLICY,
        at=NOW - timedelta(minutes=8),
        context=[q_turn],
    )
    assert flag is not None
    item = apply(None, flag).item
    assert item is not None
    return item


def _leak_item() -> ReviewItem:
    ev = event(
        f"I have forwarded your results to {EMAIL}.",
        cid="conv-nl-0007",
        eid="evt-9",
        turn=3,
        when=NOW - timedelta(minutes=30),
    )
    leak = finding(ev, EMAIL, evidence="a***@***.org").model_copy(
        update={"explanation": "pattern email; the user never gave this value"}
    )
    flag = make_flag(
        ev,
        [leak],
        None,
        POLICY,
        at=NOW - timedelta(minutes=30),
    )
    assert flag is not None
    item = apply(None, flag).item
    assert item is not None
    return item


@pytest.fixture
async def served() -> AsyncIterator[tuple[str, MemoryStore]]:
    store = MemoryStore([_dose_item(), _leak_item()])
    api = ReviewAPI(store, AUTH, POLICY.queue)
    runner = web.AppRunner(create_review_app(api))
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    host, port = runner.addresses[0][:2]
    try:
        yield f"http://{host}:{port}/review/", store
    finally:
        await runner.cleanup()


async def test_claim_label_and_the_item_leaves_the_queue(
    served: tuple[str, MemoryStore], tmp_path: Path
) -> None:
    url, store = served
    async with chromium() as browser:
        page = await browser.new_page(viewport={"width": 1400, "height": 900})
        page.set_default_timeout(15_000)
        await page.goto(url)
        await page.fill("#token", "not-a-valid-token-at-all")
        await page.click("#login-submit")
        await page.wait_for_selector("#status.error")
        assert await page.is_visible("#login")

        await page.fill("#token", ANN)
        await page.click("#login-submit")
        await page.wait_for_selector("#queue tbody tr")
        assert await page.text_content("#who") == "ann (reviewer)"
        token = await page.evaluate("sessionStorage.getItem('vigil.review.token')")
        assert token == ANN
        rows = page.locator("#queue tbody tr")
        assert await rows.count() == 2
        # Sorted by priority: the ungrounded dose (100) above the older leak (90).
        assert await rows.nth(0).get_attribute("data-cid") == "conv-en-0042"
        await page.wait_for_selector("#item h2")
        await page.keyboard.press("j")
        await page.wait_for_selector("#queue tbody tr.selected[data-cid='conv-nl-0007']")
        await page.wait_for_selector("#item h2:has-text('conv-nl-0007')")
        await page.keyboard.press("k")
        await page.wait_for_selector("#queue tbody tr.selected[data-cid='conv-en-0042']")
        await page.wait_for_selector("#item h2:has-text('conv-en-0042')")

        body = await page.text_content("body") or ""
        assert EMAIL not in body and "a***@***.org" in body  # masked for a reviewer
        assert await page.locator("#turns mark.sev-critical").count() == 1
        assert "contradicted" in (await page.text_content("table.facts") or "")
        assert "pil-paracetamol-en-02" in (await page.text_content("table.facts") or "")

        await page.keyboard.press("c")
        await page.wait_for_selector("#item-status.status-claimed")
        assert store.items["conv-en-0042"].claimed_by == "ann"
        await page.locator("#note").fill("Max daily dose of paracetamol is 4 g.")
        shot = tmp_path / "review-page.png"
        await page.screenshot(path=str(shot), full_page=True)
        (ROOT / "out" / "screenshots").mkdir(parents=True, exist_ok=True)
        shutil.copyfile(shot, ROOT / "out" / "screenshots" / "review-page.png")

        await page.locator("#note").blur()
        await page.keyboard.press("t")
        await page.wait_for_selector("#queue tbody tr[data-cid='conv-en-0042']", state="detached")
        assert await rows.count() == 1
        await page.screenshot(path=str(tmp_path / "review-page-after.png"), full_page=True)

        await page.reload()  # the token survives a reload of the tab
        await page.wait_for_selector("#queue tbody tr[data-cid='conv-nl-0007']")
        assert not await page.is_visible("#login")

    item = store.items["conv-en-0042"]
    assert item.status == "labeled" and item.labeled_by == "ann"
    (label,) = [r for r in store.published if isinstance(r, ReviewLabel)]
    assert [f.verdict for f in label.findings] == ["true_positive"]
    assert label.note == "Max daily dose of paracetamol is 4 g."
    assert [(c.original, c.corrected) for c in label.claims] == [("contradicted", "contradicted")]
    assert shot.stat().st_size > 10_000


async def test_a_reveal_shows_the_value_and_is_logged(served: tuple[str, MemoryStore]) -> None:
    url, store = served
    async with chromium() as browser:
        page = await browser.new_page()
        page.set_default_timeout(15_000)
        await page.goto(url)
        await page.fill("#token", RITA)
        await page.click("#login-submit")
        await page.wait_for_selector("#item h2")
        await page.keyboard.press("j")
        await page.wait_for_selector("#item h2:has-text('conv-nl-0007')")
        assert EMAIL not in (await page.text_content("#turns") or "")
        await page.keyboard.press("v")
        await page.wait_for_selector(".revealed-banner")
        assert EMAIL in (await page.text_content("#turns") or "")
    (reveal,) = [r for r in store.published if isinstance(r, RevealEvent)]
    assert (reveal.reviewer, reveal.conversation_id) == ("rita", "conv-nl-0007")
