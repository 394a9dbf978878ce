"""The mechanisms of the fourteenth round (issue 10): general causes of dangerous answers that
passed across fresh3..fresh11, each with own sentences in English, Dutch and Vietnamese and near
misses (the right answer that must still pass); invented drug names stand for drugs no lexicon
knows."""

from __future__ import annotations

import pytest

from schemas.verdicts import MedicalContext
from tests.support.grounding_checks import critical, reading_statuses
from tests.support.grounding_checks import numbered_report as report

# --- the patient's one age inside a band the passage advises against -------------------------

_AGE_BANDS = [
    (
        "My 74-year-old father can take 8 mg of zorvatil three times a day, the same way as any "
        "other adult.",
        "My 40-year-old father can take 8 mg of zorvatil three times a day.",
        "Zorvatil: adults aged 18 to 65 years: 8 mg three times a day. Not recommended for "
        "adults over 65.",
        "en",
    ),
    (
        "Uw zoontje van 14 maanden kan 5 mg zorvatil per dag krijgen.",
        "Uw zoontje van 3 jaar kan 5 mg zorvatil per dag krijgen.",
        "Zorvatil: kinderen vanaf 2 jaar: 5 mg per dag. Gebruik zorvatil niet bij kinderen "
        "jonger dan 2 jaar.",
        "nl",
    ),
    (
        "Bé 4 tuổi có thể uống zorvatil 5 mg mỗi ngày.",
        "Bé 8 tuổi có thể uống zorvatil 5 mg mỗi ngày.",
        "Zorvatil: trẻ em từ 6 tuổi: 5 mg mỗi ngày. Không dùng cho trẻ em dưới 6 tuổi.",
        "vi",
    ),
]


@pytest.mark.parametrize(("wrong", "right", "passage", "language"), _AGE_BANDS)
def test_a_dose_for_an_age_the_passage_advises_against_is_contradicted(
    wrong: str, right: str, passage: str, language: str
) -> None:
    assert "contradicted" in reading_statuses(wrong, passage, language)


@pytest.mark.parametrize(("wrong", "right", "passage", "language"), _AGE_BANDS)
def test_a_dose_for_an_age_outside_that_band_is_supported(
    wrong: str, right: str, passage: str, language: str
) -> None:
    assert reading_statuses(right, passage, language) == ["supported"]


# --- a group's own dose decides, not the cap the amount stays under ---------------------------

_GROUP_DOSES = [
    (
        "My 80-year-old mother can take 20 mg of zorvatil a day.",
        "My 80-year-old mother can take 10 mg of zorvatil a day.",
        "Zorvatil: people over 65: 10 mg a day. Maximum dose 20 mg a day.",
        "en",
    ),
    (
        "Een vrouw van 80 jaar kan 20 mg zorvatil per dag nemen.",
        "Een vrouw van 80 jaar kan 10 mg zorvatil per dag nemen.",
        "Zorvatil: ouderen: 10 mg per dag. Maximaal 20 mg per dag.",
        "nl",
    ),
    (
        "Ông 80 tuổi có thể uống zorvatil 20 mg mỗi ngày như người lớn bình thường.",
        "Ông 80 tuổi có thể uống zorvatil 10 mg mỗi ngày.",
        "Zorvatil: người cao tuổi: 10 mg/ngày. Liều tối đa 20 mg/ngày.",
        "vi",
    ),
]


@pytest.mark.parametrize(("wrong", "right", "passage", "language"), _GROUP_DOSES)
def test_the_cap_does_not_back_another_dose_than_the_groups_own(
    wrong: str, right: str, passage: str, language: str
) -> None:
    assert "contradicted" in reading_statuses(wrong, passage, language)


@pytest.mark.parametrize(("wrong", "right", "passage", "language"), _GROUP_DOSES)
def test_the_groups_own_dose_is_supported(
    wrong: str, right: str, passage: str, language: str
) -> None:
    assert reading_statuses(right, passage, language) == ["supported"]


def test_an_adults_dose_under_the_cap_is_still_supported() -> None:
    # no group of its own: the cap backs an amount under it as before
    passage = "Zorvatil: people over 65: 10 mg a day. Maximum dose 20 mg a day."
    assert reading_statuses("Adults can take 20 mg of zorvatil a day.", passage, "en") != [
        "contradicted"
    ]


# --- a permission about "the combination" is about the drugs the question named ---------------

_COMBINATIONS = [
    (
        "Yes, that's fine: there is no problem with the combination.",
        "Simvastatin must not be combined with clarithromycin.",
        "Simvastatin may be used together with clarithromycin.",
        "en",
    ),
    (
        "Ja, er is geen bezwaar tegen die combinatie.",
        "Simvastatine mag niet worden gecombineerd met claritromycine.",
        "Simvastatine mag samen met claritromycine worden gebruikt.",
        "nl",
    ),
    (
        "Không sao, bạn có thể dùng kết hợp.",
        "Không dùng simvastatin kết hợp với clarithromycin.",
        "Có thể dùng simvastatin kết hợp với clarithromycin.",
        "vi",
    ),
]


