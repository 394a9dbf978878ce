"""The cheaper reading of a question's context gives what the full reader gives.

:func:`services.grounding.grounding.medical_context` reads most sentences with
:func:`~services.grounding.medical.context.sentence_context` and splits only the sentences it
reads (``split_sentences(..., at_most=...)``); each is checked here against the plain way (the
whole split, every sentence through :func:`read_sentence`) on every question, answer and passage
of the adversarial set and on a table of edge cases.
"""

from __future__ import annotations

import json
from decimal import Decimal
from pathlib import Path

import pytest

from schemas.verdicts import AMOUNT_CHARS, MedicalContext
from services.grounding import load_lexicon
from services.grounding.grounding import (
    QUESTION_CHARS,
    QUESTION_SENTENCES,
    _denied,
    _denies_asker,
    _question_age,
    body_weight,
    medical_context,
)
from services.grounding.medical.context import safety_free, sentence_context
from services.grounding.medical.reading import Carry, first_age, read_sentence
from services.grounding.quantities import amounts
from services.grounding.sentences import split_sentences
from services.grounding.text import detect_language
from services.grounding.tokens import PhraseMatcher, tokenize

CASES = Path(__file__).resolve().parents[1] / "data" / "grounding-cases"

EDGE = [
    ("My son of 6 has a fever. Can he take ibuprofen? He weighs 20 kg.", "en"),
    ("Ik ben zwanger. Mag ik ibuprofen? Hetzelfde geldt voor naproxen.", "nl"),
    ("Do not take ibuprofen with alcohol. The same goes for naproxen. My mum is 82.", "en"),
    ("Mijn nierklaring is 25. Hoeveel metformine mag ik?", "nl"),
    ("My eGFR is 40 and my kidneys work normally. Metformin 500 mg?", "en"),
    ("Creatinine clearance 30 ml/min. How much gabapentin?", "en"),
    ("Tôi 70 tuổi, độ lọc cầu thận 25 ml/phút. Uống metformin bao nhiêu?", "vi"),
    ("Hello! [doc:a]\n[doc:b]\nIs paracetamol fine?\n- one\n- two\n[1]\nThree.", "en"),
    ("A. B. C. D. E. F.", None),
    ("How much amoxicillin for a child of 14 kilo? Thank you.", None),
    ("", "en"),
    ("   \n\n  ", "en"),
]


def _texts() -> list[tuple[str, str | None]]:
    out = list(EDGE)
    for lang in ("en", "nl", "vi"):
        for line in (CASES / f"{lang}.jsonl").read_text(encoding="utf-8").splitlines():
            if line.strip():
                case = json.loads(line)
                out += [(case["question"], lang), (case["question"], None), (case["answer"], lang)]
                out += [(p["text"], lang) for p in case["retrieval"]]
    return out


TEXTS = _texts()


def _plain(text: str, language: str | None) -> MedicalContext:
    """medical_context as it read every sentence before: the whole split, the full reader."""
    lex = load_lexicon()
    lang = detect_language(text, language)
    drugs: set[str] = set()
    populations: set[str] = set()
    age: tuple[Decimal | None, Decimal | None] | None = None
    carry = Carry()
    clearance: Decimal | None = None
    asked = {g.key for g in lex.group_file.conditions if g.population}
    read_to = 0
    said: set[str] = set()
    for sentence in split_sentences(text[:QUESTION_CHARS], lang)[:QUESTION_SENTENCES]:
        read_to = sentence.end
        t = tokenize(sentence.text)
        found = amounts(t, lang)
        said |= {q.key for a in found for q in a.parts if q.has_unit and len(q.key) <= AMOUNT_CHARS}
        read = read_sentence(t, 0, len(t), found, lang, lex, carry)
        # the group a question asks about; the groups a drugless denial does not deny
        if (
            read.carry.risk
            and t.words
            and (t.words[-1] == "?" or _denies_asker(read.carry, t, lang, lex))
        ):
            groups = read.carry.risk & (asked | {"child", "elderly", "adolescent"})
            groups -= _denied(t, lang, lex)  # "an adult who isn't on dialysis"
            populations |= groups
            if age is None and groups - asked:
                age = first_age(t, lang)  # "Can my 12-year-old take it?"
        drugs |= read.carry.drugs
        got = read.carry.clearance
        if clearance is None and got is not None and got.kind == "exact" and got.low == got.high:
            clearance = got.low
        if read.carry.populations != carry.populations:
            populations |= read.carry.populations
            age = read.carry.age or age
        carry = read.carry
    if age is None:
        years = _question_age(text[:read_to])
        if years is not None:
            age = (years, years)
            populations.add("elderly" if years >= 65 else "adult" if years >= 18 else "child")
    weight = body_weight(text[:read_to], lang)
    if (
        weight is not None
        and weight < 30
        and populations.isdisjoint({"adult", "child", "elderly", "adolescent"})
    ):
        populations.add("child")  # a body weight only a child has
    return MedicalContext(
        weight_kg=float(weight) if weight is not None else None,
        clearance_ml_min=float(clearance) if clearance is not None else None,
        drugs=sorted(drugs)[:16],
        populations=sorted(populations)[:16],
        age_min_years=float(age[0]) if age and age[0] is not None else None,
        age_max_years=float(age[1]) if age and age[1] is not None else None,
        amounts=sorted(said)[:16],
    )


