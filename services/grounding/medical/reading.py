"""Read dose and contraindication statements into structured claims (:class:`Reading`).

The same reader runs over answer sentences and passage sentences. A sentence's tokens
(:mod:`~services.grounding.tokens`) and amounts (:mod:`~services.grounding.quantities`) are
combined with the lexicons (:mod:`~services.grounding.medical.lexicon`):

- **drug**: the INN named nearest before an amount (else after it) in the sentence; else the
  drug of an earlier sentence of the same text (:class:`Carry`);
- **population**: age groups and "population" conditions (pregnancy, kidney impairment) of the
  sentence, with an age range read by a small function per language; else carried;
- **amount**: a dose unit (mass, volume, IU, tablets, drops, per kg) — a range when two amounts
  are joined by a connector ("500 mg to 1 g", "250–500 mg", "500 tot 1000 mg");
- **basis**: per dose or per day, from the denominator ("4 g/day") or a basis phrase after or
  before the amount ("in 24 hours", "per keer", "cả ngày"); an amount with a frequency or an
  interval is per dose;
- **frequency**: doses per day, from "3 times a day", "tweemaal daags", "ngày 2 lần", or from
  an interval ("every 8 hours" = 3 a day; "at least 4 hours between doses" = at most 6 a day);
- **qualifier**: max / min / start / usual, the nearest qualifier phrase before the item;
- **polarity** per clause: polarity phrases, flipped by a negator in scope (per language);
  a negated use verb is *avoid*; a modal with a use verb is *allowed*;
- **conditions**: condition and non-adult population keys, and the clause's content units.

A sentence gives *dose* readings (one per amount, or one for a frequency or interval alone) when
it has a dose word, a drug or a dose cue, and *contraindication* readings for clauses with a
negative polarity, or a positive one about a risk condition or a non-adult population ("X is
safe in pregnancy" is a safety claim). Numbers that a reading used are reported, so that the
caller can still check the others (a duration, a strength) against the passages.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from decimal import Decimal
from typing import Final, Literal

from services.grounding.lexicon import DOSE_CUES
from services.grounding.medical.lexicon import (
    Basis,
    Cue,
    FirstPeriod,
    LanguageCues,
    MedicalLexicon,
    Polarity,
    Qualifier,
    Titration,
)
from services.grounding.quantities import NUMBER_WORDS, UNITS, Amount, format_decimal, parse_number
from services.grounding.text import has_cue, units_of
from services.grounding.tokens import NUM, SYM, WORD, Tokens, phrase_spans, tokenize

__all__ = [
    "ABOUT_WORDS",
    "NEGATIVE",
    "POSITIVE",
    "Carry",
    "Reading",
    "SentenceReading",
    "Span",
    "first_age",
    "flip",
    "read_sentence",
]

NEGATIVE: Final[frozenset[str]] = frozenset(
    {"contraindicated", "avoid", "not_recommended", "caution"}
)
POSITIVE: Final[frozenset[str]] = frozenset({"allowed", "recommended"})
_FLIP: Final[dict[str, Polarity]] = {
    "contraindicated": "allowed",
    "avoid": "allowed",
    "not_recommended": "recommended",
    "caution": "allowed",
    "allowed": "avoid",
    "recommended": "not_recommended",
}
_STRENGTH: Final = {"contraindicated": 4, "avoid": 3, "not_recommended": 2, "caution": 1}
#: Units whose amounts are doses (``kg`` is body weight; ``mg/ml`` a strength).
_DOSE_UNITS: Final = frozenset(
    {"mg", "ml", "IU", "tablet", "drop", "puff", "sachet", "mg/kg", "ml/kg", "IU/kg"}
)
_CLAUSE_BREAKS: Final = frozenset({",", ";", ":", "(", ")", "—", "–"})
#: Words joining "twee-" to the next count word ("twee- tot driemaal", "twee- of driemaal").
_FREQ_JOINS: Final = frozenset({"tot", "of", "à", "en"})
_CONTRAST: Final = frozenset({"but", "however", "maar", "echter", "nhưng", "tuy"})
_DAY: Final = Decimal(24)
#: A frequency of one dose a day (frequencies are doses per day).
_ONCE_A_DAY: Final = Decimal(1)
_ONE_HOUR: Final = Decimal(1)
_WEEK: Final = Decimal(168)
_SHORTEST_INTERVAL: Final = Decimal(2)
Kind = Literal["exact", "max", "min"]


@dataclass(frozen=True, slots=True)
class Span:
    """A numeric range: ``exact`` (low..high), ``max`` (up to high) or ``min`` (from low)."""

    low: Decimal
    high: Decimal
    kind: Kind = "exact"

    def text(self, unit: str = "") -> str:
        lo, hi = format_decimal(self.low), format_decimal(self.high)
        body = lo if lo == hi else f"{lo}–{hi}"
        if self.kind == "max":
            body = hi
        elif self.kind == "min":
            body = lo
        body = f"{body} {unit}".strip()
        return {"exact": body, "max": f"max {body}", "min": f"min {body}"}[self.kind]


@dataclass(frozen=True, slots=True)
class Reading:
    """One structured claim of a sentence."""

    kind: Literal["dose", "contraindication"]
    drugs: frozenset[str]
    drug_source: Literal["stated", "context", "passage"] | None
    populations: frozenset[str]
    age: tuple[Decimal | None, Decimal | None] | None
    amount: Span | None
    unit: str | None
    basis: Basis | None
    qualifier: Qualifier | None
    frequency: Span | None
    polarity: Polarity
    conditions: frozenset[str]
    condition_units: frozenset[str]
    start: int
    end: int
    #: A positive claim about something no lexicon names ("grapefruit juice is fine with
    #: simvastatin"): checked only when a passage reading about the drug speaks about it, else
    #: the sentence is grounded by its words like any other.
    open: bool = False
    #: The kidney clearance (ml/min) the reading is for: a passage's band ("creatinine
    #: clearance 30–60 ml/min: …", "below 30 ml/min: …") or the answer's or question's value.
    clearance: Span | None = None
    #: How long the course lasts, in hours ("for 7 days" = 168; "no longer than 5 days" = max
    #: 120), when the sentence states one beside the dose.
    duration: Span | None = None
    #: The body weight (kg) a dose reading is for: a passage's band ("26 kg to 40 kg: 15 mg",
    #: "more than 65 kg: 30 mg", "nhóm 15 đến dưới 25 kg") or a weight the sentence states
    #: (round 23).
    weight: Span | None = None
    #: A step of raising the dose (round 25): ``amount`` is the size of a step ("by 100 mg",
    #: "2 mg erbij"), ``frequency`` how often a step is taken ("every 1 to 2 days", "niet
    #: sneller dan eens per week"); compared only with the passages' steps.
    step: bool = False

    def describe(self, with_drug: bool = True) -> str:
        """A clinician-readable line: ``paracetamol: max 4000 mg per 24 h``,
        ``3 times a day``, ``lisinopril: contraindicated: pregnancy``."""
        parts: list[str] = []
        if self.step:
            parts.append("raised in steps")
            if self.amount is not None:
                parts.append(f"of {self.amount.text(self.unit or '')}")
            if self.frequency is not None:
                parts.append(_frequency_text(self.frequency).replace("times a day", "steps a day"))
        elif self.kind == "dose":
            if self.amount is not None:
                amount = self.amount.text(self.unit or "")
                if (
                    self.qualifier in ("max", "min") and self.amount.kind == "exact"
                ) or self.qualifier in ("start", "usual"):
                    amount = f"{self.qualifier} {amount}"
                parts.append(amount)
                if self.basis == "day":
                    parts.append("per 24 h")
                elif self.basis == "week":
                    parts.append("per week")
                elif self.basis == "dose":
                    parts.append("per dose")
            if self.frequency is not None:
                parts.append(_frequency_text(self.frequency))
        else:
            what = self.polarity.replace("_", " ")
            about = sorted(self.conditions | (self.populations - {"adult"}))
            parts.append(f"{what}" + (f": {', '.join(about)}" if about else ""))
        who = sorted(self.populations - self.conditions)
        if who:
            age = ""
            if self.age is not None:
                lo, hi = self.age
                age = f" {_age_band(lo, hi)}"
            parts.append(f"({', '.join(who)}{age})")
        if self.clearance is not None:
            c = self.clearance
            band = c.text("ml/min") if c.kind != "min" else f"min {format_decimal(c.low)} ml/min"
            parts.append(f"(clearance {band})")
        if self.weight is not None:
            w = self.weight
            band = w.text("kg") if w.kind != "min" else f"more than {format_decimal(w.low)} kg"
            parts.append(f"(body weight {band})")
        text = " ".join(parts)
        if not with_drug:
            return text
        drug = ", ".join(sorted(self.drugs)) or "drug not named"
        return f"{drug}: {text}"


def _age_text(years: Decimal, unit: bool = True) -> str:
    """An age as a reader writes it: ``12 y``, ``7 months``, ``6 weeks`` (``unit=False``:
    years without their unit, ``12``)."""
    if years >= 1 or years == 0:
        text = format_decimal(years.quantize(Decimal("0.1")))
        return f"{text} y" if unit else text
    months = years * 12
    if months >= 2:
        return f"{format_decimal(months.quantize(Decimal('0.1')))} months"
    return f"{format_decimal((years * 365 / 7).quantize(Decimal('1')))} weeks"


def _age_band(lo: Decimal | None, hi: Decimal | None) -> str:
    """``12 y`` (one age), ``12–… y``, ``2–11 y``, ``6 months–11 months``, ``6 weeks``."""
    if lo is not None and lo == hi:
        return _age_text(lo)
    in_years = (lo is None or lo >= 1 or lo == 0) and (hi is None or hi >= 1)
    if in_years:
        low = _age_text(lo, unit=False) if lo is not None else "0"
        high = _age_text(hi, unit=False) if hi is not None else "…"
        return f"{low}–{high} y"
    low = _age_text(lo) if lo is not None else "0"
    return f"{low}–" + (_age_text(hi) if hi is not None else "…")


def _frequency_text(span: Span) -> str:
    """``3 times a day``, ``at most 6 times a day``, ``once a week``, ``once every 2 days``."""
    if span.kind == "exact" and span.low == span.high and 0 < span.low < 1:
        days = (1 / span.low).quantize(Decimal("0.1"))
        return "once a week" if days == 7 else f"once every {format_decimal(days)} days"

    def per_day(value: Decimal) -> str:
        if value >= 1 or value <= 0:
            return format_decimal(value.quantize(Decimal("0.01")))
        return f"1/{format_decimal((1 / value).quantize(Decimal('0.1')))}"

    lo, hi = per_day(span.low), per_day(span.high)
    body = lo if lo == hi else f"{lo}–{hi}"
    if span.kind == "max":
        body = f"at most {hi}"
    elif span.kind == "min":
        body = f"at least {lo}"
    return f"{body} times a day"


@dataclass(frozen=True, slots=True)
class Carry:
    """What a sentence hands to the next one of the same text."""

    drugs: frozenset[str] = frozenset()
    populations: frozenset[str] = frozenset()
    age: tuple[Decimal | None, Decimal | None] | None = None
    #: The risk conditions of a safety claim, for a next sentence that goes on about it
    #: without naming drug, group or condition ("… niet te verlagen; u mag gewoon de normale
    #: dosis blijven nemen").
    risk: frozenset[str] = frozenset()
    #: The polarity of that safety claim, for "the same goes for …", "hetzelfde geldt voor …".
    polarity: Polarity | None = None
    #: A kidney clearance stated before (a question's "klaring 25").
    clearance: Span | None = None
    #: The last dose amount without a basis and its unit, for a next sentence that takes it
    #: up ("… comes to 1,500 mg. Take that amount three times a day").
    amount: tuple[Span, str] | None = None


@dataclass(frozen=True, slots=True)
class SentenceReading:
    readings: tuple[Reading, ...]
    #: Token indices of numbers that the readings used (amounts, frequencies, ages, "24 hours").
    used: frozenset[int]
    carry: Carry
    #: The drugs a concentration of the sentence is of ("Curatoderm bevat 4 microgram tacalcitol
    #: per gram"): what a product holds, a claim about the drug that is no dose reading.
    held: frozenset[str] = frozenset()
    #: Every dose amount of the sentence is set aside ("Zij neemt dus niet de gewone 2
    #: tabletten per keer", "not the usual 20 mg"): another dose the answer contrasts with.
    contrasted: bool = False
    #: The drugs the sentence names itself (none for a sentence without cue, drug or amount).
    named: frozenset[str] = frozenset()
    #: The populations and conditions its phrases name (Dutch compounds too), read into a claim
    #: or not ("Suy thận …: giảm liều còn một nửa" names kidney impairment and states no amount).
    groups: frozenset[str] = frozenset()


# -- ages: one small table and function per language -----------------------------------------


@dataclass(frozen=True, slots=True)
class _AgeWords:
    years: frozenset[str]
    months: frozenset[str]
    above_before: frozenset[str]
    below_before: frozenset[str]
    above_after: tuple[tuple[str, ...], ...]
    below_after: tuple[tuple[str, ...], ...]
    range_words: frozenset[str] = field(default_factory=frozenset)
    #: Nouns for people: with a comparator, a bare number after them is an age ("people over
    #: 50", "patiënten ouder dan 75", "bệnh nhân trên 65").
    people: frozenset[str] = field(default_factory=frozenset)
    #: A child's noun and the word after it: a bare number then is that child's age ("my
    #: daughter of 4", "uw dochter van 4").
    kin: frozenset[str] = field(default_factory=frozenset)
    of: str = ""
    #: Weeks and days, for a baby's age ("my 6-week-old", "baby van 10 dagen", "6 tuần tuổi").
    weeks: frozenset[str] = field(default_factory=frozenset)
    days: frozenset[str] = field(default_factory=frozenset)

    def scale(self, word: str) -> Decimal | None:
        """Years per unit of the age word ``word``, or ``None`` for no age word."""
        if word in self.years:
            return Decimal(1)
        if word in self.months:
            return Decimal(1) / Decimal(12)
        if word in self.weeks:
            return Decimal(7) / Decimal(365)
        if word in self.days:
            return Decimal(1) / Decimal(365)
        return None

    def kin_age(self, words: list[str], i: int, lo: int) -> bool:
        """Whether the number at ``i`` follows a child's noun and its "of" ("zoon van 6")."""
        return i - 2 >= lo and words[i - 1] == self.of and words[i - 2] in self.kin


