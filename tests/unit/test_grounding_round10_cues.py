"""The mechanisms of the tenth round (issue 10), found on the blind split fresh7: correct
answers and abstentions that were flagged, without losing a catch. Tests per language with near
misses (dangerous answers that look like the correct ones), written in other words and about
other drugs than the cases."""

from __future__ import annotations

from decimal import Decimal

import pytest

from services.grounding.grounding import medical_context
from services.grounding.medical.strength import strength_amounts
from services.grounding.quantities import amounts
from services.grounding.tokens import tokenize
from tests.support.grounding_checks import check_report, critical, skip_reason_of
from tests.support.grounding_checks import numbered_report as report

# --- a strength spread over a form, and an amount restated as a count in brackets ---------------


@pytest.mark.parametrize(
    ("sentence", "language", "form", "mg"),
    [
        ("Beclometasone 50 micrograms per metered dose.", "en", "puff", "0.050"),
        ("Each sachet: 10 g powder per sachet.", "en", "sachet", "10000"),
        ("Fluticason 50 microgram per afgemeten dosis.", "nl", "puff", "0.050"),
        ("Movicolon 13,8 g poeder per sachet.", "nl", "sachet", "13800"),
        ("Diosmectit 3 g bột mỗi gói.", "vi", "sachet", "3000"),
        ("Take 8 to 16 g (2 to 4 sachets) a day.", "en", "sachet", "4000"),
        ("Neem 5 g (1 sachet) per keer.", "nl", "sachet", "5000"),
        ("Uống 20–40 mg (1–2 viên) mỗi lần.", "vi", "tablet", "20"),
    ],
)
def test_a_strength_per_form_in_more_shapes(
    sentence: str, language: str, form: str, mg: str
) -> None:
    t = tokenize(sentence)
    got = {(unit, value) for unit, value, _ in strength_amounts(t, amounts(t, language))}
    assert (form, Decimal(mg)) in got


@pytest.mark.parametrize(
    ("sentence", "language"),
    [
        # the two ends of the range give two strengths: no strength
        ("Take 8 to 16 g (2 to 3 sachets) a day.", "en"),
        # "per day" spreads the amount over a day, not over a form
        ("Take 10 g per day of the powder.", "en"),
        ("Neem 10 g per dag, opgelost in water.", "nl"),
    ],
)
def test_no_strength_where_the_form_does_not_share_the_amount(sentence: str, language: str) -> None:
    t = tokenize(sentence)
    assert strength_amounts(t, amounts(t, language)) == []


_INHALER = (
    "Beclometasone 50 micrograms per metered dose. Adults: 2 puffs twice a day. "
    "Do not use more than 8 puffs a day."
)


def test_puffs_worked_out_in_micrograms_are_grounded() -> None:
    got = report("Take 2 puffs (100 micrograms) of beclometasone twice a day.", [_INHALER], "en")
    assert got.ungrounded == []
    got = report(
        "The most you can take is 400 micrograms of beclometasone a day.", [_INHALER], "en"
    )
    assert got.ungrounded == []


@pytest.mark.parametrize(
    "answer",
    [
        "Take 2 puffs (200 micrograms) of beclometasone twice a day.",  # the wrong strength
        "Take 2 puffs (100 mg) of beclometasone twice a day.",  # mg for micrograms
        "The most you can take is 800 micrograms of beclometasone a day.",  # a wrong maximum
    ],
)
def test_a_wrong_amount_beside_the_puffs_is_still_caught(answer: str) -> None:
    got = report(answer, [_INHALER], "en")
    assert got.ungrounded != [] and critical(got)


def test_a_strength_stated_for_one_drug_is_not_carried_to_another() -> None:
    salbutamol = (
        "Salbutamol 100 micrograms per actuation: one or two puffs as needed, up to 8 puffs a day."
    )
    answer = (
        "Take 2 puffs (100 micrograms) of beclometasone twice a day. "
        "Your salbutamol is different: 1 or 2 puffs when needed, up to 8 puffs a day."
    )
    assert report(answer, [_INHALER, salbutamol], "en").ungrounded == []


_SACHETS_NL = (
    "Colestipol 5 g granulaat per sachet. Volwassenen: begin met 5 g eenmaal daags. "
    "Ten hoogste 30 g per dag."
)


