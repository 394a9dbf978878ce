"""The mechanism of the twentieth round (issue 10): a drug no lexicon knows, named by a name
the answer shares with the passage about it — a passage's heading ("Tavrolex: …") or a brand in
brackets beside its drug ("Velpratide (Quorix)") — binds the answer's figures to that passage,
so another retrieved drug's dose under its name is flagged. Sentences of our own in English,
Dutch and Vietnamese with invented names; each wrong answer has a right twin that must pass."""

from __future__ import annotations

import pytest

from services.grounding.grounding import medical_context
from tests.support.grounding_checks import check_report, critical
from tests.support.grounding_checks import numbered_report as report

# --- a brand in brackets beside a drug the passage's id names -----------------------------

_BRACKETED = [
    (
        [
            ("smpc-dalmorine-en-01", "Dalmorine, adults: 40 mg twice daily for a dry cough."),
            (
                "smpc-velpratide-en-01",
                "Velpratide (Quorix), adults: 5 mg once daily for a dry cough.",
            ),
        ],
        "For a dry cough adults take Quorix 40 mg twice a day.",
        "For a dry cough adults take Quorix 5 mg once a day.",
        "en",
    ),
    (
        [
            (
                "smpc-dalmorine-nl-01",
                "Dalmorine, volwassenen: tweemaal daags 40 mg bij droge hoest.",
            ),
            (
                "smpc-velpratide-nl-01",
                "Velpratide (Quorix), volwassenen: eenmaal daags 5 mg bij droge hoest.",
            ),
        ],
        "Bij droge hoest nemen volwassenen Quorix tweemaal daags 40 mg.",
        "Bij droge hoest nemen volwassenen Quorix eenmaal daags 5 mg.",
        "nl",
    ),
    (
        [
            ("hdsd-dalmorine-vi-01", "Dalmorine, người lớn: uống 40 mg, ngày 2 lần khi ho khan."),
            (
                "hdsd-velpratide-vi-01",
                "Velpratide (Quorix), người lớn: uống 5 mg, ngày 1 lần khi ho khan.",
            ),
        ],
        "Khi ho khan, người lớn uống Quorix 40 mg, ngày 2 lần.",
        "Khi ho khan, người lớn uống Quorix 5 mg, ngày 1 lần.",
        "vi",
    ),
]


@pytest.mark.parametrize(("passages", "wrong", "right", "language"), _BRACKETED)
def test_a_bracketed_brand_the_answer_writes_is_its_drug(
    passages: list[tuple[str, str]], wrong: str, right: str, language: str
) -> None:
    assert critical(check_report(wrong, passages, language))
    assert not critical(check_report(right, passages, language))


# --- a heading's name, in a passage that names no drug --------------------------------------

_HEADED = [
    (
        [
            "Sleeplessness: start with 10 mg at bedtime, then 20 mg once daily.",
            "Tavrolex: start with 2 mg once daily for 3 days, then 4 mg once daily.",
        ],
        "Tavrolex is started at 10 mg at bedtime, then 20 mg once daily.",
        "Tavrolex is started at 2 mg once daily for 3 days, then 4 mg once daily.",
        "en",
    ),
    (
        [
            "Slapeloosheid: begin met 10 mg voor het slapengaan, daarna eenmaal daags 20 mg.",
            "Tavrolex: begin met eenmaal daags 2 mg gedurende 3 dagen, daarna eenmaal daags 4 mg.",
        ],
        "Tavrolex begint u met 10 mg voor het slapengaan, daarna eenmaal daags 20 mg.",
        "Tavrolex begint u met eenmaal daags 2 mg gedurende 3 dagen, daarna eenmaal daags 4 mg.",
        "nl",
    ),
]


@pytest.mark.parametrize(("passages", "wrong", "right", "language"), _HEADED)
def test_a_heading_name_the_answer_writes_is_the_passage_drug(
    passages: list[str], wrong: str, right: str, language: str
) -> None:
    assert critical(report(wrong, passages, language))
    assert not critical(report(right, passages, language))


# --- a time after a word of delay is when, not a basis ("after a week" is no "per week") -----

#: Vietnamese writes "a week" of a basis ("3 lần một tuần") and of a delay ("sau một tuần") in
#: the same words; English and Dutch delays ("after one week", "na een week") were read already.
_DELAYED = [
    (
        [
            "Zorvatide 5 mg: uống 1 viên mỗi ngày. Nếu sau 4 tuần hiệu quả chưa đủ, có thể tăng "
            "lên 2 viên mỗi ngày."
        ],
        "Nếu sau một tuần huyết áp vẫn cao, có thể tăng lên 2 viên mỗi ngày.",
        "Nếu sau 4 tuần huyết áp vẫn cao, có thể tăng lên 2 viên mỗi ngày.",
        "vi",
    ),
]


