"""General cue families and rules added for wording outside the first cue lists (issue 10, the
held-out and fresh splits): each mechanism with one small test per language, written in other
words than the adversarial cases."""

from __future__ import annotations

from dataclasses import replace
from decimal import Decimal

from schemas.events import Passage
from services.grounding.claims import atomic_claims, skip_reason
from services.grounding.grounding import medical_context
from services.grounding.medical.compare import PassageReading, compare
from services.grounding.medical.lexicon import load_lexicon
from services.grounding.medical.reading import Reading, Span
from services.grounding.prepared import prepare_passage
from services.grounding.quantities import amounts, flatten
from services.grounding.text import claim_units
from services.grounding.tokens import tokenize
from tests.support.grounding_checks import reading_statuses


def reason(text: str, language: str) -> str | None:
    return skip_reason(text, language, tuple(flatten(amounts(tokenize(text), language))))


# -- referrals: deciding verbs, pronouns for a professional, compounds, urgency ----------------


def test_referral_by_deciding_professional_en() -> None:
    assert reason("The right number of units is set by your care team.", "en") == "referral"
    assert reason("Your prescriber decides when to stop.", "en") == "referral"
    assert reason("Ring them tomorrow morning.", "en") == "referral"
    assert reason("Don't wait until the rash spreads.", "en") == "referral"
    assert reason("Don't wait longer than 4 hours between 500 mg doses.", "en") is None


def test_referral_by_deciding_professional_nl() -> None:
    assert reason("Dat bepaalt de behandelaar samen met u.", "nl") == "referral"
    assert reason("Uw longarts kan dat beter inschatten; bel hem gerust.", "nl") == "referral"
    assert reason("Vraag het hen bij de volgende controle.", "nl") == "referral"
    assert reason("Wacht er niet mee als de zwelling toeneemt.", "nl") == "referral"
    assert reason("De kinderarts schreef 5 mg per dag voor.", "nl") is None


def test_referral_by_deciding_professional_vi() -> None:
    assert reason("Liều bao nhiêu là do bác sĩ kê đơn quyết định.", "vi") == "referral"
    assert reason("Bạn cứ hỏi họ khi tái khám nhé.", "vi") == "referral"
    assert reason("Nếu sốt cao co giật, đừng đợi, gọi cấp cứu ngay.", "vi") == "referral"
    assert reason("Mình không thể xác nhận liều này an toàn cho bé.", "vi") == "abstention"


# -- a dose form's strength: counts restated in mg ----------------------------------------------


def doses(text: str, language: str) -> list[str]:
    return [r.describe() for c in atomic_claims(text, language) for r in c.readings]


def passage_doses(text: str, language: str) -> list[str]:
    p = Passage(doc_id="d", text=text)
    return [r.describe() for _, r in prepare_passage(p, language, load_lexicon()).readings]


def test_strength_of_a_form_en() -> None:
    assert doses("Take one 200 mg capsule of aciclovir, five times a day.", "en") == [
        "aciclovir: 200 mg per dose 5 times a day"
    ]
    leaflet = "Each actuation delivers 50 micrograms of beclometasone. Use 2 puffs twice a day."
    assert "beclometason: 0.1 mg per dose 2 times a day" in passage_doses(leaflet, "en")


def test_strength_of_a_form_nl() -> None:
    assert doses("Neem 2 tabletten van 250 mg naproxen per keer.", "nl") == [
        "naproxen: 500 mg per dose"
    ]
    leaflet = "Fluticason: 50 microgram per verstuiving. Volwassenen: 2 verstuivingen per dag."
    assert "fluticason: 0.1 mg per 24 h (adult)" in passage_doses(leaflet, "nl")


def test_strength_of_a_form_vi() -> None:
    assert doses("Mỗi ngày uống một viên cetirizin 10 mg.", "vi") == ["cetirizine: 10 mg per 24 h"]
    leaflet = "Montelukast cốm: mỗi gói chứa 4 mg. Trẻ 2–5 tuổi: 1 gói mỗi tối."
    assert any(d.endswith(": 4 mg per dose") or " 4 mg" in d for d in passage_doses(leaflet, "vi"))


