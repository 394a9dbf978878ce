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
from collections.abc import Callable, Iterable
from functools import lru_cache
from typing import Final

from services.grounding.lexicon import (
    LANGUAGES,
    NEGATIONS,
    STOP_WORDS,
    SYNONYMS,
    NonclaimFrames,
    for_language,
)
from services.grounding.quantities import NUMBER_WORDS, UNITS
from services.grounding.tokens import NUM, WORD, PhraseMatcher, Tokens, tokenize

__all__ = [
    "claim_units",
    "detect_language",
    "has_cue",
    "names_professional",
    "opening_cue",
    "passage_units",
    "phrase_key",
    "tokens",
    "units_of",
    "words",
]

#: Words longer than this are not memoised by the stemmer (nor is anything once it holds
#: ``_STEM_MEMO`` words): the memo stays bounded whatever the text.
_STEM_MEMO: Final = 20_000
_STEM_MAX_LEN: Final = 40
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
    """Lower-cased words and numbers with their spans in the NFC form of ``text``; ``don't`` →
    ``not``, ``Arthur's`` → ``arthur`` (symbols left out)."""
    t = tokenize(text)
    return [
        (w, s, e) for w, k, s, e in zip(t.words, t.kinds, t.starts, t.ends, strict=True) if k != 2
    ]


def words(text: str) -> list[str]:
    """The words and numbers of :func:`tokens` without their spans."""
    t = tokenize(text)
    return [w for w, k in zip(t.words, t.kinds, strict=True) if k != 2]


@lru_cache(maxsize=_STEM_MEMO)
def _stem_memo(word: str, language: str | None) -> str:
    return _stem(word, language)


def _stem(word: str, language: str | None) -> str:
    """Strip one inflectional suffix: ``studies`` → ``study``, ``tabletten`` → ``tablet``."""
    if len(word) <= 3 or word[-1].isdigit():
        return word
    if language != "nl" and word.endswith(("ies", "ied")) and len(word) > 4:
        return word[:-3] + "y"
    if word.endswith(("ss", "us", "is")):
        return word
    if language == "nl" and word.endswith(("je", "jes")):
        base = _diminutive(word)
        if base is not None:
            return _stem(base, language)
    for suffix in _SUFFIXES.get(language or "", _ALL_SUFFIXES):
        stem = word[: -len(suffix)]
        least = 4 if suffix == "ly" else 3
        if word.endswith(suffix) and len(stem) >= least and _VOWELS.intersection(stem):
            word = stem
            break
    if len(word) > 3 and word[-1] == word[-2] and word[-1] not in _VOWELS | {"l", "s"}:
        word = word[:-1]  # tablett -> tablet, stopp -> stop
    return word


def _diminutive(word: str) -> str | None:
    """The noun of a Dutch diminutive ("flesje" → "fles", "tabletje" → "tablet",
    "druppeltjes" → "druppel"), or ``None`` when the word is none (round 27)."""
    core = word[:-1] if word.endswith("s") else word
    if (
        core.endswith("tje")
        and len(core) > 5
        and (core[-4] in "lnrw" or (core[-4] in _VOWELS and core[-5] == core[-4]))
    ):
        return core[:-3]  # "druppeltje", "beetje"; after one vowel it is "-je": "tabletje"
    if core.endswith("je") and len(core) > 4 and core[-3] not in _VOWELS | set("lnrwj"):
        return core[:-2]
    return None


def stem(word: str, language: str | None) -> str:
    """:func:`_stem`, memoised per (word, language) up to a bound."""
    if len(word) > _STEM_MAX_LEN:
        return _stem(word, language)
    return _stem_memo(word, language)


#: A phrase of a synonym family → its concept units (``~key``); discourse words → none.
Concepts = PhraseMatcher[tuple[str, ...]]


