"""The screening stage: directions, masking, memory bounds, purity."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from schemas import ChatEvent
from services.rules import RuleEngine, RulePack
from services.screening import ConversationMemory, MemoryLimits, screen, value_hash

KEY = b"test-key"
PACK = RulePack.model_validate(
    {
        "pack": "t",
        "version": 1,
        "description": "test pack",
        "rules": [
            {
                "id": "pii.email",
                "category": "pii",
                "entity": "EMAIL_ADDRESS",
                "severity": "high",
                "description": "email",
                "patterns": [
                    {"name": "e", "regex": r"(?i)\b[a-z0-9._-]+@[a-z0-9.-]+\.[a-z]{2,}\b"}
                ],
                "examples": {"match": ["a@b.nl"], "no_match": ["a at b"]},
            },
            {
                "id": "medical.dose",
                "category": "medical",
                "entity": "DOSE_STATEMENT",
                "severity": "medium",
                "description": "dose",
                "roles": ["assistant"],
                "mask": "none",
                "patterns": [{"name": "d", "regex": r"(?i)\b\d+ ?mg\b"}],
                "examples": {"match": ["500 mg"], "no_match": ["500 km"]},
            },
            {
                "id": "abstention.idk",
                "category": "abstention",
                "entity": "ABSTENTION",
                "severity": "low",
                "description": "abstain",
                "roles": ["assistant"],
                "mask": "none",
                "patterns": [{"name": "a", "regex": r"(?i)i don't know"}],
                "examples": {"match": ["I don't know"], "no_match": ["I know"]},
            },
        ],
    }
)
ENGINE = RuleEngine([PACK])
T0 = datetime(2026, 11, 2, 10, 0, tzinfo=UTC)


def ev(
    turn: int, role: str, content: str, conv: str = "c1", at: datetime = T0, **kw: object
) -> ChatEvent:
    return ChatEvent.model_validate(
        {
            "schema_version": 1,
            "event_id": f"{conv}-{turn}",
            "conversation_id": conv,
            "turn_index": turn,
            "timestamp": at,
            "role": role,
            "content": content,
            **kw,
        },
        strict=False,
    )


def test_user_value_is_input_and_assistant_echo_vs_leak() -> None:
    first = screen(ev(0, "user", "I am Anna.de.Vries@Example.nl"), ENGINE, None, key=KEY)
    assert [f.direction for f in first.findings] == ["input"]
    assert first.memory is not None
    reply = ev(1, "assistant", "Noted anna.de.vries@example.nl; ask piet@example.com too")
    second = screen(reply, ENGINE, first.memory, key=KEY)
    assert [(f.evidence, f.direction) for f in second.findings] == [
        ("a***@***.nl", "echo"),
        ("p***@***.com", "leak"),
    ]


def test_memory_holds_hashes_not_values() -> None:
    out = screen(ev(0, "user", "mail me: secret.person@example.nl"), ENGINE, None, key=KEY)
    dumped = out.memory.model_dump_json() if out.memory else ""
    assert "secret" not in dumped and "example" not in dumped
    assert value_hash("secret.person@example.nl", KEY) in out.memory.seen  # type: ignore[union-attr]


def test_another_conversation_does_not_count_as_echo() -> None:
    mine = screen(ev(0, "user", "x@example.nl", conv="a"), ENGINE, None, key=KEY)
    store = {"a": mine.memory}
    other = screen(ev(1, "assistant", "x@example.nl", conv="b"), ENGINE, store.get("b"), key=KEY)
    assert other.findings[0].direction == "leak"


def test_memory_expires_by_age_and_is_bounded() -> None:
    limits = MemoryLimits(max_values=3, max_age_seconds=60)
    mem = ConversationMemory()
    mem = mem.remember([(d, None) for d in "abcd"], now=0.0, limits=limits)
    assert len(mem.seen) == 3
    mem = mem.remember([("e", None)], now=10.0, limits=limits)
    assert "e" in mem.seen and len(mem.seen) == 3
    assert mem.knows("e", now=10.0, limits=limits, turn=0)
    assert not mem.knows("e", now=100.0, limits=limits, turn=0)


def test_old_user_value_is_a_leak_after_expiry() -> None:
    limits = MemoryLimits(max_age_seconds=60)
    first = screen(ev(0, "user", "q@example.nl"), ENGINE, None, key=KEY, limits=limits)
    late = ev(1, "assistant", "q@example.nl", at=T0 + timedelta(minutes=5))
    assert (
        screen(late, ENGINE, first.memory, key=KEY, limits=limits).findings[0].direction == "leak"
    )


def test_medical_and_abstention_in_answers_are_output() -> None:
    out = screen(ev(1, "assistant", "I don't know; the leaflet says 500 mg"), ENGINE, None, key=KEY)
    assert {(f.category, f.direction) for f in out.findings} == {
        ("abstention", "output"),
        ("medical", "output"),
    }
    assert out.abstained is True
    dose = next(f for f in out.findings if f.category == "medical")
    assert dose.evidence == "500 mg"


@pytest.mark.parametrize(("flag", "expected"), [(None, False), (True, True), (False, False)])
def test_abstained_flag_wins_over_rules(flag: bool | None, expected: bool) -> None:
    out = screen(ev(1, "assistant", "Take 500 mg", abstained=flag), ENGINE, None, key=KEY)
    assert out.abstained is expected


def test_user_turn_has_no_abstention_and_rules_respect_roles() -> None:
    out = screen(ev(0, "user", "I don't know if 500 mg is right"), ENGINE, None, key=KEY)
    assert out.findings == [] and out.abstained is None


def test_screen_does_not_mutate_memory_and_is_deterministic() -> None:
    mem = ConversationMemory.load(b'{"seen": {"x": 1.0}}')  # the older form still reads
    event = ev(0, "user", "z@example.nl")
    a = screen(event, ENGINE, mem, key=KEY)
    b = screen(event, ENGINE, mem, key=KEY)
    assert mem.seen == {"x": (1.0, 0, None)}
    assert a.findings == b.findings and a.memory == b.memory


def test_finding_offsets_point_at_the_value() -> None:
    text = "héllo — ünïcode first: me@example.nl"
    f = screen(ev(0, "user", text), ENGINE, None, key=KEY).findings[0]
    assert text[f.start : f.end] == "me@example.nl"
    assert f.finding_id == f"c1-0:pii.email:{f.start}-{f.end}"
