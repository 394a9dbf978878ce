"""Mechanisms of the eighteenth round's second strand (issue 10): correct answers the check
flagged on the later held-out splits. Own sentences in English, Dutch and Vietnamese, about
other drugs than the cases, each rule with a near miss that must still be caught."""

from __future__ import annotations

import pytest

from schemas.verdicts import MedicalContext
from tests.support.grounding_checks import critical
from tests.support.grounding_checks import numbered_report as report

# --- a day's amount split over the intakes the passage states ---------------------------------

_SPLIT = [
    (
        ["Levetiracetam for adults: 1,000 mg per day. Take it twice a day, morning and evening."],
        "Take 500 mg of levetiracetam in the morning and 500 mg in the evening.",
        "Take 750 mg of levetiracetam in the morning and 750 mg in the evening.",
        "en",
    ),
    (
        ["Valaciclovir bij volwassenen: 3.000 mg per dag. Neem het driemaal daags in."],
        "U neemt dan 1.000 mg valaciclovir 's ochtends, 's middags en 's avonds.",
        "U neemt dan 1.500 mg valaciclovir 's ochtends, 's middags en 's avonds.",
        "nl",
    ),
    (
        ["Cefuroxim cho trẻ em: 30 mg/kg/ngày, chia làm 2–3 lần."],
        "Bé nặng 10 kg thì mỗi lần uống 100–150 mg cefuroxim.",
        "Bé nặng 10 kg thì mỗi lần uống 300 mg cefuroxim.",
        "vi",
    ),
]


@pytest.mark.parametrize(("passages", "right", "wrong", "language"), _SPLIT)
def test_a_days_amount_split_over_the_stated_intakes(
    passages: list[str], right: str, wrong: str, language: str
) -> None:
    assert not report(right, passages, language).ungrounded
    assert critical(report(wrong, passages, language))


def test_a_per_kg_day_dose_for_a_weight_over_the_other_clauses_interval() -> None:
    """ "every 8 hours" closes the sentence but divides both clauses' daily amounts."""
    passages = [
        "Cefalexin suspension: children 25 mg/kg/day for mild infections; 50 mg/kg/day for "
        "severe infections, divided into equal doses given every 8 hours."
    ]
    child = MedicalContext(weight_kg=12.0, populations=["child"])
    right = "For a mild infection that is 100 mg of cefalexin per dose, every 8 hours."
    wrong = "For a mild infection that is 300 mg of cefalexin per dose, every 8 hours."
    assert not report(right, passages, "en", child).ungrounded
    assert critical(report(wrong, passages, "en", child))


def test_a_range_of_intakes_never_makes_a_dose_a_days_amount() -> None:
    """Only a day's exact amount is split over a range of intakes: a maximum a day is not a
    maximum per dose, and a single dose is not a day's amount."""
    passages = ["Mesalazine: at most 4,000 mg per day, in 2 to 4 divided doses."]
    assert critical(report("You can take up to 4,000 mg of mesalazine per dose.", passages, "en"))


def test_another_statements_frequency_is_not_borrowed_by_a_maximum() -> None:
    """A starting dose's "once a day" does not make a day's maximum a maximum per dose."""
    passages = ["Sertraline: start with 50 mg once a day. At most 200 mg per day."]
    assert critical(report("Each dose of sertraline is 200 mg.", passages, "en"))


# --- a figure contrasted with another group's ---------------------------------------------------

_CONTRASTED = [
    (
        [
            "Allopurinol: at most 800 mg per day.",
            "Renal impairment: allopurinol at most 200 mg per day.",
        ],
        "With your kidneys, allopurinol goes up to 200 mg a day at most, lower than the "
        "800 mg maximum that applies to healthy kidneys.",
        "With your kidneys, allopurinol goes up to 200 mg a day at most, lower than the "
        "900 mg maximum that applies to healthy kidneys.",
        "en",
    ),
    (
        [
            "Allopurinol: ten hoogste 800 mg per dag.",
            "Verminderde nierfunctie: allopurinol ten hoogste 200 mg per dag.",
        ],
        "Bij uw nieren is dat hoogstens 200 mg allopurinol per dag, dus lager dan het maximum "
        "van 800 mg dat bij gezonde nieren geldt.",
        "Bij uw nieren is dat hoogstens 200 mg allopurinol per dag, dus lager dan het maximum "
        "van 900 mg dat bij gezonde nieren geldt.",
        "nl",
    ),
    (
        [
            "Alopurinol: tối đa 800 mg mỗi ngày.",
            "Suy thận: alopurinol tối đa 200 mg mỗi ngày.",
        ],
        "Với thận của bạn, alopurinol tối đa 200 mg mỗi ngày, thấp hơn mức 800 mg dành cho "
        "người có thận khỏe.",
        "Với thận của bạn, alopurinol tối đa 200 mg mỗi ngày, thấp hơn mức 900 mg dành cho "
        "người có thận khỏe.",
        "vi",
    ),
]


