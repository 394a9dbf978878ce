"""Numbers with units: the SPEC's equalities exactly, and the edges of the parser."""

from __future__ import annotations

from decimal import Decimal

import pytest

from services.grounding.quantities import parse_number, parse_value, quantities


def keys(text: str, language: str | None = "en") -> list[str]:
    return [q.key for q in quantities(text, language)]


@pytest.mark.parametrize(
    ("left", "right", "language"),
    [
        pytest.param("500 mg", "500mg", "en", id="spec-space"),
        pytest.param("2,5 mg", "2.5 mg", "nl", id="spec-decimal-comma-nl"),
        pytest.param("2,5 mg", "2.5 mg", "en", id="spec-decimal-comma-en"),
        pytest.param("2,5 mg", "2.5 mg", "vi", id="spec-decimal-comma-vi"),
        pytest.param("4 g", "4000 mg", "en", id="spec-4g-4000mg"),
        pytest.param("1 g", "1000 mg", "en", id="1g-1000mg"),
        pytest.param("4 gram", "4 g", "nl", id="gram"),
        pytest.param("4 gam", "4 g", "vi", id="gam"),
        pytest.param("250 mcg", "0,25 mg", "nl", id="mcg"),
        pytest.param("250 µg", "250 microgram", "en", id="micro-sign"),
        pytest.param("250 μg", "250 ug", "en", id="greek-mu"),
        pytest.param("1 l", "1000 ml", "en", id="litre"),
        pytest.param("5 mL", "5 ml", "en", id="ml-case"),
        pytest.param("1000 IU", "1000 IE", "nl", id="iu-ie"),
        pytest.param("10 units", "10 eenheden", None, id="units-eenheden"),
        pytest.param("10 đơn vị", "10 IU", "vi", id="don-vi"),
        pytest.param("4 hours", "4 uur", None, id="uur"),
        pytest.param("4 giờ", "4 h", "vi", id="gio"),
        pytest.param("240 minutes", "4 hours", "en", id="minutes"),
        pytest.param("2 days", "48 hours", "en", id="days"),
        pytest.param("5%", "5 procent", None, id="percent"),
        pytest.param("5 %", "5 percent", "en", id="percent-space"),
        pytest.param("4 g/day", "4 g per dag", None, id="time-denominator-dropped"),
        pytest.param("120 mg/5 ml", "24 mg/ml", "en", id="concentration"),
        pytest.param("two tablets", "2 tablets", "en", id="number-word"),
        pytest.param("twee tabletten", "2 tablets", "nl", id="number-word-nl"),
        pytest.param("hai viên", "2 tablets", "vi", id="number-word-vi"),
        pytest.param("1.000 mg", "1 g", "nl", id="dot-thousands-nl"),
        pytest.param("1,000 mg", "1 g", "en", id="comma-thousands-en"),
        pytest.param("1,234.5 mg", "1.234,5 mg", "en", id="both-marks"),
    ],
)
def test_equal_amounts_have_equal_keys(left: str, right: str, language: str | None) -> None:
    assert keys(left, language) == keys(right, language)
    assert len(keys(left, language)) == 1


@pytest.mark.parametrize(
    ("left", "right", "language"),
    [
        pytest.param("4 g", "4 mg", "en", id="g-vs-mg"),
        pytest.param("500 mg", "500 ml", "en", id="mass-vs-volume"),
        pytest.param("15 mg/kg", "15 mg", "en", id="per-kg-kept"),
        pytest.param("1,000 mg", "1000 mg", "nl", id="comma-decimal-nl"),
        pytest.param("1.000 mg", "1000 mg", "en", id="dot-decimal-en"),
        pytest.param("4 hours", "4 days", "en", id="hours-days"),
    ],
)
def test_different_amounts_differ(left: str, right: str, language: str) -> None:
    assert keys(left, language) != keys(right, language)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Take 500mg, max 4 g per day, every 4-6 hours.", ["500 mg", "4000 mg", "4 h", "6 h"]),
        ("1 or 2 tablets", ["1 tablet", "2 tablet"]),
        ("500 mg to 1 g", ["500 mg", "1000 mg"]),
        ("In 1844 it had 3 issues", ["1844", "3"]),
        ("B12, COVID-19, CYP2C9, 1st, 2nd", []),
        ("5 gemiddeld", ["5"]),
        ("p<0.01 (n=20)", ["0.01", "20"]),
        ("one of them", []),
        ("Increased Bax expression", []),
        ("more than six months", ["6 month"]),
        ("twotablets", []),
        ("1.2.3", []),
        ("", []),
    ],
)
def test_quantities_found(text: str, expected: list[str]) -> None:
    assert keys(text) == expected


def test_number_words_only_in_their_own_language() -> None:
    assert keys("ba viên", "vi") == ["3 tablet"]
    assert keys("ba viên", None) == ["3 tablet"]
    assert keys("ba viên", "en") == []
    assert keys("two tablets", "nl") == []


def test_display_is_the_registry_form() -> None:
    shown = [q.display for q in quantities("4 gram, 2,5 mg, 6 uur, 1 uur, 5 %, 3 x", "nl")]
    assert shown == ["4 g", "2.5 mg", "6 hours", "1 hour", "5%", "3 times"]


@pytest.mark.parametrize(
    ("text", "language", "expected"),
    [
        ("2,5", None, Decimal("2.5")),
        ("0,125", "en", Decimal("0.125")),
        ("1,000", "en", Decimal("1000")),
        ("1,000", "nl", Decimal("1.000")),
        ("1.000", "vi", Decimal("1000")),
        ("1.000.000", "nl", Decimal("1000000")),
        ("12,345,678", "en", Decimal("12345678")),
        ("1.2.3", "en", None),
        ("1,2.3,4", "en", None),
        ("twaalf", "nl", Decimal(12)),
    ],
)
def test_parse_number(text: str, language: str | None, expected: Decimal | None) -> None:
    assert parse_number(text, language) == expected


def test_parse_value_needs_exactly_one_quantity() -> None:
    value = parse_value("4 gram")
    assert value is not None and value.key == "4000 mg"
    assert parse_value("4") is None
    assert parse_value("4 g and 5 g") is None
    assert parse_value("about 4 g") is None


def test_linear_on_long_input() -> None:
    text = "Take 500 mg every 4-6 hours. " * 2000
    assert len(quantities(text)) == 6000
