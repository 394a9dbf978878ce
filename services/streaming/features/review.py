"""The review queue in the worker (SPEC §8, ``docs/review.md``).

Flags from screening and from the claim checks go through intake (policy, tenant cap, reducer)
into a Faust table whose changelog is the compacted topic ``<app_id>.review`` (``vigil.review``
with the default app id), so the queue survives restarts and spreads over partitions. Reviewers
use the API and the page on the worker's web server; their actions, reveals and labels are
events on ``vigil.review.actions`` and ``vigil.review.labels``. Settings: ``VIGIL_REVIEW_*``
(:class:`ReviewWorkerSettings`).

**Partitioning.** Every write of the review table goes to ``owner_partition(cid, P)``: murmur2 of
the raw UTF-8 conversation id, Kafka's default partitioner, hence the partition of the
conversation's events in ``chat.events`` when producers use it (Java, kafka-python, aiokafka;
``murmur2_random`` in librdkafka). The hooks in the two agents, the web handlers and the timer
thus write the same partition without ``current_event()``. (Faust's ``use_partitioner=True``
would hash the table's *JSON-serialized* key with the producer's topic metadata instead: another
partition, and an error while the producer has no metadata for the topic.) An event seen on
another partition is logged once: the item then lives on another worker than its events.

**Consistency.** Hooks and handlers read, apply and write with no ``await`` in between. The API
answers ``503`` while the worker rebalances or recovers its tables (a claim applied to a
half-recovered item could later overwrite a newer state), and answers a state change only once
its changelog record is acknowledged, so an answered claim or label survives a SIGKILL. The
hooks' writes are flushed before Faust commits the input offsets: at least once, and a
re-delivered flag changes nothing.
"""

from __future__ import annotations

import asyncio
import logging
from collections import OrderedDict, deque
from collections.abc import Awaitable, Callable, Iterator, MutableMapping, Sequence
from datetime import UTC, datetime
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

from aiohttp import web
from faust.tables.table import Table as FaustTable
from faust.types import CodecArg, FutureMessage
from pydantic import Field, ValidationError
from pydantic_settings import SettingsConfigDict, SettingsError

from schemas.events import ChatEvent
from schemas.outputs import Finding
from schemas.review import Turn
from schemas.verdicts import GroundingReport
from services.checking import GROUNDING_RULES
from services.review.api import ReviewAPI
from services.review.auth import ReviewAuthSettings, TokenAuth
from services.review.caps import CapCounter, counter_key
from services.review.evidence import make_flag, mask_turn
from services.review.intake import intake
from services.review.metrics import FACT_CHECK_RULE, ReviewMetrics
from services.review.page import page_routes
from services.review.policy import DEFAULT_POLICY_PATH, TriagePolicy, load_policy
from services.review.queue import ReviewRecord, Tick, apply
from services.review.routing import faust_locator, faust_peers, owner_partition
from services.review.store import TableStore
from services.settings import Settings

if TYPE_CHECKING:
    from services.streaming.app import WorkerContext

__all__ = [
    "CAPS_TABLE",
    "TABLE",
    "KeyPartitionedTable",
    "OwnedView",
    "ReviewConfigError",
    "ReviewQueue",
    "ReviewWorkerSettings",
    "load_settings",
    "register",
    "topics",
]

TABLE = "review"
CAPS_TABLE = "review-caps"
log = logging.getLogger("vigil.review")


class ReviewConfigError(ValueError):
    """A ``VIGIL_REVIEW_*`` setting or the policy is invalid (the message holds no token)."""


