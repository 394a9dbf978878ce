"""Doses an answer works out from what a passage states (issue 10): a day's amount given per dose
at the answer's own number of doses a day, inside the passage's range of doses; a dose that
names no basis is no day's amount split into doses. Sentences of our own in English, Dutch and
Vietnamese; every right answer has wrong twins that must stay critical (a dose from the other
end of the range of counts, a count outside it, a day's total taken at once)."""

from __future__ import annotations

import pytest

from services.grounding.grounding import medical_context
from services.grounding.medical.strength import split_concentrations
from services.grounding.quantities import amounts
from services.grounding.tokens import tokenize
from tests.support.grounding_checks import critical
from tests.support.grounding_checks import numbered_report as report

# --- a day's amount in a range of doses a day, per dose at the answer's count -------------

_DIVIDED = [
    (
        ["Children: clindamycin 20 to 40 mg/kg per day, divided into three or four equal doses."],
        "My son weighs 20 kg and takes clindamycin. How much per dose?",
        "For 20 kg that is 400–800 mg a day, so {dose} four times a day.",
        "100–200 mg",
        ("250 mg", "300 mg"),
        "en",
    ),
    (
        ["Kinderen: clindamycine 20 tot 40 mg per kg per dag, verdeeld over 3 of 4 giften."],
        "Mijn dochter weegt 20 kg en krijgt clindamycine. Hoeveel per keer?",
        "Bij 20 kg is dat 400 tot 800 mg per dag, dus {dose} driemaal daags.",
        "200 mg",
        ("300 mg", "400 mg"),
        "nl",
    ),
    (
        ["Trẻ em: clindamycin 20–40 mg/kg/ngày, chia 3–4 lần."],
        "Bé nhà tôi nặng 20 kg, uống clindamycin. Mỗi lần bao nhiêu?",
        "Với 20 kg là 400–800 mg mỗi ngày, tức mỗi lần {dose}, ngày 4 lần.",
        "150 mg",
        ("250 mg", "400 mg"),
        "vi",
    ),
]


@pytest.mark.parametrize(("passages", "question", "answer", "right", "wrong", "language"), _DIVIDED)
def test_a_day_in_a_range_of_doses_is_divided_by_the_answers_count(
    passages: list[str],
    question: str,
    answer: str,
    right: str,
    wrong: tuple[str, ...],
    language: str,
) -> None:
    context = medical_context(question, language)
    assert not critical(report(answer.format(dose=right), passages, language, context))
    for dose in wrong:  # more than the day allows at that count, though inside the widest share
        assert critical(report(answer.format(dose=dose), passages, language, context)), dose


_OUTSIDE = [
    (
        ["Children: clindamycin 20 to 40 mg/kg per day, divided into three or four equal doses."],
        "My son weighs 20 kg and takes clindamycin. How much per dose?",
        "For 20 kg that is 400–800 mg a day, so 200–400 mg twice a day.",
        "en",
    ),
    (
        ["Kinderen: clindamycine 20 tot 40 mg per kg per dag, verdeeld over 3 of 4 giften."],
        "Mijn dochter weegt 20 kg en krijgt clindamycine. Hoeveel per keer?",
        "Bij 20 kg is dat 400 tot 800 mg per dag, dus 400 mg tweemaal daags.",
        "nl",
    ),
]


@pytest.mark.parametrize(("passages", "question", "answer", "language"), _OUTSIDE)
def test_a_count_outside_the_passages_range_restates_nothing(
    passages: list[str], question: str, answer: str, language: str
) -> None:
    context = medical_context(question, language)
    assert critical(report(answer, passages, language, context))


def test_a_dose_range_at_a_count_inside_the_range_is_a_days_amount() -> None:
    passages = ["Adults: vancomycin 500 mg to 1 g two to four times a day."]
    assert not critical(report("Adults take 2 g a day in two divided doses.", passages, "en"))
    assert critical(report("Adults take 6 g a day in four divided doses.", passages, "en"))
    assert critical(report("Adults take 2 g a day in six divided doses.", passages, "en"))


# --- a dose that names no basis is one dose ------------------------------------------------

_ONE_DOSE = [
    (
        ["Adults: aciclovir 800 mg a day in two divided doses."],
        "Adults take 400 mg twice a day.",
        "Adults take 800 mg to start.",
        "en",
    ),
    (
        ["Volwassenen: aciclovir 800 mg per dag, verdeeld over 2 giften."],
        "Volwassenen nemen tweemaal daags 400 mg.",
        "Volwassenen beginnen met 800 mg.",
        "nl",
    ),
    (
        ["Adults: erythromycin 500 mg twice daily."],
        "Adults take 500 mg twice daily, which is 1000 mg a day.",
        "Adults take 1000 mg each time.",
        "en",
    ),
]


@pytest.mark.parametrize(("passages", "right", "wrong", "language"), _ONE_DOSE)
def test_a_days_total_is_no_single_dose(
    passages: list[str], right: str, wrong: str, language: str
) -> None:
    assert not critical(report(right, passages, language))
    assert critical(report(wrong, passages, language))


