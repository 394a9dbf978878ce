"""Review items as last decoded from, or encoded to, their store (bounded, write-through).

Every flag of a conversation reads its item, and a conversation with findings in several answers
is flagged again and again: each time the whole item (its turns, passages and verdicts: tens of
KiB of JSON) was validated from the store's bytes, the largest cost of review intake on RAG
answers. :class:`DecodedItems` keeps, per store and key, the bytes the store holds and the item
they stand for: the item is served only while the store still holds those very bytes (the same
object, or equal bytes), so a write by anyone else (the reviewer API, a replay) is a miss, not a
stale read. Writes go straight to the store; nothing waits for a flush. It holds what the store
holds (masked turns; the originals the worker keeps for the reveal role): bounded in entries and
in bytes of their JSON.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import MutableMapping

from schemas.review import ReviewItem

__all__ = ["DecodedItems"]

Store = MutableMapping[str, bytes]


class DecodedItems:
    """``get``/``put``/``delete`` of review items over a store of their JSON (see the module
    docstring); at most ``size`` items and ``max_bytes`` bytes of their JSON."""

    def __init__(self, size: int = 256, max_bytes: int = 8 * 1024 * 1024) -> None:
        self.size = size
        self.max_bytes = max_bytes
        #: The bytes of JSON of the items held.
        self.bytes = 0
        self._entries: OrderedDict[tuple[int, str], tuple[Store, bytes, ReviewItem]] = OrderedDict()

    def get(self, store: Store, key: str) -> ReviewItem | None:
        """The item at ``key`` (``None`` when there is none)."""
        raw = store.get(key)
        if raw is None:
            return None
        return self.of(store, key, raw)

    def of(self, store: Store, key: str, raw: bytes) -> ReviewItem:
        """The item ``store`` holds at ``key`` as ``raw``, bytes read already (by a scan): no
        second read of the store."""
        ident = (id(store), key)
        hit = self._entries.get(ident)
        if hit is not None and hit[0] is store and (hit[1] is raw or hit[1] == raw):
            self._entries.move_to_end(ident)
            return hit[2]
        item = ReviewItem.model_validate_json(raw)
        self._remember(store, key, raw, item)
        return item

    def put(self, store: Store, key: str, item: ReviewItem, raw: bytes) -> None:
        """Write ``raw`` (the encoding of ``item``) at ``key``."""
        store[key] = raw
        self._remember(store, key, raw, item)

    def delete(self, store: Store, key: str) -> None:
        store.pop(key, None)
        self._forget((id(store), key))

    def clear(self) -> None:
        self._entries.clear()
        self.bytes = 0

    def _forget(self, ident: tuple[int, str]) -> None:
        gone = self._entries.pop(ident, None)
        if gone is not None:
            self.bytes -= len(gone[1])

    def _remember(self, store: Store, key: str, raw: bytes, item: ReviewItem) -> None:
        ident = (id(store), key)
        self._forget(ident)
        if len(raw) > self.max_bytes:
            return
        self._entries[ident] = (store, raw, item)
        self.bytes += len(raw)
        while len(self._entries) > self.size or self.bytes > self.max_bytes:
            _, (_, old, _) = self._entries.popitem(last=False)
            self.bytes -= len(old)
