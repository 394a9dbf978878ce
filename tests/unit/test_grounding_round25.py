"""The twenty-fifth round (issue 10), one group per mechanism. A dose raised step by step: the
size of a step ("by 25 mg", "telkens 25 mg erbij", "tăng thêm 25 mg") and how often a step is
taken ("every 2 weeks", "niet sneller dan eens per week", "at weekly intervals") are no dose and
no frequency of one; they are compared with the passages' steps, and where the passages describe
none, their numbers must still be the passages'. An answer that names what a drugless passage's
document id files it under (also one letter off) is bound to that passage; a ceiling does not
back an amount below the dose range; an if-clause of circumstance casts no verdict on the drug;
a product no lexicon names is allowed in the age group its passage doses; shots and prikken of a
vaccine are doses; a Dutch age "8 weken oud" is the baby's; a permission for an age past the
passages' ban ("under 2 years") is backed by it; ages in words ("your five-year-old") are ages.
Own sentences in English, Dutch and Vietnamese, with drugs the lexicon knows or invented products
(Velmora, zorvatide); every rule has a must-flag twin that is still caught as critical (or a
guard that must stay as it was), and every group fails without its change."""

from __future__ import annotations

import pytest

from services.grounding.grounding import medical_context
from services.grounding.medical.examples import read_text
from services.grounding.medical.lexicon import load_lexicon
from tests.support.grounding_checks import check_report, critical
from tests.support.grounding_checks import numbered_report as report

# --- a step of a size, taken so often ---------------------------------------------------------

#: a passage that raises the dose in steps; the same schedule in other words; a step of
#: another size; steps taken far more often; a ceiling that is not the passage's
_STEPS = [
    (
        "Lamotrigine: start with 25 mg once a day. The dose may then be increased by 25 mg every "
        "2 weeks, up to a maximum of 200 mg a day.",
        "After the first 25 mg a day, your doctor can raise the lamotrigine dose by 25 mg every "
        "2 weeks, up to at most 200 mg a day.",
        "After the first 25 mg a day, your doctor can raise the lamotrigine dose by 50 mg every "
        "2 weeks, up to at most 200 mg a day.",
        "After the first 25 mg a day, your doctor can raise the lamotrigine dose by 25 mg every "
        "2 days, up to at most 200 mg a day.",
        "After the first 25 mg a day, your doctor can raise the lamotrigine dose by 25 mg every "
        "2 weeks, up to at most 400 mg a day.",
        "en",
    ),
    (
        "Lamotrigine: begin met 25 mg eenmaal per dag. Daarna kan de dosis om de 2 weken met "
        "25 mg worden verhoogd, tot maximaal 200 mg per dag.",
        "Na de eerste 25 mg per dag gaat er om de 2 weken telkens 25 mg lamotrigine erbij, tot "
        "hoogstens 200 mg per dag.",
        "Na de eerste 25 mg per dag gaat er om de 2 weken telkens 50 mg lamotrigine erbij, tot "
        "hoogstens 200 mg per dag.",
        "Na de eerste 25 mg per dag gaat er om de 2 dagen telkens 25 mg lamotrigine erbij, tot "
        "hoogstens 200 mg per dag.",
        "Na de eerste 25 mg per dag gaat er om de 2 weken telkens 25 mg lamotrigine erbij, tot "
        "hoogstens 400 mg per dag.",
        "nl",
    ),
    (
        "Lamotrigin: bắt đầu 25 mg mỗi ngày một lần. Sau đó có thể tăng thêm 25 mg mỗi 2 tuần, "
        "tối đa 200 mg mỗi ngày.",
        "Sau liều đầu 25 mg mỗi ngày, bác sĩ có thể tăng liều lamotrigin thêm 25 mg mỗi 2 tuần, "
        "tối đa 200 mg mỗi ngày.",
        "Sau liều đầu 25 mg mỗi ngày, bác sĩ có thể tăng liều lamotrigin thêm 50 mg mỗi 2 tuần, "
        "tối đa 200 mg mỗi ngày.",
        "Sau liều đầu 25 mg mỗi ngày, bác sĩ có thể tăng liều lamotrigin thêm 25 mg mỗi 2 ngày, "
        "tối đa 200 mg mỗi ngày.",
        "Sau liều đầu 25 mg mỗi ngày, bác sĩ có thể tăng liều lamotrigin thêm 25 mg mỗi 2 tuần, "
        "tối đa 400 mg mỗi ngày.",
        "vi",
    ),
]