def test_count_before_a_strength_en() -> None:
    assert doses("Take two 200 mg capsules of aciclovir.", "en") == ["aciclovir: 400 mg"]
    leaflet = "Adults: one or two 500 mg tablets every 4 to 6 hours."
    assert passage_doses(leaflet, "en") == [
        "drug not named: 500–1000 mg per dose 4–6 times a day (adult)"
    ]


def test_count_before_a_strength_nl() -> None:
    assert doses("Neem twee 400 mg tabletten ibuprofen.", "nl") == ["ibuprofen: 800 mg"]


def test_count_before_a_strength_vi() -> None:
    # Vietnamese counts the form first: "2 viên 500 mg" (the count, then the strength)
    assert doses("Mỗi lần uống 2 viên 500 mg paracetamol.", "vi") == [
        "paracetamol: 1000 mg per dose"
    ]


# -- per dose: a quantifier with an occasion of taking, "at once" ------------------------------


def test_per_dose_occasions_en() -> None:
    assert doses("Give 5 ml of the syrup at every feed.", "en") == ["drug not named: 5 ml per dose"]
    assert doses("Use 2 units of insulin for each meal.", "en") == ["insulin: 2 IU per dose"]


def test_per_dose_occasions_nl() -> None:
    assert doses("Per inname mag u 400 mg ibuprofen nemen.", "nl") == ["ibuprofen: 400 mg per dose"]
    assert doses("Neem bij elke maaltijd 850 mg metformine.", "nl") == [
        "metformin: 850 mg per dose"
    ]


def test_per_dose_occasions_vi() -> None:
    assert doses("Sau mỗi bữa ăn uống 850 mg metformin.", "vi") == ["metformin: 850 mg per dose"]
    assert doses("Không được uống một lần 2 g amoxicilin.", "vi")[0].endswith("2000 mg per dose")


# -- a negated reason negates what follows; a negated comparative is a maximum -----------------


def polarities(text: str, language: str) -> list[str]:
    return [r.polarity for c in atomic_claims(text, language) for r in c.readings]


def test_negated_reason_en() -> None:
    assert polarities("Asthma is no reason to avoid paracetamol.", "en") == ["allowed"]
    assert doses("The dose of amlodipine must not be greater than 10 mg a day.", "en") == [
        "amlodipine: max 10 mg per 24 h"
    ]


def test_negated_reason_nl() -> None:
    assert polarities("Zwangerschap is op zich geen reden om paracetamol te mijden.", "nl") == [
        "allowed"
    ]
    assert doses("De dosis amlodipine mag niet hoger zijn dan 10 mg per dag.", "nl")[0] == (
        "amlodipine: max 10 mg per 24 h"
    )


def test_negated_reason_vi() -> None:
    assert polarities("Có thai không có lý do gì để tránh paracetamol.", "vi") == ["allowed"]
    assert doses("Amlodipin không nên dùng nhiều hơn 10 mg mỗi ngày.", "vi") == [
        "amlodipine: max 10 mg per 24 h"
    ]


# -- populations: comparisons, bare ages, age ranges of grown-ups, Dutch compounds -------------


def groups(text: str, language: str) -> list[tuple[list[str], object]]:
    return [
        (sorted(r.populations), r.age) for c in atomic_claims(text, language) for r in c.readings
    ]


def test_population_compared_en() -> None:
    assert groups("Children may take just like adults 10 mg of loratadine.", "en") == [
        (["child"], None)
    ]
    assert groups("Patients older than 75: 2.5 mg of apixaban twice a day.", "en") == [
        (["elderly"], (Decimal(75), None))
    ]


def test_population_compared_nl() -> None:
    assert groups("Kinderen krijgen net als volwassenen 10 mg loratadine.", "nl") == [
        (["child"], None)
    ]
    assert groups("Voor patiënten boven de 80 is 2,5 mg apixaban genoeg.", "nl") == [
        (["elderly"], (Decimal(80), None))
    ]
    assert medical_context("Mijn nierfunctiewaarden zijn slecht.", "nl").populations == ["renal"]


