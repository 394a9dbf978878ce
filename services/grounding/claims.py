"""Claims from an answer: structured claims for the registry, atomic claims for grounding.

**Structured claims** (:func:`fact_checks`) come from the event's ``claims`` field (origin
``event``) and from the extractor packs run over the answer (origin ``extracted``; a claim the
event already states is not repeated). Each is checked against the :class:`FactRegistry`.

**Atomic claims** (:func:`atomic_claims`) are the answer's sentences
(:func:`~services.grounding.sentences.split_sentences`) that assert something. A sentence is
*not* a claim, and is left out of grounding and faithfulness, when it has no number with a unit
and no contraindication cue and it is

- a question (ends with ``?``),
- a heading or lead-in (ends with ``:``; "Dosage:", "Do not use ibuprofen if you have:") — its
  list items are claims of their own,
- courtesy: opens with a greeting or pleasantry ("Hello", "Hope this helps", "Graag gedaan",
  "Xin chào") followed by at most two content words ("Sure, paracetamol is safe in pregnancy"
  stays a claim),
- a pure abstention ("I don't know", "Ik weet het niet", "Tôi không biết"),
- a referral without content ("Please consult your doctor", "Raadpleeg uw arts"),
- a restatement of the question ("You're asking whether …", "U wilt weten of …", "Bạn muốn
  biết …"), without an amount,
- or has no content word at all ("OK.", "Yes!", "Vâng.": a bare yes or no cannot be checked
  without the question).

Each claim gets a ``kind``:

- ``dose``: a number with a dose unit (mass, volume, IU, tablets, drops, times, hours/days, or
  a per-kg / per-ml unit) together with a dose word (``dose``, ``take``, ``per dag``,
  ``liều``...) or a drug name the registry knows — the medical rule pack's idea of a dose
  statement;
- ``contraindication``: a contraindication cue (``contraindicated``, ``do not take``, ``niet
  gebruiken``, ``chống chỉ định``...), or a list item under a heading with such a cue
  ("Do not use ibuprofen if you have:" / "- a stomach ulcer");
- ``other``.

Dose wins over contraindication ("do not take more than 4 g a day" is a dose statement).
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field, replace
from decimal import Decimal
from functools import lru_cache
from typing import Final, Literal

from schemas.events import ChatEvent
from schemas.verdicts import ClaimVerdict
from services.grounding.extractors import ExtractorSet
from services.grounding.facts import FactRegistry
from services.grounding.general import GeneralTest
from services.grounding.lexicon import (
    ABSTENTION_CUES,
    ACKNOWLEDGEMENTS,
    CAUTION_IDIOMS,
    CONTRA_CUES,
    DOSE_CUES,
    NONCLAIM_FRAMES,
    PLEASANTRY_CUES,
    REFERRAL_CUES,
    NonclaimFrames,
    cues_for,
    frames_for,
)
from services.grounding.medical.lexicon import MedicalLexicon, load_lexicon
from services.grounding.medical.names import looks_like_name
from services.grounding.medical.reading import ABOUT_WORDS, Carry, Reading, read_sentence
from services.grounding.medical.strength import (
    counted_strengths,
    counts_in_mg,
    named_strengths,
    one_strength,
    scale_counted,
    strength_amounts,
)
from services.grounding.quantities import UNITS, Amount, Quantity, amounts, flatten
from services.grounding.sentences import Marker, split_sentences
from services.grounding.text import (
    claim_units,
    has_cue,
    names_professional,
    opening_cue,
    phrase_key,
    units_of,
)
from services.grounding.tokens import NUM, PhraseMatcher, Tokens, tokenize
from services.grounding.totals import Figures, worked_out_totals
from services.grounding.unasserted import Asserted, asserted

__all__ = [
    "AtomicClaim",
    "ClaimKind",
    "SkipReason",
    "atomic_claims",
    "claim_kind",
    "fact_checks",
    "skip_reason",
]

ClaimKind = Literal["dose", "contraindication", "other"]
SkipReason = Literal[
    "question", "heading", "pleasantry", "abstention", "referral", "restatement", "no_content"
]

#: Base units that make a number a dose amount (``%`` and bare numbers do not).
_DOSE_BASES: Final = frozenset({"mg", "ml", "IU", "tablet", "drop", "puff", "sachet", "times", "h"})
#: A greeting followed by at most this many content words is courtesy ("Thanks for asking!").
_COURTESY_WORDS: Final = 2
#: At most this many courtesy openings are taken off one after the other ("Hello, glad …").
_COURTESY_CHAIN: Final = 3


@dataclass(frozen=True, slots=True)
class AtomicClaim:
    """One sentence to ground: cleaned text, span in the answer, kind, markers, quantities,
    content units, and its structured medical readings (with the quantities they left over)."""

    text: str
    start: int
    end: int
    kind: ClaimKind
    markers: tuple[Marker, ...]
    quantities: tuple[Quantity, ...]
    units: frozenset[str]
    readings: tuple[Reading, ...] = ()
    leftover: tuple[Quantity, ...] = ()
    #: Drugs a dose claim without readings names ("NorLevo kunt u tot 120 uur … innemen"): its
    #: numbers are looked for in those drugs' passages.
    drugs: frozenset[str] = frozenset()
    #: For an ``other`` sentence without readings or numbers: the test of whether it names no
    #: drug, group, condition or proper name (:attr:`general`), run at the first ask.
    general_test: GeneralTest | None = field(default=None, compare=False, repr=False)
    #: The answer declines or defers somewhere (one of its sentences is an abstention, or a
    #: referral to a professional).
    declining: bool = False
    #: Every dose amount of the sentence is one it sets aside ("not the usual 2 tablets"): the
    #: figures are another dose than the patient's, which the passages must hold together.
    contrasted: bool = False
    #: Whether an amount of the sentence is a rate whose time its quantity's key leaves out
    #: ("2–6 mg/giờ" keys as "2 mg"): its numbers alone say less (round 27).
    rated: bool = False
    #: The sentence places the patient in a band ("falls in the 16–30 mL/min band"): the
    #: band's numbers carry it (round 27).
    placing: bool = False
    #: The drugs the sentence names itself, as the reader found them (for the citation check).
    named: frozenset[str] = frozenset()

    @property
    def general(self) -> bool:
        """An ``other`` sentence that names no drug, group, condition or proper name and holds
        no number: general advice (:mod:`services.grounding.general`)."""
        return self.general_test is not None and self.general_test()


def fact_checks(
    event: ChatEvent,
    registry: FactRegistry,
    extractors: ExtractorSet,
    language: str | None,
) -> list[ClaimVerdict]:
    """The event's own claims (origin ``event``), then extracted ones (origin ``extracted``)."""
    given = list(event.claims or [])
    verdicts = registry.check_many(given, origin="event")
    seen = set(given)
    extracted = [c for c in extractors.extract(event.content, language, registry) if c not in seen]
    verdicts.extend(registry.check_many(extracted, origin="extracted"))
    return verdicts


