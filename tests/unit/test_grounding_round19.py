"""The mechanisms of the nineteenth round (issue 10): statements the claim check read wrongly
in fresh16's answers, in sentences of our own in English, Dutch and Vietnamese, with invented
brand names (Lyrex, Tavomin), and for every rule a twin with a wrong value that must still be
flagged."""

from __future__ import annotations

import pytest

from services.grounding.grounding import medical_context
from tests.support.grounding_checks import critical, skip_reason_of
from tests.support.grounding_checks import numbered_report as report

# --- a recommendation beside a negated dose change is about the change ---------------------

_NO_CHANGE = [
    (
        [
            "Lyrex 50 mg tablets: one tablet once daily. No dose adjustment is recommended in "
            "mild or moderate renal impairment."
        ],
        "With moderate kidney disease you must not take Lyrex.",
        "With moderate kidney disease Lyrex can be used; the dose does not need to be lowered.",
        "en",
    ),
    (
        [
            "Lyrex 50 mg tabletten: eenmaal daags 1 tablet. Bij een licht of matig verminderde "
            "nierfunctie wordt geen dosisaanpassing aanbevolen."
        ],
        "Met een matig verminderde nierfunctie mag u Lyrex niet gebruiken.",
        "Met een matig verminderde nierfunctie mag u Lyrex gewoon gebruiken; de dosis hoeft "
        "niet omlaag.",
        "nl",
    ),
    (
        [
            "Lyrex 50 mg: uống 1 viên mỗi ngày một lần. Không khuyến cáo điều chỉnh liều ở người "
            "suy thận nhẹ hoặc vừa."
        ],
        "Người suy thận vừa không được dùng Lyrex.",
        "Người suy thận vừa vẫn có thể dùng Lyrex, không cần giảm liều.",
        "vi",
    ),
]


@pytest.mark.parametrize(("passages", "flipped", "right", "language"), _NO_CHANGE)
def test_no_dose_adjustment_recommended_allows_the_use(
    passages: list[str], flipped: str, right: str, language: str
) -> None:
    assert critical(report(flipped, passages, language))
    assert not critical(report(right, passages, language))


# --- a day's total in the answer's own words ------------------------------------------------

_SPREAD = [
    (
        [
            "Tavomin 250 mg tablets. Adults: 250 mg twice a day, one in the morning and one "
            "at night."
        ],
        "Take one 250 mg Tavomin tablet in the morning and another at night, so 500 mg "
        "spread over the day.",
        "Take one 250 mg Tavomin tablet in the morning and another at night, so 750 mg "
        "spread over the day.",
        "en",
    ),
    (
        ["Tavomin 250 mg tabletten. Volwassenen: tweemaal daags 250 mg, 's ochtends en 's avonds."],
        "Neem 's ochtends een tablet Tavomin van 250 mg en 's avonds nog een, samen 500 mg over "
        "de hele dag.",
        "Neem 's ochtends een tablet Tavomin van 250 mg en 's avonds nog een, samen 750 mg over "
        "de hele dag.",
        "nl",
    ),
]


@pytest.mark.parametrize(("passages", "right", "wrong", "language"), _SPREAD)
def test_a_total_spread_over_the_day_is_a_days_amount(
    passages: list[str], right: str, wrong: str, language: str
) -> None:
    assert not critical(report(right, passages, language))
    assert critical(report(wrong, passages, language))


# --- a passage's one exact count of doses beside a bound on how often -----------------------

_COUNT_AND_BOUND = [
    (
        [
            "Tavomin syrup 10 mg/5 ml. Children over 2 years: 3 times a day, at least 6 hours "
            "apart; children of 10 to 20 kg: 4 ml per dose."
        ],
        "For a child of 14 kg the syrup is 4 ml per dose, 3 times a day, so 12 ml a day.",
        "For a child of 14 kg the syrup is 4 ml per dose, 3 times a day, so 16 ml a day.",
        "en",
    ),
    (
        [
            "Tavomin siroop 10 mg/5 ml. Kinderen vanaf 2 jaar: 3 maal per dag, minstens 6 uur "
            "tussen de doses; kinderen van 10 tot 20 kg: 4 ml per keer."
        ],
        "Voor een kind van 14 kg is het 4 ml per keer, 3 maal per dag, dus 12 ml per dag.",
        "Voor een kind van 14 kg is het 4 ml per keer, 3 maal per dag, dus 16 ml per dag.",
        "nl",
    ),
    (
        [
            "Siro Tavomin 10 mg/5 ml. Trẻ em trên 2 tuổi: ngày 3 lần, cách nhau ít nhất 6 giờ; "
            "trẻ 10–20 kg: 4 ml/lần."
        ],
        "Trẻ 14 kg uống 4 ml mỗi lần, ngày 3 lần, tức là 12 ml mỗi ngày.",
        "Trẻ 14 kg uống 4 ml mỗi lần, ngày 3 lần, tức là 16 ml mỗi ngày.",
        "vi",
    ),
]


