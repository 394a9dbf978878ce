"""The mechanisms of the fifteenth round (issue 10): general causes of right answers (correct
paraphrase, citation, dose, abstention) flagged across fresh3..fresh12, each with own sentences
in English, Dutch and Vietnamese and a must-flag twin the rule must not let through; invented
drug names stand for drugs no lexicon knows."""

from __future__ import annotations

import pytest

from schemas.verdicts import MedicalContext
from services.grounding.grounding import medical_context
from tests.support.grounding_checks import critical, reading_statuses, skip_reason_of
from tests.support.grounding_checks import numbered_report as report

# --- an answer that declines hands the question's own amount back to a professional ----------

_HANDED_BACK = [
    (
        "I take 40 mg of zorvatil twice a day. Can I go up to 80 mg twice a day?",
        "I can't decide that for you. Whether 80 mg twice a day suits you is for your "
        "neurologist to decide.",
        "Yes, 80 mg twice a day is fine; your neurologist can tell you more.",
        "I can't decide that for you. Ask your neurologist whether 60 mg twice a day suits you.",
        "Zorvatil: 20 to 40 mg twice a day. Do not exceed 80 mg a day.",
        "en",
    ),
    (
        "Mijn zoon heeft 6 tabletten zorvatil 250 mg ingenomen. Wat moet ik doen?",
        "Dat kan ik vanaf hier niet beoordelen. Hij heeft 6 tabletten van 250 mg genomen: bel "
        "direct de huisarts of 112.",
        "Hij heeft 6 tabletten van 250 mg genomen; dat kan geen kwaad, bel eventueel de huisarts.",
        "Dat kan ik vanaf hier niet beoordelen. Na 8 tabletten van 250 mg: bel direct de huisarts.",
        "Zorvatil 250 mg: volwassenen 1 tablet tweemaal daags, ten hoogste 500 mg per dag.",
        "nl",
    ),
    (
        "Cho bé uống zorvatil 500 mg mỗi ngày được không?",
        "Mình chưa trả lời được khi chưa biết bé bao nhiêu tuổi. Tốt nhất là hỏi bác sĩ nhi "
        "trước khi cho bé uống viên 500 mg.",
        "Bé uống viên 500 mg mỗi ngày được, nếu cần thì hỏi bác sĩ nhi.",
        "Mình chưa trả lời được. Hỏi bác sĩ nhi trước khi cho bé uống 1.000 mg mỗi ngày.",
        "Zorvatil 500 mg, người lớn: 1 viên mỗi ngày. Trẻ em dùng theo chỉ dẫn của bác sĩ.",
        "vi",
    ),
]


@pytest.mark.parametrize(
    ("question", "declines", "endorses", "new_amount", "passage", "language"), _HANDED_BACK
)
def test_a_declining_answer_may_say_the_question_amount_back_in_a_referral(
    question: str, declines: str, endorses: str, new_amount: str, passage: str, language: str
) -> None:
    context = medical_context(question, language)
    assert context.amounts
    assert not report(declines, [passage], language, context).ungrounded
    # the must-flag twins: an answer that endorses the amount (no abstention in it), one that
    # adds an amount the question did not give, and the same answer without the question
    assert critical(report(endorses, [passage], language, context))
    assert report(new_amount, [passage], language, context).ungrounded
    if language == "en":
        # "Whether 80 mg twice a day suits you is for your neurologist to decide": a fronted
        # open question before a referral is no claim, with or without the question
        # (services/grounding/unasserted.py)
        assert not report(declines, [passage], language).ungrounded
    else:
        assert report(declines, [passage], language).ungrounded


# --- a caution not to act alone, then "but" a professional -----------------------------------

_ALONE_THEN_REFERRAL = [
    ("Don't change the dose yourself, but ring your neurologist tomorrow.", "en"),
    ("Pas de dosis niet zelf aan, maar overleg met uw cardioloog.", "nl"),
    ("Đừng tự ý tăng liều, nhưng hãy hỏi bác sĩ điều trị.", "vi"),
]
_ALONE_IN_VIETNAMESE = [
    ("Bố không nên tự ngừng thuốc huyết áp.", "vi"),
    ("Đừng tự giảm liều khi thấy đỡ.", "vi"),
    ("Don't stop the blood pressure tablets yourself.", "en"),
    ("Stop niet zelf met de bloeddrukpillen.", "nl"),
]
_ALONE_THEN_CLAIM = [
    ("Don't change the dose yourself, but your neurologist may lower it to 5 mg.", "en"),
    ("Pas de dosis niet zelf aan, maar neem 2 tabletten en bel de cardioloog.", "nl"),
    ("Đừng tự ý tăng liều, nhưng có thể uống 2 viên rồi hỏi bác sĩ.", "vi"),
    ("Don't stop it yourself, but it must not be taken with alcohol; ask your GP.", "en"),
    ("Không nên tự uống 2 viên một lúc.", "vi"),
]


