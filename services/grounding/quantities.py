"""Numbers with units, normalised so that equal amounts compare equal (SPEC §5).

``500 mg`` = ``500mg``; ``2,5 mg`` = ``2.5 mg``; ``4 g`` = ``4000 mg``; ``1 g`` = ``1000 mg``;
``250 microgram`` = ``0.25 mg``; ``4 uur`` = ``4 hours`` = ``240 minutes``; ``5 %`` =
``5 procent``. Every quantity is converted to a base unit per dimension (``mg``, ``ml``, ``IU``,
``h``, ``%``, ``tablet``, ``times``, ``month``) and compared as an exact :class:`~decimal.Decimal`.

Decisions worth knowing:

- **Separators.** ``2,5`` and ``2.5`` are both 2.5. A single separator followed by exactly three
  digits after a 1–3 digit integer part not starting with 0 (``1,000`` / ``1.000``) is a
  thousands separator when it is the language's grouping mark (``,`` in English and unknown
  languages, ``.`` in Dutch and Vietnamese) and a decimal mark otherwise. With both marks, the
  last is the decimal mark. Anything else (``1.2.3``) is not a number.
- **Ranges** (``500-1000 mg``, ``4 tot 6 uur``, ``1 or 2 tablets``, ``between 25 and 150 mg``)
  give both ends the unit.
- **Number words** one..twelve (en/nl/vi), and the teens and tens in English and Dutch (``forty``,
  ``vijfentwintig``), count only when a unit follows (``two tablets``, ``forty milligrams``).
- **Per-kilogram and concentration units** keep their denominator (``15 mg/kg``, ``120 mg/5 ml``
  = ``24 mg/ml``; ``2 mg per kilogram of body weight`` = ``2 mg/kg``); a time denominator
  (``4 g/day``, ``4 g per dag``, ``mg/kg/ngày``) and a per-dose one (``500 mg per keer``) are
  dropped from the key, so ``4 g/day`` equals ``4 g``, but kept on the :class:`Amount`
  (``per_time``, ``per_dose``) for the medical reading, which needs the basis.
- **Bare numbers** (no unit) are kept with unit ``""``; a number glued to letters (``B12``,
  ``COVID-19``, ``1st``) is not a quantity.

Scanning works on the tokens of :mod:`~services.grounding.tokens` (one linear pass, then dict
lookups per token); the unit table is data in this module. :data:`QUANTITY_PATTERN` is the same
idea as an RE2 pattern, for the extractor packs.
"""

from __future__ import annotations

import itertools
import operator
import unicodedata
from collections.abc import Iterable
from dataclasses import dataclass, replace
from decimal import Decimal, InvalidOperation
from typing import Final

import re2

from services.grounding.tokens import NUM, SYM, WORD, PhraseMatcher, Tokens, phrase_tokens, tokenize

__all__ = [
    "QUANTITY_PATTERN",
    "UNITS",
    "Amount",
    "Quantity",
    "UnitInfo",
    "amounts",
    "flatten",
    "format_decimal",
    "parse_number",
    "parse_value",
    "quantities",
    "word_numbers",
]


@dataclass(frozen=True, slots=True)
class UnitInfo:
    """A unit as written: its base unit, the factor to the base unit, and its display symbol."""

    base: str
    factor: Decimal
    symbol: str


#: Every recognised unit: ``base factor symbol | spelling | spelling ...`` (lower case). Sources:
#: SI symbols and the spellings in English, Dutch and Vietnamese patient leaflets.
_UNIT_TABLE: Final = """
mg 1000000 kg | kg | kgs | kilo | kilos | kilogram | kilograms | kilogramme | kilogrammes | kilogam
mg 1000 g | g | gr | gram | grams | gramme | grammes | gam
mg 1 mg | mg | milligram | milligrams | milligramme | miligam
mg 0.001 mcg | mcg | µg | μg | ug | microgram | micrograms | microgam
ml 1000 l | l | liter | liters | litre | litres | lít
ml 100 dl | dl
ml 10 cl | cl
ml 1 ml | ml | milliliter | milliliters | millilitre | mililít | mililit
IU 1 IU | iu | i.u. | ie | e | units | unit | eenheden | eenheid | đơn vị
IU 1000000 MIU | miu | mui
h 1 hours | h | hr | hrs | hour | hours | uur | uren | giờ | tiếng
h 1/60 minutes | min | mins | minute | minutes | minuut | minuten | phút
h 1/3600 seconds | sec | secs | seconds | seconde | seconden | giây
h 24 days | day | days | dag | dagen | ngày | night | nights | nacht | nachten | đêm
h 168 weeks | week | weeks | weken | tuần
month 1 months | month | months | maand | maanden | tháng
% 1 % | % | percent | per cent | procent | phần trăm
tablet 1 tablets | tablet | tablets | tabletten | tabl | tab | tabs | pill | pills | pil | pillen
tablet 1 tablets | capsule | capsules | caps | viên | zetpil | zetpillen
tablet 1 tablets | suppository | suppositories
puff 1 puffs | puff | puffs | inhalation | inhalations | pufje | pufjes | nhát
puff 1 puffs | inhalatie | inhalaties | actuation | actuations | verstuiving | verstuivingen
puff 1 puffs | spray | sprays
sachet 1 sachets | sachet | sachets | zakje | zakjes | gói
drop 1 drops | drop | drops | druppel | druppels | giọt
times 1 times | times | time | x | × | keer | maal | lần
"""


