"""Cue families and rules of the third round (issue 10, the fresh2 split): each mechanism with
a small test per language, written in other words and about other drugs than the cases."""

from __future__ import annotations

from services.grounding.claims import atomic_claims, skip_reason
from services.grounding.quantities import amounts, flatten, quantities
from services.grounding.tokens import tokenize
from tests.support.grounding_checks import reading_statuses


def reason(text: str, language: str) -> str | None:
    return skip_reason(text, language, tuple(flatten(amounts(tokenize(text), language))))


def polarities(text: str, language: str) -> list[str]:
    return [r.polarity for c in atomic_claims(text, language) for r in c.readings]


def doses(text: str, language: str) -> list[str]:
    return [r.describe() for c in atomic_claims(text, language) for r in c.readings]


def check_answer(answer: str, passage: str, language: str) -> list[str]:
    return reading_statuses(answer, passage, language)


# -- a sentence that says the question back asserts nothing ----------------------------------


def test_restated_question_en() -> None:
    assert reason("You'd like to know if omeprazole can be opened and sprinkled.", "en") == (
        "restatement"
    )
    assert reason("So you are wondering whether the patch can be cut.", "en") == "restatement"
    assert reason("You asked about 40 mg; that is the usual dose.", "en") is None
    assert reason("You want to know: do not take it in pregnancy.", "en") is None


def test_restated_question_nl() -> None:
    assert reason("U wilt weten of de capsule open mag.", "nl") == "restatement"
    assert reason("Je vraagt je af of het middel 's nachts werkt.", "nl") == "restatement"
    assert reason("U vraagt naar 40 mg, dat is de normale dosis.", "nl") is None


def test_restated_question_vi() -> None:
    assert reason("Bạn thắc mắc thuốc này có làm buồn ngủ không.", "vi") == "restatement"
    assert reason("Bạn hỏi về 40 mg, đây là liều thường dùng.", "vi") is None


# -- a negated assertion scopes over its clause; harm words -------------------------------------


def test_negated_frame_en() -> None:
    assert polarities(
        "Nothing suggests that losartan would be harmful while breastfeeding.", "en"
    ) == ["allowed"]
    assert polarities("Taking bisoprolol doesn't mean you have to avoid exercise.", "en") == [
        "allowed"
    ]
    assert polarities("Losartan can be harmful to an unborn baby.", "en") == ["avoid"]


def test_negated_frame_nl() -> None:
    assert polarities(
        "Niets wijst erop dat losartan in de zwangerschap onschadelijk is.", "nl"
    ) == ["avoid"]
    assert polarities(
        "Dat u bisoprolol slikt, betekent niet dat u moet stoppen met sporten.", "nl"
    ) == ["allowed"]
    assert polarities("Losartan kan schadelijk zijn voor het ongeboren kind.", "nl") == ["avoid"]


def test_negated_frame_vi() -> None:
    assert polarities("Không có bằng chứng losartan gây hại khi cho con bú.", "vi") == ["allowed"]
    assert polarities("Losartan có thể gây hại cho thai nhi.", "vi") == ["avoid"]


def test_harm_words_flip_against_a_contraindication() -> None:
    leaflet = "Do not use losartan in the second and third trimester of pregnancy."
    assert check_answer(
        "There's no reason to believe losartan is a problem in pregnancy.", leaflet, "en"
    ) == ["contradicted"]


# -- numbers written as words -----------------------------------------------------------------


def test_number_words_en() -> None:
    assert [q.key for q in quantities("Start on fifteen milligrams, then sixty mg.", "en")] == [
        "15 mg",
        "60 mg",
    ]
    assert quantities("one of the forty people", "en") == []


def test_number_words_nl() -> None:
    keys = [
        q.key for q in quantities("vijfenzeventig milligram, tweehonderd mg, dertig minuten", "nl")
    ]
    assert keys == ["75 mg", "200 mg", "0.5 h"]
    assert quantities("dertig mensen", "nl") == []