_AGE_EN = _AgeWords(
    years=frozenset({"year", "years", "yr", "yrs", "y"}),
    months=frozenset({"month", "months"}),
    weeks=frozenset({"week", "weeks", "wk", "wks"}),
    days=frozenset({"day", "days"}),
    above_before=frozenset({"over", "above", "from", "older", "least", "aged", "age"}),
    below_before=frozenset({"under", "below", "younger", "less", "up"}),
    above_after=(
        ("and", "over"),
        ("and", "older"),
        ("and", "above"),
        ("or", "older"),
        ("or", "over"),
        ("+",),
        ("plus",),
    ),
    below_after=(("and", "under"), ("and", "younger"), ("or", "younger")),
    range_words=frozenset({"to", "-", "–", "and"}),
    people=frozenset(
        {
            "people",
            "patients",
            "persons",
            "those",
            "anyone",
            "adults",
            "men",
            "women",
            "someone",
        }
    ),
    kin=frozenset(
        {"son", "daughter", "child", "boy", "girl", "grandson", "granddaughter", "baby", "infant"}
    ),
    of="of",
)
_AGE_NL = _AgeWords(
    years=frozenset({"jaar", "jaren", "jr", "jarig", "jarige"}),
    months=frozenset({"maand", "maanden"}),
    weeks=frozenset({"week", "weken"}),
    days=frozenset({"dag", "dagen"}),
    above_before=frozenset({"vanaf", "ouder", "boven", "van", "minstens"}),
    below_before=frozenset({"jonger", "onder", "tot", "beneden", "onder de"}),
    above_after=(("en", "ouder"), ("of", "ouder"), ("en", "older"), ("+",)),
    below_after=(("en", "jonger"), ("of", "jonger")),
    range_words=frozenset({"tot", "-", "–", "en"}),
    people=frozenset(
        {
            "mensen",
            "patiënten",
            "personen",
            "volwassenen",
            "iemand",
            "mannen",
            "vrouwen",
        }
    ),
    kin=frozenset(
        {
            "zoon",
            "dochter",
            "kind",
            "kindje",
            "jongen",
            "meisje",
            "kleinzoon",
            "kleindochter",
            "baby",
            "zuigeling",
            # diminutives, as parents write them ("ons zoontje van 14 maanden")
            "zoontje",
            "dochtertje",
            "jongetje",
            "kleinzoontje",
            "kleindochtertje",
        }
    ),
    of="van",
)
_AGE_VI = _AgeWords(
    years=frozenset({"tuổi"}),
    months=frozenset({"tháng"}),
    weeks=frozenset({"tuần"}),
    days=frozenset({"ngày"}),
    above_before=frozenset({"trên", "từ", "hơn", "ngoài"}),
    below_before=frozenset({"dưới", "chưa", "đến"}),
    above_after=(("trở", "lên"), ("tuổi", "trở", "lên"), ("+",)),
    below_after=(("trở", "xuống"), ("tuổi", "trở", "xuống")),
    range_words=frozenset({"đến", "-", "–", "tới"}),
    people=frozenset({"người", "nhân", "ai"}),  # "bệnh nhân", "người bệnh"
)
_AGE_WORDS: Final = {"en": _AGE_EN, "nl": _AGE_NL, "vi": _AGE_VI}


def _ages_en(
    tokens: Tokens, lo: int, hi: int, people: bool = True
) -> list[tuple[int, int, Decimal | None, Decimal | None]]:
    return _ages(tokens, lo, hi, _AGE_EN, people)


def _ages_nl(
    tokens: Tokens, lo: int, hi: int, people: bool = True
) -> list[tuple[int, int, Decimal | None, Decimal | None]]:
    return _ages(tokens, lo, hi, _AGE_NL, people)


def _ages_vi(
    tokens: Tokens, lo: int, hi: int, people: bool = True
) -> list[tuple[int, int, Decimal | None, Decimal | None]]:
    """Vietnamese ages: "trên 12 tuổi", "dưới 6 tháng tuổi", "từ 6 đến 12 tuổi",
    "12 tuổi trở lên"."""
    return _ages(tokens, lo, hi, _AGE_VI, people)


_AGE_READERS: Final = {"en": _ages_en, "nl": _ages_nl, "vi": _ages_vi}


def first_age(tokens: Tokens, language: str | None) -> tuple[Decimal | None, Decimal | None] | None:
    """The first age ``tokens`` state, ``(min years, max years)``, read as in a sentence that
    names a group of people ("my 12-year-old", "cháu 10 tuổi", "dochter van 7"); else ``None``.

    >>> first_age(tokenize("Can my 12-year-old take it?"), "en")
    (Decimal('12'), Decimal('12'))
    """
    lang = language if language in _AGE_READERS else "en"
    ages = _AGE_READERS[lang](tokens, 0, len(tokens), True)
    return (ages[0][2], ages[0][3]) if ages else None


def _age_group(low: Decimal | None, high: Decimal | None) -> str:
    """The group an age range names when no group word does: 65 and over is elderly."""
    if low is not None and low >= 65:
        return "elderly"
    if low is not None and low >= 18:
        return "adult"
    if high is not None and high >= 65:
        return "elderly"
    return "child" if high is None or high < 18 or low is None or low < 18 else "adult"


def _number(word: str) -> Decimal | None:
    try:
        return Decimal(word.replace(",", "."))
    except ArithmeticError:
        return None


_AGE_MARKS: Final = frozenset({"aged", "age", "van", "ages", "leeftijd"})
#: Marks that make a bare number an age by themselves ("aged 2 to 6"; not Dutch "van": "een
#: klaring van 25").
_AGE_NOUNS: Final = frozenset({"aged", "age", "ages", "leeftijd"})


#: Words after a bare number that make it no age: a weight ("kind van 12 kilo") or a ratio.
_NOT_AGE_AFTER: Final = frozenset(
    [
        "/",
        "%",
        "kg",
        "kilo",
        "kilos",
        "kilogram",
        "kilograms",
        "kilogam",
        "cân",
        "ký",
        "kí",
        "pond",
        "pound",
        "pounds",
        "lb",
        "lbs",
    ]
)


#: "Together with" words: after a polarity phrase they name what the statement is about
#: ("do not take it with milk", "niet samen met thee", "không uống cùng trà").
_TOGETHER: Final = frozenset(
    {"with", "together", "alongside", "samen", "met", "naast", "cùng", "với"}
)


def _with_object(words: list[str], lo: int, hi: int, cues: list[tuple[int, int, Cue]]) -> bool:
    """Whether a polarity phrase of the sentence is followed by a "together with" word and the
    thing named: the statement is about taking it with that, not about the risk of the
    sentence before ("Sắt dùng được khi cho con bú. Không uống cùng trà hoặc sữa.")."""
    first = min((e for s, e, c in cues if c.kind == "pol" and lo <= s < hi), default=None)
    if first is None:
        return False
    return any(words[k] in _TOGETHER for k in range(first, min(hi - 1, first + 3)))


_SPLIT_PHRASES: dict[int, tuple[frozenset[tuple[str, ...]], frozenset[tuple[str, ...]]]] = {}


def _split_phrases(
    cues: LanguageCues,
) -> tuple[frozenset[tuple[str, ...]], frozenset[tuple[str, ...]]]:
    """The split phrases of a language as word tuples, made once per cue set."""
    got = _SPLIT_PHRASES.get(id(cues))
    if got is None:
        got = (
            frozenset(tuple(p.split()) for p in cues.split_before),
            frozenset(tuple(p.split()) for p in cues.split_after),
        )
        _SPLIT_PHRASES[id(cues)] = got
    return got


#: Between the two counts of a range of doses a day ("three or four", "2 of 3", "3–4").
_COUNT_RANGE: Final = frozenset({"or", "to", "-", "–", "of", "tot", "à", "hoặc", "đến", "tới"})


def _count_range(words: list[str], i: int, hi: int, low: Decimal, lang: str) -> int:
    """The token after a count that opens a split phrase: after the range's second count when
    a larger one follows a range word ("divided into three or four equal doses", "verdeeld
    over 2 of 3 doses"), else right after the count."""
    if i + 2 < hi and words[i + 1] in _COUNT_RANGE:
        top = parse_number(words[i + 2], lang)
        if top is not None and top == int(top) and low < top <= 12:
            return i + 3
    return i + 1


def _split_into(
    readings: list[Reading], tokens: Tokens, lo: int, hi: int, cues: LanguageCues, lang: str
) -> tuple[list[Reading], range]:
    """A day's amount "in three divided doses", "verdeeld over 2 giften", "divided into 4
    doses": the count is its frequency, set on the per-day readings that state none; also the
    tokens of the count and its dose noun. A range of counts ("in three or four equal doses")
    is a range of doses a day: the comparison restates the day's amount with the answer's own
    count when it lies inside (:func:`~services.grounding.medical.compare.compare`)."""
    if not cues.split_after or not any(r.basis == "day" and r.frequency is None for r in readings):
        return readings, range(0)
    words = tokens.words
    before, after = _split_phrases(cues)
    kinds = tokens.kinds
    for i in range(lo + 1, hi - 1):
        if kinds[i] != NUM and words[i] not in NUMBER_WORDS:
            continue
        count = parse_number(words[i], lang)
        if count is None or count != int(count) or not 1 < count <= 12:
            continue
        if not any(tuple(words[i - len(b) : i]) == b for b in before if len(b) <= i - lo):
            continue
        k = _count_range(words, i, hi, count, lang)
        noun = next((a for a in after if tuple(words[k : k + len(a)]) == a), None)
        if noun is None:
            continue
        top = parse_number(words[k - 1], lang) if k > i + 1 else count
        n = Span(count, top or count, "exact")
        return [
            replace(r, frequency=n) if r.basis == "day" and r.frequency is None else r
            for r in readings
        ], range(i, k + len(noun))
    return readings, range(0)


def _bare_age(tokens: Tokens, i: int, j: int, lo: int, hi: int, w: _AgeWords) -> bool:
    """A number without "years" that is an age all the same: a whole number (or range) right
    after an age mark ("children aged 2 to 6"), or from 2 to 120 after a comparator that
    follows a noun for people ("people over 50", "mensen boven de 65"); never followed by a
    unit or another number ("over 50 kg" is a weight)."""
    words, kinds = tokens.words, tokens.kinds
    value = _number(words[i])
    if value is None or value != int(value) or not 0 < value <= 120:
        return False
    if i > lo and words[i - 1] in _AGE_NOUNS and (j >= hi or words[j] not in UNITS):
        return True  # "children aged 2 to 6", "ages 6-11": the mark says it is an age
    if j != i + 1 or value < 2:
        return False
    if j < hi and (kinds[j] == NUM or words[j] in UNITS or words[j] in _NOT_AGE_AFTER):
        return False  # "uw kind van 12 kilo" is a weight
    if w.kin_age(words, i, lo):
        return True  # "uw dochter van 4"
    before = words[max(lo, i - 4) : i]
    comparator = next(
        (k for k in range(len(before) - 1, -1, -1) if before[k] in w.above_before | w.below_before),
        None,
    )
    return comparator is not None and bool(w.people.intersection(before[:comparator]))


#: Words right before a number of months or years that make it how long something lasts or
#: when it happens, not an age, even in a sentence about a child ("give your child 5 ml for 3
#: months", "gedurende 3 maanden", "trong 2 tháng") (round 27).
_DURATION_BEFORE: Final = frozenset(
    {
        "for",
        "during",
        "lasting",
        "within",
        "after",
        "every",
        "gedurende",
        "binnen",
        "elke",
        "trong",
        "dài",
        "sau",
        "mỗi",
        "suốt",
        "cách",
    }
)
#: Words for "about" (and "that is") that may stand before a number that says a time again or
#: after a word of duration ("for about 3 months", "60 ngày (khoảng 2 tháng)", "(tức 2 tháng)").
ABOUT_WORDS: Final = frozenset(
    {"about", "around", "some", "ongeveer", "circa", "ca", "khoảng", "chừng", "tức"}
)


def _timed(words: Sequence[str], i: int, lo: int, w: _AgeWords) -> bool:
    """Whether the number at ``i`` is a time after a word of :data:`_DURATION_BEFORE` ("for
    about 3 months"), or restates one in brackets ("kéo dài 60 ngày (khoảng 2 tháng)")."""
    k = i - 1
    while k >= lo and words[k] in ABOUT_WORDS:
        k -= 1
    if k < lo:
        return False
    if words[k] in _DURATION_BEFORE:
        return True
    return words[k] == "(" and k - 1 >= lo and w.scale(words[k - 1]) is not None


def _ages(
    tokens: Tokens, lo: int, hi: int, w: _AgeWords, people: bool = True
) -> list[tuple[int, int, Decimal | None, Decimal | None]]:
    """``(first token, stop token, min years, max years)`` for every age in ``[lo, hi)``. A
    number of years or months is an age when a comparator ("over", "jonger dan", "dưới"), "aged"
    or "old" marks it, or when the sentence names a group of people (``people``)."""
    words, kinds = tokens.words, tokens.kinds
    out: list[tuple[int, int, Decimal | None, Decimal | None]] = []
    triggers = _AGE_TRIGGERS.get(id(w)) or _age_triggers(w)
    if triggers.isdisjoint(words[lo:hi]) or (
        NUM not in kinds[lo:hi] and NUMBER_WORDS.keys().isdisjoint(words[lo:hi])
    ):
        return out  # most sentences: decided in C
    i = lo
    while i < hi:
        if kinds[i] != NUM and not (words[i] in NUMBER_WORDS and _counted_age(words, i, hi, w)):
            i += 1
            continue
        first = _number(words[i]) if kinds[i] == NUM else Decimal(NUMBER_WORDS[words[i]])
        j = i + 1
        second: Decimal | None = None
        if j + 1 < hi and words[j] in w.range_words and kinds[j + 1] == NUM:
            second = _number(words[j + 1])
            j += 2
        if j + 1 < hi and words[j] in ("-", "–") and w.scale(words[j + 1]) is not None:
            j += 1  # "6-year-old", "6-jarige", "6-week-old"
        per = w.scale(words[j]) if j < hi else None
        unit_word = per is not None
        bare = not unit_word and first is not None and _bare_age(tokens, i, j, lo, hi, w)
        if first is None or not (unit_word or bare):
            i += 1
            continue
        scale = per if per is not None else Decimal(1)
        stop = j if bare else j + 1
        if stop < hi and words[stop] in ("tuổi", "old", "oud"):  # "6 tháng tuổi", "6 jaar oud"
            stop += 1
        if stop + 1 < hi and words[stop] == "-" and words[stop + 1] == "old":
            stop += 2
        low: Decimal | None = first * scale
        high: Decimal | None = second * scale if second is not None else None
        upper = None if bare or second is not None else _band_end(tokens, stop, hi, w)
        if upper is not None:  # "6 months to 3 years"
            high, stop = upper
        begin = i
        before = {words[k] for k in range(max(lo, i - 2), i)}
        after = tuple(words[stop : stop + 3])
        marked = (
            bool(before & (w.above_before | w.below_before | _AGE_MARKS))
            or words[stop - 1] in ("tuổi", "old", "oud")
            or w.kin_age(words, i, lo)
            or any(after[: len(p)] == p for p in (*w.above_after, *w.below_after))
            or (high is not None and not bare and words[stop : stop + 1] == [":"])
        )
        if not (marked or people) or (not marked and _timed(words, i, lo, w)):
            i = stop  # "the last 3 months of pregnancy", "for 5 days": a time, not an age
            continue
        # weeks and days are a baby's age only when "old" says so or a child's noun comes
        # before ("my 6-week-old", "baby van 10 dagen", "6 tuần tuổi"), not "at least 4 weeks"
        said_old = words[stop - 1] in ("tuổi", "old", "oud") or w.kin_age(words, i, lo)
        if per is not None and per < Decimal(1) / Decimal(12) and not said_old:
            i = stop
            continue
        if second is None and upper is None:
            if w.kin_age(words, i, lo):
                high = low  # "zoon van 6", "a baby of 3 months": that age, not "from 6"
            elif before & w.below_before or any(after[: len(p)] == p for p in w.below_after):
                low, high = None, first * scale
            elif before & w.above_before or any(after[: len(p)] == p for p in w.above_after):
                high = None
            else:
                high = low  # "aged 12 years": that age
            for p in (*w.above_after, *w.below_after):
                if after[: len(p)] == p:
                    stop += len(p)
                    break
            begin = max(lo, i - 2)
        out.append((begin, stop, low, high))
        i = stop
    return out


