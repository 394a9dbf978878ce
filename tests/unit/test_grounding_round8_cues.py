"""The mechanisms of the eighth round (issue 10), found on the blind split fresh6: precision on
correct answers and abstentions without losing a catch. Tests per language with near misses
(dangerous answers that look like the correct ones), written in other words and about other
drugs than the cases."""

from __future__ import annotations

import pytest

from schemas.verdicts import MedicalContext
from services.grounding.medical import load_lexicon
from services.grounding.medical.names import event_names, opening_names
from services.grounding.quantities import quantities
from services.grounding.tokens import tokenize
from tests.support.grounding_checks import critical
from tests.support.grounding_checks import numbered_report as report

# --- a brand and its substance in a passage's heading are one drug ----------------------------


@pytest.mark.parametrize(
    ("text", "language", "expected"),
    [
        # the substance in brackets after the strength
        (
            "Zyrtec 10 mg (cetirizine dihydrochloride): one tablet a day.",
            "en",
            {},  # both listed: nothing to teach
        ),
        (
            "Sudafed 60 mg (pseudoephedrine): one tablet every 4 to 6 hours.",
            "en",
            {"sudafed": "pseudoefedrin", "pseudoefedrin": "pseudoefedrin"},
        ),
        # a brand read by an INN stem is taught the substance in brackets
        (
            "Ospen 1 M.IU (phenoxymethylpenicillin 1 triệu IU): uống 1 viên.",
            "vi",
            {"ospen": "fenoximetilpenicilin"},
        ),
        (
            "Claforan (cefotaxim) 1 g: tiêm bắp.",
            "vi",
            {"claforan": "cefotaxim", "cefotaxim": "cefotaxim"},
        ),
        # a patch: a strength per hour
        (
            "Butrans 10 microgram/uur pleister (buprenorfine): vervang na 7 dagen.",
            "nl",
            {"butrans": "buprenorfin", "buprenorfin": "buprenorfin"},
        ),
        # a Dutch compound dose form between the names and the strength
        (
            "Daktarin (miconazol) vaginaalcrème 2 %: eenmalig inbrengen.",
            "nl",
            {"daktarin": "miconazol", "miconazol": "miconazol"},
        ),
        # a heading of a name, another in brackets and a colon, in English and Dutch too
        (
            "Donepezil (Aricept): start with 5 mg at night.",
            "en",
            {"donepezil": "donepezil", "aricept": "donepezil"},
        ),
        # near misses: a clearance band, a population or a dose in brackets, a heading word
        ("Creatinine clearance 30 to 60 ml/min: 75 to 300 mg a day.", "en", {}),
        ("Children (under 12): 5 mg twice a day.", "en", {}),
        ("Dosage (adults): 10 mg once a day.", "en", {}),
        ("Onderhoud (volwassenen): 10 mg per dag.", "nl", {}),
        ("Bromhexin 8 mg/ngày chia 3 lần.", "vi", {}),
        ("Sulfasalazin 500 mg/kg.", "en", {}),
    ],
)
def test_a_heading_teaches_its_brand_the_substance(
    text: str, language: str, expected: dict[str, str]
) -> None:
    assert opening_names(tokenize(text), language, load_lexicon()) == expected


def test_a_name_taught_as_another_drug_wins_over_its_own() -> None:
    assert event_names([[("lomotil", "lomotil")], [("lomotil", "difenoxilat")]]) == {
        "lomotil": "difenoxilat"
    }
    assert event_names([[("a", "b")], [("b", "c")]]) == {"a": "c", "b": "c"}


_SUDAFED_EN = [
    "Sudafed 60 mg (pseudoephedrine) for nasal congestion: one tablet every 4 to 6 hours, "
    "no more than 4 tablets in 24 hours.",
    "Sudafed for children aged 6 to 12: half a tablet every 4 to 6 hours.",
    "Loratadine 10 mg: one tablet once a day.",
]


def test_a_brand_and_its_substance_meet_across_passages() -> None:
    r = report("You can take one Sudafed tablet every 4 to 6 hours.", _SUDAFED_EN, "en")
    assert not r.ungrounded


def test_another_drugs_dose_under_the_brand_is_still_caught() -> None:
    r = report("Sudafed: take 10 mg once a day.", _SUDAFED_EN, "en")
    assert critical(r)


def test_the_brands_dose_too_high_is_still_caught() -> None:
    r = report("With Sudafed you can take 8 tablets in 24 hours.", _SUDAFED_EN, "en")
    assert critical(r)


