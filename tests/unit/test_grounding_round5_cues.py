"""Mechanisms of the fifth round (issue 10), found on the blind split fresh3: more INN stems and
drugs, "1 time" as a count, .... Each with a test per language, written in other words and about
other drugs than the cases."""

from __future__ import annotations

import pytest

from schemas.verdicts import GroundingReport, MedicalContext
from services.grounding.quantities import quantities
from tests.support.grounding_checks import check_report


def report(
    answer: str, passages: list[str], language: str, context: MedicalContext | None = None
) -> GroundingReport:
    return check_report(
        answer, [(f"doc-{i}", p) for i, p in enumerate(passages)], language, context
    )


# --- unlisted drugs by their INN stem -----------------------------------------------------------


@pytest.mark.parametrize(
    ("answer", "passages", "language"),
    [
        (
            "Olanzapine is started at 10 to 20 mg once a day.",
            ["Olanzapine: start with 10 mg once daily.", "Diazepam: 10 to 20 mg once a day."],
            "en",
        ),
        (
            "Van de quetiapine neemt u 2 tot 10 mg per dag.",
            ["Quetiapine: begin met 50 mg per dag.", "Diazepam: 2 tot 10 mg per dag."],
            "nl",
        ),
        (
            "Mebendazol uống 500 mg, một liều duy nhất.",
            ["Mebendazol: 100 mg x 2 lần/ngày trong 3 ngày.", "Albendazol: liều duy nhất 400 mg."],
            "vi",
        ),
    ],
)
def test_another_drugs_dose_under_an_unlisted_name_is_caught(
    answer: str, passages: list[str], language: str
) -> None:
    assert report(answer, passages, language).ungrounded


# --- "1 time" is a count ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "language"),
    [("Take it 1 time only.", "en"), ("Take 2 time a day.", "en")],
)
def test_a_singular_time_after_a_number_is_a_count(text: str, language: str) -> None:
    assert [q.unit for q in quantities(text, language)] == ["times"]


# --- a dose restated on the other basis ----------------------------------------------------------


@pytest.mark.parametrize(
    ("right", "wrong", "passage", "language"),
    [
        (
            "So that is 1,500 mg of amoxicillin a day.",
            "So that is 3,000 mg of amoxicillin a day.",
            "Amoxicillin for adults: 500 mg three times a day.",
            "en",
        ),
        (
            "Per dag is dat dus hooguit 20 mg loratadine.",
            "Per dag is dat dus hooguit 40 mg loratadine.",
            "Loratadine: 10 mg tweemaal daags.",
            "nl",
        ),
        (
            "Mỗi lần uống 200 mg acyclovir.",
            "Mỗi lần uống 1000 mg acyclovir.",
            "Aciclovir: 1000 mg/ngày, chia làm 5 lần.",
            "vi",
        ),
    ],
)
def test_a_dose_restated_per_day_or_per_dose(
    right: str, wrong: str, passage: str, language: str
) -> None:
    assert not report(right, [passage], language).ungrounded
    assert report(wrong, [passage], language).ungrounded


def test_a_range_of_doses_a_day_restates_nothing() -> None:
    """50–100 mg 4 to 6 times a day is no backing for 600 mg a day beside a 400 mg maximum."""
    passage = "Tramadol: 50 to 100 mg every 4 to 6 hours. Do not take more than 400 mg a day."
    assert report("You can take 600 mg of tramadol a day.", [passage], "en").ungrounded


# --- a child's age after "van" / "of" ---------------------------------------------------------


@pytest.mark.parametrize(
    ("answer", "passage", "language"),
    [
        (
            "For your son of 8, that is 5 mg of montelukast in the evening.",
            "Montelukast for children aged 6 to 14: 5 mg in the evening.",
            "en",
        ),
        (
            "Voor uw zoon van 8 is dat 5 mg montelukast, 's avonds.",
            "Montelukast voor kinderen van 6 tot 14 jaar: 5 mg 's avonds.",
            "nl",
        ),
    ],
)
def test_a_childs_age_after_of(answer: str, passage: str, language: str) -> None:
    assert not report(answer, [passage], language).ungrounded
    wrong_age = answer.replace(" 8", " 3")
    assert report(wrong_age, [passage], language).ungrounded


# --- the group compared with is not the group spoken about ------------------------------------


@pytest.mark.parametrize(
    ("answer", "passages", "language"),
    [
        (
            "An 8-year-old takes azithromycin the same way an adult does: 500 mg once a day.",
            [
                "Adults: azithromycin 500 mg once daily for 3 days.",
                "Children: 10 mg/kg once daily for 3 days, at most 500 mg per dose.",
            ],
            "en",
        ),
        (
            "Een kind van 8 jaar neemt azitromycine op dezelfde manier als volwassenen: 500 mg "
            "eenmaal daags.",
            [
                "Volwassenen: azitromycine 500 mg eenmaal daags gedurende 3 dagen.",
                "Kinderen: 10 mg/kg eenmaal daags gedurende 3 dagen, ten hoogste 500 mg per dosis.",
            ],
            "nl",
        ),
    ],
)
def test_an_adult_dose_for_a_child_compared_with_adults(
    answer: str, passages: list[str], language: str
) -> None:
    """The child is spoken about; the cap beside a per-kg dose does not make 500 mg right."""
    assert report(answer, passages, language).ungrounded


def test_a_younger_group_after_than_is_compared_with() -> None:
    passages = [
        "Adults: up to 400 mg of tramadol a day.",
        "Patients over 75: the maximum daily dose is 300 mg.",
    ]
    answer = "Over 75 the limit is lower than for younger adults: up to 300 mg of tramadol a day."
    context = MedicalContext(populations=["elderly"], age_min_years=80, age_max_years=80)
    assert not report(answer, passages, "en", context).ungrounded
