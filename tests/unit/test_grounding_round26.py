"""The twenty-sixth round (issue 10), one group per mechanism. A total the answer works out from
its own figures ("so three tablets in total", "dus 3 tabletten in totaal", "tổng cộng 3 viên")
is no dose and no number to look for, while a total that is not the product of the answer's
figures is read as before; a drugless sentence of a question that denies a group ("not on
dialysis yet") hands on the groups it does not deny; "tablet X van 400 mg" is a strength; a
basis phrase after a comma leads into the next amount; a sentence about normal kidneys is not
about the kidney patient; a time longer than a week after an interval word, and once a month,
are how often a dose is given; a perforated eardrum is a condition; weight bounds are written
"≤" and "≥"; an age in months said back is no number to look for. (Summaries that decline,
"the first injection", "after the loading doses" and "stopped" are run as examples of
``rules/grounding/nonclaims.yaml`` and ``medical_cues.yaml``.) Own sentences in English, Dutch and
Vietnamese; every rule has a must-flag twin that is still caught as critical (or a guard that
must stay as it was), and every group fails without its change."""

from __future__ import annotations

import pytest

from services.grounding.claims import atomic_claims
from services.grounding.grounding import medical_context
from tests.support.grounding_checks import check_report, critical
from tests.support.grounding_checks import numbered_report as report

# --- totals worked out from the answer's own figures ------------------------------------------

#: a passage; the answer with a total in tablets and one in mg; a total that is not the
#: product; a wrong frequency whose total agrees with it
_TOTALS = [
    (
        "Azithromycin for adults: 500 mg once a day for 3 days.",
        "Take one 500 mg azithromycin tablet once a day for three days, so three tablets in total.",
        "Take one 500 mg azithromycin tablet once a day for three days: that is 1,500 mg "
        "altogether.",
        "Take one 500 mg azithromycin tablet once a day for three days, so six tablets in total.",
        "Take one 500 mg azithromycin tablet twice a day for three days, so six tablets in total.",
        "en",
    ),
    (
        "Azitromycine voor volwassenen: eenmaal daags 500 mg gedurende 3 dagen.",
        "U neemt 3 dagen lang eenmaal per dag één tablet van 500 mg azitromycine, dus 3 "
        "tabletten in totaal.",
        "U neemt 3 dagen lang eenmaal per dag één tablet van 500 mg azitromycine; in totaal is "
        "dat 1.500 mg.",
        "U neemt 3 dagen lang eenmaal per dag één tablet van 500 mg azitromycine, dus 6 "
        "tabletten in totaal.",
        "U neemt 3 dagen lang tweemaal per dag één tablet van 500 mg azitromycine, dus 6 "
        "tabletten in totaal.",
        "nl",
    ),
    (
        "Azithromycin cho người lớn: 500 mg mỗi ngày 1 lần, trong 3 ngày.",
        "Bạn uống azithromycin mỗi ngày 1 lần, mỗi lần 1 viên 500 mg, trong 3 ngày, tổng cộng "
        "3 viên.",
        "Bạn uống azithromycin mỗi ngày 1 lần, mỗi lần 1 viên 500 mg, trong 3 ngày. Tổng cộng "
        "1.500 mg.",
        "Bạn uống azithromycin mỗi ngày 1 lần, mỗi lần 1 viên 500 mg, trong 3 ngày, tổng cộng "
        "6 viên.",
        "Bạn uống azithromycin mỗi ngày 2 lần, mỗi lần 1 viên 500 mg, trong 3 ngày, tổng cộng "
        "6 viên.",
        "vi",
    ),
]


@pytest.mark.parametrize(("passage", "count", "mass", "off", "twice", "language"), _TOTALS)
def test_a_total_worked_out_from_the_answer_is_no_dose(
    passage: str, count: str, mass: str, off: str, twice: str, language: str
) -> None:
    assert not report(count, [passage], language).ungrounded
    assert not report(mass, [passage], language).ungrounded
    assert critical(report(off, [passage], language))  # 6 is no product of 1, 1 and 3
    assert critical(report(twice, [passage], language))  # the total agrees; the dose does not