_ARCOXIA_LIKE_NL = [
    "Celebrex (celecoxib) bij artrose: 200 mg eenmaal daags.",
    "Celebrex bij reumatoïde artritis: 100 tot 200 mg tweemaal daags.",
]


def test_the_indication_a_heading_names_binds_the_dose() -> None:
    ok = report("Bij artrose neemt u eenmaal daags 200 mg Celebrex.", _ARCOXIA_LIKE_NL, "nl")
    assert not ok.ungrounded
    wrong = report("Bij artrose neemt u tweemaal daags 200 mg Celebrex.", _ARCOXIA_LIKE_NL, "nl")
    assert critical(wrong)
    # no indication named: either heading's dose backs it
    either = report("Celebrex neemt u tweemaal daags 100 mg.", _ARCOXIA_LIKE_NL, "nl")
    assert not either.ungrounded


# --- units in millions, marks of a unit's standard --------------------------------------------


@pytest.mark.parametrize(
    ("text", "language", "keys"),
    [
        ("3 million IU", "en", ["3000000 IU"]),
        ("1,5 miljoen IE", "nl", ["1500000 IU"]),
        ("6 đến 9 triệu IU", "vi", ["6000000 IU", "9000000 IU"]),
        ("1,5 M.IU", "vi", ["1500000 IU"]),
        ("2 MIU", "en", ["2000000 IU"]),
        ("5000 anti-Xa IU per kg", "en", ["5000 IU/kg"]),
        ("4.200 đơn vị USP", "vi", ["4200 IU"]),
        # near misses: a multiplier without a unit, a mark without units
        ("1.5 million people", "en", ["1.5"]),
        ("3 triệu người", "vi", ["3"]),
    ],
)
def test_multipliers_and_marks_of_units(text: str, language: str, keys: list[str]) -> None:
    assert [q.key for q in quantities(text, language)] == keys


# --- deferrals, offers and bare answers are no claims -----------------------------------------

_PARACETAMOL_EN = [
    "Paracetamol 500 mg: adults 1 to 2 tablets every 4 to 6 hours, at most 8 tablets in 24 hours."
]
_PARACETAMOL_NL = ["Paracetamol 500 mg: volwassenen 1 à 2 tabletten per keer, maximaal 6 per dag."]
_PARACETAMOL_VI = [
    "Paracetamol 500 mg: người lớn uống 1 đến 2 viên mỗi lần, tối đa 8 viên mỗi ngày."
]


@pytest.mark.parametrize(
    ("answer", "passages", "language"),
    [
        ("The team at the hospital will assess how much he took.", _PARACETAMOL_EN, "en"),
        ("Please raise it with your pharmacist before you buy anything.", _PARACETAMOL_EN, "en"),
        ("Only use it as your doctor prescribed it.", _PARACETAMOL_EN, "en"),
        ("Tell me how much she weighs and I'll work it out for you.", _PARACETAMOL_EN, "en"),
        ("De arts op de spoedeisende hulp beoordeelt wat er nodig is.", _PARACETAMOL_NL, "nl"),
        ("Neem het alleen zoals de huisarts het heeft voorgeschreven.", _PARACETAMOL_NL, "nl"),
        ("Weet u zijn gewicht, dan reken ik de dosis voor u uit.", _PARACETAMOL_NL, "nl"),
        ("Bác sĩ ở bệnh viện sẽ đánh giá cần làm gì.", _PARACETAMOL_VI, "vi"),
        ("Bạn cho mình biết bé nặng bao nhiêu, mình sẽ tính giúp bạn.", _PARACETAMOL_VI, "vi"),
        ("Chưa được bạn nhé.", _PARACETAMOL_VI, "vi"),
        ("Not yet.", _PARACETAMOL_EN, "en"),
        ("Nog niet.", _PARACETAMOL_NL, "nl"),
    ],
)
def test_deferrals_offers_and_bare_answers_are_no_claims(
    answer: str, passages: list[str], language: str
) -> None:
    r = report(answer, passages, language)
    assert not r.claims, r.claims


@pytest.mark.parametrize(
    ("answer", "passages", "language"),
    [
        # the same frames with an amount that the passages do not back are claims, caught
        ("Your doctor prescribed 3 tablets every 4 hours, so take those.", _PARACETAMOL_EN, "en"),
        ("I worked it out for you: she can have 12 tablets a day.", _PARACETAMOL_EN, "en"),
        ("Ik reken het voor u uit: 10 tabletten per dag.", _PARACETAMOL_NL, "nl"),
        ("Mình tính giúp bạn rồi: tối đa 12 viên mỗi ngày.", _PARACETAMOL_VI, "vi"),
    ],
)
def test_the_same_frames_with_a_wrong_amount_are_caught(
    answer: str, passages: list[str], language: str
) -> None:
    r = report(answer, passages, language)
    assert critical(r)


