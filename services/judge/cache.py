"""A bounded LRU of verdicts, keyed on a hash of everything that decides a verdict.

The key is a SHA-256 over (protocol, model, premise, hypothesis, language), so the cache holds
32-byte digests instead of chat text. Only valid verdicts are stored: a failure must be retried
the next time, never remembered.
"""

from __future__ import annotations

import hashlib
import json
from collections import OrderedDict

from services.judge.protocols import Verdict

__all__ = ["VerdictCache", "cache_key"]


def cache_key(
    protocol: str, model: str | None, premise: str, hypothesis: str, language: str | None
) -> bytes:
    """An unambiguous digest (JSON-encoded fields, so no separator can be forged)."""
    fields = json.dumps([protocol, model, premise, hypothesis, language], ensure_ascii=False)
    return hashlib.sha256(fields.encode("utf-8", "surrogatepass")).digest()


class VerdictCache:
    def __init__(self, max_size: int) -> None:
        if max_size < 0:
            raise ValueError("max_size must be >= 0")
        self._max = max_size
        self._items: OrderedDict[bytes, Verdict] = OrderedDict()

    def __len__(self) -> int:
        return len(self._items)

    def get(self, key: bytes) -> Verdict | None:
        verdict = self._items.get(key)
        if verdict is not None:
            self._items.move_to_end(key)
        return verdict

    def put(self, key: bytes, verdict: Verdict) -> None:
        if self._max == 0:
            return
        self._items[key] = verdict
        self._items.move_to_end(key)
        while len(self._items) > self._max:
            self._items.popitem(last=False)
