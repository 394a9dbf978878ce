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
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from decimal import Decimal
from typing import Final

from schemas.events import Passage
from services.grounding.medical.lexicon import MedicalLexicon, spelling_key
from services.grounding.medical.names import (
    bracket_names,
    filed_names,
    read_opening,
    subject_names,
)
from services.grounding.medical.reading import Carry, Reading, SentenceReading, read_sentence
from services.grounding.medical.strength import (
    concentrations,
    counted_strengths,
    counts_in_mg,
    in_volume,
    named_strengths,
    one_strength,
    salt_pairs,
    scale_counted,
    split_concentrations,
    strength_amounts,
    volume_keys,
    volumes_restated,
)
from services.grounding.quantities import (
    Amount,
    amounts,
    flatten,
    format_decimal,
    quantities,
    word_numbers,
)
from services.grounding.sentences import split_sentences
from services.grounding.text import units_of
from services.grounding.tokens import Tokens, tokenize

__all__ = ["CacheStats", "PassageCache", "PreparedPassage", "prepare_passage"]

#: The concept unit of a single dose (``rules/grounding/synonyms.yaml``) and the count it says.
_SINGLE_DOSE: Final = "~single_dose"
_ONE_TIME: Final = next(q for q in quantities("1 times", "en"))

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
    #: Drug names the passage teaches by its opening (spelling key → drug), for the answer too.
    names: tuple[tuple[str, str], ...] = ()
    #: The passage's one strength per dose form (form unit, mg), for an answer's bare counts.
    strengths: tuple[tuple[str, Decimal], ...] = ()
    #: Content units of the indication its heading names ("Arcoxia bij reumatoïde artritis").
    indication: frozenset[str] = frozenset()
    #: A strength of a salt restated as its active part's, per dose form (form unit, salt mg,
    #: active mg): "Sodium fluoride 1.1 mg tablets; each tablet provides 0.5 mg of fluoride".
    salts: tuple[tuple[str, Decimal, Decimal], ...] = ()
    #: Names the passage may be about that it does not teach (spelling key → drug, the key
    #: itself for a passage that names no drug): taught for an event whose answer writes one.
    subjects: tuple[tuple[str, str], ...] = ()
    #: The passage's one concentration per unit of a liquid (unit, amount per ml), for an
    #: answer's volumes: "100 mg cannabidiol per ml" makes an answer's "1 ml" 100 mg.
    per_ml: tuple[tuple[str, Decimal], ...] = ()
    #: The populations and conditions the passage names anywhere ("nierfunctiestoornis",
    #: "suy thận", a clearance band is kidney impairment), read or not into a claim.
    groups: frozenset[str] = frozenset()
    #: Names the passage's document id files it under that neither its text nor a lexicon
    #: names ("smpc-foscarnet-nl-02: Inductiebehandeling: 60 mg/kg …"), for a passage that names
    #: no drug: the passage is about one when the answer writes it (round 25).
    filed: tuple[str, ...] = ()


def _doc_drugs(doc_id: str, lexicon: MedicalLexicon) -> frozenset[str]:
    """Drugs named in a document id ("pil-paracetamol-en-02"), the passage's topic when its
    text does not name one."""
    t = tokenize(doc_id.replace("_", " "))
    return frozenset(inn for _, _, inn in lexicon.find_drugs(t.words, 0, len(t)))


def _drug_named(t: Tokens, lexicon: MedicalLexicon) -> Callable[[int], bool]:
    """Whether token ``i`` names a drug (a passage's product is one the lexicon or its opening
    names: "Fexofenadin 180 mg: … uống 1 viên"), or ends the dose form written after one
    ("Trimetazidin viên giải phóng biến đổi 35 mg: uống 1 viên", "Galantamine capsules met
    verlengde afgifte 16 mg"): the strength of a product's heading is its form's."""
    spec = lexicon.drug_file.opening
    forms = spec.form_words if spec is not None else frozenset()
    words = t.words

    def named(i: int) -> bool:
        while i >= 0 and words[i] in forms:
            i -= 1
        return i >= 0 and lexicon.drug_at(words, i, i + 1) is not None

    return named


def _in_mg(
    readings: list[tuple[str, Reading]], strength: dict[str, Decimal]
) -> list[tuple[str, Reading]]:
    """Counts restated in mg with the passage's one strength per form (1–2 × 500 mg), beside
    the counts; a restatement the passage writes itself ("6 tablets (3,000 mg)") is not
    repeated."""
    stated = {(sentence, replace(r, start=0, end=0)) for sentence, r in readings}
    out: list[tuple[str, Reading]] = []
    for sentence, r in readings:
        for mg in counts_in_mg((r,), strength):
            if (sentence, replace(mg, start=0, end=0)) not in stated:
                out.append((sentence, mg))
    return out


def _never(at: int) -> bool:
    return False


#: Tokens a phrase of equivalence may stand before the strength it introduces ("each tablet
#: provides 0.5 mg", "overeenkomend met 5 mg").
_EQUIVALENCE_REACH: Final = 4


