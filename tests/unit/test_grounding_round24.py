"""The twenty-fourth round (issue 10), one group per mechanism: doses by body weight and how
often a dose is taken are anyone's; among the young, ages decide; a professional is no name; a
referral with a time limit; a Dutch "en niet" negates a clause of its own; what a drug is used
for is a permission; a dose for a group the drug is used in; a per-kg dose worked out for the
weight; a group the question denies; a permission beside a dose; hyphenated units and infusion
rates; a course length by the statement of the same frequency; a permission about an unnamed
product; a prohibition for no group; a baby's age in weeks and ages as a clinician writes them;
an amount per minute as a dose. Own sentences in English, Dutch and Vietnamese, with invented
products (Velmora, zorvatil) or drugs the lexicon knows; every rule has a must-flag twin that is
still caught (or a guard that must stay as it was), and every group fails without its change."""

from __future__ import annotations

import pytest

from schemas.verdicts import MedicalContext
from tests.support.grounding_checks import critical
from tests.support.grounding_checks import numbered_report as report


def _child(age: float, weight: float | None = None) -> MedicalContext:
    return MedicalContext(
        populations=["child"], age_min_years=age, age_max_years=age, weight_kg=weight
    )


# --- a dose by body-weight band, and how often, with no group named ----------------------------

#: a passage of doses by body weight that names no group, with how often in a sentence of its
#: own; the dose of a 60 kg teenager's band, the same taken twice a day, another band's dose
_BY_WEIGHT = [
    (
        "Velmora tablets, dose by body weight: 33-54 kg, 60 mg; 55-84 kg, 100 mg. Take the "
        "tablet once daily, with or without food.",
        "At 60 kg he takes one 100 mg tablet of Velmora once a day.",
        "At 60 kg he takes one 100 mg tablet of Velmora twice a day.",
        "At 60 kg he takes one 60 mg tablet of Velmora once a day.",
        "en",
    ),
    (
        "Velmora tabletten, dosis naar lichaamsgewicht: 33-54 kg: 60 mg; 55-84 kg: 100 mg. Neem "
        "de tablet eenmaal per dag in, met of zonder voedsel.",
        "Bij 60 kg neemt hij eenmaal per dag 100 mg Velmora.",
        "Bij 60 kg neemt hij tweemaal per dag 100 mg Velmora.",
        "Bij 60 kg neemt hij eenmaal per dag 60 mg Velmora.",
        "nl",
    ),
    (
        "Velmora viên nén, liều theo cân nặng: 33-54 kg: 60 mg; 55-84 kg: 100 mg. Uống thuốc "
        "mỗi ngày một lần, cùng hoặc không cùng bữa ăn.",
        "Với 60 kg, cháu uống Velmora 100 mg mỗi ngày một lần.",
        "Với 60 kg, cháu uống Velmora 100 mg mỗi ngày hai lần.",
        "Với 60 kg, cháu uống Velmora 60 mg mỗi ngày một lần.",
        "vi",
    ),
]


@pytest.mark.parametrize(("passage", "right", "twice", "other_band", "language"), _BY_WEIGHT)
def test_a_dose_by_weight_band_and_how_often_are_the_young_patients_too(
    passage: str, right: str, twice: str, other_band: str, language: str
) -> None:
    teen = _child(15, 60)
    assert not report(right, [passage], language, teen).ungrounded
    assert critical(report(twice, [passage], language, teen))
    assert critical(report(other_band, [passage], language, teen))


# --- among the young, the ages decide -----------------------------------------------------------

#: a passage for adults and adolescents from 12, a starting dose from it
_ADOLESCENTS = [
    (
        "Velmora for adults and adolescents from 12 years: start with 2 mg once daily at bedtime.",
        "She starts with 2 mg of Velmora once a day at bedtime.",
        "en",
    ),
    (
        "Velmora bij volwassenen en jongeren vanaf 12 jaar: begin met 2 mg eenmaal daags voor "
        "het slapengaan.",
        "Ze begint met 2 mg Velmora eenmaal per dag voor het slapengaan.",
        "nl",
    ),
    (
        "Velmora cho người lớn và thanh thiếu niên từ 12 tuổi: khởi đầu 2 mg mỗi ngày một lần "
        "trước khi ngủ.",
        "Cháu bắt đầu với Velmora 2 mg mỗi ngày một lần trước khi ngủ.",
        "vi",
    ),
]


