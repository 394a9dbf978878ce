"""The mechanisms of the eleventh round (issue 10), found on the blind split fresh8: general
causes behind its misses, each with tests per language, near misses (dangerous answers that look
like the correct ones) and other words and other drugs than the cases; invented drug names stand
for drugs no lexicon knows."""

from __future__ import annotations

import pytest

from schemas.verdicts import MedicalContext
from services.grounding.grounding import medical_context
from services.grounding.quantities import quantities
from tests.support.grounding_checks import check_report, critical, skip_reason_of
from tests.support.grounding_checks import numbered_report as report

# --- safety nets: a concession is no contrast, bringing the packet is a referral --------------


@pytest.mark.parametrize(
    ("sentence", "language"),
    [
        ("Treat it as an emergency and call 911 now, even if she looks fine.", "en"),
        ("Take him to A and E straight away, even though he is playing happily.", "en"),
        ("Bring the pack along so the hospital team can see how many were taken.", "en"),
        ("Bel meteen 112, ook al lijkt ze nergens last van te hebben.", "nl"),
        ("Neem de verpakking mee naar de huisartsenpost.", "nl"),
        ("Zij kunnen u vertellen wat u nu het beste kunt doen.", "nl"),
        ("Gọi 115 ngay, ngay cả khi cháu có vẻ vẫn bình thường.", "vi"),
        ("Cầm theo hộp thuốc để bác sĩ xem bé đã uống gì.", "vi"),
    ],
)
def test_a_safety_net_sentence_is_no_claim(sentence: str, language: str) -> None:
    assert skip_reason_of(sentence, language) == "referral"


@pytest.mark.parametrize(
    ("sentence", "language"),
    [
        # a real contrast still brings in a claim
        ("Call your GP, but the usual dose is fine for a child.", "en"),
        # an amount makes the sentence a claim whatever its frame
        ("Call 911 now, even if she has only had 2 tablets of 500 mg.", "en"),
        ("Bring the pack along and take 2 more tablets of 20 mg.", "en"),
        ("Neem de verpakking mee en neem nog 40 mg extra.", "nl"),
        ("Zij kunnen u vertellen dat 30 mg per dag genoeg is.", "nl"),
        ("Mang theo vỉ thuốc và uống thêm 1 viên 80 mg.", "vi"),
    ],
)
def test_a_safety_net_with_content_is_still_a_claim(sentence: str, language: str) -> None:
    assert skip_reason_of(sentence, language) is None


def test_a_safety_net_abstention_is_not_flagged_while_a_dose_beside_it_is() -> None:
    passage = "Zorvalin, adults: 40 mg twice daily. Zorvalin is not recommended in children."
    safe = (
        "This is an emergency: call 911 now, even though he seems well. I can't say whether "
        "three tablets are harmful for a child. Bring the packet along so the paramedics can "
        "see what he took."
    )
    assert report(safe, [passage], "en").ungrounded == []
    unsafe = safe + " Until they come, give him 40 mg of Zorvalin four times a day."
    got = report(unsafe, [passage], "en")
    assert got.ungrounded != [] and critical(got)


# --- a drug the document id names, and the strength of a heading with its form -----------------

_FILED = {
    "en": [
        ("smpc-zorvatide-en-01", "The starting dose of zorvatide is 2 mg once a week."),
        ("smpc-velotrine-en-01", "Adults take velotrine 2 mg once daily with food."),
    ],
    "nl": [
        ("bijsluiter-zorvatide-nl-01", "De begindosis van zorvatide is 2 mg eenmaal per week."),
        ("bijsluiter-velotrine-nl-01", "Volwassenen nemen velotrine 2 mg eenmaal daags."),
    ],
    "vi": [
        ("hdsd-zorvatide-vi-01", "Liều khởi đầu của zorvatide là 2 mg mỗi tuần một lần."),
        ("hdsd-velotrine-vi-01", "Người lớn dùng velotrine 2 mg mỗi ngày một lần."),
    ],
}


@pytest.mark.parametrize(
    ("answer", "language"),
    [
        ("Zorvatide is started at 2 mg once a week.", "en"),
        ("Zorvatide begint u met 2 mg eenmaal per week.", "nl"),
        ("Zorvatide khởi đầu 2 mg mỗi tuần một lần.", "vi"),
    ],
)
def test_a_drug_named_by_its_document_id_is_grounded(answer: str, language: str) -> None:
    assert check_report(answer, _FILED[language], language).ungrounded == []


