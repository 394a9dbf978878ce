"""The mechanisms of the thirteenth round (issue 10): general causes of correct answers flagged as
ungrounded across fresh3..fresh10, each with own sentences in English, Dutch and Vietnamese and
near misses (a changed fact that must still fail); invented drug names stand for drugs no
lexicon knows."""

from __future__ import annotations

import pytest

from services.grounding.quantities import quantities
from services.grounding.text import claim_units, passage_units
from tests.support.grounding_checks import numbered_report as report
from tests.support.grounding_checks import skip_reason_of


def _support(claim: str, passage: str, language: str) -> float:
    units = claim_units(claim, language)
    return len(units & passage_units(passage, language)) / len(units)


# --- lay-medical concept families: the same advice in other words -----------------------------


@pytest.mark.parametrize(
    ("claim", "passage", "language"),
    [
        ("Leave a gap of six hours.", "Wait six hours between doses.", "en"),
        ("Discard the rest of the milk.", "Throw away the rest of the milk.", "en"),
        ("It may increase your appetite.", "It can increase hunger.", "en"),
        ("Wash it down with water.", "Take it with a glass of water.", "en"),
        ("Use it seven days in a row.", "The treatment lasts seven days.", "en"),
        ("Wacht zes uur.", "Houd zes uur tussenpoos aan.", "nl"),
        ("Neem het meteen in.", "Direct innemen.", "nl"),
        ("Het geeft meer trek.", "Het geeft meer eetlust.", "nl"),
        ("Gebruik het zeven dagen achter elkaar.", "De behandeling duurt zeven dagen.", "nl"),
        ("Neem het voordat u gaat slapen.", "Innemen voor het slapengaan.", "nl"),
        ("Bắt đầu uống khi hành kinh.", "Bắt đầu uống khi có kinh.", "vi"),
        ("Người già cần giảm liều.", "Người cao tuổi cần giảm liều.", "vi"),
        ("Hoà gói thuốc với nước.", "Hòa tan gói thuốc trong nước.", "vi"),
    ],
)
def test_the_same_advice_in_other_words_is_supported(
    claim: str, passage: str, language: str
) -> None:
    assert _support(claim, passage, language) >= 0.55


@pytest.mark.parametrize(
    ("claim", "passage", "language"),
    [
        # a family stands for its concept only: swallowing whole is not chewing
        ("Chew the tablet.", "Swallow the tablet whole.", "en"),
        ("Kauw de tablet fijn.", "Tablet niet kauwen.", "nl"),
        # menstruation is no meal, the elderly are no children
        ("Take it at the start of your period.", "Take it at the start of a meal.", "en"),
        ("Trẻ em cần giảm liều.", "Người cao tuổi cần giảm liều.", "vi"),
    ],
)
def test_another_concept_is_not_supported(claim: str, passage: str, language: str) -> None:
    assert _support(claim, passage, language) < 1.0


# --- Vietnamese: lone syllables, amounts in words, negated commands --------------------------


def test_a_vietnamese_syllable_in_no_pair_counts_by_itself() -> None:
    # "ketomax" stands between a concept and a discourse word: it is in no bigram
    assert "ketomax" in claim_units("Uống gấp đôi ketomax có thể gây nôn.", "vi")


def test_a_vietnamese_amount_in_words_is_no_content() -> None:
    units = claim_units("Ngậm nửa phút rồi nhổ ra.", "vi")
    assert not any("phút" in u for u in units)


def test_a_vietnamese_negated_command_reads_as_not() -> None:
    assert _support("Đừng nuốt dung dịch.", "Không nuốt dung dịch.", "vi") == 1.0
    assert _support("Hãy nuốt dung dịch.", "Không nuốt dung dịch.", "vi") < 1.0


# --- seconds, and Dutch "halve" before a time unit -------------------------------------------


@pytest.mark.parametrize(
    ("text", "language"),
    [
        ("Hold it for 30 seconds.", "en"),
        ("Hold it for half a minute.", "en"),
        ("Houd het dertig seconden vast.", "nl"),
        ("Houd het een halve minuut vast.", "nl"),
        ("Giữ trong 30 giây.", "vi"),
        ("Giữ trong nửa phút.", "vi"),
    ],
)
def test_half_a_minute_is_thirty_seconds(text: str, language: str) -> None:
    keys = [q.key for q in quantities(text, language)]
    assert keys == [quantities("30 seconds", "en")[0].key]


def test_seconds_of_another_amount_are_missing() -> None:
    r = report("Gargle for 60 seconds.", ["Gargle for 30 seconds, then spit it out."], "en")
    assert r.ungrounded


# --- safety nets in more verbs, closing wishes -----------------------------------------------


@pytest.mark.parametrize(
    ("sentence", "language", "reason"),
    [
        ("If it happens often, have a chat with the pharmacist.", "en", "referral"),
        ("The clinic will keep an eye on your liver tests.", "en", "referral"),
        ("Safe travels!", "en", "pleasantry"),
        ("Meld bijwerkingen aan uw huisarts.", "nl", "referral"),
        ("Fijne vakantie!", "nl", "pleasantry"),
        ("Nếu vẫn còn đau, hãy tái khám với bác sĩ.", "vi", "referral"),
        ("Chúc anh may mắn!", "vi", "pleasantry"),
    ],
)
def test_a_safety_net_or_a_wish_is_no_claim(sentence: str, language: str, reason: str) -> None:
    assert skip_reason_of(sentence, language) == reason