def test_sachets_restating_grams_are_grounded_nl() -> None:
    answer = "Begin met 5 g (1 sachet) eenmaal per dag; ten hoogste 30 g (6 sachets) per dag."
    assert report(answer, [_SACHETS_NL], "nl").ungrounded == []


@pytest.mark.parametrize(
    "answer",
    [
        "Begin met 10 g (2 sachets) eenmaal per dag.",  # the wrong starting dose
        "Ten hoogste 40 g (8 sachets) per dag.",  # the wrong maximum
        "Neem 5 g (1 sachet) per keer, ten hoogste 30 g per keer.",  # a day's maximum per dose
    ],
)
def test_a_wrong_sachet_dose_is_still_caught_nl(answer: str) -> None:
    got = report(answer, [_SACHETS_NL], "nl")
    assert got.ungrounded != [] and critical(got)


_SACHETS_VI = "Diosmectit 3 g bột mỗi gói. Người lớn: uống 3 gói mỗi ngày."


def test_a_day_in_grams_from_sachets_is_grounded_vi() -> None:
    answer = "Người lớn uống diosmectit 9 g mỗi ngày."
    assert report(answer, [_SACHETS_VI], "vi").ungrounded == []


def test_a_wrong_day_in_grams_is_still_caught_vi() -> None:
    got = report("Người lớn uống diosmectit 3 g mỗi ngày.", [_SACHETS_VI], "vi")
    assert got.ungrounded != [] and critical(got)


@pytest.mark.parametrize(
    ("answer", "passage", "language"),
    [
        (
            "Take one 250 mg tablet of chloroquine once a week.",
            "Chloroquine 250 mg tablets. Adults: one tablet once a week.",
            "en",
        ),
        (
            "Neem eenmaal per week 1 tablet van 70 mg alendroninezuur.",
            "Alendroninezuur 70 mg tabletten: 1 tablet eenmaal per week.",
            "nl",
        ),
    ],
)
def test_a_strength_still_backs_one_dose(answer: str, passage: str, language: str) -> None:
    assert report(answer, [passage], language).ungrounded == []


@pytest.mark.parametrize(
    ("answer", "passage", "language"),
    [
        (
            "Adults take 250 mg of chloroquine a day.",
            "Chloroquine 250 mg tablets. Adults: two tablets a day.",
            "en",
        ),
        (
            "U mag 70 mg alendroninezuur per dag nemen.",
            "Alendroninezuur 70 mg tabletten: 1 tablet eenmaal per week.",
            "nl",
        ),
    ],
)
def test_a_strength_does_not_back_a_days_amount(answer: str, passage: str, language: str) -> None:
    got = report(answer, [passage], language)
    assert got.ungrounded != [] and critical(got)


# --- a request to tell more is a question back; an elliptic reply is a yes or a no --------------


@pytest.mark.parametrize(
    ("sentence", "language"),
    [
        ("Tell me a bit more about when the cough started.", "en"),
        ("Please let us know which inhaler you use now.", "en"),
        ("Vertel eens wat meer over de uitslag.", "nl"),
        ("Laat u mij weten welke andere middelen u gebruikt.", "nl"),
        ("Bạn cho tôi biết thêm bé đang dùng thuốc gì nhé.", "vi"),
        ("Hãy cho mình biết bé nặng bao nhiêu ký nhé.", "vi"),
    ],
)
def test_a_request_to_tell_more_is_no_claim(sentence: str, language: str) -> None:
    assert skip_reason_of(sentence, language) == "question"


@pytest.mark.parametrize(
    ("sentence", "language"),
    [
        # a request that carries a dose or a contraindication is a claim
        ("Tell me if you take more than 3 g a day.", "en"),
        ("Vertel het als u zwanger bent, want dan mag u het niet gebruiken.", "nl"),
        # the documents telling something is a claim about the documents
        ("The leaflet tells me that loratadine is safe while breastfeeding.", "en"),
        ("Tài liệu cho tôi biết thuốc này dùng được cho trẻ em.", "vi"),
    ],
)
def test_a_request_with_content_is_still_a_claim(sentence: str, language: str) -> None:
    assert skip_reason_of(sentence, language) is None


