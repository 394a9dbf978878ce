"""The shortcuts of the claim check give what the plain walks give.

Each shortcut (issue 9) decides in C, or by one search, what a token-by-token walk decided; here
each is run beside a plain version of that walk on every sentence of the adversarial set's
answers, questions and passages and of the example log.
"""

from __future__ import annotations

import json
from pathlib import Path

from services.grounding import load_lexicon
from services.grounding.lexicon import CONTRA_CUES, DOSE_CUES, REFERRAL_CUES, cues_for
from services.grounding.medical.reading import Carry, read_sentence
from services.grounding.quantities import amounts
from services.grounding.sentences import split_sentences
from services.grounding.text import _cue_keys, has_cue, phrase_key
from services.grounding.tokens import TextTokens, tokenize

ROOT = Path(__file__).resolve().parents[2]


def _texts() -> list[tuple[str, str | None]]:
    out: list[tuple[str, str | None]] = []
    for lang in ("en", "nl", "vi"):
        path = ROOT / "tests" / "data" / "grounding-cases" / f"{lang}.jsonl"
        for line in path.read_text(encoding="utf-8").splitlines():
            if line.strip():
                case = json.loads(line)
                out += [(case["question"], lang), (case["answer"], lang)]
                out += [(p["text"], lang) for p in case["retrieval"]]
    for line in (ROOT / "examples" / "chat-events.jsonl").read_text(encoding="utf-8").splitlines():
        if line.strip():
            ev = json.loads(line)
            out.append((ev["content"], ev.get("language")))
    return out


TEXTS = _texts()
SENTENCES = [(s.text, lang) for text, lang in TEXTS for s in split_sentences(text, lang)]


def test_has_cue_is_a_substring_search_of_the_padded_phrases() -> None:
    lists = [
        cues_for(t, lang)
        for t in (CONTRA_CUES, DOSE_CUES, REFERRAL_CUES)
        for lang in ("en", "nl", "vi", None)
    ]
    for text, _ in SENTENCES:
        key = phrase_key(text)
        for cues in lists:
            plain = any(k in key for k in _cue_keys(cues))
            assert has_cue(key, cues) == plain, (key, cues[:3])


def test_find_drugs_is_the_walk_of_drug_at() -> None:
    lex = load_lexicon().with_names({"fexofenadin": "fexofenadine"})
    for text, _ in SENTENCES:
        words = tokenize(text).words
        walk: list[tuple[int, int, str]] = []
        i = 0
        while i < len(words):
            hit = lex.drug_at(words, i, len(words))
            if hit is None:
                i += 1
                continue
            walk.append((i, i + hit[0], hit[1]))
            i += hit[0]
        assert list(lex.find_drugs(words, 0, len(words))) == walk, text


def test_text_tokens_of_a_sentence_are_its_own() -> None:
    for text, lang in [*TEXTS, ("Take 5 mg [doc:a]. Then  rest .\nİstanbul. Done.", "en")]:
        scanned = TextTokens(text)
        for s in split_sentences(text, lang):
            assert scanned.sentence(s.text, s.start, s.end) == tokenize(s.text), s.text


def test_a_quiet_sentence_hands_on_its_age_and_nothing_else() -> None:
    lex = load_lexicon()
    carry = Carry(drugs=frozenset({"ibuprofen"}), risk=frozenset({"alcohol"}), polarity="avoid")
    t = tokenize("He is 82 years old.")
    read = read_sentence(t, 0, len(t), amounts(t, "en"), "en", lex, carry)
    assert read.readings == ()
    assert read.carry.drugs == {"ibuprofen"} and read.carry.populations == {"elderly"}
    assert (read.carry.risk, read.carry.polarity) == (frozenset(), None)
    assert read.used == {2}


def test_the_terminator_search_skips_no_cut() -> None:
    text = 'Take 2.5 mg at 8 a.m. daily.) Next one!" And?! Then... ok. Dr. Who. End.[doc:x] Last'
    assert [s.text for s in split_sentences(text, "en")] == [
        "Take 2.5 mg at 8 a.m. daily.)",
        'Next one!"',
        "And?!",
        "Then... ok.",
        "Dr. Who.",
        "End.",
        "Last",
    ]
