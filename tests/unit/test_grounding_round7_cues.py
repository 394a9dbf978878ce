"""The mechanisms of the seventh round (issue 10), found on the blind split fresh5. Tests per
language with near misses, written in other words and about other drugs than the cases."""

from __future__ import annotations

import pytest

from schemas.verdicts import MedicalContext
from services.grounding import medical_context
from services.grounding.medical import Carry, load_lexicon, read_sentence
from services.grounding.medical.names import opening_names
from services.grounding.quantities import amounts, format_decimal
from services.grounding.tokens import tokenize
from tests.support.grounding_checks import critical
from tests.support.grounding_checks import numbered_report as report

# --- drug names a passage teaches by its opening ---------------------------------------------

_OTILONIUM = "Otilonium bromide 40 mg tablets: one tablet two or three times a day before meals."
_TRIMEBUTINE = "Trimebutine 100 mg: one tablet three times a day."
_NL_OTILONIUM = "Otiloniumbromide 40 mg: twee- tot driemaal daags 1 tablet voor de maaltijd."
_NL_TRIMEBUTINE = "Trimebutine 200 mg: driemaal daags 1 tablet."
_VI_TOLPERISON = "Tolperison hydroclorid 50 mg: người lớn uống 1 viên mỗi lần, ngày 3 lần."
_VI_THIOCOLCHICOSID = "Thiocolchicosid 4 mg: người lớn uống 2 viên mỗi lần, ngày 2 lần."


@pytest.mark.parametrize(
    ("text", "language", "expected"),
    [
        ("Otilonium bromide 40 mg tablets.", "en", {"otilonium": "otilonium"}),
        (
            "Debridat (trimebutine) 100 mg tablets.",
            "en",
            {"debridat": "trimebutin", "trimebutin": "trimebutin"},
        ),
        ("Thiocolchicosid viên nén 4 mg.", "vi", {"tiocolchicosid": "tiocolchicosid"}),
        # near misses: a population, a dose word, a clause, a dose per kg, a tone-marked word
        ("Children 5 mg a day.", "en", {}),
        ("Onderhoudsdosis: 10 mg per dag.", "nl", {}),
        ("daarna 100 mg per dag.", "nl", {}),
        ("Startdosis 2 mg/kg per dag.", "nl", {}),
        ("Thuốc 500 mg.", "vi", {}),
    ],
)
def test_a_name_before_its_strength_is_a_drug(
    text: str, language: str, expected: dict[str, str]
) -> None:
    assert opening_names(tokenize(text), language, load_lexicon()) == expected


@pytest.mark.parametrize(
    ("answer", "passages", "language"),
    [
        ("Take 100 mg of otilonium three times a day.", [_OTILONIUM, _TRIMEBUTINE], "en"),
        ("Trimebutine neemt u driemaal daags 40 mg.", [_NL_OTILONIUM, _NL_TRIMEBUTINE], "nl"),
        ("Tolperison uống 8 mg mỗi lần, ngày 2 lần.", [_VI_TOLPERISON, _VI_THIOCOLCHICOSID], "vi"),
    ],
)
def test_another_unlisted_drugs_dose_is_caught(
    answer: str, passages: list[str], language: str
) -> None:
    r = report(answer, passages, language)
    assert r.ungrounded
    assert critical(r)


@pytest.mark.parametrize(
    ("answer", "passages", "language"),
    [
        ("Otilonium is taken as 40 mg two or three times a day.", [_TRIMEBUTINE, _OTILONIUM], "en"),
        ("Van trimebutine neemt u 3 keer per dag 200 mg.", [_NL_OTILONIUM, _NL_TRIMEBUTINE], "nl"),
        (
            "Người lớn uống tolperison 50 mg, ngày 3 lần.",
            [_VI_THIOCOLCHICOSID, _VI_TOLPERISON],
            "vi",
        ),
        # a brand named in brackets, and its tablets counted through the strength
        (
            "Take one Debridat tablet three times a day.",
            ["Debridat (trimebutine) 100 mg tablets. Adults: 100 mg three times a day."],
            "en",
        ),
    ],
)
def test_an_unlisted_drugs_own_dose_passes(answer: str, passages: list[str], language: str) -> None:
    assert report(answer, passages, language).ungrounded == []


# --- stopping and going on: a safety claim of its own -------------------------------------------