@pytest.mark.parametrize(("passages", "right", "wrong", "language"), _COUNT_AND_BOUND)
def test_a_days_total_uses_the_count_beside_a_bound(
    passages: list[str], right: str, wrong: str, language: str
) -> None:
    assert not critical(report(right, passages, language))
    assert critical(report(wrong, passages, language))


# --- a passage's dose for an age group backs the use in that group ----------------------------

_DOSED_GROUP = [
    (
        ["Tavomin 0.5 mg/ml eye drops. Adults and children from 6 years: 1 drop twice a day."],
        "Yes, Tavomin may be used from 6 years on, so also by your son of 8.",
        "Yes, Tavomin may be used from 3 years on, so also by your son of 4.",
        "en",
    ),
    (
        [
            "Tavomin 0,5 mg/ml oogdruppels. Volwassenen en kinderen vanaf 6 jaar: tweemaal "
            "daags 1 druppel."
        ],
        "Ja, Tavomin mag vanaf 6 jaar gebruikt worden, dus ook door uw zoon van 8.",
        "Ja, Tavomin mag vanaf 3 jaar gebruikt worden, dus ook door uw zoon van 4.",
        "nl",
    ),
    (
        [
            "Tavomin 0,5 mg/ml, thuốc nhỏ mắt. Người lớn và trẻ em từ 6 tuổi: nhỏ 1 giọt, "
            "ngày 2 lần."
        ],
        "Trẻ em từ 6 tuổi có thể dùng Tavomin, nên bé 8 tuổi dùng được.",
        "Trẻ em từ 3 tuổi có thể dùng Tavomin, nên bé 4 tuổi dùng được.",
        "vi",
    ),
]


@pytest.mark.parametrize(("passages", "right", "wrong", "language"), _DOSED_GROUP)
def test_a_dose_for_an_age_group_backs_its_use_there(
    passages: list[str], right: str, wrong: str, language: str
) -> None:
    assert not critical(report(right, passages, language))
    assert critical(report(wrong, passages, language))


# --- a cited leaflet of another product supports nothing of the sentence ----------------------

_OTHER_PRODUCT = [
    (
        [
            "Lyclear (permethrin 1%) cream rinse for head lice: apply to towel-dried hair, leave "
            "on for 10 minutes, then rinse with water.",
            "Fullmarks (phenothrin 0.2%) lotion for head lice: apply to towel-dried hair, leave "
            "on for 10 minutes, then rinse with water.",
        ],
        "Put Lyclear on towel-dried hair, leave it on for 10 minutes and rinse with water",
        "en",
    ),
    (
        [
            "Lyclear (permetrine 1%) crèmespoeling tegen hoofdluis: aanbrengen op handdoekdroog "
            "haar, 10 minuten laten inwerken en daarna uitspoelen met water.",
            "Fullmarks (fenothrine 0,2%) lotion tegen hoofdluis: aanbrengen op handdoekdroog "
            "haar, 10 minuten laten inwerken en daarna uitspoelen met water.",
        ],
        "Breng Lyclear aan op handdoekdroog haar, laat het 10 minuten inwerken en spoel het "
        "daarna uit met water",
        "nl",
    ),
    (
        [
            "Lyclear (permethrin 1%) dầu xả trị chấy: thoa lên tóc đã lau khô, để 10 phút rồi "
            "xả sạch bằng nước.",
            "Fullmarks (phenothrin 0,2%) dung dịch trị chấy: thoa lên tóc đã lau khô, để 10 "
            "phút rồi xả sạch bằng nước.",
        ],
        "Thoa Lyclear lên tóc đã lau khô, để 10 phút rồi xả sạch bằng nước",
        "vi",
    ),
]