@pytest.mark.parametrize(("passage", "answer", "language"), _ADOLESCENTS)
def test_a_child_of_16_is_one_of_the_adolescents_from_12(
    passage: str, answer: str, language: str
) -> None:
    assert not report(answer, [passage], language, _child(16)).ungrounded
    # the twin: a child of 9 is none of them
    assert critical(report(answer, [passage], language, _child(9)))


# --- a professional written in capitals is no name -------------------------------------------

_DOSING = "Zorvatil 20 mg tablets: adults take 20 mg once a day."
_DOSE = "Adults take 20 mg of zorvatil once a day."


def test_a_professional_in_capitals_leaves_advice_general() -> None:
    advice = "Keep a list of your medicines in your wallet for the GP."
    assert not report(f"{_DOSE} {advice}", [_DOSING], "en").ungrounded
    # the twin: a name in its place makes the sentence specific, and words no passage holds
    # then flag it
    named = "Keep a list of your medicines in your wallet for Dr Hartley."
    assert report(f"{_DOSE} {named}", [_DOSING], "en").ungrounded == [named]


# --- a referral with a time limit ------------------------------------------------------------

#: passages with a dose and when to see a doctor; the dose, a referral after the passages'
#: number of days in other words, the same after another number of days
_TIMED = [
    (
        [
            "Zorvatil sachets: adults dissolve one sachet in water three times a day.",
            "If the symptoms persist for more than 2 days, consult a doctor.",
        ],
        "Dissolve one zorvatil sachet in water three times a day.",
        "If things haven't settled after those two days, have a chat with your GP.",
        "If things haven't settled after those five days, have a chat with your GP.",
        "en",
    ),
    (
        [
            "Zorvatil sachets: volwassenen lossen driemaal daags een sachet op in water.",
            "Raadpleeg een arts als de klachten langer dan 2 dagen aanhouden.",
        ],
        "Los driemaal daags een sachet zorvatil op in water.",
        "Is het na twee dagen nog niet over, ga dan even langs bij de huisarts.",
        "Is het na vijf dagen nog niet over, ga dan even langs bij de huisarts.",
        "nl",
    ),
    (
        [
            "Zorvatil gói: người lớn pha một gói với nước, ngày 3 lần.",
            "Nếu triệu chứng kéo dài quá 2 ngày, hãy hỏi ý kiến bác sĩ.",
        ],
        "Pha một gói zorvatil với nước, ngày 3 lần.",
        "Sau hai ngày mà vẫn chưa đỡ thì bạn nên đi gặp bác sĩ.",
        "Sau năm ngày mà vẫn chưa đỡ thì bạn nên đi gặp bác sĩ.",
        "vi",
    ),
]


@pytest.mark.parametrize(("passages", "dose", "referral", "other_days", "language"), _TIMED)
def test_a_referral_with_the_passages_time_limit_is_general_advice(
    passages: list[str], dose: str, referral: str, other_days: str, language: str
) -> None:
    assert not report(f"{dose} {referral}", passages, language).ungrounded
    # the twin: a time limit no passage gives is still a number to find
    assert report(f"{dose} {other_days}", passages, language).ungrounded == [other_days]


# --- a Dutch "en niet" opens a negation of its own ---------------------------------------------


def test_a_coordinated_dutch_negation_does_not_cancel_the_first() -> None:
    passages = [
        "Ketoconazol crème bij schimmelinfecties: breng 1 à 2 keer per dag een dun laagje aan.",
        "Niet aanbrengen op open wonden en niet in de buurt van de ogen.",
    ]
    right = "Smeer ketoconazol crème niet op een open wond en niet vlak bij de ogen."
    assert not report(right, passages, "nl").ungrounded
    # the twin: the permission it forbids is contradicted
    flipped = "Ketoconazol crème kunt u gewoon op een open wond smeren."
    assert critical(report(flipped, passages, "nl"))


# --- what a drug is used for is a permission ---------------------------------------------------