@pytest.mark.parametrize(
    ("sentence", "language"),
    [
        ("No, that isn't needed.", "en"),
        ("Unfortunately not in your case.", "en"),
        ("Nee, dat is niet nodig.", "nl"),
        ("Helaas niet in uw geval.", "nl"),
        ("Không, không cần đâu ạ.", "vi"),
        ("Rất tiếc là không.", "vi"),
    ],
)
def test_an_elliptic_reply_is_no_claim(sentence: str, language: str) -> None:
    assert skip_reason_of(sentence, language) == "no_content"


@pytest.mark.parametrize(
    ("sentence", "language"),
    [
        ("No, not with warfarin.", "en"),
        ("Not while breastfeeding.", "en"),
        ("Nee, niet bij nierfalen.", "nl"),
        ("Nee, niet meer dan 2 per dag.", "nl"),
        ("Không, trẻ dưới 2 tuổi thì không.", "vi"),
        ("Không cần giảm liều.", "vi"),
    ],
)
def test_a_short_reply_with_content_is_still_a_claim(sentence: str, language: str) -> None:
    assert skip_reason_of(sentence, language) is None


@pytest.mark.parametrize(
    ("answer", "passage", "language"),
    [
        (
            "No, that isn't needed. You can keep taking lisinopril during pregnancy.",
            "Lisinopril is contraindicated in the second and third trimester of pregnancy.",
            "en",
        ),
        (
            "Nee, dat hoeft niet. U mag gewoon 3 maal daags 1 g metformine nemen.",
            "Metformine: ten hoogste 1 g tweemaal daags.",
            "nl",
        ),
        (
            "Không cần đâu. Bạn cứ dùng methotrexat 7,5 mg mỗi ngày.",
            "Methotrexat 7,5 mg mỗi tuần một lần.",
            "vi",
        ),
    ],
)
def test_the_claim_after_an_elliptic_reply_is_still_caught(
    answer: str, passage: str, language: str
) -> None:
    got = report(answer, [passage], language)
    assert got.ungrounded != [] and critical(got)


# --- a course in months; receiving a drug is using it --------------------------------------------

_NAILS = {
    "en": "Terbinafine 250 mg once daily for fungal nail infection: treatment lasts 3 months.",
    "nl": "Terbinafine 250 mg eenmaal daags bij kalknagels: de behandeling duurt 3 maanden.",
    "vi": "Terbinafin 250 mg ngày 1 lần trị nấm móng: điều trị trong 3 tháng.",
}


@pytest.mark.parametrize(
    ("answer", "language"),
    [
        ("Take terbinafine for 3 months.", "en"),
        ("Gebruik terbinafine gedurende drie maanden.", "nl"),
        ("Dùng terbinafin trong 3 tháng.", "vi"),
    ],
)
def test_a_course_in_months_is_grounded(answer: str, language: str) -> None:
    assert report(answer, [_NAILS[language]], language).ungrounded == []


@pytest.mark.parametrize(
    ("answer", "language"),
    [
        ("Take terbinafine for 6 months.", "en"),
        ("Take terbinafine for 4 weeks.", "en"),
        ("Gebruik terbinafine gedurende een maand.", "nl"),
        ("Dùng terbinafin trong 6 tháng.", "vi"),
    ],
)
def test_a_wrong_course_in_months_is_caught(answer: str, language: str) -> None:
    got = report(answer, [_NAILS[language]], language)
    assert got.ungrounded != [] and critical(got)


def test_a_course_shorter_than_a_minimum_in_months_is_caught() -> None:
    passage = (
        "Bij het starten van allopurinol wordt gedurende ten minste 6 maanden colchicine gegeven."
    )
    assert (
        report("U krijgt er de eerste 6 maanden colchicine bij.", [passage], "nl").ungrounded == []
    )
    got = report("U krijgt er de eerste 2 maanden colchicine bij.", [passage], "nl")
    assert got.ungrounded != [] and critical(got)
    english = "When allopurinol is started, colchicine is given for 6 months."
    got = report("Patients receive colchicine for the first 2 months.", [english], "en")
    assert got.ungrounded != [] and critical(got)