@pytest.mark.parametrize(
    ("text", "language", "kept"),
    [
        # the total is no reading and no quantity of its claim; the dose is
        (
            "Take one 600 mg tablet every 12 hours for five days, so ten tablets in all.",
            "en",
            ["600 mg", "12 h", "120 h"],
        ),
        # a total phrase beside an amount that is no product: read as before
        ("Take 600 mg every 12 hours for five days, 4,000 mg in total.", "en", None),
        # the product of counts of things taken, after the figures
        ("Uống 2 viên mỗi lần, 6 lần trong 3 ngày, tổng cộng 12 viên.", "vi", None),
        ("Drie tabletten per dag, 56 dagen lang: in totaal 168 tabletten.", "nl", None),
    ],
)
def test_which_amounts_are_worked_out(text: str, language: str, kept: list[str] | None) -> None:
    claims = atomic_claims(text, language)
    keys = [q.key for c in claims for q in c.quantities]
    if kept is not None:
        assert keys == kept
        assert all(r.amount is None or r.amount.high < 1000 for c in claims for r in c.readings)
    elif "4,000" in text:
        assert "4000 mg" in keys
    else:
        total = "12 tablet" if language == "vi" else "168 tablet"
        assert total not in keys
        assert all(r.amount is None or r.amount.high < 12 for c in claims for r in c.readings)


# --- a question's sentence that denies one group ----------------------------------------------


@pytest.mark.parametrize(
    ("question", "language", "groups", "not_groups"),
    [
        (
            "My father is 76, with severe kidney failure, not on dialysis yet.",
            "en",
            {"renal"},
            set(),
        ),
        ("Bố tôi 76 tuổi, suy thận nặng (eGFR 22), chưa phải lọc máu.", "vi", {"renal"}, set()),
        (
            "Mijn vader is 76 en heeft een ernstige nierinsufficiëntie, geen dialyse.",
            "nl",
            {"renal"},
            set(),
        ),
        # allowing, not denying: the asker is not in the group
        ("I'm 58 and my kidneys are fine.", "en", set(), {"renal"}),
    ],
)
def test_a_question_that_denies_one_group_keeps_the_others(
    question: str, language: str, groups: set[str], not_groups: set[str]
) -> None:
    populations = set(medical_context(question, language).populations)
    assert groups <= populations
    assert not populations & not_groups


def test_the_denied_sentence_binds_the_answer_to_the_kidney_passage() -> None:
    passages = [
        "Darolutamide: the recommended dose is 600 mg (two 300 mg tablets) twice a day.",
        "Darolutamide in severe renal impairment (eGFR 15-29 ml/min) not on dialysis: the "
        "starting dose is 300 mg twice a day.",
    ]
    context = medical_context(
        "My father is 76, has severe kidney failure and is not on dialysis yet. How many "
        "darolutamide tablets does he take?",
        "en",
    )
    usual = "He takes two 300 mg darolutamide tablets twice a day, 1,200 mg a day."
    assert critical(report(usual, passages, "en", context))
    reduced = "He starts on one 300 mg darolutamide tablet twice a day."
    assert not report(reduced, passages, "en", context).ungrounded


# --- a dose form, a name, then its strength ---------------------------------------------------


@pytest.mark.parametrize(
    ("answer", "dose"),
    [
        ("U neemt driemaal daags één tablet Trental van 400 mg.", "400 mg per dose 3 times a day"),
        ("Hij krijgt twee tabletten Dipiperon van 40 mg.", "80 mg"),
    ],
)
def test_a_form_a_name_and_van_give_the_strength(answer: str, dose: str) -> None:
    readings = [r for c in atomic_claims(answer, "nl") for r in c.readings]
    assert [r.describe().split(": ", 1)[1] for r in readings] == [dose]