#: a passage on what the drug treats, in pregnancy too; the permission; its flip
_USED_FOR = [
    (
        "Zorvatil is used to treat high blood pressure, including high blood pressure in "
        "pregnancy.",
        "Zorvatil can be used during pregnancy.",
        "Zorvatil should not be used during pregnancy.",
        "en",
    ),
    (
        "Zorvatil wordt gebruikt bij hoge bloeddruk, ook bij hoge bloeddruk tijdens de "
        "zwangerschap.",
        "Zorvatil mag tijdens de zwangerschap gebruikt worden.",
        "Zorvatil mag tijdens de zwangerschap niet gebruikt worden.",
        "nl",
    ),
    (
        "Zorvatil được dùng để điều trị tăng huyết áp, kể cả tăng huyết áp khi mang thai.",
        "Có thể dùng zorvatil khi mang thai.",
        "Không được dùng zorvatil khi mang thai.",
        "vi",
    ),
]


@pytest.mark.parametrize(("passage", "allowed", "forbidden", "language"), _USED_FOR)
def test_what_a_drug_is_used_for_is_a_permission(
    passage: str, allowed: str, forbidden: str, language: str
) -> None:
    assert not report(allowed, [passage], language).ungrounded
    assert critical(report(forbidden, [passage], language))


# --- a dose for a group the drug is used in -------------------------------------------------------

#: what the drug is used for (adults and children from 1 year), its one dose in another
#: passage; the dose for a child of 6, cited; two drops instead; the use for adults only
_TREATED = [
    (
        "Tobramycin eye drops are used to treat conjunctivitis in adults and children aged 1 year "
        "and older.",
        "Dose: instil one drop in the affected eye three times a day for 7 days.",
        "Put one drop of tobramycin in the eye three times a day for 7 days [2].",
        "Put two drops of tobramycin in the eye three times a day for 7 days [2].",
        "Tobramycin eye drops are used to treat conjunctivitis in adults.",
        "en",
    ),
    (
        "Tobramycine oogdruppels worden gebruikt bij bindvliesontsteking bij volwassenen en "
        "kinderen vanaf 1 jaar.",
        "Dosering: druppel driemaal daags één druppel in het aangedane oog, 7 dagen lang.",
        "Druppel driemaal daags één druppel tobramycine in het oog, 7 dagen lang [2].",
        "Druppel driemaal daags twee druppels tobramycine in het oog, 7 dagen lang [2].",
        "Tobramycine oogdruppels worden gebruikt bij bindvliesontsteking bij volwassenen.",
        "nl",
    ),
    (
        "Thuốc nhỏ mắt tobramycin được dùng để điều trị viêm kết mạc ở người lớn và trẻ em từ 1 "
        "tuổi trở lên.",
        "Liều dùng: nhỏ 1 giọt vào mắt bị bệnh, ngày 3 lần, trong 7 ngày.",
        "Nhỏ 1 giọt tobramycin vào mắt, ngày 3 lần, trong 7 ngày [2].",
        "Nhỏ 2 giọt tobramycin vào mắt, ngày 3 lần, trong 7 ngày [2].",
        "Thuốc nhỏ mắt tobramycin được dùng để điều trị viêm kết mạc ở người lớn.",
        "vi",
    ),
]


@pytest.mark.parametrize(
    ("use", "dosing", "right", "two_drops", "adults_only", "language"), _TREATED
)
def test_the_one_dose_of_a_drug_used_in_children_is_the_childs(
    use: str, dosing: str, right: str, two_drops: str, adults_only: str, language: str
) -> None:
    child = _child(6)
    checked = report(right, [use, dosing], language, child)
    assert not checked.ungrounded and not checked.unsupported_citations
    assert critical(report(two_drops, [use, dosing], language, child))
    # the twin: a drug used in adults only gives no dose for a child
    assert critical(report(right, [adults_only, dosing], language, child))


# --- a dose per kg worked out for the patient's weight, in a sentence of no dose ----------------
# (the numbers of any language; Vietnamese writes such a sentence with a dose word, which the
# dose comparison already works out)


@pytest.mark.parametrize(
    ("passage", "worked", "wrong", "language"),
    [
        (
            "Zorvatil for sedation, children: 30-50 mg/kg as a single dose.",
            "At 16 kg that is 480 to 800 mg.",
            "At 16 kg that is 480 to 900 mg.",
            "en",
        ),
        (
            "Zorvatil bij sedatie, kinderen: 30-50 mg/kg als eenmalige dosis.",
            "Bij 16 kg is dat 480 tot 800 mg.",
            "Bij 16 kg is dat 480 tot 900 mg.",
            "nl",
        ),
    ],
)
def test_a_per_kg_dose_worked_out_for_the_weight_is_the_passages_number(
    passage: str, worked: str, wrong: str, language: str
) -> None:
    weighed = _child(4, 16)
    assert not report(worked, [passage], language, weighed).ungrounded
    assert report(wrong, [passage], language, weighed).ungrounded == [wrong]


