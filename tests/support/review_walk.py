"""The reviewer's walk through the review page in a real browser, shared by the runs against
``vigil review serve --from DIR`` (no Kafka) and against a worker on the real broker.

Open the item with the 55 KB answer (``examples/long-answer.jsonl``) → the late finding is
visible and masked → the passage text is shown beside its claim, the registry value beside the
answer's → claim → per-finding keys, a bulk key asks first and can be undone → label with harm
severity, error categories, ``answer_correct`` and a relevant document → the item shows the label
and its author → a correction adds a history entry. Screenshots at 1440 and 390 px go to
``out/screenshots/`` (not tracked; ``docs/review-page.png`` is copied from there).

Waits use selectors, not JavaScript predicates: the page's Content-Security-Policy forbids the
``eval`` that ``wait_for_function`` polls with (``page.evaluate`` is not affected).
"""

from __future__ import annotations

import shutil
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

import httpx

if TYPE_CHECKING:
    from playwright.async_api import Page

__all__ = [
    "DOC",
    "EMAIL",
    "LONG",
    "SCREENSHOTS",
    "accessibility_violations",
    "focus_order_follows_the_page",
    "save_shot",
    "sign_in",
    "wait_for_page",
    "walk",
]

ROOT = Path(__file__).resolve().parents[2]
SCREENSHOTS = ROOT / "out" / "screenshots"
LONG = "conv-en-long-0001"
EMAIL = "m.jansen@apotheek-noord.nl"
DOC = "pil-paracetamol-en-02"
WIDE = {"width": 1440, "height": 1000}
NARROW = {"width": 390, "height": 844}


def wait_for_page(url: str, timeout_s: float = 60.0) -> None:
    """Until ``url`` answers 200 (a server starting in another process)."""
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            if httpx.get(url, timeout=2.0).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        if time.monotonic() > deadline:
            raise AssertionError(f"{url} did not answer within {timeout_s:.0f}s")
        time.sleep(0.3)


async def save_shot(page: Page, name: str, tmp: Path) -> Path:
    shot = tmp / f"{name}.png"
    await page.screenshot(path=str(shot), full_page=True)
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(shot, SCREENSHOTS / shot.name)
    return shot


async def sign_in(page: Page, url: str, token: str) -> None:
    await page.goto(url)
    await page.fill("#token", token)
    await page.click("#login-submit")
    await page.wait_for_selector("#queue tbody tr")


async def _checked(page: Page, selector: str) -> list[str]:
    values: list[str] = await page.eval_on_selector_all(
        selector, "els => els.filter(e => e.checked).map(e => e.value)"
    )
    return values


async def _verdicts(page: Page) -> list[str]:
    rows = page.locator("#findings tbody tr")
    out = []
    for i in range(await rows.count()):
        picked = await rows.nth(i).locator("input[type=radio]:checked").count()
        value = (
            await rows.nth(i).locator("input[type=radio]:checked").get_attribute("value")
            if picked
            else ""
        )
        out.append(value or "")
    return out