@pytest.mark.parametrize(
    ("sentence", "language"),
    [
        ("You get a headache for 2 months.", "en"),  # no drug: no course claim
        ("U krijgt geen last meer na 2 maanden.", "nl"),
    ],
)
def test_a_time_in_months_without_a_drug_is_no_course(sentence: str, language: str) -> None:
    from services.grounding.claims import atomic_claims

    assert all(not c.readings for c in atomic_claims(sentence, language))


# --- a drugless reading takes the one drug whose passages state its amount -----------------------

_TWO_PRODUCTS = [
    "Chloroquine 250 mg tablets for malaria prevention: one tablet once a week, continued for "
    "4 weeks after leaving the area.",
    "Proguanil for malaria prevention: two 100 mg tablets daily, continued for 4 weeks after "
    "leaving the area.",
]


def test_a_drugless_amount_is_bound_to_the_product_that_states_it() -> None:
    answer = (
        "Take one 250 mg tablet once a week. Keep taking it weekly for 4 weeks after you leave."
    )
    assert report(answer, _TWO_PRODUCTS, "en").ungrounded == []


@pytest.mark.parametrize(
    "answer",
    [
        # the other product's frequency for the amount of the first
        "Take one 250 mg tablet every day. Keep taking it for 4 weeks after you leave.",
        # the first product's amount, then a wrong course
        "Take one 250 mg tablet once a week. Keep taking it weekly for 8 weeks after you leave.",
    ],
)
def test_a_drugless_answer_with_a_wrong_figure_is_still_caught(answer: str) -> None:
    got = report(answer, _TWO_PRODUCTS, "en")
    assert got.ungrounded != [] and critical(got)


def test_a_drugless_amount_stated_by_two_drugs_stays_unbound_nl() -> None:
    passages = [
        "Cetirizine 10 mg: eenmaal daags 1 tablet.",
        "Loratadine 10 mg: eenmaal daags 1 tablet.",
    ]
    got = report("Neem eenmaal daags 10 mg.", passages, "nl")
    assert all(not r.drugs for c in got.claims for m in (c.medical or []) for r in [m.reading])


# --- the group a yes/no question asks about is the asker's ---------------------------------------


@pytest.mark.parametrize(
    ("question", "language", "group"),
    [
        ("My mum has kidney failure, can she take naproxen?", "en", "renal"),
        ("I'm breastfeeding, can I use this nasal spray?", "en", "breastfeeding"),
        ("Mijn moeder heeft een slechte nierfunctie, mag ze naproxen gebruiken?", "nl", "renal"),
        ("Ông tôi bị suy thận, uống naproxen được không?", "vi", "renal"),
        ("Tôi đang cho con bú, có dùng loratadin được không?", "vi", "breastfeeding"),
    ],
)
def test_a_yes_no_question_gives_its_group(question: str, language: str, group: str) -> None:
    assert group in medical_context(question, language).populations


@pytest.mark.parametrize(
    ("question", "language"),
    [
        # a statement about what the asker avoids is no group the question asks about
        ("I don't drink alcohol. Can I take metronidazole?", "en"),
        ("Tôi không uống rượu. Tôi uống metronidazol được không?", "vi"),
    ],
)
def test_a_statement_before_the_question_gives_no_risk_group(question: str, language: str) -> None:
    assert "alcohol" not in medical_context(question, language).populations


def test_the_asked_group_decides_the_dose_vi() -> None:
    passages = [
        "Naproxen: người lớn uống 250 đến 500 mg, ngày 2 lần.",
        "Naproxen: chống chỉ định ở người suy thận nặng.",
    ]
    ctx = medical_context("Ông tôi bị suy thận nặng, uống naproxen được không?", "vi")
    got = report("Ông bạn có thể uống naproxen 500 mg, ngày 2 lần.", passages, "vi", ctx)
    assert got.ungrounded != [] and critical(got)


@pytest.mark.parametrize(
    "question",
    [
        "Tôi bị suy thượng thận, uống hydrocortison thế nào?",
        "Mẹ tôi bị suy tuyến thượng thận. Uống hydrocortison ra sao?",
    ],
)
def test_adrenal_insufficiency_is_no_kidney_impairment_vi(question: str) -> None:
    assert "renal" not in medical_context(question, "vi").populations
    assert "renal" in medical_context(question.replace("thượng thận", "thận"), "vi").populations


