"""Ingest: raw bytes from Kafka or a file line → ``ChatEvent`` or ``DeadLetter``.

Invalid input never stops the caller: bad UTF-8, bad JSON, schema violations and over-size
messages become dead letters with a reason, a detail that never quotes the content, and the
original bytes (base64, truncated).
"""

from __future__ import annotations

import base64
from datetime import UTC, datetime

from pydantic import ValidationError

from schemas.events import ChatEvent
from schemas.outputs import DeadLetter, DeadLetterReason

__all__ = ["JSON_OVERHEAD_BYTES", "dead_letter", "decode_event"]

#: Room for the JSON envelope around ``content``: a raw message larger than the content limit plus
#: this is rejected before it is parsed.
JSON_OVERHEAD_BYTES = 256 * 1024


def dead_letter(
    raw: bytes, reason: DeadLetterReason, detail: str, source: str, keep_bytes: int
) -> DeadLetter:
    kept = raw[:keep_bytes]
    return DeadLetter(
        reason=reason,
        detail=detail[:1000],
        source=source,
        received_at=datetime.now(UTC),
        original_size=len(raw),
        original_b64=base64.b64encode(kept).decode("ascii"),
        truncated=len(kept) < len(raw),
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
    raw: bytes, *, source: str, max_content_bytes: int, keep_bytes: int = 4096
) -> ChatEvent | DeadLetter:
    """Parse one message. Returns the event, or the dead letter that explains why not."""
    if len(raw) > max_content_bytes + JSON_OVERHEAD_BYTES:
        detail = (
            f"message is {len(raw)} bytes, over the limit of {max_content_bytes} bytes of content"
        )
        return dead_letter(raw, "oversize", detail, source, keep_bytes)
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        return dead_letter(
            raw, "bad_utf8", f"invalid UTF-8 at byte {exc.start}", source, keep_bytes
        )
    try:
        return ChatEvent.model_validate_json(text, context={"max_content_bytes": max_content_bytes})
    except ValidationError as exc:
        reason, detail = _schema_detail(exc)
        return dead_letter(raw, reason, detail, source, keep_bytes)