def _equivalence(t: Tokens, language: str | None, lexicon: MedicalLexicon) -> Callable[[int], bool]:
    """Whether a phrase of equivalence ("provides", "overeenkomend met", "tương đương") ends at
    most a few tokens before token ``at`` of the sentence ``t``."""
    found = [e for _, e, cue in lexicon.matcher(language).find(t.words) if cue.kind == "equiv"]

    def restated(at: int) -> bool:
        return any(at - _EQUIVALENCE_REACH <= e <= at for e in found)

    return restated


#: Stands for the drug of a passage that names none (its sibling chunks may), while it is read.
_UNNAMED: Final = "\x00unnamed"
_UNNAMED_DRUG: Final = frozenset({_UNNAMED})


def _without_unnamed(r: Reading) -> Reading:
    if _UNNAMED not in r.drugs:
        return r
    drugs = r.drugs - _UNNAMED_DRUG
    return replace(r, drugs=drugs, drug_source=r.drug_source if drugs else None)


def _list_lead(text: str, readings: Sequence[Reading], lead: str | None) -> str | None:
    """The opening of a list that goes on after ``text`` in items split by semicolons: its words
    up to the colon when ``text`` opens the list with a safety claim or a dose ("Gebruik
    Kyntheum niet: als u allergisch bent …;", "Paediatric population (2 to 17 years), dose by
    body weight: 12 kg to 25 kg: 10 mg;"), the list's opening still when ``text`` is one of its
    items; ``None`` once an item ends the list (no semicolon)."""
    if not text.rstrip().endswith(";"):
        return None
    head, colon, _ = text.partition(":")
    if colon and any(not r.open for r in readings):
        return head + colon
    return lead


def _title_end(
    t: Tokens, found: list[Amount], stated: list[tuple[str, Decimal, Amount]]
) -> int | None:
    """The colon that ends a leaflet's title ("Simethicon 80 mg viên nhai:", "Loratadine 10 mg
    tablets:") when a statement without an amount follows it: the title's strength is no
    dose of that statement's group, and the statement is read on its own."""
    if not stated or ":" not in t.words:
        return None
    colon = t.words.index(":")
    if all(a.t1 <= colon for a in found) and colon + 1 < len(t):
        return colon
    return None


def _restated_per_dose(readings: Sequence[Reading]) -> set[int]:
    """Where a sentence states an amount with no basis, frequency or limit that it also states
    per dose ("Rukobia viên giải phóng kéo dài 600 mg: người lớn uống 600 mg x 2 lần/ngày"):
    the bare one is that dose (or the strength that holds it), never a day's amount (round 23)."""
    per_dose = {(r.amount, r.unit) for r in readings if r.kind == "dose" and r.basis == "dose"}
    return {
        r.start
        for r in readings
        if r.kind == "dose"
        and r.basis is None
        and r.frequency is None
        and r.qualifier is None
        and (r.amount, r.unit) in per_dose
    }


def _as_strength(r: Reading) -> Reading:
    """A passage's strength ("Diosmectite 3 g powder per sachet", "Lariam 250 mg") is what one
    unit holds: at most one dose, never a day's amount ("3 g a day" is not backed by it)."""
    if r.unit != "mg" or r.basis is not None or r.frequency is not None or r.qualifier is not None:
        return r
    return replace(r, basis="dose")