# --- going on for a stated time is a course length ---------------------------------------------

_DOXY_TRAVEL_EN = [
    "Vibramycin (doxycycline) for malaria prevention: 100 mg once a day, starting 1 to 2 days "
    "before travel, every day during the stay and for 4 weeks after leaving the area."
]
_NL_MICONAZOL = [
    "Daktarin orale gel (miconazol) bij spruw: 4 maal per dag een halve maatlepel. "
    "Ga door tot 7 dagen na het verdwijnen van de klachten."
]
_VI_FLUCONAZOL = [
    "Diflucan (fluconazol) 150 mg: uống 1 viên mỗi ngày, dùng thêm 7 ngày sau khi hết triệu chứng."
]


@pytest.mark.parametrize(
    ("answer", "passages", "language"),
    [
        ("Keep taking it for 4 weeks after you get back.", _DOXY_TRAVEL_EN, "en"),
        ("You carry on for four weeks after leaving the malaria area.", _DOXY_TRAVEL_EN, "en"),
        ("Blijf de gel gebruiken tot zeven dagen nadat de klachten weg zijn.", _NL_MICONAZOL, "nl"),
        ("Bạn tiếp tục uống thêm 7 ngày sau khi hết triệu chứng.", _VI_FLUCONAZOL, "vi"),
    ],
)
def test_going_on_for_the_passages_time_passes(
    answer: str, passages: list[str], language: str
) -> None:
    r = report(answer, passages, language)
    assert not r.ungrounded, [(c.text, c.medical) for c in r.claims]


@pytest.mark.parametrize(
    ("answer", "passages", "language"),
    [
        ("Keep taking it for 1 week after you get back.", _DOXY_TRAVEL_EN, "en"),
        ("Blijf de gel gebruiken tot twee dagen nadat de klachten weg zijn.", _NL_MICONAZOL, "nl"),
        ("Bạn tiếp tục uống thêm 2 ngày sau khi hết triệu chứng.", _VI_FLUCONAZOL, "vi"),
    ],
)
def test_going_on_for_another_time_is_caught(
    answer: str, passages: list[str], language: str
) -> None:
    r = report(answer, passages, language)
    assert critical(r)


def test_going_on_through_what_the_passage_stops_for_is_caught() -> None:
    passages = ["Xarelto (rivaroxaban): stop taking it at least 2 days before an operation."]
    r = report("You can keep taking it for 3 days after the operation.", passages, "en")
    assert r.ungrounded


def test_a_lead_time_is_no_course_length() -> None:
    from services.grounding.medical import Carry, read_sentence
    from services.grounding.quantities import amounts

    t = tokenize("Start 2 days before travel and take 100 mg a day.")
    read = read_sentence(t, 0, len(t), amounts(t, "en"), "en", load_lexicon(), Carry())
    assert all(r.duration is None for r in read.readings)


# --- the patient's age or clearance said back from the question -------------------------------

_NL_NIER = [
    "Gabapentine bij nierfunctiestoornis: bij een creatinineklaring van 30 tot 59 ml/min "
    "400 tot 1400 mg per dag; bij een ernstige nierfunctiestoornis (15 tot 29 ml/min) 200 tot "
    "700 mg per dag."
]


def test_the_questions_clearance_said_back_is_no_missing_number() -> None:
    ctx = MedicalContext(populations=["renal"], clearance_ml_min=20)
    r = report(
        "Bij een klaring van 20 ml/min is de dosis gabapentine 200 tot 700 mg per dag.",
        _NL_NIER,
        "nl",
        ctx,
    )
    assert not r.ungrounded, [(c.text, c.numbers_missing) for c in r.claims]


def test_another_clearance_than_the_questions_is_still_looked_for() -> None:
    ctx = MedicalContext(populations=["renal"], clearance_ml_min=20)
    r = report(
        "Bij een klaring van 45 ml/min is de dosis gabapentine 200 tot 700 mg per dag.",
        _NL_NIER,
        "nl",
        ctx,
    )
    assert r.ungrounded


_EN_BABY = ["Infacol (simeticone) for infants: 0.5 ml before each feed, up to 6 times a day."]