def _parse_units(table: str) -> dict[str, UnitInfo]:
    units: dict[str, UnitInfo] = {}
    for line in filter(None, map(str.strip, table.splitlines())):
        head, *aliases = (part.strip() for part in line.split("|"))
        base, factor, symbol = head.split()
        numerator, _, denominator = factor.partition("/")
        value = Decimal(numerator) / Decimal(denominator or 1)
        for alias in aliases:
            if alias in units:
                raise ValueError(f"unit spelling {alias!r} listed twice")
            units[alias] = UnitInfo(base, value, symbol)
    return units


UNITS: Final[dict[str, UnitInfo]] = _parse_units(_UNIT_TABLE)

#: Denominators kept in the unit (per body weight, per volume) → (base, factor).
_KEPT_DENOMINATORS: Final[dict[str, tuple[str, Decimal]]] = {
    "kg": ("kg", Decimal(1)),
    "kilogram": ("kg", Decimal(1)),
    "kilo": ("kg", Decimal(1)),
    "kilogam": ("kg", Decimal(1)),
    "ml": ("ml", Decimal(1)),
    "l": ("ml", Decimal(1000)),
    "liter": ("ml", Decimal(1000)),
}
#: Words after a per-kg denominator that only say it is body weight ("mg per kilogram of body
#: weight", "mg/kg lichaamsgewicht", "mg/kg cân nặng").
_BODY_WEIGHT: Final = (
    ("of", "body", "weight"),
    ("body", "weight"),
    ("bodyweight",),
    ("lichaamsgewicht",),
    ("cân", "nặng"),
    ("thể", "trọng"),
)
#: Denominators that make an amount a single dose ("500 mg per dose", "per keer", "mỗi lần").
_DOSE_DENOMINATORS: Final = frozenset(
    {"dose", "dosis", "keer", "gift", "inname", "lần", "liều", "time", "administration"}
)
#: Words that open a denominator: ``/``, ``per``, ``mỗi``.
_PER: Final = frozenset({"/", "per", "mỗi"})
#: Range connectors between two numbers (``4-6``, ``4 to 6``, ``4 tot 6``, ``4 đến 6``).
_CONNECTORS: Final = frozenset({"-", "–", "—", "to", "tot", "or", "of", "à", "hoặc", "đến", "tới"})
_DAY_HOURS: Final = Decimal(24)

_WORDS_1_TO_12: Final = {
    "en": "one two three four five six seven eight nine ten eleven twelve",
    "nl": "een twee drie vier vijf zes zeven acht negen tien elf twaalf",
    "vi": "một hai ba bốn năm sáu bảy tám chín mười",
}
#: Teens and tens written as one word (English, Dutch), 13..19 then 20, 30, ... 90.
_TEENS_AND_TENS: Final = {
    "en": (
        "thirteen fourteen fifteen sixteen seventeen eighteen nineteen",
        "twenty thirty forty fifty sixty seventy eighty ninety",
    ),
    "nl": (
        "dertien veertien vijftien zestien zeventien achttien negentien",
        "twintig dertig veertig vijftig zestig zeventig tachtig negentig",
    ),
}


def _dutch_compounds() -> dict[str, int]:
    """Dutch writes 21..99 and the hundreds as one word: "vijfentwintig", "tweeëntwintig",
    "honderd", "tweehonderd"."""
    units = _WORDS_1_TO_12["nl"].split()[:9]
    tens = _TEENS_AND_TENS["nl"][1].split()
    out: dict[str, int] = {}
    for t, ten in enumerate(tens, start=2):
        for u, unit in enumerate(units, start=1):
            joint = "ën" if unit.endswith("e") else "en"
            out[f"{'een' if u == 1 else unit}{joint}{ten}"] = t * 10 + u
    out["honderd"] = 100
    out.update({f"{unit}honderd": u * 100 for u, unit in enumerate(units, start=1) if u > 1})
    return out


def _more_words() -> dict[str, tuple[int, str]]:
    out: dict[str, tuple[int, str]] = {}
    for lang, (teens, tens) in _TEENS_AND_TENS.items():
        out.update({w: (n, lang) for n, w in enumerate(teens.split(), start=13)})
        out.update({w: (n * 10, lang) for n, w in enumerate(tens.split(), start=2)})
    out.update({w: (n, "nl") for w, n in _dutch_compounds().items()})
    return out


_MORE_WORDS: Final = _more_words()
#: Number words (en, nl, vi: one..twelve; en, nl: the teens and tens, Dutch 21..99 and the
#: hundreds); they count only when a space and a unit follow, and only in their own language
#: (or when the language is unknown): "Bax" is not "ba x", "forty milligrams" is 40 mg.
NUMBER_WORDS: Final[dict[str, int]] = {
    "één": 1,
    **{w: n for line in _WORDS_1_TO_12.values() for n, w in enumerate(line.split(), start=1)},
    **{w: n for w, (n, _) in _MORE_WORDS.items()},
}
_WORD_LANGUAGE: Final[dict[str, str]] = {
    "één": "nl",
    **{w: lang for lang, line in _WORDS_1_TO_12.items() for w in line.split()},
    **{w: lang for w, (_, lang) in _MORE_WORDS.items()},
}