@pytest.mark.parametrize(("passage", "right", "bigger", "faster", "ceiling", "language"), _STEPS)
def test_a_step_and_its_pace_are_compared_with_the_passages_steps(
    passage: str, right: str, bigger: str, faster: str, ceiling: str, language: str
) -> None:
    assert not report(right, [passage], language).ungrounded
    assert critical(report(bigger, [passage], language))
    assert critical(report(faster, [passage], language))
    assert critical(report(ceiling, [passage], language))


# --- how often a step is taken, without its size ----------------------------------------------

#: a passage that raises the dose at weekly intervals to a ceiling taken twice a day; the same;
#: the same ceiling stepped up every other day; another ceiling
_PACE = [
    (
        "Sertraline: the usual starting dose is 50 mg once a day. The dose may be increased at "
        "weekly intervals, up to a maximum of 100 mg twice a day.",
        "Your doctor may step the sertraline dose up at weekly intervals, to a ceiling of 100 mg "
        "twice a day.",
        "Your doctor may step the sertraline dose up every 2 days, to a ceiling of 100 mg twice "
        "a day.",
        "Your doctor may step the sertraline dose up at weekly intervals, to a ceiling of 150 mg "
        "twice a day.",
        "en",
    ),
    (
        "Sertraline: de gebruikelijke begindosis is 50 mg eenmaal per dag. De dosis kan "
        "wekelijks worden verhoogd, tot maximaal 100 mg tweemaal per dag.",
        "Uw arts kan de dosis sertraline wekelijks verhogen, tot hoogstens 100 mg tweemaal per "
        "dag.",
        "Uw arts kan de dosis sertraline om de 2 dagen verhogen, tot hoogstens 100 mg tweemaal "
        "per dag.",
        "Uw arts kan de dosis sertraline wekelijks verhogen, tot hoogstens 150 mg tweemaal per "
        "dag.",
        "nl",
    ),
]


@pytest.mark.parametrize(("passage", "right", "faster", "ceiling", "language"), _PACE)
def test_the_pace_of_the_steps_is_no_basis_of_the_ceiling(
    passage: str, right: str, faster: str, ceiling: str, language: str
) -> None:
    assert not report(right, [passage], language).ungrounded
    assert critical(report(faster, [passage], language))
    assert critical(report(ceiling, [passage], language))


# --- steps the passages do not describe -------------------------------------------------------

#: a passage that gives the dose week by week, with no step; the steps between them, whose
#: numbers the passage holds; a step of a size it does not hold
_NO_STEPS = [
    (
        "Sertraline: week 1, 25 mg a day; week 2, 50 mg a day; week 3, 75 mg a day; from week "
        "4, 100 mg a day.",
        "Each week the sertraline dose goes up by 25 mg, to 100 mg a day from week 4.",
        "Each week the sertraline dose goes up by 30 mg, to 100 mg a day from week 4.",
        "en",
    ),
    (
        "Sertraline: week 1: 25 mg per dag; week 2: 50 mg per dag; week 3: 75 mg per dag; vanaf "
        "week 4: 100 mg per dag.",
        "Elke week gaat de dosis sertraline met 25 mg omhoog, tot 100 mg per dag vanaf week 4.",
        "Elke week gaat de dosis sertraline met 30 mg omhoog, tot 100 mg per dag vanaf week 4.",
        "nl",
    ),
    (
        "Sertralin: tuần 1: 25 mg mỗi ngày; tuần 2: 50 mg mỗi ngày; tuần 3: 75 mg mỗi ngày; từ "
        "tuần 4: 100 mg mỗi ngày.",
        "Mỗi tuần tăng liều sertralin thêm 25 mg, đến 100 mg mỗi ngày từ tuần 4.",
        "Mỗi tuần tăng liều sertralin thêm 30 mg, đến 100 mg mỗi ngày từ tuần 4.",
        "vi",
    ),
]


@pytest.mark.parametrize(("passage", "held", "other", "language"), _NO_STEPS)
def test_steps_no_passage_describes_are_held_to_the_passages_numbers(
    passage: str, held: str, other: str, language: str
) -> None:
    assert not report(held, [passage], language).ungrounded
    assert critical(report(other, [passage], language))


