"""The reorder window: echo or leak is decided by turn order, not arrival order.

An assistant turn that would leak a value — one no user turn of the conversation gave at its turn
index or before — may only look that way because the user's turn is late: two producers, a
retry, a replay. Such an answer is *held*: kept whole in the keyed-state kind ``held`` and
screened again, with every stage after it, when the user's value has had the time to arrive:
once ``VIGIL_REORDER_WINDOW_SECONDS`` of the runner's clock have passed, or as soon as an event
of a later turn of the conversation comes (the conversation has moved on; the review queue and
the evaluation sets must see the answer before its successors). A late user turn of the same or
an earlier turn index, arriving before either, makes the value an echo. Answers without a leak
(nearly all) are never held; a window of 0 holds nothing.

The conversation's memory lists its held answers (event id → due time, turn), so its next
event releases the ones it must at no extra read; the runners release the rest at their sweeps
(``vigil scan`` every few thousand lines and at the end of the file, which releases everything;
the worker on a timer every half window). Bounded: at most ``VIGIL_REORDER_MAX_HELD`` answers per
conversation and ``VIGIL_REORDER_MAX_HELD_TOTAL`` per partition (per run in a scan); past either
bound an answer is decided at once instead, never dropped. No lifetime by age: a held answer
leaves only by release, and only once the records its release emitted are acknowledged
(:meth:`~services.dataflow.flow.Dataflow.delivery`): a crash before that releases it again.
"""

from __future__ import annotations

import base64
from collections.abc import Collection

from pydantic import BaseModel, ConfigDict

from schemas.evalset import SourceRef
from schemas.events import ChatEvent
from services.dataflow.records import Source
from services.dataflow.state import KeyedStore, StateSpec
from services.ingest import JSON_OVERHEAD_BYTES
from services.screening import ConversationMemory
from services.settings import Settings

__all__ = ["HELD", "HeldAnswer", "Reorder", "held_spec"]

HELD = "held"


class HeldAnswer(BaseModel):
    """An answer held for the reorder window, with where it came from."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    conversation_id: str
    event: str  # the ChatEvent as JSON (parsed again with the configured content limit)
    label: str
    partition: int
    offset: int
    ref: SourceRef | None = None
    key: str | None = None  # the record's key, base64
    due: float

    def source(self) -> Source:
        key = base64.b64decode(self.key) if self.key is not None else None
        return Source(self.label, self.partition, self.offset, self.ref, key)


def held_spec(settings: Settings) -> StateSpec:
    return StateSpec(
        kind=HELD,
        max_entries=settings.reorder_max_held_total,
        ttl_seconds=None,
        max_value_bytes=settings.max_content_bytes + JSON_OVERHEAD_BYTES + 4096,
        description="Answers with a leak held for the reorder window, until they are due.",
        setting="VIGIL_MAX_CONTENT_BYTES",
    )


def _key(conversation_id: str, event_id: str) -> str:
    return f"{conversation_id}\x1f{event_id}"


class Reorder:
    """Holding and releasing answers (see the module docstring); the state is the caller's."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.window = settings.reorder_window_seconds
        self.per_conversation = settings.reorder_max_held

    def hold(
        self,
        event: ChatEvent,
        memory: ConversationMemory | None,
        store: KeyedStore | None,
        source: Source,
        now: float,
        *,
        releasing: Collection[str] = (),
    ) -> ConversationMemory | None:
        """Hold ``event`` (an answer with a leak): the conversation's new memory, or ``None``
        when it is not held (no window, or a bound reached: decided now). ``releasing``: the
        conversation's held answers already released, still listed until their records are
        acknowledged; they do not count against the bound."""
        held = memory.held if memory is not None else {}
        waiting = len(held) - sum(1 for eid in releasing if eid in held)
        if (
            self.window <= 0
            or store is None
            or waiting >= self.per_conversation
            or len(store) - len(releasing) >= store.spec.max_entries
        ):
            return None
        due = now + self.window
        record = HeldAnswer(
            conversation_id=event.conversation_id,
            event=event.model_dump_json(),
            label=source.label,
            partition=source.partition,
            offset=source.offset,
            ref=source.ref,
            key=base64.b64encode(source.key).decode() if source.key is not None else None,
            due=due,
        )
        store[_key(event.conversation_id, event.event_id)] = record.model_dump_json().encode()
        entry = (due, event.turn_index)
        return (memory or ConversationMemory()).with_held({**held, event.event_id: entry})

    @staticmethod
    def due(
        memory: ConversationMemory | None,
        now: float,
        *,
        everything: bool = False,
        next_turn: int | None = None,
    ) -> list[str]:
        """The event ids of the conversation's held answers to release, oldest first: those
        due by ``now``, those before ``next_turn`` (the turn index of the event that arrived),
        or all with ``everything``."""
        if memory is None or not memory.held:
            return []
        due = [
            (at, eid)
            for eid, (at, turn) in memory.held.items()
            if everything or at <= now or (next_turn is not None and turn < next_turn)
        ]
        return [eid for _, eid in sorted(due)]

    def peek(
        self, store: KeyedStore, conversation_id: str, event_id: str
    ) -> tuple[ChatEvent, Source] | None:
        """A held answer, left in the store (``None`` if it is gone): it leaves by
        :meth:`drop` once what its release emitted is acknowledged."""
        raw = store.get(_key(conversation_id, event_id))
        if raw is None:
            return None
        held = HeldAnswer.model_validate_json(raw)
        limit = {"max_content_bytes": self.settings.max_content_bytes}
        return ChatEvent.model_validate_json(held.event, context=limit), held.source()

    @staticmethod
    def drop(store: KeyedStore, conversation_id: str, event_id: str) -> None:
        """Remove a held answer from the store (nothing when it is gone)."""
        store.pop(_key(conversation_id, event_id), None)

    @staticmethod
    def conversations(store: KeyedStore) -> list[str]:
        """The conversations with held answers in ``store``."""
        found = {
            HeldAnswer.model_validate_json(raw).conversation_id
            for _, raw in store.stream_prefix("")
        }
        return sorted(found)
