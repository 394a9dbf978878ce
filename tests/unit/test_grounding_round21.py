"""The mechanisms of the twenty-first round (issue 10), found on the blind splits ``fresh17`` and
``fresh18`` (correct doses flagged):

- "20 mg for each kilo", "5 mg a kilo", "10 mg voor elke kilo", "15 mg cho một kg" are per kg,
  as "per kilo" was; the same words before anything but a kilogram change nothing;
- an older patient in a group the passages allow the drug in ("no dose adjustment in kidney
  impairment", for a man of 72 with weak kidneys) takes the adult dose: the two fallbacks that
  existed one by one (older person → adult; allowed group → the general dose) now also apply
  together;
- Vietnamese numbers of several words ("mười hai giờ" was read as 2 hours, "hai mươi giọt" as
  nothing) and "rưỡi" (and a half); spans of time without a number ("een kwartier", "a
  fortnight", "anderhalf uur").

Sentences of our own with drugs of the lexicon; each right answer has a wrong twin that must
still be flagged."""

from __future__ import annotations

from decimal import Decimal

import pytest

from services.grounding.grounding import medical_context
from services.grounding.quantities import amounts
from services.grounding.tokens import tokenize
from tests.support.grounding_checks import check_report, critical

# --- per kilo ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "language", "unit"),
    [
        ("Give 20 mg for each kilo of body weight.", "en", "mg/kg"),
        ("Give 20 mg for every kilogram.", "en", "mg/kg"),
        ("That is 5 mg a kilo per day.", "en", "mg/kg"),
        ("Use 1 ml for every kg.", "en", "ml/kg"),
        ("Kinderen krijgen 10 mg voor elke kilo lichaamsgewicht.", "nl", "mg/kg"),
        ("Het is 10 mg voor iedere kilo.", "nl", "mg/kg"),
        ("Trẻ em uống 15 mg cho một kg cân nặng.", "vi", "mg/kg"),
        # the same words before anything else than a kilogram say nothing of the kind
        ("Take 500 mg each day.", "en", "mg"),
        ("Take 500 mg a day.", "en", "mg"),
        ("Take 500 mg every morning.", "en", "mg"),
        ("Neem 500 mg voor elke maaltijd.", "nl", "mg"),
        ("Uống 500 mg cho một lần.", "vi", "mg"),
    ],
)
def test_per_kilo_phrases_make_a_per_kg_amount(text: str, language: str, unit: str) -> None:
    found = amounts(tokenize(text), language)
    assert [q.unit for a in found for q in a.parts if q.unit.startswith(("mg", "ml"))] == [unit]


_KILO_CASES = [
    (
        "en",
        "Children: 30 mg/kg a day in three divided doses for 5 days.",
        "My son weighs 20 kg.",
        "At 20 kg that is 600 mg a day (30 mg for each kilo), split into three doses.",
        "At 20 kg that is 900 mg a day (45 mg for each kilo), split into three doses.",
    ),
    (
        "nl",
        "Kinderen: 30 mg/kg per dag, verdeeld over drie giften, gedurende 5 dagen.",
        "Mijn zoon weegt 20 kg.",
        "Bij 20 kg is dat 600 mg per dag (30 mg voor elke kilo), verdeeld over drie giften.",
        "Bij 20 kg is dat 900 mg per dag (45 mg voor elke kilo), verdeeld over drie giften.",
    ),
]


@pytest.mark.parametrize(("language", "passage", "question", "right", "wrong"), _KILO_CASES)
def test_a_per_kilo_dose_worked_out_for_a_weight(
    language: str, passage: str, question: str, right: str, wrong: str
) -> None:
    passages = [(f"smpc-metronidazole-{language}-01", f"Metronidazole. {passage}")]
    ctx = medical_context(question, language)
    assert not critical(check_report(f"Metronidazole: {right}", passages, language, ctx))
    assert critical(check_report(f"Metronidazole: {wrong}", passages, language, ctx))


# --- an older patient in an allowed group ----------------------------------------------------

