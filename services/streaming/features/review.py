"""The review queue in the worker (SPEC §8, ``docs/review.md``): thin wiring over
:mod:`services.review.core`.

Intake runs inside the dataflow (every screened or checked event, on the conversation's
partition); its outcomes feed :class:`~services.review.metrics.ReviewMetrics`. This module adds
the reviewers' side: the API and the page on the worker's web server, a timer that expires open
items, takes lapsed leases back and purges old ones, and the topics the API publishes to
(``vigil.review.actions``, ``vigil.review.labels``). Items live in the worker's ``state`` table
under ``<partition>|review-items|<conversation>``, the partition Kafka's default partitioner gives
the conversation id — where its events are, when producers use it (Java, kafka-python, aiokafka).

**Consistency.** A handler reads, applies and writes with no ``await`` in between, and flushes
the write at once. The API answers ``503`` while the worker rebalances or recovers its table,
and answers a state change only once its changelog record is acknowledged, so an answered claim
or label survives a SIGKILL. Requests for a conversation another worker owns are forwarded there.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable, Iterator, MutableMapping, Sequence
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from aiohttp import web

from services.checking import GROUNDING_RULES
from services.dataflow.partitioning import partition_of
from services.review.api import ReviewAPI
from services.review.auth import TokenAuth
from services.review.metrics import FACT_CHECK_RULE, ReviewMetrics
from services.review.page import page_routes
from services.review.queue import ReviewRecord
from services.review.routing import faust_locator, faust_peers
from services.review.settings import (
    ReviewConfigError,
    load_review_policy,
    load_reviewer_config,
    load_settings,
    load_worker_settings,
)
from services.review.store import TableStore
from services.settings import Settings
from services.streaming.runner import States
from services.streaming.state import STATE_TABLE, TableBackend

if TYPE_CHECKING:
    from services.streaming.app import WorkerContext

__all__ = [
    "ITEMS",
    "OwnedItems",
    "ReviewConfigError",
    "register",
    "topics",
]

ITEMS = "review-items"
log = logging.getLogger("vigil.review")


def topics(settings: Settings) -> list[tuple[str, bool]]:
    """The review topics for ``vigil topics create``: ``(name, compacted)``."""
    rs = load_settings()
    return [(rs.actions_topic, False), (rs.labels_topic, False)]


class OwnedItems(MutableMapping[str, bytes]):
    """The review items of the partitions this worker owns, as one mapping (for the API).

    Reads and writes go to the conversation's partition; a write is flushed at once, so the API
    can wait for its changelog record. Iteration covers the owned partitions only.
    """

    def __init__(self, states: States, owned: Callable[[], set[int]], partitions: int) -> None:
        self.states = states
        self.owned = owned
        self.partitions = partitions

    def _store(self, cid: str) -> Any:
        return self.states.store(ITEMS, partition_of(cid, self.partitions))

    def __getitem__(self, key: str) -> bytes:
        value = self._store(key).get(key)
        if value is None:
            raise KeyError(key)
        return value  # type: ignore[no-any-return]

    def __setitem__(self, key: str, value: bytes) -> None:
        store = self._store(key)
        store.now = time.time()
        store[key] = value
        store.flush()

    def __delitem__(self, key: str) -> None:
        store = self._store(key)
        del store[key]
        store.flush()

    def __contains__(self, key: object) -> bool:
        return isinstance(key, str) and self._store(key).get(key) is not None

    def __iter__(self) -> Iterator[str]:
        keys: list[str] = []
        for p in sorted(self.owned()):
            keys += list(self.states.store(ITEMS, p))
        return iter(keys)

    def __len__(self) -> int:
        return sum(1 for _ in self)


class _AckedStore(TableStore):
    """Publishing waits first for the changelog writes of the conversations it is about. The API
    publishes after every state change, so it answers only once the change is durable."""

    def __init__(
        self,
        view: OwnedItems,
        backend: TableBackend,
        timeout_s: float,
        **senders: Any,
    ) -> None:
        super().__init__(view, **senders)
        self._backend = backend
        self._partitions = view.partitions
        self._timeout_s = timeout_s

    async def publish(self, records: Sequence[ReviewRecord]) -> None:
        for cid in dict.fromkeys(r.conversation_id for r in records):
            fut = self._backend.pending(partition_of(cid, self._partitions), ITEMS, cid)
            if fut is None:
                continue
            try:
                await asyncio.wait_for(asyncio.shield(fut), self._timeout_s)
            except Exception as exc:  # the record stays buffered; answer anyway
                log.warning("review: changelog write not acknowledged: %s", type(exc).__name__)
        await super().publish(records)


Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


def _gated(app: Any, serving: Callable[[Any], bool], handler: Handler) -> Handler:
    async def handle(request: web.Request) -> web.StreamResponse:
        if not serving(app):
            return web.json_response(
                {"error": "unavailable"},
                status=503,
                headers={"Retry-After": "2", "Cache-Control": "no-store"},
            )
        return await handler(request)

    return handle


def register(ctx: WorkerContext) -> None:
    """Metrics of intake, the timer, the API and its topics."""
    from services.streaming.app import owned_partitions, serving

    app, settings, flow, runner = ctx.app, ctx.settings, ctx.flow, ctx.runner
    rs = load_worker_settings()
    policy = load_review_policy(rs)
    schema, view_context = load_reviewer_config(rs, policy)
    tokens = rs.all_tokens()
    auth = TokenAuth(tokens)
    if not tokens:
        log.warning("review: no reviewer tokens configured (VIGIL_REVIEW_TOKENS): API answers 401")
    parts = settings.topic_partitions
    actions_topic = app.topic(rs.actions_topic, key_type=bytes, value_type=bytes)
    labels_topic = app.topic(rs.labels_topic, key_type=bytes, value_type=bytes)
    state_topic = f"{settings.app_id}-{STATE_TABLE}-changelog"

    def owned() -> set[int]:
        return owned_partitions(app, state_topic)

    view = OwnedItems(runner.states, owned, parts)
    store = _AckedStore(
        view,
        ctx.backend,
        rs.write_timeout_seconds,
        encode=flow.review.bound.encode_item,
        cache_bytes=rs.cache_bytes,
        # Looked up at call time, so tests can replace ``topic.send``.
        actions=lambda **kw: actions_topic.send(**kw),
        labels=lambda **kw: labels_topic.send(**kw),
    )
    rule_ids = [r.id for r in flow.pipeline.engine.rules.values()]
    metrics = ReviewMetrics(ctx.registry, rule_ids=[*rule_ids, *GROUNDING_RULES, FACT_CHECK_RULE])
    metrics.track(store)

    def observe(outcome: Any) -> None:
        metrics.observe(outcome.transition, outcome.admission)

    runner.on_review = observe

    async def review_tick() -> None:
        if not serving(app):
            return
        now = datetime.now(UTC)
        for p in sorted(owned()):
            try:
                st = runner.partition_state(p)
                st.set_clock(time.time())
                for t in flow.review.tick(st.review, now):
                    metrics.observe(t)
                st.review.items.flush()
            except Exception as exc:  # the timer must live on
                metrics.errors.labels("tick").inc()
                log.error("review timer failed on partition %d: %s", p, type(exc).__name__)

    app.timer(rs.tick_seconds, name="vigil.review.tick")(review_tick)

    api = ReviewAPI(
        store,
        auth,
        policy.queue,
        schema=schema,
        view=view_context,
        metrics=metrics,
        locator=faust_locator(app, STATE_TABLE, parts),
        peers=faust_peers(app, STATE_TABLE),
    )
    routes = [
        web.route(r.method, r.path, _gated(app, serving, r.handler), **r.kwargs)
        for r in api.routes()
    ]
    web_app: web.Application = app.web.web_app  # type: ignore[attr-defined]  # aiohttp driver
    web_app.add_routes([*routes, *page_routes(api.prefix)])

    async def close_api(_: web.Application) -> None:
        await api.close()

    web_app.on_cleanup.append(close_api)
    ctx.topics.update(review_actions=actions_topic, review_labels=labels_topic)
    app.vigil_review = store  # type: ignore[attr-defined]