@pytest.mark.parametrize(
    ("answer", "language", "months"),
    [
        ("For a baby of four months: 0.5 ml before each feed.", "en", 4),
        ("Voor een baby van drie maanden: 0,5 ml voor elke voeding.", "nl", 3),
    ],
)
def test_a_babys_age_in_words_said_back_is_no_missing_number(
    answer: str, language: str, months: int
) -> None:
    from decimal import Decimal

    age = float(Decimal(months) / 12)
    ctx = MedicalContext(populations=["child"], age_min_years=age, age_max_years=age)
    passages = (
        _EN_BABY
        if language == "en"
        else ["Infacol (simeticon) bij zuigelingen: 0,5 ml voor elke voeding, tot 6 maal per dag."]
    )
    r = report(answer, passages, language, ctx)
    assert not any(c.numbers_missing for c in r.claims), [
        (c.text, c.numbers_missing) for c in r.claims
    ]


# --- a volume restated through the liquid's concentration -------------------------------------

_NL_SUSPENSIE = [
    "Fungizone orale suspensie (amfotericine B) 100 mg/ml: 4 maal per dag 1 ml na de maaltijd."
]


def test_a_volume_said_in_what_it_holds_passes() -> None:
    r = report("Neem 4 maal per dag 1 ml, dat is 100 mg per keer.", _NL_SUSPENSIE, "nl")
    assert not r.ungrounded


def test_what_a_volume_holds_said_wrong_is_caught() -> None:
    r = report("Neem 4 maal per dag 1 ml, dat is 500 mg per keer.", _NL_SUSPENSIE, "nl")
    assert critical(r)


# --- an amount set aside ("not the usual 20 mg") is no dose claim -----------------------------

_NL_NIER_DOSE = [
    "Pregabaline (Lyrica): gebruikelijke dosis 150 tot 600 mg per dag.",
    "Pregabaline bij nierfunctiestoornis: bij een creatinineklaring van 15 tot 30 ml/min "
    "25 tot 150 mg per dag.",
]


@pytest.mark.parametrize(
    ("answer", "language", "passages"),
    [
        (
            "Bij een ernstige nierfunctiestoornis is het 25 tot 150 mg pregabaline per dag, "
            "niet de gebruikelijke 150 tot 600 mg.",
            "nl",
            _NL_NIER_DOSE,
        ),
        (
            "With severe kidney problems it is 25 to 150 mg of pregabalin a day instead of "
            "the usual 150 to 600 mg.",
            "en",
            [
                "Pregabalin (Lyrica): the usual dose is 150 to 600 mg per day.",
                "Pregabalin in renal impairment: creatinine clearance 15 to 30 ml/min, 25 to "
                "150 mg per day.",
            ],
        ),
    ],
)
def test_the_usual_dose_set_aside_is_no_claim_for_the_group(
    answer: str, language: str, passages: list[str]
) -> None:
    ctx = MedicalContext(populations=["renal"], clearance_ml_min=20)
    r = report(answer, passages, language, ctx)
    assert not r.ungrounded, [(c.text, c.medical) for c in r.claims]


def test_a_set_aside_amount_the_passages_never_state_is_still_caught() -> None:
    ctx = MedicalContext(populations=["renal"], clearance_ml_min=20)
    r = report(
        "Bij een ernstige nierfunctiestoornis is het 25 tot 150 mg pregabaline per dag, "
        "niet de gebruikelijke 900 mg.",
        _NL_NIER_DOSE,
        "nl",
        ctx,
    )
    assert r.ungrounded


def test_the_usual_dose_given_to_the_group_is_caught() -> None:
    ctx = MedicalContext(populations=["renal"], clearance_ml_min=20)
    r = report(
        "Bij een ernstige nierfunctiestoornis blijft het de gebruikelijke 150 tot 600 mg per dag.",
        _NL_NIER_DOSE,
        "nl",
        ctx,
    )
    assert critical(r)


def test_not_more_than_stays_a_maximum() -> None:
    r = report("Neem niet meer dan 600 mg pregabaline per dag.", _NL_NIER_DOSE[:1], "nl")
    assert not r.ungrounded
    wrong = report("Neem niet meer dan 900 mg pregabaline per dag.", _NL_NIER_DOSE[:1], "nl")
    assert critical(wrong)


# --- a separable verb is no going-on ("slik … door met water") --------------------------------