# --- the count inside an interval phrase is the interval's own ------------------------------------


@pytest.mark.parametrize(
    ("answer", "passage", "language"),
    [
        (
            "Uống cefuroxim 250 mg, cứ 12 giờ một lần.",
            "Cefuroxim: người lớn uống 250 mg mỗi 12 giờ.",
            "vi",
        ),
        (
            "Nhỏ 1 giọt vào mỗi mắt, 6 giờ một lần.",
            "Cloramphenicol nhỏ mắt: 1 giọt mỗi 6 giờ.",
            "vi",
        ),
        (
            "Take 250 mg of cefuroxime once every 12 hours.",
            "Cefuroxime: adults take 250 mg every 12 hours.",
            "en",
        ),
    ],
)
def test_an_interval_with_its_count_is_grounded(answer: str, passage: str, language: str) -> None:
    assert report(answer, [passage], language).ungrounded == []


@pytest.mark.parametrize(
    ("answer", "passage", "language"),
    [
        (
            "Uống cefuroxim 250 mg, cứ 6 giờ một lần.",  # a wrong interval
            "Cefuroxim: người lớn uống 250 mg mỗi 12 giờ.",
            "vi",
        ),
        (
            "Uống cefuroxim 250 mg, cứ 12 giờ hai lần.",  # a count that is no interval's
            "Cefuroxim: người lớn uống 250 mg mỗi 12 giờ.",
            "vi",
        ),
    ],
)
def test_a_wrong_interval_with_its_count_is_caught(
    answer: str, passage: str, language: str
) -> None:
    assert report(answer, [passage], language).ungrounded != []


# --- a leaflet title's strength is no dose of the statement after its colon ----------------------

_TITLED = {
    "en": (
        "Cetirizine 10 mg tablets: {pol} while breastfeeding. Adults: 1 tablet once a day.",
        "can be used",
        "is not recommended",
        "Yes, you can use cetirizine while breastfeeding. Take 10 mg once a day.",
        "Yes, you can use cetirizine while breastfeeding. Take 20 mg once a day.",
        "I'm breastfeeding. Can I take cetirizine?",
    ),
    "nl": (
        "Loratadine 10 mg tabletten: {pol} tijdens de borstvoeding. Volwassenen: 1 tablet per dag.",
        "mag worden gebruikt",
        "mag niet worden gebruikt",
        "Ja, u mag loratadine gebruiken tijdens de borstvoeding. Neem 10 mg per dag.",
        "Ja, u mag loratadine gebruiken tijdens de borstvoeding. Neem 20 mg per dag.",
        "Ik geef borstvoeding. Mag ik loratadine nemen?",
    ),
    "vi": (
        "Loratadin 10 mg viên nén: {pol} cho phụ nữ cho con bú. Người lớn uống 1 viên mỗi ngày.",
        "có thể dùng",
        "không được dùng",
        "Bạn có thể dùng loratadin khi cho con bú. Uống 10 mg mỗi ngày.",
        "Bạn có thể dùng loratadin khi cho con bú. Uống 20 mg mỗi ngày.",
        "Tôi đang cho con bú. Tôi uống loratadin được không?",
    ),
}


@pytest.mark.parametrize("language", ["en", "nl", "vi"])
def test_a_titled_safety_statement_backs_the_answer(language: str) -> None:
    passage, allowed, _, right, _, question = _TITLED[language]
    ctx = medical_context(question, language)
    got = report(right, [passage.format(pol=allowed)], language, ctx)
    assert got.ungrounded == []


@pytest.mark.parametrize("language", ["en", "nl", "vi"])
def test_a_titled_prohibition_still_catches_the_answer(language: str) -> None:
    passage, _, forbidden, right, _, question = _TITLED[language]
    ctx = medical_context(question, language)
    got = report(right, [passage.format(pol=forbidden)], language, ctx)
    assert got.ungrounded != [] and critical(got)


