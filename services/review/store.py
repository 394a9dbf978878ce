"""Where the queue lives: the :class:`ReviewStore` protocol and two implementations.

:class:`MemoryStore` is for tests and single-process use. :class:`TableStore` wraps any
dict-like table of JSON dicts (a Faust table with ``value_type=None``) plus ``send`` callables
for the records (``topic.send``); it needs no Faust import. Both keep items keyed by conversation
id; ``put(cid, None)`` deletes (a tombstone in the compacted changelog).
"""

from __future__ import annotations

import fnmatch
import json
from collections import Counter, OrderedDict
from collections.abc import Awaitable, Callable, Iterable, Iterator, MutableMapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Protocol

from schemas.review import RevealEvent, ReviewAction, ReviewItem, ReviewLabel
from services.review.policy import band
from services.review.queue import ReviewRecord

__all__ = ["ItemQuery", "MemoryStore", "ReviewStore", "Send", "TableStore", "queue_order"]

Send = Callable[..., Awaitable[Any]]
#: An item as the table keeps it (shortened to the state's byte ceiling) and its encoding.
Encode = Callable[[ReviewItem], tuple[ReviewItem, bytes]]


def _plain(item: ReviewItem) -> tuple[ReviewItem, bytes]:
    return item, item.model_dump_json().encode()


@dataclass(frozen=True)
class ItemQuery:
    """Which items a list wants; every given condition must hold. Read from an item's JSON, so
    a store can filter without validating every item.

    ``reasons``: any of these reason codes; ``rules``: a reason from a rule matching any of
    these globs; ``bands``: priority bands; ``since``/``until``: creation time (``until``
    exclusive); ``person``: claimed by, assigned to or labelled by this reviewer ("mine");
    ``disagreement``: two reviewers' labels differ.
    """

    statuses: frozenset[str] | None = None
    tenant: str | None = None
    reasons: frozenset[str] | None = None
    rules: tuple[str, ...] | None = None
    bands: frozenset[str] | None = None
    since: datetime | None = None
    until: datetime | None = None
    person: str | None = None
    disagreement: bool | None = None

    def matches(self, raw: dict[str, Any]) -> bool:
        if self.statuses is not None and raw.get("status") not in self.statuses:
            return False
        if self.tenant is not None and raw.get("tenant") != self.tenant:
            return False
        reasons = raw.get("reasons") or []
        if self.reasons is not None and not any(r.get("code") in self.reasons for r in reasons):
            return False
        if self.rules is not None and not any(
            fnmatch.fnmatchcase(r.get("rule_id") or "", g) for r in reasons for g in self.rules
        ):
            return False
        if self.bands is not None and band(int(raw.get("priority", 0))) not in self.bands:
            return False
        if self.since is not None or self.until is not None:
            created = _moment(raw["created_at"])
            if self.since is not None and created < self.since:
                return False
            if self.until is not None and created >= self.until:
                return False
        if self.person is not None and not _involves(raw, self.person):
            return False
        return self.disagreement is None or bool(raw.get("disagreement")) == self.disagreement


def _moment(value: datetime | str) -> datetime:
    return datetime.fromisoformat(value) if isinstance(value, str) else value


def _involves(raw: dict[str, Any], person: str) -> bool:
    if person in (raw.get("claimed_by"), raw.get("assigned_to"), raw.get("labeled_by")):
        return True
    return any(r.get("reviewer") == person for r in raw.get("labels") or [])


class ReviewStore(Protocol):
    def get(self, conversation_id: str) -> ReviewItem | None: ...

    def put(self, conversation_id: str, item: ReviewItem | None) -> None: ...

    def list(self, query: ItemQuery | None = None, *, limit: int = 50) -> list[ReviewItem]:
        """Items matching ``query``, by priority (highest first), then age (oldest first)."""
        ...

    def counts(self) -> dict[str, int]:
        """Number of items by status (for the queue-depth gauge)."""
        ...

    async def publish(self, records: Sequence[ReviewRecord]) -> None: ...


def queue_order(priority: int, created_at: str, conversation_id: str) -> tuple[int, str, str]:
    """Sort key: priority descending, then oldest first, then conversation id (stable)."""
    return (-priority, created_at, conversation_id)


def _utc(value: datetime | str) -> str:
    return _moment(value).astimezone(UTC).isoformat()


def _key(item: ReviewItem) -> tuple[int, str, str]:
    return queue_order(item.priority, _utc(item.created_at), item.conversation_id)


