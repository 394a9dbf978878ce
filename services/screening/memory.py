"""Conversation memory: keyed hashes of values the user gave in their own turns.

The memory decides ``echo`` versus ``leak`` for assistant turns. It never holds a raw value: each
value is compacted (case and separators folded) and hashed with a secret key (BLAKE2b keyed), so a
dump of the memory or its changelog topic reveals nothing. Each hash keeps when it was last seen,
the first user turn that gave it (an assistant turn echoes a value given at its own turn index or
before: turn order, not arrival order, decides) and the rule that found it (so that an assistant
turn repeating the value bare, where no rule fires, is still recognised). It is bounded in
entries per conversation and in age; the store of memories (one per conversation) is a kind of
the dataflow's keyed state, bounded in conversations (``services.dataflow``).

``held`` lists the assistant turns of the conversation the dataflow holds back for the reorder
window (``services.dataflow.reorder``), so the conversation's next event can release them.
"""

from __future__ import annotations

import hashlib
from typing import NamedTuple

from pydantic import BaseModel, ConfigDict, Field, ValidationError

__all__ = ["ConversationMemory", "MemoryLimits", "Remembered", "value_hash"]

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


class Remembered(NamedTuple):
    """One remembered value: last seen (epoch seconds), first user turn, the rule that found it."""

    at: float
    turn: int
    rule: str | None


class ConversationMemory(BaseModel):
    """Hashes of the user's values in one conversation, and the answers held for reordering."""

    model_config = ConfigDict(extra="forbid")
    #: digest → (last seen, first user turn, rule id): plain tuples, which parse about as fast
    #: as the older ``digest → last seen`` floats (the memory is read for every event).
    seen: dict[str, tuple[float, int, str | None]] = Field(default_factory=dict)
    #: Event id → (due time on the runner's clock, turn index) of each assistant turn held for
    #: the reorder window.
    held: dict[str, tuple[float, int]] = Field(default_factory=dict)

    @classmethod
    def load(cls, raw: bytes) -> ConversationMemory:
        """A stored memory; one written before turns were kept (``digest → last seen``) reads
        as values given at turn 0 by no known rule: an echo for every later turn, as it was."""
        try:
            return cls.model_validate_json(raw)
        except ValidationError:
            older = _OlderMemory.model_validate_json(raw)
            return cls(seen={d: (at, 0, None) for d, at in older.seen.items()})

    def lookup(self, digest: str, now: float, limits: MemoryLimits, turn: int) -> Remembered | None:
        """The remembered value, if a user gave it at ``turn`` or before and it has not aged."""
        hit = self.seen.get(digest)
        if hit is None or now - hit[0] > limits.max_age_seconds or hit[1] > turn:
            return None
        return Remembered(*hit)

    def knows(self, digest: str, now: float, limits: MemoryLimits, turn: int) -> bool:
        return self.lookup(digest, now, limits, turn) is not None

    def remember(
        self,
        values: list[tuple[str, str | None]],
        now: float,
        limits: MemoryLimits,
        turn: int = 0,
    ) -> ConversationMemory:
        """A new memory with ``values`` (digest, rule id) given at ``turn`` added, expired
        entries dropped and the oldest evicted. A value given again keeps its first turn."""
        seen = {d: r for d, r in self.seen.items() if now - r[0] <= limits.max_age_seconds}
        for digest, rule in values:
            old = seen.get(digest)
            if old is None:
                seen[digest] = (now, turn, rule)
            else:
                seen[digest] = (max(now, old[0]), min(turn, old[1]), old[2] or rule)
        if len(seen) > limits.max_values:
            newest = sorted(seen.items(), key=lambda kv: kv[1][0], reverse=True)
            seen = dict(newest[: limits.max_values])
        return ConversationMemory(seen=seen, held=self.held)

    def with_held(self, held: dict[str, tuple[float, int]]) -> ConversationMemory:
        return ConversationMemory(seen=self.seen, held=held)


class _OlderMemory(BaseModel):
    seen: dict[str, float] = Field(default_factory=dict)
