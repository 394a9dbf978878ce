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
- **Ranges** (``500-1000 mg``, ``4 tot 6 uur``, ``1 or 2 tablets``) give both ends the unit.
- **Number words** one..twelve (en/nl/vi) count only when a unit follows (``two tablets``).
- **Per-kilogram and concentration units** keep their denominator (``15 mg/kg``, ``120 mg/5 ml``
  = ``24 mg/ml``); a time denominator (``4 g/day``, ``4 g per dag``) is dropped, so it equals
  ``4 g``.
- **Bare numbers** (no unit) are kept with unit ``""``; a number glued to letters (``B12``,
  ``COVID-19``, ``1st``) is not a quantity.

Matching is RE2 (linear time); the unit table is data in this module.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Iterable
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from typing import Final

import re2

__all__ = [
    "QUANTITY_PATTERN",
    "UNITS",
    "Quantity",
    "UnitInfo",
    "format_decimal",
    "parse_number",
    "parse_value",
    "quantities",
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
mg 1000000 kg | kg | kilogram | kilograms | kilogam
mg 1000 g | g | gr | gram | grams | gramme | grammes | gam
mg 1 mg | mg | milligram | milligrams | milligramme | miligam
mg 0.001 mcg | mcg | µg | μg | ug | microgram | micrograms | microgam
ml 1000 l | l | liter | liters | litre | litres | lít
ml 100 dl | dl
ml 10 cl | cl
ml 1 ml | ml | milliliter | milliliters | millilitre | mililít
IU 1 IU | iu | i.u. | ie | units | unit | eenheden | eenheid | đơn vị
h 1 hours | h | hr | hrs | hour | hours | uur | uren | giờ | tiếng
h 1/60 minutes | min | mins | minute | minutes | minuut | minuten | phút
h 24 days | day | days | dag | dagen | ngày
h 168 weeks | week | weeks | weken | tuần
month 1 months | month | months | maand | maanden | tháng
% 1 % | % | percent | per cent | procent | phần trăm
tablet 1 tablets | tablet | tablets | tabletten | tabl | tab | tabs | pill | pills | pil | pillen
tablet 1 tablets | capsule | capsules | caps | viên
drop 1 drops | drop | drops | druppel | druppels | giọt
times 1 times | times | x | × | keer | maal | lần
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
    "ml": ("ml", Decimal(1)),
    "l": ("ml", Decimal(1000)),
    "liter": ("ml", Decimal(1000)),
}
#: Time denominators that are dropped: ``4 g/day`` is the same amount as ``4 g`` per day.
_DROPPED_DENOMINATORS: Final = ("24 uur", "24 hours", "24h", "day", "dag", "ngày", "d")

_WORDS_1_TO_12: Final = {
    "en": "one two three four five six seven eight nine ten eleven twelve",
    "nl": "een twee drie vier vijf zes zeven acht negen tien elf twaalf",
    "vi": "một hai ba bốn năm sáu bảy tám chín mười",
}
#: Number words one..twelve (en, nl, vi); they count only when a space and a unit follow, and
#: only in their own language (or when the language is unknown): "Bax" is not "ba x".
NUMBER_WORDS: Final[dict[str, int]] = {
    "één": 1,
    **{w: n for line in _WORDS_1_TO_12.values() for n, w in enumerate(line.split(), start=1)},
}
_WORD_LANGUAGE: Final[dict[str, str]] = {
    "één": "nl",
    **{w: lang for lang, line in _WORDS_1_TO_12.items() for w in line.split()},
}


def _alternation(words: Iterable[str]) -> str:
    items = sorted(words, key=lambda w: (-len(w), w))
    return "|".join(re2.escape(w).replace(r"\ ", r"\s+") for w in items)


_NUM = r"\d+(?:[.,]\d+)*"
_WORDNUM = _alternation(NUMBER_WORDS)
_CONNECT = r"-|–|—|to|tot|tot en met|or|of|hoặc|đến|tới"
_DENOM = _alternation([*_KEPT_DENOMINATORS, *_DROPPED_DENOMINATORS])
_UNIT_PART = (
    rf"\s*(?P<unit>{_alternation(UNITS)})"
    rf"(?:(?:\s*/\s*|\s+per\s+|\s+mỗi\s+)(?P<dn>\d+(?:[.,]\d+)?\s*)?(?P<den>{_DENOM}))?"
)
# Digits with an optional unit, or a number word that must have one ("een" alone is an article),
# after a character that is not a letter or digit: "w123" and "often" hold no number, and RE2
# does not even stop there.
_QUANTITY = re2.compile(
    rf"(?i)(?:^|[^\pL\pN])(?:(?P<n1>{_NUM})(?:\s*(?:{_CONNECT})\s*(?P<n2>{_NUM}))?(?:{_UNIT_PART})?"
    rf"|(?P<w1>{_WORDNUM})(?:\s*(?:{_CONNECT})\s*(?P<w2>{_NUM}|{_WORDNUM}))?"
    + _UNIT_PART.replace(r"\s*(?P<unit>", r"\s+(?P<wunit>")
    .replace("?P<dn>", "?P<wdn>")
    .replace("?P<den>", "?P<wden>")
    + ")"
)
_GROUP: Final = _QUANTITY.groupindex
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


