"""The medical claim model (issue 10): our own adversarial table — right and dangerous answers
that differ by one number, unit, basis, drug, population or negation — in en / nl / vi, and the
contract that travels to the review page."""

from __future__ import annotations

import json

import pytest

from schemas.events import Passage
from schemas.verdicts import GroundingReport, MedicalContext
from services.grounding import (
    PassageCache,
    critical_claims,
    load_lexicon,
    medical_context,
)
from tests.support.grounding_checks import check_report

PARA_EN = (
    "pil-paracetamol-en",
    "Paracetamol 500 mg tablets. Adults: take 1 or 2 tablets every 4 to 6 hours. "
    "Do not take more than 4 g in 24 hours.",
)
IBU_EN = (
    "pil-ibuprofen-en",
    "Ibuprofen. Adults: 200 to 400 mg three times a day. Do not take more than 1200 mg a day. "
    "Do not take ibuprofen if you have a stomach ulcer.",
)
LISI_EN = ("pil-lisinopril-en", "Lisinopril is contraindicated in pregnancy.")
LORA_VI = (
    "hdsd-loratadin",
    "Loratadin cho người lớn: 10 mg, ngày 1 lần. Không dùng quá 10 mg mỗi ngày.",
)
AMOX_NL = (
    "bijsluiter-amoxicilline",
    "Amoxicilline. Volwassenen: 500 mg driemaal daags. Kinderen: 40 tot 90 mg per kilo "
    "lichaamsgewicht per dag, verdeeld over 3 giften.",
)
LISI_NL = ("bijsluiter-lisinopril", "Lisinopril mag niet worden gebruikt tijdens de zwangerschap.")
SIMVA_EN = (
    "pil-simvastatin",
    "Do not drink grapefruit juice while taking simvastatin. Take it in the evening.",
)
SIMVA_VI = ("hdsd-simvastatin", "Không uống nước bưởi khi đang dùng simvastatin.")
MTX_NL = (
    "bijsluiter-methotrexaat",
    "Methotrexaat neemt u eenmaal per week in: gebruikelijke dosis 7,5 mg per week.",
)
PARA_NL = (
    "bijsluiter-paracetamol",
    "Paracetamol 500 mg. Volwassenen: 1 à 2 tabletten per keer, om de 4 tot 6 uur. Gebruik niet "
    "meer dan 6 tabletten (3.000 mg) per 24 uur.",
)
AMOX_EN = ("pil-amoxicillin", "Children under 40 kg: 20 to 90 mg/kg/day in divided doses.")
DIAZ_EN = ("pil-diazepam", "Do not drive or operate machinery after taking diazepam.")


def run(
    answer: str,
    passages: list[tuple[str, str]],
    language: str,
    context: MedicalContext | None = None,
) -> GroundingReport:
    return check_report(answer, passages, language, context)


