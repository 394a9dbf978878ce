"""Atomic claims (kinds, non-claims), structured claims from the event and the extractors."""

from __future__ import annotations

import json
from typing import Any

import pytest

from schemas.events import ChatEvent, Claim
from services.grounding.claims import atomic_claims, fact_checks, skip_reason
from services.grounding.extractors import load_extractors
from services.grounding.facts import FactRegistry
from services.grounding.quantities import quantities

DRUGS = frozenset({"paracetamol", "ibuprofen"})


def event(content: str, **extra: Any) -> ChatEvent:
    data = {
        "schema_version": 1,
        "event_id": "e1",
        "conversation_id": "c1",
        "turn_index": 1,
        "timestamp": "2024-05-01T10:00:00+00:00",
        "role": "assistant",
        "content": content,
        **extra,
    }
    return ChatEvent.model_validate_json(json.dumps(data))


@pytest.mark.parametrize(
    ("text", "language", "kind"),
    [
        ("Take 500 mg every 4 hours.", "en", "dose"),
        ("Paracetamol 1 g is enough.", "en", "dose"),
        ("The maximum daily dose is 4 g.", "en", "dose"),
        ("Do not take more than 4 g a day.", "en", "dose"),
        ("Symptoms improve within 3 days.", "en", "other"),
        ("About 5% of people get a rash.", "en", "other"),
        ("Do not use ibuprofen if you have a stomach ulcer.", "en", "contraindication"),
        ("Ibuprofen is contraindicated in severe heart failure.", "en", "contraindication"),
        ("Don't take it with alcohol.", "en", "contraindication"),
        ("Paracetamol relieves pain.", "en", "other"),
        ("Neem maximaal 4 gram per dag.", "nl", "dose"),
        ("Gebruik geen ibuprofen bij een maagzweer.", "nl", "contraindication"),
        ("Ibuprofen is gecontra-indiceerd bij hartfalen.", "nl", "contraindication"),
        ("Paracetamol werkt tegen pijn.", "nl", "other"),
        ("Liều tối đa là 4 g mỗi ngày.", "vi", "dose"),
        ("Không dùng ibuprofen khi bị loét dạ dày.", "vi", "contraindication"),
        ("Chống chỉ định ở người suy gan nặng.", "vi", "contraindication"),
        ("Paracetamol giúp giảm đau.", "vi", "other"),
        ("Take 500 mg every 4 hours.", None, "dose"),
    ],
)
def test_kind(text: str, language: str | None, kind: str) -> None:
    claims = atomic_claims(text, language, DRUGS)
    assert [c.kind for c in claims] == [kind]


@pytest.mark.parametrize(
    ("text", "language", "reason"),
    [
        ("Is it safe to take?", "en", "question"),
        ("Dosage:", "en", "heading"),
        ("Hello!", "en", "pleasantry"),
        ("Thanks for your question.", "en", "pleasantry"),
        ("I hope this helps.", "en", "pleasantry"),
        ("I don't know the answer to that.", "en", "abstention"),
        ("Please consult your doctor.", "en", "referral"),
        ("OK.", "en", "no_content"),
        ("Graag gedaan!", "nl", "pleasantry"),
        ("Ik weet het niet.", "nl", "abstention"),
        ("Raadpleeg uw arts.", "nl", "referral"),
        ("Xin chào!", "vi", "pleasantry"),
        ("Tôi không biết.", "vi", "abstention"),
        ("Hãy hỏi ý kiến bác sĩ.", "vi", "referral"),
        # a question asserts nothing, even with a number in it (issue 10: questions back)
        ("Is 4 g the maximum?", "en", "question"),
        ("Wilt u 500 mg of 1000 mg?", "nl", "question"),
        # a number or a contraindication makes it a claim again
        ("Hello, take 500 mg.", "en", None),
        ("Please consult your doctor and do not take it when pregnant.", "en", None),
        ("Paracetamol relieves pain.", "en", None),
        ("Sure, paracetamol is safe during pregnancy.", "en", None),
        ("Yes.", "en", "no_content"),
        ("Vâng.", "vi", "no_content"),
    ],
)
def test_skip_reason(text: str, language: str, reason: str | None) -> None:
    assert skip_reason(text, language, quantities(text, language)) == reason


def test_lead_in_hands_its_kind_to_list_items() -> None:
    text = (
        "Do not use ibuprofen if you have:\n- a stomach ulcer\n- severe heart failure\n"
        "Dosage for adults:\n- 400 mg every 6 hours\n- rest well\n"
        "Other notes\n- fever"
    )
    claims = atomic_claims(text, "en", DRUGS)
    assert [(c.text, c.kind) for c in claims] == [
        ("a stomach ulcer", "contraindication"),
        ("severe heart failure", "contraindication"),
        ("400 mg every 6 hours", "dose"),
        ("rest well", "other"),
        ("Other notes", "other"),
        ("fever", "other"),
    ]


def test_atomic_claims_keep_markers_and_quantities() -> None:
    claims = atomic_claims("Hi! Max 4 g per day [doc:a]. Any questions?", "en", DRUGS)
    assert len(claims) == 1
    (claim,) = claims
    assert claim.text == "Max 4 g per day."
    assert [m.doc_ids for m in claim.markers] == [("a",)]
    assert [q.key for q in claim.quantities] == ["4000 mg"]


def test_fact_checks_event_claims_then_extracted_without_duplicates() -> None:
    registry = FactRegistry.load()
    extractors = load_extractors()
    ev = event(
        "The maximum daily dose of paracetamol is 4000 mg. "
        "The maximum daily dose of ibuprofen is 2400 mg. "
        "Liều tối đa của metformin là 3 g mỗi ngày.",
        claims=[
            {"entity": "paracetamol", "attribute": "max_daily_dose_adult", "value": "4 g"},
            {"entity": "aspirin", "attribute": "max_daily_dose_adult", "value": "4 g"},
        ],
    )
    verdicts = fact_checks(ev, registry, extractors, "en")
    assert [(v.claim.entity, v.claim.value, v.status, v.origin) for v in verdicts] == [
        ("paracetamol", "4 g", "supported", "event"),
        ("aspirin", "4 g", "unknown", "event"),
        ("ibuprofen", "2400 mg", "contradicted", "extracted"),
    ]
    # No language: every extractor applies, so the Vietnamese sentence is read as well.
    verdicts = fact_checks(ev, registry, extractors, None)
    assert Claim(entity="metformin", attribute="max_daily_dose_adult", value="3 g") in [
        v.claim for v in verdicts
    ]