# --- a course's total: a dose per day × the course's days ----------------------------------

_COURSE = [
    (
        ["Người lớn: albendazol 200 mg x 2 lần/ngày trong 3 ngày liên tiếp."],
        "Người lớn uống mỗi lần 200 mg, sáng và tối, trong 3 ngày, cả đợt là {total}.",
        "1200 mg",
        ("800 mg", "600 mg"),
        "vi",
    ),
    (
        ["Adults: albendazole 200 mg twice a day for 3 days."],
        "Adults take 200 mg in the morning and 200 mg in the evening for 3 days, {total} "
        "for the whole course.",
        "1,200 mg",
        ("1,800 mg", "400 mg"),
        "en",
    ),
]


@pytest.mark.parametrize(("passages", "answer", "right", "wrong", "language"), _COURSE)
def test_a_courses_total_is_the_days_amount_times_its_days(
    passages: list[str], answer: str, right: str, wrong: tuple[str, ...], language: str
) -> None:
    assert not critical(report(answer.format(total=right), passages, language))
    for total in wrong:  # a total that does not multiply out
        assert critical(report(answer.format(total=total), passages, language)), total


_NO_TOTAL = [
    # alone, an amount for a course is each dose: the course's total taken at once
    ("Adults: albendazole 200 mg twice a day for 3 days.", "Adults take 1,200 mg for 3 days."),
    (
        "Người lớn: albendazol 200 mg x 2 lần/ngày trong 3 ngày.",
        "Người lớn uống 1200 mg trong 3 ngày.",
    ),
    # another course length than the passage's
    (
        "Adults: albendazole 200 mg twice a day for 3 days.",
        "Adults take 200 mg twice a day for 5 days, 2,000 mg for the whole course.",
    ),
    # a day's amount over the course is no total
    (
        "Adults: albendazole 200 mg twice a day for 3 days.",
        "Adults take 200 mg in the morning and 1,200 mg a day for 3 days.",
    ),
]


@pytest.mark.parametrize(("passage", "answer"), _NO_TOTAL)
def test_an_amount_is_no_courses_total_without_the_dose_it_totals(
    passage: str, answer: str
) -> None:
    language = "vi" if "uống" in answer else "en"
    assert critical(report(answer, [passage], language))


# --- a volume of a liquid: what it holds at the concentration a passage states ---------------

_DOSE_PER_KG = "Children: clindamycin 10 mg/kg three times a day."
_SOLUTIONS = [
    (
        "en",
        _DOSE_PER_KG,
        "My daughter weighs 15 kg.",
        "Clindamycin oral solution contains 75 mg clindamycin in each ml.",
    ),
    (
        "nl",
        "Kinderen: clindamycine 10 mg/kg driemaal daags.",
        "Mijn dochter weegt 15 kg.",
        "Clindamycine drank bevat 75 mg clindamycine per ml.",
    ),
]


@pytest.mark.parametrize(("language", "dose", "question", "solution"), _SOLUTIONS)
def test_a_volume_holds_the_passages_concentration(
    language: str, dose: str, question: str, solution: str
) -> None:
    context = medical_context(question, language)
    answer = {
        "en": "Give her clindamycin {ml} ml three times a day.",
        "nl": "Geef haar driemaal daags {ml} ml clindamycine.",
    }[language]
    assert not critical(report(answer.format(ml="2"), [dose, solution], language, context))
    assert critical(report(answer.format(ml="4"), [dose, solution], language, context))
    # no concentration stated: the volume is no amount the passages speak about
    assert critical(report(answer.format(ml="2"), [dose], language, context))


def test_a_volume_stays_a_volume_beside_two_concentrations() -> None:
    context = medical_context("My daughter weighs 15 kg.", "en")
    passages = [
        _DOSE_PER_KG,
        "Clindamycin oral solution contains 75 mg clindamycin in each ml.",
        "Clindamycin strong oral solution contains 150 mg clindamycin in each ml.",
    ]
    assert critical(report("Give her clindamycin 2 ml three times a day.", passages, "en", context))


@pytest.mark.parametrize(
    ("text", "language", "expected"),
    [
        ("The solution contains 75 mg clindamycin in each ml.", "en", [("mg", "75")]),
        ("De drank bevat 100 mg cannabidiol per ml.", "nl", [("mg", "100")]),
        ("Siro chứa 40 mg cefaclor mỗi ml.", "vi", [("mg", "40")]),
        # near misses: another volume, another form, a number between
        ("The solution contains 75 mg clindamycin in each 5 ml.", "en", []),
        ("Each tablet holds 75 mg clindamycin per tablet.", "en", []),
        ("Take 75 mg, 2 per ml.", "en", []),
    ],
)
def test_split_concentrations(text: str, language: str, expected: list[tuple[str, str]]) -> None:
    t = tokenize(text)
    found = [(u, str(v)) for u, v in split_concentrations(t, amounts(t, language))]
    assert found == expected
