"""Passages prepared once — numbers, content units and medical readings — and a bounded cache.

A RAG system retrieves the same leaflet passages again and again, so reading a passage is done
once per (doc id, text, language) and kept in a :class:`PassageCache`: an LRU bounded in entries
*and* in (estimated) bytes, with a time-to-live, all three settings
(``VIGIL_GROUNDING_CACHE_ENTRIES``, ``..._BYTES``, ``..._TTL_SECONDS``). A hit is checked
against the passage text itself, so two texts under one id never share an entry. The cache
holds only derived data of retrieved passages — no chat content.

One cache per process: :class:`~services.checking.ClaimChecker` owns it, and ``vigil scan`` and
the worker both check through it.
"""

from __future__ import annotations

import time
import unicodedata
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, replace
from decimal import Decimal
from typing import Final

from schemas.events import Passage
from services.grounding.medical.lexicon import MedicalLexicon
from services.grounding.medical.reading import Carry, Reading, Span, read_sentence
from services.grounding.quantities import Amount, amounts, flatten
from services.grounding.sentences import split_sentences
from services.grounding.text import units_of
from services.grounding.tokens import Tokens, tokenize

__all__ = ["CacheStats", "PassageCache", "PreparedPassage", "prepare_passage"]

#: Rough bytes per held item, for the byte bound (CPython objects, not their text).
_PER_UNIT: Final = 80
_PER_READING: Final = 600
_OVERHEAD: Final = 400


@dataclass(frozen=True, slots=True)
class PreparedPassage:
    """What grounding needs of one passage, computed once."""

    doc_id: str
    text: str
    units: frozenset[str]
    keys: frozenset[str]
    numbers: frozenset[Decimal]
    #: ``(sentence, reading)`` for every dose or contraindication reading, in text order.
    readings: tuple[tuple[str, Reading], ...]
    #: Every drug the passage (or its id) names.
    drugs: frozenset[str]
    nbytes: int


def _doc_drugs(doc_id: str, lexicon: MedicalLexicon) -> frozenset[str]:
    """Drugs named in a document id ("pil-paracetamol-en-02"), the passage's topic when its
    text does not name one."""
    t = tokenize(doc_id.replace("_", " "))
    return frozenset(inn for _, _, inn in lexicon.find_drugs(t.words, 0, len(t)))


#: Words for a unit dose form: "500 mg tablets", "tabletten van 500 mg", "viên 500 mg".
_FORMS: Final = frozenset(
    {
        "tablet",
        "tablets",
        "capsule",
        "capsules",
        "tabletten",
        "zetpil",
        "zetpillen",
        "suppository",
        "suppositories",
        "viên",
        "comprimé",
    }
)


def _strengths(t: Tokens, found: list[Amount]) -> list[Decimal]:
    """Strengths of one tablet (mg) stated in a sentence: an mg amount next to a dose form
    word ("500 mg tablets", "viên 500 mg"), a count restated in mg ("6 tabletten (3.000 mg)":
    500 each), or the title of a leaflet ("Paracetamol 500 mg (Panadol)")."""
    words = t.words
    out: list[Decimal] = []
    mg = [a for a in found if a.unit == "mg" and len(a.parts) == 1]
    counts = {a.t1: a for a in found if a.unit == "tablet" and len(a.parts) == 1}
    for a in mg:
        count = counts.get(a.t0 - 1) if words[a.t0 - 1 : a.t0] == ["("] else None
        if count is not None:
            if count.low > 0:
                out.append(a.low / count.low)
            continue
        after = words[a.t1 : a.t1 + 2]
        before = words[max(0, a.t0 - 2) : a.t0]
        if _FORMS.intersection(after) or _FORMS.intersection(before):
            out.append(a.low)
    words_only = [w for w, k in zip(words, t.kinds, strict=True) if k == 0]
    if not out and len(mg) == 1 and len(found) == 1 and len(words_only) <= 6:
        out.append(mg[0].low)  # a title: drug and strength
    return out


def _in_mg(readings: list[tuple[str, Reading]], strength: Decimal) -> list[tuple[str, Reading]]:
    """Tablet counts restated in mg with the passage's one tablet strength (1–2 × 500 mg)."""
    stated = {(sentence, replace(r, start=0, end=0)) for sentence, r in readings}
    out: list[tuple[str, Reading]] = []
    for sentence, r in readings:
        if r.unit == "tablet" and r.amount is not None:
            amount = Span(r.amount.low * strength, r.amount.high * strength, r.amount.kind)
            mg = replace(r, amount=amount, unit="mg")
            if (sentence, replace(mg, start=0, end=0)) not in stated:  # "6 tablets (3,000 mg)"
                out.append((sentence, mg))
    return out