def _band_end(tokens: Tokens, at: int, hi: int, w: _AgeWords) -> tuple[Decimal, int] | None:
    """The upper end of an age band whose ends have units of their own, from a range word at
    ``at`` ("6 months | to 3 years", "6 maanden | tot 3 jaar"): ``(years, stop token)``, or
    ``None``. A band that heads a row of a dosing table ("3 to 6 years: 0.5 mg") is an age
    without a group noun: the reader marks it by its colon."""
    words, kinds = tokens.words, tokens.kinds
    if at + 2 >= hi or words[at] not in w.range_words or kinds[at + 1] != NUM:
        return None
    unit = words[at + 2]
    value = _number(words[at + 1])
    if value is None or not (unit in w.years or unit in w.months):
        return None
    return (value if unit in w.years else value / Decimal(12)), at + 3


def _counted_age(words: list[str], i: int, hi: int, w: _AgeWords) -> bool:
    """A number word right before a year or month word after a child's noun and its "of" ("een
    baby van drie maanden", "a girl of six years"), or joined to one and "old" ("your
    five-year-old", "a six-month-old"; round 25)."""
    if words[i] not in NUMBER_WORDS:
        return False
    if i + 1 < hi and (words[i + 1] in w.years or words[i + 1] in w.months):
        return w.kin_age(words, i, 0)
    return (
        i + 4 < hi
        and words[i + 1] == "-"
        and w.scale(words[i + 2]) is not None
        and words[i + 3] == "-"
        and words[i + 4] == "old"
    )


def _age_triggers(w: _AgeWords) -> frozenset[str]:
    """Words one of which a sentence with an age has: a number is an age only with a year or
    month word after it, or, bare, after an age noun, a child's noun and its "of", or a
    comparator (see :func:`_bare_age`)."""
    return (
        w.years
        | w.months
        | w.weeks
        | w.days
        | _AGE_NOUNS
        | {w.of}
        | w.above_before
        | w.below_before
    )


_AGE_TRIGGERS: Final = {id(w): _age_triggers(w) for w in _AGE_WORDS.values()}


# -- polarity with negation scope, one function per language ---------------------------------


def _negated(
    neg_at: Sequence[int], start: int, stop: int, clause: tuple[int, int], before: int, after: int
) -> bool:
    """Whether an odd number of negators sit within the scope of the phrase ``[start, stop)``."""
    lo, hi = clause
    count = sum(
        1
        for k in neg_at
        if (max(lo, start - before) <= k < start) or (stop <= k < min(hi, stop + after))
    )
    return count % 2 == 1


def _negated_en(neg_at: Sequence[int], start: int, stop: int, clause: tuple[int, int]) -> bool:
    """English puts the negator before: "is not safe", "should never be used"."""
    return _negated(neg_at, start, stop, clause, 3, 0)


def _negated_nl(neg_at: Sequence[int], start: int, stop: int, clause: tuple[int, int]) -> bool:
    """Dutch also after the verb: "gebruik ibuprofen niet", "mag ... niet gebruiken"."""
    return _negated(neg_at, start, stop, clause, 3, 5)


def _negated_vi(neg_at: Sequence[int], start: int, stop: int, clause: tuple[int, int]) -> bool:
    """Vietnamese negates before, with adverbs between: "không an toàn", "không nên tự ý
    uống"."""
    return _negated(neg_at, start, stop, clause, 4, 0)


_NEGATION: Final = {"en": _negated_en, "nl": _negated_nl, "vi": _negated_vi}
#: Intervals longer than this are not between doses ("increase at intervals of 4 weeks").
_LONGEST_INTERVAL: Final = Decimal(168)


def flip(polarity: Polarity) -> Polarity:
    return _FLIP[polarity]


#: Words that open an inserted list of examples between commas ("kan samen met een statine,
#: zoals rosuvastatine of atorvastatine, worden gebruikt"): the commas around it end no clause.
_EXAMPLES_OPEN: Final = frozenset({"zoals", "such", "like", "including", "như", "bijvoorbeeld"})


#: Dutch coordinators that, right before a negator, open a negation of their own ("Niet
#: aanbrengen op open wonden en niet op slijmvliezen"): Dutch negates after the verb too, and
#: the second "niet" would cancel the first in one clause.
_NL_AND_NOT: Final = (frozenset({"en", "of"}), frozenset({"niet", "geen", "nooit"}))


def _clauses(
    tokens: Tokens, lo: int, hi: int, language: str | None = None
) -> list[tuple[int, int]]:
    words, kinds = tokens.words, tokens.kinds
    out: list[tuple[int, int]] = []
    start = lo
    inserted = False  # inside ", such as …," the next comma ends the insertion, not the clause
    joins, negators = _NL_AND_NOT if language == "nl" else (frozenset(), frozenset())
    for k in range(lo, hi):
        if words[k] in joins and k + 1 < hi and words[k + 1] in negators and k > start:
            out.append((start, k))  # "…, en niet op slijmvliezen": a clause of its own
            start = k + 1
            continue
        if words[k] == "," and k + 1 < hi and words[k + 1] in _EXAMPLES_OPEN:
            inserted = True
            continue
        if inserted and words[k] == ",":
            inserted = False
            continue
        if (kinds[k] == SYM and words[k] in _CLAUSE_BREAKS) or words[k] in _CONTRAST:
            if k > start:
                out.append((start, k))
            start = k + 1
    if hi > start:
        out.append((start, hi))
    return out or [(lo, hi)]


def _clause_polarity(
    cues: list[tuple[int, int, Cue]],
    clause: tuple[int, int],
    negated: Callable[[Sequence[int], int, int, tuple[int, int]], bool],
    words: list[str],
    times: Sequence[int] = (),
) -> Polarity | None:
    """The polarity of one clause: the strongest negative vote, else a positive one.
    ``times``: where the sentence's lengths of time start (a pause: "for 8 hours")."""
    all_neg = [e - 1 for _, e, c in cues if c.kind == "neg"]  # "not a reason to | avoid"
    # "without" after a phrase opens a condition, it does not negate the phrase: "neem geen
    # ibuprofen zonder overleg" is still "do not take".
    neg_at = all_neg
    if any(words[k] in _NOT_VERBAL for k in all_neg):
        first = min(
            (s for s, _, c in cues if c.kind in _VOTERS and clause[0] <= s < clause[1]),
            default=0,
        )
        neg_at = [k for k in all_neg if not (k > first and words[k] in _NOT_VERBAL)]
    uses = [(s, e) for s, e, c in cues if c.kind == "use" and clause[0] <= s < clause[1]]
    # A negator right before a condition negates the condition ("geef geen borstvoeding", "geen
    # alcohol"), not a use verb before it: the negated condition decides below.
    conds = {s for s, _, c in cues if c.kind == "cond"}
    verb_neg = [k for k in neg_at if k + 1 not in conds] if conds else neg_at
    frames = [s for s, _, c in cues if c.kind == "wneg" and clause[0] <= s < clause[1]]
    near = negated
    if frames:  # "nothing suggests … would be a problem": one more negator in every scope
        negated = _framed(negated, frames)
    votes: list[Polarity] = []
    advice = _advised_change(cues, clause, neg_at, negated)
    if advice:
        votes.append("allowed")  # "no dose adjustment is recommended": the usual use is fine
    for s, e, cue in cues:
        if not clause[0] <= s < clause[1]:
            continue
        if advice and cue.kind == "pol" and cue.value in _ADVICE:
            continue  # it advises on the dose change, not on the use
        if cue.kind == "pol":
            value: Polarity = cue.value  # type: ignore[assignment]
            votes.append(flip(value) if negated(neg_at, s, e, clause) else value)
        elif cue.kind == "use" and negated(verb_neg, s, e, clause):
            votes.append("avoid")
        elif cue.kind == "use" and frames and near(verb_neg, s, e, clause):
            # a negated use under a negated frame: "geen reden om X niet te gebruiken", "no
            # reason to think you should not take it" say the use is allowed
            votes.append("allowed")
        elif cue.kind == "change" and negated(neg_at, s, e, clause):
            votes.append("allowed")  # "no need to reduce the dose": the usual use is fine
        elif cue.kind == "modal_after" and any(u[0] < s for u in uses):
            negative = any(negated(neg_at, u0, u1, clause) for u0, u1 in uses if u0 < s)
            votes.append("avoid" if negative else "allowed")
        elif cue.kind == "modal" and any(u[0] > s for u in uses):
            wide = (clause[0], clause[1])
            negative = negated(neg_at, s, e, wide) or any(
                negated(neg_at, u0, u1, wide) for u0, u1 in uses if u0 > s
            )
            votes.append("avoid" if negative else "allowed")
    if not votes and _negated_condition(cues, clause, all_neg, words):
        paused = times and _paused(cues, clause, all_neg, times)
        votes.append("allowed" if paused else "avoid")
    negatives = [v for v in votes if v in NEGATIVE]
    if negatives:
        return max(negatives, key=lambda v: _STRENGTH[v])
    return votes[0] if votes else None


#: Possessives before the object of a verb of use ("keep using your CPAP", "blijf uw CPAP
#: gebruiken").
_POSSESSIVES: Final = frozenset({"your", "his", "her", "their", "uw", "je", "jouw", "zijn", "haar"})


def _other_object(
    words: Sequence[str],
    clause: tuple[int, int],
    cues: list[tuple[int, int, Cue]],
    drugs: list[tuple[int, int, str]],
) -> bool:
    """Whether a clause that names no drug uses something else: a verb of use with a
    possessive object right before or after it ("keep using your CPAP", "blijf uw CPAP
    gebruiken"), while the sentence's drug stands in another clause (round 27)."""
    lo, hi = clause
    if not drugs or any(lo <= s < hi for s, _, _ in drugs):
        return False
    for s, e, c in cues:
        if not (c.kind == "use" or c.keeps) or not lo <= s < hi:
            continue
        if e < hi and words[e] in _POSSESSIVES:
            return True
        if s - 2 >= lo and words[s - 2] in _POSSESSIVES:
            return True
    return False


#: Words that open a clause of circumstance ("If swallowing is a problem, …").
_CONDITIONAL: Final = {
    "en": frozenset({"if", "when", "whenever"}),
    "nl": frozenset({"als", "indien", "wanneer"}),
    "vi": frozenset({"nếu", "khi"}),
}


def _circumstance(
    clause: tuple[int, int],
    words: list[str],
    cues: list[tuple[int, int, Cue]],
    drugs: list[tuple[int, int, str]],
    lang: str,
) -> bool:
    """Whether ``clause`` only sets a circumstance: it opens with "if" / "als" / "nếu" and
    names no drug, no use of one and no negation, and goes on to no main clause ("If
    swallowing is a problem, the capsule can be opened": the problem is the swallowing's, no
    verdict on the drug; round 25). "If pregnant, do not take it" and "Nếu đang mang thai thì
    bạn không nên dùng" keep their verdicts."""
    lo, hi = clause
    if lo >= hi or words[lo] not in _CONDITIONAL[lang]:
        return False
    if any(lo <= s < hi for s, _, _ in drugs) or not _MAIN_CLAUSE.isdisjoint(words[lo:hi]):
        return False
    return not any(
        c.kind in ("use", "modal", "modal_after", "neg", "wneg") and lo <= s < hi
        for s, _, c in cues
    )


#: Words that open the main clause after a condition ("nếu … thì …", "if …, then …").
_MAIN_CLAUSE: Final = frozenset({"then", "dan", "thì"})


#: Polarity values that advise on an action: beside a dose change they are about the change.
_ADVICE: Final = frozenset({"recommended", "not_recommended"})


def _advised_change(
    cues: list[tuple[int, int, Cue]],
    clause: tuple[int, int],
    neg_at: Sequence[int],
    negated: Callable[[Sequence[int], int, int, tuple[int, int]], bool],
) -> bool:
    """Whether the clause advises against changing the dose: a dose change and a
    recommendation about it ("No dose adjustment is recommended in renal impairment", "Er wordt
    geen dosisaanpassing aanbevolen", "Không khuyến cáo điều chỉnh liều"), with one negation
    between them: the change's own negator, the recommendation's, or a phrase that holds its
    own ("not recommended"), each counted once. The usual use is then allowed; the
    recommendation is not read as one about using the drug."""
    changes = [(s, e) for s, e, c in cues if c.kind == "change" and clause[0] <= s < clause[1]]
    advice = [
        (s, e, c)
        for s, e, c in cues
        if c.kind == "pol" and c.value in _ADVICE and clause[0] <= s < clause[1]
    ]
    if not changes or not advice:
        return False
    scoped = {
        k
        for s, e in [*changes, *((s, e) for s, e, _ in advice)]
        for k in neg_at
        if negated([k], s, e, clause)
    }
    own = sum(1 for _, _, c in advice if c.value == "not_recommended")
    return (len(scoped) + own) % 2 == 1


def _framed(
    negated: Callable[[Sequence[int], int, int, tuple[int, int]], bool], frames: list[int]
) -> Callable[[Sequence[int], int, int, tuple[int, int]], bool]:
    """``negated`` with the negated assertions (``wneg``) of the clause counted as well: each
    one before a phrase, at any distance, flips it once more."""

    def inner(neg_at: Sequence[int], start: int, stop: int, clause: tuple[int, int]) -> bool:
        wide = sum(1 for k in frames if clause[0] <= k < start)
        return negated(neg_at, start, stop, clause) != (wide % 2 == 1)

    return inner


#: Negators that do not negate a verb ("adults without kidney problems").
_NOT_VERBAL: Final = frozenset({"without", "zonder", "neither", "nor", "noch"})
#: Cue kinds that vote on a clause's polarity.
_VOTERS: Final = frozenset({"pol", "use", "change", "modal", "modal_after"})


def _negated_condition(
    cues: list[tuple[int, int, Cue]], clause: tuple[int, int], neg_at: list[int], words: list[str]
) -> bool:
    """A negator right before a condition that is an activity: "do not drive", "geen alcohol",
    "bestuur geen auto", "không lái xe"."""
    return any(
        cue.kind == "cond"
        and clause[0] <= s < clause[1]
        and any(max(clause[0], s - 2) <= k < s and words[k] not in _NOT_VERBAL for k in neg_at)
        for s, _, cue in cues
    )


