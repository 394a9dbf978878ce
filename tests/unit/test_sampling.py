"""Keyed-hash sampling of assistant answers (SPEC §5): hash, strata, rate edges, validation."""

from __future__ import annotations

import doctest
import hmac
import math
import random
from datetime import UTC, datetime
from typing import Any

import pytest
from scipy.stats import binomtest, chisquare

import services.sampling as sampling_module
from schemas.outputs import Finding
from services.sampling import HASH_DOMAIN, HmacSha256, SampleDecision, Sampler, is_always

KEY = b"test-key-0123456789abcdef"
IDS = [f"conv-{i}" for i in range(100_000)]


def finding(category: Any = "pii", severity: Any = "low", conversation_id: str = "c") -> Finding:
    return Finding(
        finding_id="f",
        event_id="e",
        conversation_id=conversation_id,
        turn_index=1,
        timestamp=datetime(2024, 1, 1, tzinfo=UTC),
        role="assistant",
        rule_id="r",
        category=category,
        entity="x",
        severity=severity,
        start=0,
        end=1,
        evidence="*",
        direction="output",
        score=0.5,
        explanation="test",
    )


# --- the hash -------------------------------------------------------------------------------


def test_unit_is_the_documented_construction() -> None:
    digest = hmac.new(KEY, HASH_DOMAIN + b"conv-42", "sha256").digest()
    expected = (int.from_bytes(digest[:8], "big") >> 11) / 2.0**53
    assert Sampler(KEY, 0.1).unit("conv-42") == expected


def test_unit_is_uniform_on_0_1() -> None:
    sampler = Sampler(KEY, 0.5)
    values = [sampler.unit(c) for c in IDS]
    assert all(0.0 <= v < 1.0 for v in values)
    bins = 100
    counts = [0] * bins
    for v in values:
        counts[int(v * bins)] += 1
    # Loose: a correct hash fails this about once in 10^4 keys; the key is fixed, so no flakes.
    assert chisquare(counts).pvalue > 1e-4
    mean = sum(values) / len(values)
    assert abs(mean - 0.5) < 4 * math.sqrt(1 / 12 / len(values))


@pytest.mark.parametrize("rate", [0.01, 0.1, 0.5])
def test_sampled_share_matches_rate(rate: float) -> None:
    sampler = Sampler(KEY, rate)
    hits = sum(sampler.in_sample(c) for c in IDS)
    assert binomtest(hits, len(IDS), rate).pvalue > 1e-4


def test_decisions_are_deterministic_across_instances() -> None:
    a, b = Sampler(KEY, 0.3), Sampler(bytearray(KEY), 0.3)
    assert [a.decide(c, []) for c in IDS[:5000]] == [b.decide(c, []) for c in IDS[:5000]]


def test_different_keys_sample_different_conversations() -> None:
    a, b = Sampler(KEY, 0.5), Sampler(KEY + b"!", 0.5)
    same = sum(a.in_sample(c) == b.in_sample(c) for c in IDS[:10_000])
    assert 4_700 < same < 5_300  # independent halves agree about half the time


def test_lower_rate_samples_a_subset() -> None:
    low, high = Sampler(KEY, 0.05), Sampler(KEY, 0.2)
    assert all(high.in_sample(c) for c in IDS[:20_000] if low.in_sample(c))


def test_answers_of_one_conversation_are_sampled_together() -> None:
    sampler = Sampler(KEY, 0.5)
    for c in IDS[:2000]:
        first = sampler.decide(c, [finding("pii", "low", c)])
        second = sampler.decide(c, [])
        assert first.sampled == second.sampled
        assert first.stratum == second.stratum == "sampled"


def test_unicode_ids_hash_as_utf8() -> None:
    sampler = Sampler(KEY, 0.5)
    digest = hmac.new(KEY, HASH_DOMAIN + "hội thoại-ü".encode(), "sha256").digest()
    assert sampler.unit("hội thoại-ü") == (int.from_bytes(digest[:8], "big") >> 11) / 2.0**53


# --- rate edges -----------------------------------------------------------------------------


def test_rate_zero_checks_only_the_always_stratum() -> None:
    sampler = Sampler(KEY, 0.0)
    assert not any(sampler.decide(c, []).sampled for c in IDS[:20_000])
    d = sampler.decide("c", [])
    assert d == SampleDecision(sampled=False, stratum="sampled", inclusion_probability=0.0)
    always = sampler.decide("c", [finding("medical", "low")])
    assert always == SampleDecision(sampled=True, stratum="always", inclusion_probability=1.0)


def test_rate_one_checks_everything() -> None:
    sampler = Sampler(KEY, 1.0)
    assert all(sampler.decide(c, []).sampled for c in IDS[:20_000])
    assert sampler.decide("c", []).inclusion_probability == 1.0


