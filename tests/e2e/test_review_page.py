"""The reveal flow of the review page in a real browser: Debian's Chromium driven by Playwright,
against the API and page served on a loopback port with the in-memory store (which, like the
worker's table, keeps the matched values a scan never keeps); and a claim that carries a
structured medical reading (``ClaimCheck.medical``, from the real claim checker) shown with the
passage claim that contradicts it.

A reviewer with the reveal role must claim the item and state a purpose before the values are
shown; the reveal is logged with the purpose and without values. Waits use selectors, not
JavaScript predicates: the page's Content-Security-Policy (kept on here) forbids the ``eval``
that ``wait_for_function`` polls with. The reviewer's whole walk is in ``test_review_walk.py``.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta

import pytest
from aiohttp import web

from schemas.events import Passage
from schemas.review import RevealEvent, ReviewAction, ReviewItem
from services.checking import ClaimChecker
from services.review.api import ReviewAPI, create_review_app
from services.review.auth import Reviewer, TokenAuth
from services.review.evidence import make_flag
from services.review.policy import load_policy
from services.review.queue import apply
from services.review.store import MemoryStore
from services.sampling import SampleDecision
from services.settings import Settings
from tests.support.browser import chromium
from tests.unit.test_review_support import event, finding

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
    flag = make_flag(ev, [leak], None, POLICY, at=NOW - timedelta(minutes=30))
    assert flag is not None
    item = apply(None, flag).item
    assert item is not None
    return item


def _dose_item() -> ReviewItem:
    """A dose answer checked by the real claim checker against a leaflet that says otherwise."""
    text = "Adults may take up to 8 g of paracetamol a day."
    ev = event(text, cid="conv-en-0099", eid="evt-99", turn=1, when=NOW - timedelta(minutes=5))
    leaflet = Passage(doc_id="pil-paracetamol-en-02", text="Do not take more than 4 g in 24 hours.")
    ev = ev.model_copy(update={"language": "en", "retrieval": [leaflet]})
    decision = SampleDecision(sampled=True, stratum="always", inclusion_probability=1.0)
    checked = ClaimChecker(Settings()).check(ev, decision)
    assert [m.status for m in checked.report.claims[0].medical] == ["contradicted"]
    flag = make_flag(ev, checked.findings, checked.report, POLICY, at=NOW - timedelta(minutes=5))
    assert flag is not None
    item = apply(None, flag).item
    assert item is not None
    return item


@pytest.fixture
async def served() -> AsyncIterator[tuple[str, MemoryStore]]:
    store = MemoryStore([_leak_item(), _dose_item()])
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


async def test_a_reveal_needs_a_claim_and_a_purpose_and_is_logged(
    served: tuple[str, MemoryStore],
) -> None:
    url, store = served
    async with chromium() as browser:
        page = await browser.new_page()
        page.set_default_timeout(15_000)
        await page.goto(url)
        await page.fill("#token", "not-a-valid-token-at-all")
        await page.click("#login-submit")
        await page.wait_for_selector("#status.error")
        assert await page.is_visible("#login") and not await page.is_visible("#app")

        await page.fill("#token", ANN)
        await page.click("#login-submit")
        await page.wait_for_selector("#item h2:has-text('conv-en-0099')")  # priority 100 first
        reading = page.locator(".reading.medical")
        said = await reading.text_content() or ""
        assert "contradicted" in said and "answer reads: max 8000 mg per 24 h" in said
        assert "paracetamol · for adult · allowed" in said
        against = await reading.locator("blockquote.contradicting").text_content() or ""
        assert "pil-paracetamol-en-02 (max 4000 mg per 24 h)" in against
        assert "Do not take more than 4 g in 24 hours." in against
        await page.keyboard.press("j")
        await page.wait_for_selector("#item h2:has-text('conv-nl-0007')")
        assert await page.locator("#btn-reveal").count() == 0  # no reveal role, no button
        await page.click("#signout")

        await page.fill("#token", RITA)
        await page.click("#login-submit")
        await page.wait_for_selector("#item h2:has-text('conv-en-0099')")
        await page.keyboard.press("j")
        await page.wait_for_selector("#item h2:has-text('conv-nl-0007')")
        assert EMAIL not in (await page.text_content("#turns") or "")
        assert await page.is_disabled("#btn-reveal")  # claim first
        await page.keyboard.press("v")
        await page.wait_for_selector("#status.error")
        assert await page.is_hidden("#reveal-form")

        await page.keyboard.press("c")
        await page.wait_for_selector("#item-status.status-claimed")
        await page.keyboard.press("v")
        await page.wait_for_selector("#reveal-purpose")
        await page.fill("#reveal-purpose", "short")
        await page.click("#reveal-submit")
        assert not await page.is_visible(".revealed-banner")
        await page.fill("#reveal-purpose", "the user asks who received the results")
        await page.click("#reveal-submit")
        await page.wait_for_selector(".revealed-banner")
        assert EMAIL in (await page.text_content("#turns") or "")
        await page.keyboard.press("v")  # mask again
        await page.wait_for_selector(".revealed-banner", state="detached")
        assert EMAIL not in (await page.text_content("#turns") or "")

        await page.reload()  # the token survives a reload of the tab
        await page.wait_for_selector("#queue tbody tr[data-cid='conv-nl-0007']")
        assert not await page.is_visible("#login")

    (reveal,) = [r for r in store.published if isinstance(r, RevealEvent)]
    assert (reveal.reviewer, reveal.conversation_id) == ("rita", "conv-nl-0007")
    assert reveal.purpose == "the user asks who received the results"
    assert EMAIL not in reveal.model_dump_json()
    claims = [r for r in store.published if isinstance(r, ReviewAction) and r.kind == "claim"]
    assert [c.reviewer for c in claims] == ["rita"]
