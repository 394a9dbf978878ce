"""The strength of one unit dose form — a tablet, a puff, a sachet — stated in a sentence, and
counts of that form restated in mg.

"Each puff delivers 100 micrograms" and "one or two puffs" together say "100 to 200 micrograms";
"één capsule van 20 mg per dag" says "20 mg per dag". A passage's counts are restated with the
passage's one strength per form (beside the counts, so either wording of the answer finds its
match); an answer's counts with the strength the answer sentence itself states (instead of the
counts: "một viên 75 mg" is a claim about 75 mg, not about a tablet the passage never counts).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import replace
from decimal import Decimal
from typing import Final

from services.grounding.medical.reading import Reading, Span
from services.grounding.quantities import (
    NUMBER_WORDS,
    UNITS,
    Amount,
    format_decimal,
    parse_number,
)
from services.grounding.tokens import NUM, WORD, Tokens

__all__ = [
    "FORM_UNITS",
    "concentrations",
    "counted_strengths",
    "counts_in_mg",
    "in_volume",
    "named_strengths",
    "one_strength",
    "salt_pairs",
    "scale_counted",
    "split_concentrations",
    "strength_amounts",
    "volume_keys",
    "volumes_restated",
]

#: Words for a unit dose form and the count unit it is counted in: the count units of
#: ``quantities`` ("500 mg tablets", "tabletten van 500 mg", "viên 500 mg", "100 microgram per
#: inhalatie", "each puff delivers 100 micrograms", "mỗi gói chứa 4 mg") and words that name the
#: form without counting it ("mỗi nhát xịt chứa 100 microgam").
FORM_UNITS: Final[Mapping[str, str]] = {
    **{w: u.base for w, u in UNITS.items() if u.base in ("tablet", "puff", "sachet")},
    "xịt": "puff",
    "comprimé": "tablet",
    # an inhaler's "metered dose" ("20 micrograms per metered dose", "per afgemeten dosis") is
    # one puff
    "metered": "puff",
    "afgemeten": "puff",
}

#: Words that spread an amount over each unit of the form named after them ("20 micrograms
#: per metered dose", "4 g poeder per sachet", "80 mg mỗi viên", "5 mg in elke tablet").
_EACH: Final = frozenset({"per", "each", "every", "elke", "iedere", "elk", "mỗi"})


def _form_after(words: list[str], t1: int) -> str | None:
    """The form an amount ending at token ``t1`` is the strength of when a distributive word
    follows it — at once or after one word that names the substance ("powder", "poeder",
    "bột") — and a form word is among the two words after that."""
    for j, word in enumerate(words[t1 : t1 + 2], t1):
        if word in _EACH:
            return next((FORM_UNITS[w] for w in words[j + 1 : j + 3] if w in FORM_UNITS), None)
    return None


def strength_amounts(t: Tokens, found: Sequence[Amount]) -> list[tuple[str, Decimal, Amount]]:
    """``(form unit, mg per unit, the amount that says it)`` for every strength stated in a
    sentence: an mg amount next to a form word or spread over it ("20 micrograms per metered
    dose", "4 g poeder per sachet"), a count restated in mg or an mg amount restated as a count
    in brackets ("6 tabletten (3.000 mg)": 500 each; "8 tot 16 g (2 tot 4 sachets)": 4 g each,
    a range only when both ends give the same strength), or the title of a leaflet
    ("Paracetamol 500 mg (Panadol)": a tablet)."""
    mg = [a for a in found if a.unit == "mg"]
    if not mg:
        return []
    words = t.words
    out: list[tuple[str, Decimal, Amount]] = []
    ending: dict[int, Amount] = {}
    opening: dict[int, Amount] = {}
    if "(" in words:  # a restatement in brackets: "6 tabletten (3.000 mg)", "4 g (1 sachet)"
        for a in found:
            if a.unit in _COUNT_UNITS:
                ending[a.t1] = opening[a.t0] = a
    for a in mg:
        count = None
        if ending and words[a.t0 - 1 : a.t0] == ["("]:
            count = ending.get(a.t0 - 1)
        if count is None and opening and words[a.t1 : a.t1 + 1] == ["("]:
            count = opening.get(a.t1 + 1)
        if count is not None:
            if count.low > 0 and a.low * count.high == a.high * count.low:
                out.append((count.unit, a.low / count.low, a))
            continue
        if a.low != a.high:
            continue  # a range is no strength unless its brackets say so
        near = (*words[a.t1 : a.t1 + 2], *reversed(words[max(0, a.t0 - 2) : a.t0]))
        unit = next((FORM_UNITS[w] for w in near if w in FORM_UNITS), None)
        if unit is None and a.t0 >= 3 and words[a.t0 - 1] in _OF:
            unit = FORM_UNITS.get(words[a.t0 - 3])  # "tablet Trental van 400 mg": a name between
        if unit is None:
            unit = _form_after(words, a.t1)
        if unit is not None:
            out.append((unit, a.low, a))
    title = not out and len(found) == 1 and len(mg) == 1 and len(mg[0].parts) == 1
    if title and sum(k == 0 for k in t.kinds) <= 6:
        out.append(("tablet", mg[0].low, mg[0]))  # a title: drug and strength
    elif title and (form := _headed_form(t, mg[0])) is not None:
        out.append((form, mg[0].low, mg[0]))
    return out


#: Words between a dose form and its strength ("one tablet of 500 mg", "tablet Trental van
#: 400 mg"), where a name may stand between the form and the word.
_OF: Final = frozenset({"of", "van", "của"})

#: Words a product's name may take before its strength at a sentence's start ("Spasfon Lyoc
#: 80 mg").
_NAME_WORDS: Final = 3


def _headed_form(t: Tokens, a: Amount) -> str | None:
    """The dose form of a longer heading that opens with the product's name and its one
    strength, the form named later ("Spasfon Lyoc 80 mg (phloroglucinol), viên đông khô đặt
    dưới lưỡi …", "Zentra 20 mg (x), film-coated tablets for …"): the first form word after
    the strength; ``None`` when the sentence opens otherwise or names no form."""
    if not 1 <= a.t0 <= _NAME_WORDS or not t.text[:1].isupper():
        return None
    if any(k != WORD for k in t.kinds[: a.t0]):
        return None
    return next((FORM_UNITS[w] for w in t.words[a.t1 :] if w in FORM_UNITS), None)


def salt_pairs(
    stated: Sequence[tuple[int, str, Decimal, bool]],
) -> list[tuple[str, Decimal, Decimal]]:
    """``(form unit, salt mg, active mg)`` from a passage's strengths in order, each ``(sentence
    index, form unit, mg, restated)``: a strength that a phrase of equivalence introduces
    (``restated``: "each tablet provides 0.5 mg of fluoride") restates the one larger strength
    of the same form stated before it in its sentence or the one before ("Sodium fluoride 1.1
    mg chewable tablets;"). A salt weighs more than its active part."""
    out: list[tuple[str, Decimal, Decimal]] = []
    for n, (k, form, mg, restated) in enumerate(stated):
        if not restated:
            continue
        before = {v for j, f, v, _ in stated[:n] if f == form and k - 1 <= j <= k and v > mg}
        if len(before) == 1:
            out.append((form, before.pop(), mg))
    return out


def named_strengths(
    counted: Iterable[str | None],
    found: Sequence[Amount],
    is_name: Callable[[int], bool],
) -> list[tuple[str, Decimal, Amount]]:
    """A product and its strength in a sentence that counts one dose form ("Van Maxalt 10 mg
    neemt u 1 tablet", "Fexofenadin 180 mg: người lớn … uống 1 viên"): the mg amount right
    after a name (``is_name(token index)``) is that form's strength. ``counted``: the units of
    the sentence's readings."""
    forms = {u for u in counted if u is not None and u in _COUNT_UNITS}
    if len(forms) != 1:
        return []
    form = next(iter(forms))
    return [
        (form, a.low, a)
        for a in found
        if a.unit == "mg" and len(a.parts) == 1 and a.t0 >= 1 and is_name(a.t0 - 1)
    ]


def counted_strengths(
    t: Tokens,
    found: Sequence[Amount],
    language: str | None,
    stated: Sequence[tuple[str, Decimal, Amount]] | None = None,
) -> dict[int, tuple[Decimal, Decimal]]:
    """Counts written before a strength and its form ("one or two 500 mg tablets", "twee 250 mg
    tabletten"): ``{start character of the strength amount: (low, high)}``. ``stated``: the
    sentence's :func:`strength_amounts`, when the caller has them."""
    stated = strength_amounts(t, found) if stated is None else stated
    if not stated:
        return {}
    words, kinds = t.words, t.kinds
    out: dict[int, tuple[Decimal, Decimal]] = {}
    taken = {k for a in found for k in range(a.t0, a.t1)}
    for unit, _, a in stated:
        if a.t1 >= len(words) or FORM_UNITS.get(words[a.t1]) != unit:
            continue  # the form word must follow: "500 mg tablets"
        k = a.t0 - 1
        high = _count_word(words, kinds, k, taken, language)
        if high is None:
            continue
        low = high
        if k >= 2 and words[k - 1] in _CONNECTORS:
            first = _count_word(words, kinds, k - 2, taken, language)
            if first is not None and first < high:
                low = first
        out[t.starts[a.t0]] = (low, high)
    return out


def _count_word(
    words: list[str], kinds: Sequence[int], k: int, taken: set[int], language: str | None
) -> Decimal | None:
    """A small whole number at token ``k`` that no amount uses (digits or a number word)."""
    if k < 0 or k in taken:
        return None
    word = words[k]
    if kinds[k] != NUM and word not in NUMBER_WORDS:
        return None
    value = parse_number(word, language)
    if value is None or value != value.to_integral_value() or not 0 < value <= 12:
        return None
    return value


def scale_counted(
    readings: Iterable[Reading], counted: Mapping[int, tuple[Decimal, Decimal]]
) -> tuple[Reading, ...]:
    """Readings of a strength with a count before it, multiplied out ("one or two 500 mg
    tablets" is 500–1000 mg)."""
    out: list[Reading] = []
    for r in readings:
        n = counted.get(r.start) if r.unit == "mg" else None
        if n is not None and r.amount is not None and r.amount.kind == "exact":
            r = replace(r, amount=Span(r.amount.low * n[0], r.amount.high * n[1], "exact"))
        out.append(r)
    return tuple(out)


def one_strength(found: Iterable[tuple[str, Decimal]]) -> dict[str, Decimal]:
    """The strength per form where a text states exactly one for it."""
    seen: dict[str, set[Decimal]] = {}
    for unit, value in found:
        seen.setdefault(unit, set()).add(value)
    return {unit: next(iter(values)) for unit, values in seen.items() if len(values) == 1}


def counts_in_mg(readings: Iterable[Reading], strength: Mapping[str, Decimal]) -> list[Reading]:
    """Each count reading of a form with a known strength, restated in mg (1–2 × 500 mg)."""
    out: list[Reading] = []
    for r in readings:
        per = strength.get(r.unit or "")
        if per is not None and r.amount is not None:
            amount = Span(r.amount.low * per, r.amount.high * per, r.amount.kind)
            out.append(replace(r, amount=amount, unit="mg"))
    return out


_COUNT_UNITS: Final = frozenset(FORM_UNITS.values())
#: Between the two counts of a range ("one or two", "1 à 2", "một hoặc hai").
_CONNECTORS: Final = frozenset({"or", "to", "-", "–", "of", "tot", "à", "hoặc", "đến", "tới"})


#: Amounts per millilitre a liquid's strength is written in ("100.000 IE/ml", "120 mg/5 ml").
_PER_ML: Final = {"mg/ml": "mg", "IU/ml": "IU"}


#: Words an amount spread over each millilitre may have between it and its distributive word
#: ("100 mg cannabidiol per ml", "40 mg of clindamycin in each ml").
_SUBSTANCE_WORDS: Final = 3


def split_concentrations(t: Tokens, found: Sequence[Amount]) -> list[tuple[str, Decimal]]:
    """``(unit, amount per ml)`` for each amount in mg or IU that a distributive word spreads
    over one millilitre with the substance named between ("Epidrex drank bevat 100 mg
    cannabidiol per ml", "40 mg of clindamycin in each ml"): at most :data:`_SUBSTANCE_WORDS`
    words between, then "ml" or "1 ml". ("100 mg per ml" is read as mg/ml already.)"""
    words, kinds = t.words, t.kinds
    out: list[tuple[str, Decimal]] = []
    for a in found:
        unit = a.unit if a.unit in ("mg", "IU") else None
        if unit is None or a.low != a.high or len(a.parts) != 1:
            continue
        for j in range(a.t1, min(a.t1 + _SUBSTANCE_WORDS + 1, len(words))):
            if kinds[j] != WORD:
                break
            if words[j] in _EACH:
                after = words[j + 1 : j + 3]
                if after[:1] == ["ml"] or after == ["1", "ml"]:
                    out.append((unit, a.low))
                break
    return out


def concentrations(
    found: Iterable[Amount], split: Iterable[tuple[str, Decimal]] = ()
) -> dict[str, Decimal]:
    """``{unit: amount per ml}`` for each unit (mg, IU) a text states exactly one concentration
    in ("Nystatine orale suspensie 100.000 IE/ml", "drank 120 mg/5 ml"), also one written
    around its substance (``split``: :func:`split_concentrations`)."""
    seen: dict[str, set[Decimal]] = {}
    for a in found:
        unit = _PER_ML.get(a.unit)
        if unit is not None and len(a.parts) == 1:
            seen.setdefault(unit, set()).add(a.low)
    for unit, value in split:
        seen.setdefault(unit, set()).add(value)
    return {unit: next(iter(values)) for unit, values in seen.items() if len(values) == 1}


def in_volume(readings: Iterable[Reading], per_ml: Mapping[str, Decimal]) -> list[Reading]:
    """Each reading of an amount in mg or IU (also per kg) restated as the volume of the liquid
    that holds it, with the one concentration its text states ("250 mg" of a 250 mg/5 ml drink
    is 5 ml, "20 mg/kg" is 0.4 ml/kg): beside the amount, so an answer that gives the dose as a
    volume ("250 mg a day, that is 5 ml") finds its match, as :func:`volumes_restated` lets a
    volume find its amount."""
    out: list[Reading] = []
    for r in readings:
        if r.amount is None or r.unit is None:
            continue
        base, _, per_kg = r.unit.partition("/")
        per = per_ml.get(base)
        if per is None or per_kg not in ("", "kg"):
            continue
        amount = Span(_volume(r.amount.low, per), _volume(r.amount.high, per), r.amount.kind)
        out.append(replace(r, amount=amount, unit="ml/kg" if per_kg else "ml"))
    return out


def volume_keys(found: Iterable[Amount], per_ml: Mapping[str, Decimal]) -> set[str]:
    """The keys of the volumes that hold the text's amounts in mg or IU (see :func:`in_volume`):
    an answer's "5 ml" is no missing number beside a passage's "250 mg" of 250 mg/5 ml."""
    return {
        f"{format_decimal(_volume(q.value, per_ml[q.unit]))} ml"
        for a in found
        for q in a.parts
        if q.unit in per_ml
    }


def _volume(amount: Decimal, per_ml: Decimal) -> Decimal:
    return (amount / per_ml).quantize(_SIX_PLACES).normalize()


_SIX_PLACES: Final = Decimal("0.000001")


def volumes_restated(readings: Iterable[Reading], per_ml: Mapping[str, Decimal]) -> list[Reading]:
    """Each reading of a volume in ml restated in what that volume holds, with the one
    concentration its text states ("1 ml" of 100,000 IU/ml is 100,000 IU): beside the ml, so
    an answer that says either finds its match."""
    out: list[Reading] = []
    for r in readings:
        if r.unit != "ml" or r.amount is None:
            continue
        for unit, per in per_ml.items():
            amount = Span(r.amount.low * per, r.amount.high * per, r.amount.kind)
            out.append(replace(r, amount=amount, unit=unit))
    return out