#: Vietnamese writes numbers above ten in several words: "mười lăm" 15, "hai mươi" 20, "hai
#: mươi mốt" 21, "ba mươi tư" 34, "hai trăm năm mươi" 250, "một nghìn" 1,000. After "mười" and
#: "mươi" a five is "lăm" (or "nhăm"), never "năm", which there is a year ("mười năm" is ten
#: years); after "mươi" a one is "mốt" and a four may be "tư".
_VI_DIGITS: Final = {w: n for n, w in enumerate(_WORDS_1_TO_12["vi"].split()[:9], start=1)}
_VI_AFTER_TEN: Final = {**{w: n for w, n in _VI_DIGITS.items() if w != "năm"}, "lăm": 5, "nhăm": 5}
_VI_AFTER_TENS: Final = {**_VI_AFTER_TEN, "mốt": 1, "tư": 4}
_VI_TENS: Final = frozenset({"mươi", "chục"})
_VI_ZERO_TENS: Final = frozenset({"lẻ", "linh"})
_VI_THOUSAND: Final = frozenset({"nghìn", "ngàn"})


def _vi_below_hundred(words: list[str], i: int) -> tuple[int, int] | None:
    """``(value, stop)`` of a Vietnamese number below 100 written from ``words[i]``."""
    n = len(words)
    w = words[i]
    if w == "mười":
        if i + 1 < n and words[i + 1] in _VI_AFTER_TEN:
            return 10 + _VI_AFTER_TEN[words[i + 1]], i + 2
        return 10, i + 1
    if w not in _VI_DIGITS:
        return None
    if i + 1 < n and words[i + 1] in _VI_TENS:
        tens = _VI_DIGITS[w] * 10
        if i + 2 < n and words[i + 2] in _VI_AFTER_TENS:
            return tens + _VI_AFTER_TENS[words[i + 2]], i + 3
        return tens, i + 2
    return _VI_DIGITS[w], i + 1


def _vi_below_thousand(words: list[str], i: int) -> tuple[int, int] | None:
    """``(value, stop)`` of a Vietnamese number below 1,000 ("hai trăm năm mươi", "một trăm
    lẻ năm"): after "trăm" only tens or "lẻ"/"linh" and a digit continue it, so "hai trăm
    năm" stays 200 (and a year)."""
    first = _vi_below_hundred(words, i)
    if first is None:
        return None
    value, k = first
    n = len(words)
    if not (value < 10 and k < n and words[k] == "trăm"):
        return value, k
    value, k = value * 100, k + 1
    if k + 1 < n and words[k] in _VI_ZERO_TENS and words[k + 1] in _VI_DIGITS:
        return value + _VI_DIGITS[words[k + 1]], k + 2
    rest = _vi_below_hundred(words, k) if k < n else None
    if rest is not None and rest[0] >= 10:
        return value + rest[0], rest[1]
    return value, k


def _vi_number(words: list[str], i: int) -> tuple[Decimal, int] | None:
    """``(value, stop)`` of a Vietnamese number of more than one word from ``words[i]``
    ("mười hai" 12, "ba mươi" 30, "hai nghìn năm trăm" 2,500); ``None`` for one word (which
    :data:`NUMBER_WORDS` reads) or none."""
    first = _vi_below_thousand(words, i)
    if first is None:
        return None
    value, k = first
    n = len(words)
    if k < n and words[k] in _VI_THOUSAND and value < 1000:
        value, k = value * 1000, k + 1
        rest = _vi_below_thousand(words, k) if k < n else None
        if rest is not None and rest[0] >= 100:
            value, k = value + rest[0], rest[1]
    return (Decimal(value), k) if k > i + 1 else None


def _alternation(words: Iterable[str]) -> str:
    items = sorted(words, key=lambda w: (-len(w), w))
    return "|".join(re2.escape(w).replace(r"\ ", r"\s+") for w in items)


#: Words before a number word that make it "the same one" ("cùng một giờ", "cùng một lúc"):
#: no count.
_SAME: Final = frozenset({"cùng"})
_NUM = r"\d+(?:[.,]\d+)*"
_WORDNUM = _alternation(NUMBER_WORDS)
#: A number (or number word) with a unit, without groups: ``{quantity}`` in extractor patterns.
QUANTITY_PATTERN: Final = rf"(?:{_NUM}|{_WORDNUM})\s*(?:{_alternation(UNITS)})"
#: Languages whose grouping mark is ``.`` (and decimal mark ``,``).
_DOT_GROUPING: Final = frozenset({"nl", "vi", "de", "fr", "es", "it", "pt", "id"})
_SIX_PLACES: Final = Decimal("0.000001")


def format_decimal(value: Decimal) -> str:
    """``Decimal`` without exponent or trailing zeros: ``4000``, ``2.5``, ``0.001``."""
    text = format(value.normalize(), "f")
    return "0" if text in {"-0", ""} else text