# --- a group the question denies is not the patient's ------------------------------------------


@pytest.mark.parametrize(
    ("question", "language"),
    [
        ("What is the dose for an adult who isn't on dialysis?", "en"),
        ("Hoeveel krijgt mijn vader, die geen nierproblemen heeft?", "nl"),
        ("Bố tôi không bị suy thận, uống bao nhiêu?", "vi"),
    ],
)
def test_a_group_the_question_denies_is_not_the_patients(question: str, language: str) -> None:
    from services.grounding.grounding import medical_context

    assert "renal" not in medical_context(question, language).populations
    # the twin: the same question without the negator names the group
    affirmed = (
        question.replace("isn't", "is")
        .replace("geen nierproblemen", "nierproblemen")
        .replace("không bị", "bị")
    )
    assert "renal" in medical_context(affirmed, language).populations


# --- a permission in a clause beside the dose --------------------------------------------------

#: passages with a dose and a contraindication in pregnancy; a dose sentence that opens with a
#: permission in pregnancy, and the same dose sentence without it
_BESIDE = [
    (
        [
            "Ketoconazol 200 mg tablets: adults take 200 mg once a day.",
            "Do not take ketoconazol if you are pregnant.",
        ],
        "Yes, ketoconazol can be used while you're pregnant: take 200 mg once a day.",
        "Take 200 mg of ketoconazol once a day.",
        "en",
    ),
    (
        [
            "Ketoconazol 200 mg tabletten: volwassenen nemen eenmaal daags 200 mg.",
            "Gebruik ketoconazol niet als u zwanger bent.",
        ],
        "Ja, tijdens de zwangerschap mag u ketoconazol gebruiken: neem eenmaal daags 200 mg.",
        "Neem eenmaal daags 200 mg ketoconazol.",
        "nl",
    ),
    (
        [
            "Ketoconazol 200 mg: người lớn uống 200 mg mỗi ngày một lần.",
            "Không dùng ketoconazol cho phụ nữ có thai.",
        ],
        "Phụ nữ có thai có thể dùng ketoconazol: uống 200 mg mỗi ngày một lần.",
        "Uống ketoconazol 200 mg mỗi ngày một lần.",
        "vi",
    ),
]


@pytest.mark.parametrize(("passages", "flipped", "dose", "language"), _BESIDE)
def test_a_permission_beside_a_dose_is_a_safety_claim(
    passages: list[str], flipped: str, dose: str, language: str
) -> None:
    checked = report(flipped, passages, language)
    assert critical(checked)
    # the finding shows the passage that forbids it, not only a dose no passage gives for
    # pregnancy
    (claim,) = checked.claims
    assert [
        (m.reading.polarity, [p.doc_id for p in m.contradicting])
        for m in claim.medical
        if m.reading.kind == "contraindication" and m.status == "contradicted"
    ] == [("allowed", ["doc-1"])]
    assert not report(dose, passages, language).ungrounded


# --- a unit after a hyphen, and infusion rates ---------------------------------------------------


@pytest.mark.parametrize(
    ("text", "language", "keys"),
    [
        ("given as a 3-hour intravenous infusion", "en", ["3 h"]),
        ("a 30-minute infusion", "en", ["0.5 h"]),
        ("2 micrograms/kg/min", "en", ["0.12 mg/kg/h"]),
        ("1,75 mg/kg/uur", "nl", ["1.75 mg/kg/h"]),
        ("0,12 mg/kg/giờ", "vi", ["0.12 mg/kg/h"]),
        # a dose every 8 hours and a dose per day are no rates
        ("10–20 mg/kg mỗi 8 giờ", "vi", ["10 mg/kg", "20 mg/kg"]),
        ("10 mg/kg/day", "en", ["10 mg/kg"]),
        ("2-3 hours", "en", ["2 h", "3 h"]),
    ],
)
def test_hyphenated_units_and_rates_per_kg(text: str, language: str, keys: list[str]) -> None:
    from services.grounding.quantities import amounts
    from services.grounding.tokens import tokenize

    assert [q.key for a in amounts(tokenize(text), language) for q in a.parts] == keys