_OLDER_IN_ALLOWED_GROUP = [
    (
        "en",
        [
            "Gliclazide: usual dose 80 mg a day; maximum 320 mg a day.",
            "Gliclazide can be used in mild to moderate kidney impairment without dose adjustment.",
        ],
        "My father is 76 and has mild kidney impairment. How much gliclazide can he take?",
        "Gliclazide can be taken up to 320 mg a day.",
        "Gliclazide can be taken up to 640 mg a day.",
    ),
    (
        "nl",
        [
            "Gliclazide: gebruikelijke dosis 80 mg per dag; maximaal 320 mg per dag.",
            "Bij een lichte tot matige nierfunctiestoornis is geen aanpassing van de dosis nodig.",
        ],
        "Mijn vader is 76 en heeft een verminderde nierfunctie. Hoeveel gliclazide mag hij?",
        "Hij mag maximaal 320 mg gliclazide per dag nemen.",
        "Hij mag maximaal 640 mg gliclazide per dag nemen.",
    ),
    (
        "vi",
        [
            "Gliclazid: liều thông thường 80 mg mỗi ngày; tối đa 320 mg mỗi ngày.",
            "Gliclazid có thể dùng cho người suy thận nhẹ và vừa mà không cần chỉnh liều.",
        ],
        "Bố tôi 76 tuổi, bị suy thận nhẹ. Ông uống gliclazid tối đa bao nhiêu?",
        "Gliclazid có liều tối đa 320 mg mỗi ngày.",
        "Gliclazid có liều tối đa 640 mg mỗi ngày.",
    ),
]


@pytest.mark.parametrize(
    ("language", "texts", "question", "right", "wrong"), _OLDER_IN_ALLOWED_GROUP
)
def test_an_older_patient_in_an_allowed_group_takes_the_adult_dose(
    language: str, texts: list[str], question: str, right: str, wrong: str
) -> None:
    passages = [(f"smpc-gliclazide-{language}-0{i}", t) for i, t in enumerate(texts, 1)]
    ctx = medical_context(question, language)
    assert {"elderly", "renal"} <= set(ctx.populations)
    assert not critical(check_report(right, passages, language, ctx))
    assert critical(check_report(wrong, passages, language, ctx))


def test_a_group_the_passages_advise_against_is_not_excused() -> None:
    """The same older patient, where the leaflet says not to use the drug in kidney
    impairment: no fallback to the adult dose."""
    passages = [
        ("smpc-gliclazide-en-01", "Gliclazide: usual dose 80 mg a day; maximum 320 mg a day."),
        ("smpc-gliclazide-en-02", "Do not use gliclazide in severe kidney impairment."),
    ]
    ctx = medical_context(
        "My father is 76 and has severe kidney impairment. How much gliclazide can he take?", "en"
    )
    assert critical(
        check_report("Gliclazide can be taken up to 320 mg a day.", passages, "en", ctx)
    )


# --- numbers in words ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "language", "values"),
    [
        ("mỗi mười hai giờ", "vi", [("12", "h")]),
        ("sau mười lăm phút", "vi", [("0.25", "h")]),
        ("hai mươi giọt", "vi", [("20", "drop")]),
        ("hai mươi mốt ngày", "vi", [("504", "h")]),
        ("ba mươi tư viên", "vi", [("34", "tablet")]),
        ("hai trăm năm mươi mg", "vi", [("250", "mg")]),
        ("một trăm lẻ năm mg", "vi", [("105", "mg")]),
        ("hai nghìn năm trăm đơn vị", "vi", [("2500", "IU")]),
        ("từ mười đến mười lăm ngày", "vi", [("240", "h"), ("360", "h")]),
        ("một tiếng rưỡi", "vi", [("1.5", "h")]),
        ("uống hai viên rưỡi", "vi", [("2.5", "tablet")]),
        ("uống 2 viên", "vi", [("2", "tablet")]),
        # "năm" after "mười" is a year, not a five: ten years is no amount here
        ("mười năm", "vi", []),
        ("wacht een kwartier", "nl", [("0.25", "h")]),
        ("na anderhalf uur", "nl", [("1.5", "h")]),
        ("for a fortnight", "en", [("336", "h")]),
        ("a quarter of an hour", "en", [("0.25", "h")]),
    ],
)
def test_numbers_and_times_in_words(
    text: str, language: str, values: list[tuple[str, str]]
) -> None:
    found = [
        (str(q.value.normalize()), q.unit)
        for a in amounts(tokenize(text), language)
        for q in a.parts
    ]
    assert found == [(str(Decimal(v).normalize()), u) for v, u in values]


def test_an_interval_in_vietnamese_words_is_judged_by_its_value() -> None:
    passages = [("hdsd-cefuroxim-vi-01", "Cefuroxim, người lớn: uống 500 mg mỗi 12 giờ.")]
    right = "Người lớn uống cefuroxim 500 mg, mỗi mười hai giờ một lần."
    wrong = "Người lớn uống cefuroxim 500 mg, mỗi hai giờ một lần."
    assert not critical(check_report(right, passages, "vi"))
    assert critical(check_report(wrong, passages, "vi"))