# --- what the reader makes of a step ----------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "language"),
    [
        ("Lamotrigine: start with 25 mg a day and raise it after a week.", "en"),
        ("Begin met 25 mg lamotrigine en verhoog de dosis na een week.", "nl"),
        ("Methotrexate: your doctor may increase it to 15 mg once a week.", "en"),
        ("Sau một tuần, tăng liều gabapentin lên 300 mg, ngày 3 lần.", "vi"),
    ],
)
def test_a_starting_dose_or_a_target_is_no_step(text: str, language: str) -> None:
    readings = read_text(text, language, load_lexicon())
    assert readings
    assert not any(r.step for r in readings)
    assert all(r.amount is not None for r in readings)


# --- a passage filed under a drug its text does not name ---------------------------------------

#: two passages that name no drug in their text, filed under two products no lexicon knows; an
#: answer that gives the first product's dose, and one that gives the second's under the first's
#: name (the wrong drug's figures)
_FILED = [
    (
        [
            ("smpc-zorvatide-en-02", "Induction: 60 mg/kg every 8 hours by intravenous infusion."),
            ("smpc-quellamir-en-02", "Induction: 5 mg/kg every 12 hours for 14 to 21 days."),
        ],
        "Zorvatide induction is 60 mg/kg every 8 hours, as an infusion.",
        "Zorvatide induction is 5 mg/kg every 12 hours for 14 to 21 days.",
        "en",
    ),
    (
        [
            ("smpc-zorvatide-nl-02", "Inductie: 60 mg/kg elke 8 uur als intraveneuze infusie."),
            ("smpc-quellamir-nl-02", "Inductie: 5 mg/kg elke 12 uur gedurende 14 tot 21 dagen."),
        ],
        "De inductie met zorvatide is 60 mg/kg elke 8 uur, als infuus.",
        "De inductie met zorvatide is 5 mg/kg elke 12 uur, gedurende 14 tot 21 dagen.",
        "nl",
    ),
    (
        [
            ("hdsd-zorvatide-vi-02", "Khởi đầu: 60 mg/kg mỗi 8 giờ, truyền tĩnh mạch."),
            ("hdsd-quellamir-vi-02", "Khởi đầu: 5 mg/kg mỗi 12 giờ trong 14 đến 21 ngày."),
        ],
        "Liều khởi đầu của zorvatide là 60 mg/kg mỗi 8 giờ, truyền tĩnh mạch.",
        "Liều khởi đầu của zorvatide là 5 mg/kg mỗi 12 giờ trong 14 đến 21 ngày.",
        "vi",
    ),
    # the name written one letter off its filing (as INNs are spelled apart: benztropine,
    # benzatropine)
    (
        [
            ("smpc-zorvatropine-en-02", "Extrapyramidal disorders: 1 to 4 mg once or twice daily."),
            (
                "smpc-quellamir-en-02",
                "The usual daily dose is 5 to 15 mg, in 3 or 4 divided doses.",
            ),
        ],
        "Zorvtropine is taken as 1 to 4 mg once or twice daily.",
        "Zorvtropine is usually taken as 5 to 15 mg a day, in 3 or 4 divided doses.",
        "en",
    ),
    (
        [
            (
                "smpc-zorvatropine-nl-02",
                "Extrapiramidale stoornissen: 1 tot 4 mg een- of tweemaal per dag.",
            ),
            (
                "smpc-quellamir-nl-02",
                "De gebruikelijke dagdosis is 5 tot 15 mg, verdeeld over 3 of 4 giften.",
            ),
        ],
        "Zorvtropine neemt u als 1 tot 4 mg een- of tweemaal per dag.",
        "Zorvtropine neemt u meestal als 5 tot 15 mg per dag, verdeeld over 3 of 4 giften.",
        "nl",
    ),
]


@pytest.mark.parametrize(("passages", "right", "other_drugs", "language"), _FILED)
def test_an_answer_that_names_what_a_passage_is_filed_under_is_bound_to_it(
    passages: list[tuple[str, str]], right: str, other_drugs: str, language: str
) -> None:
    assert not check_report(right, passages, language).ungrounded
    assert critical(check_report(other_drugs, passages, language))


def test_a_filed_name_said_without_a_number_binds_nothing() -> None:
    passages = [
        ("smpc-rabies-vaccine-en-01", "Pre-exposure prophylaxis: three doses of 1.0 ml."),
        ("smpc-rabies-vaccine-en-02", "Post-exposure prophylaxis must start as soon as possible."),
    ]
    answer = (
        "A bite from a stray dog needs a doctor today, so please go to an emergency department "
        "now. They'll look at the wound and your rabies vaccination record and decide."
    )
    assert not check_report(answer, passages, "en").ungrounded