def parse_number(text: str, language: str | None = None) -> Decimal | None:
    """Parse a written number (``2,5``, ``1.000``, ``1,234.5``); ``None`` when it is not one.

    >>> parse_number("2,5"), parse_number("2.5"), parse_number("1,000"), parse_number("1.000")
    (Decimal('2.5'), Decimal('2.5'), Decimal('1000'), Decimal('1.000'))
    >>> parse_number("1.000", "nl"), parse_number("1.2.3")
    (Decimal('1000'), None)
    """
    lowered = text.lower()
    if lowered in NUMBER_WORDS:
        return Decimal(NUMBER_WORDS[lowered])
    dots, commas = text.count("."), text.count(",")
    try:
        if not dots and not commas:
            return Decimal(text)
        if dots and commas:
            decimal_mark = "." if text.rfind(".") > text.rfind(",") else ","
            group_mark = "," if decimal_mark == "." else "."
            if text.count(decimal_mark) != 1:
                return None
            whole, frac = text.split(decimal_mark)
            return Decimal(_ungroup(whole, group_mark) + "." + frac) if _grouped(whole) else None
        mark = "." if dots else ","
        parts = text.split(mark)
        if len(parts) > 2:
            return Decimal("".join(parts)) if _grouped(text, mark) else None
        whole, frac = parts
        grouping = "." if (language or "").split("-")[0].lower() in _DOT_GROUPING else ","
        if mark == grouping and len(frac) == 3 and 1 <= len(whole) <= 3 and whole[0] != "0":
            return Decimal(whole + frac)
        return Decimal(whole + "." + frac)
    except InvalidOperation:
        return None


def _grouped(text: str, mark: str | None = None) -> bool:
    parts = text.replace(",", ".").split(".") if mark is None else text.split(mark)
    return 1 <= len(parts[0]) <= 3 and all(len(p) == 3 for p in parts[1:])


def _ungroup(text: str, mark: str) -> str:
    return text.replace(mark, "")


@dataclass(frozen=True, slots=True)
class Quantity:
    """A number with its unit normalised to the base unit of its dimension.

    ``key`` (``"4000 mg"``, ``"6 h"``, ``"1844"``) is what grounding compares; ``display``
    (``"4 g"``, ``"6 hours"``) is the registry form: the number as written, the unit's symbol.
    """

    value: Decimal
    unit: str
    written: Decimal
    display: str
    start: int
    end: int

    @property
    def key(self) -> str:
        return f"{format_decimal(self.value)} {self.unit}".strip()

    @property
    def has_unit(self) -> bool:
        return bool(self.unit)


_SINGULAR: Final = {
    "hours": "hour",
    "minutes": "minute",
    "days": "day",
    "weeks": "week",
    "months": "month",
    "tablets": "tablet",
    "drops": "drop",
    "times": "time",
}


def _display(number: Decimal, symbol: str, per: Decimal, per_unit: str | None) -> str:
    written = format_decimal(number)
    if written == "1":
        symbol = _SINGULAR.get(symbol, symbol)
    if per_unit is not None:
        per_text = "" if per == 1 else f"{format_decimal(per)} "
        symbol = f"{symbol}/{per_text}{per_unit}"
    if not symbol:
        return written
    return f"{written}{symbol}" if symbol == "%" else f"{written} {symbol}"


#: Unit spellings as token tuples (``"i.u."`` → ``("i", ".", "u", ".")``), longest first.
_UNIT_MATCHER: Final[PhraseMatcher[UnitInfo]] = PhraseMatcher(
    (phrase_tokens(spelling), info) for spelling, info in UNITS.items()
)
_BODY_WEIGHT_MATCHER: Final[PhraseMatcher[bool]] = PhraseMatcher((w, True) for w in _BODY_WEIGHT)


@dataclass(frozen=True, slots=True)
class Amount:
    """One written amount: a number or a range of two with one unit, and its denominator.

    ``parts`` are its :class:`Quantity` ends (one, or two for a range written with one unit:
    ``4-6 hours``). ``per_time`` is the hours of a time denominator (``4 g/day`` → 24), dropped
    from the key; ``per_dose`` says a per-dose denominator was written (``500 mg per keer``).
    ``t0``/``t1`` are its token span (``t1`` exclusive).
    """

    parts: tuple[Quantity, ...]
    symbol: str
    per_time: Decimal | None
    per_dose: bool
    t0: int
    t1: int

    @property
    def unit(self) -> str:
        return self.parts[0].unit

    @property
    def low(self) -> Decimal:
        return self.parts[0].value

    @property
    def high(self) -> Decimal:
        return self.parts[-1].value

    @property
    def start(self) -> int:
        return self.parts[0].start

    @property
    def end(self) -> int:
        return self.parts[-1].end


@dataclass(frozen=True, slots=True)
class _Unit:
    info: UnitInfo
    divisor: Decimal
    per: Decimal
    per_unit: str | None
    per_time: Decimal | None
    per_dose: bool
    stop: int  # token index after the unit and its denominator


def _number_ok(tokens: Tokens, i: int, after_amount: int) -> bool:
    """A number token that stands on its own: not glued to a word or number before it
    (``B12``), nor after a glued ``-./,`` that follows one (``COVID-19``) — unless that
    ``-`` continues an amount that just ended (``250 mg-500 mg``)."""
    if not tokens.glued(i):
        return True
    kinds, words = tokens.kinds, tokens.words
    if kinds[i - 1] != SYM:
        return False
    if words[i - 1] not in "-.,/–" or not tokens.glued(i - 1) or kinds[i - 2] == SYM:
        return True
    return words[i - 1] in "-–" and after_amount == i - 1


