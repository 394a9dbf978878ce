"""Raw bytes → ChatEvent or DeadLetter, with reasons and no content in the detail."""

from __future__ import annotations

import base64
import hashlib
import json

import pytest

from schemas import ChatEvent, DeadLetter
from services.ingest import JSON_OVERHEAD_BYTES, DeadLetterPolicy, decode_event

SECRET = "jan.jansen@example.nl"
GOOD = {
    "schema_version": 1,
    "event_id": "e1",
    "conversation_id": "c1",
    "turn_index": 0,
    "timestamp": "2026-11-02T10:00:00Z",
    "role": "user",
    "content": f"mail {SECRET}",
}


KEY = b"k" * 32


def _decode(
    raw: bytes, limit: int = 65536, keep: int = 4096, *, keep_raw: bool = True
) -> ChatEvent | DeadLetter:
    policy = DeadLetterPolicy(keep_bytes=keep, key=KEY, keep_raw=keep_raw)
    return decode_event(raw, source="test:1", max_content_bytes=limit, policy=policy)


def test_good_event() -> None:
    assert isinstance(_decode(json.dumps(GOOD).encode()), ChatEvent)


@pytest.mark.parametrize(
    ("raw", "reason"),
    [
        (b"{not json", "bad_json"),
        (b"", "bad_json"),
        (b"\xff\xfe\x00", "bad_utf8"),
        (
            json.dumps({**GOOD, "content": "caf\u00e9"}).encode("latin-1", "replace")[:-2]
            + b"\xe9}",
            "bad_utf8",
        ),
        (b"[1, 2]", "schema"),
        (json.dumps({**GOOD, "role": "bot"}).encode(), "schema"),
        (json.dumps({**GOOD, "content": "x" * 70000}).encode(), "oversize"),
        (json.dumps({**GOOD, "content": "\ud800"}).encode(), "bad_json"),  # lone surrogate
    ],
)
def test_dead_letters_have_reasons(raw: bytes, reason: str) -> None:
    out = _decode(raw)
    assert isinstance(out, DeadLetter)
    assert out.reason == reason
    assert out.source == "test:1"
    assert out.original_b64 is not None  # keep_raw: the debugging mode
    assert base64.b64decode(out.original_b64) == raw[:4096]
    assert out.digest == hashlib.blake2b(raw, key=KEY, digest_size=16).hexdigest()


def test_detail_never_quotes_content() -> None:
    out = _decode(json.dumps({**GOOD, "turn_index": "zero"}).encode())
    assert isinstance(out, DeadLetter)
    assert "turn_index" in out.detail
    assert SECRET not in out.detail


def test_huge_message_is_rejected_before_parsing_and_truncated() -> None:
    raw = b"{" + b" " * (1000 + JSON_OVERHEAD_BYTES) + b"}"
    out = _decode(raw, limit=1000, keep=16)
    assert isinstance(out, DeadLetter)
    assert out.reason == "oversize"
    assert out.truncated and out.original_size == len(raw)
    assert out.original_b64 is not None
    assert len(base64.b64decode(out.original_b64)) == 16


def test_by_default_no_raw_bytes_and_no_text_without_a_masker() -> None:
    raw = b'{"content": "bel 0901 118 800"'
    out = _decode(raw, keep_raw=False)
    assert isinstance(out, DeadLetter) and out.reason == "bad_json"
    assert out.original_b64 is None and out.masked is None
    assert out.original_size == len(raw) and len(out.digest) == 32