def _is_dose_amount(q: Quantity) -> bool:
    return q.unit.split("/", 1)[0] in _DOSE_BASES


def _names_drug(text: str | Tokens, drug_names: frozenset[str]) -> bool:
    if not drug_names:
        return False
    t = text if isinstance(text, Tokens) else tokenize(text)
    words = [w for w, k in zip(t.words, t.kinds, strict=True) if k != 2]
    grams = (" ".join(words[i : i + n]) for n in (1, 2, 3) for i in range(len(words) - n + 1))
    return any(g in drug_names for g in grams)


def claim_kind(
    text: str | Tokens,
    language: str | None,
    found: Iterable[Quantity],
    drug_names: frozenset[str] = frozenset(),
) -> ClaimKind:
    """``dose``, ``contraindication`` or ``other`` (see the module docstring)."""
    return _claim_kind(phrase_key(text), text, language, found, drug_names)


def _claim_kind(
    key: str,
    text: str | Tokens,
    language: str | None,
    found: Iterable[Quantity],
    drug_names: frozenset[str],
) -> ClaimKind:
    """:func:`claim_kind` with the sentence's :func:`phrase_key` already made."""
    doses = [q for q in found if _is_dose_amount(q)]
    if doses and (
        any("/kg" in q.unit for q in doses)  # "1,4 mg/kg/uur": per kg, only a dose
        or has_cue(key, cues_for(DOSE_CUES, language))
        or _names_drug(text, drug_names)
    ):
        return "dose"
    if has_cue(key, cues_for(CONTRA_CUES, language)):
        return "contraindication"
    return "other"


_LOWER_WORDS: Final = ("less", "minder", "dưới")
#: Maximum words before a bare count that make it a dose limit ("no more than 4 a day"),
#: from ``nonclaims.yaml`` ``limits`` (only the upper ones: "not less than" is no maximum).
_UPPER_LIMITS: Final = {
    lang: tuple(p for p in frames.limits if not any(w in p for w in _LOWER_WORDS))
    for lang, frames in NONCLAIM_FRAMES.items()
}


def bare_limit(t: Tokens, language: str | None) -> bool:
    """Whether a unit-less count follows a maximum phrase ("take no more than 4 a day",
    "niet meer dan 4 per dag", "không quá 4 lần"): after a dose, a count of its dose form."""
    limits = cues_for(_UPPER_LIMITS, language)
    words = t.words
    for i, kind in enumerate(t.kinds):
        if kind != NUM or (i + 1 < len(t) and words[i + 1] in UNITS):
            continue
        before = " " + " ".join(words[max(0, i - 4) : i]) + " "
        if any(before.endswith(f" {limit} ") for limit in limits):
            return True
    return False


