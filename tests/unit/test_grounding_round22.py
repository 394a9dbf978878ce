"""The mechanisms of the twenty-second round (issue 10), from the wrong answers of ``fresh19``
(pooled with ``fresh17`` and ``fresh18``):

- kidney or liver impairment that no retrieved passage names does not set a dose apart: the
  general dose is the one to meet (the liver disease a drug treats, a question's kidneys);
- "a single daily dose", "in één dagelijkse dosis", "một liều duy nhất mỗi ngày" are once a day
  (the lexicon's examples);
- a dose taken so many times a week restates as the week's total ("50 IU/kg, 3 times a week" for
  60 kg is 9,000 IU a week).

Sentences of our own; each right answer has a wrong twin that must still be flagged."""

from __future__ import annotations

import pytest

from services.grounding.grounding import medical_context
from tests.support.grounding_checks import check_report, critical

# --- an organ no passage names -----------------------------------------------------------------

_UNNAMED_ORGAN = [
    (
        "en",
        "Velpanib: the recommended dose is 20 mg once daily.",
        "I have liver cirrhosis. How much velpanib do I take?",
        "Velpanib is taken as 20 mg once a day.",
        "Velpanib is taken as 40 mg once a day.",
    ),
    (
        "nl",
        "Velpanib: de aanbevolen dosis is eenmaal daags 20 mg.",
        "Ik heb een verminderde nierfunctie. Hoeveel velpanib neem ik?",
        "U neemt eenmaal daags 20 mg velpanib.",
        "U neemt eenmaal daags 40 mg velpanib.",
    ),
    (
        "vi",
        "Velpanib: liều khuyến cáo 20 mg, ngày một lần.",
        "Tôi bị suy thận. Tôi uống velpanib bao nhiêu?",
        "Bạn uống velpanib 20 mg, ngày một lần.",
        "Bạn uống velpanib 40 mg, ngày một lần.",
    ),
]


@pytest.mark.parametrize(("language", "passage", "question", "right", "wrong"), _UNNAMED_ORGAN)
def test_an_organ_no_passage_names_does_not_set_the_dose_apart(
    language: str, passage: str, question: str, right: str, wrong: str
) -> None:
    passages = [(f"smpc-velpanib-{language}-01", passage)]
    ctx = medical_context(question, language)
    assert {"renal", "hepatic"} & set(ctx.populations)
    assert not critical(check_report(right, passages, language, ctx))
    assert critical(check_report(wrong, passages, language, ctx))


def test_an_organ_a_passage_names_still_sets_the_dose_apart() -> None:
    """The passages speak of kidney impairment (a dose of its own): the general dose given to a
    patient with weak kidneys stays a finding."""
    passages = [
        ("smpc-velpanib-en-01", "Velpanib: the recommended dose is 20 mg once daily."),
        ("smpc-velpanib-en-02", "Renal impairment: 10 mg once daily."),
    ]
    ctx = medical_context("I have kidney impairment. How much velpanib do I take?", "en")
    assert critical(check_report("Velpanib is taken as 20 mg once a day.", passages, "en", ctx))
    assert not critical(check_report("Velpanib is taken as 10 mg once a day.", passages, "en", ctx))


# --- times a week -----------------------------------------------------------------------------

_WEEKLY = [
    (
        "en",
        "Epoetin alfa, patients on haemodialysis: 50 IU/kg three times a week, intravenously.",
        "I am on dialysis and weigh 60 kg. How much epoetin alfa will I get?",
        "At 60 kg that is 3,000 IU each time, three times a week: 9,000 IU a week.",
        "At 60 kg that is 3,000 IU each time, three times a week: 18,000 IU a week.",
    ),
    (
        "vi",
        "Epoetin alfa, bệnh nhân lọc máu: 50 IU/kg, 3 lần mỗi tuần, tiêm tĩnh mạch.",
        "Tôi đang lọc máu, nặng 60 kg. Tôi được tiêm epoetin alfa bao nhiêu?",
        "Với 60 kg, mỗi lần 3.000 IU, 3 lần mỗi tuần, tức 9.000 IU mỗi tuần.",
        "Với 60 kg, mỗi lần 3.000 IU, 3 lần mỗi tuần, tức 18.000 IU mỗi tuần.",
    ),
]


@pytest.mark.parametrize(("language", "passage", "question", "right", "wrong"), _WEEKLY)
def test_a_dose_so_many_times_a_week_restates_as_the_weeks_total(
    language: str, passage: str, question: str, right: str, wrong: str
) -> None:
    passages = [(f"smpc-epoetin-{language}-01", passage)]
    ctx = medical_context(question, language)
    assert not critical(check_report(f"Epoetin alfa. {right}", passages, language, ctx))
    assert critical(check_report(f"Epoetin alfa. {wrong}", passages, language, ctx))


# --- infants are children under a year -------------------------------------------------------

_INFANTS = [
    (
        "en",
        [
            "Velpanib, children from 1 year: 5 mg/kg a day in two doses.",
            "Infants and newborns: 10 to 15 mg/kg a day, in two or three doses.",
        ],
        "My daughter is 4 and weighs 20 kg.",
        "My son is 6 months old and weighs 8 kg.",
        "She takes 2.5 mg/kg per dose, twice a day.",
        "He takes 5 mg/kg per dose, twice a day.",
        "She takes 5 mg/kg per dose, twice a day.",
    ),
    (
        "nl",
        [
            "Velpanib, kinderen vanaf 1 jaar: 5 mg/kg per dag, verdeeld over twee doses.",
            "Zuigelingen en pasgeborenen: 10 tot 15 mg/kg per dag, verdeeld over twee of drie "
            "doses.",
        ],
        "Mijn dochter is 4 jaar en weegt 20 kg.",
        "Mijn zoon is 6 maanden en weegt 8 kg.",
        "Ze krijgt 2,5 mg/kg per keer, tweemaal daags.",
        "Hij krijgt 5 mg/kg per keer, tweemaal daags.",
        "Ze krijgt 5 mg/kg per keer, tweemaal daags.",
    ),
]


@pytest.mark.parametrize(
    ("language", "texts", "older", "baby", "right_older", "right_baby", "wrong_older"), _INFANTS
)
def test_an_infants_dose_is_no_dose_for_an_older_child(
    language: str,
    texts: list[str],
    older: str,
    baby: str,
    right_older: str,
    right_baby: str,
    wrong_older: str,
) -> None:
    """The infants' 10–15 mg/kg a day (5–7.5 per dose in two) backs a baby's 5 mg/kg per dose,
    not a four-year-old's, whose passage says 5 mg/kg a day (2.5 per dose)."""
    passages = [(f"smpc-velpanib-{language}-0{i}", t) for i, t in enumerate(texts, 1)]
    four = medical_context(older, language)
    months = medical_context(baby, language)
    assert not critical(check_report(f"Velpanib. {right_older}", passages, language, four))
    assert not critical(check_report(f"Velpanib. {right_baby}", passages, language, months))
    assert critical(check_report(f"Velpanib. {wrong_older}", passages, language, four))
