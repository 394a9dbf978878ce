"""Sentence splitting per language, citation markers, bullets."""

from __future__ import annotations

import pytest

from services.grounding.sentences import find_markers, split_sentences


def texts(text: str, language: str | None) -> list[str]:
    return [s.text for s in split_sentences(text, language)]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Take 2.5 mg daily. Then rest.", ["Take 2.5 mg daily.", "Then rest."]),
        ("Take 2,5 mg daily.", ["Take 2,5 mg daily."]),
        ("Use e.g. water. Dr. Smith agrees.", ["Use e.g. water.", "Dr. Smith agrees."]),
        ("Give it i.v. Then wait.", ["Give it i.v. Then wait."]),
        ("Take it at 8 a.m. daily. Stop.", ["Take it at 8 a.m. daily.", "Stop."]),
        ("Is it safe? Yes! It is.", ["Is it safe?", "Yes!", "It is."]),
        ("Avoid alcohol; it harms the liver.", ["Avoid alcohol;", "it harms the liver."]),
        ("The dose is 500 mg... Then 1 g.", ["The dose is 500 mg...", "Then 1 g."]),
        ('He said "stop." Then left.', ['He said "stop."', "Then left."]),
        ("No full stop at the end", ["No full stop at the end"]),
        ("lower case. after a stop", ["lower case. after a stop"]),
        ("J. Smith wrote it.", ["J. Smith wrote it."]),
        ("Take 500 mg.\n\nThen rest", ["Take 500 mg.", "Then rest"]),
    ],
)
def test_english(text: str, expected: list[str]) -> None:
    assert texts(text, "en") == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Neem bijv. 2,5 mg per dag. Drink water.", ["Neem bijv. 2,5 mg per dag.", "Drink water."]),
        (
            "Gebruik het o.a. bij pijn. Niet langer dan 3 dagen.",
            ["Gebruik het o.a. bij pijn.", "Niet langer dan 3 dagen."],
        ),
        ("Dit is d.w.z. veilig. Klaar.", ["Dit is d.w.z. veilig.", "Klaar."]),
        (
            "Maximaal 4 gram per dag. Raadpleeg uw arts.",
            ["Maximaal 4 gram per dag.", "Raadpleeg uw arts."],
        ),
        (
            "Het middel wordt i.v. gegeven. Dhr. Jansen weet het.",
            ["Het middel wordt i.v. gegeven.", "Dhr. Jansen weet het."],
        ),
    ],
)
def test_dutch(text: str, expected: list[str]) -> None:
    assert texts(text, "nl") == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            "Liều tối đa của paracetamol là 4 g mỗi ngày. Không dùng khi bị suy gan.",
            ["Liều tối đa của paracetamol là 4 g mỗi ngày.", "Không dùng khi bị suy gan."],
        ),
        ("Uống 2,5 mg mỗi ngày. Đúng.", ["Uống 2,5 mg mỗi ngày.", "Đúng."]),
        ("BS. Nam khuyên uống 500 mg. Ổn chứ?", ["BS. Nam khuyên uống 500 mg.", "Ổn chứ?"]),
        ("Bạn có khỏe không? Tôi khỏe!", ["Bạn có khỏe không?", "Tôi khỏe!"]),
    ],
)
def test_vietnamese(text: str, expected: list[str]) -> None:
    assert texts(text, "vi") == expected


def test_bullets_are_separate_sentences_without_their_marker() -> None:
    text = "Dosage:\n- 500 mg every 4 hours\n* max 4 g per day\n• rest\n1. drink\n2) eat\na) sleep"
    sentences = split_sentences(text, "en")
    assert [s.text for s in sentences] == [
        "Dosage:",
        "500 mg every 4 hours",
        "max 4 g per day",
        "rest",
        "drink",
        "eat",
        "sleep",
    ]
    assert [s.bullet for s in sentences] == [False] + [True] * 6
    assert text[sentences[1].start : sentences[1].end] == "500 mg every 4 hours"


def test_markers_are_removed_and_remembered() -> None:
    text = "Max 4 g per day [doc:a]. Take 500 mg.[1][2] Rest [doc:b, doc:c].\n[3]"
    sentences = split_sentences(text, "en")
    assert [s.text for s in sentences] == ["Max 4 g per day.", "Take 500 mg.", "Rest."]
    assert [[m.raw for m in s.markers] for s in sentences] == [
        ["[doc:a]"],
        ["[1]", "[2]"],
        ["[doc:b, doc:c]", "[3]"],
    ]
    first = sentences[0]
    assert text[first.start : first.end] == "Max 4 g per day [doc:a]."


@pytest.mark.parametrize(
    ("text", "doc_ids", "indices"),
    [
        ("[doc:leaflet-1]", [("leaflet-1",)], [()]),
        ("[DOC: a]", [("a",)], [()]),
        ("[doc:a; doc:b]", [("a", "b")], [()]),
        ("[1] [12]", [(), ()], [(1,), (12,)]),
        ("[1, 3-4]", [()], [(1, 3, 4)]),
        ("[4-2]", [()], [(4,)]),
        ("[1234] [] [x] [doc:]", [], []),
    ],
)
def test_find_markers(text: str, doc_ids: list[tuple], indices: list[tuple]) -> None:
    found = find_markers(text)
    assert [m.doc_ids for m in found] == doc_ids
    assert [m.indices for m in found] == indices


def test_offsets_and_empty_input() -> None:
    assert split_sentences("", "en") == []
    assert split_sentences("   \n  ", "en") == []
    text = "  First one.   Second one.  "
    for s in split_sentences(text, "en"):
        assert text[s.start : s.end] == s.text