@pytest.mark.parametrize("language", ["en", "nl", "vi"])
def test_a_wrong_dose_beside_a_titled_statement_is_caught(language: str) -> None:
    passage, allowed, _, _, wrong, question = _TITLED[language]
    ctx = medical_context(question, language)
    got = report(wrong, [passage.format(pol=allowed)], language, ctx)
    assert got.ungrounded != [] and critical(got)


# --- a chunk that names no drug is about the drug of its sibling chunks --------------------------

_CHUNKS = {
    "en": (
        ("pil-varenicline-en-1", "Champix (varenicline): days 1 to 3: 0.5 mg once a day."),
        ("pil-varenicline-en-2", "From day 8 to the end of week 12: 1 mg twice a day."),
        "From day 8, take 1 mg of Champix twice a day.",
        "From day 8, take 2 mg of Champix twice a day.",
    ),
    "nl": (
        ("bijsluiter-vareniclin-nl-1", "Champix (varenicline): dag 1 tot 3: eenmaal daags 0,5 mg."),
        (
            "bijsluiter-vareniclin-nl-2",
            "Vanaf dag 8 tot het einde van week 12: tweemaal daags 1 mg.",
        ),
        "Neem vanaf dag 8 tweemaal daags 1 mg Champix.",
        "Neem vanaf dag 8 tweemaal daags 2 mg Champix.",
    ),
    "vi": (
        ("hdsd-vareniclin-vi-1", "Champix (vareniclin): ngày 1 đến 3: 0,5 mg ngày 1 lần."),
        ("hdsd-vareniclin-vi-2", "Từ ngày 8 đến hết tuần 12: 1 mg ngày 2 lần."),
        "Từ ngày 8, uống Champix 1 mg ngày 2 lần.",
        "Từ ngày 8, uống Champix 2 mg ngày 2 lần.",
    ),
}


@pytest.mark.parametrize("language", ["en", "nl", "vi"])
def test_a_chunk_naming_no_drug_backs_its_documents_drug(language: str) -> None:
    first, second, right, _ = _CHUNKS[language]
    assert check_report(right, [first, second], language).ungrounded == []


@pytest.mark.parametrize("language", ["en", "nl", "vi"])
def test_a_wrong_dose_against_the_sibling_chunk_is_caught(language: str) -> None:
    first, second, _, wrong = _CHUNKS[language]
    got = check_report(wrong, [first, second], language)
    assert got.ungrounded != [] and critical(got)


_OWN_DOSE = {
    "en": "Champix (varenicline): from day 8, 0.5 mg twice a day.",
    "nl": "Champix (varenicline): vanaf dag 8 tweemaal daags 0,5 mg.",
    "vi": "Champix (vareniclin): từ ngày 8 uống 0,5 mg ngày 2 lần.",
}


@pytest.mark.parametrize("language", ["en", "nl", "vi"])
def test_a_chunk_of_another_document_does_not_back_the_drug(language: str) -> None:
    # another document's chunk that names no drug the lexicon knows (another product's
    # leaflet) does not back this drug against its own leaflet
    first, second, right, _ = _CHUNKS[language]
    own = (first[0], _OWN_DOSE[language])
    other = (second[0].replace("varenicl", "cytisin"), second[1])
    got = check_report(right, [own, other], language)
    assert got.ungrounded != [] and critical(got)


@pytest.mark.parametrize(
    ("first", "second", "siblings"),
    [
        ("pil-nicotine-en-71", "pil-nicotine-en-72", True),
        ("bijsluiter-lactulose-nl-3", "bijsluiter-lactulose-nl-4", True),
        ("hdsd-tenofovir-vi-72", "hdsd-tenofovir-vi-73", True),
        ("pil-nicotine-en-71", "pil-cytisine-en-71", False),
        # ids that number results, not documents, say nothing of what a passage is about
        ("doc-0", "doc-1", False),
        ("chunk_3", "chunk_4", False),
    ],
)
def test_chunks_of_one_document_by_their_ids(first: str, second: str, siblings: bool) -> None:
    from services.grounding.evidence import _stem

    same = _stem(first) is not None and _stem(first) == _stem(second)
    assert same is siblings


# --- an interval of more than a day; a score is no child -----------------------------------------