@pytest.mark.parametrize(("sentence", "language"), _ALONE_THEN_REFERRAL)
def test_a_caution_not_to_act_alone_then_a_professional_is_a_referral(
    sentence: str, language: str
) -> None:
    assert skip_reason_of(sentence, language) == "referral"


@pytest.mark.parametrize(("sentence", "language"), _ALONE_THEN_CLAIM)
def test_a_contrast_that_adds_an_amount_or_a_contraindication_stays_a_claim(
    sentence: str, language: str
) -> None:
    assert skip_reason_of(sentence, language) is None


@pytest.mark.parametrize(("sentence", "language"), _ALONE_IN_VIETNAMESE)
def test_a_negated_tu_before_a_verb_is_acting_alone_as_yourself_and_zelf_are(
    sentence: str, language: str
) -> None:
    assert skip_reason_of(sentence, language) == "referral"


# --- every other day is a frequency, and the "once" said with it is its own -----------------

_EVERY_OTHER_DAY = [
    # (every other day, every day, a passage of every 48 hours, one of once a day)
    (
        "Take 10 mg of zorvatil once every other day.",
        "Take 10 mg of zorvatil once a day.",
        "Zorvatil: 10 mg every 48 hours.",
        "Zorvatil: 10 mg once a day.",
        "en",
    ),
    (
        "Neem om de dag 10 mg zorvatil.",
        "Neem elke dag 10 mg zorvatil.",
        "Zorvatil: 10 mg elke 48 uur.",
        "Zorvatil: 10 mg eenmaal daags.",
        "nl",
    ),
    (
        "Uống zorvatil 10 mg cách một ngày một lần.",
        "Uống zorvatil 10 mg mỗi ngày một lần.",
        "Zorvatil: 10 mg mỗi 48 giờ.",
        "Zorvatil: 10 mg mỗi ngày một lần.",
        "vi",
    ),
]


@pytest.mark.parametrize(
    ("other", "daily", "every_48h", "once_a_day", "language"), _EVERY_OTHER_DAY
)
def test_every_other_day_is_every_48_hours_and_not_once_a_day(
    other: str, daily: str, every_48h: str, once_a_day: str, language: str
) -> None:
    assert reading_statuses(other, every_48h, language) == ["supported"]
    assert reading_statuses(daily, every_48h, language) == ["contradicted"]
    assert reading_statuses(other, once_a_day, language) == ["contradicted"]
    assert reading_statuses(daily, once_a_day, language) == ["supported"]


# --- a day's amount backs "once a day" beside a statement with a frequency of its own --------

_PER_PERIOD = {
    "en": "Zorvatil, mild liver impairment: not more than 60 mg a day. Moderate liver "
    "impairment: not more than 60 mg every other day.",
    "nl": "Zorvatil, lichte leverfunctiestoornis: niet meer dan 60 mg per dag. Matige "
    "leverfunctiestoornis: niet meer dan 60 mg om de dag.",
    "vi": "Zorvatil, suy gan nhẹ: không quá 60 mg mỗi ngày. Suy gan vừa: không quá 60 mg "
    "cách ngày.",
}
_ONCE_A_DAY = [
    (
        "With liver impairment, zorvatil is usually 30 mg, taken once a day.",
        "With liver impairment, zorvatil is usually 30 mg, taken three times a day.",
        "en",
    ),
    (
        "Bij een leverfunctiestoornis is zorvatil meestal 30 mg, eenmaal per dag.",
        "Bij een leverfunctiestoornis is zorvatil meestal 30 mg, driemaal per dag.",
        "nl",
    ),
    (
        "Với suy gan nhẹ, zorvatil thường dùng 30 mg, uống một lần trong ngày.",
        "Với suy gan nhẹ, zorvatil thường dùng 30 mg, uống hai lần trong ngày.",
        "vi",
    ),
]