async def walk(page: Page, url: str, token: str, reviewer: str, tmp: Path, name: str) -> None:
    """The walk of the module docstring, as ``reviewer`` (a token without the reveal role)."""
    page.set_default_timeout(20_000)
    await page.set_viewport_size(WIDE)
    await sign_in(page, url, token)
    assert await page.text_content("#who") == f"{reviewer} (reviewer)"

    # Find it with the queue's filters: reason and severity band.
    await page.fill("#reason-filter", "pii_leak")
    await page.select_option("#band-filter", "critical")
    await page.click("#refresh")
    row = page.locator(f"#queue tbody tr[data-cid='{LONG}']")
    await row.wait_for()
    assert LONG in (await row.locator("td.cid").text_content() or "")
    await row.click()
    await page.wait_for_selector(f"#item h2:has-text('{LONG}')")

    # The late finding (27 KB into a 55 KB answer) is in view, masked; the gaps are marked.
    mark = page.locator("#turns mark[data-finding*='pii.email']")
    assert await mark.is_visible() and await mark.text_content() == "m***@***.nl"
    assert "in the assistant's answer" in (await mark.get_attribute("title") or "")
    gaps = page.locator("#turns .gap")
    assert await gaps.count() == 2 and "characters left out" in (
        await gaps.first.text_content() or ""
    )
    assert EMAIL not in (await page.text_content("body") or "")

    # The dose claim's structured reading with the passage claim that contradicts it; the
    # passage it was checked against, its matching span; the registry value.
    dose = page.locator(".claim", has_text="8 g of paracetamol").first
    reading = dose.locator(".reading.medical")
    assert "contradicted" in (await reading.text_content() or "")
    against = await reading.locator("blockquote.contradicting").text_content() or ""
    assert f"contradicted by {DOC}" in against
    quote = dose.locator(f"blockquote[aria-label='Passage {DOC}']")
    assert DOC in (await quote.text_content() or "")
    span = await quote.locator("mark.span").text_content()
    assert (
        span
        == "Adults and children aged 16 and over: take 500 mg to 1 g every 4 to 6 hours as needed."
    )
    facts = page.locator("table.facts tbody tr").first
    cells = [(await c.text_content() or "") for c in await facts.locator("td").all()]
    assert cells[1:4] == ["8 g", "4 g", "contradicted"], cells
    await save_shot(page, f"review-{name}-evidence-1440", tmp)

    # Claim, then per-finding keys; a bulk key asks first and can be undone.
    await page.keyboard.press("c")
    await page.wait_for_selector("#item-status.status-claimed")
    n = await page.locator("#findings tbody tr").count()
    assert n >= 3
    await page.keyboard.press("1")
    await page.keyboard.press("t")
    await page.keyboard.press("2")
    await page.keyboard.press("s")
    assert (await _verdicts(page))[:2] == ["true_positive", "unsure"]
    await page.keyboard.press("Shift+F")
    await page.wait_for_selector("#confirm-box:not([hidden])")
    await page.keyboard.press("Escape")
    await page.wait_for_selector("#confirm-box", state="hidden")
    assert (await _verdicts(page))[:2] == ["true_positive", "unsure"]
    await page.keyboard.press("Shift+F")
    await page.wait_for_selector("#confirm-yes")
    await page.keyboard.press("Enter")
    assert await _verdicts(page) == ["false_positive"] * n
    await page.keyboard.press("z")
    assert (await _verdicts(page))[:2] == ["true_positive", "unsure"]
    await page.keyboard.press("Shift+T")
    await page.click("#confirm-yes")
    assert await _verdicts(page) == ["true_positive"] * n

    # The label: harm severity, error categories, answer_correct, a relevant document.
    await page.check("input[name='harm'][value='severe']")
    await page.check("input[name='category'][value='wrong_dose']")
    await page.check("input[name='category'][value='personal_data_exposed']")
    await page.check("input[name='answer-correct'][value='false']")
    await page.check(f"input[name='relevant'][value='{DOC}']")
    await page.select_option("#rubric-follow_up", "escalate")
    await page.fill("#note", "8 g a day is twice the maximum; the leaflet says 4 g.")
    await page.click("#btn-label")
    decided = page.locator("#decided")
    await decided.wait_for()
    said = await decided.text_content() or ""
    assert f"Decided by {reviewer}" in said and "harm severe" in said and "answer wrong" in said
    assert f"relevant: {DOC}" in said
    assert await page.locator("#history li").count() == 1
    assert await page.text_content("#item-status") == "labeled"

    # A correction is a new event: the history grows, nothing is overwritten.
    await page.click("#btn-correct")
    assert await _checked(page, "input[name='harm']") == ["severe"]  # the form starts from it
    await page.check("input[name='harm'][value='moderate']")
    await page.click("#btn-label")
    await page.wait_for_selector("#history li:nth-child(2)")
    history = [await li.text_content() or "" for li in await page.locator("#history li").all()]
    assert "labelled" in history[0] and "harm severe" in history[0]
    assert "corrected" in history[1] and "harm moderate" in history[1]
    assert "harm moderate" in (await page.text_content("#decided") or "")
    await save_shot(page, f"review-{name}-labelled-1440", tmp)
    await page.set_viewport_size(NARROW)
    await save_shot(page, f"review-{name}-labelled-390", tmp)
    await page.set_viewport_size(WIDE)


async def accessibility_violations(page: Page) -> list[dict[str, Any]]:
    """axe-core's violations on the page as it is (WCAG 2.1 A and AA rules)."""
    from axe_playwright_python.async_playwright import Axe

    results = await Axe().run(
        page,
        options={
            "runOnly": {"type": "tag", "values": ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa"]}
        },
    )
    return [
        {"id": v["id"], "nodes": [n["target"] for n in v["nodes"]][:5]}
        for v in results.response["violations"]
    ]


async def focus_order_follows_the_page(page: Page, stops: int = 40) -> list[str]:
    """Press Tab ``stops`` times from the first stop (the skip link): every focused element must
    come after the one before it in the document (no jumps back, no positive tabindex). Returns
    the stops."""
    await page.focus("a.skip")  # the first stop of the page
    seen: list[str] = ["skip"]
    for _ in range(stops):
        await page.keyboard.press("Tab")
        after = await page.evaluate(
            """() => {
              const a = document.activeElement;
              if (!a || a === document.body) return null;
              if (!window.__vigilLast) window.__vigilLast = document.querySelector("a.skip");
              if (a === window.__vigilLast) return [a.id || a.tagName, 2];  // a date's parts
              const rel = window.__vigilLast.compareDocumentPosition(a);
              window.__vigilLast = a;
              return [a.id || a.tagName + "." + (a.getAttribute("name") || ""),
                      (rel & Node.DOCUMENT_POSITION_FOLLOWING) ? 1 : 0];
            }"""
        )
        if after is None:
            break
        label, forward = after
        assert forward, f"focus went back to {label} after {seen[-3:]}"
        if forward == 1:
            seen.append(label)
    await page.evaluate("delete window.__vigilLast")
    return seen