def test_number_words_are_read_in_their_own_language() -> None:
    assert [q.key for q in quantities("twintig mg", "nl")] == ["20 mg"]
    assert quantities("twintig mg", "vi") == []


# -- a recurring time of day is once a day ------------------------------------------------------


def test_daily_occasion_en() -> None:
    leaflet = "Risedronate 35 mg: one tablet once a week."
    assert check_answer("Take risedronate 35 mg each evening.", leaflet, "en") == ["contradicted"]
    assert doses("Take 5 mg of amlodipine every night.", "en") == [
        "amlodipine: 5 mg per dose 1 times a day"
    ]


def test_daily_occasion_nl() -> None:
    assert doses("Neem elke avond 10 mg citalopram.", "nl") == [
        "citalopram: 10 mg per dose 1 times a day"
    ]


def test_daily_occasion_vi() -> None:
    assert doses("Uống amlodipin 5 mg mỗi tối.", "vi") == [
        "amlodipine: 5 mg per dose 1 times a day"
    ]


# -- a starting dose said after the amount; a stated start governs ----------------------------


def test_start_after_the_amount_en() -> None:
    leaflet = "Adults: start with 25 mg a day; the dose may be raised to 50 mg a day."
    assert check_answer("Sertraline is taken at 50 mg a day from the outset.", leaflet, "en") == [
        "contradicted"
    ]
    assert check_answer("The dose may be raised to 50 mg a day.", leaflet, "en") == ["supported"]


def test_start_phrase_nl() -> None:
    leaflet = "Volwassenen: begin met 25 mg per dag; zo nodig verhogen tot 50 mg per dag."
    assert check_answer("Vanaf het begin neemt u 50 mg per dag.", leaflet, "nl") == ["contradicted"]


def test_start_phrase_vi() -> None:
    leaflet = "Người lớn: khởi đầu 25 mg mỗi ngày, có thể tăng lên 50 mg mỗi ngày."
    assert check_answer("Ngay từ đầu uống 50 mg mỗi ngày.", leaflet, "vi") == ["contradicted"]
    assert check_answer("Lúc đầu uống 25 mg mỗi ngày.", leaflet, "vi") == ["supported"]


# -- a range written "between X and Y" ------------------------------------------------------


def test_between_range_en() -> None:
    assert [q.key for q in quantities("between 2 and 4 mg a day", "en")] == ["2 mg", "4 mg"]
    assert doses("Take between 2 mg and 4 mg of loperamide a day.", "en") == [
        "loperamide: 2–4 mg per 24 h"
    ]
    assert [q.key for q in quantities("2 and 4 mg", "en")] == ["2", "4 mg"]  # no range


def test_between_range_nl() -> None:
    leaflet = "Volwassenen: 2 tot 4 mg loperamide per dag."
    assert check_answer("Neem tussen 2 en 8 mg loperamide per dag.", leaflet, "nl") == [
        "contradicted"
    ]


def test_between_range_vi() -> None:
    assert [q.key for q in quantities("giữa 2 và 4 mg", "vi")] == ["2 mg", "4 mg"]


# -- a measured kidney value is no dose number ------------------------------------------------


def measured_left_over(text: str, language: str) -> list[str]:
    return [q.key for c in atomic_claims(text, language) for q in c.leftover]


def test_kidney_value_is_used_en() -> None:
    assert (
        measured_left_over("With an eGFR of 35, take 500 mg of metformin twice a day.", "en") == []
    )


def test_kidney_value_is_used_nl() -> None:
    assert (
        measured_left_over("Bij een klaring van 35 neemt u 500 mg metformine per dag.", "nl") == []
    )


def test_kidney_value_is_used_vi() -> None:
    assert measured_left_over("Độ lọc cầu thận 35 thì uống metformin 500 mg mỗi ngày.", "vi") == []
