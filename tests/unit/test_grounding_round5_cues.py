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