@pytest.mark.parametrize(("passages", "sentence", "language"), _OTHER_PRODUCT)
def test_a_cited_leaflet_of_another_product_is_unsupported(
    passages: list[str], sentence: str, language: str
) -> None:
    right = report(f"{sentence} [doc:doc-0].", passages, language)
    wrong = report(f"{sentence} [doc:doc-1].", passages, language)
    assert not right.unsupported_citations
    assert [i.doc_id for i in wrong.unsupported_citations] == ["doc-1"]


# --- what a product holds per gram is a concentration, not a dose -----------------------------

_HOLDS = [
    (
        [
            "Psorivex ointment contains 50 micrograms of calcipotriol per gram. Apply twice a "
            "day; use no more than 100 g of ointment a week."
        ],
        "Psorivex contains 50 micrograms of calcipotriol per gram of ointment.",
        "Psorivex contains 50 milligrams of calcipotriol per gram of ointment.",
        "en",
    ),
    (
        [
            "Psorivex zalf bevat 50 microgram calcipotriol per gram zalf. Tweemaal per dag "
            "aanbrengen; gebruik niet meer dan 100 g zalf per week."
        ],
        "Psorivex bevat 50 microgram calcipotriol per gram zalf.",
        "Psorivex bevat 50 milligram calcipotriol per gram zalf.",
        "nl",
    ),
    (
        [
            "Psorivex thuốc mỡ chứa 50 microgam calcipotriol trong mỗi gam. Bôi ngày 2 lần; "
            "không dùng quá 100 g thuốc mỡ mỗi tuần."
        ],
        "Psorivex chứa 50 microgam calcipotriol trong mỗi gam thuốc mỡ.",
        "Psorivex chứa 50 mg calcipotriol trong mỗi gam thuốc mỡ.",
        "vi",
    ),
]


@pytest.mark.parametrize(("passages", "right", "wrong", "language"), _HOLDS)
def test_what_a_product_holds_per_gram_is_no_dose(
    passages: list[str], right: str, wrong: str, language: str
) -> None:
    assert not report(right, passages, language).ungrounded
    assert critical(report(wrong, passages, language))


# --- a dose per kg worked out for a weight stays under its sentence's maximum -----------------

_CAPPED = [
    (
        [
            "Tavomin 500 mg tablets. The maximum daily dose is 1,500 mg or 30 mg/kg, whichever "
            "is lower."
        ],
        "I weigh {kg} kg. What is the most Tavomin I can take in a day?",
        "At {kg} kg your ceiling is {mg} mg a day.",
        "en",
    ),
    (
        [
            "Tavomin 500 mg tabletten. De maximale dagdosis is 1.500 mg of 30 mg/kg, "
            "afhankelijk van wat lager is."
        ],
        "Ik weeg {kg} kg. Hoeveel Tavomin mag ik maximaal per dag nemen?",
        "Bij {kg} kg is uw maximum {mg} mg per dag.",
        "nl",
    ),
    (
        [
            "Tavomin 500 mg viên nén. Liều tối đa mỗi ngày là 1.500 mg hoặc 30 mg/kg, tùy mức "
            "nào thấp hơn."
        ],
        "Tôi nặng {kg} kg. Mỗi ngày tôi uống Tavomin tối đa bao nhiêu?",
        "Với {kg} kg, liều tối đa của bạn là {mg} mg mỗi ngày.",
        "vi",
    ),
]


@pytest.mark.parametrize(("passages", "question", "answer", "language"), _CAPPED)
def test_a_dose_worked_out_for_a_weight_stays_under_the_maximum(
    passages: list[str], question: str, answer: str, language: str
) -> None:
    def checked(kg: int, mg: str) -> bool:
        context = medical_context(question.format(kg=kg), language)
        return critical(report(answer.format(kg=kg, mg=mg), passages, language, context))

    assert not checked(40, "1.200" if language != "en" else "1,200")  # 30 mg/kg × 40 kg
    assert checked(70, "2.100" if language != "en" else "2,100")  # 30 × 70, over 1,500 mg


# --- a heading's one strength is its dose form's, the form named later -----------------------