@pytest.mark.parametrize(
    ("answer", "passages", "language"),
    [
        (
            "There is no need to stop clopidogrel before your knee surgery.",
            ["Discontinue clopidogrel 5 days before elective surgery."],
            "en",
        ),
        (
            "You don't have to interrupt empagliflozin for the operation.",
            ["Empagliflozin should be interrupted before major surgery."],
            "en",
        ),
        (
            "U hoeft niet te stoppen met amoxicilline als u huiduitslag krijgt.",
            ["Stop direct met amoxicilline als u huiduitslag krijgt."],
            "nl",
        ),
        (
            "Không cần ngừng allopurinol khi bị phát ban.",
            ["Phải ngừng allopurinol ngay khi xuất hiện phát ban."],
            "vi",
        ),
    ],
)
def test_keep_taking_against_a_stop_is_critical(
    answer: str, passages: list[str], language: str
) -> None:
    r = report(answer, passages, language)
    assert r.ungrounded
    assert critical(r)


@pytest.mark.parametrize(
    ("answer", "passages", "language"),
    [
        (
            "Keep taking sertraline even when you feel better.",
            ["Do not stop taking sertraline when you feel better."],
            "en",
        ),
        (
            "U hoeft niet te stoppen met clopidogrel na het plaatsen van een stent.",
            ["Blijf clopidogrel gebruiken na het plaatsen van een stent."],
            "nl",
        ),
        (
            "Bạn vẫn dùng levothyroxin hằng ngày, không cần ngừng thuốc.",
            ["Tiếp tục dùng levothyroxin hằng ngày; không tự ý ngừng thuốc."],
            "vi",
        ),
    ],
)
def test_keep_taking_where_the_passage_says_so_passes(
    answer: str, passages: list[str], language: str
) -> None:
    assert report(answer, passages, language).ungrounded == []


# --- ages said with kinship and diminutive words in the question ------------------------------


@pytest.mark.parametrize(
    ("question", "language", "population", "age"),
    [
        ("My granny is 91 and can't sleep. How much temazepam?", "en", "elderly", 91.0),
        ("Our wee lass is 5, how much ibuprofen can she have?", "en", "child", 5.0),
        ("Mijn dochtertje is 3 en heeft koorts. Hoeveel paracetamol?", "nl", "child", 3.0),
        ("Mijn schoonvader is 79. Mag hij naproxen?", "nl", "elderly", 79.0),
    ],
)
def test_a_kinship_or_diminutive_word_gives_the_questions_age(
    question: str, language: str, population: str, age: float
) -> None:
    ctx = medical_context(question, language)
    assert population in ctx.populations
    assert ctx.age_min_years == age


@pytest.mark.parametrize(
    ("question", "language"),
    [
        ("The reason is 5 mg too much?", "en"),
        ("Mijn tasje met 3 doosjes paracetamol is zoek.", "nl"),
    ],
)
def test_a_number_after_another_word_is_no_age(question: str, language: str) -> None:
    assert medical_context(question, language).age_min_years is None


def test_the_age_from_a_kinship_word_decides_the_dose() -> None:
    passages = ["Zopiclone. Adults: 7.5 mg at bedtime. Elderly patients: 3.75 mg at bedtime."]
    ctx = medical_context("My grandad is 86. How much zopiclone can he take?", "en")
    r = report("He can take 7.5 mg of zopiclone at bedtime.", passages, "en", ctx)
    assert critical(r)
    assert (
        report("He can take 3.75 mg of zopiclone at bedtime.", passages, "en", ctx).ungrounded == []
    )


# --- cautions not to act alone, and gladness, are no claims ----------------------------------


@pytest.mark.parametrize(
    ("answer", "language"),
    [
        ("Glad to hear it helps. Please don't stop your lithium on your own.", "en"),
        ("Fijn dat het beter gaat. Verhoog de dosis niet op eigen houtje.", "nl"),
        ("Bạn đừng tự ý tăng liều insulin.", "vi"),
    ],
)
def test_a_caution_not_to_act_alone_is_no_claim(answer: str, language: str) -> None:
    r = report(answer, ["Lithium: the dose is set from blood levels."], language)
    assert r.claims == []


def test_a_caution_with_an_amount_is_still_a_claim() -> None:
    r = report(
        "Don't take more than 40 mg of simvastatin on your own.",
        ["Simvastatin: the maximum dose is 80 mg once a day."],
        "en",
    )
    assert critical(r)