class MemoryStore:
    """Items in a dict; published records in :attr:`published` (newest last)."""

    def __init__(self, items: Iterable[ReviewItem] = ()) -> None:
        self.items: dict[str, ReviewItem] = {i.conversation_id: i for i in items}
        self.published: list[ReviewRecord] = []

    def get(self, conversation_id: str) -> ReviewItem | None:
        return self.items.get(conversation_id)

    def put(self, conversation_id: str, item: ReviewItem | None) -> None:
        if item is None:
            self.items.pop(conversation_id, None)
        else:
            self.items[conversation_id] = item

    def list(self, query: ItemQuery | None = None, *, limit: int = 50) -> list[ReviewItem]:
        q = query or ItemQuery()
        chosen = [i for i in self.items.values() if q.matches(i.model_dump(mode="json"))]
        return sorted(chosen, key=_key)[:limit]

    def counts(self) -> dict[str, int]:
        return dict(Counter(i.status for i in self.items.values()))

    async def publish(self, records: Sequence[ReviewRecord]) -> None:
        self.published.extend(records)


class TableStore:
    """A mapping of ``ReviewItem`` JSON (bytes), and senders for the records.

    ``actions`` receives :class:`ReviewAction` records (``vigil.review.actions``), ``labels``
    :class:`ReviewLabel` records (``vigil.review.labels``), ``reveals`` :class:`RevealEvent`
    records (default: the actions sender). Each is called as ``send(key=bytes, value=bytes)``,
    the signature of Faust's ``topic.send``; the key is the conversation id. ``encode``
    gives an item as the table keeps it (``ValueBound.encode_item``: under the state's byte
    ceiling); default: as it is.

    Listing reads status, tenant, priority and creation time from the parsed JSON and validates
    only the items it returns; validated items are cached by version (at most ``CACHE`` items
    and, given, ``cache_bytes`` of their JSON).
    """

    CACHE = 1024

    def __init__(
        self,
        table: MutableMapping[str, Any],
        *,
        actions: Send,
        labels: Send,
        reveals: Send | None = None,
        encode: Encode | None = None,
        cache_bytes: int | None = None,
    ) -> None:
        self.table = table
        self._encode = encode or _plain
        self.cache_bytes = cache_bytes
        self._cached_bytes = 0
        self._send = {ReviewAction: actions, ReviewLabel: labels, RevealEvent: reveals or actions}
        self._cache: OrderedDict[str, tuple[int, ReviewItem, int]] = OrderedDict()

    def _remember(self, cid: str, item: ReviewItem, size: int) -> None:
        self._forget(cid)
        self._cache[cid] = (item.version, item, size)
        self._cached_bytes += size
        limit = self.cache_bytes
        while len(self._cache) > self.CACHE or (
            limit is not None and self._cached_bytes > limit and len(self._cache) > 1
        ):
            _, (_, _, gone) = self._cache.popitem(last=False)
            self._cached_bytes -= gone

    def _forget(self, cid: str) -> None:
        hit = self._cache.pop(cid, None)
        if hit is not None:
            self._cached_bytes -= hit[2]

    def _load(self, cid: str, raw: Any) -> ReviewItem:
        parsed = raw if isinstance(raw, dict) else json.loads(raw)
        hit = self._cache.get(cid)
        if hit is not None and hit[0] == parsed.get("version"):
            self._cache.move_to_end(cid)
            return hit[1]
        item = ReviewItem.model_validate(parsed)
        self._remember(cid, item, len(raw) if isinstance(raw, bytes) else 0)
        return item

    def get(self, conversation_id: str) -> ReviewItem | None:
        raw = self.table.get(conversation_id)
        return None if raw is None else self._load(conversation_id, raw)

    def put(self, conversation_id: str, item: ReviewItem | None) -> None:
        if item is None:
            self._forget(conversation_id)
            if conversation_id in self.table:
                del self.table[conversation_id]
            return
        item, raw = self._encode(item)
        self.table[conversation_id] = raw
        self._remember(conversation_id, item, len(raw))

    def _raw(self) -> Iterator[tuple[str, dict[str, Any]]]:
        for cid in list(self.table):
            raw = self.table.get(cid)
            if raw is None:
                continue
            parsed = raw if isinstance(raw, dict) else json.loads(raw)
            if isinstance(parsed, dict):
                yield cid, parsed

    def list(self, query: ItemQuery | None = None, *, limit: int = 50) -> list[ReviewItem]:
        q = query or ItemQuery()
        rows = [
            (queue_order(raw["priority"], _utc(raw["created_at"]), cid), cid, raw)
            for cid, raw in self._raw()
            if q.matches(raw)
        ]
        rows.sort(key=lambda r: r[0])
        return [self._load(cid, raw) for _, cid, raw in rows[:limit]]

    def counts(self) -> dict[str, int]:
        return dict(Counter(str(raw.get("status")) for _, raw in self._raw()))

    async def publish(self, records: Sequence[ReviewRecord]) -> None:
        for record in records:
            send = self._send[type(record)]
            await send(key=record.conversation_id.encode(), value=record.model_dump_json().encode())
