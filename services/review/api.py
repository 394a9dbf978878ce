"""The reviewer HTTP API: aiohttp handlers over a :class:`~services.review.store.ReviewStore`.

Endpoints (``prefix`` defaults to ``/review``; every one needs ``Authorization: Bearer <token>``):

``GET  {prefix}/api/me``                                 who am I (name, roles)
``GET  {prefix}/api/items?status=open,claimed&tenant=&limit=50``   queue, priority then age
``GET  {prefix}/api/items/{conversation_id}[?reveal=1]``  one item (masked unless revealed)
``POST {prefix}/api/items/{conversation_id}/claim``       ``{"item_id"?, "lease_seconds"?}``
``POST {prefix}/api/items/{conversation_id}/label``       ``{"item_id"?, "findings": [...], ...}``
``POST {prefix}/api/items/{conversation_id}/release``     ``{"item_id"?}``

Authentication comes before anything else: a missing or wrong token gets ``401`` and a valid one
without the needed role ``403``, with the same body whatever the item, so unauthenticated callers
learn nothing about which conversations exist. A state change is read-apply-write with no
``await`` in between, so two reviewers claiming one item on one worker cannot both win; with a
``locator``, requests for conversations another worker owns are forwarded there.
"""

from __future__ import annotations

import asyncio
import json
import uuid
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from typing import Any, get_args

import aiohttp
from aiohttp import web
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from schemas.review import ActionKind, LabelInput, ReviewAction, ReviewItem, ReviewStatus
from services.review.auth import Reviewer, Role, TokenAuth
from services.review.evidence import reveal_finding, reveal_turn
from services.review.metrics import ReviewMetrics
from services.review.page import page_routes
from services.review.policy import QueueSettings, band
from services.review.queue import RejectionCode, Tick, apply
from services.review.routing import Locator
from services.review.store import ReviewStore, queue_order

__all__ = ["ROUTED_HEADER", "ReviewAPI", "create_review_app", "item_view"]

ROUTED_HEADER = "X-Vigil-Routed"
MAX_LIMIT = 500
_STATUSES: tuple[str, ...] = get_args(ReviewStatus)
_REJECTION_STATUS: dict[RejectionCode, int] = {"not_found": 404, "invalid_label": 422}
_NO_STORE = {"Cache-Control": "no-store"}


