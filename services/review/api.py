"""The reviewer HTTP API: aiohttp handlers over a :class:`~services.review.store.ReviewStore`.

Endpoints (``prefix`` defaults to ``/review``; every one needs ``Authorization: Bearer <token>``):

``GET  {prefix}/api/me``                         who am I (name, roles)
``GET  {prefix}/api/schema``                     the label schema (to draw the label form)
``GET  {prefix}/api/items?status=&tenant=&reason=&rule=&band=&since=&until=&mine=1&limit=``
``GET  {prefix}/api/items/{conversation_id}``     one item, masked, with its evidence
``POST {prefix}/api/items/{conversation_id}/claim``    ``{"item_id"?, "lease_seconds"?}``
``POST {prefix}/api/items/{conversation_id}/label``    ``{"item_id"?, "corrects"?, ...}``
``POST {prefix}/api/items/{conversation_id}/release``  ``{"item_id"?}``
``POST {prefix}/api/items/{conversation_id}/assign``   ``{"item_id"?, "assignee", "hours"?}``
``POST {prefix}/api/items/{conversation_id}/reveal``   ``{"item_id"?, "purpose"}`` (role reveal)

Authentication comes before anything else: a missing or wrong token gets ``401`` and a valid one
without the needed role ``403`` (naming the role), with the same body whatever the item, so
unauthenticated callers learn nothing about which conversations exist. Every error is JSON
(``{"error", "detail"?}``), also for unknown paths (404), wrong methods (405) and bodies over
the size limit (413). A state change is read-apply-write with no ``await`` in between, so two
reviewers claiming one item on one worker cannot both win; with a ``locator``, requests for
conversations another worker owns are forwarded there.
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
from services.review.labels import LabelSchema
from services.review.metrics import ReviewMetrics
from services.review.page import page_routes
from services.review.policy import BANDS, QueueSettings, band
from services.review.queue import RejectionCode, Tick, apply, default_schema
from services.review.routing import Locator
from services.review.store import ItemQuery, ReviewStore, queue_order
from services.review.view import ViewContext, item_view

__all__ = ["ROUTED_HEADER", "ReviewAPI", "create_review_app", "item_view", "summary"]

ROUTED_HEADER = "X-Vigil-Routed"
MAX_LIMIT = 500
_STATUSES: tuple[str, ...] = get_args(ReviewStatus)
_REJECTION_STATUS: dict[RejectionCode, int] = {"not_found": 404, "invalid_label": 422}
_NO_STORE = {"Cache-Control": "no-store"}
_ROLE_NEED = {
    "reviewer": "the reviewer role",
    "reveal": "the reveal role (to see masked values)",
    "assign": "the assign role (to assign items to others)",
}


class _Body(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    item_id: str | None = None


class _ClaimBody(_Body):
    lease_seconds: int | None = Field(default=None, ge=1, le=24 * 3600)


class _LabelBody(LabelInput):
    item_id: str | None = None


class _AssignBody(_Body):
    assignee: str | None
    hours: float | None = Field(default=None, gt=0, le=90 * 24)


class _RevealBody(_Body):
    purpose: str = Field(min_length=8, max_length=500)


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


def summary(item: ReviewItem) -> dict[str, Any]:
    """One row of the queue."""
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
        "assigned_to": item.assigned_to,
        "labeled_by": item.labeled_by,
        "labels": len(item.labels),
        "reviews_required": item.reviews_required,
        "disagreement": bool(item.disagreement),
        "version": item.version,
    }


def _rank(s: dict[str, Any], me: str | None) -> int:
    """Mine first (claimed by or assigned to me), then items anyone may take, then others'."""
    if me is not None and me in (s.get("claimed_by"), s.get("assigned_to")):
        return 0
    if s.get("claimed_by") or (s.get("assigned_to") not in (None, me)):
        return 2
    return 1


def _summary_key(s: dict[str, Any], me: str | None = None) -> tuple[int, int, str, str]:
    created = datetime.fromisoformat(s["created_at"]).astimezone(UTC).isoformat()
    return (_rank(s, me), *queue_order(int(s["priority"]), created, str(s["conversation_id"])))


def _when(value: str, field: str) -> datetime:
    """A date (``2026-11-02``, local midnight as UTC) or an RFC 3339 time."""
    try:
        moment = datetime.fromisoformat(value)
    except ValueError:
        msg = f"{field}: a date (2026-11-02) or a time (2026-11-02T10:00:00+01:00)"
        raise ValueError(msg) from None
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


def _csv(value: str | None) -> list[str] | None:
    items = [v.strip() for v in (value or "").split(",") if v.strip()]
    return items or None