# --- a ceiling does not back an amount below the dose ------------------------------------------

#: a passage with a dose range and a ceiling; a dose in the range; the ceiling restated; a dose
#: below the range (another drug's)
_BELOW = [
    (
        "Velmora 250 mg tablets. Adults: 750 to 1,500 mg a day in divided doses; at most 2,000 mg "
        "a day in the first year.",
        "Adults take 1,000 mg of Velmora a day, in divided doses.",
        "Adults take at most 2,000 mg of Velmora a day.",
        "Adults take 450 to 975 mg of Velmora a day, in divided doses.",
        "en",
    ),
    (
        "Velmora 250 mg tabletten. Volwassenen: 750 tot 1.500 mg per dag, verdeeld over de dag; "
        "ten hoogste 2.000 mg per dag in het eerste jaar.",
        "Volwassenen nemen 1.000 mg Velmora per dag, verdeeld over de dag.",
        "Volwassenen nemen ten hoogste 2.000 mg Velmora per dag.",
        "Volwassenen nemen 450 tot 975 mg Velmora per dag, verdeeld over de dag.",
        "nl",
    ),
    (
        "Velmora viên 250 mg. Người lớn: 750–1.500 mg mỗi ngày, chia nhiều lần; tối đa 2.000 mg "
        "mỗi ngày trong năm đầu.",
        "Người lớn uống Velmora 1.000 mg mỗi ngày, chia nhiều lần.",
        "Người lớn uống Velmora tối đa 2.000 mg mỗi ngày.",
        "Người lớn uống Velmora 450–975 mg mỗi ngày, chia nhiều lần.",
        "vi",
    ),
]


@pytest.mark.parametrize(("passage", "in_range", "ceiling", "below", "language"), _BELOW)
def test_a_ceiling_does_not_back_an_amount_below_the_dose_range(
    passage: str, in_range: str, ceiling: str, below: str, language: str
) -> None:
    assert not report(in_range, [passage], language).ungrounded
    assert not report(ceiling, [passage], language).ungrounded
    assert critical(report(below, [passage], language))


# --- a clause of circumstance casts no verdict --------------------------------------------------

_SPRINKLE = [
    "Velmora 100 mg capsules: one capsule once a day.",
    "Swallow the capsule whole, or open it and sprinkle the contents onto a spoonful of "
    "applesauce. Do not use Velmora during pregnancy.",
]


def test_an_if_clause_of_circumstance_casts_no_verdict_on_the_drug() -> None:
    answer = (
        "Take one 100 mg Velmora capsule once a day. If swallowing is a problem, the capsule "
        "can be opened and the contents sprinkled on a spoonful of applesauce."
    )
    assert not report(answer, _SPRINKLE, "en").ungrounded


@pytest.mark.parametrize(
    ("answer", "language"),
    [
        ("Take one 100 mg Velmora capsule once a day. If pregnant, it is fine to take it.", "en"),
        (
            "Neem eenmaal per dag één capsule Velmora van 100 mg. Als u zwanger bent, is dat geen "
            "probleem.",
            "nl",
        ),
        ("Uống Velmora 100 mg mỗi ngày một lần. Nếu đang mang thai thì vẫn có thể dùng.", "vi"),
    ],
)
def test_a_verdict_after_a_condition_is_still_read(answer: str, language: str) -> None:
    passages = {
        "en": _SPRINKLE,
        "nl": [
            "Velmora 100 mg capsules: eenmaal per dag één capsule.",
            "Gebruik Velmora niet tijdens de zwangerschap.",
        ],
        "vi": [
            "Velmora viên nang 100 mg: mỗi ngày một lần một viên.",
            "Không dùng Velmora cho phụ nữ có thai.",
        ],
    }[language]
    assert critical(report(answer, passages, language))


# --- a permission for an age group, about a product no lexicon names ----------------------------

