"""Invalid input on the real broker goes to the dead-letter topic and the worker keeps going.

Bad JSON, schema violations (unknown role, empty event id, missing field), over-size content and
invalid UTF-8 are produced straight into the input topic, interleaved with good events of the same
conversation (same key, so the same partition, in order). Each bad message must come out of
``vigil.dlq`` as a ``DeadLetter`` with the right reason, its length and keyed digest, and its text
truncated to ``VIGIL_DEAD_LETTER_KEEP_BYTES`` with personal data masked — never the raw bytes (a
phone number and an address in a broken line stay out of the topic); every good event after it
must still produce its findings (with conversation memory intact); the process stays up and
``/healthz`` answers.
"""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from collections.abc import Callable

from schemas import DeadLetter
from services.settings import Settings
from tests.support.chat_events import event, invalid_lines
from tests.support.kafka_io import TopicReader, invalid_by_reason, produce
from tests.support.parity import findings_of
from tests.support.worker_process import VigilStack

KEEP_BYTES = 100
SENTINEL = "SENTINEL-7731-QX"
PHONE, EMAIL = "0901 118 800", "an.nguyen@example.vn"
CONV = "dlq-conv-1"


def _good(turn: int) -> dict[str, object]:
    return event(
        f"dlq-good-{turn}",
        CONV,
        turn,
        "user",
        f"Reach me at person{turn}.dlq@example.org please.",
    )


def _bad_messages() -> list[tuple[str, bytes]]:
    bad = invalid_lines("dlq")
    leaky = event("dlq-s", CONV, 0, "wizard", f"{SENTINEL} secret words")
    bad.append(("schema", json.dumps(leaky).encode()))  # content must not reach the detail
    bad.append(("bad_json", b""))
    bad.append(("bad_json", f'{{"content": "bel {PHONE} of mail {EMAIL}"'.encode()))
    bad.append(("bad_utf8", json.dumps(_good(99)).encode()[:-30] + b"\xc3\x28" + b'"}'))
    return bad


def test_invalid_messages_go_to_dlq_and_worker_keeps_going(
    vigil_stack: Callable[..., VigilStack],
) -> None:
    stack = vigil_stack("dlq")
    worker = stack.start_worker(VIGIL_DEAD_LETTER_KEEP_BYTES=str(KEEP_BYTES))
    bad = _bad_messages()
    messages: list[tuple[bytes | None, bytes]] = []
    expected: list[tuple[str, bytes] | None] = []  # per message: (reason, raw) or None if good
    turn = 0
    for reason, raw in bad:
        messages.append((CONV.encode(), json.dumps(_good(turn)).encode()))
        expected.append(None)
        turn += 1
        messages.append((CONV.encode(), raw))
        expected.append((reason, raw))
    # After every bad one: good events, and an answer that echoes the first user's address.
    messages.append((CONV.encode(), json.dumps(_good(turn)).encode()))
    expected.append(None)
    echo = event(
        "dlq-answer", CONV, turn + 1, "assistant", "I will mail PERSON0.DLQ@EXAMPLE.ORG today."
    )
    messages.append((CONV.encode(), json.dumps(echo).encode()))
    expected.append(None)

    metadata = produce(stack.bootstrap, stack.input_topic, messages)
    assert len({m.partition for m in metadata}) == 1
    by_source = {
        f"{m.topic}/{m.partition}/{m.offset}": exp
        for m, exp in zip(metadata, expected, strict=True)
        if exp is not None
    }

    dlq = TopicReader(stack.bootstrap, stack.dlq_topic)
    findings = TopicReader(stack.bootstrap, stack.findings_topic)
    good_ids = {
        json.loads(v)["event_id"] for (_, v), e in zip(messages, expected, strict=True) if e is None
    }
    try:
        dlq.read_until(
            lambda r: len(r) >= len(bad), 180, f"{len(bad)} dead letters", stack.diagnostics
        )
        findings.read_until(
            lambda r: {f.event_id for f in findings_of(r)} >= good_ids,
            180,
            f"findings for all {len(good_ids)} good events",
            stack.diagnostics,
        )
        dlq.drain(quiet_s=1.0)

        assert len(dlq.records) == len(bad), "one dead letter per invalid message"
        key = Settings().key_bytes  # the stack runs with the built-in development key
        for record in dlq.records:
            dead = DeadLetter.model_validate_json(record.value)
            assert record.key == CONV.encode(), "dead letters keep the original key"
            assert dead.source in by_source, f"dead letter from unknown source {dead.source}"
            reason, raw = by_source.pop(dead.source)
            assert dead.reason == reason, (
                f"{dead.source}: {dead.reason} != {reason} ({dead.detail})"
            )
            assert dead.original_b64 is None, "raw bytes only with VIGIL_DEAD_LETTER_RAW"
            assert dead.digest == hashlib.blake2b(raw, key=key, digest_size=16).hexdigest()
            assert (dead.masked is None) == (reason == "bad_utf8")
            assert len((dead.masked or "").encode()) <= KEEP_BYTES
            for value in (PHONE, PHONE.replace(" ", ""), EMAIL):
                assert value.encode() not in record.value, f"{value} in the DLQ topic"
            assert dead.original_size == len(raw)
            assert dead.truncated == (len(raw) > KEEP_BYTES)
            assert SENTINEL not in dead.detail and "wizard" not in dead.detail
        assert not by_source, f"no dead letter for {sorted(by_source)}"

        got = findings_of(findings.records)
        for eid in good_ids - {"dlq-answer"}:
            hits = [f for f in got if f.event_id == eid and f.entity == "EMAIL_ADDRESS"]
            assert [f.direction for f in hits] == ["input"], (eid, hits)
        answer = [f for f in got if f.event_id == "dlq-answer" and f.entity == "EMAIL_ADDRESS"]
        assert [f.direction for f in answer] == ["echo"], "memory survived the bad messages"

        assert worker.alive, worker.diagnostics()
        assert worker.healthz() is not None, "/healthz stopped answering"
        counts = invalid_by_reason(worker.metrics())
        assert {k[0]: n for k, n in counts.items() if n} == Counter(r for r, _ in bad)
    finally:
        dlq.close()
        findings.close()