class ReviewWorkerSettings(ReviewAuthSettings):
    """``VIGIL_REVIEW_*``: tokens (``TOKENS`` / ``TOKENS_FILE``), policy, topics and timing."""

    model_config = SettingsConfigDict(env_prefix="VIGIL_REVIEW_", extra="ignore", frozen=True)

    policy_file: Path = DEFAULT_POLICY_PATH
    #: The review table's changelog (compacted). Default ``<app_id>.review``: the queue is the
    #: app's state, so two apps never share one (like Faust's ``<app_id>-<table>-changelog``).
    topic: str | None = None
    actions_topic: str = "vigil.review.actions"
    labels_topic: str = "vigil.review.labels"
    #: Overrides the policy's ``queue.lease_seconds`` (at most its ``max_lease_seconds``).
    lease_seconds: int | None = Field(default=None, ge=1)
    #: How often the timer expires open items, takes lapsed leases back and purges old items.
    tick_seconds: float = Field(default=60.0, gt=0)
    #: Conversations whose last masked turns are kept in memory as context for new items.
    context_conversations: int = Field(default=20_000, ge=0)
    #: How long an API state change waits for its changelog record before answering anyway.
    write_timeout_seconds: float = Field(default=10.0, gt=0)

    def table_topic(self, app_id: str) -> str:
        return self.topic or f"{app_id}.review"


def _redacted(exc: ValidationError) -> str:
    """Field errors without inputs; a token used as a mapping key is replaced too."""
    parts = []
    for e in exc.errors(include_input=False, include_url=False):
        loc = [str(p) for p in e["loc"]]
        if loc[:1] == ["tokens"] and len(loc) > 1:
            loc[1] = "<token>"
        parts.append(f"{'.'.join(loc) or 'settings'}: {e['msg']}")
    return "; ".join(parts)


def load_settings() -> ReviewWorkerSettings:
    try:
        return ReviewWorkerSettings()
    except ValidationError as exc:
        raise ReviewConfigError(f"VIGIL_REVIEW_*: {_redacted(exc)}") from None
    except SettingsError as exc:  # names the field and the source, never the value
        raise ReviewConfigError(f"VIGIL_REVIEW_*: {exc}") from None


def load_review_policy(rs: ReviewWorkerSettings) -> TriagePolicy:
    policy = load_policy(rs.policy_file)
    if rs.lease_seconds is None:
        return policy
    if rs.lease_seconds > policy.queue.max_lease_seconds:
        raise ReviewConfigError(
            f"VIGIL_REVIEW_LEASE_SECONDS={rs.lease_seconds} is above the policy's "
            f"queue.max_lease_seconds ({policy.queue.max_lease_seconds})"
        )
    queue = policy.queue.model_copy(update={"lease_seconds": rs.lease_seconds})
    return policy.model_copy(update={"queue": queue})


def topics(settings: Settings) -> list[tuple[str, bool]]:
    """The review topics for ``vigil topics create``: ``(name, compacted)``."""
    rs = load_settings()
    return [
        (rs.table_topic(settings.app_id), True),
        (f"{settings.app_id}-{CAPS_TABLE}-changelog", True),
        (rs.actions_topic, False),
        (rs.labels_topic, False),
    ]


class KeyPartitionedTable(FaustTable):  # type: ignore[misc]
    """A Faust table whose writes go to ``partition_of(key)``, inside stream iteration or not,
    and which keeps each key's last pending changelog write (``last_write``) to wait for."""

    def __init__(self, app: Any, *, partition_of: Callable[[Any], int], **kwargs: Any) -> None:
        super().__init__(app, **kwargs)
        self.partition_of = partition_of
        self.last_write: dict[Any, FutureMessage] = {}

    def partition_for_key(self, key: Any) -> int | None:
        return self.partition_of(key)

    def send_changelog(
        self,
        partition: int | None,
        key: Any,
        value: Any,
        key_serializer: CodecArg | None = None,
        value_serializer: CodecArg | None = None,
    ) -> FutureMessage:
        fut = super().send_changelog(partition, key, value, key_serializer, value_serializer)
        self.last_write[key] = fut
        fut.add_done_callback(partial(self._written, key))
        return fut

    def _written(self, key: Any, fut: Any) -> None:
        if self.last_write.get(key) is fut:
            del self.last_write[key]


