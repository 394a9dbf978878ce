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


# --- a list of contraindications, and a permission about the drug of the sentence before -------

#: a passage that lists contraindications after a colon, a dose sentence naming the drug, a
#: permission for a listed condition that names no drug, and one for a condition the list
#: leaves out (no passage speaks about it), per language
_LISTED = [
    (
        "Do not use Zorvatil: if you are allergic to zorvatil; if you have active Crohn's "
        "disease; if you have a serious infection such as active tuberculosis.",
        "Zorvatil 20 mg tablets: adults take 20 mg once a day.",
        "Adults take 20 mg of zorvatil once a day.",
        "There is no objection to using it with active Crohn's disease.",
        "There is no objection to using it with mild eczema.",
        "en",
    ),
    (
        "Gebruik Zorvatil niet: als u allergisch bent voor zorvatil; als u de actieve ziekte van "
        "Crohn heeft; als u een ernstige infectie heeft, zoals actieve tuberculose.",
        "Zorvatil 20 mg tabletten: volwassenen nemen 20 mg eenmaal daags.",
        "Volwassenen nemen 20 mg zorvatil eenmaal daags.",
        "Er is geen bezwaar tegen gebruik bij een actieve ziekte van Crohn.",
        "Er is geen bezwaar tegen gebruik bij milde eczeem.",
        "nl",
    ),
    (
        "Không dùng Zorvatil: nếu bạn dị ứng với zorvatil; nếu bạn đang bị bệnh Crohn hoạt "
        "động; nếu bạn bị nhiễm trùng nặng như lao đang hoạt động.",
        "Zorvatil 20 mg: người lớn uống 20 mg mỗi ngày một lần.",
        "Người lớn uống 20 mg zorvatil mỗi ngày một lần.",
        "Bạn vẫn có thể dùng thuốc khi đang bị bệnh Crohn hoạt động.",
        "Bạn vẫn có thể dùng thuốc khi bị chàm nhẹ.",
        "vi",
    ),
]


@pytest.mark.parametrize(("listing", "dosing", "dose", "listed", "unlisted", "language"), _LISTED)
def test_a_permission_for_a_listed_contraindication_is_critical(
    listing: str, dosing: str, dose: str, listed: str, unlisted: str, language: str
) -> None:
    passages = [listing, dosing]
    checked = report(f"{dose} {listed}", passages, language)
    assert critical(checked)
    assert checked.ungrounded == [listed]
    # the twins: the dose alone is grounded, and a permission for a condition the list leaves
    # out is no contradiction (no passage speaks about it): not critical
    assert not report(dose, passages, language).ungrounded
    assert not critical(report(f"{dose} {unlisted}", passages, language))