_HEADED = [
    (
        [
            "Loperamide Instant 2 mg (loperamide), orodispersible tablets that melt on the "
            "tongue without water. Adults: 2 tablets at first, at most 8 tablets in 24 hours."
        ],
        "With loperamide 2 mg, take 2 tablets at first.",
        "With loperamide 2 mg, take 3 tablets at first.",
        "en",
    ),
    (
        [
            "Loperamide Smelt 2 mg (loperamide), tabletten die zonder water op de tong "
            "smelten. Volwassenen: 2 tabletten per keer, hoogstens 8 tabletten per 24 uur."
        ],
        "Van loperamide 2 mg neemt u 2 tabletten per keer.",
        "Van loperamide 2 mg neemt u 3 tabletten per keer.",
        "nl",
    ),
    (
        [
            "Loperamid Instant 2 mg (loperamid), viên ngậm tan trên lưỡi không cần nước. Người "
            "lớn: lúc đầu uống 2 viên, tối đa 8 viên trong 24 giờ."
        ],
        "Với loperamid 2 mg, lúc đầu bạn uống 2 viên.",
        "Với loperamid 2 mg, lúc đầu bạn uống 3 viên.",
        "vi",
    ),
]


@pytest.mark.parametrize(("passages", "right", "wrong", "language"), _HEADED)
def test_a_headings_strength_counts_the_form_it_names_later(
    passages: list[str], right: str, wrong: str, language: str
) -> None:
    assert not critical(report(right, passages, language))
    assert critical(report(wrong, passages, language))


# --- verbs of applying a drops, cream or spray are verbs of use --------------------------------

_APPLIED = [
    (
        [
            "Tavomin 0.1% eye drops. One drop three times a day. Tavomin can be used while "
            "wearing contact lenses."
        ],
        "You must not instil Tavomin while wearing contact lenses.",
        "You can instil Tavomin while wearing contact lenses.",
        "en",
    ),
    (
        [
            "Tavomin 0,1% oogdruppels. Driemaal daags 1 druppel. Tavomin mag worden gebruikt "
            "bij het dragen van contactlenzen."
        ],
        "Druppel Tavomin niet bij het dragen van contactlenzen.",
        "U kunt Tavomin gewoon druppelen bij het dragen van contactlenzen.",
        "nl",
    ),
    (
        [
            "Tavomin 0,1%, dung dịch nhỏ mắt. Nhỏ 1 giọt, ngày 3 lần. Có thể dùng Tavomin khi "
            "đang đeo kính áp tròng."
        ],
        "Không được nhỏ Tavomin khi đang đeo kính áp tròng.",
        "Có thể nhỏ Tavomin khi đang đeo kính áp tròng.",
        "vi",
    ),
]


@pytest.mark.parametrize(("passages", "flipped", "right", "language"), _APPLIED)
def test_a_negated_verb_of_applying_is_a_safety_claim(
    passages: list[str], flipped: str, right: str, language: str
) -> None:
    assert critical(report(flipped, passages, language))
    assert not critical(report(right, passages, language))


# --- an age band that heads a row of a dosing table is an age ---------------------------------

_TABLE = [
    (
        [
            "Tavomin 0.25 mg tablets. Where the drinking water holds little fluoride, the dose "
            "per day: 6 months to 3 years: 0.25 mg; 3 to 6 years: 0.5 mg; 6 to 16 years: 1 mg."
        ],
        "My son is 4. How much Tavomin should he have?",
        "For your 4-year-old the dose is {mg} mg of Tavomin a day.",
        "en",
    ),
    (
        [
            "Tavomin 0,25 mg tabletten. Dosis per dag: 6 maanden tot 3 jaar: 0,25 mg; 3 tot 6 "
            "jaar: 0,5 mg; 6 tot 16 jaar: 1 mg."
        ],
        "Mijn zoon van 4, hoeveel Tavomin mag hij hebben?",
        "Voor uw zoon van 4 is de dosis {mg} mg Tavomin per dag.",
        "nl",
    ),
]


@pytest.mark.parametrize(("passages", "question", "answer", "language"), _TABLE)
def test_an_age_band_heading_a_table_row_is_an_age(
    passages: list[str], question: str, answer: str, language: str
) -> None:
    context = medical_context(question, language)
    right = "0.5" if language == "en" else "0,5"
    assert not critical(report(answer.format(mg=right), passages, language, context))
    assert critical(report(answer.format(mg="1"), passages, language, context))


# --- an amount of a salt is compared as its active part ---------------------------------------