class OwnedView(MutableMapping[str, Any]):
    """The table as the store sees it: reads and writes go to the table; iteration covers only
    the partitions ``owned()`` returns (a memory table also holds standby copies of other
    workers' partitions, and keys of partitions this worker no longer owns)."""

    def __init__(
        self, table: MutableMapping[str, Any], owned: Callable[[], set[int]], partitions: int
    ) -> None:
        self.table = table
        self.owned = owned
        self.partitions = partitions

    def __getitem__(self, key: str) -> Any:
        value = self.table.get(key)
        if value is None:
            raise KeyError(key)
        return value

    def __setitem__(self, key: str, value: Any) -> None:
        self.table[key] = value

    def __delitem__(self, key: str) -> None:
        del self.table[key]

    def __contains__(self, key: object) -> bool:
        return key in self.table

    def __iter__(self) -> Iterator[str]:
        owned = self.owned()
        for key in list(self.table.keys()):
            if owner_partition(key, self.partitions) in owned:
                yield key

    def __len__(self) -> int:
        return sum(1 for _ in self)


class _AckedStore(TableStore):
    """Publishing waits first for the changelog writes of the conversations it is about. The API
    publishes after every state change, so it answers only once the change is durable."""

    def __init__(
        self, view: OwnedView, table: KeyPartitionedTable, timeout_s: float, **senders: Any
    ) -> None:
        super().__init__(view, **senders)
        self._written = table.last_write
        self._timeout_s = timeout_s

    async def publish(self, records: Sequence[ReviewRecord]) -> None:
        for cid in dict.fromkeys(r.conversation_id for r in records):
            fut = self._written.get(cid)
            if fut is None:
                continue
            try:
                await asyncio.wait_for(asyncio.shield(fut), self._timeout_s)
            except Exception as exc:  # the record stays buffered; answer anyway
                log.warning("review: changelog write not acknowledged: %s", type(exc).__name__)
        await super().publish(records)


class _Context:
    """The last masked turns per conversation (in memory, LRU-bounded): context for new items."""

    def __init__(self, turns: int, conversations: int, max_chars: int) -> None:
        self.turns = turns
        self.conversations = conversations
        self.max_chars = max_chars
        self._rings: OrderedDict[str, deque[Turn]] = OrderedDict()

    def before(self, event: ChatEvent) -> list[Turn]:
        ring = self._rings.get(event.conversation_id, ())
        earlier = [
            t for t in ring if t.turn_index < event.turn_index and t.event_id != event.event_id
        ]
        return earlier[-self.turns :] if self.turns else []

    def remember(self, event: ChatEvent, findings: Sequence[Finding]) -> None:
        if self.turns == 0 or self.conversations == 0:
            return
        cid = event.conversation_id
        ring = self._rings.get(cid)
        if ring is None:
            # Slack beyond ``turns``: a claim check may come after later turns were screened.
            ring = self._rings[cid] = deque(maxlen=self.turns + 4)
            if len(self._rings) > self.conversations:
                self._rings.popitem(last=False)
        else:
            self._rings.move_to_end(cid)
        if any(t.event_id == event.event_id for t in ring):
            return  # re-delivered
        turn, _ = mask_turn(event, findings, max_chars=self.max_chars)
        ring.append(turn)