def test_a_strength_after_a_name_doses_like_one_before_it() -> None:
    passage = "Azitromycine voor volwassenen: eenmaal daags 500 mg gedurende 3 dagen."
    right = "U neemt 3 dagen lang eenmaal per dag één tablet azitromycine van 500 mg."
    assert not report(right, [passage], "nl").ungrounded
    wrong = "U neemt 3 dagen lang eenmaal per dag twee tabletten azitromycine van 500 mg."
    assert critical(report(wrong, [passage], "nl"))


# --- a basis phrase after a comma leads into the next amount ----------------------------------


@pytest.mark.parametrize(
    ("text", "language", "described"),
    [
        (
            "De dosis is drie keer per dag 25 mg, in totaal dus 75 mg per dag.",
            "nl",
            ["25 mg per dose 3 times a day", "75 mg per 24 h"],
        ),
        # no amount follows: the phrase is the amount's before it
        ("Neem 25 mg, in totaal per dag.", "nl", ["25 mg per 24 h"]),
    ],
)
def test_a_basis_after_a_comma_is_the_next_amounts(
    text: str, language: str, described: list[str]
) -> None:
    readings = [r for c in atomic_claims(text, language) for r in c.readings]
    assert [r.describe().split(": ", 1)[1] for r in readings] == described


# --- a sentence about normal kidneys is not about the kidney patient --------------------------

_KIDNEY = [
    (
        [
            "Emtricitabine 200 mg capsules: one capsule once a day.",
            "Creatinine clearance 30-49 ml/min: 200 mg every 48 hours.",
        ],
        "With his kidney impairment (a clearance of 40 ml/min) he takes one 200 mg capsule every "
        "48 hours. With normal kidney function it would be one capsule each day.",
        "With his kidney impairment (a clearance of 40 ml/min) he takes one 200 mg capsule each "
        "day.",
        "en",
    ),
    (
        [
            "Emtricitabine 200 mg capsules: eenmaal per dag één capsule.",
            "Creatinineklaring 30-49 ml/min: 200 mg elke 48 uur.",
        ],
        "Met een klaring van 40 ml/min neemt hij elke 48 uur één capsule van 200 mg. Bij een "
        "normale nierfunctie zou het één capsule per dag zijn.",
        "Met een klaring van 40 ml/min neemt hij elke dag één capsule van 200 mg.",
        "nl",
    ),
    (
        [
            "Emtricitabin 200 mg: mỗi ngày uống 1 viên, ngày 1 lần.",
            "Độ thanh thải creatinin 30-49 ml/phút: 200 mg mỗi 48 giờ.",
        ],
        "Với độ thanh thải 40 ml/phút, ông uống 1 viên 200 mg mỗi 48 giờ. Nếu chức năng thận "
        "bình thường thì uống 1 viên mỗi ngày.",
        "Với độ thanh thải 40 ml/phút, ông uống 1 viên 200 mg mỗi ngày.",
        "vi",
    ),
]


@pytest.mark.parametrize(("passages", "right", "wrong", "language"), _KIDNEY)
def test_normal_kidneys_are_not_the_kidney_patient(
    passages: list[str], right: str, wrong: str, language: str
) -> None:
    assert not report(right, passages, language).ungrounded
    assert critical(report(wrong, passages, language))


# --- a dose given less often than weekly ------------------------------------------------------

#: a passage; the same schedule in other units; a shorter interval; once a month
_LONG = [
    (
        "Denosumab 60 mg is given as a single injection under the skin once every 6 months.",
        "You get one 60 mg injection of denosumab every 26 weeks.",
        "You get one 60 mg injection of denosumab every 3 months.",
        "You get one 60 mg injection of denosumab once a month.",
        "en",
    ),
    (
        "Denosumab 60 mg wordt eenmaal per 6 maanden als injectie onder de huid gegeven.",
        "U krijgt om de 26 weken één injectie van 60 mg denosumab.",
        "U krijgt om de 3 maanden één injectie van 60 mg denosumab.",
        "U krijgt elke maand één injectie van 60 mg denosumab.",
        "nl",
    ),
    (
        "Denosumab 60 mg tiêm dưới da mỗi 6 tháng một lần.",
        "Bạn được tiêm denosumab 60 mg, cứ 26 tuần một lần.",
        "Bạn được tiêm denosumab 60 mg, cứ 3 tháng một lần.",
        "Bạn được tiêm denosumab 60 mg, mỗi tháng 1 lần.",
        "vi",
    ),
]