def _boundary_before(text: str, start: int) -> bool:
    if start == 0:
        return True
    prev = text[start - 1]
    if prev.isalnum():
        return False
    return not (prev in "-.,/" and start >= 2 and text[start - 2].isalnum())


@dataclass(frozen=True, slots=True)
class _Unit:
    info: UnitInfo
    divisor: Decimal
    end: int
    per: Decimal
    per_unit: str | None


#: Group names of the digit branch and of the number-word branch of ``_QUANTITY``.
_DIGIT_GROUPS: Final = ("n1", "n2", "unit", "dn", "den")
_WORD_GROUPS: Final = ("w1", "w2", "wunit", "wdn", "wden")


def _unit_of(match: re2._Match, text: str, names: tuple[str, ...]) -> _Unit | None:  # type: ignore[name-defined]
    """Resolve the unit group (with its denominator): the unit, the divisor and the end offset.

    ``None`` when there is no unit or it is not a whole word (``5 gemiddeld`` has no ``g``).
    """
    _, _, unit_group, dn_group, den_group = names
    ustart, uend = match.span(_GROUP[unit_group])
    if ustart < 0:
        return None
    raw = " ".join(text[ustart:uend].lower().split())
    info = UNITS.get(raw)
    if info is None:
        return None
    dstart, dend = match.span(_GROUP[den_group])
    if dstart >= 0 and dend < len(text) and text[dend].isalnum():
        dstart = -1  # "mg/dosis": not a denominator after all
    if dstart < 0:
        if raw != "%" and uend < len(text) and text[uend].isalnum():
            return None
        return _Unit(info, Decimal(1), uend, Decimal(1), None)
    kept = _KEPT_DENOMINATORS.get(" ".join(text[dstart:dend].lower().split()))
    if kept is None:  # a time denominator: per day is implied
        return _Unit(info, Decimal(1), dend, Decimal(1), None)
    nstart, nend = match.span(_GROUP[dn_group])
    count = parse_number(text[nstart:nend].strip()) if nstart >= 0 else Decimal(1)
    if not count:
        return None
    den_base, den_factor = kept
    unit = UnitInfo(f"{info.base}/{den_base}", info.factor, info.symbol)
    return _Unit(unit, count * den_factor, dend, count, den_base)


def quantities(text: str, language: str | None = None) -> list[Quantity]:
    """Every number in ``text`` with its normalised unit, in text order. Offsets are into the
    NFC form of ``text`` (the same string for text that is already NFC, as most text is).

    >>> [q.key for q in quantities("Take 500mg, max 4 g per day, every 4-6 hours.")]
    ['500 mg', '4000 mg', '4 h', '6 h']
    >>> [q.key for q in quantities("2,5 mg of 2.5 mg; 1.000 mg", "nl")]
    ['2.5 mg', '2.5 mg', '1000 mg']
    """
    text = unicodedata.normalize("NFC", text)
    subtag = (language or "").split("-")[0].lower()
    base = subtag if subtag in _WORDS_1_TO_12 else None
    found: list[Quantity] = []
    for m in _QUANTITY.finditer(text):
        names = _DIGIT_GROUPS if m.span(_GROUP["n1"])[0] >= 0 else _WORD_GROUPS
        s1, e1 = m.span(_GROUP[names[0]])
        if not _boundary_before(text, s1):
            continue
        if names is _WORD_GROUPS and base not in (None, _WORD_LANGUAGE[text[s1:e1].lower()]):
            continue
        unit = _unit_of(m, text, names)
        ends = [(s1, e1)]
        s2, e2 = m.span(_GROUP[names[1]])
        if s2 >= 0:
            ends.append((s2, e2))
        if unit is None:
            # No unit: keep digit numbers as bare numbers; a glued suffix (1st) is no number.
            for s, e in ends:
                if not text[s].isdigit() or (e < len(text) and text[e].isalpha()):
                    break
                number = parse_number(text[s:e], language)
                if number is not None:
                    shown = _display(number, "", Decimal(1), None)
                    found.append(Quantity(number, "", number, shown, s, e))
            continue
        info = unit.info
        for s, e in ends:
            number = parse_number(text[s:e], language)
            if number is None:
                break
            value = number * info.factor / unit.divisor
            if info.base == "h":
                value = value.quantize(_SIX_PLACES)
            shown = _display(number, info.symbol, unit.per, unit.per_unit)
            found.append(Quantity(value, info.base, number, shown, s, unit.end))
    return found


def parse_value(text: str, language: str | None = None) -> Quantity | None:
    """The single quantity with a unit that makes up ``text`` (``"4 gram"``), else ``None``."""
    stripped = unicodedata.normalize("NFC", text.strip())
    found = quantities(stripped, language)
    if len(found) != 1 or not found[0].has_unit:
        return None
    q = found[0]
    return q if q.start == 0 and q.end == len(stripped) else None