def skip_reason(
    text: str, language: str | None, found: Iterable[Quantity], tokens: Tokens | None = None
) -> SkipReason | None:
    """Why a sentence is not a claim, or ``None`` when it is one (see the module docstring)."""
    found = tuple(found)

    def units() -> frozenset[str]:
        if tokens is not None:
            return units_of(tokens, language, passage=False)
        return claim_units(text, language)

    key = phrase_key(tokens if tokens is not None else text)
    reason = _skip_reason(text, language, found, key, units)
    if reason is not None:
        return reason
    part = asserted(tokens if tokens is not None else tokenize(text), language)
    if part is None:
        return None
    t = tokenize(part.text)
    return _asserted_reason(part, t, language, tuple(flatten(amounts(t, language))), phrase_key(t))


def _asserted_reason(
    part: Asserted,
    t: Tokens,
    language: str | None,
    found: tuple[Quantity, ...],
    key: str,
    units: Callable[[], frozenset[str]] | None = None,
) -> SkipReason | None:
    """Why a sentence whose non-asserted scopes were taken out (``part``, tokenized as ``t``)
    is no claim, or ``None`` when what is left of it is one: what a refusal leaves that is no
    claim (courtesy, nothing) makes the sentence an abstention; what a deferral or a fronted
    question leaves is judged as it stands (a referral). A refusal with at most two content
    words beside it and no amount ("I'm sorry, but I can't tell you whether …") is an
    abstention, as a greeting with as few is courtesy."""
    content = units if units is not None else lambda: units_of(t, language, passage=False)
    reason = _skip_reason(part.text, language, found, key, content)
    if reason is not None:
        return "abstention" if part.refused else reason
    if part.refused and not found and len(content()) <= _COURTESY_WORDS:
        return "abstention"
    return None


def _skip_reason(
    text: str,
    language: str | None,
    found: tuple[Quantity, ...],
    key: str,
    units: Callable[[], frozenset[str]],
) -> SkipReason | None:
    """:func:`skip_reason` with the sentence's :func:`phrase_key` made and its content units
    to be had from ``units`` (the caller's, when it keeps them for the claim)."""
    with_unit = any(q.has_unit for q in found)
    stripped = text.rstrip()
    if stripped.endswith(":") and not any(q.has_unit and not _body_weight(q) for q in found):
        return "heading"  # "Because she weighs under 40 kg, the lower dosing applies:"
    if stripped.endswith("?"):
        return "question"
    if not has_cue(key, _skip_gate(language)):
        if with_unit:  # no phrase any test below needs (most sentences): one search
            return None
    else:
        if has_cue(_without(key, _caution_keys(language)), cues_for(CONTRA_CUES, language)):
            return None
        if with_unit:
            framed = _frame(key, language, with_unit=True)
            return framed if framed == "abstention" else None
        rest = _after_courtesy(key, language)
        if rest is not None and len(claim_units(rest, language)) <= _COURTESY_WORDS:
            return "pleasantry"
        if has_cue(key, cues_for(ABSTENTION_CUES, language)):
            return "abstention"
        if has_cue(key, cues_for(REFERRAL_CUES, language)):
            return "referral"
        frame = _frame(key, language, with_unit=with_unit)
        if frame is not None:
            return frame
    words = set(key.split())
    if not found and ((words and words <= ACKNOWLEDGEMENTS) or not units()):
        return "no_content"
    if not found and words & ACKNOWLEDGEMENTS and words <= _elliptic_words(language):
        return "no_content"  # "Not in your case.", "Nee, dat hoeft niet.": a yes or a no
    return None


@lru_cache(maxsize=8)
def _elliptic_words(language: str | None) -> frozenset[str]:
    """The words an elliptic reply is made of: answer words (``ACKNOWLEDGEMENTS``) and the
    language's ``ellipsis`` words (``nonclaims.yaml``). Such a reply says yes or no to the
    question and nothing a passage could back; the sentences after it carry the claim."""
    frames = frames_for(language)
    return ACKNOWLEDGEMENTS | {w for f in frames for p in f.ellipsis for w in p.split()}


def _frame(key: str, language: str | None, *, with_unit: bool) -> SkipReason | None:
    """An abstention, hedge or referral written in free words (``rules/grounding/
    nonclaims.yaml``): speaker or source + negator + verb of knowing; a hedge; a professional
    + a verb of contacting or deciding, or an urgency ("don't wait") (only without an
    amount)."""
    frames = frames_for(language)
    for f in frames:
        if not has_cue(key, _FRAME_GATES[id(f)]):
            continue  # none of the phrases each branch below needs: most sentences
        if has_cue(key, f.contrast) and has_cue(_without(key, f.concessions), f.contrast):
            if not with_unit and _alone_then_referral(key, f):
                return "referral"  # "don't change it yourself, but call your neurologist"
            if not with_unit and _covered_then_silent(key, f):
                return "abstention"  # "the leaflet explains …, but says nothing about alcohol"
            continue  # "…, but adults take 4 g" (not "call 999 now, even though he seems fine")
        who = has_cue(key, f.speakers) or has_cue(key, f.sources)
        if who and has_cue(_without(key, f.limits), f.negators) and has_cue(key, f.verbs):
            return "abstention"
        if has_cue(key, f.hedges) and not with_unit:
            return "abstention"
        if not with_unit and names_professional(key, f) and has_cue(key, f.contact_verbs):
            return "referral"
        if not with_unit and has_cue(key, f.urgency):
            return "referral"
        if not with_unit and has_cue(key, f.courtesy):
            return "pleasantry"
        if not with_unit and opening_cue(key, f.restatements) is not None:
            return "restatement"
        if not with_unit and has_cue(key, f.alone) and has_cue(key, f.alone_negators):
            return "referral"  # "don't change the dose on your own": ask the prescriber
        if not with_unit and has_cue(key, f.for_you) and has_cue(key, f.offers):
            return "pleasantry"  # "then I'll work it out for you"
        if not with_unit and opening_cue(key, f.requests) is not None:
            return "question"  # "Tell me more about the rash.": a question back
    return None


