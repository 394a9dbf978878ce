"""The mechanism of the sixth round (issue 10), found on the blind split fresh4 and the fifth
round's leftovers: the length of a course as a facet of a dose reading. Tests per language with
near misses, written in other words and about other drugs than the cases."""

from __future__ import annotations

import pytest

from services.grounding.medical import Carry, load_lexicon, read_sentence
from services.grounding.quantities import amounts, format_decimal
from services.grounding.tokens import tokenize
from tests.support.grounding_checks import critical
from tests.support.grounding_checks import numbered_report as report


def durations(text: str, language: str) -> list[tuple[str, str, str] | None]:
    t = tokenize(text)
    read = read_sentence(t, 0, len(t), amounts(t, language), language, load_lexicon(), Carry())
    return [
        None
        if r.duration is None
        else (format_decimal(r.duration.low), format_decimal(r.duration.high), r.duration.kind)
        for r in read.readings
    ]


# --- the length of a course ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "language", "expected"),
    [
        ("Take 500 mg three times a day for 10 days.", "en", [("240", "240", "exact")]),
        ("Neem 2 keer per dag 250 mg, gedurende 1 tot 2 weken.", "nl", [("168", "336", "exact")]),
        ("Uống 200 mg mỗi ngày, không dùng quá 5 ngày.", "vi", [("120", "120", "max")]),
        # near misses: a delay, a condition, a look-back and an interval are no course
        ("Take 100 mg, and repeat it after 2 weeks.", "en", [None]),
        ("Neem 10 mg; als de klachten na 3 dagen blijven, bel de arts.", "nl", [None]),
        ("Do not take 50 mg if you took an MAO inhibitor in the last 14 days.", "en", [None]),
        ("Uống 1 viên mỗi 2 ngày.", "vi", [None]),
    ],
)
def test_a_dose_sentence_reads_its_course_length(
    text: str, language: str, expected: list[tuple[str, str, str] | None]
) -> None:
    assert durations(text, language)[: len(expected)] == expected


@pytest.mark.parametrize(
    ("answer", "passages", "language"),
    [
        (
            "Cefalexin is taken as 500 mg twice a day for 10 days.",
            [
                "Cefalexin for cystitis: 500 mg twice a day for 5 days.",
                "Cefalexin for skin infections: 1 g twice a day for 10 days.",
            ],
            "en",
        ),
        (
            "Neem tweemaal daags 100 mg doxycycline gedurende 3 weken.",
            ["Doxycycline bij de ziekte van Lyme: 100 mg tweemaal daags gedurende 10 dagen."],
            "nl",
        ),
        (
            "Famotidin uống 20 mg mỗi ngày 2 lần, có thể dùng đến 12 tuần.",
            ["Famotidin: 20 mg mỗi ngày 2 lần; không dùng quá 8 tuần."],
            "vi",
        ),
        (
            "U kunt xylometazoline gerust 3 weken gebruiken.",
            ["Xylometazoline neusspray: gebruik het niet langer dan 7 dagen."],
            "nl",
        ),
    ],
)
def test_another_course_length_is_caught_as_a_dose_claim(
    answer: str, passages: list[str], language: str
) -> None:
    r = report(answer, passages, language)
    assert r.ungrounded
    assert critical(r)


@pytest.mark.parametrize(
    ("answer", "passages", "language"),
    [
        (
            "Take cefalexin 500 mg twice a day for five days.",
            ["Cefalexin for cystitis: 500 mg twice a day for 5 days."],
            "en",
        ),
        (
            "Doxycycline neemt u 10 dagen lang tweemaal daags 100 mg.",
            ["Doxycycline bij de ziekte van Lyme: 100 mg tweemaal daags gedurende 10 dagen."],
            "nl",
        ),
        (
            "Famotidin uống 20 mg mỗi ngày 2 lần, tối đa 8 tuần.",
            ["Famotidin: 20 mg mỗi ngày 2 lần; không dùng quá 8 tuần."],
            "vi",
        ),
        (
            # a length the passage states in a sentence of its own
            "Gebruik xylometazoline hooguit 7 dagen achter elkaar.",
            ["Xylometazoline neusspray: gebruik het niet langer dan 7 dagen."],
            "nl",
        ),
    ],
)
def test_the_same_course_length_in_other_words_passes(
    answer: str, passages: list[str], language: str
) -> None:
    assert report(answer, passages, language).ungrounded == []