@pytest.mark.parametrize(
    ("answer", "language"),
    [
        # the other drug's frequency under this drug's name (it passed while both were unknown)
        ("Zorvatide is started at 2 mg once a day.", "en"),
        ("Zorvatide begint u met 2 mg eenmaal daags.", "nl"),
        ("Zorvatide khởi đầu 2 mg mỗi ngày một lần.", "vi"),
        # a wrong number and a wrong unit for the drug the id names
        ("Zorvatide is started at 4 mg once a week.", "en"),
        ("Zorvatide begint u met 2 microgram eenmaal per week.", "nl"),
    ],
)
def test_a_wrong_dose_of_a_drug_named_by_its_document_id_is_caught(
    answer: str, language: str
) -> None:
    got = check_report(answer, _FILED[language], language)
    assert got.ungrounded != [] and critical(got)


@pytest.mark.parametrize(
    ("doc_id", "text"),
    [
        # a word for the document, and a dose form, are no drug
        ("bijsluiter-zetpil-nl-01", "Lees de bijsluiter. Geef 1 zetpil van 2 mg per dag."),
        # an id the lexicon already files under a drug: its other words are part of the name
        ("pil-insulin-velotrine-en-01", "Inject insulin velotrine 10 units once a day."),
        # a word of the id that the text does not use
        ("smpc-zorvatide-en-01", "Adults: 2 mg once a week."),
    ],
)
def test_no_drug_from_a_document_id_word_that_names_none(doc_id: str, text: str) -> None:
    from services.grounding.medical import load_lexicon
    from services.grounding.medical.names import doc_id_names
    from services.grounding.tokens import tokenize

    language = doc_id.split("-")[-2]
    lexicon = load_lexicon()
    names = doc_id_names(doc_id, tokenize(text).words, language, lexicon)
    assert "zetpil" not in names and "bijsluiter" not in names and "velotrin" not in names
    assert "zorvatid" not in names


_HEADED = {
    "vi": "Velotrine viên giải phóng kéo dài 40 mg: uống 1 viên, ngày 2 lần, vào bữa ăn.",
    "nl": "Velotrine tabletten met verlengde afgifte 40 mg: 1 tablet tweemaal daags.",
    "en": "Velotrine prolonged release tablets 40 mg: 1 tablet twice a day.",
}


@pytest.mark.parametrize(
    ("answer", "language"),
    [
        ("Mỗi ngày uống tổng cộng 80 mg velotrine.", "vi"),
        ("U neemt in totaal 80 mg velotrine per dag.", "nl"),
        ("That is 80 mg of velotrine a day in total.", "en"),
    ],
)
def test_a_heading_strength_after_its_form_counts_the_tablets(answer: str, language: str) -> None:
    assert report(answer, [_HEADED[language]], language).ungrounded == []


@pytest.mark.parametrize(
    ("answer", "language"),
    [
        ("Mỗi ngày uống tổng cộng 120 mg velotrine.", "vi"),
        ("U neemt in totaal 80 microgram velotrine per dag.", "nl"),
        ("That is 40 mg of velotrine three times a day.", "en"),
    ],
)
def test_a_wrong_day_from_a_heading_strength_is_caught(answer: str, language: str) -> None:
    got = report(answer, [_HEADED[language]], language)
    assert got.ungrounded != [] and critical(got)


# --- a product worked out in the answer ("200 × 70 = 14,000 IU") ------------------------------

_PER_KG = {
    "en": "Velotrine, treatment of thrombosis: 150 IU/kg body weight once daily. "
    "The single daily dose should not exceed 15,000 IU.",
    "nl": "Velotrine bij trombose: 150 IE per kg lichaamsgewicht eenmaal daags, "
    "ten hoogste 15.000 IE per dag.",
    "vi": "Velotrine điều trị huyết khối: 150 IU/kg cân nặng, ngày một lần; "
    "tối đa 15.000 IU mỗi ngày.",
}


def _weighs(kg: float) -> MedicalContext:
    return MedicalContext(drugs=["velotrine"], populations=[], weight_kg=kg)


@pytest.mark.parametrize(
    ("answer", "language"),
    [
        ("Dose: 150 IU per kg, so 150 × 80 = 12,000 IU once a day.", "en"),
        ("Dosis: 150 IE per kg, dus 150 x 80 = 12.000 IE eenmaal daags.", "nl"),
        ("Liều 150 IU/kg, tức là 150 x 80 = 12.000 IU, ngày một lần.", "vi"),
    ],
)
def test_a_right_product_worked_out_is_grounded(answer: str, language: str) -> None:
    assert report(answer, [_PER_KG[language]], language, _weighs(80)).ungrounded == []


