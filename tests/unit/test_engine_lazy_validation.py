"""The engine validates lazily: context first, then only candidates no better match covers."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pytest
import re2

from services.rules import RuleEngine, RulePack
from services.rules.prompts import words
from services.rules.validators import VALIDATORS


def _pack(*rules: dict[str, Any]) -> RulePack:
    return RulePack.model_validate(
        {"pack": "t", "version": 1, "description": "t", "rules": list(rules)}
    )


def _card_rule(rule_id: str, **extra: Any) -> dict[str, Any]:
    return {
        "id": rule_id,
        "category": "pii",
        "entity": "CREDIT_CARD",
        "severity": "high",
        "description": "card",
        "validator": "luhn",
        "patterns": [{"name": "p", "regex": r"\b\d{16}\b"}],
        "examples": {
            "match": ["card 4111111111111111"],
            "no_match": ["4111111111111112"],
        },
        **extra,
    }


@pytest.fixture
def luhn_calls(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    calls: list[str] = []
    real = VALIDATORS["luhn"]

    def counting(value: str, args: Mapping[str, Any]) -> bool:
        calls.append(value)
        return real(value, args)

    monkeypatch.setitem(VALIDATORS, "luhn", counting)
    return calls


def test_context_required_rule_does_not_validate_without_context(
    luhn_calls: list[str],
) -> None:
    rule = _card_rule("pii.card_ctx", context=["card"], context_required=True)
    engine = RuleEngine([_pack(rule)])
    assert engine.scan("order 4111111111111111", "user") == []
    assert luhn_calls == []
    [m] = engine.scan("card 4111111111111111", "user")
    assert m.explanation == "pattern p, validator luhn, context word 'card'"
    assert luhn_calls == ["4111111111111111"]


def test_a_candidate_covered_by_a_better_match_is_not_validated(
    luhn_calls: list[str],
) -> None:
    better = {
        **_card_rule("pii.card_a"),
        "patterns": [{"name": "p", "regex": r"\b\d{16}\b", "score": 0.9}],
    }
    worse = {
        **_card_rule("pii.card_b"),
        "patterns": [{"name": "p", "regex": r"\b\d{16}\b", "score": 0.5}],
    }
    engine = RuleEngine([_pack(better, worse)])
    [m] = engine.scan("4111111111111111", "user")
    assert m.rule.id == "pii.card_a"
    assert luhn_calls == ["4111111111111111"]  # once, for the better rule only


def test_an_invalid_better_candidate_leaves_room_for_the_next(
    luhn_calls: list[str],
) -> None:
    long_ = {
        **_card_rule("pii.card_long"),
        "patterns": [{"name": "p", "regex": r"\b\d{17}\b"}],
    }
    engine = RuleEngine([_pack(long_, _card_rule("pii.card"))])
    assert engine.scan("41111111111111112", "user") == []  # 17 digits fail Luhn; no 16-digit hit
    assert [m.value for m in engine.scan("x 4111111111111111 y", "user")] == ["4111111111111111"]


@pytest.mark.parametrize(
    "text",
    [
        "Hello, wörld! 42 times",
        "Đây là tiếng Việt: 3,5 mg",
        "snake_case and x2 ½ ²",
        "日本語 テキスト",
        "",
    ],
)
def test_words_are_runs_of_letters_and_digits(text: str) -> None:
    expected = [(m.group().lower(), m.start(), m.end()) for m in re2.finditer(r"[\pL\pN]+", text)]
    assert words(text) == expected