def prepare_passage(
    passage: Passage, language: str | None, lexicon: MedicalLexicon
) -> PreparedPassage:
    """Read one passage (pure; the cache calls it on a miss)."""
    text = unicodedata.normalize("NFC", passage.text)
    keys: set[str] = set()
    numbers: set[Decimal] = set()
    readings: list[tuple[str, Reading]] = []
    drugs: set[str] = set()
    carry = Carry(drugs=_doc_drugs(passage.doc_id, lexicon))
    drugs |= carry.drugs
    strengths: set[Decimal] = set()
    for sentence in split_sentences(text, language):
        t = tokenize(sentence.text, normalized=True)
        found: list[Amount] = amounts(t, language)
        strengths.update(_strengths(t, found))
        for q in flatten(found):
            if q.has_unit:
                keys.add(q.key)
            numbers.add(q.written)
        units = units_of(t, language, passage=True)
        read = read_sentence(t, 0, len(t), found, language, lexicon, carry, units)
        carry = read.carry
        drugs |= carry.drugs
        readings.extend((sentence.text, r) for r in read.readings)
    if len(strengths) == 1:
        readings += _in_mg(readings, next(iter(strengths)))
    readings = list(dict.fromkeys(readings))  # a repeated sentence reads the same
    units = units_of(tokenize(text, normalized=True), language, passage=True)
    size = (
        _OVERHEAD
        + 2 * len(text)
        + _PER_UNIT * (len(units) + len(keys) + len(numbers))
        + sum(_PER_READING + 2 * len(s) for s, _ in readings)
    )
    return PreparedPassage(
        passage.doc_id,
        text,
        units,
        frozenset(keys),
        frozenset(numbers),
        tuple(readings),
        frozenset(drugs),
        size,
    )


@dataclass(slots=True)
class CacheStats:
    hits: int = 0
    misses: int = 0
    evicted: int = 0
    expired: int = 0


class PassageCache:
    """An LRU of prepared passages, bounded in entries and bytes, with a time-to-live.

    >>> cache = PassageCache(max_entries=2, max_bytes=1 << 20, ttl_seconds=60)
    >>> from services.grounding.medical import load_lexicon
    >>> p = Passage(doc_id="pil-1", text="Adults: 500 mg.")
    >>> a = cache.get(p, "en", load_lexicon()); b = cache.get(p, "en", load_lexicon())
    >>> a is b, cache.stats.hits, cache.stats.misses
    (True, 1, 1)
    """

    def __init__(
        self,
        max_entries: int,
        max_bytes: int,
        ttl_seconds: float | None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if max_entries < 0 or max_bytes < 0:
            raise ValueError("cache bounds must be >= 0")
        self.max_entries = max_entries
        self.max_bytes = max_bytes
        self.ttl = ttl_seconds
        self.clock = clock
        self.bytes = 0
        self.stats = CacheStats()
        self._items: OrderedDict[tuple[str, str | None, int], tuple[PreparedPassage, float]] = (
            OrderedDict()
        )

    def __len__(self) -> int:
        return len(self._items)

    def get(
        self, passage: Passage, language: str | None, lexicon: MedicalLexicon
    ) -> PreparedPassage:
        """The prepared passage, from the cache or read now (and kept)."""
        key = (passage.doc_id, language, hash(passage.text))
        items = self._items
        hit = items.get(key)
        now = self.clock() if self.ttl is not None else 0.0
        if hit is not None:
            prepared, born = hit
            if self.ttl is not None and now - born > self.ttl:
                self._drop(key)
                self.stats.expired += 1
            elif prepared.text == passage.text or prepared.text == unicodedata.normalize(
                "NFC", passage.text
            ):
                items.move_to_end(key)
                self.stats.hits += 1
                return prepared
        self.stats.misses += 1
        prepared = prepare_passage(passage, language, lexicon)
        if self.max_entries and prepared.nbytes <= self.max_bytes:
            if key in items:
                self._drop(key)
            items[key] = (prepared, now)
            self.bytes += prepared.nbytes
            while len(items) > self.max_entries or self.bytes > self.max_bytes:
                self._drop(next(iter(items)))
                self.stats.evicted += 1
        return prepared

    def _drop(self, key: tuple[str, str | None, int]) -> None:
        prepared, _ = self._items.pop(key)
        self.bytes -= prepared.nbytes

    def clear(self) -> None:
        self._items.clear()
        self.bytes = 0
