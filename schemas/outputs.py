"""Output contracts produced by the screening stage and the ingest step (SPEC §3)."""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from pydantic import AwareDatetime, BaseModel, ConfigDict, Field

from schemas.events import ChatEvent, Role

__all__ = [
    "Category",
    "DeadLetter",
    "DeadLetterReason",
    "Direction",
    "Finding",
    "Severity",
]

#: ``grounding`` holds what the sampled claim checks find (fabricated and unsupported citations);
#: an ungrounded dose or contraindication claim is ``medical`` (and critical).
Category = Literal["pii", "secret", "prompt_leak", "medical", "abstention", "grounding"]
Severity = Literal["low", "medium", "high", "critical"]
#: ``input``: found in a user (or system/tool) turn. ``leak``: an assistant turn carries a value
#: the user never gave in this conversation. ``echo``: an assistant turn repeats the user's own
#: value. ``output``: an assistant-turn finding of a category that carries no personal value
#: (medical statements, abstentions), where leak/echo does not apply.
Direction = Literal["input", "leak", "echo", "output"]
DeadLetterReason = Literal["bad_utf8", "bad_json", "schema", "oversize", "processing_error"]


class _Out(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Finding(_Out):
    """One rule match in one message. ``evidence`` is masked unless the rule's mask is ``none``."""

    schema_version: Literal[1] = 1
    finding_id: str = Field(description="Deterministic id: event id, rule id and span.")
    event_id: str
    conversation_id: str
    turn_index: int = Field(ge=0)
    timestamp: AwareDatetime
    role: Role
    tenant: str | None = None
    language: str | None = None
    rule_id: str
    category: Category
    entity: str
    severity: Severity
    start: int = Field(ge=0, description="Start offset of the match in content (code points).")
    end: int = Field(ge=0, description="End offset (exclusive) of the match in content.")
    evidence: str = Field(description="The matched text, masked per the rule's mask strategy.")
    direction: Direction
    score: float = Field(ge=0.0, le=1.0, description="Rule confidence, raised by context words.")
    explanation: str = Field(description="What matched: pattern name, validator, context.")

    @classmethod
    def in_event(
        cls,
        event: ChatEvent,
        *,
        rule_id: str,
        category: Category,
        entity: str,
        severity: Severity,
        start: int,
        end: int,
        evidence: str,
        direction: Direction,
        score: float,
        explanation: str,
    ) -> Finding:
        """The finding of rule ``rule_id`` at ``start:end`` of ``event``'s content, with the
        event's ids, turn, time, role, tenant and language."""
        return cls(
            finding_id=f"{event.event_id}:{rule_id}:{start}-{end}",
            event_id=event.event_id,
            conversation_id=event.conversation_id,
            turn_index=event.turn_index,
            timestamp=event.timestamp,
            role=event.role,
            tenant=event.tenant,
            language=event.language,
            rule_id=rule_id,
            category=category,
            entity=entity,
            severity=severity,
            start=start,
            end=end,
            evidence=evidence,
            direction=direction,
            score=score,
            explanation=explanation,
        )


class DeadLetter(_Out):
    """An input message that could not be processed: why, where, how long, a keyed digest, and
    its text with the values the screening rules find masked (never the raw bytes by default).
    """

    schema_version: Literal[1] = 1
    reason: DeadLetterReason
    detail: str = Field(description="Human-readable error; never contains message content.")
    source: str = Field(description="Where it came from: topic/partition/offset or file:line.")
    received_at: datetime
    original_size: int = Field(ge=0, description="Length of the original message in bytes.")
    digest: str = Field(
        description="BLAKE2b-128 of the whole original message keyed with VIGIL_MEMORY_KEY (hex):"
        " tells whether two dead letters, or a dead letter and a suspected input, are the same"
        " bytes without keeping them."
    )
    masked: str | None = Field(
        default=None,
        description="The message as text, truncated to the keep limit, with every value the"
        " screening rules find replaced by its mask; null when it cannot be read as text (bad"
        " UTF-8), so it cannot be masked.",
    )
    original_b64: str | None = Field(
        default=None,
        description="The original bytes, base64, truncated to the keep limit: only with"
        " VIGIL_DEAD_LETTER_RAW=true (debugging; they hold chat content as it came).",
    )
    truncated: bool