def _paused(
    cues: list[tuple[int, int, Cue]],
    clause: tuple[int, int],
    neg_at: list[int],
    times: Sequence[int],
) -> bool:
    """A pausable activity negated for a time, in a clause that says to take the drug: "take
    the tablet right after a feed and do not breastfeed for at least 8 hours" allows the drug
    while breastfeeding; "do not breastfeed while taking it" (no time) does not."""
    takes = any(
        c.kind == "use" and clause[0] <= s < clause[1] and not any(s - 3 <= k < s for k in neg_at)
        for s, _, c in cues
    )
    if not takes:
        return False
    return any(
        c.kind == "cond"
        and c.pausable
        and clause[0] <= s < clause[1]
        and any(s - 5 <= t <= e + 5 for t in times)
        and any(s - 2 <= k < s for k in neg_at)
        for s, e, c in cues
    )


# -- the reader ---------------------------------------------------------------------------


@dataclass(slots=True)
class _Item:
    """A dose amount, a frequency or an interval found in the sentence, before assembly."""

    kind: Literal["amount", "freq"]
    t0: int
    t1: int
    span: Span
    unit: str | None = None
    basis: Basis | None = None
    qualifier: Qualifier | None = None
    frequency: Span | None = None
    amount: Amount | None = None
    attached: bool = False
    #: a step of raising the dose (:func:`_steps`): its size, or how often one is taken
    step: bool = False


#: Cue kinds a clause's polarity can come from: votes, a negated condition ("geen alcohol"),
#: "the same goes for" (with the claim before).
_POLARITY_KINDS: Final = frozenset({"pol", "use", "change", "modal", "modal_after", "cond", "same"})

#: Words that set the groups named before apart ("for patients with none of those factors",
#: "voor wie geen van deze factoren heeft", "người không có yếu tố nào trong số đó").
_NONE_OF: Final = (
    ("none", "of"),
    ("neither", "of"),
    ("geen", "van"),
    ("geen", "enkele", "van"),
    ("không", "có", "yếu", "tố", "nào"),
    ("không", "thuộc", "các", "trường", "hợp"),
)


def _none_of(words: list[str], lo: int, hi: int) -> bool:
    span = words[lo:hi]
    return any(
        tuple(span[k : k + len(p)]) == p
        for k in range(len(span))
        for p in _NONE_OF
        if span[k] == p[0]
    )


#: Cues that set the amount right after them aside: "instead of", "not the usual", and a bare
#: negator ("10 mg, not 20 mg"); "not more than" is a limit (a qualifier), not a negator.
_SET_ASIDE: Final = frozenset({"instead", "neg"})

#: Conditions measured by a number written without a unit ("an eGFR of 40", "klaring 25").
_MEASURED: Final = frozenset({"renal"})


def _measured(a: Amount, cues: list[tuple[int, int, Cue]]) -> bool:
    """A bare number right after a measured condition is its value, not a dose: "eGFR van
    40", "creatinine clearance about 45", "độ lọc cầu thận 25"."""
    return any(c.kind == "cond" and c.value in _MEASURED and e <= a.t0 <= e + 3 for _, e, c in cues)


#: Tokens that may stand between a concentration's amount and its product unit (the drug's
#: name: "4 microgram tacalcitol per gram", "50 mg of amoxicillin per ml").
_PRODUCT_REACH: Final = 3


def _concentrations(found: Sequence[Amount], cues: list[tuple[int, int, Cue]]) -> frozenset[int]:
    """Where the amounts start that a unit of the product follows ("4 microgram tacalcitol per
    gram zalf", "chứa 50 microgam calcipotriol trong mỗi gam"): what the product holds, no
    dose. Their numbers are still looked for among the passages'."""
    units = [s for s, _, c in cues if c.kind == "product"]
    if not units:
        return frozenset()
    return frozenset(a.t0 for a in found if any(a.t1 <= s <= a.t1 + _PRODUCT_REACH for s in units))


def _is_dose_amount(a: Amount) -> bool:
    return a.unit in _DOSE_UNITS and a.symbol != "kg"


#: "between 75 mg and 300 mg": the word that opens a range written with "and".
_BETWEEN: Final = frozenset({"between", "tussen", "giữa"})


def _merge_ranges(amounts: list[Amount], words: list[str]) -> list[tuple[Amount, Amount]]:
    """Dose amounts, with two joined by a connector read as one range."""
    out: list[tuple[Amount, Amount]] = []
    i = 0
    while i < len(amounts):
        a = amounts[i]
        if i + 1 < len(amounts):
            b = amounts[i + 1]
            between = words[a.t1 : b.t0]
            if (
                b.unit == a.unit
                and len(between) in (1, 3)
                and (
                    between[0]
                    in ("-", "–", "—", "to", "tot", "đến", "tới", "or", "of", "à", "hoặc")
                    or (
                        between[0] in ("and", "en", "và")
                        and a.t0 > 0
                        and words[a.t0 - 1] in _BETWEEN
                    )
                )
                and (len(between) == 1 or between == ["tot", "en", "met"])
                and b.high >= a.low
                and a.per_time == b.per_time  # "1 mg/kg q12h or 1.5 mg/kg": two regimens
            ):
                out.append((a, b))
                i += 2
                continue
        out.append((a, a))
        i += 1
    return out


#: Words between the two counts of a range of frequencies ("once or twice daily", "een- tot
#: tweemaal daags", "eenmaal à tweemaal daags"): the first count is read back from the second
#: over one of them, and left for the second when one follows it.
_RANGE_JOINS: Final = frozenset({"or", "to", "of", "tot", "à", "hoặc", "đến", "-", "–"})


def _day_basis_after(cues: list[tuple[int, int, Cue]], t1: int, taken: set[int]) -> int | None:
    """A per-day (or per-week, per-month) phrase right after a count: "3 times a day", "once
    weekly", "once a month"."""
    for k, (s, _, cue) in enumerate(cues):
        if (
            ((cue.kind == "basis" and cue.value in ("day", "week")) or cue.kind == "month")
            and t1 <= s <= t1 + 2
            and k not in taken
        ):
            return k
    return None


def _per_day(cue: Cue) -> Decimal:
    if cue.kind == "month":
        return _DAY / _MONTH_HOURS
    return Decimal(1) / Decimal(7) if cue.value == "week" else Decimal(1)


def _cues_and_drugs(
    tokens: Tokens, lo: int, hi: int, found: Sequence[Amount], lang: str, lexicon: MedicalLexicon
) -> tuple[list[tuple[int, int, Cue]], list[tuple[int, int, str]]]:
    """The cue phrases (with "more than" after a negation read as a maximum, and conditions
    written as the head of a compound) and the drug names of the sentence ``tokens[lo:hi]``."""
    words = tokens.words
    inside = {t for a in found if len(a.parts) > 1 for t in range(a.t0, a.t1)}
    cues = [
        c
        for c in lexicon.matcher(lang).find(words, lo, hi)
        if not (c[2].kind == "qual" and c[0] in inside)  # "200 tot 400 mg": a range, no "tot"
        and not (c[2].kind == "basis" and c[0] > lo and words[c[0] - 1] in _DELAYS)
    ]
    cues = _negated_more(cues)
    spec = lexicon.cues[lang].first_period
    if spec is not None and not spec.first.isdisjoint(words[lo:hi]):  # most sentences: in C
        cues = _first_periods(cues, words, lo, hi, spec)
    drugs = list(lexicon.find_drugs(words, lo, hi))
    if lexicon.compounds(lang):
        compounds = lexicon.compound_conditions(words, lo, hi, lang, (*cues, *drugs))
        if compounds:
            cues = sorted((*cues, *compounds), key=lambda c: c[0])
    return cues, drugs


#: Tokens that end the stretch between "first" and its period ("the first two weeks").
_PERIOD_BREAKS: Final = frozenset({",", ";", ":", ".", "(", ")", "!", "?"})


def _first_periods(
    cues: list[tuple[int, int, Cue]], words: list[str], lo: int, hi: int, spec: FirstPeriod
) -> list[tuple[int, int, Cue]]:
    """``cues`` with a starting-dose qualifier for each "first days / weeks" phrase of the
    sentence ("for the first two weeks", "de eerste week", "trong 1–2 tuần đầu"; at most three
    words between "first" and the period), unless a word of ``spec.not_after`` stands just
    before it ("after the first week", "sau 2 tuần đầu": the dose after the start). A sentence
    with such a phrase says when, so a "usually" in it is a hedge, not the usual dose: its
    "usual" qualifiers go (round 27)."""
    found: list[tuple[int, int]] = []
    for i in range(lo, hi):
        if words[i] not in spec.first:
            continue
        if spec.first_after:
            if i == lo or words[i - 1] not in spec.periods:
                continue
            start, end = i - 1, i + 1
            while start > lo and start >= i - 4 and words[start - 1] not in _PERIOD_BREAKS:
                start -= 1  # "sau 2 tuần đầu": the words before the number count
        else:
            period = next(
                (j for j in range(i + 1, min(hi, i + 5)) if words[j] in spec.periods), None
            )
            if period is None or _PERIOD_BREAKS & set(words[i:period]):
                continue
            end = period + 1
            start = max(lo, i - 2)
        if spec.not_after & set(words[start:i]):
            continue
        found.append((i if not spec.first_after else i - 1, end))
    if not found:
        return cues
    kept = [c for c in cues if not (c[2].kind == "qual" and c[2].value == "usual")]
    return sorted((*kept, *((s, e, _FIRST_PERIOD) for s, e in found)), key=lambda c: c[0])


#: The starting-dose qualifier a "first days / weeks" phrase gives (:func:`_first_periods`).
_FIRST_PERIOD: Final = Cue("qual", "start")


def _without_normal(
    cues: list[tuple[int, int, Cue]], words: list[str], normal_words: Sequence[str]
) -> list[tuple[int, int, Cue]]:
    """``cues`` without the conditions a "normal" word stands next to, nor that word ("kidneys
    work normally": no impairment, and "normally" no usual dose here)."""
    normal = _normal_at(cues, words, normal_words)
    if not normal:
        return cues
    return [
        c
        for c in cues
        if not (c[2].kind == "cond" and any(abs(n - c[0]) <= 4 for n in normal))
        and c[0] not in normal
    ]


