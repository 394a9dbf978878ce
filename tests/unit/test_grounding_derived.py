"""Doses an answer works out from what a passage states (issue 10): a day's amount given per dose
at the answer's own number of doses a day, inside the passage's range of doses; a dose that
names no basis is no day's amount split into doses. Sentences of our own in English, Dutch and
Vietnamese; every right answer has wrong twins that must stay critical (a dose from the other
end of the range of counts, a count outside it, a day's total taken at once)."""

from __future__ import annotations

import pytest

from services.grounding.grounding import medical_context
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