@pytest.mark.parametrize(("once", "more_often", "language"), _ONCE_A_DAY)
def test_a_day_amount_backs_once_a_day_beside_another_frequency(
    once: str, more_often: str, language: str
) -> None:
    assert reading_statuses(once, _PER_PERIOD[language], language) == ["supported"]
    assert reading_statuses(more_often, _PER_PERIOD[language], language) == ["contradicted"]


# --- a dose given as the volume of the liquid that holds it -----------------------------------

_VOLUMES = [
    # (the dose and its volume, a wrong volume, a wrong unit, the passage)
    (
        "She starts with 100 mg of zorvatil a day, which is 4 ml of the syrup.",
        "She starts with 100 mg of zorvatil a day, which is 8 ml of the syrup.",
        "She starts with 100 ml of zorvatil syrup a day.",
        "Zorvatil syrup 125 mg/5 ml: children start with 100 mg a day.",
        "en",
    ),
    (
        "Hij begint met 100 mg zorvatil per dag, dat is 4 ml van de drank.",
        "Hij begint met 100 mg zorvatil per dag, dat is 8 ml van de drank.",
        "Hij begint met 100 ml zorvatil drank per dag.",
        "Zorvatil drank 125 mg/5 ml: kinderen beginnen met 100 mg per dag.",
        "nl",
    ),
    (
        "Bé bắt đầu với zorvatil 100 mg mỗi ngày, tức là 4 ml siro.",
        "Bé bắt đầu với zorvatil 100 mg mỗi ngày, tức là 8 ml siro.",
        "Bé bắt đầu với 100 ml siro zorvatil mỗi ngày.",
        "Siro zorvatil 125 mg/5 ml: trẻ em bắt đầu với 100 mg mỗi ngày.",
        "vi",
    ),
]


@pytest.mark.parametrize(("right", "wrong", "wrong_unit", "passage", "language"), _VOLUMES)
def test_a_dose_said_as_its_volume_at_the_passage_concentration_is_grounded(
    right: str, wrong: str, wrong_unit: str, passage: str, language: str
) -> None:
    assert not report(right, [passage], language).ungrounded
    assert critical(report(wrong, [passage], language))
    assert critical(report(wrong_unit, [passage], language))


# --- "not together with B" after a dose of A is about A with B --------------------------------

_WITH_ANOTHER = [
    # (the answer's warning, a polarity flip, the passages)
    (
        "Take 500 micrograms of colchicine twice a day. Don't take it together with "
        "clarithromycin.",
        "Take 500 micrograms of colchicine twice a day. You can take it together with "
        "clarithromycin.",
        [
            "Colchicine: 500 micrograms twice a day.",
            "Do not combine colchicine with clarithromycin.",
        ],
        "en",
    ),
    (
        "Neem tweemaal daags 500 microgram colchicine. Gebruik het niet samen met claritromycine.",
        "Neem tweemaal daags 500 microgram colchicine. U mag het samen met claritromycine "
        "gebruiken.",
        [
            "Colchicine: 500 microgram tweemaal daags.",
            "Combineer colchicine niet met claritromycine.",
        ],
        "nl",
    ),
    (
        "Uống colchicin 500 microgam, ngày 2 lần. Không được dùng chung với clarithromycin.",
        "Uống colchicin 500 microgam, ngày 2 lần. Có thể dùng chung với clarithromycin.",
        [
            "Colchicin: 500 microgam, ngày 2 lần.",
            "Chống chỉ định phối hợp colchicin với clarithromycin.",
        ],
        "vi",
    ),
]


@pytest.mark.parametrize(("warning", "flip", "passages", "language"), _WITH_ANOTHER)
def test_a_warning_about_using_the_drug_with_another_is_an_interaction_claim(
    warning: str, flip: str, passages: list[str], language: str
) -> None:
    assert not report(warning, passages, language).ungrounded
    assert critical(report(flip, passages, language))


# --- a maximum per kg worked out for the patient's weight is that maximum ---------------------

_LIMIT_FOR_WEIGHT = [
    # (the maximum for 45 kg, a wrong maximum, the passage)
    (
        "For you that is at most 900 mg of zorvatil per dose.",
        "For you that is at most 990 mg of zorvatil per dose.",
        "Zorvatil: at most 20 mg per kg per dose.",
        "en",
    ),
    (
        "Voor u is dat ten hoogste 900 mg zorvatil per dosis.",
        "Voor u is dat ten hoogste 990 mg zorvatil per dosis.",
        "Zorvatil: ten hoogste 20 mg per kg per dosis.",
        "nl",
    ),
    (
        "Với bạn, mỗi lần tối đa 900 mg zorvatil.",
        "Với bạn, mỗi lần tối đa 990 mg zorvatil.",
        "Zorvatil: mỗi lần tối đa 20 mg/kg.",
        "vi",
    ),
]


