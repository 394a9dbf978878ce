"""Drug names an event's passages teach: a passage sentence that opens with a name and its
strength.

Leaflets and monographs head their text with the product: "Meclozine 12.5 mg tablets",
"Dulcolax (bisacodyl) 5 mg", "Pinaveriumbromide 50 mg", "Bisolvon (bromhexin hydroclorid) viên
8 mg". A drug in no lexicon and without an INN stem is then still a drug for that event — its
passages and the answer checked against them — so another drug's dose under its name is
compared with its own passage, not bound to whichever passage names a known drug.

Only a passage's first sentence is read, and its first word must be written with a capital (a
heading, not a clause after a semicolon: "; behandeling 1 mg/kg"). The opening must be: one or
two names (the second in brackets), then only salts and dose forms
(``rules/grounding/drugs.yaml`` ``opening``), then a number with a strength unit. A name is a
word of five letters or more that is no stop word, cue, population or unit word of the language
(and, in Vietnamese, written without tone marks, as transliterated drug names are). A name the
lexicon knows lends its drug to the other ("Maxalt" in "Rizatriptan (Maxalt) 10 mg"); two unknown
names become one drug, keyed by the name written in lower case (the INN, as leaflets write it
after a capitalised brand), else the first.
"""

from __future__ import annotations

from typing import Final

from services.grounding.lexicon import STOP_WORDS, for_language
from services.grounding.medical.lexicon import MedicalLexicon, spelling_key
from services.grounding.tokens import NUM, SYM, WORD, Tokens

__all__ = ["looks_like_name", "opening_names"]

#: Tokens read from a sentence's start before giving up.
_REACH: Final = 8
_SHORTEST: Final = 5


def _strip_salt(word: str, salts: frozenset[str]) -> str:
    """``pinaveriumbromide`` → ``pinaverium`` (a salt glued to the name's end)."""
    for salt in salts:
        if len(word) > len(salt) + _SHORTEST and word.endswith(salt):
            return word[: -len(salt)]
    return word


def looks_like_name(t: Tokens, i: int, language: str | None, lexicon: MedicalLexicon) -> bool:
    """Whether token ``i`` names a drug or looks like a product name: written with a capital,
    five letters or more, no stop word, cue or unit word ("Van Imigran 50 mg")."""
    if lexicon.drug_at(t.words, i, i + 1) is not None:
        return True
    return t.text[t.starts[i] : t.starts[i] + 1].isupper() and _is_name(
        t.words[i], language, lexicon
    )


def _is_name(word: str, language: str | None, lexicon: MedicalLexicon) -> bool:
    if len(word) < _SHORTEST or not word.isalpha():
        return False
    if language == "vi" and not word.isascii():
        return False
    if word in for_language(STOP_WORDS, language):
        return False
    return (word,) not in lexicon.matcher(language)


def opening_names(t: Tokens, language: str | None, lexicon: MedicalLexicon) -> dict[str, str]:
    """``{spelling key: drug}`` for the names the sentence ``t`` opens with, or ``{}``.

    >>> from services.grounding.medical import load_lexicon
    >>> from services.grounding.tokens import tokenize
    >>> opening_names(tokenize("Meclozine 12.5 mg tablets."), "en", load_lexicon())
    {'meclozin': 'meclozin'}
    >>> opening_names(tokenize("Adults: 25 mg."), "en", load_lexicon())
    {}
    """
    spec = lexicon.drug_file.opening
    if spec is None:
        return {}
    salts = frozenset(s.lower() for s in spec.salts)
    forms = frozenset(f.lower() for f in spec.forms)
    units = frozenset(u.lower() for u in spec.units)
    purpose = frozenset(p.lower() for p in spec.purpose)
    not_names = frozenset(n.lower() for n in spec.not_names)
    words, kinds = t.words, t.kinds
    if not t.text[:1].isupper():
        return {}
    names: list[tuple[str, bool]] = []  # (name, written in lower case)
    j = 0
    headed = False  # a heading of purpose: "Topiramaat bij epilepsie"
    while j < min(len(t), _REACH):
        word, kind = words[j], kinds[j]
        if kind == NUM:
            break
        if kind == WORD and names and word in purpose:
            headed = True
            break
        if kind == SYM:
            if word == ":" and names and language in spec.colon_languages and j == len(names):
                headed = True  # "Sulfasalazin: phải ngừng thuốc …"
                break
            if word not in "()":
                return {}
        elif kind == WORD and (word in salts or word in forms):
            pass
        elif kind == WORD and len(names) < 2:
            name = _strip_salt(word, salts)
            if name in not_names or not _is_name(name, language, lexicon):
                return {}
            names.append((name, t.text[t.starts[j]].islower()))
        else:
            return {}
        j += 1
    if not names:
        return {}
    if not headed:
        if j + 1 >= len(t) or kinds[j] != NUM or words[j + 1] not in units:
            return {}
        if j + 3 < len(t) and words[j + 2] == "/" and words[j + 3] not in units:
            return {}  # "1 mg/kg", "10 mg/dag": a dose, not a strength ("0,5 mg/ml" is one)
    known = [d for d in (lexicon.known_drug(n) for n, _ in names) if d is not None]
    lower = next((n for n, low in names if low), names[0][0])
    drug = known[0] if known else spelling_key(lower)
    return {spelling_key(n): drug for n, _ in names if lexicon.known_drug(n) is None}