def read_sentence(
    tokens: Tokens,
    lo: int,
    hi: int,
    found: Sequence[Amount],
    language: str | None,
    lexicon: MedicalLexicon,
    carry: Carry,
    units: frozenset[str] = frozenset(),
) -> SentenceReading:
    """The readings of the sentence ``tokens[lo:hi]`` (``found``: its amounts)."""
    lang = language if language in _AGE_READERS else "en"
    words, kinds = tokens.words, tokens.kinds
    cues, drugs = _cues_and_drugs(tokens, lo, hi, found, lang, lexicon)
    if not cues and not drugs and not any(_is_dose_amount(a) or a.unit == "times" for a in found):
        return _quiet(tokens, lo, hi, found, lang, carry)
    groups = frozenset(c.value for _, _, c in cues if c.kind in ("pop", "cond"))
    people = any(c.kind == "pop" for _, _, c in cues)
    ages = _AGE_READERS[lang](tokens, lo, hi, people)
    used: set[int] = set()
    age_tokens: set[int] = set()
    for s, e, _, _ in ages:
        age_tokens.update(range(s, e))
    # Cue phrases that hold a number ("in 24 hours") use it.
    cue_tokens: set[int] = set()
    aside: set[int] = set()  # "not the usual 20 mg": where an amount set aside starts
    for s, e, cue in cues:
        if cue is _FIRST_PERIOD:
            continue  # "de eerste 3 maanden": also how long the treatment lasts
        if cue.kind in ("basis", "qual", "ivl_after", "ivl_before") or cue.value == "alternate":
            cue_tokens.update(range(s, e))  # "cách một ngày": the day is the phrase's own
        elif cue.kind in _SET_ASIDE:
            aside.add(e)
            if e < hi and words[e] in _OF_AMOUNT:  # "lower than the starting dose of 5 mg"
                aside.add(e + 1)
    # -- populations and conditions -------------------------------------------------------
    sound = _without_normal(cues, words, lexicon.cues[lang].normal_words)
    # "with normal kidney function it would be one capsule": not the group carried from before
    normal = {c.value for _, _, c in cues if c.kind == "cond"} - {
        c.value for _, _, c in sound if c.kind == "cond"
    }
    normal |= {c.value for _, _, c in sound if c.kind == "neutral" and c.value}
    cues = sound
    compared = {s for s, _, c in cues if c.kind == "pop" and _compared(cues, s, words)}
    populations = {c.value for s, _, c in cues if c.kind == "pop" and s not in compared}
    conditions = {c.value for _, _, c in cues if c.kind == "cond"}
    populations |= {c.value for _, _, c in cues if c.kind == "cond" and c.population}
    infant = "infant" in populations and not populations & {"child", "adolescent"}
    if "infant" in populations:
        populations = (populations - {"infant"}) | {"child"}
    age: tuple[Decimal | None, Decimal | None] | None = None
    if infant and not ages:
        # "Zuigelingen en pasgeborenen: 8 tot 15 mg/kg per dag": a child under a year, not a
        # child of four (infants alone; "infants and children" is every child)
        age = (Decimal(0), Decimal(1))
    if ages:
        _, _, a_lo, a_hi = ages[0]
        age = (a_lo, a_hi)
        if not populations & {"adult", "child", "elderly", "adolescent"}:
            populations.add(_age_group(a_lo, a_hi))
        elif "adult" in populations and a_lo is not None and _age_group(a_lo, a_lo) == "elderly":
            # "at 79 she can take it like any adult": an age of 65 or over is an older person
            populations = (populations - {"adult"}) | {"elderly"}
        used.update(t for t in age_tokens if kinds[t] == NUM or words[t] in NUMBER_WORDS)
    stated_pop = bool(populations)
    if not stated_pop:
        populations, age = set(carry.populations) - normal, carry.age
        if populations and _none_of(words, lo, hi):
            # "The standard 60 mg is for patients who have none of those factors": the groups
            # named before are set apart, not spoken about
            populations, age = set(), None
    elif age is None and carry.age is not None and populations & carry.populations - {"adult"}:
        age = carry.age  # "my son is 5" … "a child can take": the same child, with the age
    # -- items: dose amounts, frequencies, intervals --------------------------------------
    items: list[_Item] = []
    # Basis words written as a denominator ("3 keer per dag", "4 g/day") are the amount's own.
    spans = [(a.t0, a.t1) for a in found]
    taken_cues: set[int] = {
        k
        for k, (s, _, c) in enumerate(cues)
        if c.kind == "basis" and any(t0 < s < t1 for t0, t1 in spans)
    }
    # "500 mg mỗi 8 giờ", "500 mg per 8 hours": a time denominator of hours is the interval
    # between doses; per minute or per hour ("ml/min", "mg/h") is a rate (a clearance).
    held = _concentrations(found, cues)
    set_aside = [a for a in found if _is_dose_amount(a) and a.t0 not in age_tokens]
    if any(a.t0 not in aside for a in set_aside):
        set_aside = []
    doses = [
        a
        for a in found
        if _is_dose_amount(a)
        and a.t0 not in age_tokens
        and a.t0 not in aside
        and a.t0 not in held
        and (a.per_time is None or a.per_time >= _SHORTEST_INTERVAL)
    ]
    for a in found:
        rate = a.per_time is not None and a.per_time < _SHORTEST_INTERVAL
        if (rate and a.unit in _DOSE_UNITS) or (not a.symbol and _measured(a, cues)):
            used.update(range(a.t0, a.t1))
    for first, last in _merge_ranges(doses, words):
        span = Span(first.low, last.high)
        basis: Basis | None = None
        per_time = first.per_time or last.per_time
        interval: Span | None = None
        if per_time is not None and (per_time < _DAY or _DAY < per_time != _WEEK):
            # "500 mg per 8 hours"; "300 mg mỗi 48 giờ": a time between a day and a week is
            # the interval too, not a basis; so is a longer one ("927 mg mỗi 26 tuần")
            basis, interval = "dose", Span(_DAY / per_time, _DAY / per_time)
        elif per_time is not None:
            basis = "day" if per_time == _DAY else "week" if per_time == _WEEK else None
        elif first.per_dose or last.per_dose:
            basis = "dose"
        items.append(
            _Item(
                "amount",
                first.t0,
                last.t1,
                span,
                first.unit,
                basis,
                frequency=interval,
                amount=first,
            )
        )
        used.update(range(first.t0, last.t1))
    for a in found:
        if a.t0 in age_tokens or a.t0 in used:
            continue
        if a.unit == "times" and _alternate_once(a, cues):
            used.update(range(a.t0, a.t1))
        elif a.unit == "times":
            freq = _frequency_of(a, cues, taken_cues)
            if freq is not None:
                items.append(_Item("freq", a.t0, a.t1, freq))
                used.update(range(a.t0, a.t1))
            elif _at_once(a, items) or (
                a.t0 in cue_tokens and any(b.t1 == a.t0 and b.unit == "h" for b in found)
            ):
                # "mỗi 6 giờ một lần", "cứ 2 đến 4 giờ một lần": the count right after the
                # time of an interval phrase is the interval's own, no number of its own
                used.update(range(a.t0, a.t1))
        elif a.unit == "h" and a.t0 not in cue_tokens:
            interval = _interval_of(a, cues)
            if interval is not None:
                items.append(_Item("freq", a.t0, a.t1, interval))
                used.update(range(a.t0, a.t1))
        elif a.unit == "h" and a.t0 in cue_tokens:
            used.update(range(a.t0, a.t1))
    duration = _duration(found, cues, words, lo, used | cue_tokens | age_tokens)
    for k, (s, e, cue) in enumerate(cues):
        if cue.kind == "freq" and cue.value == "daily":  # "every morning": once a day
            n = Decimal(cue.count)  # "morning and evening": twice
            items.append(_Item("freq", s, e, Span(n, n)))
            continue
        if cue.kind == "freq" and cue.value == "alternate":  # "every other day": every 2 days
            items.append(_Item("freq", s, e, Span(_HALF_A_DAY, _HALF_A_DAY)))
            continue
        if cue.kind == "freq" and cue.value in _WEEKS:  # "every other week", "tuần một lần"
            if s == lo or kinds[s - 1] != NUM:  # not "2 tuần một lần": every 2 weeks
                items.append(_Item("freq", s, e, _WEEKS[cue.value]))
            continue
        if cue.kind == "month" and cue.count and k not in taken_cues:
            # "monthly", "every month", "elke maand", "hằng tháng": once a month (round 26)
            monthly = _per_day(cue)
            items.append(_Item("freq", s, e, Span(monthly, monthly)))
            continue
        if cue.kind == "freq" and k not in taken_cues:
            if (
                e < hi - 1
                and words[e] in _RANGE_JOINS
                and any(c.kind == "freq" and cs == e + 1 for cs, _, c in cues)
            ):
                continue  # "once or twice daily": the range is read at "twice"
            day = _day_basis_after(cues, e, taken_cues)
            if day is None:
                continue
            taken_cues.add(day)
            factor = _per_day(cues[day][2])
            low = Decimal(cue.count)
            start = s
            joined = s >= 3 and words[s - 1] in _FREQ_JOINS and words[s - 2] == "-"
            if (s >= 2 and words[s - 1] in _RANGE_JOINS) or joined:
                back = s - 3 if joined else s - 2  # "twee- tot driemaal", "twee- of driemaal"
                prev = words[back]
                if kinds[back] == NUM and _number(prev) is not None:
                    low, start = min(low, _number(prev) or low), back
                elif prev in NUMBER_WORDS:
                    low, start = Decimal(min(NUMBER_WORDS[prev], cue.count)), back
                else:  # "once or twice daily", "eenmaal of tweemaal daags"
                    once = [(cs, c) for cs, ce, c in cues if c.kind == "freq" and ce == s - 1]
                    if once:
                        low, start = Decimal(min(once[0][1].count, cue.count)), once[0][0]
            items.append(_Item("freq", start, e, Span(low * factor, cue.count * factor)))
    qualifying = cues
    raising: list[_Item] = []
    titration = lexicon.cues[lang].titration
    verbs = phrase_spans(words, lo, hi, titration.verb_tokens) if titration and items else []
    if titration is not None and verbs:
        items += _step_paces(found, cues, used | age_tokens)
        items, raising, qualifying = _steps(
            items, cues, words, lo, verbs, titration, _STEP_BREAKS[lang], used, taken_cues
        )
    elif doses or any(c.kind in ("use", "qual") for _, _, c in cues):
        # "25 mg once every 3 months", "om de 6 weken een injectie", "elke 6 maanden een
        # onderhoudsdosis": a dose's long interval
        long = _long_intervals(found, cues, used | age_tokens | cue_tokens)
        items += long
        used.update(t for it in long for t in range(it.t0, it.t1))
    items.sort(key=lambda it: it.t0)
    _apply_qualifiers(items, qualifying, words, kinds)
    _apply_basis(items, cues, taken_cues, words)
    _apply_parentheses(items, words)
    # -- drugs ------------------------------------------------------------------------------
    stated = frozenset(inn for _, _, inn in drugs)
    context_drugs = stated or carry.drugs
    cue_kinds = {c.kind for _, _, c in cues}
    readings: list[Reading] = []
    pop_frozen = frozenset(populations)
    cond_keys = frozenset(conditions)
    # -- dose readings ------------------------------------------------------------------------
    amounts = [it for it in items if it.kind == "amount"]
    freqs = [it for it in items if it.kind == "freq"]
    # Only an amount, a frequency or a course length asks whether the sentence is about a dose
    # (the phrase search is the dear part).
    dose_cue = bool(amounts or freqs or duration is not None) and (
        bool(stated or carry.drugs or stated_pop or conditions)
        or bool(cue_kinds & {"qual", "basis", "freq", "ivl_before", "ivl_after"})
        or any(a.symbol == "kg" for a in found)  # "patients weighing 60 kg or more: 100 µg"
        or _has_dose_cue(words, lo, hi, lang)
    )
    lasting = (
        duration is not None
        and dose_cue
        and (
            duration[0].kind == "max"
            or any(c.kind == "use" or (c.keeps and c.value in POSITIVE) for _, _, c in cues)
        )
    )
    if amounts or (freqs and dose_cue):
        for f in freqs:
            before = [a for a in amounts if a.t0 < f.t0]
            target = _bracket_head(before, words, f.t0) if before else None
            target = target or (amounts[0] if amounts else None)
            after = [a for a in amounts if a.t0 > f.t0 and a.basis is None]
            if before and before[-1].basis == "day" and after:
                # "360 mg per dag, dus tweemaal daags 180 mg": a day's amount needs no
                # frequency; the dose after it is the one taken so often
                target = after[0]
            if target is not None and target.frequency is not None and after:
                # "óf drie keer per week 30 mg, óf zes keer per week 15 mg": the amount before
                # has its own; the count is the next one's
                target = after[0]
            if target is not None and target.frequency is None:
                target.frequency = f.span
                f.attached = True
                if target.basis is None or (
                    lang == "vi" and target.basis == "day" and f.t0 == target.t1
                ):
                    # "500 mg mỗi ngày 2 lần" is 500 mg a time, twice a day (round 27)
                    target.basis = "dose"
        _share_in_parentheses(amounts, words)
        if amounts and not dose_cue:
            amounts = []
        for it in [*amounts, *(f for f in freqs if not f.attached)]:
            inns = _drug_for(it.t0, it.t1, drugs, words) or context_drugs
            readings.append(
                Reading(
                    kind="dose",
                    drugs=inns,
                    drug_source=_drug_source(inns, stated),
                    populations=pop_frozen,
                    age=age,
                    amount=_qualified(it.span, it.qualifier) if it.kind == "amount" else None,
                    unit=it.unit if it.kind == "amount" else None,
                    basis=it.basis if it.kind == "amount" else None,
                    qualifier=it.qualifier if it.kind == "amount" else None,
                    frequency=it.frequency
                    if it.kind == "amount"
                    else _qualified(it.span, it.qualifier),
                    polarity="allowed",
                    conditions=cond_keys,
                    condition_units=units,
                    start=tokens.starts[it.t0],
                    end=tokens.ends[it.t1 - 1],
                    duration=duration[0] if duration is not None else None,
                )
            )
    if readings:
        readings, split_at = _split_into(readings, tokens, lo, hi, lexicon.cues[lang], lang)
        used.update(split_at)  # "verdeeld over twee keer": the count is the frequency
    for it in raising:
        inns = _drug_for(it.t0, it.t1, drugs, words) or context_drugs
        readings.append(
            Reading(
                kind="dose",
                drugs=inns,
                drug_source=_drug_source(inns, stated),
                populations=pop_frozen,
                age=age,
                amount=it.span if it.kind == "amount" else None,
                unit=it.unit if it.kind == "amount" else None,
                basis=None,
                qualifier=None,
                frequency=it.frequency if it.kind == "amount" else it.span,
                polarity="allowed",
                conditions=cond_keys,
                condition_units=units,
                start=tokens.starts[it.t0],
                end=tokens.ends[it.t1 - 1],
                step=True,
            )
        )
    # -- contraindication readings ----------------------------------------------------------
    course = False  # a going-on clause with a course length (see below)
    # "no need to stop it, keep taking 1 tablet three times a day": a stop negated beside a
    # dose is a safety claim of its own as well (the dose alone would hide it)
    dosed = bool(readings) and _stop_negated(cues, words, lexicon.cues[lang].negators)
    # "Yes, it can be used while you're pregnant: insert one 600 mg …", "X không chống chỉ
    # định với người đang dùng warfarin, bạn có thể uống 1 viên 40 mg": a clause without an
    # amount that says whether the drug may be used in a condition or with another drug is a
    # safety claim of its own beside the dose (round 24)
    # the polarity per clause, worked out once for a clause; a clause without a phrase of these
    # kinds has none
    clauses = _clauses(tokens, lo, hi, lang) if cue_kinds & _POLARITY_KINDS else []
    times = [a.t0 for a in found if a.unit == "h"] if clauses else []
    polarities: dict[tuple[int, int], Polarity | None] = {}

    def polarity(clause: tuple[int, int]) -> Polarity | None:
        if clause not in polarities:
            polarities[clause] = (
                None
                if _circumstance(clause, words, cues, drugs, lang)
                else _clause_polarity(cues, clause, _NEGATION[lang], words, times)
            )
        return polarities[clause]

    beside: tuple[int, int] | None = None
    if readings and not dosed and clauses:
        beside = _safety_clause(tokens, clauses, polarity, cues, found, lexicon)
        dosed = beside is not None
    if not readings or dosed:
        clause_pols = [(c, polarity(c)) for c in clauses]
        risk = cond_keys | (pop_frozen - {"adult"}) if stated_pop or cond_keys else cond_keys
        if not (risk or stated or stated_pop or _with_object(words, lo, hi, cues)):
            risk = carry.risk  # it goes on about the risk of the sentence before
        combined = "together" in cue_kinds and _combination_before(stated, risk, carry)
        if combined:
            context_drugs = carry.drugs | stated  # "that combination": the drugs named before
        interaction = len(stated) >= 2 or combined
        same = carry.polarity is not None and any(c.kind == "same" for _, _, c in cues)
        for clause, pol in clause_pols:
            course = False
            if pol is None and same and stated:
                # "the same goes for diclofenac": the claim before, about these drugs
                pol, risk, interaction = carry.polarity, risk or carry.risk, False
            if pol is None:
                continue
            if _other_object(words, clause, cues, drugs):
                continue  # "keep using your CPAP, because X does not replace it"
            topic: frozenset[str] = frozenset()
            keeps = pol in POSITIVE and any(
                c.keeps for s, _, c in cues if c.kind == "pol" and clause[0] <= s < clause[1]
            )  # "no need to stop X", "keep taking X": a claim of its own
            if dosed and not keeps and clause != beside:
                continue  # beside a dose, only the negated stop or a safety clause is read
            # "continue for 7 days after you leave": how long, a course claim; going on is
            # then judged only where a passage speaks of stopping or going on (open)
            course = keeps and lasting and not (risk or interaction)
            if pol in POSITIVE and not (risk or interaction or keeps):
                # what the clause is about, the drug named here or in the sentence before
                # ("Er is geen bezwaar tegen gebruik bij een actieve ziekte van Crohn" after a
                # sentence about Kyntheum; round 23)
                topic = _topic_units(tokens, clause, cues, drugs, lang)
                if not topic:
                    continue
            if not (stated or risk or carry.drugs or topic):
                continue  # "take care, and don't hesitate to ask": no drug, no condition
            readings.append(
                Reading(
                    kind="contraindication",
                    drugs=context_drugs,
                    drug_source=("stated" if stated else "context") if context_drugs else None,
                    populations=pop_frozen,
                    age=age,
                    amount=None,
                    unit=None,
                    basis=None,
                    qualifier=None,
                    frequency=None,
                    polarity=pol,
                    conditions=risk,
                    condition_units=topic or units,
                    start=tokens.starts[clause[0]],
                    end=tokens.ends[clause[1] - 1],
                    open=bool(topic) or course,
                )
            )
            break  # one safety claim per sentence: the first clause that makes one
    if lasting and duration is not None and all(r.open for r in readings):
        kept = readings if course else []  # going on, kept beside the course (open)
        # "use it for no longer than 2 days", "you can use it for three weeks": how long, with
        # no amount, frequency or (closed) safety claim in the sentence; open: checked only
        # where a passage states a course length
        span, t0, t1 = duration
        readings = [
            Reading(
                kind="dose",
                drugs=context_drugs,
                drug_source=("stated" if stated else "context") if context_drugs else None,
                populations=pop_frozen,
                age=age,
                amount=None,
                unit=None,
                basis=None,
                qualifier=None,
                frequency=None,
                polarity="allowed",
                conditions=cond_keys,
                condition_units=units,
                start=tokens.starts[t0],
                end=tokens.ends[t1 - 1],
                open=True,
                duration=span,
            ),
            *kept,
        ]
    # A contraindication's risk group ("do not drink alcohol") is not who the next sentence's
    # dose is for; a dose statement's population is.
    hands_on = stated_pop and not (readings and readings[0].kind == "contraindication")
    safety = [r for r in readings if r.kind == "contraindication" and not r.open]
    # "after the two weekly induction doses, 5 mg/kg every two weeks": an amount taken less
    # often than weekly is one dose, not a week's
    readings = [_dose_not_week(r) for r in readings]
    bands = _clearances(tokens, found, cues)
    if bands or carry.clearance is not None:
        readings = [_with_clearance(r, bands, carry.clearance) for r in readings]
    weights = _weights(tokens, found)
    if weights:
        readings = [_with_weight(r, weights) for r in readings]
    if carry.amount is not None and any(c.kind == "again" for _, _, c in cues):
        readings = [_taken_up(r, carry.amount) for r in readings]
    new_carry = Carry(
        drugs=stated or carry.drugs,
        populations=pop_frozen if hands_on else carry.populations,
        age=age if hands_on else carry.age,
        risk=safety[0].conditions if safety else frozenset(),
        polarity=safety[0].polarity if safety else None,
        clearance=bands[-1][1] if bands else carry.clearance,
        amount=_open_amount(readings),
    )
    of = stated if held else frozenset()
    contrasted = bool(set_aside) and not readings
    return SentenceReading(
        tuple(readings), frozenset(used), new_carry, of, contrasted, stated, groups
    )