@pytest.mark.parametrize(("passages", "wrong", "right", "language"), _DELAYED)
def test_a_time_after_a_delay_word_is_checked_not_read_as_a_basis(
    passages: list[str], wrong: str, right: str, language: str
) -> None:
    assert critical(report(wrong, passages, language))
    assert not critical(report(right, passages, language))


# --- a Dutch compound of a name the passages teach ("…pomp", "…pen") -------------------------


def test_a_compound_of_a_taught_name_names_its_drug() -> None:
    passages = [
        ("smpc-dalvorine-nl-01", "Dalvorine, continue infusie: ten hoogste 100 mg per dag."),
        ("smpc-trelozine-nl-01", "Trelozine, tabletten: ten hoogste 300 mg per dag."),
    ]
    wrong = "Met de dalvorinepomp krijgt u ten hoogste 300 mg per dag."
    right = "Met de dalvorinepomp krijgt u ten hoogste 100 mg per dag."
    assert critical(check_report(wrong, passages, "nl"))
    assert not critical(check_report(right, passages, "nl"))


# --- "that amount": a frequency beside it is the amount before, taken each time -------------

_TAKEN_UP = [
    (
        ["Zorvatide, adults: 1,200 mg a day, given in three divided doses with meals."],
        "Adults need 1,200 mg of zorvatide. Take that amount three times a day with meals.",
        "Adults need 400 mg of zorvatide each time. Take that amount three times a day with meals.",
        "en",
    ),
    (
        ["Zorvatide, volwassenen: 1.200 mg per dag, verdeeld over drie giften bij de maaltijd."],
        "Volwassenen hebben 1.200 mg zorvatide nodig. Neem die hoeveelheid driemaal daags bij "
        "de maaltijd.",
        "Volwassenen hebben per keer 400 mg zorvatide nodig. Neem die hoeveelheid driemaal daags "
        "bij de maaltijd.",
        "nl",
    ),
    (
        [
            "Zorvatide 400 mg: người lớn uống 400 mg mỗi lần, ngày 3 lần, tổng cộng 1.200 mg mỗi "
            "ngày."
        ],
        "Người lớn cần 1.200 mg zorvatide. Uống lượng đó ngày 3 lần trong bữa ăn.",
        "Người lớn cần 400 mg zorvatide. Uống lượng đó ngày 3 lần trong bữa ăn.",
        "vi",
    ),
]


@pytest.mark.parametrize(("passages", "wrong", "right", "language"), _TAKEN_UP)
def test_that_amount_is_the_amount_before_taken_each_time(
    passages: list[str], wrong: str, right: str, language: str
) -> None:
    assert critical(report(wrong, passages, language))
    assert not critical(report(right, passages, language))


# --- a number after a time word in the question is a point in a schedule, not an age --------
# (Vietnamese reads a question's age only with "tuổi", so "tuần 6" was never one.)

_SCHEDULE = [
    (
        "Zorvatide 50 mg: adults: 50 mg once daily in weeks 5 and 6, then 100 mg once daily.",
        "I'm starting week 6 of zorvatide. What dose should I be on?",
        "My son is 6 and was given zorvatide. What dose should he be on?",
        "In week 6 you take 50 mg once a day.",
        "en",
    ),
    (
        "Zorvatide 50 mg: volwassenen: in week 5 en 6 eenmaal daags 50 mg, daarna eenmaal daags "
        "100 mg.",
        "Nu zit ik in week 6 en wil weten welke dosis zorvatide daarbij hoort.",
        "Mijn zoon is 6 en kreeg zorvatide; ik wil weten welke dosis daarbij hoort.",
        "In week 6 neemt u eenmaal daags 50 mg.",
        "nl",
    ),
]


@pytest.mark.parametrize(("passage", "week", "child", "answer", "language"), _SCHEDULE)
def test_a_week_of_a_schedule_in_the_question_is_no_age(
    passage: str, week: str, child: str, answer: str, language: str
) -> None:
    at_week = medical_context(week, language)
    assert at_week.age_min_years is None
    assert not critical(report(answer, [passage], language, at_week))
    assert critical(report(answer, [passage], language, medical_context(child, language)))