#: an infusion rate per minute; the same per hour (60 times less), in a sentence with no dose
#: word and a drug the lexicon does not know
_RATES = [
    (
        "Zorvatil in adults: a bolus of 180 micrograms/kg, then an infusion of 2 micrograms/kg/min "
        "for up to 72 hours.",
        "After the bolus it runs at 2 micrograms/kg/min.",
        "After the bolus it runs at 2 micrograms/kg/hour.",
        "en",
    ),
    (
        "Zorvatil bij volwassenen: bolus van 180 microgram/kg, daarna een infusie van 2 "
        "microgram/kg/min gedurende maximaal 72 uur.",
        "Na de bolus loopt het op 2 microgram/kg/min.",
        "Na de bolus loopt het op 2 microgram/kg/uur.",
        "nl",
    ),
    (
        "Zorvatil người lớn: tiêm nhanh 180 microgam/kg, sau đó truyền 2 microgam/kg/phút, tối đa "
        "72 giờ.",
        "Sau liều tiêm nhanh, truyền 2 microgam/kg/phút.",
        "Sau liều tiêm nhanh, truyền 2 microgam/kg/giờ.",
        "vi",
    ),
]


@pytest.mark.parametrize(("passage", "right", "per_hour", "language"), _RATES)
def test_an_infusion_rate_per_hour_is_not_the_rate_per_minute(
    passage: str, right: str, per_hour: str, language: str
) -> None:
    assert not report(right, [passage], language).ungrounded
    assert critical(report(per_hour, [passage], language))


# --- the course length of the statement that agrees on how often ---------------------------------


def test_a_course_length_is_judged_by_the_statement_of_the_same_frequency() -> None:
    passages = [
        "Zorvatil: day 8 to the end of treatment: 1 mg twice daily. The course lasts 12 weeks.",
        "In severe kidney problems the dose of zorvatil is 0.5 mg once daily for 3 days, then "
        "1 mg once daily.",
    ]
    right = (
        "From day eight you take 1 mg of zorvatil twice a day until the end of the 12-week course."
    )
    assert not report(right, passages, "en").ungrounded
    wrong = (
        "From day eight you take 1 mg of zorvatil twice a day until the end of the 3-week course."
    )
    assert critical(report(wrong, passages, "en"))


# --- a permission about a product no lexicon knows ---------------------------------------------

#: passages about a product they do not name by a known name, a distractor about a known drug;
#: a permission the product's passage forbids; the prohibition in other words
_UNNAMED_PRODUCT = [
    (
        [
            "This product must not be used if you have had a caesarean section before.",
            "The insert stays in place for at most 24 hours.",
            "Oxytocin is given by infusion; the dose is raised step by step.",
        ],
        "A previous caesarean section is no objection to this insert.",
        "After a previous caesarean section this insert must not be used.",
        "en",
    ),
    (
        [
            "Dit middel mag niet worden gebruikt als u eerder een keizersnede heeft gehad.",
            "Het hulsje blijft maximaal 24 uur zitten.",
            "Oxytocine wordt via een infuus gegeven; de dosis wordt stap voor stap verhoogd.",
        ],
        "Een eerdere keizersnede is geen bezwaar voor dit hulsje.",
        "Na een eerdere keizersnede mag dit hulsje niet worden gebruikt.",
        "nl",
    ),
    (
        [
            "Không dùng thuốc này nếu trước đây bạn đã sinh mổ.",
            "Thuốc được giữ trong âm đạo tối đa 24 giờ.",
            "Oxytocin được truyền tĩnh mạch, tăng liều dần từng bước.",
        ],
        "Đã từng sinh mổ thì vẫn có thể dùng thuốc này.",
        "Nếu trước đây bạn đã sinh mổ thì không dùng thuốc này.",
        "vi",
    ),
]


@pytest.mark.parametrize(("passages", "flipped", "right", "language"), _UNNAMED_PRODUCT)
def test_a_permission_about_an_unnamed_product_meets_its_passages(
    passages: list[str], flipped: str, right: str, language: str
) -> None:
    checked = report(flipped, passages, language)
    assert critical(checked)
    # contradicted by the passage that names no drug
    (claim,) = checked.claims
    assert {p.doc_id for m in claim.medical for p in m.contradicting} == {"doc-0"}
    assert not report(right, passages, language).ungrounded


# --- a prohibition for no group in particular holds for a child ----------------------------------