_SALT = [
    (
        [
            "Tavomin (sodium fluoride) 2.2 mg chewable tablets; each tablet provides 1 mg of "
            "fluoride.",
            "Tavomin, fluoride per day: 3 to 6 years: 0.5 mg; 6 to 16 years: 1 mg.",
        ],
        "My son is 8. How much Tavomin should he have?",
        "For your 8-year-old that is {n} mg of sodium fluoride a day, as Tavomin.",
        ("2.2", "4.4"),
        "en",
    ),
    (
        [
            "Tavomin (natriumfluoride) 2,2 mg kauwtabletten; elke tablet levert 1 mg fluoride.",
            "Tavomin, fluoride per dag: 3 tot 6 jaar: 0,5 mg; 6 tot 16 jaar: 1 mg.",
        ],
        "Mijn zoon van 8, hoeveel Tavomin moet hij hebben?",
        "Voor uw zoon van 8 is dat Tavomin met {n} mg natriumfluoride per dag.",
        ("2,2", "4,4"),
        "nl",
    ),
    (
        [
            "Tavomin (natri fluorid) 2,2 mg viên nhai; mỗi viên cung cấp 1 mg fluorid.",
            "Tavomin, lượng fluorid mỗi ngày: trẻ 3 đến 6 tuổi: 0,5 mg; trẻ 6 đến 16 tuổi: 1 mg.",
        ],
        "Con tôi 8 tuổi, uống Tavomin bao nhiêu?",
        "Cháu 8 tuổi uống Tavomin, {n} mg natri fluorid mỗi ngày.",
        ("2,2", "4,4"),
        "vi",
    ),
]


@pytest.mark.parametrize(("passages", "question", "answer", "counts", "language"), _SALT)
def test_an_amount_of_the_salt_is_compared_as_its_active_part(
    passages: list[str], question: str, answer: str, counts: tuple[str, str], language: str
) -> None:
    context = medical_context(question, language)
    right, wrong = (answer.format(n=n) for n in counts)
    assert not critical(report(right, passages, language, context))
    assert critical(report(wrong, passages, language, context))


def test_the_salts_amount_said_of_the_active_part_is_still_flagged() -> None:
    passages, question = _SALT[0][0], _SALT[0][1]
    context = medical_context(question, "en")
    answer = "For your 8-year-old that is 2.2 mg of fluoride a day."  # the salt's figure
    assert critical(report(answer, passages, "en", context))


# --- stopping a medicine in other words -------------------------------------------------------

_STOPPING = [
    (
        [
            "Do not stop taking Tavomin suddenly. Stopping abruptly can cause discontinuation "
            "symptoms such as dizziness and sleep problems. Your doctor will reduce the dose "
            "gradually."
        ],
        "Quitting Tavomin all at once can bring on withdrawal effects like dizziness and "
        "trouble sleeping.",
        "Quitting Tavomin all at once can bring on seizures and loss of hair.",
        "en",
    ),
    (
        [
            "Stop niet plotseling met Tavomin. Abrupt stoppen kan onttrekkingsverschijnselen "
            "geven, zoals duizeligheid en slaapproblemen."
        ],
        "Van de ene op de andere dag stoppen met Tavomin kan ontwenningsklachten geven, zoals "
        "duizeligheid en slecht slapen.",
        "Van de ene op de andere dag stoppen met Tavomin kan epileptische aanvallen en "
        "haaruitval geven.",
        "nl",
    ),
    (
        [
            "Không ngừng Tavomin đột ngột. Ngừng thuốc đột ngột có thể gây hội chứng cai thuốc "
            "như chóng mặt và mất ngủ."
        ],
        "Bỏ ngang Tavomin có thể gây triệu chứng cai thuốc như chóng mặt, khó ngủ.",
        "Bỏ ngang Tavomin có thể gây co giật và rụng tóc.",
        "vi",
    ),
]


@pytest.mark.parametrize(("passages", "right", "wrong", "language"), _STOPPING)
def test_stopping_a_medicine_in_other_words(
    passages: list[str], right: str, wrong: str, language: str
) -> None:
    assert not report(right, passages, language).ungrounded
    assert report(wrong, passages, language).ungrounded


# --- congratulations are courtesy, not a claim ------------------------------------------------


