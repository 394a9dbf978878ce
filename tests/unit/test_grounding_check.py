"""The grounding stage: decisions per claim, the judge's verdicts, faithfulness, the report."""

from __future__ import annotations

import json
from typing import Any

import pytest

from schemas.events import ChatEvent
from schemas.verdicts import GroundingReport
from services.grounding import (
    ExtractorSet,
    FactRegistry,
    GroundingConfig,
    check,
    claims_for_judge,
    critical_claims,
    load_extractors,
)

LEAFLET = (
    "Paracetamol 500 mg tablets. Adults: 1 or 2 tablets every 4 to 6 hours. The maximum dose "
    "is 4 g per day. Do not use paracetamol if you have severe liver disease."
)
OTHER = "Ibuprofen can cause stomach problems and should be taken with food."
CONFIG = GroundingConfig()


def event(content: str, passages: list[tuple[str, str]] | None = None, **extra: Any) -> ChatEvent:
    data: dict[str, Any] = {
        "schema_version": 1,
        "event_id": "e1",
        "conversation_id": "c1",
        "turn_index": 3,
        "timestamp": "2024-05-01T10:00:00+02:00",
        "role": "assistant",
        "content": content,
        "language": "en",
        "tenant": "acme",
        **extra,
    }
    if passages is not None:
        data["retrieval"] = [{"doc_id": d, "text": t} for d, t in passages]
    return ChatEvent.model_validate_json(json.dumps(data))


def run(ev: ChatEvent, config: GroundingConfig = CONFIG, **kwargs: Any) -> GroundingReport:
    return check(
        ev,
        FactRegistry.load(),
        extractors=load_extractors(),
        config=config,
        inclusion_probability=0.25,
        stratum="sampled",
        **kwargs,
    )


@pytest.mark.parametrize(
    ("answer", "grounded", "missing"),
    [
        pytest.param("The maximum dose of paracetamol is 4 g per day.", True, [], id="verbatim"),
        pytest.param(
            "The maximum dose of paracetamol is 4000 mg per day.", True, [], id="4g-equals-4000mg"
        ),
        pytest.param("The maximum dose of paracetamol is 4000mg per day.", True, [], id="no-space"),
        pytest.param("Paracetamol tablets contain 500mg.", True, [], id="500mg"),
        pytest.param("Take 1 or 2 tablets every 4 to 6 hours.", True, [], id="range"),
        pytest.param(
            "The maximum dose of paracetamol is 6 g per day.", False, ["6000 mg"], id="wrong-number"
        ),
        pytest.param("Take 2 tablets every 2 hours.", False, ["2 h"], id="wrong-interval"),
        pytest.param(
            "The maximum dose of paracetamol is 4 mg per day.", False, ["4 mg"], id="wrong-unit"
        ),
        pytest.param("Paracetamol is safe for dogs and cats.", False, [], id="no-support"),
        pytest.param(
            "Do not use paracetamol if you have severe liver disease.",
            True,
            [],
            id="contraindication",
        ),
        pytest.param("Paracetamol was first sold in 1955.", False, ["1955"], id="bare-number"),
    ],
)
def test_grounding_decisions(answer: str, grounded: bool, missing: list[str]) -> None:
    report = run(event(answer, [("leaflet", LEAFLET), ("other", OTHER)]))
    (claim,) = report.claims
    assert claim.grounded is grounded
    assert claim.numbers_missing == missing
    assert claim.method == "deterministic"
    assert claim.judge is None
    if grounded:
        assert claim.best_doc == "leaflet"


def test_decimal_comma_answer_matches_decimal_point_passage() -> None:
    ev = event("Neem 2,5 mg per dag.", [("d", "De dosis is 2.5 mg per dag.")], language="nl")
    assert run(ev).claims[0].grounded


def test_vietnamese_grounding_uses_syllable_bigrams() -> None:
    passage = "Liều tối đa của paracetamol cho người lớn là 4 g mỗi ngày."
    good = event("Liều tối đa của paracetamol là 4 g mỗi ngày.", [("d", passage)], language="vi")
    bad = event("Paracetamol gây buồn ngủ nặng.", [("d", passage)], language="vi")
    assert run(good).claims[0].grounded
    assert not run(bad).claims[0].grounded


def test_threshold_on_both_sides() -> None:
    passage = "alpha beta gamma delta"
    ev = event("Alpha beta gamma epsilon.", [("d", passage)])  # support 3/4
    assert run(ev, GroundingConfig(support_threshold=0.75)).claims[0].grounded
    assert not run(ev, GroundingConfig(support_threshold=0.76)).claims[0].grounded
    assert run(ev).claims[0].support == 0.75


def test_bare_numbers_can_be_switched_off() -> None:
    ev = event("Paracetamol was first sold in 1955.", [("d", "Paracetamol was first sold.")])
    assert not run(ev).claims[0].grounded
    assert run(ev, GroundingConfig(bare_numbers=False)).claims[0].grounded


def test_no_retrieval_means_nothing_is_grounded() -> None:
    report = run(event("Paracetamol relieves pain."))
    assert [(c.grounded, c.best_doc, c.support) for c in report.claims] == [(False, None, 0.0)]
    assert report.faithfulness == 0.0


