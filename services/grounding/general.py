"""General advice: sentences that state nothing a passage could contradict by name or number.

An answer's ``other`` sentence (no dose or safety reading) is grounded by its content words
(:func:`~services.grounding.evidence.ground`). Measured over the tuning splits (sixteenth round,
``docs/grounding.md``), most right answers that were flagged were flagged by such a sentence in
words that are not the passage's: "it tends to work by the next morning", "straight after a
feed", "Congratulations!". A word test cannot tell those from a wrong sentence, but what the
sentence could be wrong *about* can be read: a sentence that names no drug, no population or
condition, no proper name and holds no number states **general advice**. Such a sentence, with
words the passages do not hold, is not a finding by itself when the answer it stands in is
*anchored*: the answer declines or defers (an abstention sentence, or a referral to a
professional: twenty-third round, five right answers more over 1,655 cases and no catch lost),
or another of its sentences that
does state something specific is grounded and at least half of its sentences are grounded. A
whole answer that nothing grounds is still flagged, sentence by sentence, as before, and so is
one whose sentences are mostly not in its passages (faithfulness below one half, which the
review queue's triage takes as a reason of its own): one grounded sentence does not excuse two
sentences of advice the passages do not hold, where a polarity flip the reading misses may hide.
Dose, contraindication and citation findings, and every number
missing from the passages, keep their rules.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Final

from services.grounding.lexicon import frames_for
from services.grounding.medical.lexicon import MedicalLexicon
from services.grounding.tokens import SYM, WORD, Tokens

__all__ = ["GeneralTest", "anchored_lazily", "states_specifics"]

#: Cue kinds of the medical lexicon that name whom or what a sentence is about.
_TOPIC_CUES: Final = frozenset({"pop", "cond"})
#: Symbols after which a capital opens a phrase rather than naming something ("… matter: A",
#: "(Take", "“Do"); bullets and dashes likewise.
_OPENERS: Final = frozenset({":", "(", '"', "“", "‘", "'", "-", "–", "—", "•", "*", ";"})
#: Capitalised words that are no names: the English pronoun "I".
_NOT_NAMES: Final = frozenset({"i"})


@lru_cache(maxsize=8)
def _professions(language: str | None) -> frozenset[str]:
    """The one-word professionals of the language's frames (``nonclaims.yaml``): "GP", "NHS"
    written in capitals name whom to ask, not what the sentence is about."""
    return frozenset(p for f in frames_for(language) for p in f.professionals if " " not in p)


def _proper_name(t: Tokens, language: str | None = None) -> bool:
    """Whether a word inside the sentence (not its first, not right after an opening symbol)
    starts with a capital: a name ("Serevent", "Hà Nội", "Leiden"); a professional ("your GP")
    is none. The same in the three languages: English, Dutch and Vietnamese write common nouns
    in lower case."""
    text, words, kinds, starts = t.text, t.words, t.kinds, t.starts
    roles = _professions(language)
    for i in range(1, len(t)):
        if kinds[i] != WORD or words[i] in _NOT_NAMES or not text[starts[i]].isupper():
            continue
        if words[i] in roles:
            continue
        if kinds[i - 1] == SYM and words[i - 1] in _OPENERS:
            continue
        return True
    return False


def _names_topic(t: Tokens, language: str | None, lexicon: MedicalLexicon) -> bool:
    """Whether the sentence names a drug (any spelling, brand or stem the lexicon reads) or a
    population or condition of ``rules/grounding/populations.yaml``."""
    if next(lexicon.find_drugs(t.words, 0, len(t)), None) is not None:
        return True
    lang = language if language in ("en", "nl", "vi") else "en"
    return any(c.kind in _TOPIC_CUES for _, _, c in lexicon.matcher(lang).find(t.words, 0, len(t)))


def states_specifics(t: Tokens, language: str | None, lexicon: MedicalLexicon) -> bool:
    """Whether the sentence ``t`` (one without numbers: a sentence with one is never general
    advice, :mod:`services.grounding.claims` tests none) names something specific: a drug, a
    population or condition, or a proper name. A sentence that names none is general advice.

    >>> from services.grounding.medical.lexicon import load_lexicon
    >>> from services.grounding.tokens import tokenize
    >>> lex = load_lexicon()
    >>> states_specifics(tokenize("It tends to work by the next morning."), "en", lex)
    False
    >>> states_specifics(tokenize("It works faster with Brivex."), "en", lex)
    True
    >>> states_specifics(tokenize("It helps patients with asthma."), "en", lex)
    True
    """
    return _proper_name(t, language) or _names_topic(t, language, lexicon)


@dataclass(slots=True, eq=False)
class GeneralTest:
    """Whether a sentence with no number (and no dose or safety reading) is general advice,
    worked out at the first ask and kept: the drug, group and name lookups of
    :func:`states_specifics` run only for the sentences whose words fail the passages (the
    grounding stage asks no other), not for every ``other`` sentence."""

    tokens: Tokens
    language: str | None
    lexicon: MedicalLexicon
    _result: list[bool] = field(default_factory=list)

    def __call__(self) -> bool:
        if not self._result:
            self._result.append(not states_specifics(self.tokens, self.language, self.lexicon))
        return self._result[0]


def anchored_lazily(
    sentences: Sequence[tuple[bool, GeneralTest | None]], declines: bool
) -> Callable[[], bool]:
    """Whether the answer is anchored in its passages (see the module docstring), worked out at
    the first ask and kept. ``sentences``: per sentence, whether it is grounded and its general
    test (``None``: it cannot be general advice, so grounded it anchors the answer without a
    test); ``declines``: one of its sentences is an abstention or a referral."""
    rows = sentences
    kept: list[bool] = []

    def held() -> bool:
        if not kept:
            grounded = sum(ok for ok, _ in rows)
            kept.append(
                declines
                or (
                    2 * grounded >= len(rows)
                    and (
                        any(ok and test is None for ok, test in rows)
                        or any(ok and test is not None and not test() for ok, test in rows)
                    )
                )
            )
        return kept[0]

    return held