# --- tablets counted through a product's strength -----------------------------------------------

_SUMATRIPTAN_NL = (
    "Sumatriptan 50 mg tabletten. Volwassenen: neem 50 mg bij het begin van een aanval; zo nodig "
    "na ten minste 2 uur nog 50 mg. Neem niet meer dan 300 mg per 24 uur."
)
_CETIRIZINE_VI = "Cetirizin 10 mg: người lớn uống 10 mg mỗi ngày một lần."


@pytest.mark.parametrize(
    ("answer", "passages", "language"),
    [
        (
            "Van Imigran 50 mg neemt u 1 tablet. Zo nodig na 2 uur nog 1 tablet, maar niet meer "
            "dan 6 tabletten per 24 uur.",
            [_SUMATRIPTAN_NL],
            "nl",
        ),
        ("Với Zyrtec 10 mg, người lớn uống 1 viên mỗi ngày.", [_CETIRIZINE_VI], "vi"),
    ],
)
def test_counts_with_the_products_strength_pass(
    answer: str, passages: list[str], language: str
) -> None:
    assert report(answer, passages, language).ungrounded == []


@pytest.mark.parametrize(
    ("answer", "passages", "language"),
    [
        (
            "Van Imigran 50 mg neemt u 1 tablet. Zo nodig na 2 uur nog 1 tablet, maar niet meer "
            "dan 8 tabletten per 24 uur.",
            [_SUMATRIPTAN_NL],
            "nl",
        ),
        ("Với Zyrtec 10 mg, người lớn uống 2 viên mỗi ngày.", [_CETIRIZINE_VI], "vi"),
    ],
)
def test_too_many_tablets_of_a_products_strength_are_caught(
    answer: str, passages: list[str], language: str
) -> None:
    r = report(answer, passages, language)
    assert r.ungrounded
    assert critical(r)


# --- a day's amount split into doses, and a weight after a child's noun ------------------------


@pytest.mark.parametrize(
    ("text", "language", "frequency"),
    [
        ("Children: 40 mg/kg/day in three divided doses.", "en", "3"),
        ("Adults: 2 g a day divided into 4 doses.", "en", "4"),
        ("Kinderen: 50 mg per kg per dag, verdeeld over 2 giften.", "nl", "2"),
        # near misses: a time, not doses; a count of tablets
        ("Take 500 mg in 2 hours.", "en", None),
        ("Kinderen: 250 mg per dag in 2 tabletten.", "nl", None),
    ],
)
def test_a_days_amount_split_into_doses_has_that_frequency(
    text: str, language: str, frequency: str | None
) -> None:
    t = tokenize(text)
    read = read_sentence(t, 0, len(t), amounts(t, language), language, load_lexicon(), Carry())
    got = [r.frequency for r in read.readings]
    assert got, text
    assert (None if got[0] is None else format_decimal(got[0].low)) == frequency


def test_a_number_before_kilo_after_a_childs_noun_is_a_weight_not_an_age() -> None:
    t = tokenize("Voor uw kind van 14 kilo is dat 280 mg per dag.")
    read = read_sentence(t, 0, len(t), amounts(t, "nl"), "nl", load_lexicon(), Carry())
    assert [r.age for r in read.readings] == [None]


# --- an answer's bare counts through the strength the drug's passages state ------------------

_LORATADINE = (
    "Loratadine 10 mg tablets. Adults: 10 mg once a day. Do not take more than 10 mg a day."
)


def test_bare_counts_take_the_passages_one_strength() -> None:
    ok = report("Take one tablet of loratadine once a day.", [_LORATADINE], "en")
    assert ok.ungrounded == []
    wrong = report("Take two tablets of loratadine once a day.", [_LORATADINE], "en")
    assert critical(wrong)


def test_bare_counts_stay_counts_when_the_passages_state_two_strengths() -> None:
    passages = [_LORATADINE, "Loratadine 5 mg chewable tablets for children: one a day."]
    r = report("Take one tablet of loratadine once a day.", passages, "en")
    assert all(m.reading.unit == "tablet" for c in r.claims for m in c.medical or [])


# --- "not with tea or milk" is about taking it with them, not the risk before ---------------