class ReviewQueue:
    """Intake of flags into the table, the timer's pass, and the partition check."""

    def __init__(
        self,
        *,
        policy: TriagePolicy,
        store: TableStore,
        caps: MutableMapping[str, Any],
        metrics: ReviewMetrics,
        partitions: int,
        key: bytes,
        context_conversations: int,
        clock: Callable[[], datetime] | None = None,
    ) -> None:
        self.policy = policy
        self.store = store
        self.caps = caps
        self.metrics = metrics
        self.partitions = partitions
        self.key = key
        self.clock = clock or (lambda: datetime.now(UTC))
        q = policy.queue
        self.context = _Context(q.context_turns, context_conversations, q.max_turn_chars)
        self._warned_partition = False

    def flag(
        self,
        event: ChatEvent,
        findings: Sequence[Finding],
        verdict: GroundingReport | None,
        source: str,
    ) -> None:
        """Run intake for one screened or checked event; never raises (counted and logged)."""
        try:
            self._flag(event, findings, verdict, source)
        except Exception as exc:
            self.metrics.errors.labels("intake").inc()
            log.error("review intake failed at %s: %s", source, type(exc).__name__)

    def _flag(
        self,
        event: ChatEvent,
        findings: Sequence[Finding],
        verdict: GroundingReport | None,
        source: str,
    ) -> None:
        flag = make_flag(
            event,
            findings,
            verdict,
            self.policy,
            at=self.clock(),
            context=self.context.before(event),
        )
        if flag is None:
            return
        cid = event.conversation_id
        part = owner_partition(cid, self.partitions)
        self._check_partition(source, part)
        ckey = counter_key(event.tenant, part)
        raw = self.caps.get(ckey)
        counter = CapCounter.model_validate(raw) if raw else None
        result = intake(
            self.store.get(cid),
            counter,
            flag,
            self.policy,
            key=self.key,
            partitions=self.partitions,
        )
        if result.admission is not None and result.counter is not None:
            self.caps[ckey] = result.counter.model_dump(mode="json")
        t = result.transition
        if t.changed:
            self.store.put(cid, t.item)
        self.metrics.observe(t, result.admission)

    def _check_partition(self, source: str, part: int) -> None:
        if self._warned_partition:
            return
        pieces = source.rsplit("/", 2)  # "<topic>/<partition>/<offset>"
        if len(pieces) == 3 and pieces[1].isdigit() and int(pieces[1]) != part:
            self._warned_partition = True
            log.warning(
                "review: an event arrived on partition %s, its conversation's review item lives "
                "on partition %s: produce %s with Kafka's default (murmur2) partitioner",
                pieces[1],
                part,
                pieces[0],
            )

    def remember(self, event: ChatEvent, findings: Sequence[Finding]) -> None:
        try:
            self.context.remember(event, findings)
        except Exception as exc:
            self.metrics.errors.labels("intake").inc()
            log.error("review context failed: %s", type(exc).__name__)

    def tick(self) -> int:
        """Apply the passage of time to every item this worker owns; return how many changed."""
        now = self.clock()
        changed = 0
        for cid in list(self.store.table.keys()):
            try:
                t = apply(self.store.get(cid), Tick(now), self.policy.queue)
                if t.changed:
                    self.store.put(cid, t.item)
                    changed += 1
                self.metrics.observe(t)
            except Exception as exc:
                self.metrics.errors.labels("tick").inc()
                log.error("review timer failed on an item: %s", type(exc).__name__)
        return changed


def _serving(app: Any) -> bool:
    """Whether the tables are recovered and no rebalance is under way."""
    if getattr(app, "rebalancing", False) or getattr(app, "in_recovery", False):
        return False
    try:
        return bool(app.tables.recovery.completed.is_set())
    except AttributeError:
        return False


Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


def _gated(app: Any, handler: Handler) -> Handler:
    async def handle(request: web.Request) -> web.StreamResponse:
        if not _serving(app):
            return web.json_response(
                {"error": "unavailable"},
                status=503,
                headers={"Retry-After": "2", "Cache-Control": "no-store"},
            )
        return await handler(request)

    return handle


def _owned(app: Any, topic: str) -> Callable[[], set[int]]:
    def owned() -> set[int]:
        return {tp.partition for tp in app.assignor.assigned_actives() if tp.topic == topic}

    return owned