def _denominator(tokens: Tokens, j: int, language: str | None) -> tuple[str, Decimal, int] | None:
    """After ``/``, ``per`` or ``mỗi`` at ``j``: ``(kind, count, stop)`` where kind is a kept
    denominator key, ``"time:<hours>"`` or ``"dose"``."""
    words, kinds, n = tokens.words, tokens.kinds, len(tokens)
    k = j + 1
    count = Decimal(1)
    if k < n and kinds[k] == NUM:
        parsed = parse_number(words[k], language)
        if parsed is None or not parsed:
            return None
        count, k = parsed, k + 1
    if k >= n or (kinds[k] != WORD and words[k] != "%"):
        return None
    if k + 1 < n and tokens.glued(k + 1) and kinds[k + 1] != SYM:
        return None  # "mg/dosis2": not a denominator
    word = words[k]
    if word in _KEPT_DENOMINATORS:
        return word, count, k + 1
    if word in _DOSE_DENOMINATORS and count == 1:
        return "dose", count, k + 1
    hit = _UNIT_MATCHER.at(words, k)
    if hit is not None and hit[1].base == "h":
        hours = count * hit[1].factor
        return f"time:{hours}", count, k + hit[0]
    return None


#: Words that join an amount to what it is of ("20 mg of amoxicillin per kg").
_OF: Final = frozenset({"of", "van", "của"})
#: Words that say "per" before a kilogram of body weight, and only there ("20 mg for each kilo",
#: "5 mg a kilo", "10 mg voor elke kilo", "15 mg cho một kg"): before another word they say
#: something else ("a day" is read as a frequency, "each tablet" is a strength).
_PER_KILO: Final = (
    ("for", "each"),
    ("for", "every"),
    ("each",),
    ("every",),
    ("a",),
    ("voor", "elke"),
    ("voor", "iedere"),
    ("elke",),
    ("iedere",),
    ("cho", "một"),
    ("trên", "một"),
)


def _per_kilo(tokens: Tokens, stop: int) -> int | None:
    """The last word of a :data:`_PER_KILO` phrase at ``stop`` that a kilogram word follows
    (where :func:`_denominator` reads on), or ``None``."""
    words, n = tokens.words, len(tokens)
    for phrase in _PER_KILO:
        end = stop + len(phrase)
        if end < n and tuple(words[stop:end]) == phrase:
            kilo = _KEPT_DENOMINATORS.get(words[end])
            if kilo is not None and kilo[0] == "kg":
                return end - 1
    return None


def _past_drug_name(tokens: Tokens, stop: int) -> int:
    """Where a per-kg denominator starts when one or two words (what the amount is of) stand
    between it and the unit: "20 mg of amoxicillin per kilo", "40 mg amoxicilline per kg",
    "15 mg paracetamol cho mỗi kg"; else ``stop`` unchanged."""
    words, kinds, n = tokens.words, tokens.kinds, len(tokens)
    k = stop + 1 if stop < n and words[stop] in _OF else stop
    for width in (1, 2):
        per = k + width
        if per >= n or any(kinds[m] != WORD or words[m] in _PER for m in range(k, per)):
            return stop
        if words[per] in ("cho", "trên") and per + 1 < n and words[per + 1] == "mỗi":
            per += 1
        denominator = _KEPT_DENOMINATORS.get(words[per + 1]) if per + 1 < n else None
        if words[per] in _PER and denominator is not None and denominator[0] == "kg":
            return k + width
    return stop


def _unit_at(tokens: Tokens, i: int, language: str | None) -> _Unit | None:
    """The unit (with its denominator) that starts at token ``i``, or ``None``."""
    words, kinds, n = tokens.words, tokens.kinds, len(tokens)
    if i >= n:
        return None
    hit = _UNIT_MATCHER.at(words, i)
    if hit is None:
        return None
    length, info = hit
    stop = i + length
    if stop < n and tokens.glued(stop) and kinds[stop] != SYM and words[i] != "%":
        return None  # "5 g2", "mgx"
    if info.base == "IU" and stop < n:
        mark = _UNIT_MARKS.at(words, stop)  # "4.200 đơn vị USP", "3.500 IU anti-Xa per kg"
        stop += mark[0] if mark is not None else 0
    divisor, per, per_unit, per_time, per_dose = Decimal(1), Decimal(1), None, None, False
    stop = _past_drug_name(tokens, stop)
    if stop + 1 < n and words[stop] in ("cho", "trên") and words[stop + 1] == "mỗi":
        stop += 1  # "10 mg cho mỗi kg cân nặng"
    per_at = stop if stop < n and words[stop] in _PER else _per_kilo(tokens, stop)
    if per_at is not None:
        den = _denominator(tokens, per_at, language)
        if den is not None:
            kind, count, after = den
            if kind in _KEPT_DENOMINATORS:
                den_base, den_factor = _KEPT_DENOMINATORS[kind]
                info = UnitInfo(f"{info.base}/{den_base}", info.factor, info.symbol)
                divisor, per, per_unit = count * den_factor, count, den_base
                if den_base == "kg":
                    weight = _BODY_WEIGHT_MATCHER.at(words, after) if after < n else None
                    after += weight[0] if weight else 0
                    if after < n and words[after] in _PER:  # mg/kg/day
                        again = _denominator(tokens, after, language)
                        if again is not None and again[0].startswith("time:"):
                            per_time = Decimal(again[0][5:])
                            after = again[2]
                            if again[1] == 1 and 0 < per_time < _DAY_HOURS:
                                # an infusion rate ("2 microgram/kg/min", "1,75 mg/kg/uur"):
                                # per kg and per hour, 60 times more per minute than per hour
                                # (not "10 mg/kg mỗi 8 giờ": a dose every 8 hours)
                                info = UnitInfo(f"{info.base}/h", info.factor, info.symbol)
                                divisor, per_time = divisor * per_time, None
            elif kind == "dose":
                per_dose = True
            else:
                per_time = Decimal(kind[5:])
            stop = after
    return _Unit(info, divisor, per, per_unit, per_time, per_dose, stop)


