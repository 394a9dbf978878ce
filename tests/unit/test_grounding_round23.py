"""The twenty-third round (issue 10): an answer that sends the user to a professional anchors
its sentences of general advice as one that declines does. Own sentences in English, Dutch and
Vietnamese with an invented drug (zorvatil); every rule has a must-flag twin that is still
caught."""

from __future__ import annotations

import pytest

from services.grounding.claims import atomic_claims
from tests.support.grounding_checks import critical
from tests.support.grounding_checks import numbered_report as report

_PASSAGES = {
    "en": "Zorvatil 20 mg tablets: adults take 20 mg once a day. Take the tablet with water.",
    "nl": "Zorvatil 20 mg tabletten: volwassenen nemen 20 mg eenmaal daags. Neem de tablet in "
    "met water.",
    "vi": "Zorvatil 20 mg: người lớn uống 20 mg mỗi ngày một lần. Uống viên thuốc với nước.",
}

#: a referral, a sentence of general advice in words no passage holds, the same advice naming
#: the drug, and a dose no passage holds
_REFERRING = [
    (
        "Please ask your pharmacist before you change anything.",
        "Keep the box with you when you go.",
        "Zorvatil is best kept in the box when you go.",
        "Take 60 mg of zorvatil a day.",
        "en",
    ),
    (
        "Vraag het eerst aan uw apotheker voordat u iets verandert.",
        "Houd het doosje bij u als u gaat.",
        "Bewaar zorvatil het liefst in het doosje als u gaat.",
        "Neem 60 mg zorvatil per dag.",
        "nl",
    ),
    (
        "Bạn hãy hỏi dược sĩ trước khi thay đổi bất cứ điều gì.",
        "Hãy luôn mang theo hộp thuốc bên mình.",
        "Zorvatil nên được giữ trong hộp khi bạn đi ra ngoài.",
        "Uống 60 mg zorvatil mỗi ngày.",
        "vi",
    ),
]


@pytest.mark.parametrize(("referral", "advice", "named", "dose", "language"), _REFERRING)
def test_general_advice_in_an_answer_that_refers_is_no_finding(
    referral: str, advice: str, named: str, dose: str, language: str
) -> None:
    passage = _PASSAGES[language]
    (claim,) = atomic_claims(f"{advice} {referral}", language)  # the referral is no claim
    assert claim.kind == "other" and claim.general
    assert not report(f"{advice} {referral}", [passage], language).ungrounded
    # must-flag twins: the advice without the referral, advice that names the drug in words
    # no passage holds, and a dose no passage holds, each beside the same referral
    assert report(advice, [passage], language).ungrounded
    assert report(f"{named} {referral}", [passage], language).ungrounded == [named]
    assert critical(report(f"{dose} {referral}", [passage], language))