def _alone_then_referral(key: str, f: NonclaimFrames) -> bool:
    """Whether a caution not to act alone comes before the first contrast word and a
    professional with a contact verb after it: the contrast sends the user to whoever
    prescribes ("Pas de dosis niet zelf aan, maar bel de neuroloog"), it adds no claim."""
    parts = _at_contrast(key, f)
    if parts is None:
        return False
    head, tail = parts
    alone = has_cue(head, f.alone) and has_cue(head, f.alone_negators)
    return alone and names_professional(tail, f) and has_cue(tail, f.contact_verbs)


def _at_contrast(key: str, f: NonclaimFrames) -> tuple[str, str] | None:
    """The key before the first contrast word and after it (the word left out), or ``None``."""
    at = min((i for c in f.contrast if (i := key.find(f" {c} ")) >= 0), default=-1)
    if at < 0:
        return None
    head, tail = key[: at + 1], key[at:]
    first = tail.split(maxsplit=1)
    return head, " " + (first[1] if len(first) > 1 else "")


def _covered_then_silent(key: str, f: NonclaimFrames) -> bool:
    """Whether the sentence says what the sources cover before its first contrast word (a
    source and a verb of ``describes``) and that they say nothing of the matter after it (a
    negator and a verb of knowing or stating): "De tekst beschrijft de dosering, maar zegt
    niets over …" describes the documents and declines."""
    parts = _at_contrast(key, f)
    if parts is None:
        return False
    head, tail = parts
    if not (has_cue(head, f.sources) and has_cue(head, f.describes)):
        return False
    return has_cue(_without(tail, f.limits), f.negators) and has_cue(tail, f.verbs)


def _frame_gate(f: NonclaimFrames) -> tuple[str, ...]:
    """Every phrase one of which each branch of :func:`_frame` needs (a restatement opening
    is in the key too): a key with none of them is no frame, known by one search."""
    return (
        *f.contrast,
        *f.speakers,
        *f.sources,
        *f.hedges,
        *f.contact_verbs,
        *f.urgency,
        *f.courtesy,
        *f.restatements,
        *f.alone,
        *f.for_you,
        *f.requests,
    )


#: ``id(frames)`` → their gate; the frames of ``NONCLAIM_FRAMES`` live as long as the module.
_FRAME_GATES: Final = {id(f): _frame_gate(f) for f in NONCLAIM_FRAMES.values()}


@lru_cache(maxsize=8)
def _skip_gate(language: str | None) -> tuple[str, ...]:
    """Every phrase some test of :func:`_skip_reason` after the question mark needs (a
    contraindication cue, a courtesy opening, an abstention or referral phrase, a frame's
    gate): a key with none of them is not skipped for a phrase."""
    frames = frames_for(language)
    return (
        *cues_for(CONTRA_CUES, language),
        *_courtesy_openings(language),
        *cues_for(ABSTENTION_CUES, language),
        *cues_for(REFERRAL_CUES, language),
        *(p for f in frames for p in _FRAME_GATES[id(f)]),
    )


@lru_cache(maxsize=8)
def _courtesy_openings(language: str | None) -> tuple[str, ...]:
    """Openings of courtesy: greetings and pleasantries (lexicon.py) and gladness ("glad to
    hear", "fijn dat": nonclaims.yaml), in one tuple so one pattern matches them."""
    frames = frames_for(language)
    glad = tuple(p for f in frames for p in f.gladness)
    return (*cues_for(PLEASANTRY_CUES, language), *glad)


def _after_courtesy(key: str, language: str | None) -> str | None:
    """What follows the courtesy openings ``key`` starts with, or ``None`` when it opens with
    none. Openings may follow each other ("Hallo, fijn dat u contact opneemt", "You're very
    welcome, I'm glad that helped", "Chào bạn, rất vui vì …"): a greeting and then a gladness
    are courtesy as one, so the words after the last opening are what is counted."""
    openings = _courtesy_openings(language)
    rest: str | None = None
    for _ in range(_COURTESY_CHAIN):
        opening = opening_cue(key if rest is None else rest, openings)
        if opening is None:
            break
        rest = (key if rest is None else rest)[len(opening) - 1 :]  # keep the padding space
    return rest