@pytest.mark.parametrize(("passages", "right", "wrong", "language"), _CONTRASTED)
def test_a_figure_contrasted_with_another_groups_is_that_groups(
    passages: list[str], right: str, wrong: str, language: str
) -> None:
    renal = MedicalContext(populations=["renal"])
    assert not report(right, passages, language, renal).ungrounded
    assert report(wrong, passages, language, renal).ungrounded


def test_a_bound_without_an_article_is_a_limit() -> None:
    """ "lower than 5 mg a day" bounds the dose: checked as a limit, not set aside."""
    passages = ["Cilazapril: at most 2.5 mg per day."]
    assert critical(report("Keep cilazapril lower than 5 mg a day.", passages, "en"))


# --- how often: a bound on the interval is not the regimen's frequency -----------------------

_BOUND = [
    (
        "Ibuprofen for children: 100 mg every 6 hours. Leave at least 6 hours between doses.",
        "Give the ibuprofen every 6 hours.",
        "Give the ibuprofen every 8 hours.",
        "en",
    ),
    (
        "Ibuprofen voor kinderen: 100 mg om de 6 uur. Laat minstens 6 uur tussen twee doses.",
        "Geef de ibuprofen om de 6 uur.",
        "Geef de ibuprofen om de 8 uur.",
        "nl",
    ),
    (
        "Ibuprofen cho trẻ em: 100 mg mỗi 6 giờ. Hai liều cách nhau ít nhất 6 giờ.",
        "Cho bé uống ibuprofen mỗi 6 giờ.",
        "Cho bé uống ibuprofen mỗi 8 giờ.",
        "vi",
    ),
]


@pytest.mark.parametrize(("passage", "right", "wrong", "language"), _BOUND)
def test_an_interval_bound_does_not_back_another_regimens_frequency(
    passage: str, right: str, wrong: str, language: str
) -> None:
    assert not report(right, [passage], language).ungrounded
    assert critical(report(wrong, [passage], language))


# --- timing and course advice: its times together in one passage of the drug ----------------

_TIMES = [
    (
        [
            "Flucloxacillin capsules: adults 500 mg four times a day.",
            "Take flucloxacillin on an empty stomach, 1 hour before or 2 hours after food.",
        ],
        "Take it on an empty stomach, an hour before or two hours after you eat.",
        "Take it on an empty stomach, an hour before or three hours after you eat.",
        "en",
    ),
    (
        [
            "Calciumcarbonaat kauwtabletten: 1 à 2 tabletten bij maagklachten.",
            "Neem andere geneesmiddelen minstens 2 uur vóór of 2 uur na calciumcarbonaat in.",
        ],
        "Neem uw andere medicijnen steeds minstens twee uur ervoor of erna in.",
        "Neem uw andere medicijnen steeds minstens vier uur ervoor of erna in.",
        "nl",
    ),
    (
        [
            "Siro húng chanh: trẻ 2–5 tuổi uống 5 ml x 3 lần/ngày.",
            "Dùng liên tục ít nhất 5 ngày và tiếp tục thêm 2 ngày sau khi hết triệu chứng.",
        ],
        "Nên cho bé uống ít nhất 5 ngày và dùng thêm 2 ngày sau khi đã hết triệu chứng.",
        "Nên cho bé uống ít nhất 10 ngày và dùng thêm 2 ngày sau khi đã hết triệu chứng.",
        "vi",
    ),
]


@pytest.mark.parametrize(("passages", "right", "wrong", "language"), _TIMES)
def test_timing_advice_is_grounded_by_its_times_in_one_passage(
    passages: list[str], right: str, wrong: str, language: str
) -> None:
    assert not report(right, passages, language).ungrounded
    assert report(wrong, passages, language).ungrounded


def test_another_drugs_timing_does_not_ground_it() -> None:
    passages = [
        "Flucloxacillin capsules: adults 500 mg four times a day.",
        "Take alendronate at least 30 minutes before the first food of the day.",
    ]
    answer = "Take the flucloxacillin at least 30 minutes ahead of your breakfast."
    assert report(answer, passages, "en").ungrounded