def _dose_not_week(r: Reading) -> Reading:
    """A weekly basis beside a frequency of less than once a week is the dose's (round 26)."""
    f = r.frequency
    if r.basis == "week" and f is not None and f.high < _DAY / _WEEK:
        return replace(r, basis="dose")
    return r


def _open_amount(readings: Sequence[Reading]) -> tuple[Span, str] | None:
    """The last dose amount of a sentence that states no basis, for a next sentence that takes
    it up ("that amount", "die hoeveelheid", "lượng đó")."""
    for r in reversed(readings):
        if r.kind == "dose" and r.amount is not None and r.unit is not None:
            return (r.amount, r.unit) if r.basis is None else None
    return None


def _taken_up(r: Reading, amount: tuple[Span, str]) -> Reading:
    """A frequency without an amount, in a sentence that takes up the amount before ("Take
    that amount three times a day"): that amount each time."""
    if r.kind != "dose" or r.amount is not None or r.frequency is None:
        return r
    return replace(r, amount=amount[0], unit=amount[1], basis="dose")


def _safety_clause(
    tokens: Tokens,
    clauses: Sequence[tuple[int, int]],
    polarity: Callable[[tuple[int, int]], Polarity | None],
    cues: list[tuple[int, int, Cue]],
    found: Sequence[Amount],
    lexicon: MedicalLexicon,
) -> tuple[int, int] | None:
    """The first of a dose sentence's ``clauses`` that holds no amount, has a polarity of its
    own (not going on or stopping) and names a condition or two drugs: whether the drug may be
    used in that condition or with that drug, said beside the dose."""
    for c0, c1 in clauses:
        if any(c0 <= a.t0 < c1 for a in found):
            continue
        inside = [c for s, _, c in cues if c0 <= s < c1]
        if any(c.keeps for c in inside):
            continue  # going on or stopping: the negated stop above
        if polarity((c0, c1)) is None:
            continue
        if any(c.kind == "cond" for c in inside):
            return (c0, c1)
        if len({inn for _, _, inn in lexicon.find_drugs(tokens.words, c0, c1)}) >= 2:
            return (c0, c1)
    return None


def _stop_negated(cues: list[tuple[int, int, Cue]], words: list[str], negators: list[str]) -> bool:
    """Whether a phrase about stopping is negated in the sentence: a ``keep_use`` phrase of
    stopping ("stop", "stoppen", "ngưng") with a negator ending at most four tokens before it,
    or one that holds its own negator ("no need to stop", "u hoeft niet te stoppen"). Going on in
    plain words ("keep taking 75 mg") is no such phrase: beside a dose it says only that the dose
    goes on."""
    stops = [(s, e, c) for s, e, c in cues if c.kind == "pol" and c.keeps]
    if not stops:
        return False
    negs = [e for _, e, c in cues if c.kind == "neg"]
    for s, e, c in stops:
        if c.value in POSITIVE:
            if any(w in negators for w in words[s:e]):  # "u hoeft niet te stoppen"
                return True
        elif any(s - 4 <= n <= s for n in negs):
            return True
    return False


def _combination_before(stated: frozenset[str], risk: frozenset[str], carry: Carry) -> bool:
    """Whether a sentence that speaks of using together ("er is geen bezwaar tegen die combinatie",
    "that's fine together") is about the drugs named before, two or more: it names no risk and
    no second drug of its own. It is then an interaction claim about those drugs. So is one that
    names one drug the answer was not about, to use with the drug it was about ("Không được
    dùng chung với simvastatin" after a dose of gemfibrozil, "don't take it together with
    simvastatin")."""
    if risk or len(stated) > 1:
        return False
    if stated <= carry.drugs:
        return len(carry.drugs) >= 2
    return bool(carry.drugs)


def _quiet(
    tokens: Tokens, lo: int, hi: int, found: Sequence[Amount], lang: str, carry: Carry
) -> SentenceReading:
    """What :func:`read_sentence` gives for a sentence without cue phrases, drug names, dose
    amounts or counts of times (about half of an answer's sentences): no reading, as no item,
    clause polarity or course length can be made without them; only an age can state a
    population (used numbers: the age's), and a clearance pass on."""
    ages = _AGE_READERS[lang](tokens, lo, hi, False)
    used: frozenset[int] = frozenset()
    populations, age = carry.populations, carry.age
    if ages:  # the age group is the sentence's population, handed on
        _, _, a_lo, a_hi = ages[0]
        kinds, words = tokens.kinds, tokens.words
        used = frozenset(
            t
            for s, e, _, _ in ages
            for t in range(s, e)
            if kinds[t] == NUM or words[t] in NUMBER_WORDS
        )
        populations, age = frozenset({_age_group(a_lo, a_hi)}), (a_lo, a_hi)
    bands = _clearances(tokens, found, [])
    return SentenceReading(
        (),
        used,
        Carry(
            drugs=carry.drugs,
            populations=populations,
            age=age,
            clearance=bands[-1][1] if bands else carry.clearance,
        ),
    )


#: Words before a clearance that make it a bound ("below 30 ml/min", "klaring onder 30",
#: "dưới 30 ml/phút"; "above 60", "boven 60", "trên 60").
_BELOW: Final = frozenset(
    {"below", "under", "less", "<", "≤", "<=", "onder", "minder", "lager", "dưới"}
)
_ABOVE: Final = frozenset(
    {"above", "over", "more", "greater", ">", "≥", ">=", "boven", "hoger", "trên"}
)
_NO_LIMIT: Final = Decimal(10_000)


def _clearances(
    tokens: Tokens, found: Sequence[Amount], cues: list[tuple[int, int, Cue]]
) -> list[tuple[int, Span]]:
    """Kidney clearances of a sentence, in order: ``(character offset, span)`` for a rate in
    ml per minute ("30–60 ml/min", "dưới 30 ml/phút") and for a bare number right after a
    kidney measure ("klaring 25", "eGFR of 40")."""
    out: list[tuple[int, Span]] = []
    for a in found:
        rate = a.symbol == "ml" and a.per_time is not None and a.per_time < _SHORTEST_INTERVAL
        if not rate and not (not a.symbol and _measured(a, cues)):
            continue
        low, high = a.parts[0].written, a.parts[-1].written
        before = set(tokens.words[max(0, a.t0 - 2) : a.t0])
        if before & _BELOW:
            floor = _band_floor(tokens, a.t0)
            span = Span(floor, high) if floor is not None else Span(Decimal(0), high, "max")
        elif before & _ABOVE:
            span = Span(low, _NO_LIMIT, "min")
        else:
            span = Span(low, high)
        out.append((tokens.starts[a.t0], span))
    return out


#: Words before a body weight that make it an upper bound ("under 25 kg", "lichter dan 40 kg",
#: "dưới 25 kg") or a lower one ("more than 65 kg", "zwaarder dan 40 kg", "trên 40 kg").
_LIGHTER: Final = _BELOW | frozenset({"lighter", "up", "lichter", "tot", "tới"})
_HEAVIER: Final = _ABOVE | frozenset(
    {"heavier", "least", "zwaarder", "meer", "vanaf", "từ", "minste"}
)
#: Words after a body weight that make it a lower bound ("40 kg or more", "40 kg of meer",
#: "40 kg trở lên", "40 kg and over") or an upper one ("60 kg or less", "60 kg of minder",
#: "60 kg trở xuống", "60 kg or under"); they outweigh a word before it ("từ 60 kg trở xuống").
_OR_MORE: Final = frozenset({"more", "over", "above", "meer", "zwaarder", "lên"})
_OR_LESS: Final = frozenset({"less", "under", "below", "minder", "lichter", "xuống"})
#: Words that turn the bound after them around ("no more than 60 kg", "niet meer dan 60 kg",
#: "không quá 60 kg": at most 60 kg; "not less than", "không dưới": at least).
_NOT_BOUND: Final = frozenset({"no", "not", "niet", "geen", "không"})


def _weights(tokens: Tokens, found: Sequence[Amount]) -> list[tuple[int, Span]]:
    """Body weights of a sentence, in order: ``(character offset, span)`` for an amount in kg
    (not per kg): a band "12 kg to 25 kg", "26–40 kg", "15 đến dưới 25 kg", a bound "under
    25 kg", "more than 65 kg", "40 kg of meer", or one weight ("at 38 kg")."""
    words = tokens.words
    out: list[tuple[int, Span]] = []
    for a in found:
        if a.symbol != "kg":
            continue
        low, high = a.parts[0].written, a.parts[-1].written
        j = _floor_at(tokens, a.t0, unit="kg")  # "12 kg to 25 kg", "15 đến dưới 25 kg"
        floor = parse_number(words[j]) if j is not None else None
        if j is not None and floor is not None:
            # the band's lower bound was read as a weight of its own: the band replaces it
            out = [(at, span) for at, span in out if at != tokens.starts[j]]
            out.append((tokens.starts[j], Span(floor, high)))
            continue
        before = words[max(0, a.t0 - 3) : a.t0]
        after = set(words[a.t1 : a.t1 + 3])
        turned = [k for k, w in enumerate(before) if w in _NOT_BOUND]
        bound = set(before[turned[-1] + 1 :]) if turned else set()
        if after & _OR_LESS or bound & (_HEAVIER | {"quá"}):
            span = Span(Decimal(0), high, "max")
        elif after & _OR_MORE or bound & _LIGHTER:
            span = Span(low, _NO_LIMIT, "min")
        elif set(before) & _LIGHTER and not set(before) & _HEAVIER:
            span = Span(Decimal(0), high, "max")
        elif set(before) & _HEAVIER:
            span = Span(low, _NO_LIMIT, "min")
        else:
            span = Span(low, high)
        out.append((tokens.starts[a.t0], span))
    return out


def _with_weight(r: Reading, weights: list[tuple[int, Span]]) -> Reading:
    """A dose reading with the body weight stated last before it in its sentence (else the
    first after it): the weight or band the dose is for."""
    if r.kind != "dose":
        return r
    earlier = [span for at, span in weights if at <= r.start]
    return replace(r, weight=earlier[-1] if earlier else weights[0][1])


#: Words that join the lower bound of a band to "less than" its upper one ("50 to less than
#: 80 ml/min", "50 tot minder dan 80", "từ 50 đến dưới 80").
_BAND_JOINS: Final = frozenset({"to", "tot", "đến", "tới", "-", "–"})


def _band_floor(tokens: Tokens, at: int) -> Decimal | None:
    """The lower bound of a band whose upper bound, at ``at``, follows "less than" / "minder
    dan" / "dưới": the number before the joining word ("50 to less than 80 ml/min"); ``None``
    when the bound stands alone ("less than 30 ml/min")."""
    k = _floor_at(tokens, at)
    return parse_number(tokens.words[k]) if k is not None else None


def _floor_at(tokens: Tokens, at: int, unit: str | None = None) -> int | None:
    """The token of the number that opens a band whose upper bound is at ``at``: before the
    joining word, over "less than" / "minder dan" / "dưới" ("50 to less than 80", "15 đến dưới
    25 kg") and over ``unit`` after it ("12 kg to 25 kg"); ``None`` when there is none."""
    words, kinds = tokens.words, tokens.kinds
    k = at - 1
    while k > 0 and k >= at - 2 and (words[k] in _BELOW or words[k] in ("than", "dan")):
        k -= 1
    if k < 1 or words[k] not in _BAND_JOINS:
        return None
    j = k - 2 if unit is not None and k >= 2 and words[k - 1] == unit else k - 1
    return j if kinds[j] == NUM else None


def _with_clearance(r: Reading, bands: list[tuple[int, Span]], before: Span | None) -> Reading:
    """A kidney-patient dose reading with the clearance stated last before it in its sentence
    (else the first after it, else one an earlier sentence or the question stated)."""
    if r.kind != "dose" or "renal" not in r.populations | r.conditions:
        return r
    earlier = [span for at, span in bands if at <= r.start]
    band = earlier[-1] if earlier else bands[0][1] if bands else before
    return replace(r, clearance=band)


def _normal_at(
    cues: list[tuple[int, int, Cue]], words: list[str], normal_words: Sequence[str]
) -> list[int]:
    """Where a "normal" word stands next to an organ condition ("kidneys work normally",
    "nieren werken normaal"), also when the word doubles as a qualifier ("normally" = usual)."""
    conds = [s for s, _, c in cues if c.kind == "cond"]
    if not conds:
        return []
    return [
        s
        for s, e, c in cues
        if (c.kind == "normal" or (c.kind == "qual" and " ".join(words[s:e]) in normal_words))
        and any(abs(s - k) <= 4 for k in conds)
    ]


def _topic_units(
    tokens: Tokens,
    clause: tuple[int, int],
    cues: list[tuple[int, int, Cue]],
    drugs: list[tuple[int, int, str]],
    language: str,
) -> frozenset[str]:
    """What a positive clause is about, without its cue phrases and drug names: "grapefruit
    juice" of "Grapefruit juice is fine with simvastatin" (as a passage's units, so that
    Vietnamese syllables count)."""
    lo, hi = clause
    skip = {k for s, e, _ in (*cues, *drugs) for k in range(s, e)}
    rest = [tokens.words[k] for k in range(lo, hi) if k not in skip and tokens.kinds[k] == WORD]
    return units_of(tokenize(" ".join(rest)), language, passage=True) if rest else frozenset()