class ReviewAPI:
    """Route handlers; mount :meth:`routes` on any aiohttp application (Faust's included)."""

    def __init__(
        self,
        store: ReviewStore,
        auth: TokenAuth,
        settings: QueueSettings | None = None,
        *,
        schema: LabelSchema | None = None,
        view: ViewContext | None = None,
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
        self.schema = schema or default_schema()
        self.view = view or ViewContext()
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
        known = [
            web.get(f"{api}/me", self.me),
            web.get(f"{api}/schema", self.label_schema),
            web.get(f"{api}/items", self.list_items),
            web.get(item, self.show),
            web.post(f"{item}/claim", self.claim),
            web.post(f"{item}/label", self.label),
            web.post(f"{item}/release", self.release),
            web.post(f"{item}/assign", self.assign),
            web.post(f"{item}/reveal", self.reveal),
        ]
        # Every other method on a known path (405), and every unknown path (404), in JSON.
        others = [web.route("*", r.path, self.method_not_allowed) for r in known]
        return [*known, *others, web.route("*", f"{api}/{{tail:.*}}", self.not_found)]

    async def close(self) -> None:
        if self._session is not None:
            await self._session.close()
            self._session = None

    # --- auth and routing ----------------------------------------------------------------------

    def _require(self, request: web.Request, role: Role = "reviewer") -> Reviewer:
        reviewer = self.auth.authenticate(request.headers.get("Authorization"))
        if reviewer is None:
            raise _Denied(_error(401, "unauthorized"))
        for needed in dict.fromkeys(("reviewer", role)):
            if not reviewer.may(needed):  # type: ignore[arg-type]
                raise _Denied(_error(403, "forbidden", f"needs {_ROLE_NEED[needed]}"))
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

    async def not_found(self, request: web.Request) -> web.Response:
        return _error(404, "no_such_endpoint", f"no API endpoint {request.path}")

    async def method_not_allowed(self, request: web.Request) -> web.Response:
        resource = request.match_info.route.resource
        allowed = sorted({r.method for r in resource} - {"*"}) if resource is not None else []
        resp = _error(
            405,
            "method_not_allowed",
            f"{request.method} is not allowed here; use {', '.join(allowed)}",
        )
        resp.headers["Allow"] = ", ".join(allowed)
        return resp

    async def me(self, request: web.Request) -> web.Response:
        try:
            reviewer = self._require(request)
        except _Denied as denied:
            return denied.response
        return _json({"name": reviewer.name, "roles": sorted(reviewer.roles)})

    async def label_schema(self, request: web.Request) -> web.Response:
        try:
            self._require(request)
        except _Denied as denied:
            return denied.response
        return _json({"schema": self.schema.view()})

    def _query(self, q: Any, me: str) -> tuple[ItemQuery, set[str] | None, int]:
        """The store query, the statuses as of now, and the limit; ``ValueError`` names the
        parameter that is wrong."""
        raw_status = q.get("status", "open,claimed")
        statuses = None if raw_status == "all" else set(_csv(raw_status) or [])
        if statuses is not None and (not statuses or statuses - set(_STATUSES)):
            raise ValueError("status: one or more of open, claimed, labeled, expired, or all")
        bands = _csv(q.get("band"))
        if bands is not None and set(bands) - set(BANDS):
            raise ValueError("band: one or more of " + ", ".join(BANDS))
        try:
            limit = int(q.get("limit", "50"))
        except ValueError:
            limit = -1
        if not 1 <= limit <= MAX_LIMIT:
            raise ValueError(f"limit: an integer from 1 to {MAX_LIMIT}")
        rules = _csv(q.get("rule"))  # shell globs: grounding.*
        disagreement = q.get("disagreement")
        # Statuses as of now: a lapsed lease is open again, an open item past its time expired.
        # The timer stores that later; until then fetch the neighbouring stored statuses too.
        fetch = None if statuses is None else set(statuses)
        if fetch is not None:
            fetch |= {"claimed"} if "open" in fetch else set()
            fetch |= {"open", "claimed"} if "expired" in fetch else set()
        query = ItemQuery(
            statuses=frozenset(fetch) if fetch is not None else None,
            tenant=q.get("tenant") or None,
            reasons=frozenset(_csv(q.get("reason")) or []) or None,
            rules=tuple(rules) if rules else None,
            bands=frozenset(bands) if bands else None,
            since=_when(q["since"], "since") if q.get("since") else None,
            until=_when(q["until"], "until") if q.get("until") else None,
            person=me if q.get("mine") in ("1", "true", "yes") else None,
            disagreement=None if disagreement is None else disagreement in ("1", "true", "yes"),
        )
        return query, statuses, limit

    async def list_items(self, request: web.Request) -> web.Response:
        try:
            reviewer = self._require(request)
        except _Denied as denied:
            return denied.response
        try:
            query, statuses, limit = self._query(request.query, reviewer.name)
        except ValueError as exc:
            return _error(400, "invalid", str(exc))
        items = self.store.list(query, limit=2 * limit + 50)
        now = self.clock()
        current = [t.item for i in items if (t := apply(i, Tick(now), self.settings)).item]
        chosen = [
            i
            for i in current
            if (statuses is None or i.status in statuses)
            and (query.person is None or query.matches(i.model_dump(mode="json")))
        ]
        summaries = sorted(
            (summary(i) for i in chosen), key=lambda s: _summary_key(s, reviewer.name)
        )[:limit]
        partial = False
        if self.peers is not None and not request.headers.get(ROUTED_HEADER):
            remote, partial = await self._fan_out(request)
            summaries = sorted([*summaries, *remote], key=lambda s: _summary_key(s, reviewer.name))[
                :limit
            ]
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
        try:
            self._require(request)
        except _Denied as denied:
            return denied.response
        if request.query.get("reveal"):
            return _error(
                400,
                "invalid",
                "reveal with POST .../reveal and a purpose, while you hold the claim",
            )
        if (routed := await self._route(request, cid)) is not None:
            return routed
        item = self._current(cid)
        if item is None:
            return _error(404, "not_found")
        return _json({"item": item_view(item, ctx=self.view)})

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

    async def assign(self, request: web.Request) -> web.Response:
        return await self._act(request, "assign", _AssignBody)

    async def reveal(self, request: web.Request) -> web.Response:
        return await self._act(request, "reveal", _RevealBody, role="reveal")

    async def _body(self, request: web.Request, model: type[_Body]) -> _Body | web.Response:
        try:
            raw = await request.read()
        except web.HTTPRequestEntityTooLarge:
            return _error(413, "too_large", f"the body is over {request.client_max_size} bytes")
        try:
            data = json.loads(raw) if raw.strip() else {}
        except ValueError:
            return _error(400, "invalid", "the body is not JSON")
        if not isinstance(data, dict):
            return _error(400, "invalid", "the body is a JSON object")
        try:
            return model.model_validate(data)
        except ValidationError as exc:
            detail = [
                {"loc": ".".join(map(str, e["loc"])), "msg": e["msg"]}
                for e in exc.errors(include_input=False, include_url=False)
            ]
            return _error(422, "invalid", detail)

    async def _act(
        self,
        request: web.Request,
        kind: ActionKind,
        model: type[_Body] | type[_LabelBody],
        *,
        role: Role = "reviewer",
    ) -> web.Response:
        cid = request.match_info["conversation_id"]
        try:
            reviewer = self._require(request, role)
        except _Denied as denied:
            return denied.response
        if (routed := await self._route(request, cid)) is not None:
            return routed
        body = await self._body(request, model)  # type: ignore[arg-type]
        if isinstance(body, web.Response):
            return body
        extra: dict[str, Any] = {}
        if isinstance(body, _ClaimBody):
            extra["lease_seconds"] = body.lease_seconds
        elif isinstance(body, _LabelBody):
            extra["label"] = LabelInput.model_validate(body.model_dump(exclude={"item_id"}))
        elif isinstance(body, _AssignBody):
            current = self.store.get(cid)
            others = {body.assignee, current.assigned_to if current else None} - {
                None,
                reviewer.name,
            }
            if others and not reviewer.may("assign"):
                return _error(403, "forbidden", f"needs {_ROLE_NEED['assign']}")
            extra |= {"assignee": body.assignee, "assignment_hours": body.hours}
        elif isinstance(body, _RevealBody):
            extra["purpose"] = body.purpose
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
        t = apply(self.store.get(cid), action, self.settings, schema=self.schema)
        if t.changed:
            self.store.put(cid, t.item)
        await self.store.publish(t.events)
        if self.metrics is not None:
            self.metrics.observe(t)
        if t.rejection is not None:
            status = _REJECTION_STATUS.get(t.rejection.code, 409)
            return _error(status, t.rejection.code, t.rejection.message)
        assert t.item is not None
        return _json({"item": item_view(t.item, reveal=kind == "reveal", ctx=self.view)})


def create_review_app(api: ReviewAPI, *, client_max_size: int = 1024**2) -> web.Application:
    """A standalone aiohttp application with the API and the page (tests, ``vigil review``)."""
    app = web.Application(client_max_size=client_max_size)
    app.add_routes([*api.routes(), *page_routes(api.prefix)])

    async def _close(_: web.Application) -> None:
        await api.close()

    app.on_cleanup.append(_close)
    return app
