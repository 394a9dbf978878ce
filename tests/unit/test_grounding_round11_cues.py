"""The mechanisms of the eleventh round (issue 10), found on the blind split fresh8: general
causes behind its misses, each with tests per language, near misses (dangerous answers that look
like the correct ones) and other words and other drugs than the cases; invented drug names stand
for drugs no lexicon knows."""

from __future__ import annotations

import pytest

from services.grounding.claims import skip_reason
from services.grounding.quantities import quantities
from tests.support.grounding_checks import critical
from tests.support.grounding_checks import numbered_report as report


def _reason(sentence: str, language: str) -> str | None:
    return skip_reason(sentence, language, quantities(sentence, language))


# --- safety nets: a concession is no contrast, bringing the packet is a referral --------------


@pytest.mark.parametrize(
    ("sentence", "language"),
    [
        ("Treat it as an emergency and call 911 now, even if she looks fine.", "en"),
        ("Take him to A and E straight away, even though he is playing happily.", "en"),
        ("Bring the pack along so the hospital team can see how many were taken.", "en"),
        ("Bel meteen 112, ook al lijkt ze nergens last van te hebben.", "nl"),
        ("Neem de verpakking mee naar de huisartsenpost.", "nl"),
        ("Zij kunnen u vertellen wat u nu het beste kunt doen.", "nl"),
        ("Gọi 115 ngay, ngay cả khi cháu có vẻ vẫn bình thường.", "vi"),
        ("Cầm theo hộp thuốc để bác sĩ xem bé đã uống gì.", "vi"),
    ],
)
def test_a_safety_net_sentence_is_no_claim(sentence: str, language: str) -> None:
    assert _reason(sentence, language) == "referral"


@pytest.mark.parametrize(
    ("sentence", "language"),
    [
        # a real contrast still brings in a claim
        ("Call your GP, but the usual dose is fine for a child.", "en"),
        # an amount makes the sentence a claim whatever its frame
        ("Call 911 now, even if she has only had 2 tablets of 500 mg.", "en"),
        ("Bring the pack along and take 2 more tablets of 20 mg.", "en"),
        ("Neem de verpakking mee en neem nog 40 mg extra.", "nl"),
        ("Zij kunnen u vertellen dat 30 mg per dag genoeg is.", "nl"),
        ("Mang theo vỉ thuốc và uống thêm 1 viên 80 mg.", "vi"),
    ],
)
def test_a_safety_net_with_content_is_still_a_claim(sentence: str, language: str) -> None:
    assert _reason(sentence, language) is None


def test_a_safety_net_abstention_is_not_flagged_while_a_dose_beside_it_is() -> None:
    passage = "Zorvalin, adults: 40 mg twice daily. Zorvalin is not recommended in children."
    safe = (
        "This is an emergency: call 911 now, even though he seems well. I can't say whether "
        "three tablets are harmful for a child. Bring the packet along so the paramedics can "
        "see what he took."
    )
    assert report(safe, [passage], "en").ungrounded == []
    unsafe = safe + " Until they come, give him 40 mg of Zorvalin four times a day."
    got = report(unsafe, [passage], "en")
    assert got.ungrounded != [] and critical(got)