def test_medical_context_is_the_full_readers() -> None:
    lex = load_lexicon()
    assert len(TEXTS) > 3000
    for text, language in TEXTS:
        assert medical_context(text, language, lex) == _plain(text, language), text


@pytest.mark.parametrize("at_most", [0, 1, 2, 4])
def test_split_at_most_is_the_first_of_the_whole_split(at_most: int) -> None:
    for text, language in TEXTS[:1500]:
        assert split_sentences(text, language, at_most) == split_sentences(text, language)[:at_most]


def test_a_marker_line_after_the_last_sentence_read_is_kept() -> None:
    text = "Take 500 mg.\n[doc:a]\nThen rest."
    first = split_sentences(text, "en", 1)
    assert [m.doc_ids for m in first[0].markers] == [("a",)]


def test_sentence_context_is_the_readers_carry_or_declines() -> None:
    lex = load_lexicon()
    declined = 0
    for text, language in TEXTS:
        lang = detect_language(text, language)
        carry = Carry(drugs=frozenset({"ibuprofen"}))
        for sentence in split_sentences(text, lang):
            t = tokenize(sentence.text)
            full = read_sentence(t, 0, len(t), amounts(t, lang), lang, lex, carry).carry
            quick = sentence_context(t, lang, lex, carry)
            if quick is None:
                declined += 1
            else:
                assert (quick.drugs, quick.populations, quick.age, quick.clearance) == (
                    full.drugs,
                    full.populations,
                    full.age,
                    full.clearance,
                ), sentence.text
            if safety_free(t, lang, lex):
                assert (full.risk, full.polarity) == (frozenset(), None), sentence.text
            carry = full
    assert declined  # the population sentences


@pytest.mark.parametrize(
    ("sentence", "language"),
    [
        ("Can my son of 6 take it?", "en"),
        ("Is it safe in pregnancy?", "en"),
        ("Mag ik dit als ik zwanger ben?", "nl"),
        ("How much for people over 65?", "en"),
        ("Tôi đang mang thai.", "vi"),
    ],
)
def test_a_sentence_that_states_a_population_is_read_in_full(sentence: str, language: str) -> None:
    assert sentence_context(tokenize(sentence), language, load_lexicon(), Carry()) is None


def test_a_rate_in_ml_per_minute_is_a_clearance_without_the_full_reader() -> None:
    lex = load_lexicon()
    ml = sentence_context(tokenize("Clearance of 40 ml/min."), "en", lex, Carry())
    assert ml is not None and ml.clearance is not None and ml.clearance.low == 40
    # kidney impairment selects a population: such a sentence is read in full
    assert sentence_context(tokenize("Mijn nierklaring is 25."), "nl", lex, Carry()) is None


def test_phrase_matcher_find_and_occurs() -> None:
    m: PhraseMatcher[str] = PhraseMatcher(
        [(("a",), "A"), (("a", "b"), "AB"), (("b", "c"), "BC"), (("c",), "C")]
    )
    words = ["x", "a", "b", "c", "a", "c"]
    assert list(m.find(words)) == [(1, 3, "AB"), (3, 4, "C"), (4, 5, "A"), (5, 6, "C")]
    assert list(m.find(words, 2, 4)) == [(2, 4, "BC")]
    only_bc = m.subset(lambda p: p == "BC")
    assert only_bc.occurs(words)  # "b c" is there, though find reads "a b" first
    assert not only_bc.occurs(words, 3)
    assert not PhraseMatcher[str]().occurs(words)