def register(ctx: WorkerContext) -> None:
    """Tables, topics, hooks, timer and web routes of the review queue."""
    app, settings = ctx.app, ctx.settings
    rs = load_settings()
    policy = load_review_policy(rs)
    tokens = rs.all_tokens()
    auth = TokenAuth(tokens)
    if not tokens:
        log.warning("review: no reviewer tokens configured (VIGIL_REVIEW_TOKENS): API answers 401")
    parts = settings.topic_partitions
    changelog_name = rs.table_topic(settings.app_id)
    changelog = app.topic(
        changelog_name,
        key_type=str,
        value_type=None,
        # As Faust's own changelogs: the table's serializers (JSON for str keys and JSON
        # values), or recovery would decode keys differently from how they were written.
        key_serializer="json",
        value_serializer="json",
        partitions=parts,
        compacting=True,
        deleting=False,
        acks=False,
        internal=True,
    )
    table = KeyPartitionedTable(
        app,
        name=TABLE,
        default=None,
        beacon=app.tables.beacon,
        partitions=parts,
        key_type=str,
        value_type=None,  # JSON dicts (see the memory table in app.py)
        changelog_topic=changelog,
        use_partitioner=True,
        partition_of=lambda cid: owner_partition(cid, parts),
        help="Review queue: the current ReviewItem of each conversation.",
    )
    caps = KeyPartitionedTable(
        app,
        name=CAPS_TABLE,
        default=None,
        beacon=app.tables.beacon,
        partitions=parts,
        key_type=str,
        value_type=None,
        partition_of=lambda key: int(key.split("|", 1)[0]),  # counter_key(tenant, p)
        help="Review caps: new items per tenant, hour and partition.",
    )
    app.tables.add(table)
    app.tables.add(caps)
    actions_topic = app.topic(rs.actions_topic, key_type=bytes, value_type=bytes)
    labels_topic = app.topic(rs.labels_topic, key_type=bytes, value_type=bytes)
    view = OwnedView(table, _owned(app, changelog_name), parts)
    store = _AckedStore(
        view,
        table,
        rs.write_timeout_seconds,
        # Looked up at call time, so tests can replace ``topic.send``.
        actions=lambda **kw: actions_topic.send(**kw),
        labels=lambda **kw: labels_topic.send(**kw),
    )
    rule_ids = [r.id for r in ctx.pipeline.engine.rules.values()]
    metrics = ReviewMetrics(ctx.registry, rule_ids=[*rule_ids, *GROUNDING_RULES, FACT_CHECK_RULE])
    metrics.track(store)
    queue = ReviewQueue(
        policy=policy,
        store=store,
        caps=caps,
        metrics=metrics,
        partitions=parts,
        key=settings.sample_key_bytes,
        context_conversations=rs.context_conversations,
    )

    async def after_screen(event: ChatEvent, findings: list[Finding], source: str) -> None:
        queue.flag(event, findings, None, source)
        queue.remember(event, findings)

    async def after_check(
        event: ChatEvent, findings: list[Finding], report: GroundingReport, source: str
    ) -> None:
        queue.flag(event, findings, report, source)

    ctx.after_screen.append(after_screen)
    ctx.after_check.append(after_check)

    async def review_tick() -> None:
        if _serving(app):
            queue.tick()

    app.timer(rs.tick_seconds, name="review_tick")(review_tick)

    api = ReviewAPI(
        store,
        auth,
        policy.queue,
        metrics=metrics,
        locator=faust_locator(app, TABLE, parts),
        peers=faust_peers(app, TABLE),
    )
    routes = [web.route(r.method, r.path, _gated(app, r.handler), **r.kwargs) for r in api.routes()]
    web_app: web.Application = app.web.web_app  # type: ignore[attr-defined]  # aiohttp driver
    web_app.add_routes([*routes, *page_routes(api.prefix)])

    async def close_api(_: web.Application) -> None:
        await api.close()

    web_app.on_cleanup.append(close_api)
    ctx.topics.update(review_actions=actions_topic, review_labels=labels_topic)
    app.vigil_review = queue  # type: ignore[attr-defined]
