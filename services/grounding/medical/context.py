"""What a sentence of a question hands on, without reading its dose and safety claims.

:func:`~services.grounding.grounding.medical_context` needs of each sentence of a user turn only
the :class:`~services.grounding.medical.reading.Carry` that
:func:`~services.grounding.medical.reading.read_sentence` hands to the next one: drugs,
population and age, kidney clearance. Where a sentence states no population, that carry follows
from its drug names and clearances alone (population and age pass through unchanged), so
:func:`sentence_context` gives it without the reader's claim assembly, which is most of its cost.

Whether a sentence states a population is decided conservatively, by checks that can only say
"maybe" too often, never too seldom: a population phrase (or a condition phrase that selects a
population) of the language's matcher anywhere in it, such a condition as the head of a
compound, or an age the reader's age function finds. For those sentences it returns ``None`` and
the caller reads that sentence in full. Safety claims (the carry's ``risk`` and ``polarity``)
are not read: the full read of a later sentence needs them exact, which they are after a
sentence that :func:`safety_free` clears (none), else the caller reads again from there.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Final

from services.grounding.medical.lexicon import Cue, MedicalLexicon
from services.grounding.medical.reading import (
    _AGE_READERS,
    _MEASURED,
    _POLARITY_KINDS,
    Carry,
    _clearances,
    _cues_and_drugs,
    _without_normal,
)
from services.grounding.quantities import UNITS, amounts
from services.grounding.tokens import NUM, PhraseMatcher, Tokens, phrase_tokens

__all__ = ["safety_free", "sentence_context"]

#: First words of the units a kidney clearance is written in ("30 ml/min"): an amount is a
#: clearance only with the ``ml`` symbol.
_ML_WORDS: Final = frozenset(
    phrase_tokens(spelling)[0] for spelling, info in UNITS.items() if info.symbol == "ml"
)


def _states_population(cue: Cue) -> bool:
    return cue.kind == "pop" or (cue.kind == "cond" and cue.population)


def _measured(cue: Cue) -> bool:
    return cue.kind == "cond" and cue.value in _MEASURED


def _safety(cue: Cue) -> bool:
    return cue.kind in _POLARITY_KINDS


@lru_cache(maxsize=16)
def _hints(
    matcher: PhraseMatcher[Cue],
) -> tuple[PhraseMatcher[Cue], PhraseMatcher[Cue], PhraseMatcher[Cue]]:
    """The matcher's population phrases, its measured conditions and the phrases a safety
    claim needs, as matchers of their own (one triple per language's matcher; the lexicons are
    loaded once per process)."""
    return (
        matcher.subset(_states_population),
        matcher.subset(_measured),
        matcher.subset(_safety),
    )


def safety_free(tokens: Tokens, language: str | None, lexicon: MedicalLexicon) -> bool:
    """Whether the sentence can make no safety claim, whatever came before it: no phrase of a
    kind a clause's polarity comes from, nor a condition as the head of a compound. Then the
    carry it hands on has no ``risk`` and no ``polarity``, as :func:`sentence_context` gives."""
    lang = language if language in _AGE_READERS else "en"
    words = tokens.words
    if _hints(lexicon.matcher(lang))[2].occurs(words):
        return False
    return not (lexicon.compounds(lang) and lexicon.compound_conditions(words, 0, len(words), lang))


def sentence_context(
    tokens: Tokens, language: str | None, lexicon: MedicalLexicon, carry: Carry
) -> Carry | None:
    """The carry ``read_sentence(tokens, 0, len(tokens), amounts(tokens, language), language,
    lexicon, carry)`` hands on, in drugs, population, age and clearance, for a sentence that
    states no population; ``None`` when it may state one (see the module docstring). Its
    ``risk`` and ``polarity`` are left empty, not read."""
    lang = language if language in _AGE_READERS else "en"
    words = tokens.words
    n = len(words)
    populations, measured, _ = _hints(lexicon.matcher(lang))
    if populations.occurs(words):
        return None
    compounds = lexicon.compound_conditions(words, 0, n, lang) if lexicon.compounds(lang) else []
    if any(_states_population(c) for _, _, c in compounds):
        return None
    # no population phrase, so the reader looks for ages without a group of people
    if NUM in tokens.kinds and _AGE_READERS[lang](tokens, 0, n, False):
        return None
    stated = frozenset(inn for _, _, inn in lexicon.find_drugs(words, 0, n))
    clearance = carry.clearance
    renal = measured.occurs(words) or any(_measured(c) for _, _, c in compounds)
    if renal or not _ML_WORDS.isdisjoint(words):  # else no clearance can be read
        found = amounts(tokens, language)
        cues, _ = _cues_and_drugs(tokens, 0, n, found, lang, lexicon)
        cues = _without_normal(cues, words, lexicon.cues[lang].normal_words)
        bands = _clearances(tokens, found, cues)
        if bands:
            clearance = bands[-1][1]
    return Carry(
        drugs=stated or carry.drugs,
        populations=carry.populations,
        age=carry.age,
        clearance=clearance,
    )