class _Body(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    item_id: str | None = None


class _ClaimBody(_Body):
    lease_seconds: int | None = Field(default=None, ge=1, le=24 * 3600)


class _LabelBody(LabelInput):
    item_id: str | None = None


def _json(data: Any, status: int = 200, headers: dict[str, str] | None = None) -> web.Response:
    return web.json_response(data, status=status, headers={**_NO_STORE, **(headers or {})})


def _error(status: int, code: str, detail: Any = None) -> web.Response:
    body: dict[str, Any] = {"error": code}
    if detail is not None:
        body["detail"] = detail
    headers = {"WWW-Authenticate": 'Bearer realm="vigil-review"'} if status == 401 else None
    return _json(body, status, headers)


class _Denied(Exception):
    def __init__(self, response: web.Response) -> None:
        self.response = response


def item_view(item: ReviewItem, *, reveal: bool = False) -> dict[str, Any]:
    """The JSON a reviewer sees: never ``originals`` nor ``seen``; values only when revealed."""
    data = item.model_dump(mode="json", exclude={"originals", "seen"})
    data["band"] = band(item.priority)
    data["revealable"] = len(item.originals)
    data["revealed"] = reveal
    if reveal:
        data["turns"] = [
            reveal_turn(t, item.originals)[0].model_dump(mode="json") for t in item.turns
        ]
        data["findings"] = [
            reveal_finding(f, item.originals).model_dump(mode="json") for f in item.findings
        ]
    return data


def _summary(item: ReviewItem) -> dict[str, Any]:
    return {
        "item_id": item.item_id,
        "conversation_id": item.conversation_id,
        "tenant": item.tenant,
        "status": item.status,
        "priority": item.priority,
        "band": band(item.priority),
        "reasons": list(dict.fromkeys(r.code for r in item.reasons)),  # highest priority first
        "findings": len(item.findings),
        "created_at": item.created_at.isoformat(),
        "claimed_by": item.claimed_by,
        "lease_expires_at": item.lease_expires_at.isoformat() if item.lease_expires_at else None,
        "version": item.version,
    }


def _summary_key(s: dict[str, Any]) -> tuple[int, str, str]:
    created = datetime.fromisoformat(s["created_at"]).astimezone(UTC).isoformat()
    return queue_order(int(s["priority"]), created, str(s["conversation_id"]))


class ReviewAPI:
    """Route handlers; mount :meth:`routes` on any aiohttp application (Faust's included)."""

    def __init__(
        self,
        store: ReviewStore,
        auth: TokenAuth,
        settings: QueueSettings | None = None,
        *,
        clock: Callable[[], datetime] | None = None,
        new_id: Callable[[], str] | None = None,
        metrics: ReviewMetrics | None = None,
        locator: Locator | None = None,
        peers: Callable[[], Sequence[str]] | None = None,
        prefix: str = "/review",
        forward_timeout_seconds: float = 10.0,
    ) -> None:
        self.store = store
        self.auth = auth
        self.settings = settings or QueueSettings()
        self.clock = clock or (lambda: datetime.now(UTC))
        self.new_id = new_id or (lambda: uuid.uuid4().hex)
        self.metrics = metrics
        self.locator = locator
        self.peers = peers
        self.prefix = prefix.rstrip("/")
        self._timeout = aiohttp.ClientTimeout(total=forward_timeout_seconds)
        self._session: aiohttp.ClientSession | None = None

    def routes(self) -> list[web.RouteDef]:
        api = f"{self.prefix}/api"
        item = f"{api}/items/{{conversation_id}}"
        return [
            web.get(f"{api}/me", self.me),
            web.get(f"{api}/items", self.list_items),
            web.get(item, self.show),
            web.post(f"{item}/claim", self.claim),
            web.post(f"{item}/label", self.label),
            web.post(f"{item}/release", self.release),
        ]

    async def close(self) -> None:
        if self._session is not None:
            await self._session.close()
            self._session = None

    # --- auth and routing ----------------------------------------------------------------------

    def _require(self, request: web.Request, role: Role = "reviewer") -> Reviewer:
        reviewer = self.auth.authenticate(request.headers.get("Authorization"))
        if reviewer is None:
            raise _Denied(_error(401, "unauthorized"))
        if not reviewer.may("reviewer") or not reviewer.may(role):
            raise _Denied(_error(403, "forbidden"))
        return reviewer

    async def _route(self, request: web.Request, conversation_id: str) -> web.Response | None:
        if self.locator is None:
            return None
        owner = self.locator(conversation_id)
        if owner is None:
            return None
        if request.headers.get(ROUTED_HEADER):  # forwarded here, yet not ours: a rebalance
            return _error(503, "unavailable")
        return await self._forward(request, owner)

    async def _client(self) -> aiohttp.ClientSession:
        if self._session is None:
            self._session = aiohttp.ClientSession(timeout=self._timeout)
        return self._session

    async def _forward(self, request: web.Request, base: str) -> web.Response:
        headers = {
            k: request.headers[k] for k in ("Authorization", "Content-Type") if k in request.headers
        }
        headers[ROUTED_HEADER] = "1"
        body = await request.read()
        session = await self._client()
        try:
            async with session.request(
                request.method, base + str(request.rel_url), data=body, headers=headers
            ) as resp:
                payload = await resp.read()
                return web.Response(
                    body=payload,
                    status=resp.status,
                    content_type=resp.content_type or "application/json",
                    headers=_NO_STORE,
                )
        except (aiohttp.ClientError, TimeoutError):
            return _error(503, "unavailable")

    # --- handlers ------------------------------------------------------------------------------

    async def me(self, request: web.Request) -> web.Response:
        try:
            reviewer = self._require(request)
        except _Denied as denied:
            return denied.response
        return _json({"name": reviewer.name, "roles": sorted(reviewer.roles)})

    async def list_items(self, request: web.Request) -> web.Response:
        try:
            self._require(request)
        except _Denied as denied:
            return denied.response
        q = request.query
        raw_status = q.get("status", "open,claimed")
        statuses = None if raw_status == "all" else [s for s in raw_status.split(",") if s]
        if statuses is not None and (not statuses or any(s not in _STATUSES for s in statuses)):
            return _error(400, "invalid", "status: one or more of open, claimed, labeled, expired")
        tenant = q.get("tenant") or None
        try:
            limit = int(q.get("limit", "50"))
        except ValueError:
            limit = -1
        if not 1 <= limit <= MAX_LIMIT:
            return _error(400, "invalid", f"limit: an integer from 1 to {MAX_LIMIT}")
        # Statuses as of now: a lapsed lease is open again, an open item past its time expired.
        # The timer stores that later; until then fetch the neighbouring stored statuses too.
        fetch = None if statuses is None else set(statuses)
        if fetch is not None:
            fetch |= {"claimed"} if "open" in fetch else set()
            fetch |= {"open", "claimed"} if "expired" in fetch else set()
        items = self.store.list(statuses=fetch, tenant=tenant, limit=2 * limit + 50)  # type: ignore[arg-type]
        now = self.clock()
        current = [t.item for i in items if (t := apply(i, Tick(now), self.settings)).item]
        chosen = [i for i in current if statuses is None or i.status in statuses][:limit]
        summaries = [_summary(i) for i in chosen]
        partial = False
        if self.peers is not None and not request.headers.get(ROUTED_HEADER):
            remote, partial = await self._fan_out(request)
            summaries = sorted([*summaries, *remote], key=_summary_key)[:limit]
        return _json({"items": summaries, "partial": partial})

    async def _fan_out(self, request: web.Request) -> tuple[list[dict[str, Any]], bool]:
        assert self.peers is not None
        session = await self._client()
        headers = {ROUTED_HEADER: "1", "Authorization": request.headers.get("Authorization", "")}

        async def one(base: str) -> list[dict[str, Any]]:
            async with session.get(base + str(request.rel_url), headers=headers) as resp:
                resp.raise_for_status()
                return list((await resp.json())["items"])

        results = await asyncio.gather(*(one(p) for p in self.peers()), return_exceptions=True)
        items = [s for r in results if isinstance(r, list) for s in r]
        return items, any(isinstance(r, BaseException) for r in results)

    async def show(self, request: web.Request) -> web.Response:
        cid = request.match_info["conversation_id"]
        wants_reveal = request.query.get("reveal", "") in {"1", "true", "yes"}
        try:
            reviewer = self._require(request, "reveal" if wants_reveal else "reviewer")
        except _Denied as denied:
            return denied.response
        if (routed := await self._route(request, cid)) is not None:
            return routed
        item = self._current(cid)
        if item is None:
            return _error(404, "not_found")
        if not wants_reveal:
            return _json({"item": item_view(item)})
        action = ReviewAction(
            action_id=self.new_id(),
            kind="reveal",
            conversation_id=cid,
            item_id=item.item_id,
            reviewer=reviewer.name,
            at=self.clock(),
        )
        t = apply(item, action, self.settings)
        await self.store.publish(t.events)
        if self.metrics is not None:
            self.metrics.observe(t)
        return _json({"item": item_view(item, reveal=True)})

    def _current(self, cid: str) -> ReviewItem | None:
        """The item with the passage of time applied (and stored when that changed it)."""
        item = self.store.get(cid)
        if item is None:
            return None
        t = apply(item, Tick(self.clock()), self.settings)
        if t.changed:
            self.store.put(cid, t.item)
            if self.metrics is not None:
                self.metrics.observe(t)
        return t.item

    async def claim(self, request: web.Request) -> web.Response:
        return await self._act(request, "claim", _ClaimBody)

    async def release(self, request: web.Request) -> web.Response:
        return await self._act(request, "release", _Body)

    async def label(self, request: web.Request) -> web.Response:
        return await self._act(request, "label", _LabelBody)

    async def _act(
        self, request: web.Request, kind: ActionKind, model: type[_Body] | type[_LabelBody]
    ) -> web.Response:
        cid = request.match_info["conversation_id"]
        try:
            reviewer = self._require(request)
        except _Denied as denied:
            return denied.response
        if (routed := await self._route(request, cid)) is not None:
            return routed
        raw = await request.read()
        try:
            data = json.loads(raw) if raw.strip() else {}
        except ValueError:
            return _error(400, "invalid", "the body is not JSON")
        if not isinstance(data, dict):
            return _error(400, "invalid", "the body is a JSON object")
        try:
            body = model.model_validate(data)
        except ValidationError as exc:
            detail = [
                {"loc": ".".join(map(str, e["loc"])), "msg": e["msg"]}
                for e in exc.errors(include_input=False, include_url=False)
            ]
            return _error(422, "invalid", detail)
        extra: dict[str, Any] = {}
        if isinstance(body, _ClaimBody):
            extra["lease_seconds"] = body.lease_seconds
        if isinstance(body, _LabelBody):
            extra["label"] = LabelInput.model_validate(body.model_dump(exclude={"item_id"}))
        action = ReviewAction(
            action_id=self.new_id(),
            kind=kind,
            conversation_id=cid,
            item_id=body.item_id,
            reviewer=reviewer.name,
            at=self.clock(),
            **extra,
        )
        # Read, apply, write: no await in between, so concurrent requests serialise here.
        t = apply(self.store.get(cid), action, self.settings)
        if t.changed:
            self.store.put(cid, t.item)
        await self.store.publish(t.events)
        if self.metrics is not None:
            self.metrics.observe(t)
        if t.rejection is not None:
            status = _REJECTION_STATUS.get(t.rejection.code, 409)
            return _error(status, t.rejection.code, t.rejection.message)
        assert t.item is not None
        return _json({"item": item_view(t.item)})


def create_review_app(api: ReviewAPI) -> web.Application:
    """A standalone aiohttp application with the API and the page (tests, ``vigil review``)."""
    app = web.Application()
    app.add_routes([*api.routes(), *page_routes(api.prefix)])

    async def _close(_: web.Application) -> None:
        await api.close()

    app.on_cleanup.append(_close)
    return app