#: :data:`CAUTION_IDIOMS` as phrase keys ("don't" is written "not" there), per language.
_CAUTION_KEYS: Final = {
    language: tuple(phrase_key(p).strip() for p in phrases)
    for language, phrases in CAUTION_IDIOMS.items()
}


def _caution_keys(language: str | None) -> tuple[str, ...]:
    return cues_for(_CAUTION_KEYS, language)


def _without(key: str, phrases: tuple[str, ...]) -> str:
    """``key`` with every phrase of ``phrases`` taken out ("no more than" is a limit, not a
    negator of knowing: "The leaflet says to take no more than 4 g")."""
    for phrase in phrases:
        key = key.replace(f" {phrase} ", " ")
    return key


def _lead_in_kind(text: str, language: str | None) -> ClaimKind | None:
    key = phrase_key(text)
    if has_cue(key, cues_for(CONTRA_CUES, language)):
        return "contraindication"
    if has_cue(key, cues_for(DOSE_CUES, language)):
        return "dose"
    return None


def _counts_as_stated(
    readings: tuple[Reading, ...],
    t: Tokens,
    found: list[Amount],
    language: str | None,
    lexicon: MedicalLexicon,
    before: dict[str, tuple[Decimal, frozenset[str]]] | None = None,
) -> tuple[Reading, ...]:
    """An answer's counts of a dose form restated in mg when the sentence states the form's
    strength: "2 tabletten van 250 mg per keer" is 500 mg per dose, "één capsule van 20 mg per
    dag" 20 mg per day, "two 200 mg capsules" 400 mg, "Van Maxalt 10 mg neemt u 1 tablet" 10 mg.
    The strength is then no dose of its own; its basis, qualifier and frequency go to the
    restated count where the count has none. ``before``: the strengths earlier sentences of
    the answer stated (updated here), for counts in a sentence that states none ("… nog 1
    tablet, maar niet meer dan 2 tabletten per 24 uur"), with the drugs they were stated
    for: another drug's counts ("Your salbutamol is 1–2 puffs") do not take them."""
    stated = strength_amounts(t, found)
    if not stated and len(readings) > 1:  # a product's strength beside a count of its form
        stated = named_strengths(
            (r.unit for r in readings), found, lambda i: looks_like_name(t, i, language, lexicon)
        )
    if not stated:
        if before:
            return tuple(
                next(iter(counts_in_mg((r,), {r.unit: before[r.unit][0]})), r)
                if r.unit in before and _same_product(r.drugs, before[r.unit][1])
                else r
                for r in readings
            )
        return readings
    readings = scale_counted(readings, counted_strengths(t, found, language, stated))
    per = one_strength((unit, value) for unit, value, _ in stated)
    if before is not None:
        of = frozenset().union(*(r.drugs for r in readings))
        before.update((unit, (value, of)) for unit, value in per.items())
    if not per or not any(r.unit in per for r in readings):
        return readings
    at = {t.starts[a.t0] for unit, _, a in stated if unit in per}
    strength = [r for r in readings if r.unit == "mg" and r.start in at]
    out: list[Reading] = []
    for r in readings:
        if r in strength:
            continue
        if r.unit not in per:
            out.append(r)
            continue
        for mg in counts_in_mg((r,), per):
            s = strength[0] if strength else mg
            out.append(
                replace(
                    mg,
                    basis=mg.basis or s.basis,
                    qualifier=mg.qualifier or s.qualifier,
                    frequency=mg.frequency or s.frequency,
                )
            )
    return tuple(dict.fromkeys(out))


def _same_product(drugs: frozenset[str], stated_for: frozenset[str]) -> bool:
    """Whether a count of ``drugs`` may take a strength stated for ``stated_for`` (either
    unnamed, or a drug in common)."""
    return not drugs or not stated_for or bool(drugs & stated_for)


#: Months in a year, for an age said back in months ("een baby van drie maanden").
_MONTHS: Final = Decimal(12)
#: Years apart that are one age (4 months is 0.333… years in a float, 4/12 here).
_AGE_ROUNDING: Final = Decimal("0.01")
#: A rate per minute or hour is no dose (a kidney clearance: "25 ml/min").
_RATE_HOURS: Final = Decimal(1)


#: Copulas after which a bare number says someone's age ("Uw zoon is 7", "He's 68"); Vietnamese
#: writes the unit ("7 tuổi").
_COPULAS: Final = frozenset({"is", "s", "was", "bent", "zijn"})
#: Words right before an age in months said back ("At 14 months she …", "Met 14 maanden valt
#: zij …", "Lúc 14 tháng, bé …").
_AT_AGE: Final = frozenset({"at", "met", "lúc", "ở"})


@lru_cache(maxsize=8)
def _rejection_keys(language: str | None) -> tuple[str, ...]:
    frames = frames_for(language)
    return tuple(p for f in frames for p in f.rejections)


@lru_cache(maxsize=8)
def _rejection_matcher(language: str | None) -> PhraseMatcher[None]:
    return PhraseMatcher((tuple(p.split()), None) for p in _rejection_keys(language))