@lru_cache(maxsize=8)
def concepts(language: str | None) -> Concepts:
    """The phrase matcher of ``rules/grounding/synonyms.yaml`` for ``language`` (every Latin
    language's when it is unknown): English and Dutch phrases as stems, Vietnamese as
    syllables. A phrase listed in two families carries both families' units."""
    langs = (language,) if language in LANGUAGES else ("en", "nl")
    payloads: dict[tuple[str, ...], set[str]] = {}

    def key(phrase: str) -> tuple[str, ...]:
        words_ = tokenize(phrase).words
        return tuple(words_ if language == "vi" else (stem(w, language) for w in words_))

    for lang in langs:
        for keys, phrases in SYNONYMS.families:
            for phrase in phrases[lang]:
                payloads.setdefault(key(phrase), set()).update(f"~{k}" for k in keys)
        for phrase in SYNONYMS.discourse[lang]:
            payloads.setdefault(key(phrase), set())
    return PhraseMatcher((words_, tuple(sorted(units))) for words_, units in payloads.items())


def _concept_hits(
    words_: list[str], lo: int, hi: int, language: str | None, *, passage: bool
) -> tuple[set[str], set[int]]:
    """Concept units found in ``words_[lo:hi]`` and the token indices they stand for (none for
    a passage, which keeps its own words too; discourse words only count in claims)."""
    found: set[str] = set()
    covered: set[int] = set()
    for first, stop, units in concepts(language).find(words_, lo, hi):
        if passage and not units:
            continue
        found.update(units)
        if not passage:
            covered.update(range(first, stop))
    return found, covered


_HALVES: Final = frozenset({"half", "halve", "nửa"})
_ARTICLES: Final = frozenset({"a", "an"})


def _is_quantity_word(t: Tokens, i: int, language: str | None) -> bool:
    """A number word before a unit ("thirty minutes") or a unit right after a number ("30
    minutes", "dertig minuten"): the number check compares them, not content-word support."""
    words_ = t.words
    word = words_[i]
    if word in NUMBER_WORDS:  # only with its unit: a bare "seven" is content
        return i + 1 < len(words_) and words_[i + 1] in UNITS
    if word in _HALVES:  # "half an hour", "een half uur", "een halve minuut", "nửa giờ"
        j = i + 2 if i + 2 < len(words_) and words_[i + 1] in _ARTICLES else i + 1
        return j < len(words_) and words_[j] in UNITS
    if word in UNITS and i:
        prev = words_[i - 1]
        if prev in _ARTICLES and i > 1:
            prev = words_[i - 2]
        return t.kinds[i - 1] == NUM or prev in NUMBER_WORDS or prev in _HALVES
    return False


#: Stems per language, read inline by :func:`_latin_units` (bounded like the stem memo).
_STEMS: Final[dict[str | None, dict[str, str]]] = {}
#: Words :func:`_is_quantity_word` can be true for.
_QUANTITY_WORDS: Final = frozenset(NUMBER_WORDS) | frozenset(UNITS) | _HALVES


def _stem_into(memo: dict[str, str], word: str, language: str | None) -> str:
    """The stem of ``word``, kept in ``memo`` while it is below its bound."""
    s = _stem(word, language)
    if len(memo) < _STEM_MEMO and len(word) <= _STEM_MAX_LEN:
        memo[word] = s
    return s


def _latin_units(
    t: Tokens, lo: int, hi: int, language: str | None, *, passage: bool = False
) -> frozenset[str]:
    stop = for_language(STOP_WORDS, language if language != "vi" else None)
    words_, kinds = t.words, t.kinds
    memo = _STEMS.get(language)
    if memo is None:
        memo = _STEMS.setdefault(language, {})
    get = memo.get
    # symbols and numbers pass through unchanged (no suffix to strip)
    stems = [get(w) or _stem_into(memo, w, language) for w in words_[lo:hi]]
    out, covered = _concept_hits(stems, 0, hi - lo, language, passage=passage)
    seen: set[str] = set()
    for i in range(lo, hi):
        word = words_[i]
        if kinds[i] != WORD or word in seen or i - lo in covered:
            continue
        seen.add(word)
        if len(word) < 2 or word in stop or (i and kinds[i - 1] == NUM and t.glued(i)):
            continue
        if not passage and word in _QUANTITY_WORDS and _is_quantity_word(t, i, language):
            continue
        out.add("not" if word in NEGATIONS else stems[i - lo])
    return frozenset(out)


