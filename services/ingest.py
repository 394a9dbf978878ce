"""Ingest: raw bytes from Kafka or a file line → ``ChatEvent`` or ``DeadLetter``.

Invalid input never stops the caller: bad UTF-8, bad JSON, schema violations and over-size
messages become dead letters with a reason and a detail that never quotes the content. What a
dead letter keeps of the message is a :class:`DeadLetterPolicy`: by default its length, a keyed
digest and its text with the values the screening rules find masked (no text at all when it is
not valid UTF-8); the raw bytes (base64, truncated) only when asked for.
"""

from __future__ import annotations

import base64
import hashlib
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime

from pydantic import ValidationError

from schemas.events import ChatEvent
from schemas.outputs import DeadLetter, DeadLetterReason

__all__ = ["JSON_OVERHEAD_BYTES", "DeadLetterPolicy", "dead_letter", "decode_event"]

#: Room for the JSON envelope around ``content``: a raw message larger than the content limit plus
#: this is rejected before it is parsed.
JSON_OVERHEAD_BYTES = 256 * 1024


@dataclass(frozen=True, slots=True)
class DeadLetterPolicy:
    """What a dead letter keeps of the message.

    ``keep_bytes``: how much of it (masked text or raw bytes); ``key``: the digest's key;
    ``redact``: masks the values in a text (the screening rules, :meth:`Pipeline.redact`);
    ``keep_raw``: keep the raw bytes too (``VIGIL_DEAD_LETTER_RAW``).
    """

    keep_bytes: int = 4096
    key: bytes = b""
    redact: Callable[[str], str] | None = None
    keep_raw: bool = False


def _masked_text(kept: bytes, truncated: bool, redact: Callable[[str], str] | None) -> str | None:
    """The kept bytes as text with its values masked, or ``None`` when that is not possible."""
    if redact is None:
        return None
    try:
        text = kept.decode("utf-8")
    except UnicodeDecodeError as exc:
        # A cut through the last character is not bad UTF-8; anything else is.
        if not truncated or exc.start < len(kept) - 3:
            return None
        text = kept[: exc.start].decode("utf-8")
    if truncated:
        # A value cut at the end is not found by the rules: drop the last, partial word.
        text = text[: max(0, max(text.rfind(" "), text.rfind("\n")))]
    return redact(text)


def dead_letter(
    raw: bytes,
    reason: DeadLetterReason,
    detail: str,
    source: str,
    policy: DeadLetterPolicy = DeadLetterPolicy(),
) -> DeadLetter:
    kept = raw[: policy.keep_bytes]
    truncated = len(kept) < len(raw)
    digest = hashlib.blake2b(raw, key=policy.key[:64], digest_size=16).hexdigest()
    masked = None if reason == "bad_utf8" else _masked_text(kept, truncated, policy.redact)
    return DeadLetter(
        reason=reason,
        detail=detail[:1000],
        source=source,
        received_at=datetime.now(UTC),
        original_size=len(raw),
        digest=digest,
        masked=masked,
        original_b64=base64.b64encode(kept).decode("ascii") if policy.keep_raw else None,
        truncated=truncated,
    )


def _schema_detail(exc: ValidationError) -> tuple[DeadLetterReason, str]:
    parts = []
    reason: DeadLetterReason = "schema"
    for err in exc.errors(include_input=False, include_url=False, include_context=False):
        loc = ".".join(str(p) for p in err["loc"]) or "(root)"
        msg = err["msg"]
        if err["type"] == "json_invalid":
            return "bad_json", f"invalid JSON: {msg}"
        if loc == "content" and "over the limit" in msg:
            reason = "oversize"
        parts.append(f"{loc}: {msg}")
    return reason, "; ".join(parts)


def decode_event(
    raw: bytes,
    *,
    source: str,
    max_content_bytes: int,
    policy: DeadLetterPolicy = DeadLetterPolicy(),
) -> ChatEvent | DeadLetter:
    """Parse one message. Returns the event, or the dead letter that explains why not."""
    if len(raw) > max_content_bytes + JSON_OVERHEAD_BYTES:
        detail = (
            f"message is {len(raw)} bytes, over the limit of {max_content_bytes} bytes of content"
        )
        return dead_letter(raw, "oversize", detail, source, policy)
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        return dead_letter(raw, "bad_utf8", f"invalid UTF-8 at byte {exc.start}", source, policy)
    try:
        return ChatEvent.model_validate_json(text, context={"max_content_bytes": max_content_bytes})
    except ValidationError as exc:
        reason, detail = _schema_detail(exc)
        return dead_letter(raw, reason, detail, source, policy)