@pytest.mark.parametrize(
    ("sentence", "language"),
    [
        ("Congratulations on your little one!", "en"),
        ("Gefeliciteerd met jullie kleine!", "nl"),
        ("Chúc mừng chị và bé!", "vi"),
    ],
)
def test_congratulations_are_no_claim(sentence: str, language: str) -> None:
    assert skip_reason_of(sentence, language) == "pleasantry"


# --- a sentence whose every dose is set aside states the passages' figure ---------------------

_CONTRASTED = [
    (
        [
            "Tavomin 150 mg tablets. Adults: 300 mg (2 tablets) twice a day. Moderate renal "
            "impairment: 150 mg (1 tablet) twice a day."
        ],
        "Her dose is therefore not the usual {n} tablets of Tavomin each time that most "
        "people get.",
        "en",
    ),
    (
        [
            "Tavomin 150 mg tabletten. Volwassenen: 300 mg (2 tabletten) tweemaal daags. Matig "
            "verminderde nierfunctie: 150 mg (1 tablet) tweemaal daags."
        ],
        "Zij neemt dus niet de gewone {n} tabletten Tavomin per keer.",
        "nl",
    ),
    (
        [
            "Tavomin 150 mg viên nén. Người lớn: 300 mg (2 viên), ngày 2 lần. Suy thận vừa: 150 mg "
            "(1 viên), ngày 2 lần."
        ],
        "Vì thận yếu, bà uống ít hơn, thay vì {n} viên Tavomin mỗi lần như những người khác.",
        "vi",
    ),
]


@pytest.mark.parametrize(("passages", "answer", "language"), _CONTRASTED)
def test_a_dose_set_aside_is_the_passages_figure(
    passages: list[str], answer: str, language: str
) -> None:
    assert not critical(report(answer.format(n=2), passages, language))
    assert critical(report(answer.format(n=3), passages, language))


# --- the question's risk stays on a dose the answer gives for adults ---------------------------

_ASKED_RISK = [
    (
        [
            "Tavomin powder for injection. Adults: 1–2 g every 8 hours, at most 12 g a day. "
            "Creatinine clearance below 20 ml/min: 0.5–1 g every 8 hours."
        ],
        "My father is 80 and his creatinine clearance is 15 ml/min. What dose of Tavomin?",
        "Your father takes the usual adult dose of Tavomin: 1–2 g every 8 hours.",
        "Adults usually take 1–2 g of Tavomin every 8 hours; with a creatinine clearance of "
        "15 ml/min your father takes 0.5–1 g every 8 hours.",
        "en",
    ),
    (
        [
            "Tavomin poeder voor injectie. Volwassenen: 1–2 g elke 8 uur, maximaal 12 g per dag. "
            "Creatinineklaring onder 20 ml/min: 0,5–1 g elke 8 uur."
        ],
        "Mijn vader is 80 en zijn creatinineklaring is 15 ml/min. Welke dosis Tavomin?",
        "Uw vader krijgt de gewone dosis voor volwassenen: 1–2 g Tavomin elke 8 uur.",
        "Volwassenen krijgen meestal 1–2 g Tavomin elke 8 uur; met een creatinineklaring van "
        "15 ml/min krijgt uw vader 0,5–1 g elke 8 uur.",
        "nl",
    ),
    (
        [
            "Tavomin bột pha tiêm. Người lớn: 1–2 g mỗi 8 giờ, tối đa 12 g/ngày. Độ thanh thải "
            "creatinin dưới 20 ml/phút: 0,5–1 g mỗi 8 giờ."
        ],
        "Bố tôi 80 tuổi, độ thanh thải creatinin 15 ml/phút. Tiêm Tavomin liều thế nào?",
        "Bố bạn dùng liều người lớn thông thường: Tavomin 1–2 g mỗi 8 giờ.",
        "Người lớn thường dùng Tavomin 1–2 g mỗi 8 giờ; với độ thanh thải creatinin 15 "
        "ml/phút, bố bạn dùng 0,5–1 g mỗi 8 giờ.",
        "vi",
    ),
]


@pytest.mark.parametrize(("passages", "question", "wrong", "right", "language"), _ASKED_RISK)
def test_the_questions_risk_stays_on_an_adult_dose(
    passages: list[str], question: str, wrong: str, right: str, language: str
) -> None:
    context = medical_context(question, language)
    assert critical(report(wrong, passages, language, context))
    assert not critical(report(right, passages, language, context))
