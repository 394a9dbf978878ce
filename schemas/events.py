"""The input contract: one ``ChatEvent`` per chat message on the ``chat.events`` topic (SPEC §3)."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Literal

from pydantic import (
    AwareDatetime,
    BaseModel,
    ConfigDict,
    Field,
    StringConstraints,
    ValidationInfo,
    field_validator,
)

__all__ = [
    "DEFAULT_MAX_CONTENT_BYTES",
    "SCHEMA_VERSION",
    "ChatEvent",
    "Claim",
    "Passage",
    "Role",
]

SCHEMA_VERSION = 1
DEFAULT_MAX_CONTENT_BYTES = 64 * 1024

Role = Literal["user", "assistant", "system", "tool"]

#: An identifier: non-empty, no surrounding whitespace, bounded.
Ident = Annotated[str, StringConstraints(min_length=1, max_length=256, pattern=r"^\S(.*\S)?$")]
#: Low-cardinality metadata such as tenant or model name.
Label = Annotated[str, StringConstraints(min_length=1, max_length=128)]
ClaimText = Annotated[str, StringConstraints(min_length=1, max_length=200)]


class _Wire(BaseModel):
    # Unknown fields are ignored rather than rejected so that a producer may add metadata without
    # sending the whole stream to the dead-letter topic; every declared field is strict.
    model_config = ConfigDict(extra="ignore", frozen=True, strict=True)


class Passage(_Wire):
    """A passage retrieved for the answer, as given to the model."""

    doc_id: Ident
    text: str = Field(max_length=DEFAULT_MAX_CONTENT_BYTES)
    score: float | None = None
    rank: int | None = Field(default=None, ge=0)


class Claim(_Wire):
    """A structured claim emitted upstream: ``{entity, attribute, value}``."""

    entity: ClaimText
    attribute: ClaimText
    value: ClaimText


class ChatEvent(_Wire):
    """One chat message as logged to Kafka (key = ``conversation_id``).

    ``content`` is limited in UTF-8 bytes; the limit defaults to 64 KiB and is configurable by
    passing ``context={"max_content_bytes": N}`` to ``model_validate``/``model_validate_json``.
    """

    schema_version: Literal[1] = Field(description="Wire contract version; only 1 exists.")
    event_id: Ident = Field(description="Unique id of the message; the idempotency key.")
    conversation_id: Ident = Field(description="Conversation id; the Kafka partition key.")
    turn_index: int = Field(ge=0, description="Position of the message in its conversation.")
    timestamp: AwareDatetime = Field(description="RFC 3339 time with an offset.")
    role: Role
    content: str = Field(description="Message text; size limit configurable (default 64 KiB).")
    language: (
        Annotated[str, StringConstraints(pattern=r"^[A-Za-z]{2,3}(-[A-Za-z0-9]{1,8})*$")] | None
    ) = Field(default=None, description="BCP-47 tag such as en, nl, vi.")
    tenant: Label | None = None
    app: Label | None = None
    model: Label | None = None
    channel: Label | None = None
    retrieval: list[Passage] | None = Field(default=None, max_length=256)
    citations: list[Ident] | None = Field(default=None, max_length=256)
    claims: list[Claim] | None = Field(default=None, max_length=256)
    confidence: float | None = Field(default=None, ge=0.0, le=1.0, allow_inf_nan=False)
    abstained: bool | None = None

    @field_validator("content")
    @classmethod
    def _content_size(cls, value: str, info: ValidationInfo) -> str:
        limit = DEFAULT_MAX_CONTENT_BYTES
        if isinstance(info.context, dict):
            limit = int(info.context.get("max_content_bytes", limit))
        try:
            size = len(value.encode("utf-8"))
        except UnicodeEncodeError:
            raise ValueError("content contains an unpaired surrogate code point") from None
        if size > limit:
            raise ValueError(f"content is {size} bytes, over the limit of {limit} bytes")
        return value

    @property
    def base_language(self) -> str | None:
        """The primary language subtag in lower case (``nl`` for ``nl-BE``)."""
        return self.language.split("-", 1)[0].lower() if self.language else None

    @property
    def when(self) -> datetime:
        return self.timestamp
