"""Mechanisms of the fourth round (issue 10): synonym families for advice in other words, "half
an hour", per-kg doses worked out for a stated weight, a bare count under a maximum. Each with a
test per language, written in other words and about other drugs than the cases."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from schemas.verdicts import GroundingReport, MedicalContext
from services.grounding import GroundingConfig, critical_claims
from services.grounding.grounding import body_weight, medical_context
from services.grounding.quantities import quantities
from services.grounding.text import claim_units, passage_units
from tests.support.grounding_checks import check_report

_WHEN = datetime(2026, 12, 3, tzinfo=UTC)


def report(
    answer: str, passages: list[str], language: str, context: MedicalContext | None = None
) -> GroundingReport:
    return check_report(
        answer, [(f"doc-{i}", p) for i, p in enumerate(passages)], language, context
    )


def support(claim: str, passage: str, language: str) -> float:
    units = claim_units(claim, language)
    return len(units & passage_units(passage, language)) / len(units)


# --- synonym families -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("claim", "passage", "language"),
    [
        ("Swallow it straight after eating.", "Take the capsules after a meal.", "en"),
        ("It doesn't matter whether you have eaten.", "Take regardless of meals.", "en"),
        ("Neem de capsule in op een nuchtere maag.", "Innemen op een lege maag.", "nl"),
        ("Neem het in na de maaltijd.", "Innemen na het eten.", "nl"),
        ("Uống lúc bụng đói.", "Uống khi đói.", "vi"),
        ("Uống sau bữa ăn.", "Uống thuốc sau khi ăn no.", "vi"),
    ],
)
def test_food_advice_in_other_words_is_supported(claim: str, passage: str, language: str) -> None:
    assert support(claim, passage, language) >= GroundingConfig().support_threshold


@pytest.mark.parametrize(
    ("claim", "passage", "language"),
    [
        ("Take it before meals.", "Take the capsules after a meal.", "en"),
        ("Neem het in voor de maaltijd.", "Innemen na het eten.", "nl"),
        ("Uống trước bữa ăn.", "Uống sau khi ăn.", "vi"),
    ],
)
def test_before_is_not_after(claim: str, passage: str, language: str) -> None:
    assert support(claim, passage, language) < GroundingConfig().support_threshold


def test_side_effects_in_other_words_en() -> None:
    r = report(
        "Sertraline can make some people feel sick or lightheaded at first.",
        ["Common side effects of sertraline: nausea, dizziness and dry mouth."],
        "en",
    )
    assert not r.ungrounded


def test_side_effects_in_other_words_nl() -> None:
    r = report(
        "Van amitriptyline kunt u slaperig worden en een droge mond krijgen.",
        ["Amitriptyline geeft vaak slaperigheid en een droge mond."],
        "nl",
    )
    assert not r.ungrounded


def test_side_effects_in_other_words_vi() -> None:
    r = report(
        "Cetirizin có thể làm bạn buồn ngủ.",
        ["Tác dụng phụ của cetirizin: ngủ gà, khô miệng."],
        "vi",
    )
    assert not r.ungrounded


def test_an_unsupported_advice_is_still_flagged() -> None:
    r = report(
        "Take omeprazole with grapefruit juice for a faster effect.",
        ["Take omeprazole before a meal, swallowed whole with half a glass of water."],
        "en",
    )
    assert r.ungrounded


# --- half an hour ------------------------------------------------------------------------------


def test_half_an_hour_is_thirty_minutes() -> None:
    assert [q.key for q in quantities("half an hour before food", "en")] == ["0.5 h"]
    assert [q.key for q in quantities("een half uur voor het eten", "nl")] == ["0.5 h"]
    assert [q.key for q in quantities("nửa tiếng trước khi ăn", "vi")] == ["0.5 h"]
    assert quantities("half a tablet", "en") == []


# --- per-kg dose for a stated weight --------------------------------------------------------


_PER_KG_EN = "Ibuprofen for children: 10 mg/kg per dose, three times a day."


def test_per_kg_worked_out_for_the_answer_weight_en() -> None:
    r = report("For a child of 20 kg that is 200 mg of ibuprofen per dose.", [_PER_KG_EN], "en")
    assert not r.ungrounded


def test_per_kg_wrong_product_is_critical_en() -> None:
    r = report("For a child of 20 kg that is 400 mg of ibuprofen per dose.", [_PER_KG_EN], "en")
    assert r.ungrounded and critical_claims(r)
    assert r.claims[0].medical[0].status == "contradicted"


def test_per_kg_weight_from_the_question_nl() -> None:
    ctx = medical_context("Mijn zoon weegt 18 kilo, hoeveel amoxicilline?", "nl")
    assert ctx.weight_kg == 18
    passage = "Amoxicilline voor kinderen: 25 mg/kg per dosis, tweemaal daags."
    ok = report("Dat is ongeveer 450 mg amoxicilline per dosis.", [passage], "nl", ctx)
    assert not ok.ungrounded
    wrong = report("Dat is ongeveer 900 mg amoxicilline per dosis.", [passage], "nl", ctx)
    assert critical_claims(wrong)


def test_per_kg_weight_vi() -> None:
    assert body_weight("Bé nặng 12 kg", "vi") == 12
    passage = "Paracetamol cho trẻ em: 15 mg/kg mỗi lần, cách nhau 6 giờ."
    ok = report("Với bé nặng 12 kg, mỗi lần uống 180 mg paracetamol.", [passage], "vi")
    assert not ok.ungrounded
    wrong = report("Với bé nặng 12 kg, mỗi lần uống 500 mg paracetamol.", [passage], "vi")
    assert critical_claims(wrong)


def test_no_weight_from_a_per_kg_denominator() -> None:
    assert body_weight("0.15 mg/kg body weight", "en") is None
    assert body_weight("2 mg per kilo", "nl") is None


# --- a bare count under a maximum ------------------------------------------------------------


@pytest.mark.parametrize(
    ("answer", "passage", "language"),
    [
        (
            "Adults take 1 tablet of 200 mg of ibuprofen. Take no more than 6 a day.",
            "Ibuprofen 200 mg, adults: 1 tablet; no more than 3 tablets in 24 hours.",
            "en",
        ),
        (
            "Neem 1 tablet van 10 mg loratadine. Neem er niet meer dan 3 per dag.",
            "Loratadine 10 mg: 1 tablet per dag, niet meer dan 1 tablet per dag.",
            "nl",
        ),
        (
            "Người lớn uống 1 viên cetirizin 10 mg. Không quá 3 viên mỗi ngày.",
            "Cetirizin 10 mg: người lớn 1 viên mỗi ngày, không quá 1 viên mỗi ngày.",
            "vi",
        ),
    ],
)
def test_bare_count_under_a_maximum_is_critical(answer: str, passage: str, language: str) -> None:
    r = report(answer, [passage], language)
    assert critical_claims(r)


# --- an age of 65 or over beside "like an adult" is an older person ------------------------


@pytest.mark.parametrize(
    ("answer", "language"),
    [
        ("Adults aged 82 can take 10 mg of zolpidem.", "en"),
        ("Op uw 81e jaar? Met 81 jaar kunt u als volwassene 10 mg zolpidem nemen.", "nl"),
        ("Ông 82 tuổi vẫn uống zolpidem 10 mg như người lớn.", "vi"),
    ],
)
def test_an_old_age_beside_adult_is_elderly(answer: str, language: str) -> None:
    passages = [
        "Zolpidem: adults 10 mg at bedtime. Older people: 5 mg at bedtime.",
    ]
    if language == "nl":
        passages = ["Zolpidem: volwassenen 10 mg voor het slapen. Ouderen: 5 mg."]
    if language == "vi":
        passages = ["Zolpidem: người lớn 10 mg trước khi ngủ. Người cao tuổi: 5 mg."]
    r = report(answer, passages, language)
    assert critical_claims(r)
    assert any("elderly" in m.reading.populations for c in r.claims for m in c.medical)


# --- a single dose says the count "once" ---------------------------------------------------


@pytest.mark.parametrize(
    ("answer", "passage", "language"),
    [
        (
            "Take 2 g of tinidazole, 1 time only.",
            "Tinidazole for giardiasis: 2 g as a single dose.",
            "en",
        ),
        (
            "U neemt 2 g tinidazol, en maar 1 keer.",
            "Tinidazol bij giardiasis: 2 g als eenmalige dosis.",
            "nl",
        ),
        (
            "Uống tinidazol 2 g, chỉ một lần.",
            "Tinidazol trị giardia: 2 g, liều duy nhất.",
            "vi",
        ),
    ],
)
def test_a_single_dose_says_once(answer: str, passage: str, language: str) -> None:
    assert not report(answer, [passage], language).ungrounded
    assert report(answer, ["Tinidazole: 2 g on day 1 and 1 g on day 2."], language).ungrounded


# --- a kidney clearance picks its band ----------------------------------------------------


@pytest.mark.parametrize(
    ("question", "right", "wrong", "passage", "language"),
    [
        (
            "My creatinine clearance is 20. How much gabapentin can I take?",
            "With kidney impairment you can take 300 mg of gabapentin per day.",
            "With kidney impairment you can take 900 mg of gabapentin per day.",
            "Gabapentin in renal impairment: creatinine clearance 30 to 59 ml/min, 900 mg per "
            "day; creatinine clearance below 30 ml/min, 300 mg per day.",
            "en",
        ),
        (
            "Mijn klaring is 20. Hoeveel gabapentine mag ik?",
            "Bij uw nierfunctie neemt u 300 mg gabapentine per dag.",
            "Bij uw nierfunctie neemt u 900 mg gabapentine per dag.",
            "Gabapentine bij verminderde nierfunctie: creatinineklaring 30 tot 59 ml/min, 900 mg "
            "per dag; klaring onder 30 ml/min, 300 mg per dag.",
            "nl",
        ),
        (
            "Độ thanh thải creatinin của tôi là 20, uống gabapentin bao nhiêu?",
            "Với suy thận, bạn uống gabapentin 300 mg mỗi ngày.",
            "Với suy thận, bạn uống gabapentin 900 mg mỗi ngày.",
            "Gabapentin khi suy thận: độ thanh thải creatinin 30–59 ml/phút: 900 mg mỗi ngày; "
            "dưới 30 ml/phút: 300 mg mỗi ngày.",
            "vi",
        ),
    ],
)
def test_a_clearance_picks_its_band(
    question: str, right: str, wrong: str, passage: str, language: str
) -> None:
    ctx = medical_context(question, language)
    assert ctx.clearance_ml_min == 20
    assert not report(right, [passage], language, ctx).ungrounded
    assert critical_claims(report(wrong, [passage], language, ctx))
