"""The mechanisms of the ninth round (issue 10), found on the blind split fresh7: correct
answers and abstentions that were flagged, without losing a catch. Tests per language with near
misses (dangerous answers that look like the correct ones), written in other words and about
other drugs than the cases."""

from __future__ import annotations

import pytest

from services.grounding.claims import skip_reason
from services.grounding.grounding import medical_context
from tests.support.grounding_checks import numbered_report as report

# --- a passage's number words hold the numbers an answer writes in digits ----------------------


@pytest.mark.parametrize(
    ("answer", "passage", "language"),
    [
        (
            "Take 10–20 mg of propranolol a day, split into 2 or 3 doses.",
            "Propranolol for anxiety: 10 mg to 20 mg daily, in two or three divided doses.",
            "en",
        ),
        (
            "Neem per dag 2 à 3 keer een zakje van 3 g macrogol.",
            "Macrogol 3 g per zakje: neem twee à drie keer per dag een zakje.",
            "nl",
        ),
    ],
)
def test_digits_match_the_number_words_of_the_passage(
    answer: str, passage: str, language: str
) -> None:
    assert report(answer, [passage], language).ungrounded == []


@pytest.mark.parametrize(
    ("answer", "passage", "language"),
    [
        (
            "Take 10–20 mg of propranolol a day, split into 4 or 5 doses.",
            "Propranolol for anxiety: 10 mg to 20 mg daily, in two or three divided doses.",
            "en",
        ),
        (
            "Neem per dag 4 keer een zakje van 3 g macrogol.",
            "Macrogol 3 g per zakje: neem twee à drie keer per dag een zakje.",
            "nl",
        ),
    ],
)
def test_a_number_no_word_of_the_passage_names_is_still_missing(
    answer: str, passage: str, language: str
) -> None:
    assert report(answer, [passage], language).ungrounded != []


def test_number_words_of_another_language_do_not_count() -> None:
    # "twee" is Dutch: an English passage that holds it by chance does not hold a 2
    passage = "Sumatriptan twee: one 50 mg tablet at the onset of the migraine."
    got = report("Take 2 tablets of 50 mg sumatriptan at once.", [passage], "en")
    assert got.ungrounded != []


# --- a bare number after a person is no age when a noun follows it -----------------------------


@pytest.mark.parametrize(
    ("question", "language"),
    [
        ("I smoke about 15 cigarettes a day. Which nicotine gum should I use?", "en"),
        ("I drink 4 cups of coffee a day, is that a problem with my tablets?", "en"),
        ("Ik rook ongeveer 30 sigaretten per dag. Welke pleister past bij mij?", "nl"),
        ("Mijn vader drinkt 3 glazen wijn per avond. Mag hij paracetamol?", "nl"),
    ],
)
def test_a_count_of_things_is_no_age(question: str, language: str) -> None:
    ctx = medical_context(question, language)
    assert ctx.age_min_years is None
    assert not {"child", "adult", "elderly"} & set(ctx.populations)


@pytest.mark.parametrize(
    ("question", "language", "age"),
    [
        ("My daughter is 6 and has a fever. How much ibuprofen?", "en", 6.0),
        ("I'm 72 now. Can I still take naproxen?", "en", 72.0),
        ("Mijn zoon is 9. Hoeveel cetirizine mag hij?", "nl", 9.0),
        ("Mijn moeder is 84 maar slikt nog alles zelf.", "nl", 84.0),
    ],
)
def test_a_bare_age_before_a_conjunction_or_the_end_stays_an_age(
    question: str, language: str, age: float
) -> None:
    assert medical_context(question, language).age_min_years == age


# --- hepatitis is an indication, not liver impairment ------------------------------------------


def test_viem_gan_is_no_liver_impairment() -> None:
    ctx = medical_context("Tôi dùng tenofovir 300 mg để trị viêm gan B mạn.", "vi")
    assert "hepatic" not in ctx.populations
    assert (
        "hepatic"
        in medical_context("Bố tôi bị suy gan. Uống tenofovir được không?", "vi").populations
    )


def test_a_hepatitis_answer_is_checked_against_the_usual_dose() -> None:
    ctx = medical_context("Tôi uống tenofovir 300 mg trị viêm gan B. Uống thế nào?", "vi")
    passages = ["Tenofovir disoproxil 300 mg: người lớn uống 1 viên mỗi ngày một lần."]
    assert report("Bạn uống 1 viên 300 mg mỗi ngày một lần.", passages, "vi", ctx).ungrounded == []
    wrong = report("Bạn uống 2 viên 300 mg mỗi ngày một lần.", passages, "vi", ctx)
    assert wrong.ungrounded != []


# --- "take no risk" is caution, not a contraindication -----------------------------------------


@pytest.mark.parametrize(
    ("sentence", "language"),
    [
        ("Don't take any chances: ring 999 and keep the box with you.", "en"),
        ("Neem geen risico en bel direct de huisartsenpost.", "nl"),
        ("Đừng chủ quan, hãy gọi ngay 115.", "vi"),
    ],
)
def test_an_idiom_of_caution_before_a_referral_is_a_referral(sentence: str, language: str) -> None:
    assert skip_reason(sentence, language, ()) == "referral"


@pytest.mark.parametrize(
    ("sentence", "language"),
    [
        ("Don't take ibuprofen: call your GP.", "en"),
        ("Neem geen risico met ibuprofen: neem geen ibuprofen en bel de huisarts.", "nl"),
    ],
)
def test_a_contraindication_beside_the_idiom_is_still_a_claim(sentence: str, language: str) -> None:
    assert skip_reason(sentence, language, ()) is None
