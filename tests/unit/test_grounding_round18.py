"""The mechanisms of the eighteenth round (issue 10): the population a question selects the
passage claim by. Own sentences in English, Dutch and Vietnamese, with invented brand names
(Dormix, Lyra), and for every rule a must-pass twin that must still pass."""

from __future__ import annotations

import pytest

from services.grounding.grounding import medical_context
from tests.support.grounding_checks import critical
from tests.support.grounding_checks import numbered_report as report

# --- the age group a yes/no question asks about -------------------------------------------


@pytest.mark.parametrize(
    ("question", "language", "group", "age"),
    [
        ("Can my 9-year-old take Dormix? He sleeps badly.", "en", "child", 9.0),
        ("Mag mijn zoon van 9 Dormix innemen?", "nl", "child", 9.0),
        (
            "Cháu tôi 9 tuổi, nặng 28 kg, có uống Dormix được không, liều thế nào?",
            "vi",
            "child",
            9.0,
        ),
        ("Is Dormix all right for an 81-year-old like me?", "en", "elderly", 81.0),
    ],
)
def test_a_yes_no_question_hands_on_its_age_group(
    question: str, language: str, group: str, age: float
) -> None:
    context = medical_context(question, language)
    assert group in context.populations
    assert context.age_min_years == age


#: a passage with the adult dose and a bar for children; the adult dose given to the asked
#: child (wrong population) and an answer that turns the child down and gives the asker's dose
_ASKED = [
    (
        [
            "Dormix 25 mg tablets: adults take one tablet at bedtime. Do not give to children "
            "under 16."
        ],
        "Can my 12-year-old take Dormix? She sleeps badly.",
        "Yes, she can take one 25 mg tablet at bedtime.",
        "The dose for you is one 25 mg tablet at bedtime. Your 12-year-old must not take it: "
        "it is not for children under 16.",
        "en",
    ),
    (
        [
            "Dormix 25 mg tabletten: volwassenen nemen 1 tablet voor het slapengaan. Niet geven "
            "aan kinderen jonger dan 16 jaar."
        ],
        "Mag mijn dochter van 12 ook Dormix innemen? En hoeveel neem ik zelf?",
        "Ja, ze kan 1 tablet van 25 mg voor het slapengaan nemen.",
        "Zelf neemt u 1 tablet van 25 mg voor het slapengaan. Uw dochter mag het niet "
        "gebruiken: het is niet voor kinderen jonger dan 16 jaar.",
        "nl",
    ),
    (
        ["Dormix 25 mg: người lớn uống 1 viên trước khi ngủ. Không dùng cho trẻ em dưới 16 tuổi."],
        "Cháu tôi 12 tuổi có uống Dormix được không? Còn tôi uống bao nhiêu?",
        "Cháu uống được: mỗi lần 1 viên 25 mg trước khi ngủ.",
        "Bạn uống 1 viên 25 mg trước khi ngủ. Thuốc không dùng cho trẻ em dưới 16 tuổi, nên "
        "cháu 12 tuổi không dùng được.",
        "vi",
    ),
]


@pytest.mark.parametrize(("passages", "question", "wrong", "right", "language"), _ASKED)
def test_the_asked_child_selects_the_passage_claim(
    passages: list[str], question: str, wrong: str, right: str, language: str
) -> None:
    context = medical_context(question, language)
    assert critical(report(wrong, passages, language, context))
    assert not report(right, passages, language, context).ungrounded


def test_a_risk_of_everyone_does_not_turn_the_asked_group_down() -> None:
    """ "Don't take it if you have epilepsy" is read with the older asker's group among its
    conditions; it is about epilepsy, so the answer's maximum stays the older person's."""
    passages = [
        "Lyra: adults 50 to 100 mg every 6 hours, at most 400 mg a day. Patients over 75 "
        "years: at most 300 mg a day. Do not take Lyra if you have epilepsy."
    ]
    context = medical_context("Can I take Lyra? I'm 80.", "en")
    answer = "Don't take Lyra if you have epilepsy. At your age you can take up to 400 mg a day."
    assert critical(report(answer, passages, "en", context))


# --- a body weight only a child has ---------------------------------------------------------


@pytest.mark.parametrize(
    ("question", "language", "child"),
    [
        ("Cháu tôi 15 kg bị viêm tai, uống Lyra bao nhiêu?", "vi", True),
        ("Hij weegt 14 kilo. Hoeveel Lyra mag hij?", "nl", True),
        ("She weighs 16 kg, how much Lyra can she have?", "en", True),
        # near misses: an adult's weight, a weight band, an age group stated
        ("I weigh 70 kg, how much Lyra can I take?", "en", False),
        ("Is Lyra for children under 30 kg?", "en", True),
        ("Ik ben 40 jaar en weeg 28 kilo. Hoeveel Lyra?", "nl", False),
    ],
)
def test_a_light_body_weight_is_a_childs(question: str, language: str, child: bool) -> None:
    assert ("child" in medical_context(question, language).populations) is child


