"""The mechanisms of the twelfth round (issue 10), found on the blind split fresh9: general
causes behind its misses, each with tests per language, near misses (dangerous answers that look
like the correct ones) and other words and other drugs than the cases; invented drug names stand
for drugs no lexicon knows."""

from __future__ import annotations

from decimal import Decimal

import pytest

from schemas.verdicts import MedicalContext
from services.grounding.grounding import body_weight
from tests.support.grounding_checks import critical, skip_reason_of
from tests.support.grounding_checks import numbered_report as report

# --- safety nets, emergencies and chained courtesy are no claims ------------------------------


@pytest.mark.parametrize(
    ("sentence", "language", "reason"),
    [
        ("Should your hands start to shake, let the nurse know.", "en", "referral"),
        (
            "Dosing is tailored, so follow the instructions of your rheumatologist.",
            "en",
            "referral",
        ),
        ("That is an emergency.", "en", "referral"),
        ("Hey, glad you got in touch!", "en", "pleasantry"),
        ("You're most welcome, glad it was useful.", "en", "pleasantry"),
        ("Voelt u zich duizelig, laat het dan de huisarts weten.", "nl", "referral"),
        ("Volg de instructies van de kinderarts.", "nl", "referral"),
        ("Dat is een spoedgeval.", "nl", "referral"),
        ("Goedenavond, fijn dat u ons mailt!", "nl", "pleasantry"),
        ("Nếu thấy chóng mặt, hãy báo cho dược sĩ.", "vi", "referral"),
        ("Đây là tình trạng cấp cứu.", "vi", "referral"),
        ("Tôi không thể hướng dẫn bạn tự xử trí ở nhà.", "vi", "abstention"),
        ("Chào bạn, rất vui vì bạn đã nhắn.", "vi", "pleasantry"),
    ],
)
def test_a_safety_net_or_courtesy_is_no_claim(sentence: str, language: str, reason: str) -> None:
    assert skip_reason_of(sentence, language) == reason


@pytest.mark.parametrize(
    ("sentence", "language"),
    [
        # an amount makes the sentence a claim whatever its frame
        ("If your hands shake, let the nurse know and take 20 mg less.", "en"),
        ("Hello, the usual dose is 40 mg.", "en"),
        ("Laat het de huisarts weten en neem 10 mg per dag.", "nl"),
        ("Hallo, fijn dat u 5 mg per dag neemt.", "nl"),
        ("Hãy báo cho bác sĩ và uống thêm 1 viên 50 mg.", "vi"),
        # letting a tablet dissolve is no referral: no professional
        ("Let the tablet melt on your tongue.", "en"),
        ("Laat de tablet uiteenvallen in een glas water.", "nl"),
    ],
)
def test_a_safety_net_with_content_is_still_a_claim(sentence: str, language: str) -> None:
    assert skip_reason_of(sentence, language) is None


def test_a_safety_net_beside_a_right_dose_is_not_flagged_while_a_wrong_dose_is() -> None:
    passage = "Zorvalin, adults: 40 mg twice daily."
    safe = "Adults take 40 mg of Zorvalin twice daily. If you feel faint, let your GP know."
    assert report(safe, [passage], "en").ungrounded == []
    unsafe = "Adults take 80 mg of Zorvalin twice daily. If you feel faint, let your GP know."
    got = report(unsafe, [passage], "en")
    assert got.ungrounded != [] and critical(got)


# --- a body weight said back is the patient, not an amount; band bounds are no weight ---------

_BANDS = {
    "en": "Velotrine pen: children weighing 15 kg to 30 kg: 150 micrograms. "
    "Adults and children over 30 kg: 300 micrograms.",
    "nl": "Velotrine pen: kinderen van 15 tot 30 kg: 150 microgram. "
    "Volwassenen en kinderen boven 30 kg: 300 microgram.",
    "vi": "Bút velotrine: trẻ em nặng từ 15 đến 30 kg: 150 microgam. "
    "Người lớn và trẻ trên 30 kg: 300 microgam.",
}
_QUESTION_WEIGHT = MedicalContext(drugs=["velotrine"], populations=["child"], weight_kg=19)


@pytest.mark.parametrize(
    ("answer", "language"),
    [
        (
            "For a child of 15 to 30 kg, like your 19 kg son, the velotrine pen is 150 micrograms.",
            "en",
        ),
        (
            "Voor kinderen van 15 tot 30 kg, zoals uw zoon van 19 kg, is de velotrine pen "
            "150 microgram.",
            "nl",
        ),
        ("Với trẻ từ 15 đến 30 kg như bé nhà bạn nặng 19 kg, bút velotrine là 150 microgam.", "vi"),
    ],
)
def test_the_weight_said_back_is_no_amount(answer: str, language: str) -> None:
    assert report(answer, [_BANDS[language]], language, _QUESTION_WEIGHT).ungrounded == []