CASES = [
    # right answers, in other words
    (
        "en",
        "You may take one or two tablets every 6 hours, but no more than 4,000 mg a day.",
        [PARA_EN],
        False,
    ),
    ("en", "Adults can take 200-400 mg of ibuprofen 3 times daily.", [IBU_EN, PARA_EN], False),
    (
        "vi",
        "Bạn có thể uống loratadin 10 mg, ngày 1 lần; cả ngày không quá 10mg.",
        [LORA_VI],
        False,
    ),
    ("nl", "Volwassenen nemen 500 mg amoxicilline, drie keer per dag.", [AMOX_NL], False),
    ("nl", "Voor kinderen is het 40 tot 90 mg per kg lichaamsgewicht per dag.", [AMOX_NL], False),
    ("en", "Ibuprofen should not be used if you have a stomach ulcer.", [IBU_EN], False),
    ("nl", "Tijdens de zwangerschap mag u lisinopril niet gebruiken.", [LISI_NL], False),
    # wrong number, unit, basis
    ("en", "Adults can take up to 8 g of paracetamol in 24 hours.", [PARA_EN], True),
    ("en", "Adults can take 4 g of paracetamol as a single dose.", [PARA_EN], True),
    ("en", "Take 200 to 400 g of ibuprofen three times a day.", [IBU_EN], True),
    ("vi", "Loratadin: người lớn uống 20 mg, ngày 1 lần.", [LORA_VI], True),
    ("nl", "Voor kinderen is het 40 tot 90 mg per kg lichaamsgewicht per keer.", [AMOX_NL], True),
    # wrong drug: the other drug's numbers are retrieved too
    ("en", "Paracetamol: adults take 200 to 400 mg three times a day.", [IBU_EN, PARA_EN], True),
    # wrong population
    ("nl", "Kinderen krijgen 500 mg amoxicilline driemaal daags.", [AMOX_NL], True),
    # polarity flips, with the negation in different scopes
    ("en", "Lisinopril is safe to use during pregnancy.", [LISI_EN], True),
    ("en", "Lisinopril is not contraindicated in pregnancy.", [LISI_EN], True),
    ("nl", "Er is geen bezwaar tegen lisinopril tijdens de zwangerschap.", [LISI_NL], True),
    ("en", "You can take ibuprofen even if you have a stomach ulcer.", [IBU_EN], True),
    # a positive claim about something no lexicon names, which a passage forbids
    ("en", "Grapefruit juice is fine with simvastatin.", [SIMVA_EN], True),
    ("vi", "Uống nước bưởi với simvastatin không sao cả.", [SIMVA_VI], True),
    ("en", "Don't have grapefruit juice with simvastatin.", [SIMVA_EN], False),
    # a negated activity is avoid; the modal after the verb (Vietnamese)
    ("en", "Driving after diazepam is fine.", [DIAZ_EN], True),
    ("en", "You should not drive after a dose of diazepam.", [DIAZ_EN], False),
    (
        "vi",
        "Phụ nữ có thai dùng lisinopril được.",
        [("hdsd-lisinopril", "Chống chỉ định lisinopril cho phụ nữ có thai.")],
        True,
    ),
    # once a week is per week; per day is not
    ("nl", "U neemt methotrexaat één keer per week, 7,5 mg.", [MTX_NL], False),
    ("nl", "Methotrexaat: 7,5 mg per dag.", [MTX_NL], True),
    # tablets restated in mg with the strength (also read from "6 tabletten (3.000 mg)")
    (
        "nl",
        "U mag per keer 500 tot 1.000 mg nemen, ten hoogste 3 gram per etmaal.",
        [PARA_NL],
        False,
    ),
    ("nl", "U mag per keer 1.500 mg paracetamol nemen.", [PARA_NL], True),
    # per kg written apart from the unit
    ("en", "Children under 40 kg get 20–90 mg of amoxicillin per kilo each day.", [AMOX_EN], False),
    (
        "en",
        "Children under 40 kg get 20–90 mg of amoxicillin per kilo for each dose.",
        [AMOX_EN],
        True,
    ),
]


@pytest.mark.parametrize(("language", "answer", "passages", "critical"), CASES)
def test_right_and_wrong(
    language: str, answer: str, passages: list[tuple[str, str]], critical: bool
) -> None:
    report = run(answer, passages, language)
    found = critical_claims(report)
    assert bool(found) is critical, [
        (c.text, [m.explanation for m in c.medical]) for c in report.claims
    ]
    if not critical:
        assert report.ungrounded == []


def test_an_open_positive_claim_no_passage_speaks_about_is_not_a_safety_claim() -> None:
    report = run("Simvastatin is fine to take with water.", [SIMVA_EN], "en")
    (claim,) = report.claims
    assert claim.kind == "other" and claim.medical == [] and critical_claims(report) == []


def test_the_question_gives_the_age_of_the_child_the_answer_names() -> None:
    passage = (
        "hdsd-paracetamol",
        "Paracetamol 500 mg. Người lớn và trẻ em từ 12 tuổi trở lên: uống 1–2 viên mỗi lần.",
    )
    question = medical_context("Bé 5 tuổi uống paracetamol bao nhiêu?", "vi", load_lexicon())
    answer = "Bé có thể uống 1–2 viên mỗi lần."
    assert critical_claims(run(answer, [passage], "vi")) == []
    assert critical_claims(run(answer, [passage], "vi", context=question))