@pytest.mark.parametrize(("right", "wrong", "passage", "language"), _LIMIT_FOR_WEIGHT)
def test_a_maximum_per_kg_worked_out_for_the_weight_is_that_maximum_exactly(
    right: str, wrong: str, passage: str, language: str
) -> None:
    context = MedicalContext(weight_kg=45)
    assert not report(right, [passage], language, context).ungrounded
    assert critical(report(wrong, [passage], language, context))


# --- a lead-in that names only the patient's weight band is a heading -------------------------

_WEIGHT_LEAD_INS = [
    # (the lead-in, the right dose, a wrong dose, the passages)
    (
        "Because he weighs under 50 kg, the lower dose applies:",
        "- 100 mg of zorvatil every 12 hours",
        "- 200 mg of zorvatil every 12 hours",
        [
            "Zorvatil: patients weighing 50 kg or more take 200 mg every 12 hours. Patients "
            "weighing less than 50 kg take 100 mg every 12 hours."
        ],
        "en",
    ),
    (
        "Is hij lichter dan 50 kg, dan geldt de lagere dosis:",
        "- 100 mg zorvatil elke 12 uur",
        "- 200 mg zorvatil elke 12 uur",
        [
            "Zorvatil: bij een lichaamsgewicht van 50 kg of meer 200 mg elke 12 uur. Bij een "
            "lichaamsgewicht onder 50 kg: 100 mg elke 12 uur."
        ],
        "nl",
    ),
    (
        "Vì bé nặng chưa đến 50 kg, liều như sau:",
        "- zorvatil 100 mg mỗi 12 giờ",
        "- zorvatil 200 mg mỗi 12 giờ",
        [
            "Zorvatil: người lớn cân nặng từ 50 kg trở lên: 200 mg mỗi 12 giờ. Trẻ em cân nặng "
            "dưới 50 kg: 100 mg mỗi 12 giờ."
        ],
        "vi",
    ),
]


# (A band written with no group of its own, "cân nặng từ 50 kg trở lên: 200 mg", matches any
# reading, so a wrong 200 mg under such a lead-in is caught only where the upper band names one;
# and a Vietnamese lead-in that is a clause of advice, "… nên dùng liều thấp hơn:", hands its
# band on as a risk, not as the list's group: docs/grounding.md, the fifteenth round.)
@pytest.mark.parametrize(("lead_in", "right", "wrong", "passages", "language"), _WEIGHT_LEAD_INS)
def test_a_weight_band_lead_in_is_a_heading_whose_group_the_list_takes(
    lead_in: str, right: str, wrong: str, passages: list[str], language: str
) -> None:
    assert skip_reason_of(lead_in, language) == "heading"
    assert not report(f"{lead_in}\n{right}", passages, language).ungrounded
    assert critical(report(f"{lead_in}\n{wrong}", passages, language))


# --- "liều đến 40 mg" is doses up to 40 mg, as "doses up to" and "doses tot" are -------------

_DOSES_UP_TO = [
    # (a dose under the bound, a dose over it, the passage)
    (
        "Prednisolone 20 mg a day.",
        "Prednisolone 60 mg a day.",
        "Prednisolone: doses up to 40 mg a day.",
        "en",
    ),
    (
        "Prednisolon 20 mg per dag.",
        "Prednisolon 60 mg per dag.",
        "Prednisolon: doses tot 40 mg per dag.",
        "nl",
    ),
    (
        "Prednisolon 20 mg mỗi ngày.",
        "Prednisolon 60 mg mỗi ngày.",
        "Prednisolon: với liều đến 40 mg/ngày.",
        "vi",
    ),
]


@pytest.mark.parametrize(("under", "over", "passage", "language"), _DOSES_UP_TO)
def test_doses_up_to_a_bound_back_a_dose_under_it_and_not_over(
    under: str, over: str, passage: str, language: str
) -> None:
    assert reading_statuses(under, passage, language) == ["supported"]
    assert reading_statuses(over, passage, language) == ["contradicted"]