#: the adult dose and the children's per-kg dose; the adult dose for a child of 15 kg (wrong
#: population) and a dose per kg with no group worked out for the child's weight (right)
_WEIGHED = [
    (
        [
            "Lyra: adults 750 mg twice a day. Children under 30 kg: 25 to 50 mg/kg a day.",
            "Combix: a single dose of 10 mg/kg.",
        ],
        "She weighs 15 kg. How much Lyra, and how much Combix?",
        "She can take Lyra like an adult: 750 mg twice a day.",
        "For 15 kg, Combix is 150 mg as a single dose.",
        "en",
    ),
    (
        [
            "Lyra: volwassenen 750 mg tweemaal daags. Kinderen onder 30 kg: 25 tot 50 mg/kg "
            "per dag.",
            "Combix: eenmalig 10 mg/kg.",
        ],
        "Hij weegt 15 kilo. Hoeveel Lyra en hoeveel Combix?",
        "Hij mag Lyra nemen zoals een volwassene: 750 mg tweemaal daags.",
        "Voor 15 kilo is dat 150 mg Combix, eenmalig.",
        "nl",
    ),
    (
        [
            "Lyra: người lớn 750 mg mỗi lần, ngày 2 lần. Trẻ em dưới 30 kg: 25–50 mg/kg/ngày.",
            "Combix: liều duy nhất 10 mg/kg.",
        ],
        "Cháu tôi 15 kg. Uống Lyra và Combix bao nhiêu?",
        "Cháu uống Lyra như người lớn: mỗi lần 750 mg, ngày 2 lần.",
        "Với 15 kg, Combix là 150 mg, uống một liều duy nhất.",
        "vi",
    ),
]


@pytest.mark.parametrize(("passages", "question", "wrong", "right", "language"), _WEIGHED)
def test_a_childs_weight_selects_the_passage_claim(
    passages: list[str], question: str, wrong: str, right: str, language: str
) -> None:
    context = medical_context(question, language)
    assert critical(report(wrong, passages, language, context))
    assert not report(right, passages, language, context).ungrounded


# --- an age band in a list of groups ----------------------------------------------------------

#: the adults' dose and the dose of a list of groups with an age band ("people over 60, people
#: with liver disease"); the adults' dose for an asker of 74 (wrong population), the band's dose
#: for them (right) and the adults' dose for an asker of 50 (right)
_LISTED = [
    (
        [
            "Lyra 100 mg: adults 200 mg three times a day.",
            "People over 60 and people with liver disease: 100 mg twice a day.",
        ],
        ("My father is 74. How much Lyra can he take?", "My wife is 50. How much Lyra?"),
        ("He can take 200 mg three times a day.", "He can take 100 mg twice a day."),
        "She can take 200 mg three times a day.",
        "en",
    ),
    (
        [
            "Lyra 100 mg: volwassenen 200 mg driemaal daags.",
            "Mensen ouder dan 60 jaar en mensen met een leverziekte: 100 mg tweemaal daags.",
        ],
        ("Mijn vader is 74. Hoeveel Lyra mag hij?", "Mijn vrouw is 50. Hoeveel Lyra?"),
        ("Hij mag 200 mg driemaal daags nemen.", "Hij mag 100 mg tweemaal daags nemen."),
        "Zij mag 200 mg driemaal daags nemen.",
        "nl",
    ),
    (
        [
            "Lyra 100 mg: người lớn 200 mg x 3 lần/ngày.",
            "Người trên 60 tuổi, người bệnh gan: 100 mg x 2 lần/ngày.",
        ],
        ("Bố tôi 74 tuổi. Uống Lyra bao nhiêu?", "Vợ tôi 50 tuổi. Uống Lyra bao nhiêu?"),
        ("Ông uống 200 mg x 3 lần/ngày.", "Ông uống 100 mg x 2 lần/ngày."),
        "Chị uống 200 mg x 3 lần/ngày.",
        "vi",
    ),
]


@pytest.mark.parametrize(("passages", "questions", "answers", "younger", "language"), _LISTED)
def test_an_age_band_in_a_list_of_groups_selects_the_passage_claim(
    passages: list[str],
    questions: tuple[str, str],
    answers: tuple[str, str],
    younger: str,
    language: str,
) -> None:
    older = medical_context(questions[0], language)
    assert critical(report(answers[0], passages, language, older))
    assert not report(answers[1], passages, language, older).ungrounded
    assert not report(
        younger, passages, language, medical_context(questions[1], language)
    ).ungrounded