#: Words between a number and its unit that scale it: "3 million IU", "1,5 miljoen IE", "9 triệu
#: IU", "3 M.IU" (a product's strength in millions of units), "2 nghìn đơn vị". Only before a
#: unit of mass or units: "1.5 million people" stays a bare number.
_MULTIPLIER_WORDS: Final = {
    **dict.fromkeys(("million", "millions", "miljoen", "miljoenen", "triệu", "m", "m."), 1_000_000),
    **dict.fromkeys(("thousand", "duizend", "nghìn", "ngàn"), 1_000),
}
_MULTIPLIERS: Final[PhraseMatcher[Decimal]] = PhraseMatcher(
    (phrase_tokens(word), Decimal(value)) for word, value in _MULTIPLIER_WORDS.items()
)
#: Marks of the standard an amount of units is measured by, between the number and its unit or
#: after it ("175 anti-Xa IU per kg", "4.200 đơn vị USP", "10 000 IU Ph. Eur."): they say what
#: kind of unit it is, not another amount.
_MARKS: Final = ("anti-xa", "anti xa", "anti-factor xa", "usp", "ph. eur.", "ph.eur.", "ph eur")
_UNIT_MARKS: Final[PhraseMatcher[bool]] = PhraseMatcher((phrase_tokens(m), True) for m in _MARKS)
_SCALED_BASES: Final = frozenset({"IU", "mg"})
#: The first words of a multiplier or a mark: most numbers have none after them.
_MARKED_FIRST: Final = frozenset(phrase_tokens(w)[0] for w in (*_MULTIPLIER_WORDS, *_MARKS))


def _marked_unit(tokens: Tokens, j: int, language: str | None) -> _Unit | None:
    """The unit at ``j`` after a multiplier ("triệu IU", "M.IU") or a standard's mark ("anti-Xa
    IU"), scaled; ``None`` when neither stands there (most numbers: two dict lookups)."""
    words = tokens.words
    mark = _UNIT_MARKS.at(words, j)
    if mark is not None:
        unit = _unit_at(tokens, j + mark[0], language)
        return unit if unit is not None and unit.info.base.split("/")[0] == "IU" else None
    scale = _MULTIPLIERS.at(words, j)
    if scale is None:
        return None
    unit = _unit_at(tokens, j + scale[0], language)
    if unit is None or unit.info.base.split("/")[0] not in _SCALED_BASES:
        return None
    info = unit.info
    symbol = f"M{info.symbol}" if scale[1] == 1_000_000 else f"k{info.symbol}"
    return replace(unit, info=UnitInfo(info.base, info.factor * scale[1], symbol))


#: "between 25 and 150 mg", "tussen 25 en 50 mg", "giữa 25 và 50 mg", "từ 25 và" is no range.
_BETWEEN: Final = frozenset({"between", "tussen", "giữa", "khoảng giữa"})
_AND: Final = frozenset({"and", "en", "và"})


def _between(words: list[str], i: int, j: int) -> bool:
    """A range written "between X and Y": the word before the first number opens it."""
    return words[j] in _AND and i > 0 and words[i - 1] in _BETWEEN


#: "Half" before a time unit ("half an hour", "een half uur", "een halve minuut", "nửa giờ",
#: "nửa tiếng"): 0.5 of it. Only time units: "half a tablet" is a count the dose reader handles.
_HALVES: Final = {"half": ("en", "nl"), "halve": ("nl",), "nửa": ("vi",)}
_HALF: Final = Decimal("0.5")
#: Articles between "half" and its unit ("half an hour").
_HALF_ARTICLES: Final = frozenset({"a", "an"})


def _half_unit(tokens: Tokens, i: int, language: str | None) -> _Unit | None:
    """The time unit after a "half" at token ``i`` (skipping an article), or ``None``."""
    langs = _HALVES.get(tokens.words[i])
    if langs is None or (language is not None and language not in langs):
        return None
    j = i + 1
    if j < len(tokens) and tokens.words[j] in _HALF_ARTICLES:
        j += 1
    unit = _unit_at(tokens, j, language) if j < len(tokens) else None
    return unit if unit is not None and unit.info.base == "h" and unit.divisor == 1 else None