def prepare_passage(
    passage: Passage, language: str | None, lexicon: MedicalLexicon
) -> PreparedPassage:
    """Read one passage (pure; the cache calls it on a miss)."""
    text = unicodedata.normalize("NFC", passage.text)
    keys: set[str] = set()
    numbers: set[Decimal] = set()
    readings: list[tuple[str, Reading]] = []
    drugs: set[str] = set()
    sentences = [(s, tokenize(s.text, normalized=True)) for s in split_sentences(text, language)]
    taught, heading = read_opening(sentences[0][1], language, lexicon) if sentences else ({}, None)
    indication = (
        units_of(sentences[0][1], language, passage=False, lo=heading[0], hi=heading[1])
        if heading is not None
        else frozenset()
    )
    unwritten: tuple[str, ...] = ()
    filed_under: list[str] = []
    if sentences:  # "smpc-cabergoline-en-01" whose text names cabergoline
        used = {w for _, t in sentences for w in t.words}
        named = filed_under = filed_names(passage.doc_id, language, lexicon)
        filed = {spelling_key(w): spelling_key(w) for w in named if w in used}
        # "smpc-foscarnet-nl-02" whose text names no drug: an answer that writes it (round 25)
        unwritten = tuple(spelling_key(w) for w in named if w not in used)
        if filed:
            taught = {**filed, **taught}
        # "K-Cab (tegoprazan 50 mg)", "Xefo 8 mg (lornoxicam)": brands bound by brackets
        with_filed = lexicon.with_names(taught)
        bound = {
            key: drug
            for _, t in sentences
            if "(" in t.words
            for key, drug in bracket_names(t, language, with_filed).items()
        }
        if bound:
            taught = {**bound, **taught}
    lexicon = lexicon.with_names(taught)
    doc_drugs = _doc_drugs(passage.doc_id, lexicon)
    carry = Carry(drugs=doc_drugs or _UNNAMED_DRUG)
    drugs |= carry.drugs
    forms: list[tuple[str, Decimal]] = []
    strengths: list[tuple[int, str, Decimal, bool]] = []
    every: list[Amount] = []
    split_ml: list[tuple[str, Decimal]] = []
    groups: set[str] = set()
    lead: str | None = None  # the opening of a list the sentence may be an item of
    for k, (sentence, t) in enumerate(sentences):
        found: list[Amount] = amounts(t, language)
        every += found
        split_ml += split_concentrations(t, found)
        for q in flatten(found):
            if q.has_unit:
                keys.add(q.key)
            numbers.add(q.written)
        # "6 capsules per 24 uur", "4 g/day": the time of a denominator is a span the passage
        # states, for an answer that writes it on its own ("niet meer dan 6 op een dag")
        keys.update(f"{format_decimal(a.per_time)} h" for a in found if a.per_time is not None)
        numbers |= word_numbers(t, language)
        units = units_of(t, language, passage=True)
        stated = strength_amounts(t, found)
        title = _title_end(t, found, stated) if k == 0 else None
        if title is None:
            read = read_sentence(t, 0, len(t), found, language, lexicon, carry, units)
        else:  # "Simethicon 80 mg viên nhai: … có thể dùng cho phụ nữ có thai"
            head = read_sentence(t, 0, title, found, language, lexicon, carry, units)
            tail = read_sentence(t, title + 1, len(t), [], language, lexicon, head.carry, units)
            read = SentenceReading(
                head.readings + tail.readings,
                head.used | tail.used,
                tail.carry,
                groups=head.groups | tail.groups,
            )
        if lead is not None and not read.readings:
            # an item of a list with no reading of its own ("Gebruik Kyntheum niet: als u …; als
            # u de actieve ziekte van Crohn heeft; …", "dose by body weight: 12 kg to 25 kg:
            # 10 mg; 26 kg to 40 kg: 15 mg; …"): read with the list's opening before it
            listed = f"{lead} {sentence.text}"
            lt = tokenize(listed, normalized=True)
            item = read_sentence(
                lt,
                0,
                len(lt),
                amounts(lt, language),
                language,
                lexicon,
                carry,
                units_of(lt, language, passage=True),
            )
            readings.extend((listed, r) for r in item.readings)
        lead = _list_lead(sentence.text, read.readings, lead)
        carry = read.carry
        groups |= read.groups
        drugs |= carry.drugs
        if not stated and len(read.readings) > 1:
            stated = named_strengths(
                (r.unit for r in read.readings), found, _drug_named(t, lexicon)
            )
        forms += [(unit, value) for unit, value, _ in stated]
        if stated:  # an equivalence is looked for only after a first strength
            first = len(forms) == len(stated) == 1
            restated = _never if first else _equivalence(t, language, lexicon)
            strengths += [(k, u, v, restated(a.t0)) for u, v, a in stated]
        counted = counted_strengths(t, found, language, stated)
        strength_at = {t.starts[a.t0] for _, _, a in stated if t.starts[a.t0] not in counted}
        strength_at |= _restated_per_dose(read.readings)
        readings.extend(
            (sentence.text, _as_strength(r) if r.start in strength_at else r)
            for r in scale_counted(read.readings, counted)
        )
    if _UNNAMED in drugs:
        # a chunk about a drug its words do not name ("Không bôi vào mắt, miệng, mũi"): its
        # readings name none, and the event gives them the drug of its sibling chunks
        drugs.discard(_UNNAMED)
        readings = [(s, _without_unnamed(r)) for s, r in readings]
    strength = one_strength(forms)
    readings += _in_mg(readings, strength)
    per_ml = concentrations(every, split_ml)
    # "100 mg cannabidiol per ml" says 100 mg/ml, as an answer writes it
    keys |= {f"{format_decimal(v)} {u}/ml" for u, v in split_ml if per_ml.get(u) == v}
    if per_ml:  # "1 ml" of a "100.000 IE/ml" suspension is 100,000 IU, and 100,000 IU is 1 ml
        own = list(readings)
        readings += [(s, r) for s, read in own for r in volumes_restated((read,), per_ml)]
        readings += [(s, r) for s, read in own for r in in_volume((read,), per_ml)]
        keys |= volume_keys(every, per_ml)
    readings = list(dict.fromkeys(readings))  # a repeated sentence reads the same
    subjects = subject_names(
        [t for _, t in sentences],
        frozenset(drugs),
        language,
        lexicon,
        bool(filed_under),
        doc_drugs,
    )
    units = units_of(tokenize(text, normalized=True), language, passage=True)
    if _SINGLE_DOSE in units:  # "as a single dose" says the count "1 time"
        keys.add(_ONE_TIME.key)
        numbers.add(_ONE_TIME.written)
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
        tuple(taught.items()),
        tuple(strength.items()),
        indication,
        tuple(salt_pairs(strengths)),
        tuple((k, d) for k, d in subjects.items() if k not in taught),
        tuple(per_ml.items()),
        frozenset(groups | ({"renal"} if any(r.clearance for _, r in readings) else set())),
        tuple(k for k in unwritten if k not in taught) if not drugs else (),
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