@pytest.mark.parametrize(
    ("sentence", "language"),
    [
        ("The clinic will keep an eye on you while you take 40 mg.", "en"),
        ("This chat is kept by the hospital.", "en"),
        ("De sterkte van 0,1% is voor volwassenen.", "nl"),
        ("Het beste neemt u het 's avonds in.", "nl"),
        ("Hãy tái khám và uống 2 viên mỗi ngày.", "vi"),
    ],
)
def test_near_misses_stay_claims(sentence: str, language: str) -> None:
    assert skip_reason_of(sentence, language) is None


# --- a qualifier does not reach across the next step of a schedule -----------------------------


@pytest.mark.parametrize(
    ("answer", "passage", "language"),
    [
        (
            "Start with 4 mg of loperamide, then 2 mg after every loose stool.",
            "Loperamide: take 4 mg at first, then 2 mg after each loose stool.",
            "en",
        ),
        (
            "Begin met 4 mg loperamide en neem daarna 2 mg na elke dunne ontlasting.",
            "Loperamide: 4 mg in het begin, daarna 2 mg na elke dunne ontlasting.",
            "nl",
        ),
        (
            "Bắt đầu với loperamid 4 mg, sau mỗi lần đi ngoài phân lỏng uống thêm 2 mg.",
            "Loperamid: uống 4 mg lúc đầu, rồi 2 mg sau mỗi lần đi ngoài phân lỏng.",
            "vi",
        ),
    ],
)
def test_the_step_after_then_is_no_starting_dose(answer: str, passage: str, language: str) -> None:
    assert not report(answer, [passage], language).ungrounded


@pytest.mark.parametrize(
    ("answer", "passage", "language"),
    [
        (
            "Start with 2 mg of loperamide.",
            "Loperamide: take 4 mg at first, then 2 mg after each loose stool.",
            "en",
        ),
        (
            "Begin met 2 mg loperamide.",
            "Loperamide: 4 mg in het begin, daarna 2 mg na elke dunne ontlasting.",
            "nl",
        ),
        (
            "Bắt đầu với loperamid 2 mg.",
            "Loperamid: uống 4 mg lúc đầu, rồi 2 mg sau mỗi lần đi ngoài phân lỏng.",
            "vi",
        ),
    ],
)
def test_the_second_step_as_the_start_is_still_flagged(
    answer: str, passage: str, language: str
) -> None:
    assert report(answer, [passage], language).ungrounded


# --- a limit word before a number of its own, "the limit is", "<" before a weight ----------


@pytest.mark.parametrize(
    ("answer", "passage", "language"),
    [
        (
            "Children under 40 kg take 20 to 40 mg/kg of zorbactam once a day.",
            "Zorbactam: children up to 11 years weighing less than 40 kg: 20 to 40 mg/kg once a "
            "day.",
            "en",
        ),
        (
            "Kinderen onder 40 kg krijgen 20 tot 40 mg/kg zorbactam eenmaal daags.",
            "Zorbactam: kinderen tot 11 jaar die minder dan 40 kg wegen: 20 tot 40 mg/kg eenmaal "
            "daags.",
            "nl",
        ),
        (
            "Trẻ em dưới 40 kg uống zorbactam 20 đến 40 mg/kg, ngày một lần.",
            "Zorbactam: trẻ em tới 11 tuổi cân nặng dưới 40 kg: 20 đến 40 mg/kg, ngày một lần.",
            "vi",
        ),
    ],
)
def test_a_limit_on_an_age_is_no_limit_on_the_dose(
    answer: str, passage: str, language: str
) -> None:
    assert not report(answer, [passage], language).ungrounded


@pytest.mark.parametrize(
    ("answer", "language"),
    [
        ("The limit is 5 mg/kg of hydroxychloroquine a day.", "en"),
        ("Giới hạn là 5 mg/kg hydroxychloroquin mỗi ngày.", "vi"),
    ],
)
def test_the_limit_is_a_maximum(answer: str, language: str) -> None:
    passage = {
        "en": "Hydroxychloroquine: the daily dose should not exceed 5 mg/kg.",
        "vi": "Hydroxychloroquin: không dùng quá 5 mg/kg mỗi ngày.",
    }[language]
    assert not report(answer, [passage], language).ungrounded
    assert report(answer.replace("5 mg", "8 mg"), [passage], language).ungrounded


@pytest.mark.parametrize(
    ("answer", "passage", "language"),
    [
        (
            "Because he weighs less than 60 kg, he takes 5 mg of prasugrel once a day.",
            "Prasugrel, patients weighing < 60 kg: 5 mg once daily. Others: 10 mg once daily.",
            "en",
        ),
        (
            "Omdat zij minder dan 60 kg weegt, neemt zij 5 mg prasugrel eenmaal daags.",
            "Prasugrel, patiënten met een lichaamsgewicht < 60 kg: 5 mg eenmaal daags. "
            "Anderen: 10 mg eenmaal daags.",
            "nl",
        ),
        (
            "Vì ông nặng dưới 60 kg, ông uống prasugrel 5 mg mỗi ngày một lần.",
            "Prasugrel, người bệnh cân nặng < 60 kg: 5 mg mỗi ngày một lần. Người khác: 10 mg "
            "mỗi ngày một lần.",
            "vi",
        ),
    ],
)
def test_a_weight_band_written_with_a_sign_is_read(
    answer: str, passage: str, language: str
) -> None:
    assert not report(answer, [passage], language).ungrounded
    assert report(answer.replace("5 mg", "7 mg"), [passage], language).ungrounded


def test_the_patients_weight_said_back_is_no_missing_amount() -> None:
    from schemas.verdicts import MedicalContext

    context = MedicalContext(weight_kg=18.0)
    passage = "Children under 50 kg: 50 mg/kg of zorbactam once a day."
    ok = report("For a child of 18 kg the usual schedule applies.", [passage], "en", context)
    assert not any("mg" in n for c in ok.claims for n in c.numbers_missing)
