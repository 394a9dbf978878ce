"""The reviewer API through aiohttp's test client: auth and masking per role, listing, the claim
race, leases, labels, reveals, routing to the owning worker, and the Faust-table store adapter."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import datetime, timedelta
from typing import Any
from unittest.mock import AsyncMock

import pytest
from aiohttp.test_utils import TestClient, TestServer
from prometheus_client import CollectorRegistry

from schemas.review import RevealEvent, ReviewAction, ReviewItem, ReviewLabel
from services.review.api import ROUTED_HEADER, ReviewAPI, create_review_app
from services.review.auth import ReviewAuthSettings, Reviewer, TokenAuth
from services.review.metrics import ReviewMetrics
from services.review.page import SECURITY_HEADERS
from services.review.queue import apply
from services.review.routing import faust_locator, faust_peers, owner_partition
from services.review.store import ItemQuery, MemoryStore, TableStore
from tests.unit.test_review_support import POLICY, at, leak_flag

ANN = "tok-reviewer-ann-0001"
BOB = "tok-reviewer-bob-0002"
RITA = "tok-reveal-rita-00003"
NORA = "tok-noroles-nora-0004"
REX = "tok-revealonly-rex-05"
AUTH = TokenAuth(
    {
        ANN: Reviewer(name="ann", roles=frozenset({"reviewer"})),
        BOB: Reviewer(name="bob", roles=frozenset({"reviewer"})),
        RITA: Reviewer(name="rita", roles=frozenset({"reviewer", "reveal"})),
        NORA: Reviewer(name="nora", roles=frozenset()),
        REX: Reviewer(name="rex", roles=frozenset({"reveal"})),
    }
)
EMAIL = "bob@example.com"


class Clock:
    def __init__(self) -> None:
        self.now = at(1)

    def __call__(self) -> datetime:
        return self.now


def _item(
    cid: str = "c1", minutes: float = 0, email: str = EMAIL, tenant: str = "t1"
) -> ReviewItem:
    t = apply(None, leak_flag(cid, f"{cid}-e1", minutes=minutes, email=email, tenant=tenant))
    assert t.item is not None
    return t.item


def _store(*items: ReviewItem) -> MemoryStore:
    return MemoryStore(items or [_item()])


@asynccontextmanager
async def serve(store: Any, **kw: Any) -> AsyncIterator[TestClient]:  # type: ignore[type-arg]
    kw.setdefault("clock", Clock())
    api = ReviewAPI(store, AUTH, POLICY.queue, **kw)
    async with TestClient(TestServer(create_review_app(api))) as client:
        yield client


def H(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def _label_body(item: dict[str, Any], verdict: str = "true_positive") -> dict[str, Any]:
    return {
        "item_id": item["item_id"],
        "findings": [{"finding_id": f["finding_id"], "verdict": verdict} for f in item["findings"]],
        "harm_severity": "moderate",
        "error_categories": ["personal_data_exposed"],
        "note": "checked",
    }


PURPOSE = {"purpose": "confirm the address is a real patient's"}


# --- auth ---------------------------------------------------------------------------------------

REQUESTS = [
    ("GET", "/review/api/me"),
    ("GET", "/review/api/items"),
    ("GET", "/review/api/items/c1"),
    ("GET", "/review/api/items/nope"),
    ("GET", "/review/api/schema"),
    ("POST", "/review/api/items/c1/reveal"),
    ("POST", "/review/api/items/c1/claim"),
    ("POST", "/review/api/items/nope/claim"),
    ("POST", "/review/api/items/c1/label"),
    ("POST", "/review/api/items/c1/release"),
    ("POST", "/review/api/items/c1/assign"),
]


@pytest.mark.parametrize(
    "headers",
    [{}, H("wrong-token-wrong-token"), {"Authorization": ANN}, {"Authorization": f"Basic {ANN}"}],
    ids=["none", "wrong", "no-scheme", "basic"],
)
async def test_missing_or_wrong_token_is_401_and_says_nothing(headers: dict[str, str]) -> None:
    store = _store()
    async with serve(store) as client:
        for method, path in REQUESTS:
            resp = await client.request(method, path, headers=headers, json={"x": 1})
            assert resp.status == 401, path
            assert await resp.json() == {"error": "unauthorized"}, path
            assert resp.headers["WWW-Authenticate"].startswith("Bearer")
    assert store.published == [] and store.items["c1"].status == "open"


@pytest.mark.parametrize("token", [NORA, REX], ids=["no-roles", "reveal-only"])
async def test_valid_token_without_the_role_is_403_for_existing_and_missing_items(
    token: str,
) -> None:
    async with serve(_store()) as client:
        for method, path in REQUESTS:
            resp = await client.request(method, path, headers=H(token), json={})
            assert resp.status == 403, path
            assert await resp.json() == {
                "error": "forbidden",
                "detail": "needs the reviewer role",
            }, path


async def test_each_role_sees_what_it_may_and_every_reveal_is_logged() -> None:
    store = _store()
    registry = CollectorRegistry()
    metrics = ReviewMetrics(registry)
    async with serve(store, metrics=metrics) as client:
        masked = await client.get("/review/api/items/c1", headers=H(ANN))
        text = await masked.text()
        assert masked.status == 200 and EMAIL not in text and "[EMAIL_ADDRESS]" in text
        body = json.loads(text)["item"]
        assert body["revealed"] is False and body["revealable"] == 1
        assert "originals" not in body and "seen" not in body
        old_way = await client.get("/review/api/items/c1?reveal=1", headers=H(RITA))
        assert old_way.status == 400 and EMAIL not in await old_way.text()
        denied = await client.post("/review/api/items/c1/reveal", headers=H(ANN), json=PURPOSE)
        assert denied.status == 403 and EMAIL not in await denied.text()
        assert (await denied.json())["detail"] == "needs the reveal role (to see masked values)"
        unclaimed = await client.post("/review/api/items/c1/reveal", headers=H(RITA), json=PURPOSE)
        assert unclaimed.status == 409 and (await unclaimed.json())["error"] == "not_claimed"
        assert (await client.post("/review/api/items/c1/claim", headers=H(RITA))).status == 200
        no_reason = await client.post("/review/api/items/c1/reveal", headers=H(RITA), json={})
        assert no_reason.status == 422 and (await no_reason.json())["detail"][0]["loc"] == "purpose"
        plain = await client.get("/review/api/items/c1", headers=H(RITA))
        assert EMAIL not in await plain.text()
        shown = await client.post("/review/api/items/c1/reveal", headers=H(RITA), json=PURPOSE)
        item = (await shown.json())["item"]
        assert item["revealed"] is True and item["turns"][0]["text"] == f"Write to {EMAIL} today."
        assert item["findings"][0]["evidence"] == EMAIL
    reveals = [r for r in store.published if isinstance(r, RevealEvent)]
    (ev,) = reveals
    assert ev.reviewer == "rita" and ev.at == at(1) and ev.purpose == PURPOSE["purpose"]
    assert ev.entities == ["EMAIL_ADDRESS"] and EMAIL not in ev.model_dump_json()
    rejected = [r for r in store.published if isinstance(r, ReviewAction) and r.kind == "reveal"]
    assert [r.outcome for r in rejected] == ["rejected"]  # the unclaimed try is logged too
    assert registry.get_sample_value("vigil_review_reveals_total") == 1


async def test_me_lists_name_and_roles() -> None:
    async with serve(_store()) as client:
        resp = await client.get("/review/api/me", headers=H(RITA))
        assert await resp.json() == {"name": "rita", "roles": ["reveal", "reviewer"]}


# --- listing ------------------------------------------------------------------------------------


async def test_list_sorted_by_priority_then_age_with_filters() -> None:
    old_leak = _item("old", minutes=0)  # priority 90
    new_leak = _item("new", minutes=5)  # priority 90, younger
    low = apply(
        None,
        leak_flag("low", "low-e1", email="x@y.org").model_copy(
            update={"reasons": [leak_flag().reasons[0].model_copy(update={"priority": 10})]}
        ),
    ).item
    other = _item("other", minutes=1, tenant="t2")
    assert low is not None
    store = MemoryStore([new_leak, low, old_leak, other])
    async with serve(store) as client:
        resp = await client.get("/review/api/items", headers=H(ANN))
        items = (await resp.json())["items"]
        assert [i["conversation_id"] for i in items] == ["old", "other", "new", "low"]
        assert items[0]["band"] == "critical" and items[0]["reasons"] == ["pii_leak"]
        assert EMAIL not in json.dumps(items)
        t2 = await client.get("/review/api/items?tenant=t2", headers=H(ANN))
        assert [i["conversation_id"] for i in (await t2.json())["items"]] == ["other"]
        one = await client.get("/review/api/items?limit=1", headers=H(ANN))
        assert len((await one.json())["items"]) == 1
        none = await client.get("/review/api/items?status=labeled", headers=H(ANN))
        assert (await none.json())["items"] == []
        for bad in ("status=done", "limit=0", "limit=x", "limit=501", "band=red", "since=soon"):
            resp = await client.get(f"/review/api/items?{bad}", headers=H(ANN))
            assert resp.status == 400, bad


# --- claims, leases, labels ---------------------------------------------------------------------


async def test_two_reviewers_claim_concurrently_and_one_wins() -> None:
    store = _store()
    async with serve(store) as client:
        a, b = await asyncio.gather(
            client.post("/review/api/items/c1/claim", headers=H(ANN), json={}),
            client.post("/review/api/items/c1/claim", headers=H(BOB), json={}),
        )
        statuses = sorted([a.status, b.status])
        assert statuses == [200, 409]
        loser = a if a.status == 409 else b
        assert (await loser.json())["error"] == "claimed"
    winner = store.items["c1"].claimed_by
    assert winner in {"ann", "bob"}
    outcomes = sorted(r.outcome or "" for r in store.published if isinstance(r, ReviewAction))
    assert outcomes == ["applied", "rejected"]


async def test_claim_label_and_the_item_leaves_the_open_queue() -> None:
    store = _store()
    registry = CollectorRegistry()
    metrics = ReviewMetrics(registry, rule_ids=["pii.email"])
    metrics.track(store)
    async with serve(store, metrics=metrics) as client:
        claimed = await client.post("/review/api/items/c1/claim", headers=H(ANN), json={})
        item = (await claimed.json())["item"]
        assert item["status"] == "claimed" and item["claimed_by"] == "ann"
        early = await client.post(
            "/review/api/items/c1/label", headers=H(BOB), json=_label_body(item)
        )
        assert early.status == 409 and (await early.json())["error"] == "not_claimer"
        partial = await client.post(
            "/review/api/items/c1/label", headers=H(ANN), json={"item_id": item["item_id"]}
        )
        assert partial.status == 422 and (await partial.json())["error"] == "invalid_label"
        done = await client.post(
            "/review/api/items/c1/label", headers=H(ANN), json=_label_body(item)
        )
        assert done.status == 200 and (await done.json())["item"]["status"] == "labeled"
        queue = await client.get("/review/api/items", headers=H(ANN))
        assert (await queue.json())["items"] == []
    labels = [r for r in store.published if isinstance(r, ReviewLabel)]
    assert len(labels) == 1 and labels[0].reviewer == "ann" and labels[0].note == "checked"
    get = registry.get_sample_value
    assert get("vigil_review_labels_total", {"rule": "pii.email", "verdict": "true_positive"}) == 1
    assert get("vigil_review_actions_total", {"action": "claim", "outcome": "applied"}) == 1
    assert get("vigil_review_actions_total", {"action": "label", "outcome": "rejected"}) == 2
    assert get("vigil_review_items_labeled_total", {"band": "critical"}) == 1
    assert get("vigil_review_queue_depth", {"status": "labeled"}) == 1
    assert get("vigil_review_queue_depth", {"status": "open"}) == 0


async def test_bad_bodies() -> None:
    async with serve(_store()) as client:
        url = "/review/api/items/c1/claim"
        not_json = await client.post(url, headers=H(ANN), data=b"{nope")
        assert not_json.status == 400
        not_object = await client.post(url, headers=H(ANN), json=[1])
        assert not_object.status == 400
        extra = await client.post(url, headers=H(ANN), json={"lease_seconds": 60, "x": 1})
        assert extra.status == 422 and (await extra.json())["detail"][0]["loc"] == "x"
        lease = await client.post(url, headers=H(ANN), json={"lease_seconds": 0})
        assert lease.status == 422
        missing = await client.post("/review/api/items/nope/claim", headers=H(ANN), json={})
        assert missing.status == 404 and await missing.json() == {
            "error": "not_found",
            "detail": "no review item for this conversation",
        }


async def test_a_lapsed_lease_lets_another_reviewer_claim_and_release_works() -> None:
    clock = Clock()
    store = _store()
    async with serve(store, clock=clock) as client:
        r = await client.post(
            "/review/api/items/c1/claim", headers=H(ANN), json={"lease_seconds": 60}
        )
        assert r.status == 200
        clock.now += timedelta(seconds=59)
        assert (await client.post("/review/api/items/c1/claim", headers=H(BOB))).status == 409
        clock.now += timedelta(seconds=1)
        listed = await client.get("/review/api/items?status=open", headers=H(BOB))
        assert [i["status"] for i in (await listed.json())["items"]] == ["open"]
        shown = await client.get("/review/api/items/c1", headers=H(BOB))
        assert (await shown.json())["item"]["status"] == "open"  # the read applied the lapse
        r = await client.post("/review/api/items/c1/claim", headers=H(BOB))
        assert r.status == 200 and (await r.json())["item"]["claimed_by"] == "bob"
        r = await client.post("/review/api/items/c1/release", headers=H(ANN))
        assert r.status == 409 and (await r.json())["error"] == "not_claimer"
        r = await client.post("/review/api/items/c1/release", headers=H(BOB), json={})
        assert r.status == 200 and (await r.json())["item"]["status"] == "open"
        stale = await client.post(
            "/review/api/items/c1/claim", headers=H(ANN), json={"item_id": "c1:9"}
        )
        assert stale.status == 409 and (await stale.json())["error"] == "stale"


async def test_conversation_ids_with_slashes_and_spaces_route() -> None:
    cid = "tenant/a b?c"
    store = MemoryStore([_item(cid)])
    async with serve(store) as client:
        from urllib.parse import quote

        resp = await client.get(f"/review/api/items/{quote(cid, safe='')}", headers=H(ANN))
        assert resp.status == 200 and (await resp.json())["item"]["conversation_id"] == cid


# --- routing ------------------------------------------------------------------------------------


def test_owner_partition_matches_kafkas_default_partitioner() -> None:
    # Vectors from Kafka's UtilsTest.testMurmur2 (Java ints, signed).
    vectors = {
        "21": -973932308,
        "foobar": -790332482,
        "a-little-bit-long-string": -985981536,
        "a-little-bit-longer-string": -1486304829,
        "lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8": -58897971,
        "abc": 479470107,
    }
    for key, java in vectors.items():
        for n in (1, 3, 4, 12, 1000):
            assert owner_partition(key, n) == (java & 0x7FFFFFFF) % n
    with pytest.raises(ValueError):
        owner_partition("x", 0)


async def test_requests_for_another_workers_conversation_are_forwarded_there() -> None:
    remote_store = MemoryStore([_item("far")])
    async with serve(remote_store) as remote:
        base = str(remote.make_url("")).rstrip("/")
        local_store = MemoryStore([_item("near")])

        def locate(cid: str) -> str | None:
            return base if cid == "far" else None

        async with serve(local_store, locator=locate, peers=lambda: [base]) as local:
            shown = await local.get("/review/api/items/far", headers=H(ANN))
            assert shown.status == 200 and (await shown.json())["item"]["conversation_id"] == "far"
            claim = await local.post(
                "/review/api/items/far/claim", headers=H(ANN), json={"lease_seconds": 120}
            )
            assert claim.status == 200
            assert remote_store.items["far"].claimed_by == "ann"
            lease = remote_store.items["far"].lease_expires_at
            assert lease is not None and lease - remote_store.items["far"].updated_at == timedelta(
                seconds=120
            )  # the body travelled too
            assert "far" not in local_store.items
            unauth = await local.get("/review/api/items/far")
            assert unauth.status == 401  # checked before routing: no oracle
            listing = await local.get("/review/api/items?status=all", headers=H(ANN))
            body = await listing.json()
            assert sorted(i["conversation_id"] for i in body["items"]) == ["far", "near"]
            assert body["partial"] is False
            loop = await local.get("/review/api/items/far", headers={**H(ANN), ROUTED_HEADER: "1"})
            assert loop.status == 503


async def test_an_unreachable_peer_makes_the_list_partial() -> None:
    async with serve(_store(), peers=lambda: ["http://127.0.0.1:9"]) as client:
        resp = await client.get("/review/api/items", headers=H(ANN))
        body = await resp.json()
        assert resp.status == 200 and body["partial"] is True and len(body["items"]) == 1


def test_faust_locator_and_peers_over_a_fake_app() -> None:
    from yarl import URL

    class Router:
        def key_store(self, table: str, key: str) -> URL:
            if key == "unknown":
                raise KeyError(key)
            return URL("http://w2:6066" if key == "far" else "http://w1:6066")

        def table_metadata(self, table: str) -> dict[str, dict[str, list[int]]]:
            return {
                "http://w1:6066": {"t": [0]},
                "http://w2:6066": {"t": [1]},
                "http://w3:6066": {"t": []},
            }

    class Conf:
        canonical_url = URL("http://w1:6066")

    class App:
        router = Router()
        conf = Conf()

    locate = faust_locator(App(), "review")
    assert (locate("far"), locate("near"), locate("unknown")) == ("http://w2:6066", None, None)
    assert faust_peers(App(), "review")() == ["http://w2:6066"]


# --- the table store ----------------------------------------------------------------------------


async def test_table_store_over_a_dict_with_topic_senders() -> None:
    table: dict[str, Any] = {}
    actions, labels, reveals = AsyncMock(), AsyncMock(), AsyncMock()
    store = TableStore(table, actions=actions, labels=labels, reveals=reveals)
    item = _item("c1")
    store.put("c1", item)
    store.put("c2", _item("c2", minutes=3))
    assert json.loads(table["c1"])["item_id"] == "c1:1"  # JSON bytes, as a keyed store holds
    assert store.get("c1") == item and store.get("zz") is None
    assert [i.conversation_id for i in store.list(ItemQuery(statuses=frozenset({"open"})))] == [
        "c1",
        "c2",
    ]
    assert store.counts() == {"open": 2}
    async with serve(store) as client:
        assert (await client.post("/review/api/items/c1/claim", headers=H(RITA))).status == 200
        r = await client.post("/review/api/items/c1/reveal", headers=H(RITA), json=PURPOSE)
        assert r.status == 200
        assert (await client.post("/review/api/items/c1/release", headers=H(RITA))).status == 200
        r = await client.post("/review/api/items/c1/claim", headers=H(ANN), json={})
        assert r.status == 200
        body = (await r.json())["item"]
        r = await client.post("/review/api/items/c1/label", headers=H(ANN), json=_label_body(body))
        assert r.status == 200
    assert json.loads(table["c1"])["status"] == "labeled"
    assert store.get("c1").status == "labeled"  # type: ignore[union-attr]
    assert actions.await_count == 4 and labels.await_count == 1 and reveals.await_count == 1
    call = labels.await_args
    assert call is not None and call.kwargs["key"] == b"c1"
    assert ReviewLabel.model_validate_json(call.kwargs["value"]).item_id == "c1:1"
    store.put("c1", None)
    assert "c1" not in table and store.get("c1") is None


# --- configuration and page ---------------------------------------------------------------------


def test_tokens_from_environment_and_file(tmp_path: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(
        "VIGIL_REVIEW_TOKENS", json.dumps({ANN: {"name": "ann", "roles": ["reviewer"]}})
    )
    path = tmp_path / "tokens.yaml"
    path.write_text(f"{RITA}: {{name: rita, roles: [reviewer, reveal]}}\n")
    monkeypatch.setenv("VIGIL_REVIEW_TOKENS_FILE", str(path))
    settings = ReviewAuthSettings()
    assert ANN not in repr(settings)
    auth = TokenAuth.from_settings(settings)
    assert auth.authenticate(f"Bearer {ANN}") == Reviewer(name="ann")
    rita = auth.authenticate(f"bearer {RITA}")
    assert rita is not None and rita.may("reveal") and RITA not in repr(auth)
    assert auth.authenticate("Bearer short") is None and auth.authenticate(None) is None
    with pytest.raises(ValueError, match="shorter than 16"):
        ReviewAuthSettings(tokens={"short": Reviewer(name="x")})


async def test_the_page_and_its_assets_need_no_token_and_hold_no_data() -> None:
    async with serve(_store()) as client:
        page = await client.get("/review/")
        html = await page.text()
        assert page.status == 200 and 'data-api="/review/api"' in html
        assert (
            page.headers["Content-Security-Policy"] == SECURITY_HEADERS["Content-Security-Policy"]
        )
        assert "c1" not in html and EMAIL not in html
        js = await client.get("/review/static/review.js")
        assert js.status == 200 and js.content_type == "text/javascript"
        assert ".innerHTML" not in await js.text()  # chat text only as text nodes
        assert (await client.get("/review/static/review.css")).status == 200
        assert (await client.get("/review/static/../api.py")).status == 404
        assert (await client.get("/review/static/secret.txt")).status == 404