def _compared(cues: list[tuple[int, int, Cue]], at: int, words: list[str]) -> bool:
    """Whether the population at token ``at`` follows a comparison ("the same as | an |
    adult") or an amount set aside ("lower than the starting dose of 5 mg | for adults"): it is
    what the statement is compared with."""
    return any(
        (
            c.kind == "cmp"
            and 0 <= at - e <= 2
            and all(words[k] in _ARTICLES or words[k] in _COMPARED for k in range(e, at))
        )
        or (c.kind == "instead" and 0 < at - e <= 5 and _amount_of(words, e, at))
        for _, e, c in cues
    )


def _amount_of(words: list[str], e: int, at: int) -> bool:
    """Only an amount and "of" between a set-aside phrase and a group: "lower than the starting
    dose of 5 mg for adults", "thấp hơn liều khởi đầu 5 mg của người lớn" (their dose)."""
    return all(
        words[k] in UNITS or words[k] in _OF_GROUP or _number(words[k]) is not None
        for k in range(e, at)
    )


#: Between a set-aside phrase and its amount: "the starting dose of 5 mg", "de dosis van".
_OF_AMOUNT: Final = frozenset({"of", "van", "của"})
#: Words between a set-aside amount and the group it is for ("5 mg of/for adults").
_OF_GROUP: Final = frozenset(
    {"of", "for", "in", "van", "voor", "bij", "của", "cho", "ở", "the", "de"}
)


#: Articles between a comparison and its population ("as an adult", "als de volwassenen").
_ARTICLES: Final = frozenset({"a", "an", "the", "de", "het", "een", "các", "những"})
#: Words that set the compared group apart ("than for younger adults", "dan bij jongere
#: volwassenen", "so với người trẻ hơn"), or make it any member of the group ("the same way
#: as any other adult", "net als elke volwassene"): the patient is compared with it.
_COMPARED: Final = frozenset(
    {
        "younger",
        "older",
        "other",
        "healthy",
        "any",
        "every",
        "ordinary",
        "jongere",
        "oudere",
        "andere",
        "gezonde",
        "elke",
        "iedere",
        "gewone",
        "khác",
        "mọi",
    }
)


def _negated_more(cues: list[tuple[int, int, Cue]]) -> list[tuple[int, int, Cue]]:
    """ "Should not take | more than 4 g", "mag niet | meer dan", "không được | cao hơn": a
    negative phrase or a negator (with a use verb or a modal after it) right before "more
    than" is a maximum, not an avoid."""
    out: list[tuple[int, int, Cue]] = []
    for s, e, cue in cues:
        if cue.kind == "more":
            if (
                out
                and out[-1][1] >= s - 1
                and (
                    out[-1][2].kind == "neg"
                    or (out[-1][2].kind == "pol" and out[-1][2].value in NEGATIVE)
                    or (
                        out[-1][2].kind in ("use", "modal", "modal_after")
                        and len(out) > 1
                        and out[-2][2].kind == "neg"
                    )
                )
            ):
                start = out[-1][0]
                out.pop()
                if out and out[-1][2].kind == "neg" and out[-1][1] >= start - 1:
                    start = out.pop()[0]
                out.append((start, e, Cue("qual", "max")))
            elif any(
                c.kind == "pol" and c.value in NEGATIVE and 0 <= s2 - e <= _MORE_THEN_NEGATIVE
                for s2, _, c in cues
            ):
                # "Dosages higher than 250 mg daily are not recommended", "Meer dan 4 gram per
                # dag wordt afgeraden": the negative after the amount makes it a maximum too
                out.append((s, e, Cue("qual", "max")))
            continue
        out.append((s, e, cue))
    return out


#: How far after "more than" a negative phrase may stand and make its amount a maximum.
_MORE_THEN_NEGATIVE: Final = 8


#: Words right before a time that make it a delay, no basis: "sau một tuần", "after a week",
#: "na een week" say when, not "per week" ("within 24 hours" is a day's basis).
_DELAYS: Final = frozenset({"after", "na", "sau"})
#: Words right before a time that make it no course length: a delay ("repeat after 2 weeks",
#: "na 2 weken", "sau 2 tuần"), a deadline ("within 3 days", "binnen 3 dagen", "trong vòng") or
#: a recurrence ("every 2 days", "om de 2 dagen", "mỗi 2 ngày").
_NOT_A_COURSE: Final = frozenset(
    {
        "after",
        "within",
        "every",
        "each",
        "na",
        "binnen",
        "elke",
        "iedere",
        "om",
        "sau",
        "vòng",
        "mỗi",
        "cách",
        "later",
        "ago",
        "last",
        "past",
        "afgelopen",
        "laatste",
        "vorige",
        "qua",
    }
)
#: Words right after a time that make it a stage of pregnancy, not a course ("in the first 3
#: months of pregnancy", "in de eerste drie maanden van de zwangerschap", "3 tháng đầu thai kỳ";
#: round 23).
_GESTATION: Final = frozenset({"pregnancy", "gestation", "zwangerschap", "thai"})
#: Words right after a time that make it a lead time, not a course ("start 1 or 2 days before
#: travel", "bắt đầu 2 ngày trước khi"): unless a course opener stands before it.
_LEAD: Final = frozenset({"before", "vóór", "trước", "prior"})
#: Words right before a time that make it how long, even with "after" behind it ("for 7 days
#: after leaving the area", "tot 2 dagen na het verdwijnen", "thêm 7 ngày sau khi").
_COURSE_OPENERS: Final = frozenset({"for", "gedurende", "tot", "trong", "thêm", "nog"})


def _opens_course(words: list[str], a: Amount) -> bool:
    """Whether a course opener stands before the time, over at most three words of a bound
    ("for at least 6 days", "gedurende ten minste 7 dagen")."""
    k = a.t0 - 1
    while k >= max(0, a.t0 - 4) and words[k] in _BOUND_WORDS:
        k -= 1
    return k >= 0 and words[k] in _COURSE_OPENERS


#: "for at least 6 days": words of a bound between the opener and the time.
_BOUND_WORDS: Final = frozenset(
    {"at", "least", "most", "up", "to", "minstens", "ten", "minste", "hoogste", "ít", "nhất"}
)

#: Words that open a condition: a time inside one is when to act, not how long to take the
#: drug ("if the diarrhoea lasts longer than 2 days", "als het na 3 dagen", "nếu sau 3 ngày").
_IF: Final = frozenset({"if", "when", "unless", "als", "indien", "wanneer", "nếu", "khi"})


def _duration(
    found: Sequence[Amount],
    cues: list[tuple[int, int, Cue]],
    words: list[str],
    lo: int,
    taken: set[int],
) -> tuple[Span, int, int] | None:
    """How long the course lasts (hours), with its token span: the times of a day or more
    that no interval, basis phrase or age used, outside a condition and not after a delay
    word; several make one range (6 to 12 weeks), a limit phrase right before one makes it a
    maximum or minimum ("no longer than 5 days", "không dùng quá 5 ngày")."""
    times = [
        a
        for a in found
        if ((a.unit == "h" and a.low >= _DAY) or a.unit == "month")
        and a.per_time is None
        and a.t0 not in taken
        and not (a.t0 > lo and words[a.t0 - 1] in _NOT_A_COURSE)
        and not (a.t1 < len(words) and words[a.t1] in _NOT_A_COURSE and not _opens_course(words, a))
        and not (a.t1 < len(words) and words[a.t1] in _LEAD and not _opens_course(words, a))
        and not _in_condition(words, lo, a.t0)
        and _GESTATION.isdisjoint(words[a.t1 : a.t1 + 3])
    ]
    if not times:
        return None
    span = Span(min(_hours(a)[0] for a in times), max(_hours(a)[1] for a in times))
    if len(times) == 1:
        limit = [c for s, e, c in cues if c.kind == "qual" and times[0].t0 - 3 <= e <= times[0].t0]
        if not limit:
            limit = _course_limit(cues, times[0].t0)
        if limit and limit[-1].value in ("max", "min"):
            span = _qualified(span, limit[-1].value)  # type: ignore[arg-type]
    return span, times[0].t0, times[-1].t1


#: How far a course noun may stand before its time ("duration | of oral treatment is | 5 days").
_COURSE_REACH: Final = 5


def _course_limit(cues: list[tuple[int, int, Cue]], t0: int) -> list[Cue]:
    """The limit of a course noun before the time at ``t0``: "the maximum duration of
    treatment is 5 days", "de maximale behandelduur is 5 dagen" (the limit right before the
    noun, the noun at most :data:`_COURSE_REACH` tokens before the time)."""
    nouns = [s for s, e, c in cues if c.kind == "course" and 0 <= t0 - e <= _COURSE_REACH]
    if not nouns:
        return []
    return [c for s, e, c in cues if c.kind == "qual" and any(0 <= n - e <= 1 for n in nouns)]


#: The days of a calendar month, shortest and longest: "3 months" is 12 to 13 weeks.
_MONTH_DAYS: Final = (Decimal(28), Decimal(31))


def _hours(a: Amount) -> tuple[Decimal, Decimal]:
    """A time in hours; a course in months spans the lengths its months can have ("for 3
    months" is 84 to 93 days), so "12 weeks" lies within it."""
    if a.unit == "month":
        return a.low * _MONTH_DAYS[0] * _DAY, a.high * _MONTH_DAYS[1] * _DAY
    return a.low, a.high


def _in_condition(words: list[str], lo: int, t: int) -> bool:
    """Whether a condition word opens the clause before token ``t``."""
    for k in range(t - 1, max(lo, t - 12) - 1, -1):
        if words[k] in _CLAUSE_BREAKS:
            return False
        if words[k] in _IF:
            return True
    return False


def _qualified(span: Span, qualifier: Qualifier | None) -> Span:
    if qualifier == "max":
        return replace(span, kind="max")
    if qualifier == "min":
        return replace(span, kind="min")
    return span


def _has_dose_cue(words: list[str], lo: int, hi: int, language: str) -> bool:
    key = " " + " ".join(words[lo:hi]) + " "
    return has_cue(key, DOSE_CUES.get(language, ()))


def _drug_source(
    inns: frozenset[str], stated: frozenset[str]
) -> Literal["stated", "context"] | None:
    """Whether a dose reading's drugs were named in its sentence or come from the context."""
    return "stated" if inns & stated and stated else ("context" if inns else None)


#: Words between an amount and the drug it is of: "20 mg of simvastatin", "20 mg van".
_OF: Final = frozenset({"of", "van", "the", "de", "het", "thuốc"})


def _drug_for(
    t: int, t1: int, drugs: list[tuple[int, int, str]], words: list[str]
) -> frozenset[str]:
    """The drug of the amount at tokens ``[t, t1)``: one written right after it ("20 mg of
    simvastatin", "10 mg loratadin"), else the last one before it, else the first after."""
    right = [inn for s, _, inn in drugs if t1 <= s <= t1 + 2 and _OF.issuperset(words[t1:s])]
    if right:
        return frozenset({right[0]})
    before = [inn for s, _, inn in drugs if s < t]
    if before:
        return frozenset({before[-1]})
    after = [inn for s, _, inn in drugs if s > t]
    return frozenset({after[0]}) if after else frozenset()


def _at_once(a: Amount, items: list[_Item]) -> bool:
    """ "uống một lần 1 g", "1 keer 2 tabletten": one time, with no period, right before a dose
    amount is that amount taken at once (per dose); the amount gets the basis."""
    if a.low != 1 or a.high != 1 or a.per_time is not None:
        return False
    nxt = next((it for it in items if it.kind == "amount" and 0 <= it.t0 - a.t1 <= 2), None)
    if nxt is None or nxt.basis is not None:
        return False
    nxt.basis = "dose"
    return True


def _frequency_of(a: Amount, cues: list[tuple[int, int, Cue]], taken: set[int]) -> Span | None:
    """Doses per day of "3 times a day", "3 keer per dag", "2 lần/ngày", "ngày 2 lần"."""
    if a.per_time is not None:
        factor = _DAY / a.per_time
        return Span(a.low * factor, a.high * factor)
    day = _day_basis_after(cues, a.t1, taken)
    if day is not None:
        taken.add(day)
        factor = _per_day(cues[day][2])
        return Span(a.low * factor, a.high * factor)
    for k, (_s, e, cue) in enumerate(cues):
        if k in taken and cue.kind == "basis" and cue.value == "day":
            if e == a.t0:  # "500 mg mỗi ngày 2 lần": each day, twice (round 27)
                return Span(a.low, a.high)
            continue
        if k in taken:
            continue
        if (cue.kind == "dayword" or (cue.kind == "basis" and cue.value == "day")) and (
            a.t0 - 3 <= e <= a.t0
        ):
            taken.add(k)
            return Span(a.low, a.high)
        if (cue.kind == "month" or (cue.kind == "basis" and cue.value == "week")) and (
            a.t0 - 3 <= e <= a.t0
        ):  # "mỗi tháng 1 lần", "mỗi tuần 3 lần" (round 27)
            taken.add(k)
            return Span(a.low * _per_day(cue), a.high * _per_day(cue))
    return None


#: Doses a day of a dose every other day, and every other week.
_HALF_A_DAY: Final = Decimal("0.5")
_FORTNIGHT: Final = _DAY / Decimal(336)
#: Doses a day of the phrases of weeks that say how often (round 27).
_WEEKS: Final = {
    "fortnight": Span(_FORTNIGHT, _FORTNIGHT),
    "weekly": Span(_DAY / Decimal(168), _DAY / Decimal(168)),
}


def _alternate_once(a: Amount, cues: list[tuple[int, int, Cue]]) -> bool:
    """ "cách ngày uống một lần", "once, every other day": a count of one right after (up to
    two words) or right before an every-other-day phrase is that phrase's own, no frequency."""
    if a.low != 1 or a.high != 1 or a.per_time is not None:
        return False
    return any(
        c.kind == "freq" and c.value == "alternate" and (0 <= a.t0 - e <= 2 or 0 <= s - a.t1 <= 1)
        for s, e, c in cues
    )


def _interval_of(a: Amount, cues: list[tuple[int, int, Cue]]) -> Span | None:
    """Doses per day of "every 4 to 6 hours" (4–6), "at least 4 hours between doses" (max 6)."""
    before = [
        c for s, e, c in cues if e <= a.t0 and a.t0 - e <= 2 and c.kind in ("ivl_before", "qual")
    ]
    after = [c for s, e, c in cues if s == a.t1 and c.kind == "ivl_after"]
    interval = any(c.kind == "ivl_before" for c in before) or bool(after)
    if not interval or a.low <= 0 or a.high > _LONGEST_INTERVAL:
        return None
    if any(c.kind == "qual" and c.value == "min" for c in before):
        return Span(Decimal(0), _DAY / a.low, "max")
    return Span(_DAY / a.high, _DAY / a.low)