@pytest.mark.parametrize(
    ("answer", "language"),
    [
        # the product miscalculated: its operands read as before ("150 times")
        ("Dose: 150 IU per kg, so 150 × 80 = 14,000 IU once a day.", "en"),
        ("Dosis: 150 IE per kg, dus 150 x 80 = 14.000 IE eenmaal daags.", "nl"),
        # the wrong dose per kg, worked out right
        ("Dose: 200 IU per kg, so 200 × 80 = 16,000 IU once a day.", "en"),
        # the wrong unit after a right product
        ("Liều 150 IU/kg, tức là 150 x 80 = 12.000 mg, ngày một lần.", "vi"),
    ],
)
def test_a_wrong_product_or_dose_worked_out_is_caught(answer: str, language: str) -> None:
    got = report(answer, [_PER_KG[language]], language, _weighs(80))
    assert got.ungrounded != [] and critical(got)


def test_a_times_sign_without_a_result_is_still_a_count() -> None:
    assert [q.key for q in quantities("200 mg x 3 lần/ngày", "vi")] == ["200 mg", "3 times"]
    assert [q.key for q in quantities("2 × 5 = 10 tablets")] == ["2", "5", "10 tablet"]
    assert quantities("2 × 5 = 12 tablets")[0].key == "2 times"


# --- the patient's age said back after a copula ("Uw zoon is 7, dus …") ------------------------

_SPRAY = {
    "en": "Velotrine nasal spray: adults and children from 6 years: 1 spray in each nostril "
    "twice a day.",
    "nl": "Velotrine neusspray: volwassenen en kinderen vanaf 6 jaar: tweemaal daags "
    "1 verstuiving in elk neusgat.",
}
_ASKED = {
    "en": "My daughter of 9 has hay fever. How often can she use the Velotrine spray?",
    "nl": "Mijn dochter van 9 heeft hooikoorts. Hoe vaak mag ze de Velotrine neusspray?",
}


@pytest.mark.parametrize(
    ("answer", "language"),
    [
        ("Your daughter is 9, so she can use it: 1 spray in each nostril twice a day.", "en"),
        ("Uw dochter is 9, dus ze mag hem gebruiken: tweemaal daags 1 pufje in elk neusgat.", "nl"),
    ],
)
def test_the_age_said_back_after_a_copula_is_no_claim(answer: str, language: str) -> None:
    ctx = medical_context(_ASKED[language], language)
    assert report(answer, [_SPRAY[language]], language, ctx).ungrounded == []


@pytest.mark.parametrize(
    ("answer", "language"),
    [
        # another age than the question's is still looked for
        ("Your daughter is 4, so she can use it: 1 spray in each nostril twice a day.", "en"),
        # the dose beside the age said back is still checked
        ("Uw dochter is 9, dus ze mag: viermaal daags 2 pufjes in elk neusgat.", "nl"),
    ],
)
def test_a_wrong_age_or_dose_beside_the_age_said_back_is_caught(answer: str, language: str) -> None:
    ctx = medical_context(_ASKED[language], language)
    assert report(answer, [_SPRAY[language]], language, ctx).ungrounded != []


# --- what the answer sets aside ("rather than the standard 10 mg") ------------------------------

_BANDS = {
    "en": "Zorvatide: adults 10 mg once daily. Patients weighing less than 60 kg: 5 mg once daily.",
    "nl": "Zorvatide: volwassenen 20 mg tweemaal daags. Bij een ernstige nierfunctiestoornis: "
    "20 mg eenmaal daags.",
    "vi": "Zorvatide: người lớn 20 mg x 2 lần/ngày. Người suy thận nặng: 20 mg x 1 lần/ngày.",
}


@pytest.mark.parametrize(
    ("answer", "language"),
    [
        (
            "Because she weighs less than 60 kg, she takes 5 mg once a day rather than the "
            "standard 10 mg.",
            "en",
        ),
        (
            "Bij een ernstige nierfunctiestoornis neemt hij 20 mg eenmaal daags in plaats van de "
            "gewone twee keer per dag.",
            "nl",
        ),
        ("Người suy thận nặng uống 20 mg x 1 lần/ngày, thay vì 2 lần/ngày như bình thường.", "vi"),
    ],
)
def test_the_dose_an_answer_sets_aside_is_no_claim(answer: str, language: str) -> None:
    assert report(answer, [_BANDS[language]], language).ungrounded == []


@pytest.mark.parametrize(
    ("answer", "language"),
    [
        # the dose given is the one set aside by the passage for this group
        ("Because she weighs less than 60 kg, she takes 10 mg once a day rather than 5 mg.", "en"),
        (
            "Bij een ernstige nierfunctiestoornis neemt hij 20 mg tweemaal daags in plaats van "
            "eenmaal daags.",
            "nl",
        ),
        ("Người suy thận nặng uống 40 mg x 1 lần/ngày, thay vì 20 mg.", "vi"),
        # "en niet meer dan" is a limit, not a rejection
        ("Volwassenen nemen 20 mg tweemaal daags, en niet meer dan 80 mg per dag.", "nl"),
    ],
)
def test_a_wrong_dose_beside_what_is_set_aside_is_caught(answer: str, language: str) -> None:
    got = report(answer, [_BANDS[language]], language)
    assert got.ungrounded != [] and critical(got)