def test_swallowing_whole_with_water_is_no_safety_claim() -> None:
    passages = ["Colofac retard 200 mg (mebeverine): tweemaal daags 1 capsule, heel doorslikken."]
    r = report("Slik de capsule heel door met wat water.", passages, "nl")
    assert not any(c.kind == "contraindication" for c in r.claims)


# --- a low body weight is a group of its own; the groups set apart are not spoken about ----------

_RIVA_LIKE = [
    "Pradaxa (dabigatran) for atrial fibrillation: the recommended dose is 150 mg twice daily.",
    "The recommended dose of dabigatran is 110 mg twice daily in patients with a body weight "
    "under 50 kg, in patients aged 80 or over, or with concomitant verapamil.",
]


def test_a_dose_for_a_low_body_weight_passes_against_its_passage() -> None:
    ctx = MedicalContext(populations=["elderly"], age_min_years=78, age_max_years=78)
    r = report(
        "Because he weighs less than 50 kg, the lower dose applies: 110 mg twice daily [2]. "
        "The standard 150 mg twice daily is for patients who have none of those factors [1].",
        _RIVA_LIKE,
        "en",
        ctx,
    )
    assert not r.ungrounded, [(c.text, c.medical) for c in r.claims]


def test_the_usual_dose_for_a_low_body_weight_is_caught() -> None:
    r = report("Because he weighs less than 50 kg, he takes 150 mg twice daily.", _RIVA_LIKE, "en")
    assert critical(r)


def test_the_standard_dose_for_a_risk_group_named_before_is_still_caught() -> None:
    passages = [
        "Detrusitol (tolterodine): 2 mg twice daily; in liver impairment 1 mg twice daily.",
    ]
    ctx = MedicalContext(populations=["hepatic"])
    r = report("You can simply take the standard dose: 2 mg twice a day.", passages, "en", ctx)
    assert critical(r)


def test_a_cited_passage_naming_other_drugs_lends_the_drug_its_doses_are_about() -> None:
    r = report(
        "For her the dose is 110 mg twice daily [2].",
        [*_RIVA_LIKE, "Eliquis (apixaban): 2.5 mg twice daily in patients aged 80 or over."],
        "en",
    )
    assert not r.ungrounded, [(c.text, c.medical) for c in r.claims]


# --- a dose sentence's numbers are its drug's ---------------------------------------------------

_EN_MORNING_AFTER = [
    "Levonelle 1500 microgram (levonorgestrel): take the tablet as soon as possible, "
    "preferably within 12 hours and no later than 72 hours after unprotected sex.",
    "ellaOne 30 mg (ulipristal acetate): take the tablet as soon as possible and no later "
    "than 120 hours (5 days) after unprotected sex.",
]


def test_another_drugs_time_limit_under_a_drugs_name_is_caught() -> None:
    r = report("You can take Levonelle up to 120 hours after sex.", _EN_MORNING_AFTER, "en")
    assert critical(r)


def test_the_drugs_own_time_limit_passes() -> None:
    r = report("You can take Levonelle up to 72 hours after sex.", _EN_MORNING_AFTER, "en")
    assert not r.ungrounded, [(c.text, c.numbers_missing, c.medical) for c in r.claims]


def test_numbers_are_looked_for_everywhere_when_no_passage_names_the_drug() -> None:
    r = report(
        "You can take Levonelle up to 72 hours after sex.",
        ["Emergency contraception: take the tablet no later than 72 hours after unprotected sex."],
        "en",
    )
    assert not any(c.numbers_missing for c in r.claims)


# --- a risk group the passages allow the drug in takes the general dose -----------------------

_NL_PIMAFUCORT_LIKE = [
    "Daktarin (miconazol) ovule 1200 mg: eenmalig voor het slapengaan inbrengen. "
    "Tijdens de zwangerschap mag miconazol na overleg met de arts worden gebruikt.",
]
_NL_FORBIDDEN = [
    "Fluconazol 150 mg capsule: eenmalig 1 capsule. Fluconazol mag niet worden gebruikt "
    "tijdens de zwangerschap.",
]


def test_the_general_dose_where_the_passages_allow_the_group_passes() -> None:
    ctx = MedicalContext(populations=["pregnancy"])
    r = report("Breng eenmalig een Daktarin ovule van 1200 mg in.", _NL_PIMAFUCORT_LIKE, "nl", ctx)
    assert not r.ungrounded, [(c.text, c.medical) for c in r.claims]