_EVERY_48 = {
    "en": "Entecavir: in moderate renal impairment, 0.5 mg every 48 hours.",
    "nl": "Entecavir: bij matige nierfunctiestoornis 0,5 mg elke 48 uur.",
    "vi": "Entecavir ở người suy thận vừa: 0,5 mg mỗi 48 giờ.",
}


@pytest.mark.parametrize(
    ("answer", "language"),
    [
        ("Take 0.5 mg of entecavir once every 48 hours.", "en"),
        ("Neem elke 48 uur 0,5 mg entecavir.", "nl"),
        ("Uống entecavir 0,5 mg mỗi 48 giờ.", "vi"),
        ("Uống entecavir 0,5 mg, cứ 48 giờ một lần.", "vi"),
    ],
)
def test_an_interval_of_two_days_is_grounded(answer: str, language: str) -> None:
    assert report(answer, [_EVERY_48[language]], language).ungrounded == []


@pytest.mark.parametrize(
    ("answer", "language"),
    [
        ("Take 0.5 mg of entecavir every day.", "en"),
        ("Neem elke dag 0,5 mg entecavir.", "nl"),
        ("Uống entecavir 0,5 mg mỗi ngày.", "vi"),
        ("Uống entecavir 0,5 mg mỗi 72 giờ.", "vi"),
        ("Uống entecavir 1 mg mỗi 48 giờ.", "vi"),
    ],
)
def test_a_daily_dose_against_every_48_hours_is_caught(answer: str, language: str) -> None:
    got = report(answer, [_EVERY_48[language]], language)
    assert got.ungrounded != [] and critical(got)


@pytest.mark.parametrize(
    ("question", "language"),
    [
        ("I have liver cirrhosis, Child-Pugh 8. Can I take this?", "en"),
        ("Mijn vader heeft levercirrose, Child-Pugh 9. Welke dosis?", "nl"),
        ("Tôi bị xơ gan, Child-Pugh 7. Uống liều bao nhiêu?", "vi"),
    ],
)
def test_a_child_pugh_score_is_no_child(question: str, language: str) -> None:
    ctx = medical_context(question, language)
    assert "child" not in ctx.populations and ctx.age_min_years is None


def test_a_child_with_an_age_is_still_a_child() -> None:
    ctx = medical_context("My child is 8. How much ibuprofen?", "en")
    assert "child" in ctx.populations and ctx.age_min_years == 8


# --- morning and evening are twice a day ---------------------------------------------------------

_TWICE = {
    "en": "Metformin: 500 mg twice a day with meals.",
    "nl": "Metformine: tweemaal daags 500 mg bij de maaltijd.",
    "vi": "Metformin: uống 500 mg, ngày 2 lần, trong bữa ăn.",
}
_MORNING_EVENING = {
    "en": "Metformin: 500 mg every morning and evening with meals.",
    "nl": "Metformine: 's ochtends en 's avonds 500 mg bij de maaltijd.",
    "vi": "Metformin: uống 500 mg sáng và tối, trong bữa ăn.",
}


@pytest.mark.parametrize(
    ("answer", "language"),
    [
        ("Take 500 mg of metformin every morning and evening.", "en"),
        ("Take 500 mg of metformin in the morning and in the evening.", "en"),
        ("Neem 's ochtends en 's avonds 500 mg metformine.", "nl"),
        ("Uống metformin 500 mg sáng và tối.", "vi"),
    ],
)
def test_morning_and_evening_is_twice_a_day(answer: str, language: str) -> None:
    assert report(answer, [_TWICE[language]], language).ungrounded == []


@pytest.mark.parametrize(
    ("answer", "language"),
    [
        ("Take 500 mg of metformin once a day.", "en"),
        ("Take 500 mg of metformin every morning.", "en"),
        ("Neem eenmaal daags 500 mg metformine.", "nl"),
        ("Neem elke avond 500 mg metformine.", "nl"),
        ("Uống metformin 500 mg mỗi ngày 1 lần.", "vi"),
        ("Uống metformin 500 mg mỗi tối.", "vi"),
    ],
)
def test_once_a_day_against_morning_and_evening_is_caught(answer: str, language: str) -> None:
    got = report(answer, [_MORNING_EVENING[language]], language)
    assert got.ungrounded != [] and critical(got)