#: Fixed spans of time written without a number ("een kwartier" is 15 minutes, "a fortnight"
#: 14 days, "anderhalf uur" 90 minutes), in hours, with the languages that write them; matched
#: longest first. None opens with an article, which would make every "a" a place to look.
_TIME_WORDS: Final = {
    ("quarter", "of", "an", "hour"): (Decimal("0.25"), ("en",)),
    ("fortnight",): (Decimal(336), ("en",)),
    ("kwartier",): (Decimal("0.25"), ("nl",)),
    ("anderhalf", "uur"): (Decimal("1.5"), ("nl",)),
    ("anderhalve", "dag"): (Decimal(36), ("nl",)),
    ("anderhalve", "week"): (Decimal(252), ("nl",)),
}
_TIME_OPENERS: Final = frozenset(p[0] for p in _TIME_WORDS)
_TIME_LONGEST: Final = max(len(p) for p in _TIME_WORDS)


def _time_words(tokens: Tokens, i: int, language: str | None) -> Amount | None:
    """The fixed span of time (:data:`_TIME_WORDS`) written from token ``i``, or ``None``."""
    words = tokens.words
    for width in range(min(_TIME_LONGEST, len(words) - i), 0, -1):
        hit = _TIME_WORDS.get(tuple(words[i : i + width]))
        if hit is None or (language is not None and language not in hit[1]):
            continue
        hours = hit[0].quantize(_SIX_PLACES)
        end = i + width
        shown = f"{format_decimal(hit[0])} h"
        q = Quantity(hours, "h", hit[0], shown, tokens.starts[i], tokens.ends[end - 1])
        return Amount((q,), "h", None, False, i, end)
    return None


#: Words an amount can start with (a number word of any language, "half", a span of time).
_OPENS_AMOUNT: Final = frozenset(_WORD_LANGUAGE) | frozenset(_HALVES) | _TIME_OPENERS
_IS_NUM: Final = NUM.__eq__


def _is_number_word(word: str, language: str | None) -> bool:
    own = _WORD_LANGUAGE.get(word)
    return own is not None and language in (None, own)


def _words_language(language: str | None) -> str | None:
    """The language whose number words count in a text of ``language`` ("nl-BE": Dutch);
    ``None`` (every language's) when it has none of its own."""
    subtag = (language or "").split("-")[0].lower()
    return subtag if subtag in _WORDS_1_TO_12 else None


def word_numbers(tokens: Tokens, language: str | None = None) -> set[Decimal]:
    """The numbers that number words of ``language`` (any, when unknown) in ``tokens`` name,
    with or without a unit: a passage's "two or three divided doses" holds 2 and 3 for an
    answer's bare "2 or 3 doses".

    >>> from services.grounding.tokens import tokenize
    >>> sorted(word_numbers(tokenize("in two or three divided doses"), "en"))
    [Decimal('2'), Decimal('3')]
    >>> word_numbers(tokenize("twee tabletten"), "en")
    set()
    """
    base = _words_language(language)
    return {Decimal(NUMBER_WORDS[w]) for w in tokens.words if _is_number_word(w, base)}


def amounts(tokens: Tokens, language: str | None = None) -> list[Amount]:
    """Every amount in ``tokens``, in order (see the module docstring)."""
    base = _words_language(language)
    words, kinds, starts, ends = tokens.words, tokens.kinds, tokens.starts, tokens.ends
    n = len(words)
    found: list[Amount] = []
    last_end = -2  # token index after the last amount with a unit
    # An amount starts only at a number, a number word or "half": those positions are picked
    # out in C, the walk resumes after each amount as a token-by-token walk would.
    opens = map(operator.or_, map(_IS_NUM, kinds), map(_OPENS_AMOUNT.__contains__, words))
    i = 0
    for at in itertools.compress(range(n), opens):
        if at < i:
            continue
        i = at
        kind = kinds[i]
        digits = kind == NUM
        span = _time_words(tokens, i, base) if words[i] in _TIME_OPENERS else None
        if span is not None:
            found.append(span)
            i = span.t1
            continue
        if not digits and i > 0 and words[i - 1] in _SAME:
            i += 1  # "cùng một giờ mỗi ngày": the same hour, no amount (round 27)
            continue
        if not digits and not (kind == WORD and _is_number_word(words[i], base)):
            half = _half_unit(tokens, i, base) if words[i] in _HALVES else None
            if half is not None:
                info = half.info
                value = (_HALF * info.factor).quantize(_SIX_PLACES)
                shown = _display(_HALF, info.symbol, half.per, half.per_unit)
                q = Quantity(value, info.base, _HALF, shown, starts[i], ends[half.stop - 1])
                found.append(Amount((q,), info.symbol, half.per_time, half.per_dose, i, half.stop))
                last_end = half.stop
                i = half.stop
                continue
            i += 1
            continue
        if digits and not _number_ok(tokens, i, last_end):
            i += 1
            continue
        ends_at = [i]
        spoken: dict[int, Decimal] = {}  # Vietnamese numbers of several words, by first token
        j = _spoken_end(words, i, digits, spoken)
        if j + 1 < n and (words[j] in _CONNECTORS or _between(words, i, j)):
            k = j + 1
            if words[j] == "tot" and k + 1 < n and words[k] == "en" and words[k + 1] == "met":
                k += 2
            if k < n and (kinds[k] == NUM or _is_number_word(words[k], base)):
                ends_at.append(k)
                j = _spoken_end(words, k, kinds[k] == NUM, spoken)
        if not digits and j < n and tokens.glued(j):
            i += 1
            continue
        unit = _unit_at(tokens, j, language) if j < n else None
        hyphen = j + 1 < n and words[j] == "-" and tokens.glued(j) and tokens.glued(j + 1)
        if unit is None and hyphen:  # "a 3-hour infusion", "a 2-week course"
            unit = _unit_at(tokens, j + 1, language)
        if unit is not None and words[j] in _TIMES_SIGNS and _worked_product(tokens, j, language):
            unit = None  # "200 × 70 = 14,000 IU": a product worked out, not "200 times"
        if unit is None and j < n and words[j] in _MARKED_FIRST:
            unit = _marked_unit(tokens, j, language)
        if unit is None:
            if digits:
                found.extend(_bare(tokens, ends_at, language))
            i = j
            continue
        parts: list[Quantity] = []
        info = unit.info
        stop = unit.stop
        # "một tiếng rưỡi", "hai viên rưỡi": and a half, after the unit (one number only)
        and_a_half = len(ends_at) == 1 and stop < n and words[stop] == "rưỡi"
        stop += and_a_half
        for t in ends_at:
            number = (
                parse_number(words[t], language)
                if kinds[t] == NUM
                else spoken.get(t, Decimal(NUMBER_WORDS[words[t]]))
            )
            if number is None:
                break
            number += _HALF if and_a_half else 0
            value = number * info.factor / unit.divisor
            if info.base == "h":
                value = value.quantize(_SIX_PLACES)
            shown = _display(number, info.symbol, unit.per, unit.per_unit)
            parts.append(Quantity(value, info.base, number, shown, starts[t], ends[stop - 1]))
        if parts:
            found.append(Amount(tuple(parts), info.symbol, unit.per_time, unit.per_dose, i, stop))
            last_end = stop
        i = stop
    return found