#: Tokens that end a clause: what a rejection sets aside stops there.
_CLAUSE_ENDS: Final = frozenset({",", ";", ":", "—", "–", "(", ")"})


def _not_rejected(
    readings: tuple[Reading, ...] | list[Reading], t: Tokens, language: str | None
) -> tuple[Reading, ...]:
    """The readings outside what the sentence sets aside: from a rejection ("rather than",
    "in plaats van", "niet de", "thay vì") to the end of its clause ("5 mg once a day rather
    than the standard 10 mg": the 10 mg is no dose the answer gives)."""
    words = t.words
    spans: list[tuple[int, int]] = []
    for i, j, _ in _rejection_matcher(language).find(words):
        while j < len(words) and words[j] not in _CLAUSE_ENDS:
            j += 1
        spans.append((t.starts[i], t.ends[j - 1]))
    if not spans:
        return tuple(readings)
    return tuple(r for r in readings if not any(lo <= r.start < hi for lo, hi in spans))


def _told_by_question(
    found: Sequence[Amount], used: frozenset[int], question: Carry, words: Sequence[str] = ()
) -> frozenset[Quantity]:
    """The quantities of a sentence that say back the patient's age or kidney clearance as the
    question states them ("Met een klaring van 25 ml/min …" after "klaring 25", "voor een baby
    van drie maanden" after "onze zoon van 3 maanden"), read by the sentence as an age or a
    clearance (``used``), or, for the age, a bare number after a copula ("Uw zoon is 7, dus …"
    after "mijn zoon van 7"): they describe the patient, not the drug. Another value than the
    question's is still looked for among the passages."""
    out: set[Quantity] = set()
    age, clearance = question.age, question.clearance
    for a in found:
        if len(a.parts) != 1:
            continue
        if a.t0 not in used:
            before = words[a.t0 - 1] if 1 <= a.t0 <= len(words) else ""
            # "Uw zoon is 7, dus …"; "At 14 months she …" (round 26; a bare "At 80" is not
            # read: the reader does not take it for the age it is, and so the answer's group)
            said = (not a.symbol and before in _COPULAS) or (
                a.unit == "month" and before in _AT_AGE
            )
            if not (said and age is not None and age[0] is not None and age[0] == age[1]):
                continue
            said_years = a.low / _MONTHS if a.unit == "month" else a.low
            if abs(said_years - age[0]) < _AGE_ROUNDING:
                out.add(a.parts[0])
            continue
        value = a.low
        if (
            clearance is not None
            and a.symbol == "ml"
            and a.per_time is not None
            and a.per_time <= _RATE_HOURS
            and clearance.low == clearance.high == value
        ):
            out.add(a.parts[0])
        elif age is not None and age[0] is not None and age[0] == age[1]:
            years = value / _MONTHS if a.unit == "month" else value if not a.symbol else None
            if years is not None and abs(years - age[0]) < _AGE_ROUNDING:
                out.add(a.parts[0])
    return frozenset(out)


