"""The retrieved passages of one answer, prepared once, and the deterministic grounding test.

A claim is grounded in a set of passages when

1. every number with a unit in the claim (normalised: ``4 g`` = ``4000 mg``) appears among the
   normalised quantities of those passages — all of them together, not one passage — and, when
   ``bare_numbers`` is on, every unit-less number appears as a written number there; and
2. the share of the claim's content units found in the best single passage (its *support*) is
   at least the threshold.

A claim without content units (only a number) has support 1.0; it stands or falls with its
numbers. With no passages nothing is grounded.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from decimal import Decimal
from functools import cached_property
from typing import Final

from schemas.events import Passage
from services.grounding.medical.compare import Comparison, PassageReading, compare, worst
from services.grounding.medical.lexicon import MedicalLexicon, load_lexicon
from services.grounding.medical.names import event_names
from services.grounding.medical.reading import Reading
from services.grounding.prepared import PassageCache, PreparedPassage, prepare_passage
from services.grounding.quantities import Quantity, format_decimal

#: Milligrams in a kilogram (a body weight reads as a mass in mg).
_MG_PER_KG = Decimal(1_000_000)

__all__ = [
    "UNNAMED",
    "Evidence",
    "PassageEvidence",
    "Verdict",
    "decides_nothing",
    "ground",
    "ground_medical",
]

#: The drug of a passage reading that names none, for :meth:`Evidence.drugs_by_amount`.
UNNAMED: Final = ""
_UNNAMED: Final = frozenset({UNNAMED})

#: A prepared passage, as the grounding test sees it.
PassageEvidence = PreparedPassage


@dataclass(frozen=True, slots=True)
class Verdict:
    """The deterministic outcome for one claim against some passages."""

    grounded: bool
    support: float
    best: int | None
    numbers_missing: tuple[str, ...]
    #: The structured comparisons, one per medical reading of the claim (empty for others).
    medical: tuple[Comparison, ...] = ()
    #: Missing numbers that decide: all of them for a plain claim; for a claim read into
    #: medical readings only those the readings did not use (``8 h`` may stand for "3 a day").
    blocking: tuple[str, ...] = ()


class Evidence:
    """Passages in retrieval order, prepared (from the cache when one is given), and their ids."""

    def __init__(
        self,
        passages: Sequence[Passage],
        language: str | None,
        lexicon: MedicalLexicon | None = None,
        cache: PassageCache | None = None,
    ) -> None:
        lex = lexicon if lexicon is not None else load_lexicon()
        if cache is not None:
            self.passages = tuple([cache.get(p, language, lex) for p in passages])
        else:
            self.passages = tuple([prepare_passage(p, language, lex) for p in passages])
        self.language = language
        #: Drug names the passages teach by their openings, one map for the event.
        self.names: dict[str, str] = {}
        #: Drugs one passage reads under a name another passage teaches as another drug.
        self._renamed: dict[str, str] = {}
        #: The indication each passage's heading names, by passage index.
        self._indications: dict[int, frozenset[str]] = {}
        #: The drug a drugless passage is about by a name the answer shares (:meth:`adopt`).
        self._adopted: dict[int, frozenset[str]] = {}
        taught = False
        for i, p in enumerate(self.passages):
            taught = taught or bool(p.names)
            if p.indication:
                self._indications[i] = p.indication
        if taught:
            self.names = names = event_names(p.names for p in self.passages)
            for p in self.passages:
                for d in p.drugs:
                    if d in names and names[d] != d:
                        self._renamed[d] = names[d]
        # lists, not generators: a generator is resumed once per passage (as dear as a call)
        self.keys = frozenset().union(*[p.keys for p in self.passages])
        self.numbers = frozenset().union(*[p.numbers for p in self.passages])
        self.by_doc: dict[str, list[int]] = {}
        for i, p in enumerate(self.passages):
            self.by_doc.setdefault(p.doc_id, []).append(i)
        # [n] markers count passages by rank when every passage has one, else by list order.
        if passages and None not in [p.rank for p in passages]:
            self.order = sorted(range(len(passages)), key=lambda i: (passages[i].rank, i))
        else:
            self.order = list(range(len(passages)))

    # What only some answers need (citations, medical readings) is made on first use.

    @cached_property
    def groups(self) -> frozenset[str]:
        """The populations and conditions any retrieved passage names."""
        return frozenset().union(*[p.groups for p in self.passages])

    @cached_property
    def doc_keys(self) -> dict[str, frozenset[str]]:
        """Quantities of each document (all its chunks together), for citation checks."""
        return {
            d: frozenset().union(*(self.passages[i].keys for i in idx))
            for d, idx in self.by_doc.items()
        }

    @cached_property
    def doc_numbers(self) -> dict[str, frozenset[Decimal]]:
        return {
            d: frozenset().union(*(self.passages[i].numbers for i in idx))
            for d, idx in self.by_doc.items()
        }

    @cached_property
    def _sibling_drug(self) -> dict[int, frozenset[str]]:
        """For each passage that names no drug, the one drug its sibling chunks name: passages
        whose ids differ only in their digits ("pil-nicotine-en-71", "pil-nicotine-en-72") are
        chunks of one document, and a chunk that names none ("Smokers of fewer than 10
        cigarettes a day should start at Step 2") speaks of theirs."""
        passages = self.passages
        drugless = [i for i, p in enumerate(passages) if not p.drugs]
        if not drugless or len(drugless) == len(passages):
            return {}
        stems: dict[str, set[str]] = {}
        for p in passages:
            stem = _stem(p.doc_id) if p.drugs else None
            if stem is not None:
                stems.setdefault(stem, set()).update(self.renamed(p.drugs))
        out: dict[int, frozenset[str]] = {}
        for i in drugless:
            stem = _stem(passages[i].doc_id)
            drugs = stems.get(stem, set()) if stem is not None else set()
            if len(drugs) == 1:
                out[i] = frozenset(drugs)
        return out

    def adopt(
        self, written: frozenset[str], words: Mapping[str, str] | None = None
    ) -> dict[str, str]:
        """Teach the event the passages' subject names (:attr:`PreparedPassage.subjects`) that
        the answer writes too (``written``: the spelling keys of its capitalised words), and the
        names a passage that names no drug is filed under (:attr:`PreparedPassage.filed`) that
        it writes in any case (``words``: the spelling key of each such word as written, to the
        filed name it stands for, the same or one letter off: "benztropine" for "benzatropine"):
        a name the lexicon
        does not know ("Stelazine", "Norprolac", "foscarnet") then binds the answer's figures to
        the passage about it, and a passage that names no drug, with its sibling chunks, is
        about that name. Call before the readings are used; returns what it taught.
        """
        found: dict[str, str] = {}
        for i, p in enumerate(self.passages):
            for key, drug in p.subjects:
                if key in written and key not in self.names and found.get(key, key) == key:
                    # a name bound to another drug outranks the name itself, and so does the
                    # one drug of the chunk's siblings ("Do not use Kaloba …" beside "Kaloba
                    # oral drops (Pelargonium …)"), unless its id files it under another
                    # name ("pil-encorafenib-en-03": Braftovi, whatever drug a sibling names
                    # beside it)
                    sibling = self._sibling_drug.get(i) if drug == key else None
                    if sibling and p.filed and sibling.isdisjoint(p.filed):
                        sibling = None
                    found[key] = next(iter(sibling)) if sibling else drug
        meant = frozenset((words or {}).values())
        found |= {
            key: key
            for p in self.passages
            for key in p.filed
            if key in meant and key not in self.names and key not in found
        }
        found |= {  # the answer's own spelling of a filed name binds it too
            key: found.get(filed) or self.names[filed]
            for key, filed in (words or {}).items()
            if key != filed and (filed in found or filed in self.names) and key not in self.names
        }
        if not found:
            return {}
        self.names = {**self.names, **found}
        for i, p in enumerate(self.passages):
            own = {found[k] for k, d in p.subjects if k in found and d == k}
            own |= {k for k in p.filed if k in found}
            if not p.drugs and len(own) == 1:
                stem = _stem(p.doc_id)
                for j, q in enumerate(self.passages):
                    if j == i or (not q.drugs and stem is not None and _stem(q.doc_id) == stem):
                        self._adopted[j] = frozenset(own)
        return found

    @cached_property
    def readings(self) -> list[PassageReading]:
        renamed = self._renamed
        sibling = {**self._sibling_drug, **self._adopted}
        return [
            PassageReading(
                p.doc_id,
                i,
                sentence,
                replace(reading, drugs=sibling[i])
                if i in sibling and not reading.drugs
                else reading
                if not renamed or renamed.keys().isdisjoint(reading.drugs)
                else replace(reading, drugs=self.renamed(reading.drugs)),
            )
            for i, p in enumerate(self.passages)
            for sentence, reading in p.readings
        ]

    @cached_property
    def drugs_by_amount(self) -> dict[tuple[str | None, Decimal, Decimal], frozenset[str]]:
        """The drugs of the passage readings that state each amount (unit, low, high); a
        reading that names no drug (a drug no lexicon knows) counts as :data:`UNNAMED`, so an
        amount such a passage states is not taken for a named drug's."""
        out: dict[tuple[str | None, Decimal, Decimal], frozenset[str]] = {}
        for p in self.readings:
            r = p.reading
            if r.amount is not None:
                key = (r.unit, r.amount.low, r.amount.high)
                out[key] = out.get(key, frozenset()) | (r.drugs or _UNNAMED)
        return out

    def renamed(self, drugs: frozenset[str]) -> frozenset[str]:
        """``drugs`` with the names the event's passages teach as another drug replaced."""
        renamed = self._renamed
        if not renamed or renamed.keys().isdisjoint(drugs):
            return drugs
        return frozenset(renamed.get(d, d) for d in drugs)

    def numbers_about(
        self, drugs: frozenset[str], keys: frozenset[str], numbers: frozenset[Decimal]
    ) -> tuple[frozenset[str], frozenset[Decimal]]:
        """The quantities of the passages that name one of ``drugs``; ``keys`` and ``numbers``
        (all passages') when none does."""
        about = []
        for i, p in enumerate(self.passages):
            if self.passage_drugs(i) & drugs:
                about.append(p)
        if not about:
            return keys, numbers
        return (
            frozenset().union(*(p.keys for p in about)),
            frozenset().union(*(p.numbers for p in about)),
        )

    def passage_drugs(self, i: int) -> frozenset[str]:
        """Every drug passage ``i`` names, under the event's names (a chunk that names none:
        the drug of its sibling chunks)."""
        drugs = self.passages[i].drugs
        if not drugs:
            return self._adopted.get(i) or self._sibling_drug.get(i, drugs)
        return self.renamed(drugs)

    @cached_property
    def _position(self) -> dict[int, int]:
        return {id(r): k for k, r in enumerate(self.readings)}

    @cached_property
    def _by_drug(self) -> dict[str, list[PassageReading]]:
        """Readings by drug (those naming none under ""), so a claim meets only its drug's."""
        by_drug: dict[str, list[PassageReading]] = {}
        for r in self.readings:
            for drug in r.reading.drugs or ("",):
                by_drug.setdefault(drug, []).append(r)
        return by_drug

    def nth(self, n: int) -> PassageEvidence | None:
        """The passage a ``[n]`` marker means (1-based), or ``None`` when out of range."""
        return self.passages[self.order[n - 1]] if 1 <= n <= len(self.order) else None

    def readings_for(self, reading: Reading) -> list[PassageReading]:
        """The passage readings a claim about ``reading.drugs`` can meet (all when it names
        none; passages naming no drug always), in order."""
        if reading.drugs:
            lists = [self._by_drug.get(d, []) for d in (*sorted(reading.drugs), "")]
            seen: dict[int, PassageReading] = {}
            for items in lists:
                for r in items:
                    seen.setdefault(id(r), r)
            pool = sorted(seen.values(), key=lambda r: (r.passage, self._rank(r)))
        else:
            pool = self.readings
        if self._indications and reading.condition_units:
            pool = self._by_indication(reading.condition_units, pool)
        return pool

    def _by_indication(
        self, units: frozenset[str], pool: list[PassageReading]
    ) -> list[PassageReading]:
        """A claim that names the indication a passage heads ("bij een jichtaanval" against
        "Arcoxia bij een acute jichtaanval: …" and "Arcoxia bij reumatoïde artritis: …") meets
        that passage's readings and those of passages without a heading, not the readings of
        passages headed by another indication: half the heading's words at least."""
        heads = self._indications
        named = {
            p.passage
            for p in pool
            if p.passage in heads and 2 * len(heads[p.passage] & units) >= len(heads[p.passage])
        }
        if not named:
            return pool
        return [p for p in pool if p.passage in named or p.passage not in heads]

    def _rank(self, r: PassageReading) -> int:
        return self._position.get(id(r), 0)

    def drugs_of(self, doc_ids: Sequence[str]) -> frozenset[str]:
        """Every drug the passages of these documents name."""
        return frozenset().union(
            *(self.passage_drugs(i) for d in doc_ids for i in self.by_doc.get(d, ()))
        )


def _stem(doc_id: str) -> str | None:
    """A document id without its digits — the document its chunks share — when what is left
    names a document: a word of four letters or more that is no generic id word ("doc-3",
    "chunk_12" name none; "pil-nicotine-en-72" does)."""
    stem = doc_id.translate(_NO_DIGITS)
    words = _ID_WORD.findall(stem.lower())
    if not any(len(w) >= 4 and w not in _GENERIC_ID_WORDS for w in words):
        return None
    return stem


_NO_DIGITS: Final = str.maketrans("", "", "0123456789")
_ID_WORD: Final = re.compile(r"[^\W\d_]+")
#: Words of id schemes that number results, not documents.
_GENERIC_ID_WORDS: Final = frozenset(
    {
        "document",
        "documents",
        "docs",
        "passage",
        "passages",
        "chunk",
        "chunks",
        "source",
        "sources",
        "result",
        "results",
        "page",
        "pages",
        "item",
        "items",
        "context",
        "text",
        "retrieval",
        "retrieved",
        "node",
        "nodes",
        "hit",
        "hits",
        "part",
        "section",
    }
)


def _missing(
    found: Sequence[Quantity], keys: frozenset[str], numbers: frozenset[Decimal], bare: bool
) -> tuple[str, ...]:
    missing: dict[str, None] = {}
    for q in found:
        if q.has_unit:
            if q.key not in keys:
                missing.setdefault(q.key, None)
        elif bare and q.written not in numbers:
            missing.setdefault(format_decimal(q.written), None)
    return tuple(missing)


def _scope(
    evidence: Evidence, doc: str | None
) -> tuple[list[int], frozenset[str], frozenset[Decimal]]:
    if doc is None:
        return list(range(len(evidence.passages))), evidence.keys, evidence.numbers
    return (
        evidence.by_doc.get(doc, []),
        evidence.doc_keys.get(doc, frozenset()),
        evidence.doc_numbers.get(doc, frozenset()),
    )


def _best_support(
    units: frozenset[str], evidence: Evidence, indices: list[int]
) -> tuple[int, float]:
    best, support = indices[0], 1.0
    if units:
        best, support = indices[0], -1.0
        for i in indices:
            share = len(units & evidence.passages[i].units) / len(units)
            if share > support:
                best, support = i, share
    return best, support


def _with_weight(
    keys: frozenset[str], numbers: frozenset[Decimal], weight: Decimal | None
) -> tuple[frozenset[str], frozenset[Decimal]]:
    """The passages' number keys and numbers with the patient's body weight (kg) among them:
    the weight a sentence says is no amount the passages must hold ("20 kg" reads as
    20,000,000 mg); and so are their amounts per kg worked out for it ("30-50 mg/kg" for a
    child of 16 kg: "480 tot 800 mg")."""
    if weight is None:
        return keys, numbers
    worked = set()
    for key in keys:
        value, _, unit = key.partition(" ")
        if unit.endswith("/kg"):
            amount = Decimal(value) * weight
            worked.add(f"{format_decimal(amount)} {unit.removesuffix('/kg')}")
            numbers |= {amount}
    return keys | worked | {f"{format_decimal(weight * _MG_PER_KG)} mg"}, numbers | {weight}


def decides_nothing(c: Comparison) -> bool:
    """Whether a comparison leaves the claim to its words and numbers: an open reading no
    passage speaks about, or a dose reading that states no amount, frequency or course length
    ("Nên cho bé uống ít nhất 1 tuần và dùng thêm 2–3 ngày sau khi đã hết ho": a course the
    reader cannot put into one span), which nothing can back or contradict; or a safety
    reading of no condition about a drug the sentence does not name ("And no, he shouldn't
    swallow it whole", "avoid grapefruit juice"), which no passage speaks about: an
    instruction on using the drug the sentence before named, judged by its words (round
    27)."""
    r = c.reading
    if c.status != "unknown":
        return False
    return (
        r.open
        or r.step
        or (r.kind == "dose" and r.amount is None and r.frequency is None and r.duration is None)
        or (r.kind == "contraindication" and not r.conditions and r.drug_source == "context")
    )


#: Share of the word threshold a claim needs in the one passage that states all its
#: quantities together ("an hour before or two hours after food" beside "1 hour before or 2
#: hours after a meal"): the numbers in one place carry half the evidence.
_STATED_TOGETHER: Final = 0.5


def _stated_together(
    units: frozenset[str],
    found: Sequence[Quantity],
    evidence: Evidence,
    indices: list[int],
    drugs: frozenset[str],
    threshold: float,
    rated: bool = False,
) -> int | None:
    """The passage that states every quantity of a claim whose quantities all have a unit
    (times: a course length, an interval, a gap to food or other medicines; and since the
    twenty-seventh round amounts too, "0,3 µg/kg/phút rồi tăng dần theo đáp ứng", unless one
    is a rate whose key leaves its time out: ``rated``), is about the claim's drugs (or names
    none) and holds at least :data:`_STATED_TOGETHER` of the word threshold; ``None`` when there
    is none. A changed quantity is still missing; another drug's passage does not count."""
    times = [q.key for q in found if q.has_unit]
    if not times or len(times) != len(found) or (rated and any(q.unit != "h" for q in found)):
        return None
    for i in indices:
        p = evidence.passages[i]
        if not all(k in p.keys for k in times):
            continue
        about = evidence.passage_drugs(i)
        if drugs and about and not drugs & about:
            continue
        if not threshold or (
            units and len(units & p.units) / len(units) >= threshold * _STATED_TOGETHER
        ):
            return i
    return None


def _contrasted_figures(
    found: Sequence[Quantity],
    evidence: Evidence,
    indices: list[int],
    drugs: frozenset[str],
) -> int | None:
    """The passage about ``drugs`` that states every quantity of a sentence whose doses are
    all set aside (the usual dose it contrasts the patient's with); ``None`` when none does."""
    keys = [q.key for q in found if q.has_unit]
    if not keys:
        return None
    for i in indices:
        p = evidence.passages[i]
        if evidence.passage_drugs(i) & drugs and all(k in p.keys for k in keys):
            return i
    return None


def ground(
    units: frozenset[str],
    found: Sequence[Quantity],
    evidence: Evidence,
    *,
    threshold: float,
    bare_numbers: bool,
    doc: str | None = None,
    drugs: frozenset[str] = frozenset(),
    weight: Decimal | None = None,
    contrasted: bool = False,
    rated: bool = False,
    placing: bool = False,
) -> Verdict:
    """Ground one claim — its content ``units`` (:func:`~services.grounding.text.claim_units`)
    and its quantities ``found`` — in all passages, or in the passages of the document ``doc``.
    ``drugs``: the drugs a dose claim without readings names; its numbers must then be in the
    passages about them, when some passage is (another drug's "120 hours" is not theirs).
    ``weight``: the patient's body weight (kg), which a sentence may say back ("for a child of
    18 kg:") without it being an amount the passages must hold. ``contrasted``: every dose
    amount of a claim about a drug is one it sets aside ("Zij neemt dus niet de gewone 2
    tabletten per keer"): another dose than the patient's, grounded when one passage about the
    drug states all its quantities (its words say only that it is not the patient's).
    ``rated``: an amount of the claim is a rate whose quantity leaves its time out ("2–6
    mg/giờ" keys as "2 mg"), so its numbers alone do not carry half the evidence.
    ``placing``: the claim places the patient in a band ("valt in de groep van 30 tot 60
    ml/min"): grounded when a passage about its drugs states every quantity of it."""
    indices, keys, numbers = _scope(evidence, doc)
    if not indices:
        return Verdict(False, 0.0, None, _missing(found, frozenset(), frozenset(), bare_numbers))
    if drugs and found and doc is None:
        keys, numbers = evidence.numbers_about(drugs, keys, numbers)
    stated = keys
    keys, numbers = _with_weight(keys, numbers, weight)
    missing = _missing(found, keys, numbers, bare_numbers)
    best, support = _best_support(units, evidence, indices)
    grounded = not missing and support >= threshold
    if not grounded and not missing and contrasted and drugs:
        stating = _contrasted_figures(found, evidence, indices, drugs)
        if stating is not None:
            grounded, best = True, stating
    if not grounded and not missing and placing and found:
        # the band's numbers carry a sentence that places the patient in it (round 27)
        band = [q for q in found if q.key in stated]  # not the patient's own weight
        placed = _stated_together(units, band, evidence, indices, drugs, 0.0) if band else None
        if placed is not None:
            grounded, best = True, placed
    if not grounded and not missing:
        together = _stated_together(units, found, evidence, indices, drugs, threshold, rated)
        if together is not None:
            grounded, best = True, together
    return Verdict(grounded, round(support, 6), best, missing, (), missing)


def _compared(
    r: Reading,
    retrieved: list[PassageReading],
    doc: str | None,
    weight: Decimal | None,
    beside: Sequence[Reading],
    named: frozenset[str],
) -> Comparison:
    """``r`` compared with the readings of the passages about its drug (``retrieved``), or of
    the cited document ``doc`` among them, which the comparison may look beyond."""
    if doc is None:
        return compare(r, retrieved, weight, beside, named)
    cited = [p for p in retrieved if p.doc_id == doc]
    return compare(r, cited, weight, beside, named, retrieved)


def ground_medical(
    readings: Sequence[Reading],
    units: frozenset[str],
    found: Sequence[Quantity],
    leftover: Sequence[Quantity],
    evidence: Evidence,
    *,
    bare_numbers: bool,
    doc: str | None = None,
    weight: Decimal | None = None,
) -> Verdict:
    """Ground a claim by its structured readings: each is compared with the readings of the
    passages (all, or the document ``doc``'s); numbers the readings did not use (a duration, a
    strength) must still be among the passages' numbers. Content-word support is reported but
    does not decide. ``weight``: a body weight (kg) the answer or its question states, for
    amounts worked out from a per-kg dose; its number is no missing number."""
    indices, keys, numbers = _scope(evidence, doc)
    keys, numbers = _with_weight(keys, numbers, weight)
    shown = _missing(found, keys, numbers, bare_numbers)
    missing = _missing(leftover, keys, numbers, bare_numbers)
    if not indices:
        comparisons = tuple(compare(r, []) for r in readings)
        return Verdict(False, 0.0, None, shown, comparisons, missing)
    comparisons = tuple(
        _compared(r, evidence.readings_for(r), doc, weight, readings, evidence.groups)
        for r in readings
    )
    best, support = _best_support(units, evidence, indices)
    for c in comparisons:
        cited = c.supporting or c.contradicting
        if cited:
            best = cited[0].passage
            break
    # An open reading no passage speaks about decides nothing beside readings that do.
    deciding = [c for c in comparisons if not decides_nothing(c)]
    status = worst([c.status for c in deciding or comparisons])
    grounded = status == "supported" and not missing
    if not deciding and any(c.reading.step for c in comparisons):
        # steps of raising the dose no passage describes: their numbers must be the passages'
        grounded = not missing
    return Verdict(grounded, round(max(support, 0.0), 6), best, shown, comparisons, missing)
