"""Masking of evidence: the monitor must not become a leak itself."""

from __future__ import annotations

import pytest

from services.rules.masking import EVIDENCE_MAX_CHARS, mask

KEY = b"test-key"


@pytest.mark.parametrize(
    ("value", "entity", "expected"),
    [
        ("06-12345678", "PHONE_NUMBER", "**-******78"),
        ("4111 1111 1111 1111", "CREDIT_CARD", "**** **** **** 1111"),
        ("NL91 ABNA 0417 1643 00", "IBAN_CODE", "**** **** **** **43 00"),
        ("123456782", "NL_BSN", "*******82"),
        ("536-22-1234", "US_SSN", "***-**-**34"),
        ("84.241.11.7", "IP_ADDRESS", "**.***.*1.7"),
        ("jan.devries@example.nl", "EMAIL_ADDRESS", "j***@***.nl"),
        ("a@localhost", "EMAIL_ADDRESS", "a***@***"),
        ("ab", "PHONE_NUMBER", "**"),
    ],
)
def test_partial_keeps_shape_and_at_most_a_quarter(value: str, entity: str, expected: str) -> None:
    out = mask(value, "partial", entity, KEY)
    assert out == expected
    shown = sum(a == b and a.isalnum() for a, b in zip(out, value, strict=False))
    assert shown <= min(4, sum(ch.isalnum() for ch in value) // 4) or entity == "EMAIL_ADDRESS"


def test_partial_never_shows_the_email_local_part_or_domain() -> None:
    out = mask("sarah.whitfield82@gmail.com", "partial", "EMAIL_ADDRESS", KEY)
    assert "whitfield" not in out and "gmail" not in out and out.endswith(".com")


def test_full_names_only_the_entity() -> None:
    assert mask("Zomer2024!", "full", "PASSWORD", KEY) == "[PASSWORD]"


def test_hash_is_keyed_stable_and_short() -> None:
    a = mask("AKIAXHX7B5S5JL76D3IG", "hash", "AWS_ACCESS_KEY", KEY)
    assert a == mask("AKIAXHX7B5S5JL76D3IG", "hash", "AWS_ACCESS_KEY", KEY)
    assert a.startswith("[AWS_ACCESS_KEY:") and len(a) == len("[AWS_ACCESS_KEY:]") + 8
    assert "AKIA" not in a
    assert a != mask("AKIAXHX7B5S5JL76D3IG", "hash", "AWS_ACCESS_KEY", b"other-key")
    assert a != mask("AKIAXHX7B5S5JL76D3IH", "hash", "AWS_ACCESS_KEY", KEY)


def test_none_keeps_the_text_but_truncates() -> None:
    assert mask("500 mg", "none", "DOSE_STATEMENT", KEY) == "500 mg"
    long = "x" * (EVIDENCE_MAX_CHARS + 50)
    out = mask(long, "none", "SYSTEM_PROMPT", KEY)
    assert len(out) == EVIDENCE_MAX_CHARS and out.endswith("…")


def test_partial_is_bounded_too() -> None:
    out = mask("1" * 1000, "partial", "CREDIT_CARD", KEY)
    assert len(out) == EVIDENCE_MAX_CHARS and set(out) == {"*"}


def test_non_ascii_and_lone_surrogates_do_not_crash() -> None:
    assert mask("tôi@ví.vn", "partial", "EMAIL_ADDRESS", KEY) == "t***@***.vn"
    assert mask("\udcff", "hash", "PASSWORD", KEY).startswith("[PASSWORD:")


def test_unknown_strategy_fails_loudly() -> None:
    with pytest.raises(ValueError, match="unknown mask strategy"):
        mask("x", "rot13", "PASSWORD", KEY)