#: a cream passage that forbids broken skin for no group; the prohibition for a toddler; its flip
_FOR_EVERY_AGE = [
    (
        "Ketoconazol cream 2%: apply once or twice daily. Do not apply to broken skin.",
        "Do not put ketoconazol cream on broken skin.",
        "You can put ketoconazol cream on broken skin.",
        "en",
    ),
    (
        "Ketoconazol crème 2%: een- of tweemaal daags aanbrengen. Niet aanbrengen op open wonden.",
        "Smeer ketoconazol crème niet op een open wond.",
        "U kunt ketoconazol crème gewoon op een open wond smeren.",
        "nl",
    ),
    (
        "Kem ketoconazol 2%: bôi 1–2 lần/ngày. Không bôi lên vết thương hở.",
        "Không bôi ketoconazol lên vết thương hở.",
        "Có thể bôi ketoconazol lên vết thương hở.",
        "vi",
    ),
]


@pytest.mark.parametrize(("passage", "right", "flipped", "language"), _FOR_EVERY_AGE)
def test_a_prohibition_for_no_group_holds_for_a_child(
    passage: str, right: str, flipped: str, language: str
) -> None:
    toddler = _child(2)
    assert not report(right, [passage], language, toddler).ungrounded
    assert critical(report(flipped, [passage], language, toddler))


# --- a baby's age in weeks or days, and ages as a clinician reads them --------------------------


@pytest.mark.parametrize(
    ("question", "language", "years"),
    [
        ("How many drops should I give my 6-week-old?", "en", 42 / 365),
        ("My 10-day-old baby has colic.", "en", 10 / 365),
        ("Hoeveel druppels krijgt mijn baby van 6 weken?", "nl", 42 / 365),
        ("Bé nhà tôi 6 tuần tuổi uống mấy giọt?", "vi", 42 / 365),
    ],
)
def test_a_babys_age_in_weeks_or_days(question: str, language: str, years: float) -> None:
    from services.grounding.grounding import medical_context

    context = medical_context(question, language)
    assert context.age_min_years == context.age_max_years
    assert context.age_min_years is not None and abs(context.age_min_years - years) < 1e-9


@pytest.mark.parametrize(
    ("question", "language"),
    [
        ("Can I take it for at least 4 weeks?", "en"),
        ("Mag ik het 3 weken gebruiken?", "nl"),
        ("Tôi uống trong 6 tuần được không?", "vi"),
    ],
)
def test_a_length_of_weeks_is_no_age(question: str, language: str) -> None:
    from services.grounding.grounding import medical_context

    assert medical_context(question, language).age_min_years is None


def test_ages_read_as_a_clinician_writes_them() -> None:
    passage = "Colicdrops for babies from birth: 5 drops once daily."
    checked = report("Give 10 drops twice a day.", [passage], "en", _child(42 / 365))
    (claim,) = checked.claims
    assert "(child 6 weeks)" in claim.medical[0].explanation
    checked = report("Give 10 drops twice a day.", [passage], "en", _child(11))
    assert "(child 11 y)" in checked.claims[0].medical[0].explanation


#: an infusion per minute, not per kg, in a sentence with no dose word; the same in mg
_PER_MINUTE = [
    (
        "Zorvatil for slow heart rate: a continuous infusion of 2–10 micrograms per minute.",
        "Run it as a continuous infusion of 2–10 micrograms per minute.",
        "Run it as a continuous infusion of 2–10 mg per minute.",
        "en",
    ),
    (
        "Zorvatil bij shock: start met 0,01 eenheden per minuut als continue infusie.",
        "Start met 0,01 eenheden per minuut als continue infusie.",
        "Start met 0,01 ml per minuut als continue infusie.",
        "nl",
    ),
    (
        "Zorvatil nhịp chậm: truyền tĩnh mạch liên tục 2–10 microgam/phút.",
        "Truyền tĩnh mạch liên tục 2–10 microgam/phút.",
        "Truyền tĩnh mạch liên tục 2–10 mg/phút.",
        "vi",
    ),
]


@pytest.mark.parametrize(("passage", "right", "wrong", "language"), _PER_MINUTE)
def test_an_amount_per_minute_is_a_dose(
    passage: str, right: str, wrong: str, language: str
) -> None:
    assert not report(right, [passage], language).ungrounded
    assert critical(report(wrong, [passage], language))