#: Words that may link an amount to a limit named after it ("20 mg is the ceiling", "40 mg
#: is het maximum", "20 mg là mức tối đa"): copulas, articles and possessives.
_LIMIT_LINKS: Final = frozenset(
    {
        *("is", "was", "be", "will", "the", "your", "its", "that", "this", "s", "re"),
        *("is", "de", "het", "uw", "dat", "dit", "daarmee"),
        *("là", "mức", "liều", "đó", "này", "chính"),
    }
)


#: What ends the stretch of words a titration verb reaches: punctuation, and the words that
#: join another clause or step ("Start with 5 mg and raise it", "begin met 5 mg en verhoog");
#: not Dutch "dan", which is also "than" ("niet sneller dan eens per week").
_STEP_BREAKS: Final = {
    "en": frozenset({",", ";", ":", "(", ")", "and", "or", "then", "but"}),
    "nl": frozenset({",", ";", ":", "(", ")", "en", "of", "daarna", "maar"}),
    "vi": frozenset({",", ";", ":", "(", ")", "và", "hoặc", "rồi", "nhưng", "sau"}),
}


def _linked(words: Sequence[str], i: int, j: int, breaks: frozenset[str]) -> bool:
    """Whether no clause break stands between tokens ``i`` and ``j``."""
    return breaks.isdisjoint(words[i:j])


def _step_size(
    it: _Item,
    words: Sequence[str],
    lo: int,
    verbs: list[tuple[int, int]],
    steps: Titration,
    quals: list[tuple[int, int]],
    breaks: frozenset[str],
) -> bool:
    """Whether the amount ``it`` is the size of a step: a word of ``steps.after`` right after
    it ("2 mg erbij"), or a word of ``steps.by`` right before it (a limit word between: "met
    hoogstens 5 mg") with a titration verb in the same stretch ("raise it by 100 mg", "met
    5 mg per week omhoog") or as that word ("add 2 mg", "tăng 5 mg")."""
    if any(tuple(words[it.t1 : it.t1 + len(p)]) == p for p in steps.after_tokens):
        return True
    j = it.t0
    while (q := next((s for s, e in quals if e == j), None)) is not None:
        j = q
    for p in steps.by_tokens:
        m = j - len(p)
        if m < lo or tuple(words[m:j]) != p:
            continue
        for s, e in verbs:
            # the verb may stand before a comma: "adjusts the dose, usually by 0.5 to 1.5 mg"
            if (s, e) == (m, j) or (e <= m and _linked(words, e, m, breaks - {","})):
                return True
            if s >= it.t1 and _linked(words, it.t1, s, breaks):
                return True
    return False


#: Hours in a month, for the pace of steps given in months ("at intervals of one or two
#: months").
_MONTH_HOURS: Final = Decimal(720)


def _step_paces(
    found: Sequence[Amount], cues: list[tuple[int, int, Cue]], taken: set[int]
) -> list[_Item]:
    """In a sentence that raises a dose: times of a day or more after an interval word ("at
    intervals of one or two months", "every 2 to 4 weeks", "om de 2 weken"), longer than a
    dose's interval can be, as how often a step is taken (doses per day: steps per day)."""
    # marked a step already: used only as a pace, never as a dose's frequency
    return [replace(it, step=True) for it in _long_intervals(found, cues, taken)]


def _long_intervals(
    found: Sequence[Amount], cues: list[tuple[int, int, Cue]], taken: set[int]
) -> list[_Item]:
    """Times longer than a week right after an interval word ("every 3 months", "om de 6
    weken", "mỗi 26 tuần", "once every two weeks") or right before one ("2 tuần một lần"), as
    doses per day (rounds 26 and 27)."""
    out: list[_Item] = []
    for a in found:
        if a.t0 in taken or a.unit not in ("h", "month") or a.low <= 0:
            continue
        scale = _MONTH_HOURS if a.unit == "month" else _ONE_HOUR
        low, high = a.low * scale, a.high * scale
        if high <= _LONGEST_INTERVAL:
            continue  # a day to a week: read as an interval already, where it is one
        before = any(c.kind == "ivl_before" and e <= a.t0 and a.t0 - e <= 2 for _, e, c in cues)
        # "2 tuần một lần", "6 weeks apart": the interval word after it (round 27)
        after = any(c.kind == "ivl_after" and s == a.t1 for s, _, c in cues)
        if before or after:
            out.append(_Item("freq", a.t0, a.t1, Span(_DAY / high, _DAY / low)))
    return out


def _steps(
    items: list[_Item],
    cues: list[tuple[int, int, Cue]],
    words: Sequence[str],
    lo: int,
    verbs: list[tuple[int, int]],
    steps: Titration,
    breaks: frozenset[str],
    used: set[int],
    taken: set[int],
) -> tuple[list[_Item], list[_Item], list[tuple[int, int, Cue]]]:
    """A sentence that raises a dose step by step (round 25): "Your doctor can raise it by 100
    mg every 1 to 2 days, up to 600 mg three times daily", "daarna telkens 2 mg erbij, niet
    sneller dan eens per week", "step the dose up at weekly intervals, to a ceiling of 10 mg
    three times a day". The size of a step (:func:`_step_size`) is no dose, and the pace of the
    steps (a frequency of less than once a day, or a weekly basis, that does not follow a dose
    of the sentence) is no frequency or basis of one: they become steps, compared only with the
    passages' steps, and their numbers are left to the number check as well (they must be among
    the passages'). A limit word right before the pace is the pace's ("at least a week apart"),
    not the next dose's. The targets and ceilings ("up to 600 mg three times daily") are read
    as before. Returns the items kept, the steps (a size with its pace, or a pace alone) and
    the cues the qualifiers are read from."""
    quals = [(s, e) for s, e, c in cues if c.kind == "qual"]
    sizes = [
        it
        for it in items
        if it.kind == "amount" and _step_size(it, words, lo, verbs, steps, quals, breaks)
    ]
    doses = [it for it in items if it.kind == "amount" and not any(it is z for z in sizes)]

    def after_dose(t: int) -> bool:
        return any(a.t1 <= t <= a.t1 + 3 and _linked(words, a.t1, t, breaks) for a in doses)

    pace = [
        it
        for it in items
        if it.kind == "freq"
        and it.span.high <= _ONCE_A_DAY
        and it.span.low < _ONCE_A_DAY
        and not after_dose(it.t0)
    ]
    # a long pace after a dose ("150 mg every 3 months") is no pace, and no frequency either
    # (read only for steps: :func:`_step_paces`)
    items = [
        it for it in items if not (it.step and it.kind == "freq") or any(it is p for p in pace)
    ]
    weekly: list[tuple[int, int]] = []
    for k, (s, e, c) in enumerate(cues):
        if c.kind == "basis" and c.value == "week" and k not in taken and not after_dose(s):
            taken.add(k)
            weekly.append((s, e))
    if not sizes and not pace and not weekly:
        return items, [], cues
    paced = [(it.t0, it.t1) for it in pace] + weekly
    limits = {
        k
        for k, (s, e, c) in enumerate(cues)
        if c.kind == "qual" and any(0 <= ps - e <= 2 for ps, _ in paced)
    }
    raising: list[_Item] = []
    free = list(pace)
    # the pace may stand after a comma: "telkens 2 mg erbij, niet sneller dan eens per week"
    reach = breaks - {","}
    for it in sizes:
        it.step, it.basis, it.qualifier = True, None, None
        every = it.amount.per_time if it.amount is not None else None
        if every is not None and every > _DAY:
            # "met 5 mg per week omhoog" (a step a week); "wekelijks met 5 mg per dag" is a
            # step of the day's amount, taken weekly
            it.frequency = Span(_DAY / every, _DAY / every)
        near = [p for p in free if _linked(words, min(p.t1, it.t1), max(p.t0, it.t0), reach)]
        if it.frequency is None and near:
            nearest = min(near, key=lambda p: abs(p.t0 - it.t1))
            it.frequency = nearest.span
            free.remove(nearest)
        elif it.frequency is None and any(
            _linked(words, min(e, it.t1), max(s, it.t0), reach) for s, e in weekly
        ):
            it.frequency = Span(_DAY / _WEEK, _DAY / _WEEK)
        raising.append(it)
    if not sizes:
        for p in free:
            p.step = True
            raising.append(p)
        if not pace and weekly:
            s, e = weekly[0]
            raising.append(_Item("freq", s, e, Span(_DAY / _WEEK, _DAY / _WEEK), step=True))
    for it in [*sizes, *pace]:
        used.difference_update(range(it.t0, it.t1))
    kept = [it for it in items if not any(it is d for d in (*sizes, *pace))]
    return kept, raising, [c for k, c in enumerate(cues) if k not in limits]


def _apply_qualifiers(
    items: list[_Item],
    cues: list[tuple[int, int, Cue]],
    words: Sequence[str],
    kinds: Sequence[int] = (),
) -> None:
    """Each qualifier phrase applies to the next item within 8 tokens after it; a limit (max /
    min) is not undone by a "usual" or "start" word after it. A starting phrase with no item
    after it applies to the amount just before it ("20 mg once a day from the start"); a limit
    with no item after it, to an amount that only a copula (and the amount's basis) links to
    it ("20 mg a day is the ceiling", "40 mg is het maximum", "20 mg là mức tối đa"). A
    qualifier does not reach across the next step of a schedule: in "2 capsules at first, then
    1 capsule after each loose stool" the starting phrase has no item after it. Nor across a
    number of its own: in "children up to 12 years weighing less than 50 kg: 50 to 80 mg/kg"
    the limit is the age's, and the dose is no maximum."""
    steps = [s for s, _, c in cues if c.kind == "then"]
    changed = {e for _, e, c in cues if c.kind == "change"}
    for s, e, cue in cues:
        if cue.kind != "qual":
            continue
        if cue.value == "max" and s in changed:
            continue  # "verlaagd tot 250 mg", "be reduced to 250 mg": the new dose (round 27)
        nxt = next((it for it in items if it.t0 >= e and it.t0 - e <= 8), None)
        if nxt is not None and nxt.kind == "freq" and cue.value in ("start", "usual"):
            # "de eerste twee weken eenmaal daags 400 mg": the dose after its frequency
            dose = next((it for it in items if it.kind == "amount" and 0 <= it.t0 - e <= 8), None)
            nxt = dose or nxt
        if nxt is not None and NUM in kinds[e : nxt.t0]:
            continue  # "up to 12 years …: 50 mg/kg": the number right after is what it limits
        if steps and nxt is not None and any(e <= t < nxt.t0 for t in steps):
            nxt = None
        if nxt is None and cue.value == "start":
            before = [it for it in items if it.kind == "amount" and it.t1 <= s and s - it.t1 <= 8]
            if before and before[-1].qualifier is None:
                before[-1].qualifier = "start"
            continue
        if nxt is None and cue.value in ("max", "min"):
            basis = {t for bs, be, c in cues if c.kind == "basis" for t in range(bs, be)}
            linked = [
                it
                for it in items
                if it.kind == "amount"
                and it.t1 <= s
                and all(words[t] in _LIMIT_LINKS or t in basis for t in range(it.t1, s))
            ]
            if linked and linked[-1].qualifier is None:
                linked[-1].qualifier = cue.value  # type: ignore[assignment]
                linked[-1].span = _qualified(linked[-1].span, linked[-1].qualifier)
            continue
        if nxt is None:
            continue
        if nxt.kind == "amount":
            if nxt.qualifier in ("max", "min") and cue.value in ("usual", "start"):
                continue  # "the maximum recommended dose": a limit, whatever word follows
            nxt.qualifier = cue.value  # type: ignore[assignment]
        elif cue.value in ("max", "min") and nxt.span.kind == "exact":
            if cue.value == "max":
                nxt.span = Span(Decimal(0), nxt.span.high, "max")
            else:
                nxt.span = Span(nxt.span.low, nxt.span.low, "min")


def _apply_parentheses(items: list[_Item], words: list[str]) -> None:
    """ "6 tablets (3,000 mg) per 24 hours": the amount in brackets restates the one before, so
    they share qualifier and basis."""
    amounts = [it for it in items if it.kind == "amount"]
    for before, inner in itertools.pairwise(amounts):
        if words[before.t1 : inner.t0] == ["("]:
            inner.qualifier = inner.qualifier or before.qualifier
            inner.basis = inner.basis or before.basis
            before.basis = before.basis or inner.basis
            if inner.qualifier in ("max", "min") and inner.span.kind == "exact":
                inner.span = _qualified(inner.span, inner.qualifier)


def _bracket_head(before: list[_Item], words: list[str], at: int) -> _Item:
    """The amount a frequency at ``at`` is said of, among the amounts ``before`` it: the last,
    unless a bracket closes after it, and then the amount right before that bracket ("200 mg
    (2 tabletten van 100 mg) driemaal per week": the 200 mg, not the tablets' strength)."""
    last = before[-1]
    if ")" not in words[last.t1 : at]:
        return last
    opener = next((k for k in range(last.t0 - 1, -1, -1) if words[k] == "("), None)
    outside = [a for a in before if opener is not None and a.t1 == opener]
    return outside[0] if outside else last


def _share_in_parentheses(amounts: list[_Item], words: list[str]) -> None:
    """ "5 mg (5 ml syrup) once a day": the amount in brackets and the one before it are one
    dose, so a frequency read for either is the other's too."""
    for before, inner in itertools.pairwise(amounts):
        if words[before.t1 : inner.t0] == ["("]:
            frequency = before.frequency or inner.frequency
            before.frequency = inner.frequency = frequency
            before.basis = before.basis or inner.basis
            inner.basis = inner.basis or before.basis


#: How many tokens may stand between a basis phrase and the amount it leads into ("in totaal
#: dus 75 mg").
_LEAD_IN: Final = 2


def _apply_basis(
    items: list[_Item], cues: list[tuple[int, int, Cue]], taken: set[int], words: list[str]
) -> None:
    """An amount's basis from a basis phrase right after it, else one before it. A phrase
    after a comma that leads into the next amount is that amount's ("drie keer per dag 25 mg,
    in totaal dus 75 mg per dag": the total is the day's, not the 25 mg)."""
    amounts = [it for it in items if it.kind == "amount"]
    for n, it in enumerate(amounts):
        if it.basis is not None:
            continue
        limit = amounts[n + 1].t0 if n + 1 < len(amounts) else None
        after = [
            (k, c)
            for k, (s, e, c) in enumerate(cues)
            if c.kind == "basis"
            and k not in taken
            and it.t1 <= s <= it.t1 + 4
            and (limit is None or s < limit)
            and not (limit is not None and limit - e <= _LEAD_IN and "," in words[it.t1 : s])
        ]
        if after:
            k, c = after[0]
            taken.add(k)
            it.basis = c.value  # type: ignore[assignment]
            continue
        floor = amounts[n - 1].t1 if n > 0 else -1
        before = [
            (k, c)
            for k, (s, e, c) in enumerate(cues)
            if c.kind == "basis" and k not in taken and floor <= s and e <= it.t0 and it.t0 - e <= 6
        ]
        if before:
            k, c = before[-1]
            taken.add(k)
            it.basis = c.value  # type: ignore[assignment]