def test_report_fields_and_faithfulness() -> None:
    answer = (
        "Hello! The maximum dose of paracetamol is 4000 mg per day. "
        "Take 2 g at once. Do not use paracetamol with severe liver disease. Any questions?"
    )
    ev = event(
        answer,
        [("leaflet", LEAFLET)],
        claims=[{"entity": "paracetamol", "attribute": "max_daily_dose_adult", "value": "4 g"}],
    )
    report = run(ev)
    assert report.event_id == "e1" and report.conversation_id == "c1"
    assert report.turn_index == 3 and report.tenant == "acme" and report.language == "en"
    assert report.inclusion_probability == 0.25 and report.stratum == "sampled"
    assert [c.text for c in report.claims] == [
        "The maximum dose of paracetamol is 4000 mg per day.",
        "Take 2 g at once.",
        "Do not use paracetamol with severe liver disease.",
    ]
    assert [c.kind for c in report.claims] == ["dose", "dose", "contraindication"]
    assert report.ungrounded == ["Take 2 g at once."]
    assert report.faithfulness == pytest.approx(2 / 3)
    assert [c.text for c in critical_claims(report)] == ["Take 2 g at once."]
    assert [(v.status, v.origin) for v in report.fact_checks] == [("supported", "event")]
    assert report.judge_used is False
    for c in report.claims:
        assert answer[c.start : c.end].startswith(c.text[:10])


def test_answer_without_claims_is_faithful() -> None:
    report = run(event("Hello! I don't know. Please consult your doctor.", [("d", LEAFLET)]))
    assert report.claims == [] and report.faithfulness == 1.0 and report.ungrounded == []


def test_only_assistant_events() -> None:
    with pytest.raises(ValueError, match="assistant"):
        run(event("Take 4 g.", role="user"))


def test_inclusion_probability_is_validated() -> None:
    with pytest.raises(ValueError, match="inclusion_probability"):
        check(
            event("Take 4 g."),
            FactRegistry(),
            extractors=ExtractorSet(),
            config=CONFIG,
            inclusion_probability=0.0,
            stratum="always",
        )


def test_deterministic() -> None:
    ev = event("Take 2 g at once [1]. Max 4 g per day [doc:x].", [("leaflet", LEAFLET)])
    assert run(ev).model_dump_json() == run(ev).model_dump_json()


# --- the judge --------------------------------------------------------------------------------

JUDGED = "The maximum dose of paracetamol is 4 g per day. Paracetamol is safe for dogs."


def test_claims_for_judge_puts_critical_claims_first_and_respects_limits() -> None:
    ev = event("Paracetamol relieves pain. " + JUDGED + " Take 2 g at once.", [("d", LEAFLET)])
    pairs = claims_for_judge(ev, CONFIG, FactRegistry.load())
    assert [text for text, _ in pairs] == [
        "The maximum dose of paracetamol is 4 g per day.",
        "Take 2 g at once.",
        "Paracetamol relieves pain.",
        "Paracetamol is safe for dogs.",
    ]
    assert all(premise == LEAFLET for _, premise in pairs)
    limited = GroundingConfig(judge_max_claims=1, judge_max_premise_chars=200)
    assert claims_for_judge(ev, limited) == [(pairs[0][0], LEAFLET[:200])]
    only_other = GroundingConfig(judge_kinds=frozenset({"other"}))
    assert [t for t, _ in claims_for_judge(ev, only_other)] == [
        "Paracetamol relieves pain.",
        "Paracetamol is safe for dogs.",
    ]
    assert claims_for_judge(event(JUDGED), CONFIG) == []


@pytest.mark.parametrize(
    ("label", "grounded", "method"),
    [
        ("entailment", [True, True], "judge"),
        ("neutral", [False, False], "judge"),
        ("contradiction", [False, False], "judge"),
        ("unverified", [True, False], "deterministic"),
    ],
)
def test_judge_verdicts(label: str, grounded: list[bool], method: str) -> None:
    ev = event(JUDGED, [("d", LEAFLET)])
    texts = [t for t, _ in claims_for_judge(ev, CONFIG)]
    report = run(ev, judge_results=dict.fromkeys(texts, label))
    assert [c.grounded for c in report.claims] == grounded
    assert {c.method for c in report.claims} == {method}
    assert {c.judge for c in report.claims} == {label}
    assert report.judge_used is (method == "judge")


def test_judge_cannot_ground_a_claim_whose_numbers_are_missing() -> None:
    ev = event("The maximum dose of paracetamol is 6 g per day.", [("d", LEAFLET)])
    report = run(
        ev, judge_results={"The maximum dose of paracetamol is 6 g per day.": "entailment"}
    )
    (claim,) = report.claims
    assert claim.method == "judge" and claim.judge == "entailment"
    assert claim.grounded is False and claim.numbers_missing == ["6000 mg"]


def test_decomposed_vietnamese_is_read_like_composed() -> None:
    import unicodedata

    passage = "Liều tối đa của paracetamol cho người lớn là 4 g mỗi ngày."
    answer = unicodedata.normalize("NFD", "Liều tối đa của paracetamol là 4 gam mỗi ngày.")
    report = run(event(answer, [("d", passage)], language="vi"))
    assert [(c.kind, c.grounded) for c in report.claims] == [("dose", True)]
    assert [v.claim.value for v in report.fact_checks] == ["4 g"]


def test_largest_event_is_bounded() -> None:
    import time

    sentence = "Take 500 mg of paracetamol every 4 hours with water [1]. "
    answer = sentence * (60_000 // len(sentence))
    passages = [(f"d{i}", (LEAFLET + " ") * (60_000 // len(LEAFLET))) for i in range(8)]
    # CPU seconds, not wall: a loaded machine must not fail it (a hang or a quadratic blow-up
    # would take far more than this generous bound; ~3 s here).
    started = time.process_time()
    report = run(event(answer, passages, citations=[d for d, _ in passages]))
    assert time.process_time() - started < 30
    assert len(report.claims) > 900 and report.faithfulness == 1.0