# --- the dosing goes on in a sentence of no kind of its own -----------------------------------

_LOPERAMIDE = {
    "en": "Loperamide 2 mg capsules, adults: take 2 capsules at first, then 1 capsule after "
    "each loose stool. Do not take more than 6 capsules in 24 hours.",
    "nl": "Loperamide 2 mg capsules, volwassenen: begin met 2 capsules, daarna 1 capsule na "
    "elke dunne ontlasting. Neem niet meer dan 6 capsules per 24 uur.",
    "vi": "Loperamid 2 mg, người lớn: uống 2 viên lúc đầu, sau đó 1 viên sau mỗi lần đi ngoài "
    "phân lỏng. Không dùng quá 6 viên trong 24 giờ.",
}
_LOPERAMIDE_DOSE = {
    "en": "Adults take 2 loperamide capsules at first, then 1 capsule after each loose stool.",
    "nl": "Volwassenen nemen eerst 2 capsules loperamide, daarna 1 capsule na elke dunne "
    "ontlasting.",
    "vi": "Người lớn uống 2 viên loperamid lúc đầu, sau đó 1 viên sau mỗi lần đi ngoài phân lỏng.",
}
#: Sentences that no reader takes for a dose: a bare limit, its number filled in.
_LIMITS = [
    ("en", "Just don't go above {} in a day."),
    ("en", "That's the most: {}."),
    ("nl", "Ga op een dag niet boven de {}."),
    ("nl", "Meer dan {} is te veel."),
    ("vi", "Nhiều nhất là {}."),
]


@pytest.mark.parametrize(("language", "limit"), _LIMITS)
def test_a_number_no_passage_holds_after_a_dose_is_a_dose_claim(language: str, limit: str) -> None:
    passages = [(f"pil-loperamide-{language}-01", _LOPERAMIDE[language])]
    dose = _LOPERAMIDE_DOSE[language]
    wrong = check_report(f"{dose} {limit.format(10)}", passages, language)
    assert critical(wrong)
    assert [c.kind for c in wrong.claims if not c.grounded] == ["dose"]
    # the same sentence with the passage's number: no dose claim made of it
    assert not critical(check_report(f"{dose} {limit.format(6)}", passages, language))
    # and with no dose before it, a number the passages lack is no dose claim either
    alone = check_report(limit.format(10), passages, language)
    assert alone.ungrounded
    assert not critical(alone)


def test_the_time_of_a_passage_denominator_is_a_span_it_states() -> None:
    """ "niet meer dan 6 capsules per 24 uur" states 24 hours: an answer's "op een dag" (one day)
    finds it, as "6" finds the count."""
    passages = [("pil-loperamide-nl-01", _LOPERAMIDE["nl"])]
    r = check_report("Ga op een dag niet boven de 6.", passages, "nl")
    assert all(not c.numbers_missing for c in r.claims)


# --- a per-kg rate beside the amount it works out to ----------------------------------------

_RATE_BESIDE = [
    (
        "en",
        "Cefprozil, children 6 months to 12 years: 30 mg/kg a day in two divided doses.",
        "My daughter weighs 14 kg.",
        "At 14 kg: 30 mg/kg × 14 kg = 420 mg a day, so 210 mg twice a day.",
        "At 14 kg: 30 mg/kg × 14 kg = 420 mg each time, twice a day.",
    ),
    (
        "vi",
        "Cefprozil, trẻ em từ 6 tháng đến 12 tuổi: 30 mg/kg/ngày, chia 2 lần.",
        "Con tôi nặng 14 kg.",
        "Với bé 14 kg: 30 mg/kg × 14 kg = 420 mg mỗi ngày, chia 2 lần, mỗi lần 210 mg.",
        "Với bé 14 kg: 30 mg/kg × 14 kg = 420 mg mỗi lần, ngày 2 lần.",
    ),
]


@pytest.mark.parametrize(("language", "passage", "question", "right", "wrong"), _RATE_BESIDE)
def test_a_rate_without_basis_takes_the_basis_of_the_amount_it_works_out_to(
    language: str, passage: str, question: str, right: str, wrong: str
) -> None:
    """ "30 mg/kg" beside "420 mg a day" for 14 kg is a day's rate; beside "420 mg each time" it
    is a rate per dose, which the passage's per-day rate contradicts."""
    passages = [(f"smpc-cefprozil-{language}-01", passage)]
    ctx = medical_context(question, language)
    assert not critical(check_report(f"Cefprozil. {right}", passages, language, ctx))
    assert critical(check_report(f"Cefprozil. {wrong}", passages, language, ctx))
