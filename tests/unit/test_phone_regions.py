"""``VIGIL_PHONE_REGIONS``: which countries' national-form phone numbers are found.

NL, VN, GB and US have rules of their own; any other configured region goes to
``pii.phone_national`` (phonenumbers decides validity and grouping). International numbers are
found whatever the setting.
"""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from services.pipeline import Pipeline
from services.rules import load_packs, load_prompt_registry
from services.rules.engine import RuleEngine, with_phone_regions
from services.settings import Settings

SETTINGS = Settings()
PACKS = load_packs([SETTINGS.rules_dir])
PROMPTS = load_prompt_registry(SETTINGS.prompts_file)


def phones(engine: RuleEngine, text: str) -> list[tuple[str, str]]:
    return [
        (m.rule.id, m.value) for m in engine.scan(text, "user") if m.rule.entity == "PHONE_NUMBER"
    ]


def test_default_regions_keep_the_four_rules_and_switch_the_generic_one_off() -> None:
    engine = RuleEngine(PACKS, PROMPTS)
    assert {"pii.phone_nl", "pii.phone_vn", "pii.phone_gb", "pii.phone_us"} <= set(engine.rules)
    assert "pii.phone_national" not in engine.rules
    assert phones(engine, "Mein Handy: 0171 1234567") == []
    assert phones(engine, "Bel 06-12345678") == [("pii.phone_nl", "06-12345678")]


def test_more_regions_find_their_numbers_through_phonenumbers() -> None:
    engine = RuleEngine(PACKS, PROMPTS, phone_regions=["NL", "VN", "GB", "US", "DE", "FR"])
    national = engine.rules["pii.phone_national"]
    assert national.validator_args["regions"] == ["DE", "FR"]
    assert phones(engine, "Mein Handy: 0171 1234567") == [("pii.phone_national", "0171 1234567")]
    assert phones(engine, "Appelez le 01 42 68 53 00.") == [
        ("pii.phone_national", "01 42 68 53 00")
    ]
    # Near misses: a German date, a Spanish number (not configured), a price.
    assert phones(engine, "Der Termin ist am 06-03-2024 um 14:00.") == []
    assert phones(engine, "Mi móvil es 612 345 678.") == []
    assert phones(engine, "Le prix est de 1.250.000 EUR.") == []


def test_a_region_left_out_switches_its_own_rule_off() -> None:
    engine = RuleEngine(PACKS, PROMPTS, phone_regions=["NL"])
    assert "pii.phone_us" not in engine.rules and "pii.phone_context" not in engine.rules
    assert phones(engine, "My US number is (415) 555-0132") == []
    # International numbers are found for every country either way.
    assert phones(engine, "My US number is +1 415 555 0132") == [
        ("pii.phone_intl", "+1 415 555 0132")
    ]


def test_with_phone_regions_leaves_other_rules_alone() -> None:
    rules = [r for p in PACKS for r in p.rules]
    kept = with_phone_regions(rules, ["VN"])
    ids = {r.id for r in kept}
    assert "pii.email" in ids and "pii.nl_bsn" in ids and "pii.phone_intl" in ids
    assert "pii.phone_vn" in ids and "pii.phone_nl" not in ids
    # The rule objects of the packs are not changed.
    assert next(r for r in rules if r.id == "pii.phone_national").validator_args["regions"] == (
        "configured"
    )


def test_the_setting() -> None:
    assert Settings(phone_regions="nl, de").phone_regions == ["NL", "DE"]
    assert Settings(phone_regions='["FR"]').phone_regions == ["FR"]
    with pytest.raises(ValidationError, match="XX"):
        Settings(phone_regions="NL,XX")
    pipe = Pipeline(Settings(phone_regions="NL,DE"))
    assert pipe.engine.phone_regions == ("NL", "DE")
    assert pipe.engine.rules["pii.phone_national"].validator_args["regions"] == ["DE"]