def _vi_runs(t: Tokens, lo: int, hi: int, cut: set[int] | None = None) -> Iterable[list[str]]:
    """Runs of syllables not interrupted by punctuation, numbers or a ``cut`` token (one a
    concept unit stands for)."""
    run: list[str] = []
    words_, kinds, starts, ends, text = t.words, t.kinds, t.starts, t.ends, t.text
    for i in range(lo, hi):
        kind = kinds[i]
        broken = i > lo and (kinds[i - 1] != WORD or text[ends[i - 1] : starts[i]].strip() != "")
        if kind != WORD or broken or (cut and i in cut):
            if run:
                yield run
            run = []
        if kind == WORD and not (cut and i in cut):
            run.append(words_[i])
    if run:
        yield run


#: Vietnamese words that join clauses or phrases (then, if, because, so, when, in order to,
#: and, or, but): no compound is made with one, so a pair across one ("chảy thì", "thì ngừng"
#: in "Nếu bị tiêu chảy thì ngừng thuốc") is no unit, and a reordered condition ("Ngừng thuốc
#: nếu bị tiêu chảy") offers the same units.
_VI_JOINS: Final = frozenset(
    {"thì", "mà", "nếu", "nên", "vì", "khi", "để", "và", "hoặc", "hay", "nhưng"}
)


#: Vietnamese negators of a command read as ``không``: "đừng nuốt" and "không nuốt" say the
#: same (as English and Dutch negations are read as ``not``).
_VI_NEGATORS: Final = {"đừng": "không", "chớ": "không"}
_VI_NEGATOR_WORDS: Final = frozenset(_VI_NEGATORS)


def _vi_units(t: Tokens, lo: int, hi: int, *, unigrams: bool) -> frozenset[str]:
    """Bigrams of each run; a claim's content syllable that is in no bigram (alone between
    joins or punctuation: "nhai" and "nghiền" in "có thể nhai hoặc nghiền") counts by itself,
    so that a list of single-syllable verbs is not left without units."""
    stop = STOP_WORDS["vi"]
    bigrams: set[str] = set()
    singles: set[str] = set()
    lone: set[str] = set()
    found, covered = _concept_hits(t.words, lo, hi, "vi", passage=unigrams)
    words_ = t.words
    if not unigrams and not _QUANTITY_WORDS.isdisjoint(words_[lo:hi]):
        # amounts in words ("nửa phút", "hai viên"): the number check compares them
        for i in range(lo, hi):
            if words_[i] in _QUANTITY_WORDS and _is_quantity_word(t, i, "vi"):
                covered.add(i)
    negated = not _VI_NEGATOR_WORDS.isdisjoint(words_[lo:hi])
    for run in _vi_runs(t, lo, hi, covered):
        if negated:
            run = [_VI_NEGATORS.get(w, w) for w in run]
        singles.update(run)
        paired = [False] * len(run)
        for k, (a, b) in enumerate(itertools.pairwise(run)):
            if (a not in stop or b not in stop) and a not in _VI_JOINS and b not in _VI_JOINS:
                bigrams.add(f"{a} {b}")
                paired[k] = paired[k + 1] = True
        if not unigrams and False in paired:
            for w, p in zip(run, paired, strict=True):
                if not p and w not in stop and w not in _VI_JOINS:
                    lone.add(w)
    singles -= stop
    if unigrams or not bigrams:
        return frozenset(bigrams | singles | found)
    return frozenset(bigrams | lone | found)


def units_of(
    t: Tokens, language: str | None, *, passage: bool, lo: int = 0, hi: int | None = None
) -> frozenset[str]:
    """Content units of ``t[lo:hi]``: a claim's, or what a passage offers (``passage=True``:
    Vietnamese single syllables too)."""
    stop = len(t) if hi is None else hi
    if language == "vi":
        return _vi_units(t, lo, stop, unigrams=passage)
    return _latin_units(t, lo, stop, language, passage=passage)