@pytest.mark.parametrize(
    ("answer", "passages", "language"),
    [
        (
            "Ferrous sulfate is fine while you are breastfeeding.",
            ["Ferrous sulfate can be used while breastfeeding. Do not take it with tea or milk."],
            "en",
        ),
        (
            "Sắt sulfat dùng được khi đang cho con bú.",
            ["Sắt sulfat có thể dùng khi cho con bú. Không uống cùng trà hoặc sữa."],
            "vi",
        ),
    ],
)
def test_an_avoid_with_its_own_object_keeps_no_risk_of_the_sentence_before(
    answer: str, passages: list[str], language: str
) -> None:
    assert report(answer, passages, language).ungrounded == []


def test_an_avoid_without_an_object_still_goes_on_about_the_risk_before() -> None:
    passages = ["Ibuprofen is not recommended in the last trimester of pregnancy. Do not use it."]
    r = report("Ibuprofen is fine in the last trimester of pregnancy.", passages, "en")
    assert critical(r)


# --- an inserted list of examples between commas ends no clause --------------------------------


@pytest.mark.parametrize(
    ("answer", "passages", "language"),
    [
        (
            "Ezetimib mag u samen met simvastatine gebruiken.",
            [
                "Ezetimib kan samen met een statine, zoals simvastatine of pravastatine, "
                "worden gebruikt."
            ],
            "nl",
        ),
        (
            "Ezetimibe can be taken together with simvastatin.",
            [
                "Ezetimibe can be taken with a statin, such as simvastatin or pravastatin, "
                "once a day."
            ],
            "en",
        ),
    ],
)
def test_a_combination_with_examples_between_commas_is_read(
    answer: str, passages: list[str], language: str
) -> None:
    assert report(answer, passages, language).ungrounded == []


def test_a_combination_forbidden_with_examples_between_commas_is_caught() -> None:
    passages = [
        "Simvastatine mag niet samen met een schimmelmiddel, zoals itraconazol, worden gebruikt."
    ]
    r = report("Simvastatine mag u gerust samen met itraconazol gebruiken.", passages, "nl")
    assert critical(r)


def test_a_passages_product_strength_restates_its_counts() -> None:
    passages = ["Cetirizin 10 mg: người lớn uống 1 viên mỗi ngày."]
    assert report("Người lớn uống cetirizin 10 mg mỗi ngày.", passages, "vi").ungrounded == []
    assert critical(report("Người lớn uống cetirizin 20 mg mỗi ngày.", passages, "vi"))


# --- a frequency between a day's amount and a dose goes to the dose ---------------------------

_CEFUROXIME_CHILD = "Cefuroxime suspension, children: 30 mg/kg/day in two divided doses."


def test_a_frequency_after_a_days_amount_goes_to_the_dose_after_it() -> None:
    ctx = MedicalContext(weight_kg=20.0)
    ok = "For 20 kg that is 600 mg a day, so twice daily 300 mg."
    assert report(ok, [_CEFUROXIME_CHILD], "en", ctx).ungrounded == []
    wrong = "For 20 kg that is 600 mg a day, so twice daily 600 mg."
    assert critical(report(wrong, [_CEFUROXIME_CHILD], "en", ctx))


def test_a_frequency_after_a_days_amount_alone_stays_with_it() -> None:
    t = tokenize("Adults take 4 g per day, twice daily.")
    read = read_sentence(t, 0, len(t), amounts(t, "en"), "en", load_lexicon(), Carry())
    assert [format_decimal(r.frequency.low) for r in read.readings if r.frequency] == ["2"]


def test_a_heading_of_purpose_names_an_unlisted_drug() -> None:
    passages = [
        "Otilonium for irritable bowel: 40 mg two or three times a day.",
        "Trimebutine for irritable bowel: 100 mg three times a day.",
    ]
    assert critical(report("Otilonium: take 100 mg three times a day.", passages, "en"))
    ok = report("Otilonium: take 40 mg two or three times a day.", passages, "en")
    assert ok.ungrounded == []


def test_a_vietnamese_heading_with_a_colon_names_an_unlisted_drug() -> None:
    passages = ["Mesalazin: phải ngừng thuốc ngay khi bị đau bụng dữ dội hoặc sốt."]
    assert critical(report("Không cần ngừng mesalazin khi bị sốt.", passages, "vi"))
    t = tokenize("Liều dùng: người lớn uống 1 viên.")
    assert opening_names(t, "vi", load_lexicon()) == {}
