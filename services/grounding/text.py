"""Words, content units and cue phrases, per language.

Content units are what content-word support counts:

- English and Dutch: lower-cased words without stop words, numbers or one-letter words,
  negations read as ``not``, with a light suffix stripping (``tablets`` → ``tablet``,
  ``studies`` → ``study``, ``tabletten`` → ``tablet``) so that inflection does not hide support.
- Vietnamese is written in syllables separated by spaces; one syllable is rarely a word. Units
  are syllable bigrams within a phrase (``liều tối``, ``tối đa``); a bigram of two stop
  syllables is dropped. A passage also offers its single syllables, so that a one-syllable
  claim can still be supported.

Language comes from the event (``en``, ``nl``, ``vi``); without it, text with many Vietnamese
letters is treated as Vietnamese and anything else with the union of the English and Dutch lists.
"""

from __future__ import annotations

import itertools
import re
import unicodedata
from collections.abc import Iterable
from functools import lru_cache
from typing import Final

from services.grounding.lexicon import LANGUAGES, NEGATIONS, STOP_WORDS, for_language

__all__ = [
    "claim_units",
    "detect_language",
    "has_cue",
    "opening_cue",
    "passage_units",
    "phrase_key",
    "tokens",
    "words",
]

#: Words: a run of letters/digits, optionally with one apostrophe suffix (``don't``). This one
#: pattern uses Python's ``re``: it cannot backtrack (a character class repeated, then an
#: optional fixed suffix), so it is linear by construction, and it runs ~25x faster than the RE2
#: wrapper's per-match overhead on passage-sized text.
_TOKEN = re.compile(r"[^\W_]+(?:['’][^\W_]+)?")
_VI_LETTERS: Final = frozenset(
    "ăâđêôơưàảãáạằẳẵắặầẩẫấậèẻẽéẹềểễếệìỉĩíịòỏõóọồổỗốộờởỡớợùủũúụừửữứựỳỷỹýỵ"
)
#: Light suffix stripping, tried in order, first match wins; the stem keeps at least 3 letters.
_SUFFIXES: Final[dict[str, tuple[str, ...]]] = {
    "en": ("ations", "ation", "ments", "ment", "ness", "ings", "ing", "ly", "ed", "es", "s", "e"),
    "nl": ("heden", "heid", "ingen", "ing", "tjes", "tje", "en", "es", "e", "s"),
}
_ALL_SUFFIXES: Final = tuple(sorted({s for v in _SUFFIXES.values() for s in v}, key=len)[::-1])
_VOWELS: Final = frozenset("aeiouy")


def detect_language(text: str, hint: str | None) -> str | None:
    """``en``/``nl``/``vi`` from the event's tag, else ``vi`` by its letters, else ``None``."""
    base = hint.split("-", 1)[0].lower() if hint else None
    if base in LANGUAGES:
        return base
    sample = unicodedata.normalize("NFC", text[:4000])
    letters = sum(ch.isalpha() for ch in sample)
    marked = sum(ch.lower() in _VI_LETTERS for ch in sample)
    return "vi" if letters and marked / letters > 0.05 else None


def tokens(text: str) -> list[tuple[str, int, int]]:
    """Lower-cased words with their spans in the NFC form of ``text``; ``don't`` → ``not``,
    ``Arthur's`` → ``arthur``."""
    out: list[tuple[str, int, int]] = []
    for m in _TOKEN.finditer(unicodedata.normalize("NFC", text)):
        out.append((_word(m.group().lower()), m.start(), m.end()))
    return out


def _word(raw: str) -> str:
    word = raw.replace("’", "'")
    if "'" in word:
        head, tail = word.split("'", 1)
        word = "not" if tail == "t" and head.endswith("n") else head
    return word


def words(text: str) -> list[str]:
    """The words of :func:`tokens` without their spans (faster, for passages)."""
    return [_word(w) for w in _TOKEN.findall(unicodedata.normalize("NFC", text).lower())]


def _stem(word: str, language: str | None) -> str:
    """Strip one inflectional suffix: ``studies`` → ``study``, ``tabletten`` → ``tablet``."""
    if len(word) <= 3 or word[-1].isdigit():
        return word
    if language != "nl" and word.endswith(("ies", "ied")) and len(word) > 4:
        return word[:-3] + "y"
    if word.endswith(("ss", "us", "is")):
        return word
    for suffix in _SUFFIXES.get(language or "", _ALL_SUFFIXES):
        stem = word[: -len(suffix)]
        least = 4 if suffix == "ly" else 3
        if word.endswith(suffix) and len(stem) >= least and _VOWELS.intersection(stem):
            word = stem
            break
    if len(word) > 3 and word[-1] == word[-2] and word[-1] not in _VOWELS | {"l", "s"}:
        word = word[:-1]  # tablett -> tablet, stopp -> stop
    return word


def _latin_units(text: str, language: str | None) -> frozenset[str]:
    stop = for_language(STOP_WORDS, language if language != "vi" else None)
    return frozenset(
        "not" if word in NEGATIONS else _stem(word, language)
        for word in set(words(text))
        if len(word) > 1 and not word[0].isdigit() and word not in stop
    )


def _vi_runs(text: str) -> Iterable[list[str]]:
    """Runs of syllables not interrupted by punctuation or numbers."""
    text = unicodedata.normalize("NFC", text)
    run: list[str] = []
    last_end = -1
    for word, start, end in tokens(text):
        broken = last_end >= 0 and text[last_end:start].strip() != ""
        if broken or word[0].isdigit():
            if run:
                yield run
            run = []
        if not word[0].isdigit():
            run.append(word)
        last_end = end
    if run:
        yield run


def _vi_units(text: str, *, unigrams: bool) -> frozenset[str]:
    stop = STOP_WORDS["vi"]
    bigrams: set[str] = set()
    singles: set[str] = set()
    for run in _vi_runs(text):
        singles.update(w for w in run if w not in stop)
        bigrams.update(
            f"{a} {b}" for a, b in itertools.pairwise(run) if a not in stop or b not in stop
        )
    if unigrams or not bigrams:
        return frozenset(bigrams | singles)
    return frozenset(bigrams)


def claim_units(text: str, language: str | None) -> frozenset[str]:
    """The content units of a claim (see the module docstring)."""
    if language == "vi":
        return _vi_units(text, unigrams=False)
    return _latin_units(text, language)


def passage_units(text: str, language: str | None) -> frozenset[str]:
    """The content units a passage offers (Vietnamese: bigrams and single syllables)."""
    if language == "vi":
        return _vi_units(text, unigrams=True)
    return _latin_units(text, language)


def phrase_key(text: str) -> str:
    """Words of ``text`` joined by single spaces and padded: ``" do not take "``."""
    return " " + " ".join(word for word, _, _ in tokens(text)) + " "


@lru_cache(maxsize=64)
def _cue_keys(cues: tuple[str, ...]) -> tuple[str, ...]:
    return tuple(phrase_key(cue) for cue in cues)


def has_cue(key: str, cues: tuple[str, ...]) -> bool:
    """Whether the padded phrase ``key`` contains one of ``cues`` as whole words."""
    return any(cue in key for cue in _cue_keys(cues))


def opening_cue(key: str, cues: tuple[str, ...]) -> str | None:
    """The longest of ``cues`` that the padded phrase ``key`` opens with, or ``None``."""
    found = [cue for cue in _cue_keys(cues) if key.startswith(cue)]
    return max(found, key=len) if found else None
