"""The grounding stage: ``check(event, registry, ...) -> GroundingReport`` — a pure function.

For one sampled assistant answer it

1. checks structured claims (the event's and the extracted ones) against the fact registry;
2. splits the answer into atomic claims and grounds each in the retrieved passages
   (:mod:`~services.grounding.evidence`);
3. applies the judge's verdicts that the caller obtained for :func:`claims_for_judge`:
   ``entailment``/``neutral``/``contradiction`` decide the claim (``method="judge"``), but a
   claim whose numbers are missing from every passage is never grounded, whatever the judge says;
   ``unverified`` (judge down, timeout, malformed reply) keeps the deterministic verdict and is
   recorded — it never counts as support by itself;
4. checks citations (:mod:`~services.grounding.citations`);
5. scores faithfulness with :func:`services.evaluation.faithfulness`.

The judge runs outside (HTTP, async, cached); this module never does I/O. A dose or
contraindication claim that is not grounded is a hard failure: :func:`critical_claims` lists
them for the caller, which raises the critical findings.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from decimal import Decimal
from functools import lru_cache
from typing import Final, Literal

from schemas.events import ChatEvent
from schemas.verdicts import (
    AMOUNT_CHARS,
    ClaimCheck,
    GroundingReport,
    JudgeLabel,
    MedicalCheck,
    MedicalContext,
    MedicalReading,
    NumberRange,
    PassageClaim,
)
from services.evaluation import faithfulness
from services.grounding.citations import check_citations, resolve
from services.grounding.claims import AtomicClaim, atomic_claims, fact_checks
from services.grounding.config import GroundingConfig
from services.grounding.evidence import (
    UNNAMED,
    Evidence,
    Verdict,
    decides_nothing,
    ground,
    ground_medical,
)
from services.grounding.extractors import ExtractorSet
from services.grounding.facts import FactRegistry
from services.grounding.general import anchored_lazily
from services.grounding.medical.compare import Comparison, PassageReading, age_within
from services.grounding.medical.context import safety_free, sentence_context
from services.grounding.medical.lexicon import MedicalLexicon, load_lexicon, spelling_key
from services.grounding.medical.reading import (
    NEGATIVE,
    Carry,
    Reading,
    Span,
    first_age,
    read_sentence,
)
from services.grounding.medical.strength import FORM_UNITS, counts_in_mg
from services.grounding.prepared import PassageCache
from services.grounding.quantities import UNITS, amounts, parse_number
from services.grounding.sentences import split_sentences
from services.grounding.text import claim_units, detect_language
from services.grounding.tokens import NUM, SYM, WORD, TextTokens, Tokens, tokenize

__all__ = [
    "GroundingConfig",
    "check",
    "claims_for_judge",
    "critical_claims",
    "medical_context",
    "medical_reading",
]

_PRIORITY = {"dose": 0, "contraindication": 1, "other": 2}


def _resolve_drugs(claims: list[AtomicClaim], evidence: Evidence) -> list[AtomicClaim]:
    """Readings that name no drug (and had none earlier in the answer) take the drug of the
    passages the sentence cites, else the drug taken for an earlier sentence, else the drug of
    all passages' readings when that is exactly one, else the one drug whose passages state
    the reading's amount ("one 250 mg tablet once a week" beside a 250 mg and a 100 mg
    product); the drug taken carries to the next sentences ("keep taking it weekly …")."""
    out: list[AtomicClaim] = []
    last: frozenset[str] = frozenset()
    for claim in claims:
        named = frozenset().union(*(r.drugs for r in claim.readings))
        if not claim.readings or all(r.drugs for r in claim.readings):
            last = named or last
            out.append(claim)
            continue
        cited = [d for m in claim.markers for d, ok in resolve(m, evidence) if ok]
        drugs = evidence.drugs_of(cited) if cited else frozenset()
        if len(drugs) > 1:  # the cited passage names others too ("… with ciclosporin"):
            kinds = {r.kind for r in claim.readings}
            drugs = frozenset().union(  # the drug its statements of that kind are about
                *(
                    p.reading.drugs
                    for p in evidence.readings
                    if p.doc_id in cited and p.reading.kind in kinds
                )
            )
        if len(drugs) != 1:
            drugs = last
        if len(drugs) != 1:
            kinds = {r.kind for r in claim.readings}
            about = [p.reading.drugs for p in evidence.readings if p.reading.kind in kinds]
            # one drug only when every such passage reading names it: a passage about a drug
            # no lexicon knows ("Ivabradine: …" beside a nebivolol leaflet) may be the one
            drugs = frozenset().union(*about) if all(about) else frozenset()
        if len(drugs) != 1:
            drugs = _drug_by_amount(claim.readings, evidence)
        if len(drugs) != 1:
            out.append(claim)
            continue
        last = drugs
        readings = tuple(
            r if r.drugs else replace(r, drugs=drugs, drug_source="passage") for r in claim.readings
        )
        out.append(replace(claim, readings=readings))
    return out


def _drug_by_amount(readings: tuple[Reading, ...], evidence: Evidence) -> frozenset[str]:
    """The drugs of the passage readings that state an amount of a drugless reading, the same
    low and high in the same unit."""
    by_amount = evidence.drugs_by_amount
    found: frozenset[str] = frozenset()
    for r in readings:
        if not r.drugs and r.amount is not None:
            found |= by_amount.get((r.unit, r.amount.low, r.amount.high), frozenset())
    return frozenset() if UNNAMED in found else found


#: A person word shortly before a bare number makes it that person's age in a question ("my
#: mum is 82", "I'm 79", "mijn zoon van 6", "ik ben 75"); only questions are read this way.
_PERSONS: Final = frozenset(
    {
        "i",
        "she",
        "he",
        "mum",
        "mom",
        "mother",
        "father",
        "dad",
        "son",
        "daughter",
        "child",
        "kid",
        "grandmother",
        "grandfather",
        "grandma",
        "grandpa",
        "wife",
        "husband",
        "boy",
        "girl",
        "ik",
        "zij",
        "hij",
        "moeder",
        "vader",
        "zoon",
        "dochter",
        "kind",
        "oma",
        "opa",
        "vrouw",
        "man",
        "jongen",
        "meisje",
        # kinship and familiar words (en, nl)
        "granddad",
        "grandad",
        "gran",
        "granny",
        "nan",
        "nana",
        "nanna",
        "grandson",
        "granddaughter",
        "grandchild",
        "lad",
        "lass",
        "toddler",
        "baby",
        "niece",
        "nephew",
        "aunt",
        "uncle",
        "brother",
        "sister",
        "partner",
        "zus",
        "broer",
        "neef",
        "nicht",
        "tante",
        "oom",
        "peuter",
        "kleuter",
    }
)
#: Dutch heads of compound person words ("kleinzoon", "schoonmoeder", "stiefvader").
_PERSON_HEADS: Final = ("zoon", "dochter", "moeder", "vader", "kind", "broer", "zus", "ouder")
#: Dutch diminutive endings ("zoontje", "dochtertje", "kleinzoontje", "meisje" is listed).
_DIMINUTIVES: Final = ("etje", "tje", "pje", "je")
#: A word that ends in none of these is a person word only when it is listed.
_PERSON_ENDINGS: Final = _DIMINUTIVES + _PERSON_HEADS


def _is_person(word: str) -> bool:
    """A person word of a question, also as a Dutch diminutive or compound.

    >>> [_is_person(w) for w in ("grandad", "kleinzoontje", "schoonmoeder", "reason", "tasje")]
    [True, True, True, False, False]
    """
    if word in _PERSONS:
        return True
    if not word.endswith(_PERSON_ENDINGS):
        return False  # nothing to strip and no head: most words, decided in C
    for ending in _DIMINUTIVES:
        if word.endswith(ending) and len(word) > len(ending) + 2:
            word = word[: -len(ending)]
            break
    return word in _PERSONS or any(
        word.endswith(head) and len(word) > len(head) + 2 for head in _PERSON_HEADS
    )


#: Words for kilograms of body weight after a number ("14 kg", "14 kilo", "nặng 14 cân").
_WEIGHT_UNITS: Final = frozenset(
    {
        "kg",
        "kgs",
        "kilo",
        "kilos",
        "kilogram",
        "kilograms",
        "kilogramme",
        "kilogrammes",
        "kilogam",
        "cân",
        "ký",
        "kí",
    }
)
_HEAVIEST: Final = Decimal(300)
#: Substrings every weight word contains (a cheap test before tokenising).
_WEIGHT_HINTS: Final = ("kg", "kilo", "cân", "ký", "kí")


def body_weight(text: str, language: str | None = None) -> Decimal | None:
    """The first body weight ``text`` states: a number right before a kilogram word, not a
    denominator ("0.15 mg/kg" has none), between 1 and 300 kg; else ``None``.

    >>> body_weight("Voor uw dochter van 14 kilo: 2,1 mg"), body_weight("0.15 mg/kg")
    (Decimal('14'), None)
    """
    head = text[:QUESTION_CHARS]
    low = head.lower()
    if not any(w in low for w in _WEIGHT_HINTS):
        return None  # most answers: no tokens needed
    return _weight_in(tokenize(head), language)


#: Words right before a weight, or right after its unit, that make it the bound of a weight
#: band ("children under 30 kg", "between 15 and 30 kg", "15 kg to 30 kg", "kinderen tussen
#: 15 en 30 kilo", "trẻ từ 15 đến 30 kg"), which a leaflet states, not the patient's weight.
_BAND_WORDS: Final = frozenset(
    {
        *("under", "over", "below", "above", "than", "between", "and", "to", "from", "least"),
        *("onder", "boven", "dan", "tussen", "en", "tot", "vanaf", "minder", "meer"),
        *("dưới", "trên", "từ", "đến", "tới", "hơn", "và", "khoảng"),
        *("<", ">", "≤", "≥", "-", "–"),
    }
)


def _weight_in(t: Tokens, language: str | None) -> Decimal | None:
    words, kinds = t.words, t.kinds
    for i in range(len(t) - 1):
        if kinds[i] != NUM or words[i + 1] not in _WEIGHT_UNITS:
            continue
        if (i > 0 and words[i - 1] in _BAND_WORDS) or _band_goes_on(t, i + 2):
            continue  # a bound of a weight band ("under 30 kg", "15 kg to 30 kg")
        value = parse_number(words[i], language)
        if value is not None and 0 < value <= _HEAVIEST:
            return value
    return None


def _band_goes_on(t: Tokens, k: int) -> bool:
    """Whether a band word at ``k`` (right after a weight's unit) leads to the band's other
    bound, a number within two tokens ("15 kg to 30 kg", "15 kg – 30 kg"); "weighs 20 kg and
    the doctor …" goes on to something else."""
    if k >= len(t) or t.words[k] not in _BAND_WORDS:
        return False
    return any(t.kinds[j] == NUM for j in range(k + 1, min(k + 3, len(t))))


def _question_age(text: str) -> Decimal | None:
    """The first whole number from 1 to 119 with a person word among the three tokens before
    it and no unit after it ("my mum is 82"), else ``None``."""
    return _age_in(tokenize(text))


#: Words a question's bare age can be followed by ("… 8 and …", "… 70 en …", "… 82 maar …",
#: "tôi 45 tuổi"); before any other word, and without one of :data:`_BEFORE_AGE` before it, the
#: number counts something: "I smoke about 8 cigarettes a day", "ik drink 3 glazen per avond".
_AFTER_AGE: Final = frozenset(
    {
        *("and", "but", "or", "so", "now", "today", "this", "next", "last", "with", "yo"),
        *("years", "year", "yrs", "yr", "y", "old"),
        *("en", "maar", "of", "dus", "nu", "met", "jaar", "jr"),
        *("và", "nhưng", "hoặc", "nên", "tuổi", "rồi"),
    }
)

#: Words that link a person to the bare age right after them, whatever follows it ("my son of
#: 6 takes …", "mijn zoon van 6 heeft …", "she is 4 tomorrow").
_BEFORE_AGE: Final = frozenset(
    {"is", "am", "m", "of", "aged", "turned", "turns", "was", "ben", "van", "wordt", "werd"}
)


#: Time words a bare number right after counts on ("I'm starting week 6", "ik zit in week 3",
#: "tôi đang ở tuần 6", "day 10 of the course"): a point in a schedule, not an age.
_TIME_BEFORE: Final = frozenset(
    {"week", "day", "month", "weeks", "days", "dag", "maand", "tuần", "ngày", "tháng"}
)


def _age_in(t: Tokens) -> Decimal | None:
    words = t.words
    n = len(words)
    for i in itertools.compress(range(n), map(_IS_NUM, t.kinds)):
        word = words[i]
        if not word.isdigit() or not 0 < int(word) < 120:
            continue
        if i > 0 and words[i - 1] in _TIME_BEFORE:
            continue  # "starting week 6": a point in a schedule
        if i + 1 < n and (words[i + 1] in UNITS or words[i + 1] in _WEIGHT_UNITS):
            continue  # "20 mg", "6 months", "18 kilo": an amount or a weight, not an age
        if (
            i + 1 < n
            and words[i + 1].isalpha()
            and words[i + 1] not in _AFTER_AGE
            and (i == 0 or words[i - 1] not in _BEFORE_AGE)
        ):
            continue  # "about 8 cigarettes a day": a count of something
        if any(
            _is_person(words[k]) and words[k + 1] != "-"  # "Child-Pugh 6" names a score
            for k in range(max(0, i - 3), i)
        ):
            return Decimal(word)
    return None


_IS_NUM: Final = NUM.__eq__


#: Sentences of a user turn read for its context: a question states its subject early, and a
#: long pasted text is not read in full (each sentence costs ~0.1-0.2 ms).
QUESTION_SENTENCES = 4
#: Characters of a user turn those sentences are looked for in.
QUESTION_CHARS = 2000


def medical_context(
    text: str, language: str | None, lexicon: MedicalLexicon | None = None
) -> MedicalContext:
    """Drugs and population of a user turn, for the answer that follows it (see
    :class:`~schemas.verdicts.MedicalContext`), from its first :data:`QUESTION_SENTENCES`
    sentences within :data:`QUESTION_CHARS` characters."""
    lex = lexicon if lexicon is not None else load_lexicon()
    lang = detect_language(text, language)
    drugs: set[str] = set()
    populations: set[str] = set()
    age: tuple[Decimal | None, Decimal | None] | None = None
    carry = Carry()
    clearance: Decimal | None = None
    sentences = split_sentences(text[:QUESTION_CHARS], lang, QUESTION_SENTENCES)
    read = text[: sentences[-1].end if sentences else 0]
    scanned = TextTokens(read)  # for the age and the weight, and most sentences' tokens
    whole = scanned.whole
    tokens = [scanned.sentence(s.text, s.start, s.end) for s in sentences]
    asked = _risk_groups(lex)
    for t, got_carry in zip(tokens, _question_carries(tokens, lang, lex), strict=True):
        if (
            got_carry.risk
            and t.words
            and (t.words[-1] == "?" or _denies_asker(got_carry, t, lang, lex))
        ):
            # "Bố tôi bị suy gan, uống … được không?", "Can my 12-year-old take …?": the group
            # a yes/no question asks about is the asker's, though the reader takes it for the
            # risk of a safety claim (and so hands neither it nor its age on); so are the
            # groups a drugless sentence does not deny (:func:`_denies_asker`)
            groups = got_carry.risk & (asked | _ASKED_AGES) - _denied(t, lang, lex)
            populations |= groups
            if age is None and groups & _ASKED_AGES:
                age = first_age(t, lang)
        drugs |= got_carry.drugs
        got = got_carry.clearance
        if clearance is None and got is not None and got.kind == "exact" and got.low == got.high:
            clearance = got.low  # a value, not a band
        if got_carry.populations != carry.populations:
            populations |= got_carry.populations
            age = got_carry.age or age
        carry = got_carry
    if age is None:
        years = _age_in(whole)
        if years is not None:
            age = (years, years)
            populations.add("elderly" if years >= 65 else "adult" if years >= 18 else "child")
    low = read.lower()
    weight = _weight_in(whole, lang) if any(w in low for w in _WEIGHT_HINTS) else None
    if weight is not None and weight < _CHILD_WEIGHT and populations.isdisjoint(_AGED):
        populations.add("child")  # "Cháu tôi 15 kg": a body weight only a child has
    said = sorted(
        {
            q.key
            for t in tokens
            for a in amounts(t, lang)
            for q in a.parts
            if q.has_unit and len(q.key) <= AMOUNT_CHARS
        }
    )
    return MedicalContext(
        weight_kg=float(weight) if weight is not None else None,
        clearance_ml_min=float(clearance) if clearance is not None else None,
        drugs=sorted(drugs)[:16],
        populations=sorted(populations)[:16],
        age_min_years=float(age[0]) if age and age[0] is not None else None,
        age_max_years=float(age[1]) if age and age[1] is not None else None,
        amounts=said[:16],
    )


#: A body weight under this (kg) is a child's, when the question names no age group.
_CHILD_WEIGHT: Final = Decimal(30)
_AGED: Final = frozenset({"adult", "child", "elderly", "adolescent"})

#: Age groups a yes/no question can ask about as a safety claim's risk ("Can my 12-year-old
#: take …?", "Cháu tôi 10 tuổi … có dùng … được không?").
_ASKED_AGES: Final = frozenset({"child", "elderly", "adolescent"})


#: Tokens a negator may stand before the group it denies ("isn't on dialysis", "không bị suy
#: thận", "heeft geen nierproblemen").
_DENIAL_REACH: Final = 3


#: Polarities of a sentence that denies something rather than allows it (a caution does not).
_DENYING: Final = NEGATIVE - {"caution"}


def _denies_asker(carry: Carry, t: Tokens, lang: str | None, lex: MedicalLexicon) -> bool:
    """Whether a question's sentence read as a safety claim is rather about the asker: it names
    no drug, denies, and names a group right after a negator ("suy thận nặng, chưa lọc máu"),
    so the groups it does not deny are the asker's. One that allows ("my kidneys are fine"), or
    denies no group ("I don't drink alcohol": a habit), hands on none."""
    if carry.drugs or carry.polarity not in _DENYING:
        return False
    return any(True in near for near in _group_mentions(t, lang, lex).values())


def _denied(t: Tokens, lang: str | None, lex: MedicalLexicon) -> frozenset[str]:
    """The groups a question sentence names only right after a negator: "an adult who isn't on
    dialysis", "cháu không bị suy thận" say the patient is not in them."""
    return frozenset(g for g, near in _group_mentions(t, lang, lex).items() if all(near))


def _group_mentions(t: Tokens, lang: str | None, lex: MedicalLexicon) -> dict[str, list[bool]]:
    """Each population or condition a sentence names, with whether each mention of it stands
    right after a negator (within :data:`_DENIAL_REACH` tokens, no symbol between)."""
    language = lang if lang in ("en", "nl", "vi") else "en"
    words, kinds = t.words, t.kinds
    cues = list(lex.matcher(language).find(words, 0, len(words)))
    negators = [e - 1 for _, e, c in cues if c.kind == "neg"]
    said: dict[str, list[bool]] = {}
    for s, _, c in cues:
        if c.kind not in ("pop", "cond"):
            continue
        near = any(
            s - _DENIAL_REACH <= k < s and not any(kinds[j] == SYM for j in range(k + 1, s))
            for k in negators
        )
        said.setdefault(c.value, []).append(near)
    return said


@lru_cache(maxsize=4)
def _risk_groups(lex: MedicalLexicon) -> frozenset[str]:
    """The conditions that are also populations (pregnancy, kidney or liver impairment …)."""
    return frozenset(g.key for g in lex.group_file.conditions if g.population)


def _question_carries(
    sentences: list[Tokens], lang: str | None, lex: MedicalLexicon
) -> list[Carry]:
    """What each sentence of a question hands on, as :func:`read_sentence` gives it in drugs,
    population, age and clearance: by
    :func:`~services.grounding.medical.context.sentence_context` where a sentence states no
    population (most), else by the reader, given the exact carry before the sentence: the
    sentences since the last one whose carry is exact in its safety claim too are read again."""
    carries: list[Carry] = []
    carry = exact = Carry()  # ``exact``: the carry before ``sentences[since]``, exact in all
    since = 0
    for k, t in enumerate(sentences):
        quick = sentence_context(t, lang, lex, carry)
        if quick is not None:
            carry = quick
        else:
            # The exact carry before this sentence: after the last one since ``since`` that
            # can make no safety claim (its quick carry is exact), else from ``since`` on.
            start = since
            for j in range(k - 1, since - 1, -1):
                if safety_free(sentences[j], lang, lex):
                    exact, start = carries[j], j + 1
                    break
            for u in sentences[start:k]:  # their safety claims, for this sentence's reading
                exact = read_sentence(u, 0, len(u), amounts(u, lang), lang, lex, exact).carry
            carry = exact = read_sentence(t, 0, len(t), amounts(t, lang), lang, lex, exact).carry
            since = k + 1
        carries.append(carry)
    return carries


def _carry(context: MedicalContext | None, evidence: Evidence | None = None) -> Carry | None:
    """The question's context as the answer's first carry; its drugs under the names the
    passages teach ("Rovamycine" read by its stem becomes the spiramycin of "Rovamycine 3 M.IU
    (spiramycin …)")."""
    if context is None:
        return None
    drugs = frozenset(context.drugs)
    if evidence is not None and evidence.names:
        drugs = frozenset(evidence.names.get(spelling_key(d), d) for d in drugs)
    lo = Decimal(str(context.age_min_years)) if context.age_min_years is not None else None
    hi = Decimal(str(context.age_max_years)) if context.age_max_years is not None else None
    value = context.clearance_ml_min
    return Carry(
        drugs=drugs,
        populations=frozenset(context.populations),
        age=(lo, hi) if lo is not None or hi is not None else None,
        clearance=Span(Decimal(str(value)), Decimal(str(value))) if value is not None else None,
    )


def _weight(answer: str, language: str | None, context: MedicalContext | None) -> Decimal | None:
    """The body weight an amount may be worked out for: the question's (the user says whom the
    answer is for; an answer that says it back, "like your 22 kg daughter", is no dose), else
    the answer's own, not a bound of a weight band."""
    if context is not None and context.weight_kg is not None:
        return Decimal(str(context.weight_kg))
    return body_weight(answer, language)


def _prepare(
    event: ChatEvent,
    registry: FactRegistry | None,
    lexicon: MedicalLexicon | None = None,
    cache: PassageCache | None = None,
    context: MedicalContext | None = None,
) -> tuple[str | None, list[AtomicClaim], Evidence]:
    if event.role != "assistant":
        raise ValueError(f"grounding checks assistant answers, got a {event.role!r} event")
    language = detect_language(event.content, event.language)
    names = registry.entities if registry is not None else frozenset()
    lex = lexicon if lexicon is not None else load_lexicon()
    evidence = Evidence(event.retrieval or [], language, lex, cache)
    subjects = any(p.subjects for p in evidence.passages)
    if subjects or any(p.filed for p in evidence.passages):
        capitalised = _written_names(event.content) if subjects else frozenset()
        evidence.adopt(capitalised, _filed_written(event.content, language, evidence, lex))
    lex = lex.with_names(evidence.names)  # drugs the passages name in their openings
    said = frozenset(context.amounts) if context is not None else frozenset()
    carry = _carry(context, evidence)
    claims = atomic_claims(event.content, language, names, lex, carry, said)
    declined = _turned_down(claims, carry)
    if carry is not None and declined:
        # The answer turns the question's group down ("it mustn't be given to children under
        # 12" for "can my 11-year-old use it too?"): its doses are for someone else (the asker,
        # adults), so that group is no carry of the answer.
        carry = replace(carry, populations=carry.populations - declined, age=None)
        claims = atomic_claims(event.content, language, names, lex, carry, said)
    claims = _resolve_drugs(claims, evidence)
    claims = _counts_by_passage_strength(claims, evidence)
    claims = _salts_as_active(_volumes_by_passage_concentration(claims, evidence), evidence, lex)
    if carry is not None:
        claims = _question_risk(claims, carry, _risk_groups(lex))
    return language, claims, evidence


def _filed_written(
    text: str, language: str | None, evidence: Evidence, lexicon: MedicalLexicon
) -> dict[str, str]:
    """The names drugless passages are filed under (:attr:`PreparedPassage.filed`) that the
    text writes, in any case, in a sentence that states a number ("De inductie met foscarnet is
    5 mg/kg …" beside "smpc-foscarnet-nl-02"): a dose or schedule about that product. A name
    said without one ("your rabies vaccination record") binds nothing. ``{spelling key as
    written: filed name}``: a name of eight letters or more may be written one letter off the
    filing, as INNs are spelled apart ("benztropine" for "smpc-benzatropine-en-02"), unless the
    lexicon knows it as a drug of its own."""
    filed = {k for p in evidence.passages for k in p.filed}
    if not filed:
        return {}
    long = [k for k in filed if len(k) >= _NEAR_NAME]
    out: dict[str, str] = {}
    for sentence in split_sentences(text, language):
        if not any(ch.isdigit() for ch in sentence.text):
            continue
        t = tokenize(sentence.text)
        for w, k in zip(t.words, t.kinds, strict=True):
            if k != WORD or len(w) < 5:
                continue
            key = spelling_key(w)
            if key in filed:
                out[key] = key
            elif len(key) >= _NEAR_NAME and lexicon.known_drug(w) is None:
                near = [f for f in long if _one_edit(key, f)]
                if len(near) == 1:
                    out[key] = near[0]
    return out


#: Shortest name that may be written one letter off its filing (:func:`_filed_written`).
_NEAR_NAME: Final = 8


def _one_edit(a: str, b: str) -> bool:
    """Whether ``a`` and ``b`` differ by one inserted, deleted or changed letter."""
    if abs(len(a) - len(b)) > 1 or a == b:
        return False
    if len(a) == len(b):
        return sum(x != y for x, y in zip(a, b, strict=True)) == 1
    short, long_ = (a, b) if len(a) < len(b) else (b, a)
    i = next(
        (i for i, (x, y) in enumerate(zip(short, long_[:-1], strict=True)) if x != y), len(short)
    )
    return short[i:] == long_[i + 1 :]


def _written_names(text: str) -> frozenset[str]:
    """The spelling keys of the words a text writes with a capital (names it may share with a
    passage's subject)."""
    t = tokenize(text)
    return frozenset(
        spelling_key(w)
        for w, k, at in zip(t.words, t.kinds, t.starts, strict=True)
        if k == WORD and text[at : at + 1].isupper()
    )


def _question_risk(
    claims: list[AtomicClaim], carry: Carry, risk_groups: frozenset[str]
) -> list[AtomicClaim]:
    """The question's risk groups (kidney or liver impairment, pregnancy …) kept on the doses an
    answer states for adults, when the answer never speaks of that risk: "Bố bạn dùng liều
    người lớn thông thường: 1–2 g mỗi 8 giờ" for a father whose clearance is 15 ml/min gives the
    adult dose to that patient, and is judged by what the passages say for the risk (the
    general dose where they allow the drug in it). An answer that names the risk ("for your
    kidneys, …") may give the adult dose as the one it departs from."""
    risk = carry.populations & risk_groups
    if not risk or any(r.conditions & risk for c in claims for r in c.readings):
        return claims
    out: list[AtomicClaim] = []
    for claim in claims:
        readings = tuple(
            replace(
                r,
                populations=r.populations | risk,
                conditions=r.conditions | risk,
                clearance=carry.clearance if "renal" in risk else r.clearance,
            )
            if r.kind == "dose" and r.populations == _ADULTS
            else r
            for r in claim.readings
        )
        out.append(claim if readings == claim.readings else replace(claim, readings=readings))
    return out


#: The population of a dose an answer states for adults.
_ADULTS: Final = frozenset({"adult"})


def _turned_down(claims: list[AtomicClaim], carry: Carry | None) -> frozenset[str]:
    """The age groups of the question (``carry``) that a negative safety claim of the answer
    is about (that group alone: "don't take it if you have epilepsy" read with an older
    asker's group is about epilepsy), for an age band that holds the question's age (any,
    when either has none)."""
    groups = carry.populations & _ASKED_AGES if carry is not None else frozenset()
    if not groups:
        return frozenset()
    age = carry.age[0] if carry is not None and carry.age is not None else None
    return frozenset(
        g
        for claim in claims
        for r in claim.readings
        if r.kind == "contraindication"
        and r.polarity in NEGATIVE
        and r.conditions <= groups  # about the group itself, not a risk of everyone's
        and (age is None or r.age is None or _holds(r.age, age))
        for g in groups & r.conditions
    )


def _holds(band: tuple[Decimal | None, Decimal | None], age: Decimal) -> bool:
    """Whether an age band ("under 12": up to 12, not included; "aged 7": 7) holds ``age``."""
    return age_within(age, band) or age == band[0]


def _counts_by_passage_strength(claims: list[AtomicClaim], evidence: Evidence) -> list[AtomicClaim]:
    """An answer's counts of a dose form that it gives no strength for ("one or two tablets at
    bedtime") restated in mg with the strength the drug's passages state for that form, when
    they state exactly one ("Dulcolax (bisacodyl) 5 mg tablets"): the passage may speak in mg
    only ("5 to 10 mg at night")."""
    if not any(p.strengths for p in evidence.passages):
        return claims
    return _restate_readings(claims, _FORMS, lambda r: _in_passage_mg(r, evidence))


def _restate_readings(
    claims: list[AtomicClaim], units: frozenset[str], restate: Callable[[Reading], Reading]
) -> list[AtomicClaim]:
    """``claims``, each reading put through ``restate`` in a claim with a reading of a drug in
    one of ``units`` (the claim itself where nothing changed)."""
    out: list[AtomicClaim] = []
    for claim in claims:
        readings = claim.readings
        if any(r.unit in units and r.drugs for r in readings):
            readings = tuple(restate(r) for r in readings)
        out.append(claim if readings == claim.readings else replace(claim, readings=readings))
    return out


_FORMS: Final = frozenset(FORM_UNITS.values())


def _volumes_by_passage_concentration(
    claims: list[AtomicClaim], evidence: Evidence
) -> list[AtomicClaim]:
    """An answer's volume of a drug ("100 mg (1 ml) tweemaal daags") restated as what it holds
    with the concentration the drug's passages state, when they state exactly one per unit
    ("Epidrex drank bevat 100 mg cannabidiol per ml" beside a dose in mg/kg in another
    passage): the passages give the dose in mg, the answer measures it out. A volume of a drug
    whose concentration no passage states stays a volume (no passage speaks about it)."""
    if not any(p.per_ml for p in evidence.passages):
        return claims
    return _restate_readings(claims, _VOLUMES, lambda r: _in_passage_amount(r, evidence))


_VOLUMES: Final = frozenset({"ml", "ml/kg"})


def _in_passage_amount(r: Reading, evidence: Evidence) -> Reading:
    if r.unit not in _VOLUMES or not r.drugs or r.amount is None:
        return r
    found: dict[str, set[Decimal]] = {}
    for i, p in enumerate(evidence.passages):
        if evidence.passage_drugs(i) & r.drugs:
            for unit, per in p.per_ml:
                found.setdefault(unit, set()).add(per)
    per_ml = {unit: values.pop() for unit, values in found.items() if len(values) == 1}
    if len(per_ml) != 1:
        return r
    ((unit, per),) = per_ml.items()
    amount = Span(r.amount.low * per, r.amount.high * per, r.amount.kind)
    return replace(r, amount=amount, unit=unit if r.unit == "ml" else f"{unit}/kg")


def _in_passage_mg(r: Reading, evidence: Evidence) -> Reading:
    if r.unit not in _FORMS or not r.drugs or r.amount is None:
        return r
    values = {
        mg
        for i, p in enumerate(evidence.passages)
        if evidence.passage_drugs(i) & r.drugs
        for form, mg in p.strengths
        if form == r.unit
    }
    if len(values) != 1:
        return r
    return next(iter(counts_in_mg((r,), {r.unit: values.pop()})), r)


def _salts_as_active(
    claims: list[AtomicClaim], evidence: Evidence, lex: MedicalLexicon
) -> list[AtomicClaim]:
    """An answer's amount of a salt, said with its salt word ("one 1.1 mg sodium fluoride
    tablet", "natri fluorid 1,1 mg"), restated as the active part a passage of the drug gives
    for that strength ("Sodium fluoride 1.1 mg tablets; each tablet provides 0.5 mg of
    fluoride"): the passages' doses are of the active part. Whole multiples of the salt's
    strength only (one or two tablets); any other amount stays as written."""
    if not any(p.salts for p in evidence.passages):
        return claims
    pairs = [
        (evidence.passage_drugs(i), salt, active)
        for i, p in enumerate(evidence.passages)
        for _, salt, active in p.salts
    ]
    spec = lex.drug_file.opening
    if spec is None:
        return claims
    out: list[AtomicClaim] = []
    for claim in claims:
        readings = claim.readings
        if any(r.unit == "mg" and r.drugs for r in readings) and _names_salt(
            claim.text, spec.salt_words
        ):
            readings = tuple(_as_active(r, pairs) for r in readings)
        out.append(claim if readings == claim.readings else replace(claim, readings=readings))
    return out


#: The most units of a salt's strength an answer's amount is read as ("two 1.1 mg tablets").
_MOST_UNITS: Final = 12


def _as_active(r: Reading, pairs: list[tuple[frozenset[str], Decimal, Decimal]]) -> Reading:
    if r.unit != "mg" or r.amount is None or r.amount.kind != "exact" or not r.drugs:
        return r
    for drugs, salt, active in pairs:
        low, high = r.amount.low / salt, r.amount.high / salt
        whole = low == low.to_integral_value() and high == high.to_integral_value()
        if drugs & r.drugs and whole and 1 <= low <= high <= _MOST_UNITS:
            return replace(r, amount=Span((low * active).normalize(), (high * active).normalize()))
    return r


def _names_salt(text: str, salts: frozenset[str]) -> bool:
    """Whether a sentence names a salt: a salt word ("sodium", "natri", "hydrochloride"), also
    glued to a name ("natriumfluoride")."""
    return any(
        w in salts or any(len(w) > len(s) + 3 and (w.startswith(s) or w.endswith(s)) for s in salts)
        for w in tokenize(text).words
    )


def _stated_drugs(claim: AtomicClaim) -> frozenset[str]:
    """The drugs a dose claim's readings name themselves (not from context or a passage)."""
    if claim.kind != "dose":
        return frozenset()
    return frozenset().union(*(r.drugs for r in claim.readings if r.drug_source == "stated"))


def _deterministic(
    claim: AtomicClaim,
    evidence: Evidence,
    config: GroundingConfig,
    doc: str | None = None,
    weight: Decimal | None = None,
) -> Verdict:
    """The deterministic test: structured comparison for claims with medical readings, else
    numbers and content-word support."""
    if claim.readings:
        verdict = ground_medical(
            claim.readings,
            claim.units,
            claim.quantities,
            claim.leftover,
            evidence,
            bare_numbers=config.bare_numbers,
            doc=doc,
            weight=weight,
        )
        if not all(decides_nothing(c) for c in verdict.medical) or any(
            c.reading.step for c in verdict.medical
        ):
            return verdict
        # An open positive claim that no passage speaks about: grounded by its words.
    return ground(
        claim.units,
        claim.quantities,
        evidence,
        threshold=config.support_threshold,
        bare_numbers=config.bare_numbers,
        doc=doc,
        drugs=claim.drugs or (_stated_drugs(claim) if claim.readings else frozenset()),
        weight=weight,
        contrasted=claim.contrasted,
        rated=claim.rated,
        placing=claim.placing,
    )


def _settled(claim: AtomicClaim, verdict: Verdict, held: Callable[[], bool]) -> Verdict:
    """``verdict``, or grounded for a sentence of general advice whose only fault is words the
    passages do not hold, in an answer anchored in them (:mod:`services.grounding.general`).
    The general test and the anchor (``held``) are worked out only here, for a sentence that
    failed the word test."""
    if verdict.grounded or verdict.numbers_missing or claim.general_test is None:
        return verdict
    if not all(decides_nothing(c) for c in verdict.medical):
        return verdict  # an open reading a passage speaks about decides
    if verdict.best is None:  # nothing retrieved: nothing is grounded
        return verdict
    if not (claim.general_test() and held()):
        return verdict
    return replace(verdict, grounded=True)


def claims_for_judge(
    event: ChatEvent,
    config: GroundingConfig,
    registry: FactRegistry | None = None,
    *,
    lexicon: MedicalLexicon | None = None,
    cache: PassageCache | None = None,
    context: MedicalContext | None = None,
) -> list[tuple[str, str]]:
    """``(claim_text, premise)`` pairs to send to the judge; the premise is the best passage.

    Dose and contraindication claims come first; at most ``judge_max_claims``, one per distinct
    claim text, only of ``judge_kinds``; none when nothing was retrieved. Pass the judge's labels
    back to :func:`check` as ``judge_results`` keyed by claim text. Give the same ``registry`` as
    to :func:`check` so that claim kinds agree (drug names come from it).
    """
    _, claims, evidence = _prepare(event, registry, lexicon, cache, context)
    if not evidence.passages or config.judge_max_claims == 0:
        return []
    ranked = sorted(
        (c for c in claims if c.kind in config.judge_kinds), key=lambda c: _PRIORITY[c.kind]
    )
    pairs: dict[str, str] = {}
    for claim in ranked:
        if claim.text in pairs:
            continue
        verdict = _deterministic(claim, evidence, config)
        best = evidence.passages[verdict.best if verdict.best is not None else 0]
        pairs[claim.text] = best.text[: config.judge_max_premise_chars]
        if len(pairs) >= config.judge_max_claims:
            break
    return list(pairs.items())


def _claim_check(
    claim: AtomicClaim,
    verdict: Verdict,
    evidence: Evidence,
    cited: list[str],
    label: JudgeLabel | None,
) -> ClaimCheck:
    method: Literal["deterministic", "judge"] = "deterministic"
    grounded = verdict.grounded
    kind = claim.kind
    if kind == "other" and verdict.medical:
        # an open claim that a passage speaks about: a safety claim, or a course length
        dosed = any(c.reading.kind == "dose" for c in verdict.medical)
        kind = "dose" if dosed else "contraindication"
    if label is not None and label != "unverified":
        method = "judge"
        # Missing numbers and a structured contradiction, unknown or conflict are never
        # overruled: the judge can only take support away from a structured reading.
        structured_ok = all(c.status == "supported" for c in verdict.medical)
        grounded = label == "entailment" and not verdict.blocking and structured_ok
    return ClaimCheck(
        text=claim.text,
        start=claim.start,
        end=claim.end,
        kind=kind,
        grounded=grounded,
        method=method,
        support=max(0.0, min(1.0, verdict.support)),
        best_doc=evidence.passages[verdict.best].doc_id if verdict.best is not None else None,
        numbers_missing=list(verdict.numbers_missing),
        cited_docs=cited,
        judge=label,
        medical=[_medical_check(c) for c in verdict.medical],
    )


def _range(span: Span | None) -> NumberRange | None:
    if span is None:
        return None
    return NumberRange(low=float(span.low), high=float(span.high), kind=span.kind)


def _age(age: tuple[Decimal | None, Decimal | None] | None) -> NumberRange | None:
    if age is None:
        return None
    lo, hi = age
    if lo is None and hi is not None:
        return NumberRange(low=0.0, high=float(hi), kind="max")
    if hi is None and lo is not None:
        return NumberRange(low=float(lo), high=float(lo), kind="min")
    return NumberRange(low=float(lo or 0), high=float(hi or 0))


def medical_reading(r: Reading) -> MedicalReading:
    """The report's form of a reading (the contract the review page renders)."""
    return MedicalReading(
        kind=r.kind,
        drugs=sorted(r.drugs),
        drug_source=r.drug_source,
        populations=sorted(r.populations),
        age_years=_age(r.age),
        amount=_range(r.amount),
        unit=r.unit,
        basis=r.basis,
        qualifier=r.qualifier,
        frequency_per_day=_range(r.frequency),
        polarity=r.polarity,
        conditions=sorted(r.conditions),
        summary=r.describe(with_drug=False),
    )


def _passage_claim(p: PassageReading) -> PassageClaim:
    return PassageClaim(doc_id=p.doc_id, sentence=p.sentence, reading=medical_reading(p.reading))


def _medical_check(c: Comparison, keep: int = 3) -> MedicalCheck:
    return MedicalCheck(
        status=c.status,
        reading=medical_reading(c.reading),
        supporting=[_passage_claim(p) for p in c.supporting[:keep]],
        contradicting=[_passage_claim(p) for p in c.contradicting[:keep]],
        explanation=c.explanation,
    )


def check(
    event: ChatEvent,
    registry: FactRegistry,
    *,
    extractors: ExtractorSet,
    config: GroundingConfig,
    inclusion_probability: float,
    stratum: Literal["always", "sampled"],
    judge_results: Mapping[str, JudgeLabel] | None = None,
    lexicon: MedicalLexicon | None = None,
    cache: PassageCache | None = None,
    context: MedicalContext | None = None,
) -> GroundingReport:
    """Check one assistant answer (see the module docstring). Deterministic; no I/O.

    ``lexicon`` defaults to the bundled ``rules/grounding``; ``cache`` keeps prepared passages
    between calls (:class:`~services.grounding.prepared.PassageCache`); ``context`` is what the
    user's preceding turn said about drug and population (:func:`medical_context`), used where
    the answer does not say it. Raises ``ValueError``
    for a non-assistant event (and, via the report model, for an inclusion probability outside
    (0, 1]).
    """
    language, claims, evidence = _prepare(event, registry, lexicon, cache, context)
    weight = _weight(event.content, language, context)
    verdicts = [_deterministic(claim, evidence, config, weight=weight) for claim in claims]
    held = anchored_lazily(
        [(v.grounded, c.general_test) for c, v in zip(claims, verdicts, strict=True)],
        any(c.declining for c in claims),
    )
    citations = check_citations(
        event.content,
        event.citations or [],
        claims,
        evidence,
        lambda claim, doc: _settled(
            claim, _deterministic(claim, evidence, config, doc, weight), held
        ),
        _named,
        _unclaimed_support(event.content, language, claims, evidence, config.support_threshold),
    )
    judged = judge_results or {}
    checks = _dosing_goes_on(
        [
            _claim_check(
                claim, _settled(claim, verdict, held), evidence, cited, judged.get(claim.text)
            )
            for claim, verdict, cited in zip(claims, verdicts, citations.cited, strict=True)
        ]
    )
    score = faithfulness([(c.text, c.grounded) for c in checks])
    return GroundingReport(
        event_id=event.event_id,
        conversation_id=event.conversation_id,
        turn_index=event.turn_index,
        timestamp=event.timestamp,
        tenant=event.tenant,
        language=event.language,
        stratum=stratum,
        inclusion_probability=inclusion_probability,
        faithfulness=score.score,
        claims=checks,
        ungrounded=score.ungrounded,
        fabricated_citations=citations.fabricated,
        unsupported_citations=citations.unsupported,
        fact_checks=fact_checks(event, registry, extractors, language),
        judge_used=any(c.method == "judge" for c in checks),
    )


def _dosing_goes_on(checks: list[ClaimCheck]) -> list[ClaimCheck]:
    """``checks``, where a sentence of no kind of its own that holds a number no passage
    holds and comes after a dose claim of the same answer is a dose claim: the dosing goes on
    in it ("Just don't go above 16 lozenges in 24 hours.", "The standard course lasts 7 days."
    after the dose; a limit, a course length, an interval the reader does not take for a dose
    without a drug or a dose cue of its own). Measured on the case set: four wrong numbers
    that were flagged became critical as they are labelled, no right answer changed (a right
    answer's missing number flags it either way)."""
    out: list[ClaimCheck] = []
    after_dose = False
    for c in checks:
        if after_dose and c.kind == "other" and not c.grounded and c.numbers_missing:
            c = c.model_copy(update={"kind": "dose"})
        after_dose = after_dose or c.kind == "dose"
        out.append(c)
    return out


def _unclaimed_support(
    content: str,
    language: str | None,
    claims: Sequence[AtomicClaim],
    evidence: Evidence,
    threshold: float,
) -> Callable[[str], bool]:
    """Whether a sentence of the answer that is no claim (a referral, a caution to tell the
    doctor) has the word support of a document's passages: what a document the answer's
    ``citations`` list names may back instead of a claim (round 27). Worked out on first use."""

    unclaimed: list[frozenset[str]] = []  # the units of each such sentence, made at first use

    def said(doc_id: str) -> bool:
        if not unclaimed:
            claimed = {c.text for c in claims}
            units = (
                claim_units(s.text, language)
                for s in split_sentences(content, language)
                if s.text not in claimed
            )
            unclaimed.extend(u for u in units if u)
            unclaimed.append(frozenset())  # made: an answer without such sentences too
        return any(
            len(units & evidence.passages[i].units) / len(units) >= threshold
            for units in unclaimed
            if units
            for i in evidence.by_doc.get(doc_id, [])
        )

    return said


def _named(claim: AtomicClaim) -> frozenset[str]:
    """The drugs a claim's sentence names itself (for the citation check)."""
    return claim.named or frozenset().union(*(r.drugs for r in claim.readings))


def critical_claims(report: GroundingReport) -> list[ClaimCheck]:
    """Dose and contraindication claims that are not grounded: each is a critical finding."""
    return [c for c in report.claims if c.kind != "other" and not c.grounded]
