"""Conversation memory: keyed hashes of values the user gave in their own turns.

The memory decides ``echo`` versus ``leak`` for assistant turns. It never holds a raw value: each
value is compacted (case and separators folded) and hashed with a secret key (BLAKE2b keyed), so a
dump of the memory or its changelog topic reveals nothing. It is bounded in entries per
conversation and in age; the store of memories (one per conversation) is a kind of the dataflow's
keyed state, bounded in conversations (``services.dataflow``).
"""

from __future__ import annotations

import hashlib

from pydantic import BaseModel, ConfigDict, Field

__all__ = ["ConversationMemory", "MemoryLimits", "value_hash"]

_SEPARATORS = str.maketrans("", "", " \t\r\n-().,/:_")


class MemoryLimits(BaseModel):
    model_config = ConfigDict(frozen=True)
    max_values: int = Field(default=256, ge=1)
    max_age_seconds: float = Field(default=7 * 24 * 3600, gt=0)


def value_hash(value: str, key: bytes, *, compact: bool = True) -> str:
    """Keyed hash of a value.

    ``compact`` folds case and separators, so ``06-1234 5678`` and ``0612345678`` hash alike.
    """
    norm = value.lower().translate(_SEPARATORS) if compact else value
    return hashlib.blake2b(
        norm.encode("utf-8", "surrogatepass"), key=key[:64], digest_size=16
    ).hexdigest()


class ConversationMemory(BaseModel):
    """Hashes of the user's values in one conversation, each with the epoch second last seen."""

    model_config = ConfigDict(extra="forbid")
    seen: dict[str, float] = Field(default_factory=dict)

    def knows(self, digest: str, now: float, limits: MemoryLimits) -> bool:
        ts = self.seen.get(digest)
        return ts is not None and now - ts <= limits.max_age_seconds

    def remember(self, digests: list[str], now: float, limits: MemoryLimits) -> ConversationMemory:
        """A new memory with ``digests`` added, expired entries dropped and the oldest evicted."""
        seen = {d: ts for d, ts in self.seen.items() if now - ts <= limits.max_age_seconds}
        for d in digests:
            seen[d] = max(now, seen.get(d, now))
        if len(seen) > limits.max_values:
            newest = sorted(seen.items(), key=lambda kv: kv[1], reverse=True)[: limits.max_values]
            seen = dict(newest)
        return ConversationMemory(seen=seen)