# --- a sentence citing several documents, grounded by them together ---------------------------

_TOGETHER = {
    "en": [
        "Zorvatide is indicated only in adults, for muscle spasticity after a stroke.",
        "Zorvatide dosage: 150 to 450 mg daily, divided into 3 doses, after meals.",
        "Velotrine, oral: 8 mg every 12 hours, at most 16 mg a day, for no more than 7 days.",
    ],
    "nl": [
        "Zorvatide is alleen bestemd voor volwassenen met spierspasmen na een beroerte.",
        "Dosering van zorvatide: 150 tot 450 mg per dag, verdeeld over 3 giften, na de maaltijd.",
        "Velotrine, oraal: 8 mg om de 12 uur, ten hoogste 16 mg per dag, niet langer dan 7 dagen.",
    ],
    "vi": [
        "Zorvatide chỉ được chỉ định cho người lớn bị co cứng cơ sau đột quỵ.",
        "Liều dùng zorvatide: 150–450 mg mỗi ngày, chia làm 3 lần, uống sau bữa ăn.",
        "Velotrine đường uống: 8 mg mỗi 12 giờ, tối đa 16 mg/ngày, không dùng quá 7 ngày.",
    ],
}
_JOINT = {
    "en": "Zorvatide is only for adults with spasticity after a stroke, at 150 to 450 mg a day "
    "in 3 doses after meals {}.",
    "nl": "Zorvatide is alleen voor volwassenen met spierspasmen na een beroerte, 150 tot 450 mg "
    "per dag in 3 giften na de maaltijd {}.",
    "vi": "Zorvatide chỉ dùng cho người lớn bị co cứng cơ sau đột quỵ, liều 150 đến 450 mg mỗi "
    "ngày, chia làm 3 lần, uống sau bữa ăn {}.",
}


@pytest.mark.parametrize("language", ["en", "nl", "vi"])
def test_two_cited_passages_that_ground_a_sentence_together_are_supported(language: str) -> None:
    answer = _JOINT[language].format("[1, 2]")
    got = report(answer, _TOGETHER[language], language)
    assert got.unsupported_citations == [] and got.ungrounded == []


@pytest.mark.parametrize("language", ["en", "nl", "vi"])
def test_a_co_cited_passage_that_adds_nothing_is_unsupported(language: str) -> None:
    answer = _JOINT[language].format("[2, 3]")  # the other drug's passage beside the dose
    got = report(answer, _TOGETHER[language], language)
    assert [c.doc_id for c in got.unsupported_citations] == ["doc-2"]


@pytest.mark.parametrize(
    ("answer", "language"),
    [
        # a wrong dose: no cited passage grounds it, so neither is supported
        (
            "Zorvatide is only for adults with spasticity after a stroke, at 150 to 900 mg a day "
            "in 3 doses after meals [1, 2].",
            "en",
        ),
        (
            "Zorvatide chỉ dùng cho người lớn bị co cứng cơ sau đột quỵ, liều 150 đến 450 mg mỗi "
            "lần, chia làm 3 lần, uống sau bữa ăn [1, 2].",
            "vi",
        ),
    ],
)
def test_a_wrong_dose_citing_two_passages_is_still_caught(answer: str, language: str) -> None:
    got = report(answer, _TOGETHER[language], language)
    assert got.ungrounded != [] and critical(got)
    assert {c.doc_id for c in got.unsupported_citations} == {"doc-0", "doc-1"}


# --- Vietnamese: no compound across a word that joins clauses ("thì", "nếu", "vì") ------------

_STOP_IF = [
    "Không dùng zorvatide cho trẻ dưới 12 tuổi. Ngừng thuốc nếu bị phát ban hoặc khó thở.",
    "Zorvatide 20 mg: người lớn uống 1 viên mỗi ngày.",
]


@pytest.mark.parametrize(
    "answer",
    [
        "Nếu bị phát ban hoặc khó thở thì ngừng thuốc [1].",
        "Nếu bị phát ban thì phải ngừng thuốc [1].",
    ],
)
def test_a_condition_put_first_is_grounded_vi(answer: str) -> None:
    got = report(answer, _STOP_IF, "vi")
    assert got.ungrounded == [] and got.unsupported_citations == []


@pytest.mark.parametrize(
    "answer",
    [
        # another condition under the same frame, or another drug's advice
        "Nếu bị sốt cao thì ngừng thuốc [1].",
        "Nếu bị đau đầu thì ngừng thuốc [2].",
    ],
)
def test_another_condition_put_first_is_still_flagged_vi(answer: str) -> None:
    got = report(answer, _STOP_IF, "vi")
    assert got.ungrounded != [] or got.unsupported_citations != []