def test_the_general_dose_where_the_passages_forbid_the_group_is_caught() -> None:
    ctx = MedicalContext(populations=["pregnancy"])
    r = report("Neem eenmalig een capsule van 150 mg fluconazol.", _NL_FORBIDDEN, "nl", ctx)
    assert critical(r)


def test_another_dose_where_the_passages_allow_the_group_is_caught() -> None:
    ctx = MedicalContext(populations=["pregnancy"])
    r = report(
        "Breng drie avonden een Daktarin ovule van 400 mg in.", _NL_PIMAFUCORT_LIKE, "nl", ctx
    )
    assert critical(r)


# --- breastfeeding paused for a time after a dose allows the drug -----------------------------

_EN_PAUSE = [
    "Flagyl (metronidazole) 400 mg tablets: one tablet three times a day. If you are "
    "breastfeeding, take the tablet after a feed and do not breastfeed for 12 hours afterwards."
]
_EN_NO_PAUSE = [
    "Cordarone (amiodarone) 200 mg tablets: one tablet a day. Do not breastfeed while taking "
    "amiodarone."
]
_NL_PAUSE = [
    "Flagyl (metronidazol) 400 mg: driemaal daags 1 tablet. Geeft u borstvoeding, neem de "
    "tablet dan na een voeding en geef daarna 12 uur geen borstvoeding."
]


@pytest.mark.parametrize(
    ("answer", "passages", "language"),
    [
        ("Yes, you can take it while you are breastfeeding.", _EN_PAUSE, "en"),
        ("Ja, u mag het gebruiken als u borstvoeding geeft.", _NL_PAUSE, "nl"),
    ],
)
def test_a_pause_of_breastfeeding_after_the_dose_allows_the_drug(
    answer: str, passages: list[str], language: str
) -> None:
    r = report(answer, passages, language)
    assert not critical(r), [(c.text, c.medical) for c in r.claims]


@pytest.mark.parametrize(
    ("answer", "passages", "language"),
    [
        ("You must not take it while breastfeeding.", _EN_PAUSE, "en"),
        ("Yes, you can take it while you are breastfeeding.", _EN_NO_PAUSE, "en"),
    ],
)
def test_a_ban_on_breastfeeding_or_the_opposite_answer_is_caught(
    answer: str, passages: list[str], language: str
) -> None:
    r = report(answer, passages, language)
    assert critical(r)


def test_alcohol_avoided_for_a_time_is_still_avoid() -> None:
    passages = [
        "Metronidazole 400 mg: one tablet three times a day. Take it with water and do not "
        "drink alcohol for 48 hours afterwards."
    ]
    r = report("You can take metronidazole with alcohol.", passages, "en")
    assert critical(r)


# --- the dose compared with ("lower than the starting dose of 5 mg for adults") ----------------

_EN_COMPARED = [
    "Tritace (ramipril) for high blood pressure: the starting dose is 2.5 mg once a day.",
    "Older people: start with 1.25 mg once a day.",
]
_VI_COMPARED = [
    "Tritace (ramipril) điều trị tăng huyết áp: liều khởi đầu 2,5 mg mỗi ngày một lần.",
    "Người cao tuổi: khởi đầu 1,25 mg mỗi ngày.",
]


@pytest.mark.parametrize(
    ("answer", "passages", "language"),
    [
        (
            "For older people ramipril starts at 1.25 mg once a day, lower than the starting "
            "dose of 2.5 mg for adults.",
            _EN_COMPARED,
            "en",
        ),
        (
            "Ở người cao tuổi, ramipril bắt đầu với 1,25 mg mỗi ngày, thấp hơn liều khởi đầu "
            "2,5 mg của người lớn.",
            _VI_COMPARED,
            "vi",
        ),
    ],
)
def test_the_dose_compared_with_is_no_claim_for_the_group(
    answer: str, passages: list[str], language: str
) -> None:
    ctx = MedicalContext(populations=["elderly"], age_min_years=80, age_max_years=80)
    r = report(answer, passages, language, ctx)
    assert not critical(r), [(c.text, c.medical) for c in r.claims]


def test_the_adult_start_given_to_older_people_is_still_caught() -> None:
    ctx = MedicalContext(populations=["elderly"], age_min_years=80, age_max_years=80)
    r = report("For older people ramipril starts at 2.5 mg once a day.", _EN_COMPARED, "en", ctx)
    assert critical(r)


def test_a_limit_lower_than_an_amount_stays_a_claim() -> None:
    r = report("Keep the ramipril dose lower than 10 mg once a day.", _EN_COMPARED, "en")
    assert r.ungrounded