def claim_units(text: str, language: str | None) -> frozenset[str]:
    """The content units of a claim (see the module docstring)."""
    return units_of(tokenize(text), language, passage=False)


def passage_units(text: str, language: str | None) -> frozenset[str]:
    """The content units a passage offers (Vietnamese: bigrams and single syllables)."""
    return units_of(tokenize(text), language, passage=True)


def phrase_key(text: str | Tokens) -> str:
    """Words and numbers of ``text`` joined by single spaces and padded: ``" do not take "``."""
    t = text if isinstance(text, Tokens) else tokenize(text)
    # a list, not a generator: a generator is resumed once per word (as dear as a call)
    return " " + " ".join([w for w, k in zip(t.words, t.kinds, strict=True) if k != 2]) + " "


@lru_cache(maxsize=64)
def _cue_keys(cues: tuple[str, ...]) -> tuple[str, ...]:
    return tuple(phrase_key(cue) for cue in cues)


@lru_cache(maxsize=64)
def _cue_pattern(cues: tuple[str, ...]) -> re.Pattern[str]:
    """One alternation of literal padded phrases: a scan in C instead of a loop per cue (the
    alternatives are fixed strings, so matching is bounded by text × longest cue)."""
    keys = sorted(set(_cue_keys(cues)), key=len, reverse=True)
    return re.compile("|".join(re.escape(k) for k in keys) or "(?!)")


def _trie(keys: set[str]) -> str:
    """A pattern matching what some of ``keys`` starts with, as a trie: at each character one
    branch per next character (so a search tries one, not every phrase); a key that ends here
    ends the match (any longer one found there would say no more)."""
    if "" in keys:
        return ""
    nexts: dict[str, set[str]] = {}
    for key in keys:
        nexts.setdefault(key[0], set()).add(key[1:])
    alts = [re.escape(ch) + _trie(rest) for ch, rest in sorted(nexts.items())]
    return alts[0] if len(alts) == 1 else "(?:" + "|".join(alts) + ")"


_Search = Callable[[str], "re.Match[str] | None"]


@lru_cache(maxsize=64)
def _cue_search(cues: tuple[str, ...]) -> _Search:
    """The search of :func:`has_cue`: the padded phrases as one trie (see :func:`_trie`), each
    alternative a fixed string, so matching is bounded by text × longest cue as before."""
    return re.compile(_trie(set(_cue_keys(cues))) or "(?!)").search


#: ``id(cues)`` → ``(cues, search)``: the cue tuples are module constants, and an identity
#: lookup spares hashing a tuple of up to a hundred phrases per call. Kept tuples cannot be
#: freed (so their ids not reused); at most this many, then it starts again.
_SEARCH_BY_ID: dict[int, tuple[tuple[str, ...], _Search]] = {}
_SEARCH_BY_ID_MAX: Final = 256


def has_cue(key: str, cues: tuple[str, ...]) -> bool:
    """Whether the padded phrase ``key`` contains one of ``cues`` as whole words."""
    got = _SEARCH_BY_ID.get(id(cues))
    if got is None or got[0] is not cues:
        if len(_SEARCH_BY_ID) >= _SEARCH_BY_ID_MAX:
            _SEARCH_BY_ID.clear()
        got = _SEARCH_BY_ID[id(cues)] = (cues, _cue_search(cues))
    return got[1](key) is not None


def names_professional(key: str, frames: NonclaimFrames) -> bool:
    """Whether the padded phrase ``key`` names a professional of ``frames`` as a word or
    phrase, or as the head of a compound ("diabetesverpleegkundige", "kinderarts")."""
    if has_cue(key, frames.professionals):
        return True
    heads = frames.professional_heads
    return bool(heads) and any(w.endswith(heads) for w in key.split() if len(w) > 5)


def opening_cue(key: str, cues: tuple[str, ...]) -> str | None:
    """The longest of ``cues`` that the padded phrase ``key`` opens with, or ``None``."""
    m = _cue_pattern(cues).match(key)  # alternatives longest first: the longest opening
    return m.group() if m else None
