"""What stages hand to the runners: records on named channels, and follow-ups after delivery.

A stage never writes to Kafka or to a file; it returns :class:`Emit` records on a *channel*
(``findings``, ``dlq``, ``verdicts``, ``checks``, ``evalset.samples`` …). The worker maps each
channel to a topic (:data:`services.streaming.topics`); ``vigil scan`` maps the output channels to
files and hands the internal ones straight to the stage that consumes them. A value ``None`` is a
tombstone (on a compacted topic it deletes the key).

:class:`Effects` adds a follow-up for copy-then-delete steps (archive cases, then drop their
state): the runner calls ``then()`` only after every emit of the step was delivered (the broker
acknowledged them), and handles what it returns the same way.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from pydantic import BaseModel

from schemas.evalset import SourceRef

__all__ = ["Effects", "Emit", "Source", "encode"]


@dataclass(frozen=True, slots=True)
class Source:
    """Where a record came from: ``label`` for logs and dead letters, the partition and offset
    (a line number in a file), and the reference eval-set cases keep."""

    label: str
    partition: int = 0
    offset: int = 0
    ref: SourceRef | None = None
    #: The record's key (a dead letter keeps it).
    key: bytes | None = None


@dataclass(slots=True)
class Emit:
    """One record on a channel. ``partition``: a fixed partition, else Kafka's default
    partitioner on ``key``."""

    channel: str
    key: bytes | None
    value: BaseModel | bytes | None
    partition: int | None = None


@dataclass(slots=True)
class Effects:
    """Records to deliver, and what to do once they are all acknowledged."""

    emits: list[Emit] = field(default_factory=list)
    then: Callable[[], Effects] | None = None

    def extend(self, other: Effects) -> Effects:
        """Append ``other``'s emits; its follow-up (at most one of the two may have one)."""
        self.emits.extend(other.emits)
        if other.then is not None:
            if self.then is not None:
                raise ValueError("two follow-ups in one step")
            self.then = other.then
        return self


def encode(value: BaseModel | bytes | None) -> bytes | None:
    """The wire form of an emitted value: compact JSON for models."""
    if value is None or isinstance(value, bytes):
        return value
    return value.model_dump_json().encode("utf-8")