@pytest.mark.parametrize(("passage", "right", "sooner", "monthly", "language"), _LONG)
def test_a_long_interval_is_how_often_a_dose_is_given(
    passage: str, right: str, sooner: str, monthly: str, language: str
) -> None:
    assert not report(right, [passage], language).ungrounded
    assert critical(report(sooner, [passage], language))
    assert critical(report(monthly, [passage], language))


def test_a_long_interval_without_a_dose_is_no_frequency() -> None:
    claims = atomic_claims("Your doctor will check your liver every 3 months.", "en")
    assert not [r for c in claims for r in c.readings]


# --- a perforated eardrum is a condition ------------------------------------------------------

#: a product no lexicon names, its passage filed under the drug; the answer right and flipped
_EARDRUM = [
    (
        (
            "pil-octenidine-en-02",
            "Octenidine solution: do not use in the ear if the eardrum is perforated.",
        ),
        "With a hole in the eardrum, do not put Octenisept in the ear.",
        "Octenisept can be used in the ear, even if the eardrum is damaged.",
        "en",
    ),
    (
        (
            "bijsluiter-octenidine-nl-02",
            "Niet gebruiken in het oor bij een geperforeerd trommelvlies.",
        ),
        "Bij een gaatje in het trommelvlies mag u het niet in het oor gebruiken.",
        "Er is geen bezwaar tegen gebruik in het oor, ook niet als het trommelvlies beschadigd is.",
        "nl",
    ),
    (
        ("hdsd-octenidine-vi-02", "Không dùng nhỏ tai khi bị thủng màng nhĩ."),
        "Nếu bị thủng màng nhĩ thì không được nhỏ tai.",
        "Bị thủng màng nhĩ vẫn nhỏ tai được.",
        "vi",
    ),
]


@pytest.mark.parametrize(("passage", "right", "flipped", "language"), _EARDRUM)
def test_a_perforated_eardrum_is_a_condition(
    passage: tuple[str, str], right: str, flipped: str, language: str
) -> None:
    assert not check_report(right, [passage], language).ungrounded
    assert critical(check_report(flipped, [passage], language))


# --- weight bounds written as symbols ---------------------------------------------------------


def test_weight_bounds_written_as_symbols() -> None:
    passages = [
        "Micafungin, trẻ em: cân nặng > 40 kg: 100 mg/ngày; cân nặng ≤ 40 kg: 2 mg/kg/ngày."
    ]
    context = medical_context("Con tôi nặng 25 kg, dùng micafungin liều bao nhiêu?", "vi")
    assert not report(
        "Với 25 kg, cháu dùng 50 mg micafungin mỗi ngày.", passages, "vi", context
    ).ungrounded
    assert critical(report("Cháu dùng 100 mg micafungin mỗi ngày.", passages, "vi", context))


# --- an age in months said back ----------------------------------------------------------------


def test_an_age_in_months_said_back_is_no_number_to_look_for() -> None:
    passages = ["Risdiplam, children 2 months to under 2 years: 0.2 mg/kg once daily."]
    context = medical_context("My daughter is 14 months old. How much risdiplam?", "en")

    def missing(answer: str) -> list[str]:
        got = report(answer, passages, "en", context)
        return [n for c in got.claims for n in c.numbers_missing]

    assert missing("At 14 months she is in the 2 months to 2 years group.") == []
    assert missing("At 18 months she is in the 2 months to 2 years group.") == ["18 month"]