def _spoken_end(words: list[str], i: int, digits: bool, spoken: dict[int, Decimal]) -> int:
    """Where the number at ``words[i]`` ends: after a Vietnamese number of several words
    (its value put in ``spoken``), else right after ``i``."""
    if not digits and _WORD_LANGUAGE.get(words[i]) == "vi":
        several = _vi_number(words, i)
        if several is not None:
            spoken[i] = several[0]
            return several[1]
    return i + 1


#: Signs of multiplication, which the unit table also reads as "times" ("3 x daily").
_TIMES_SIGNS: Final = frozenset({"x", "×", "*"})


def _worked_product(tokens: Tokens, j: int, language: str | None) -> bool:
    """Whether the "×" at token ``j`` multiplies two numbers into the result an "=" gives ("200
    × 70 = 14,000 IU", "2,5 x 4 = 10 mg"): arithmetic shown to the reader, whose operands are
    numbers, not a count of times. Only a product that is right: "200 × 70 = 16,000" stays
    "200 times", a claim no passage backs."""
    words, kinds = tokens.words, tokens.kinds
    if not (
        j >= 1
        and j + 3 < len(words)
        and kinds[j - 1] == NUM
        and kinds[j + 1] == NUM
        and words[j + 2] == "="
        and kinds[j + 3] == NUM
    ):
        return False
    a, b, result = (parse_number(words[k], language) for k in (j - 1, j + 1, j + 3))
    return a is not None and b is not None and result is not None and a * b == result


def _bare(tokens: Tokens, ends_at: list[int], language: str | None) -> list[Amount]:
    """Unit-less numbers; a number with a glued letter suffix (``1st``) is no number."""
    out: list[Amount] = []
    words, n = tokens.words, len(tokens)
    for t in ends_at:
        if t + 1 < n and tokens.glued(t + 1) and tokens.kinds[t + 1] == WORD:
            break
        number = parse_number(words[t], language)
        if number is None:
            break
        shown = _display(number, "", Decimal(1), None)
        q = Quantity(number, "", number, shown, tokens.starts[t], tokens.ends[t])
        out.append(Amount((q,), "", None, False, t, t + 1))
    return out


def quantities(text: str, language: str | None = None) -> list[Quantity]:
    """Every number in ``text`` with its normalised unit, in text order. Offsets are into the
    NFC form of ``text`` (the same string for text that is already NFC, as most text is).

    >>> [q.key for q in quantities("Take 500mg, max 4 g per day, every 4-6 hours.")]
    ['500 mg', '4000 mg', '4 h', '6 h']
    >>> [q.key for q in quantities("2,5 mg of 2.5 mg; 1.000 mg", "nl")]
    ['2.5 mg', '2.5 mg', '1000 mg']
    """
    return flatten(amounts(tokenize(text), language))


def flatten(found: Iterable[Amount]) -> list[Quantity]:
    """The quantities of some amounts, in order (a range gives both ends)."""
    return [q for a in found for q in a.parts]


def parse_value(text: str, language: str | None = None) -> Quantity | None:
    """The single quantity with a unit that makes up ``text`` (``"4 gram"``), else ``None``."""
    stripped = unicodedata.normalize("NFC", text.strip())
    found = quantities(stripped, language)
    if len(found) != 1 or not found[0].has_unit:
        return None
    q = found[0]
    return q if q.start == 0 and q.end == len(stripped) else None