def test_population_compared_vi() -> None:
    assert groups("Trẻ em uống loratadin 10 mg giống như người lớn.", "vi") == [(["child"], None)]
    assert groups("Người trên 80: apixaban 2,5 mg mỗi lần.", "vi") == [
        (["elderly"], (Decimal(80), None))
    ]


def test_grown_up_age_ranges_compare_by_age() -> None:
    older = Reading(
        "dose",
        frozenset({"x"}),
        "stated",
        frozenset({"elderly"}),
        (Decimal(68), Decimal(68)),
        Span(Decimal(5), Decimal(5)),
        "mg",
        None,
        None,
        None,
        "allowed",
        frozenset(),
        frozenset(),
        0,
        0,
    )
    over_50 = replace(older, populations=frozenset({"adult"}), age=(Decimal(50), None))
    under_50 = replace(over_50, age=(Decimal(18), Decimal(49)))
    assert compare(older, [PassageReading("p", 0, "s", over_50)]).status == "supported"
    assert compare(older, [PassageReading("p", 0, "s", under_50)]).status == "unknown"


# -- one statement, one dose: frequency bound to the amount, alternatives, brackets ------------


def check_answer(answer: str, passage: str, language: str) -> list[str]:
    return reading_statuses(answer, passage, language)


def test_frequency_of_the_same_statement_en() -> None:
    leaflet = "Cystitis: 50 mg four times a day, or 100 mg modified-release twice a day."
    assert check_answer("Take 100 mg four times a day.", leaflet, "en") == ["contradicted"]
    assert check_answer("Take 100 mg twice a day.", leaflet, "en") == ["supported"]


def test_frequency_of_the_same_statement_nl() -> None:
    leaflet = "Kinderen tot 30 kg: 5 mg (5 ml drank) eenmaal per dag."
    assert check_answer("Geef 5 mg eenmaal per dag.", leaflet, "nl") == ["supported"]
    assert check_answer("Geef 5 mg tweemaal per dag.", leaflet, "nl") == ["contradicted"]


def test_frequency_of_the_same_statement_vi() -> None:
    leaflet = "Điều trị: 1 mg/kg mỗi 12 giờ hoặc 1,5 mg/kg ngày 1 lần."
    assert check_answer("Tiêm 1,5 mg/kg ngày 1 lần.", leaflet, "vi") == ["supported"]
    assert check_answer("Tiêm 1,5 mg/kg mỗi 12 giờ.", leaflet, "vi") == ["contradicted"]


# -- a negated dose change allows the usual use; a safety claim's risk carries on ----------------


def safety(text: str, language: str) -> list[tuple[str, list[str]]]:
    return [
        (r.polarity, sorted(r.conditions))
        for c in atomic_claims(text, language)
        for r in c.readings
        if r.kind == "contraindication"
    ]


def test_no_dose_change_en() -> None:
    text = "With liver problems you do not need to lower the dose of cetirizine. Keep taking it."
    assert safety(text, "en")[0] == ("allowed", ["hepatic"])
    assert reason("No.", "en") == "no_content"


def test_no_dose_change_nl() -> None:
    text = "Bij ouderen is aanpassing van de dosis loratadine niet nodig; u mag het gewoon nemen."
    assert [pol for pol, _ in safety(text, "nl")] == ["allowed", "allowed"]
    text = "Bij een maagzweer mag u geen ibuprofen gebruiken. Neem het ook later niet in."
    assert safety(text, "nl") == [("avoid", ["ulcer"]), ("avoid", ["ulcer"])]


def test_no_dose_change_vi() -> None:
    assert safety("Người suy thận không phải giảm liều fexofenadin.", "vi") == [
        ("allowed", ["renal"])
    ]
    assert reason("Không được.", "vi") == "no_content"


# -- the drug an amount is of ---------------------------------------------------------------


def test_drug_right_after_the_amount_en() -> None:
    text = "If you take amlodipine, do not take more than 20 mg of simvastatin a day."
    assert doses(text, "en") == ["simvastatin: max 20 mg per 24 h"]