#: a passage of a product no lexicon knows, with a dose for adults and children from 2 years;
#: the permission for that group in an answer that names no drug either, and one for younger
#: children
_GROUP = [
    (
        "Adults and children aged 2 years and over: 1 drop in the affected eye twice a day.",
        "The drops can be used in children aged 2 years and over and in adults.",
        "The drops can be used in children aged 1 year and over and in adults.",
        "en",
    ),
    (
        "Người lớn và trẻ em từ 2 tuổi trở lên: nhỏ 1 giọt vào mắt bị bệnh, 2 lần mỗi ngày.",
        "Thuốc dành cho trẻ từ 2 tuổi trở lên và người lớn.",
        "Thuốc dành cho trẻ từ 1 tuổi trở lên và người lớn.",
        "vi",
    ),
]


@pytest.mark.parametrize(("passage", "right", "younger", "language"), _GROUP)
def test_an_unnamed_products_dose_for_a_group_allows_its_use_there(
    passage: str, right: str, younger: str, language: str
) -> None:
    passages = [("leaflet-eye-drops-02", passage)]
    assert not check_report(right, passages, language).ungrounded
    assert critical(check_report(younger, passages, language))


# --- shots of a vaccine are doses; a baby "8 weken oud" -----------------------------------------


@pytest.mark.parametrize(
    ("passage", "answer", "language"),
    [
        (
            "Dengvaxa. 0.5 ml under the skin, two doses 3 months apart.",
            "The course is two shots of 0.5 ml under the skin, one month apart.",
            "en",
        ),
        (
            "Dengvaxa. 0,5 ml subcutaan, twee doses met 3 maanden ertussen.",
            "Het schema bestaat uit twee prikken van 0,5 ml onder de huid, met één maand ertussen.",
            "nl",
        ),
        (
            "Dengvaxa. Tiêm dưới da 0,5 ml, 2 liều cách nhau 3 tháng.",
            "Lịch gồm 2 mũi 0,5 ml dưới da, mũi thứ hai sau mũi đầu 1 tháng.",
            "vi",
        ),
    ],
)
def test_a_wrong_time_between_shots_is_a_critical_dose_finding(
    passage: str, answer: str, language: str
) -> None:
    assert critical(report(answer, [passage], language))


def test_a_dutch_age_in_weeks_said_with_oud_is_the_babys_age() -> None:
    context = medical_context("Onze zoon is 8 weken oud. Hoeveel prikken krijgt hij?", "nl")
    assert context.age_min_years is not None
    assert abs(context.age_min_years - 8 * 7 / 365) < 1e-6
    assert "child" in context.populations


# --- a permission for an age past the passages' ban; ages in words ---------------------------

#: a passage that forbids a product below 2 years; a permission for a child of 5, and one for a
#: child of 1
_PAST_BAN = [
    (
        "Velmora 5% lotion. Do not use Velmora on children under 2 years of age.",
        "Velmora is fine for your 5-year-old.",
        "Velmora is fine for your 1-year-old.",
        "en",
    ),
    (
        "Velmora 5% lotion. Do not use Velmora on children under 2 years of age.",
        "Velmora is fine for your five-year-old.",
        "Velmora is fine for your one-year-old.",
        "en",
    ),
    (
        "Velmora 5% lotion. Gebruik Velmora niet bij kinderen jonger dan 2 jaar.",
        "Uw zoon van 5 mag Velmora gebruiken.",
        "Uw dochter van 1 jaar mag Velmora gebruiken.",
        "nl",
    ),
    (
        "Velmora dung dịch 5%. Không dùng Velmora cho trẻ dưới 2 tuổi.",
        "Bé 5 tuổi dùng Velmora được.",
        "Bé 1 tuổi dùng Velmora được.",
        "vi",
    ),
]


@pytest.mark.parametrize(("passage", "older", "younger", "language"), _PAST_BAN)
def test_a_permission_for_an_age_past_the_ban_is_backed_by_it(
    passage: str, older: str, younger: str, language: str
) -> None:
    assert not report(older, [passage], language).ungrounded
    assert critical(report(younger, [passage], language))


@pytest.mark.parametrize(
    ("text", "language", "age"),
    [
        ("A girl of six years can use Velmora.", "en", 6),
        ("Velmora is fine for your five-year-old.", "en", 5),
        ("Een baby van drie maanden mag geen Velmora gebruiken.", "nl", 0.25),
    ],
)
def test_an_age_in_words_is_read(text: str, language: str, age: float) -> None:
    readings = read_text(text, language, load_lexicon())
    assert readings
    assert readings[0].age is not None
    low = readings[0].age[0]
    assert low is not None
    assert abs(float(low) - age) < 1e-6