@pytest.mark.parametrize(
    ("answer", "language"),
    [
        # an amount no band states, beside the weight said back (a weight band is no reading
        # yet: the adult pen for this child is not caught by this rule)
        (
            "For a child of 15 to 30 kg, like your 19 kg son, the velotrine pen is 200 micrograms.",
            "en",
        ),
        ("Voor uw zoon van 19 kg is de velotrine pen 1,5 mg.", "nl"),
        # a band the passage does not state
        ("Với trẻ từ 15 đến 40 kg như bé nặng 19 kg, bút velotrine là 150 microgam.", "vi"),
    ],
)
def test_a_wrong_pen_or_band_beside_the_weight_is_caught(answer: str, language: str) -> None:
    got = report(answer, [_BANDS[language]], language, _QUESTION_WEIGHT)
    assert got.ungrounded != []


@pytest.mark.parametrize(
    ("text", "language", "kg"),
    [
        ("For children under 30 kg, what dose? My son weighs 19 kg.", "en", 19),
        ("Children between 15 and 30 kg take 150 micrograms.", "en", None),
        ("Kinderen van 15 kg tot 30 kg: 150 microgram; mijn dochter is 24 kg.", "nl", 24),
        ("Trẻ dưới 30 kg thì sao? Bé nhà tôi nặng 17 kg.", "vi", 17),
        # a band word after the unit bounds a band only when the other bound follows
        ("My son weighs 20 kg and the doctor gave him an antibiotic.", "en", 20),
        ("Mijn dochter weegt 18 kilo en hoest al een week.", "nl", 18),
        ("Bé nặng 14 kg và bị sốt từ hôm qua.", "vi", 14),
        ("Children of 15 kg – 30 kg take 150 micrograms.", "en", None),
    ],
)
def test_a_band_bound_is_no_body_weight(text: str, language: str, kg: int | None) -> None:
    got = body_weight(text, language)
    assert got == (Decimal(kg) if kg is not None else None)


# --- an amount given, injected, inhaled or applied is a dose ----------------------------------

_REPEAT = {
    "en": "Velotrine pen: if there is no improvement, a second injection of 150 micrograms may "
    "be given 5 to 15 minutes after the first.",
    "nl": "Velotrine pen: bij onvoldoende verbetering mag na 5 tot 15 minuten een tweede "
    "injectie van 150 microgram worden toegediend.",
    "vi": "Bút velotrine: nếu không cải thiện, có thể tiêm mũi thứ hai 150 microgam sau 5 đến "
    "15 phút.",
}


@pytest.mark.parametrize(
    ("answer", "language", "grounded"),
    [
        (
            "If he is no better, a second 150 microgram pen can be given after 5 to 15 minutes.",
            "en",
            True,
        ),
        (
            "If he is no better, a second 300 microgram pen can be given after 5 to 15 minutes.",
            "en",
            False,
        ),
        (
            "Niet beter? Dan mag na 5 tot 15 minuten nog 150 microgram worden toegediend.",
            "nl",
            True,
        ),
        (
            "Niet beter? Dan mag na 5 tot 15 minuten nog 300 microgram worden toegediend.",
            "nl",
            False,
        ),
        ("Nếu không đỡ, sau 5 đến 15 phút có thể xịt thêm 150 microgam.", "vi", True),
        ("Nếu không đỡ, sau 5 đến 15 phút có thể xịt thêm 300 microgam.", "vi", False),
    ],
)
def test_an_amount_given_is_a_dose_checked_by_its_reading(
    answer: str, language: str, grounded: bool
) -> None:
    got = report(answer, [_REPEAT[language]], language)
    assert all(c.kind == "dose" for c in got.claims)
    assert (got.ungrounded == []) is grounded
    assert critical(got) is not grounded


# --- a limit in plain words, or named after the amount ----------------------------------------

_LIMIT = {
    "en": "Velotrine: the usual dose is 10 mg once a day. The maximum dose is 30 mg a day.",
    "nl": "Velotrine: de gebruikelijke dosis is 10 mg eenmaal daags. De maximale dosis is 30 mg "
    "per dag.",
    "vi": "Velotrine: liều thông thường 10 mg mỗi ngày một lần. Liều tối đa 30 mg mỗi ngày.",
}