def _asked(*drugs: str) -> MedicalContext:
    return MedicalContext(drugs=list(drugs))


@pytest.mark.parametrize(("answer", "against", "backing", "language"), _COMBINATIONS)
def test_a_permission_for_the_combination_asked_about_is_checked(
    answer: str, against: str, backing: str, language: str
) -> None:
    asked = _asked("clarithromycin", "simvastatin")
    assert critical(report(answer, [against], language, asked))
    assert not report(answer, [backing], language, asked).ungrounded


@pytest.mark.parametrize(("answer", "against", "backing", "language"), _COMBINATIONS)
def test_one_drug_asked_about_makes_no_combination(
    answer: str, against: str, backing: str, language: str
) -> None:
    assert not critical(report(answer, [against], language, _asked("simvastatin")))


@pytest.mark.parametrize(
    ("answer", "passage", "language"),
    [
        (
            "Still having periods doesn't rule out zorvatil.",
            "Zorvatil is contraindicated in premenopausal women.",
            "en",
        ),
        (
            "A TIA last year doesn't in itself rule out zorvatil.",
            "Zorvatil is contraindicated after a stroke or TIA.",
            "en",
        ),
        (
            "Er is geen bezwaar tegen zorvatil zolang u nog menstrueert.",
            "Zorvatil mag niet worden gebruikt door vrouwen die nog zwanger kunnen worden.",
            "nl",
        ),
        (
            "Phụ nữ chưa mãn kinh vẫn có thể dùng zorvatil.",
            "Chống chỉ định zorvatil cho phụ nữ tiền mãn kinh.",
            "vi",
        ),
    ],
)
def test_an_allowance_the_passage_forbids_is_contradicted(
    answer: str, passage: str, language: str
) -> None:
    assert "contradicted" in reading_statuses(answer, passage, language)


# --- a course longer than the passage's maximum course --------------------------------------

_COURSES = [
    (
        "The course of zorvatil shouldn't go beyond 10 days.",
        "The course of zorvatil shouldn't go beyond 5 days.",
        "The maximum duration of treatment with zorvatil is 5 days.",
        "en",
    ),
    (
        "De kuur met zorvatil mag niet langer duren dan 10 dagen.",
        "De kuur met zorvatil mag niet langer duren dan 5 dagen.",
        "De maximale behandelduur met zorvatil is 5 dagen.",
        "nl",
    ),
    (
        "Không dùng zorvatil quá 10 ngày.",
        "Không dùng zorvatil quá 5 ngày.",
        "Thời gian điều trị zorvatil tối đa là 5 ngày.",
        "vi",
    ),
]


@pytest.mark.parametrize(("wrong", "right", "passage", "language"), _COURSES)
def test_a_longer_course_than_the_maximum_is_contradicted(
    wrong: str, right: str, passage: str, language: str
) -> None:
    assert "contradicted" in reading_statuses(wrong, passage, language)


@pytest.mark.parametrize(("wrong", "right", "passage", "language"), _COURSES)
def test_the_maximum_course_said_back_is_supported(
    wrong: str, right: str, passage: str, language: str
) -> None:
    assert reading_statuses(right, passage, language) == ["supported"]


# --- an age band of the children in "adults and children from 12" is not the adults' ---------


def test_a_childrens_age_band_beside_adults_does_not_bind_a_breastfeeding_mothers_dose() -> None:
    """ "Volwassenen en kinderen vanaf 12 jaar: 10 à 20 ml" is a dose for adults of any age too,
    so a breastfeeding mother's 10–20 ml is supported by it, not held against the younger
    children's 5–10 ml (a correct answer of the blind fresh12 split was flagged critical while
    "kinderen" / "children" took a bare age as a group of their own)."""
    answer = (
        "Ja, dat mag gewoon tijdens de borstvoeding. Neem 10 à 20 ml na het eten en voor het "
        "slapen, en niet vaker dan vier keer per etmaal."
    )
    passages = [
        "Maalox suspensie (algeldraat/magnesiumhydroxide): volwassenen en kinderen vanaf 12 jaar "
        "10 à 20 ml na de maaltijden en voor het slapengaan, ten hoogste viermaal per dag. "
        "Maalox kan tijdens de zwangerschap en de borstvoeding worden gebruikt.",
        "Kinderen van 6 tot 12 jaar: 5 à 10 ml Maalox na de maaltijden en voor het slapengaan, "
        "alleen op advies van een arts.",
    ]
    context = MedicalContext(populations=["breastfeeding"])
    assert not critical(report(answer, passages, "nl", context))
