"""Where the queue lives: the :class:`ReviewStore` protocol and two implementations.

:class:`MemoryStore` is for tests and single-process use. :class:`TableStore` wraps any
dict-like table of JSON dicts (a Faust table with ``value_type=None``) plus ``send`` callables
for the records (``topic.send``); it needs no Faust import. Both keep items keyed by conversation
id; ``put(cid, None)`` deletes (a tombstone in the compacted changelog).
"""

from __future__ import annotations

import json
from collections import Counter, OrderedDict
from collections.abc import Awaitable, Callable, Iterable, Iterator, MutableMapping, Sequence
from datetime import UTC, datetime
from typing import Any, Protocol

from schemas.review import RevealEvent, ReviewAction, ReviewItem, ReviewLabel, ReviewStatus
from services.review.queue import ReviewRecord

__all__ = ["MemoryStore", "ReviewStore", "Send", "TableStore", "queue_order"]

Send = Callable[..., Awaitable[Any]]


class ReviewStore(Protocol):
    def get(self, conversation_id: str) -> ReviewItem | None: ...

    def put(self, conversation_id: str, item: ReviewItem | None) -> None: ...

    def list(
        self,
        *,
        statuses: Iterable[ReviewStatus] | None = None,
        tenant: str | None = None,
        limit: int = 50,
    ) -> list[ReviewItem]:
        """Items sorted by priority (highest first), then age (oldest first)."""
        ...

    def counts(self) -> dict[str, int]:
        """Number of items by status (for the queue-depth gauge)."""
        ...

    async def publish(self, records: Sequence[ReviewRecord]) -> None: ...


def queue_order(priority: int, created_at: str, conversation_id: str) -> tuple[int, str, str]:
    """Sort key: priority descending, then oldest first, then conversation id (stable)."""
    return (-priority, created_at, conversation_id)


def _utc(value: datetime | str) -> str:
    moment = datetime.fromisoformat(value) if isinstance(value, str) else value
    return moment.astimezone(UTC).isoformat()


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

    def list(
        self,
        *,
        statuses: Iterable[ReviewStatus] | None = None,
        tenant: str | None = None,
        limit: int = 50,
    ) -> list[ReviewItem]:
        wanted = set(statuses) if statuses is not None else None
        chosen = [
            i
            for i in self.items.values()
            if (wanted is None or i.status in wanted) and (tenant is None or i.tenant == tenant)
        ]
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
    the signature of Faust's ``topic.send``; the key is the conversation id.

    Listing reads status, tenant, priority and creation time from the parsed JSON and validates
    only the items it returns; validated items are cached by version (a bounded cache).
    """

    CACHE = 1024

    def __init__(
        self,
        table: MutableMapping[str, Any],
        *,
        actions: Send,
        labels: Send,
        reveals: Send | None = None,
    ) -> None:
        self.table = table
        self._send = {ReviewAction: actions, ReviewLabel: labels, RevealEvent: reveals or actions}
        self._cache: OrderedDict[str, tuple[int, ReviewItem]] = OrderedDict()

    def _remember(self, cid: str, item: ReviewItem) -> None:
        self._cache[cid] = (item.version, item)
        self._cache.move_to_end(cid)
        if len(self._cache) > self.CACHE:
            self._cache.popitem(last=False)

    def _load(self, cid: str, raw: Any) -> ReviewItem:
        parsed = raw if isinstance(raw, dict) else json.loads(raw)
        hit = self._cache.get(cid)
        if hit is not None and hit[0] == parsed.get("version"):
            return hit[1]
        item = ReviewItem.model_validate(parsed)
        self._remember(cid, item)
        return item

    def get(self, conversation_id: str) -> ReviewItem | None:
        raw = self.table.get(conversation_id)
        return None if raw is None else self._load(conversation_id, raw)

    def put(self, conversation_id: str, item: ReviewItem | None) -> None:
        if item is None:
            self._cache.pop(conversation_id, None)
            if conversation_id in self.table:
                del self.table[conversation_id]
            return
        self.table[conversation_id] = item.model_dump_json().encode()
        self._remember(conversation_id, item)

    def _raw(self) -> Iterator[tuple[str, dict[str, Any]]]:
        for cid in list(self.table):
            raw = self.table.get(cid)
            if raw is None:
                continue
            parsed = raw if isinstance(raw, dict) else json.loads(raw)
            if isinstance(parsed, dict):
                yield cid, parsed

    def list(
        self,
        *,
        statuses: Iterable[ReviewStatus] | None = None,
        tenant: str | None = None,
        limit: int = 50,
    ) -> list[ReviewItem]:
        wanted = set(statuses) if statuses is not None else None
        rows = [
            (queue_order(raw["priority"], _utc(raw["created_at"]), cid), cid, raw)
            for cid, raw in self._raw()
            if (wanted is None or raw.get("status") in wanted)
            and (tenant is None or raw.get("tenant") == tenant)
        ]
        rows.sort(key=lambda r: r[0])
        return [self._load(cid, raw) for _, cid, raw in rows[:limit]]

    def counts(self) -> dict[str, int]:
        return dict(Counter(str(raw.get("status")) for _, raw in self._raw()))

    async def publish(self, records: Sequence[ReviewRecord]) -> None:
        for record in records:
            send = self._send[type(record)]
            await send(key=record.conversation_id.encode(), value=record.model_dump_json().encode())