def atomic_claims(
    text: str,
    language: str | None,
    drug_names: frozenset[str] = frozenset(),
    lexicon: MedicalLexicon | None = None,
    context: Carry | None = None,
    said: frozenset[str] = frozenset(),
) -> list[AtomicClaim]:
    """The answer's claims in order, with kind, citation markers, quantities and readings.

    ``said``: the amounts the user's question states (:class:`Quantity` keys). In an answer that
    declines (a sentence of it is an abstention) or sends the user to urgent care, a sentence
    whose amounts with a unit are all the question's and that is a referral or an abstention
    without them ("whether 100 mg twice a day suits you is for your neurologist to decide",
    after "Can I go up to 100 mg twice a day?"), or that reports to someone ("so you can tell
    them it was 10 tablets of 30 mg"), hands the user's own amount back: it is no claim.

    >>> answer = "Hello! Take 500 mg every 4 hours. Do not use it with alcohol. Anything else?"
    >>> [(c.text, c.kind) for c in atomic_claims(answer, "en")]
    [('Take 500 mg every 4 hours.', 'dose'), ('Do not use it with alcohol.', 'contraindication')]
    """
    lex = lexicon if lexicon is not None else load_lexicon()
    claims: list[AtomicClaim] = []
    context_kind: ClaimKind | None = None  # what a lead-in hands down to its list items
    carry = context if context is not None else Carry()
    after_dose = False  # a dose claim came before
    # the strength per dose form the answer has stated, and the drugs it was stated for
    strengths: dict[str, tuple[Decimal, frozenset[str]]] = {}
    handed_back: list[int] = []  # claims that hand the question's amounts back (see above)
    declines = False  # a sentence of the answer is an abstention
    escalates = False  # a sentence of the answer sends the user to urgent care
    refers = False  # a sentence of the answer sends the user to a professional (round 23)
    figures = Figures()  # what the answer has stated, for the totals it works out (round 26)
    total_phrases = lex.cues[language if language in lex.cues else "en"].total_tokens
    for sentence in split_sentences(text, language):
        said_text = sentence.text  # the sentence as it asserts (non-asserted scopes taken out)
        t = tokenize(said_text)
        found_amounts = amounts(t, language)
        found = tuple(flatten(found_amounts))
        key = phrase_key(t)
        kept: list[frozenset[str]] = []  # the content units, made once for both uses

        def content(t: Tokens = t, kept: list[frozenset[str]] = kept) -> frozenset[str]:
            if not kept:
                kept.append(units_of(t, language, passage=False))
            return kept[0]

        reason = _skip_reason(said_text, language, found, key, content)
        part = asserted(t, language, key) if reason is None else None
        if part is not None:  # "I can't tell you whether 100 mg is safe, but …": the rest
            said_text, t, kept = part.text, tokenize(part.text), []
            found_amounts = amounts(t, language)
            found = tuple(flatten(found_amounts))
            key = phrase_key(t)

            def content(t: Tokens = t, kept: list[frozenset[str]] = kept) -> frozenset[str]:
                if not kept:
                    kept.append(units_of(t, language, passage=False))
                return kept[0]

            reason = _asserted_reason(part, t, language, found, key, content)
        declines = declines or reason == "abstention"
        escalates = escalates or (reason == "referral" and _urgent(key, language))
        # "If it has not settled after two days, see your GP.": a referral with a time limit
        timed = reason is None and _timed_referral(found, key, language)
        refers = refers or reason == "referral" or timed
        if reason is None and said and _said_back(found, said):
            own = tuple(q for q in found if q.key not in said)
            if _reports(key, language) or (
                _skip_reason(said_text, language, own, key, content) in _HANDED_BACK
            ):
                handed_back.append(len(claims))
        if reason == "heading":
            context_kind = _lead_in_kind(sentence.text, language)
            read = read_sentence(t, 0, len(t), found_amounts, language, lex, carry)
            carry = read.carry
            continue
        if not sentence.bullet:
            context_kind = None
        if reason is not None:
            continue
        units = content()
        read = read_sentence(t, 0, len(t), found_amounts, language, lex, carry, units)
        stated = found_amounts
        totals = worked_out_totals(t, found_amounts, read.readings, figures, total_phrases)
        if totals:  # "so ten tablets in all": the answer's own arithmetic, no dose of its own
            found_amounts = [a for a in found_amounts if a not in totals]
            found = tuple(flatten(found_amounts))
            read = read_sentence(t, 0, len(t), found_amounts, language, lex, carry, units)
        figures.add(stated, read.readings)
        carry = read.carry
        if totals and not found_amounts and not read.readings:
            continue  # "tổng cộng 28 viên.": a sentence that only adds up is no claim
        readings = _counts_as_stated(read.readings, t, found_amounts, language, lex, strengths)
        if readings and has_cue(key, _rejection_keys(language)):
            readings = _not_rejected(readings, t, language)
        if any(not r.open for r in readings):
            kind: ClaimKind = (
                "dose" if any(r.kind == "dose" for r in readings) else "contraindication"
            )
        else:  # no reading, or only an open one (its kind follows from what the passages say)
            kind = _claim_kind(key, t, language, found, drug_names)
            inherits = context_kind == "contraindication" or any(_is_dose_amount(q) for q in found)
            if kind == "other" and sentence.bullet and context_kind is not None and inherits:
                kind = context_kind
            if kind == "other" and after_dose and bare_limit(t, language):
                kind = "dose"  # "Take no more than 4 a day." after a dose: a count of it
            if kind == "other" and read.held:
                kind = "dose"  # what a product holds: its number must be the passages'
            if kind == "other" and any(
                a.per_time is not None and _is_dose_amount(a.parts[0]) for a in found_amounts
            ):
                kind = "dose"  # "2–10 mg/phút", "0,01 ml per minuut": an amount per time
        general = (
            GeneralTest(t, language, lex)
            if kind == "other" and (not found or timed) and all(r.open for r in readings)
            else None
        )
        restated = (
            _restated_times(found_amounts, t.words) | _one_of_strength(found_amounts, t.words)
            if len(found_amounts) > 1
            else frozenset()
        )
        if restated:  # "60 ngày (khoảng 2 tháng)": the months say the days again
            found = tuple(q for q in found if q not in restated)
        leftover = tuple(
            q
            for a in found_amounts
            if not set(range(a.t0, a.t1)) & read.used
            for q in a.parts
            if q not in restated
        )
        if readings and any(a.unit == "times" for a in found_amounts):
            # "900 mg in één keer", "in te nemen in één of twee keer": a count of times after
            # "in" that the readings did not read is the go(es) a dose is taken in, no number
            # to look for ("1 time only" still is one) (round 27)
            goes = {
                q
                for a in found_amounts
                if a.unit == "times" and a.t0 > 0 and t.words[a.t0 - 1] in _IN_GOES
                for q in a.parts
            }
            leftover = tuple(q for q in leftover if q not in goes)
        if context is not None and (context.age is not None or context.clearance is not None):
            told = _told_by_question(found_amounts, read.used, context, t.words)
            if told:  # the patient's age or clearance said back: no number to look for
                found = tuple(q for q in found if q not in told)
                leftover = tuple(q for q in leftover if q not in told)
        after_dose = after_dose or kind == "dose"
        named: frozenset[str] = read.held
        if kind == "dose" and not readings and found and not named:
            named = frozenset(inn for _, _, inn in lex.find_drugs(t.words, 0, len(t)))
        claims.append(
            AtomicClaim(
                sentence.text,
                sentence.start,
                sentence.end,
                kind,
                sentence.markers,
                found,
                units,
                readings,
                leftover,
                named,
                general,
                contrasted=read.contrasted,
                rated=any(a.per_time is not None for a in found_amounts),
                placing=bool(found)
                and any(has_cue(key, f.placements) for f in frames_for(language)),
                named=read.named,
            )
        )
    if declines or refers:
        claims = [replace(c, declining=True) if c.general_test is not None else c for c in claims]
    if (declines or escalates) and handed_back:
        return [c for i, c in enumerate(claims) if i not in handed_back]
    return claims