def test_drug_right_after_the_amount_nl() -> None:
    text = "Gebruikt u amlodipine, neem dan niet meer dan 20 mg simvastatine per dag."
    assert doses(text, "nl") == ["simvastatin: max 20 mg per 24 h"]


def test_drug_right_after_the_amount_vi() -> None:
    text = "Nếu đang dùng amlodipin, không uống quá 20 mg simvastatin mỗi ngày."
    assert doses(text, "vi") == ["simvastatin: max 20 mg per 24 h"]


# -- "without" after a phrase opens a condition, it does not negate it --------------------------


def test_without_after_the_phrase_en() -> None:
    assert polarities("Never take warfarin without asking your anticoagulation clinic.", "en") == [
        "avoid"
    ]


def test_without_after_the_phrase_nl() -> None:
    assert polarities("Gebruik geen naproxen zonder overleg met uw arts.", "nl") == ["avoid"]
    assert polarities("Naproxen kunt u zonder bezwaar gebruiken bij hooikoorts.", "nl") == [
        "allowed"
    ]


def test_without_after_the_phrase_vi() -> None:
    assert polarities("Không dùng naproxen khi chưa hỏi ý kiến bác sĩ.", "vi") == ["avoid"]


# -- light verbs of going on with a dose carry no content ------------------------------------


def test_going_on_is_a_light_verb_en() -> None:
    # (a unit after a number, "5 days", is compared by the number check since the fourth round;
    # "the course is finished" is one concept since the fifth, synonyms.yaml finish_course)
    assert claim_units("keep going until the course is finished", "en") == {"~finish_course"}


def test_going_on_is_a_light_verb_nl() -> None:
    assert claim_units("blijf het gebruiken tot de kuur klaar is", "nl") == {"kuur", "klaar"}


def test_going_on_is_a_light_verb_vi() -> None:
    assert "tiếp tục" not in " ".join(claim_units("tiếp tục uống đủ 5 ngày", "vi"))


# -- a limit is not undone by "recommended"; "aged 2 to 6" is an age without "years" -----------


def test_limit_and_age_mark_en() -> None:
    assert doses("The maximum recommended dose is 2 g a day.", "en") == [
        "drug not named: max 2000 mg per 24 h"
    ]
    assert groups("Children aged 2 to 6: 2.5 mg twice a day.", "en") == [
        (["child"], (Decimal(2), Decimal(6)))
    ]


def test_limit_and_age_mark_nl() -> None:
    assert doses("De maximale aanbevolen dosis is 2 gram per dag.", "nl") == [
        "drug not named: max 2000 mg per 24 h"
    ]
    assert groups("Kinderen van de leeftijd 2 tot 6: 2,5 mg tweemaal daags.", "nl")[0][1] == (
        Decimal(2),
        Decimal(6),
    )
    assert medical_context("Mijn nierklaring is een klaring van 25.", "nl").age_min_years is None


def test_limit_and_age_mark_vi() -> None:
    assert doses("Liều tối đa khuyến cáo là 2 g mỗi ngày.", "vi") == [
        "drug not named: max 2000 mg per 24 h"
    ]


# -- "the same goes for …": the safety claim before, for other drugs ---------------------------


def drugs_and_polarity(text: str, language: str) -> list[tuple[list[str], str]]:
    return [
        (sorted(r.drugs), r.polarity)
        for c in atomic_claims(text, language)
        for r in c.readings
        if r.kind == "contraindication"
    ]


def test_same_goes_for_en() -> None:
    text = "Avoid ibuprofen if you have a stomach ulcer. The same applies to diclofenac."
    assert drugs_and_polarity(text, "en")[1] == (["diclofenac"], "avoid")


def test_same_goes_for_nl() -> None:
    text = "Neem geen ibuprofen bij een maagzweer. Dat geldt ook voor naproxen."
    assert drugs_and_polarity(text, "nl")[1] == (["naproxen"], "avoid")


def test_same_goes_for_vi() -> None:
    text = "Tránh dùng ibuprofen khi bị loét dạ dày; tương tự với diclofenac."
    assert drugs_and_polarity(text, "vi")[1] == (["diclofenac"], "avoid")