def test_tiny_rate_is_valid_and_almost_never_samples() -> None:
    sampler = Sampler(KEY, 1e-9)
    assert sampler.rate == 1e-9
    assert sum(sampler.in_sample(c) for c in IDS) == 0
    assert sampler.decide("c", []).inclusion_probability == 1e-9


@pytest.mark.parametrize(
    "rate", [-0.1, -1e-12, 1.0000001, 2, math.nan, math.inf, -math.inf, "0.5", None, True, False]
)
def test_rate_out_of_range_or_wrong_type_raises(rate: Any) -> None:
    with pytest.raises(ValueError, match="rate"):
        Sampler(KEY, rate)


def test_integer_rates_zero_and_one_are_accepted() -> None:
    assert Sampler(KEY, 0).rate == 0.0
    assert Sampler(KEY, 1).rate == 1.0


@pytest.mark.parametrize("key", [b"", bytearray(), "text key", None, 123])
def test_bad_key_raises(key: Any) -> None:
    with pytest.raises(ValueError, match="key"):
        Sampler(key, 0.5)


@pytest.mark.parametrize("conversation_id", ["", None, 42, b"bytes"])
def test_bad_conversation_id_raises(conversation_id: Any) -> None:
    with pytest.raises(ValueError, match="conversation_id"):
        Sampler(KEY, 0.5).decide(conversation_id, [])


def test_repr_hides_the_key() -> None:
    assert "test-key" not in repr(Sampler(KEY, 0.5))
    assert repr(Sampler(KEY, 0.5)) == "Sampler(rate=0.5)"


# --- strata ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("category", "severity", "stratum"),
    [
        ("medical", "low", "always"),
        ("medical", "medium", "always"),
        ("medical", "critical", "always"),
        ("pii", "high", "always"),
        ("secret", "critical", "always"),
        ("prompt_leak", "high", "always"),
        ("abstention", "high", "always"),
        ("pii", "low", "sampled"),
        ("pii", "medium", "sampled"),
        ("secret", "medium", "sampled"),
        ("prompt_leak", "low", "sampled"),
        ("abstention", "low", "sampled"),
    ],
)
def test_always_stratum_rules(category: str, severity: str, stratum: str) -> None:
    sampler = Sampler(KEY, 0.0)
    d = sampler.decide("c", [finding(category, severity)])
    assert d.stratum == stratum
    assert d.sampled == (stratum == "always")
    assert d.inclusion_probability == (1.0 if stratum == "always" else 0.0)


def test_one_qualifying_finding_among_others_is_enough() -> None:
    findings = [finding("pii", "low"), finding("abstention", "medium"), finding("secret", "high")]
    assert is_always(findings)
    assert Sampler(KEY, 0.0).decide("c", findings).stratum == "always"


def test_no_findings_is_the_sampled_stratum() -> None:
    assert not is_always([])
    assert Sampler(KEY, 0.25).decide("c", []).stratum == "sampled"


def test_always_stratum_ignores_the_hash() -> None:
    sampler = Sampler(KEY, 0.01)
    for c in IDS[:2000]:
        assert sampler.decide(c, [finding("medical", "low", c)]).sampled


def test_finding_of_another_conversation_raises() -> None:
    with pytest.raises(ValueError, match="another conversation"):
        Sampler(KEY, 0.5).decide("a", [finding("pii", "low", "b")])


def test_decision_is_frozen_and_validated() -> None:
    d = Sampler(KEY, 0.5).decide("c", [])
    with pytest.raises(ValueError):
        d.sampled = True  # type: ignore[misc]
    with pytest.raises(ValueError):
        SampleDecision(sampled=True, stratum="sampled", inclusion_probability=1.5)
    with pytest.raises(ValueError):
        SampleDecision(sampled=True, stratum="other", inclusion_probability=0.5)  # type: ignore[arg-type]


def test_module_doctests() -> None:
    result = doctest.testmod(sampling_module, optionflags=doctest.ELLIPSIS)
    assert result.attempted > 0
    assert result.failed == 0


def test_hmac_sha256_with_its_pads_hashed_once_is_hmac() -> None:
    rng = random.Random(3)
    for size in [*range(1, 70), 100, 128, 129, 200]:
        key = rng.randbytes(size)
        h = HmacSha256(key)
        for _ in range(5):
            msg = rng.randbytes(rng.randint(0, 300))
            assert h.digest(msg) == hmac.digest(key, msg, "sha256")


def test_a_sampler_shares_its_three_decisions() -> None:
    s = Sampler(b"k", 0.5)
    ids = [f"conv-{i}" for i in range(40)]
    got = [s.decide(c, []) for c in ids]
    assert {id(d) for d in got} == {id(s.decide(c, [])) for c in ids}
    assert {(d.sampled, d.stratum, d.inclusion_probability) for d in got} == {
        (True, "sampled", 0.5),
        (False, "sampled", 0.5),
    }
    assert all(d.sampled == (s.unit(c) < 0.5) for d, c in zip(got, ids, strict=True))