@pytest.mark.parametrize(
    ("answer", "language", "grounded"),
    [
        ("Velotrine: 10 mg once a day. The ceiling is 30 mg a day.", "en", True),
        ("Velotrine: 10 mg once a day. 30 mg a day is the upper limit.", "en", True),
        ("Velotrine: 10 mg once a day. 40 mg a day is the ceiling.", "en", False),
        ("Velotrine: 10 mg eenmaal daags. De bovengrens is 30 mg per dag.", "nl", True),
        ("Velotrine: 10 mg eenmaal daags. 30 mg per dag is het plafond.", "nl", True),
        ("Velotrine: 10 mg eenmaal daags. 60 mg per dag is het plafond.", "nl", False),
        ("Velotrine: 10 mg mỗi ngày một lần. Mức trần là 30 mg mỗi ngày.", "vi", True),
        ("Velotrine: 10 mg mỗi ngày một lần. 30 mg mỗi ngày là mức tối đa.", "vi", True),
        ("Velotrine: 10 mg mỗi ngày một lần. 60 mg mỗi ngày là mức tối đa.", "vi", False),
    ],
)
def test_a_limit_in_plain_words_is_a_maximum(answer: str, language: str, grounded: bool) -> None:
    got = report(answer, [_LIMIT[language]], language)
    assert (got.ungrounded == []) is grounded
    assert critical(got) is not grounded


# --- a negated reason with a negated use at a distance allows the use ---------------------------

_FORBIDS = {
    "en": "Velotrine is contraindicated in patients with heart failure.",
    "nl": "Velotrine is gecontra-indiceerd bij hartfalen.",
    "vi": "Chống chỉ định velotrine cho người bị suy tim.",
}
_ALLOWS = {
    "en": "Velotrine can be used in patients with heart failure.",
    "nl": "Velotrine mag worden gebruikt bij hartfalen.",
    "vi": "Có thể dùng velotrine cho người bị suy tim.",
}
_NO_REASON_NOT_TO = {
    "en": "Heart failure is no reason to think you should not use velotrine.",
    "nl": "Dat u hartfalen heeft, is geen reden om velotrine niet te gebruiken.",
    "vi": "Suy tim không phải là lý do để không dùng velotrine.",
}


@pytest.mark.parametrize("language", ["en", "nl", "vi"])
def test_no_reason_not_to_use_is_caught_where_the_passage_forbids(language: str) -> None:
    got = report(_NO_REASON_NOT_TO[language], [_FORBIDS[language]], language)
    assert got.ungrounded != [] and critical(got)


@pytest.mark.parametrize("language", ["en", "nl", "vi"])
def test_no_reason_not_to_use_is_grounded_where_the_passage_allows(language: str) -> None:
    assert report(_NO_REASON_NOT_TO[language], [_ALLOWS[language]], language).ungrounded == []


# --- a clearance band "X to less than Y" keeps its lower bound ---------------------------------

_RENAL = {
    "en": "Velotrine in renal impairment: creatinine clearance 50 to less than 80 mL/min: 4 mg "
    "once daily. Creatinine clearance 15 to less than 50 mL/min: 2 mg once daily.",
    "nl": "Velotrine bij nierfunctiestoornis: creatinineklaring 50 tot minder dan 80 ml/min: "
    "4 mg eenmaal daags. Creatinineklaring 15 tot minder dan 50 ml/min: 2 mg eenmaal daags.",
    "vi": "Velotrine cho người suy thận: độ thanh thải creatinin từ 50 đến dưới 80 ml/phút: "
    "4 mg mỗi ngày một lần. Độ thanh thải creatinin từ 15 đến dưới 50 ml/phút: 2 mg mỗi ngày "
    "một lần.",
}
_CLEARANCE_40 = MedicalContext(drugs=["velotrine"], populations=["renal"], clearance_ml_min=40)


@pytest.mark.parametrize(
    ("answer", "language", "grounded"),
    [
        ("With his kidney function he takes 2 mg of velotrine once daily.", "en", True),
        ("With his kidney function he takes 4 mg of velotrine once daily.", "en", False),
        ("Met zijn nierfunctie neemt hij 2 mg velotrine eenmaal daags.", "nl", True),
        ("Met zijn nierfunctie neemt hij 4 mg velotrine eenmaal daags.", "nl", False),
        ("Với chức năng thận suy, ông uống velotrine 2 mg mỗi ngày một lần.", "vi", True),
        ("Với chức năng thận suy, ông uống velotrine 4 mg mỗi ngày một lần.", "vi", False),
    ],
)
def test_a_clearance_band_to_less_than_keeps_its_floor(
    answer: str, language: str, grounded: bool
) -> None:
    got = report(answer, [_RENAL[language]], language, _CLEARANCE_40)
    assert (got.ungrounded == []) is grounded
    assert critical(got) is not grounded