def test_explanation_names_both_sides() -> None:
    report = run("Adults can take 4 g of paracetamol as a single dose.", [PARA_EN], "en")
    (claim,) = report.claims
    (m,) = claim.medical
    assert m.status == "contradicted"
    assert m.explanation == (
        "answer: paracetamol: 4000 mg per dose (adult); "
        "passage pil-paracetamol-en: max 4000 mg per 24 h (adult)"
    )
    (against, *_) = m.contradicting
    assert against.doc_id == "pil-paracetamol-en"
    assert against.reading.amount is not None and against.reading.amount.high == 4000
    assert against.reading.basis == "day" and against.reading.qualifier == "max"
    assert m.reading.drugs == ["paracetamol"] and m.reading.basis == "dose"


def test_unknown_when_no_passage_speaks_about_it() -> None:
    report = run("Metformin: take 500 mg twice a day.", [PARA_EN], "en")
    (m,) = report.claims[0].medical
    assert m.status == "unknown" and "metformin" in m.explanation


def test_conflict_when_passages_disagree_on_a_limit() -> None:
    old = ("leaflet-2019", "Paracetamol: adults, do not take more than 3 g in 24 hours.")
    report = run(
        "Adults should not take more than 4 g of paracetamol in 24 hours.", [PARA_EN, old], "en"
    )
    assert [m.status for m in report.claims[0].medical] == ["conflict"]


def test_question_context_gives_the_population() -> None:
    question = medical_context("How much amoxicilline for my son of 6 years?", "en", load_lexicon())
    assert question.drugs == ["amoxicillin"] and "child" in question.populations
    answer = "Geef 500 mg driemaal daags."
    assert critical_claims(run(answer, [AMOX_NL], "nl")) == []
    assert critical_claims(run(answer, [AMOX_NL], "nl", context=question))


@pytest.mark.parametrize(
    ("answer", "language"),
    [
        ("These documents do not let me answer that.", "en"),
        ("Could you tell me how much your child weighs?", "en"),
        ("Vraag het uw apotheker.", "nl"),
        ("Dat kan ik niet zeggen op basis van deze bijsluiter.", "nl"),
        ("Xin chào! Mình không có thông tin về liều này.", "vi"),
        ("Bạn hãy hỏi dược sĩ nhé.", "vi"),
    ],
)
def test_not_a_claim(answer: str, language: str) -> None:
    report = run(answer, [PARA_EN], language)
    assert report.claims == [] and report.faithfulness == 1.0


def test_report_round_trips_as_json() -> None:
    report = run("Adults can take up to 8 g of paracetamol in 24 hours.", [PARA_EN], "en")
    again = GroundingReport.model_validate_json(report.model_dump_json())
    assert again == report
    data = json.loads(report.model_dump_json())
    reading = data["claims"][0]["medical"][0]["reading"]
    assert {"drugs", "amount", "unit", "basis", "polarity", "summary"} <= set(reading)


def test_passage_cache_is_bounded_in_entries_bytes_and_time() -> None:
    lexicon = load_lexicon()
    clock = [0.0]
    cache = PassageCache(max_entries=2, max_bytes=10**6, ttl_seconds=10, clock=lambda: clock[0])
    a, b, c = (
        Passage(doc_id=d, text=f"Adults: {n} mg.") for d, n in (("a", 1), ("b", 2), ("c", 3))
    )
    for p in (a, b, c):
        cache.get(p, "en", lexicon)
    assert len(cache) == 2 and cache.stats.evicted == 1
    cache.get(c, "en", lexicon)
    assert cache.stats.hits == 1
    clock[0] = 11.0
    cache.get(c, "en", lexicon)
    assert cache.stats.expired == 1
    small = PassageCache(max_entries=100, max_bytes=2000, ttl_seconds=None)
    for i in range(20):
        small.get(Passage(doc_id=str(i), text="Adults: 500 mg. " * 5), "en", lexicon)
    assert small.bytes <= 2000 and len(small) < 20
    changed = Passage(doc_id="c", text="Adults: 4 mg.")
    assert cache.get(changed, "en", lexicon).text == "Adults: 4 mg."  # same id, new text