#: Units of time: a length restated in brackets in another of them says the same.
_TIMES: Final = frozenset({"h", "month"})


def _restated_times(found: Sequence[Amount], words: Sequence[str]) -> frozenset[Quantity]:
    """The quantities of a time in brackets right after another time, which it restates in
    other units ("for 60 days (about 2 months)", "48 uur (2 dagen)", "60 ngày (khoảng 2
    tháng)"): the first is the one to look for among the passages (round 27)."""
    out: set[Quantity] = set()
    for a, b in itertools.pairwise(found):
        k = b.t0 - 1
        while k > a.t1 and words[k] in ABOUT_WORDS:
            k -= 1
        if k == a.t1 and words[k] == "(" and a.unit in _TIMES and b.unit in _TIMES:
            out.update(b.parts)
    return frozenset(out)


#: Words before a count of times that make it the goes a dose is taken in ("in één keer").
_IN_GOES: Final = frozenset({"in", "trong"})


#: Count units of a dose form, and the words that may join a count of one to its strength.
_FORM_BASES: Final = frozenset({"tablet", "sachet", "puff"})
_OF_STRENGTH: Final = frozenset({"of", "van", "loại", "của"})


def _one_of_strength(found: Sequence[Amount], words: Sequence[str]) -> frozenset[Quantity]:
    """The count of one dose form written right before its strength ("một viên 345 mg", "one
    tablet of 345 mg", "één tablet van 345 mg"): the dose is the strength, and the count is no
    number to look for (round 27)."""
    out: set[Quantity] = set()
    for a, b in itertools.pairwise(found):
        if a.unit not in _FORM_BASES or a.low != 1 or a.high != 1 or b.unit != "mg":
            continue
        if all(w in _OF_STRENGTH for w in words[a.t1 : b.t0]) and b.t0 - a.t1 <= 1:
            out.update(a.parts)
    return frozenset(out)


def _urgent(key: str, language: str | None) -> bool:
    """Whether a referral sends the user to urgent care ("don't wait", "wacht niet af",
    "đừng chờ"; ``urgency`` in ``nonclaims.yaml``)."""
    return any(has_cue(key, f.urgency) for f in frames_for(language))


def _timed_referral(found: Sequence[Quantity], key: str, language: str | None) -> bool:
    """Whether a sentence whose only amounts are lengths of time is a referral without them
    ("If you still need it after two weeks, have a chat with your GP", "Als het na 3 dagen
    niet beter is, ga dan naar de huisarts"): a safety net, general advice whose numbers must
    still be the passages' (the grounding stage looks for them), not a claim about the drug."""
    if not found or any(q.unit != "h" for q in found):
        return False
    return _frame(key, language, with_unit=False) == "referral"


def _reports(key: str, language: str | None) -> bool:
    """Whether a sentence reports to someone: a verb of telling and a complementizer ("so you
    can tell them that it was …", "zodat u kunt vertellen dat het om … gaat", "báo với nhân
    viên y tế là …"; ``reports`` and ``report_that`` in ``nonclaims.yaml``)."""
    return any(
        has_cue(key, f.reports) and has_cue(key, f.report_that) for f in frames_for(language)
    )


def _body_weight(q: Quantity) -> bool:
    """Whether ``q`` is a body weight ("40 kg"), which a lead-in may name for the group its
    list is for: no dose amount."""
    return q.unit == "mg" and q.display.endswith(" kg")


#: What a sentence is without the question's amounts for it to hand them back (atomic_claims).
_HANDED_BACK: Final = frozenset({"referral", "abstention"})


def _said_back(found: tuple[Quantity, ...], said: frozenset[str]) -> bool:
    """Whether every amount with a unit among ``found`` (one at least) is one of ``said``."""
    with_unit = [q for q in found if q.has_unit]
    return bool(with_unit) and all(q.key in said for q in with_unit)
