"""Compare an answer's reading with the passages' readings about the same drug.

Outcomes follow the claim-support semantics of the fact registry (SPEC §5):

- **supported** — a passage reading about the same drug (and a compatible population) agrees on
  everything the answer states: the amount (range inside the passage's, same unit, same basis
  where both say one, no clash of max / min / starting dose), the frequency, the polarity for the
  same condition;
- **contradicted** — passages about the same drug speak about it and none agrees: another
  amount in the same unit, the opposite polarity for the same condition, or the same amount on
  another basis ("4000 mg per dose" against "max 4000 mg per 24 h");
- **unknown** — no passage speaks about it (missing evidence, not a falsehood);
- **conflict** — passages disagree: one agrees and another states a different limit (max/min)
  on the same basis, or the opposite polarity for the same condition.

A reading is checked facet by facet (amount, frequency, polarity); its status is the worst of
its facets (contradicted, conflict, unknown, supported).

Populations: an answer without a population matches any passage reading; with one, the passage
must name an overlapping group (ages overlapping), and a passage without a population counts as
the adult (general) dose only.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from decimal import Decimal
from typing import Final, Literal

from services.grounding.medical.reading import NEGATIVE, Basis, Reading, Span
from services.grounding.quantities import format_decimal

__all__ = ["Comparison", "PassageReading", "Status", "age_within", "compare", "worst"]

Status = Literal["supported", "contradicted", "unknown", "conflict"]
_ORDER: Final[dict[str, int]] = {"supported": 0, "unknown": 1, "conflict": 2, "contradicted": 3}
_LIMITS: Final = frozenset({"max", "min", "start"})
_ONE: Final = Decimal(1)
#: Groups by age: a dose for one is never another's (risk groups are the rest).
_AGE_GROUPS: Final = frozenset({"adult", "child", "infant", "adolescent", "elderly"})
#: The age groups of the young, one from another by age alone.
_MINORS: Final = frozenset({"child", "infant", "adolescent"})
#: The age groups a dose per kg of body weight that names no group is for: all.
_WEIGHED: Final = _AGE_GROUPS
#: Dose units a per-kg dose can be worked out in (``mg/kg`` × kg → ``mg``).
_PER_KG_UNITS: Final = frozenset({"mg", "ml", "IU"})
#: Least share of an answer's condition words found in a passage reading's, when neither names
#: a known condition ("do not take it with grapefruit juice").
_CONDITION_OVERLAP: Final = 0.5


@dataclass(frozen=True, slots=True)
class PassageReading:
    """A reading of one passage sentence."""

    doc_id: str
    passage: int
    sentence: str
    reading: Reading


@dataclass(frozen=True, slots=True)
class Comparison:
    status: Status
    reading: Reading
    supporting: tuple[PassageReading, ...]
    contradicting: tuple[PassageReading, ...]
    explanation: str


def worst(statuses: Sequence[Status]) -> Status:
    return max(statuses, key=lambda s: _ORDER[s]) if statuses else "supported"


def _drugs_ok(a: Reading, p: Reading) -> bool:
    if a.open and not a.drugs:
        # an open claim about no drug ("a few drops diluted in water are safe to swallow", of a
        # product no lexicon knows) speaks of what the passages that name no drug either say,
        # not of another drug's passage
        return not p.drugs
    return not a.drugs or not p.drugs or bool(a.drugs & p.drugs)


def _ages_overlap(
    a: tuple[Decimal | None, Decimal | None], b: tuple[Decimal | None, Decimal | None]
) -> bool:
    lo = max(a[0] or Decimal(0), b[0] or Decimal(0))
    hi = min(a[1] if a[1] is not None else Decimal(999), b[1] if b[1] is not None else Decimal(999))
    if lo < hi:
        return True
    point = (a[0] == a[1] and a[0] is not None) or (b[0] == b[1] and b[0] is not None)
    return lo == hi and point


def _bands_meet(a: Span, p: Span) -> bool:
    """Whether two kidney clearances or body weights (a value or band each) overlap; an upper
    bound ("below 30 ml/min", "under 25 kg") leaves its value out, and an upper and a lower
    bound at one value do not meet ("60 kg or less" and "more than 60 kg")."""
    return (
        a.low <= p.high
        and p.low <= a.high
        and not (p.kind == "max" and a.low >= p.high)
        and not (a.kind == "max" and p.kind == "min" and a.high <= p.low)
    )


def _point(value: Decimal | None) -> Span | None:
    return Span(value, value) if value is not None else None


def _population_ok(a: Reading, p: Reading) -> bool:
    if (
        a.clearance is not None
        and p.clearance is not None
        and not _bands_meet(a.clearance, p.clearance)
    ):
        return False  # clearance 25 is not the 30-80 ml/min band
    if not a.populations:
        return True
    risk = a.populations & a.conditions  # kidney or liver impairment, pregnancy, alcohol...
    if risk and not risk <= p.populations:
        return False
    if not p.populations:
        # the general dose is the adults'; a dose per kg of body weight, or for a band of
        # body weights, is anyone's (of that weight), and so is how often a dose is taken
        # where no amount is given ("Take once daily, with or without food"); a prohibition
        # for no group in particular ("Do not apply to broken skin") holds for every age
        return a.populations <= {"adult"} or (
            (
                _per_kg(p)
                or p.weight is not None
                or (p.kind == "dose" and p.amount is None)
                or (p.kind == "contraindication" and p.polarity in NEGATIVE)
            )
            and a.populations <= _WEIGHED
        )
    grown = {"adult", "elderly"}
    if (
        a.age is not None
        and p.age is not None
        and a.populations | (p.populations & _AGE_GROUPS) <= grown
    ):
        # 68 years old: "people over 50" speaks about them, also in a list of groups ("people
        # over 60, people with liver disease: ...")
        return _ages_overlap(a.age, p.age)
    if (
        a.age is not None
        and p.age is not None
        and a.populations <= _MINORS
        and p.populations & _MINORS
    ):
        # a girl of 16 is one of "jongeren vanaf 12 jaar", a child of 9 none of "adolescents
        # 12 to 17": among the young, the ages decide, not the word for the group
        return _ages_overlap(a.age, p.age)
    if not a.populations & p.populations:
        return False
    if a.age is not None and p.age is not None and a.populations & p.populations - {"adult"}:
        return _ages_overlap(a.age, p.age)
    return True


def _per_kg(r: Reading) -> bool:
    """Whether the reading's amount is per kg of body weight ("10 mg/kg")."""
    return r.unit is not None and r.unit.endswith("/kg")


def _span_ok(a: Span, p: Span) -> bool:
    """Whether the answer's span is inside what the passage's span allows."""
    if a.kind == "exact":
        if p.kind == "exact":
            return p.low <= a.low and a.high <= p.high
        if p.kind == "max":
            return a.high <= p.high
        return a.low >= p.low
    if a.kind == "max":
        return p.kind != "min" and a.high == p.high
    return p.kind != "max" and a.low == p.low


#: A dose a week or less often: months and weeks are counted loosely ("every 3 months" is
#: "every 12 weeks", "once a month" is "every 4 weeks"), within this share of the period.
_WEEKLY: Final = _ONE / Decimal(7)
_LOOSE: Final = Decimal("0.1")


def _frequency_ok(a: Span, p: Span) -> bool:
    """:func:`_span_ok` for how often; for doses a week or less often, within
    :data:`_LOOSE` of the passage's period (round 26)."""
    if _span_ok(a, p):
        return True
    if a.kind != "exact" or p.kind != "exact" or max(a.high, p.high) > _WEEKLY:
        return False
    return p.low * (1 - _LOOSE) <= a.low and a.high <= p.high * (1 + _LOOSE)


_PERIOD_DAYS: Final = {"day": _ONE, "week": Decimal(7)}


def _one_dose_per(r: Reading, period: str) -> bool:
    """Whether the reading says exactly one dose per ``period`` ("once a day", "once a week")."""
    f = r.frequency
    days = _PERIOD_DAYS.get(period)
    return (
        days is not None
        and f is not None
        and f.kind == "exact"
        and f.low == f.high
        and f.low * days == _ONE
    )


def _split_day(r: Reading) -> bool:
    """Whether a reading is a day's amount split into at least two doses."""
    f = r.frequency
    return r.basis == "day" and f is not None and f.kind == "exact" and f.low >= 2


def _basis_ok(a: Reading, p: Reading) -> bool:
    """Same basis, or per dose against per day / week when one dose is taken per that period
    ("7.5 mg once a week" = "7.5 mg per week"). An amount that names no basis is one dose: it
    is no day's amount that the passage splits into two or more doses ("start with 800 mg"
    against "800 mg a day in two divided doses"), which only the day's restated share backs."""
    if a.basis is None and _split_day(p):
        return False
    if a.basis is None or p.basis is None or a.basis == p.basis:
        return True
    bases = {a.basis, p.basis}
    if "dose" not in bases:
        return False
    (period,) = bases - {"dose"}
    return _one_dose_per(a, period) or _one_dose_per(p, period)


def _qualifier_ok(a: Reading, p: Reading) -> bool:
    return not (a.qualifier in _LIMITS and p.qualifier in _LIMITS and a.qualifier != p.qualifier)


def _amount_agrees(a: Reading, p: Reading) -> bool:
    return (
        a.amount is not None
        and p.amount is not None
        and a.unit == p.unit
        and _basis_ok(a, p)
        and _qualifier_ok(a, p)
        and _span_ok(a.amount, p.amount)
    )


def _same_amount_other_basis(a: Reading, p: Reading) -> bool:
    return (
        a.amount is not None
        and p.amount is not None
        and a.unit == p.unit
        and not _basis_ok(a, p)
        and a.amount.high == p.amount.high
    )


def _condition_score(a: Reading, p: Reading) -> float:
    """How well the passage reading's conditions cover the answer's (0 when they differ)."""
    if len(a.drugs) >= 2 and a.drugs <= p.drugs:
        return 1.5  # an interaction: the passage sentence names both drugs
    if a.conditions and p.conditions:
        shared = a.conditions & p.conditions
        if not shared:
            return 0.0
        ages = a.age is not None and p.age is not None
        if "child" in shared and ages and not _ages_overlap(a.age, p.age):  # type: ignore[arg-type]
            return 0.0
        return 1.0 + len(shared) / len(a.conditions)
    if a.conditions:
        return 0.0
    if not a.condition_units:
        return 1.0
    share = len(a.condition_units & p.condition_units) / len(a.condition_units)
    return share if share >= _CONDITION_OVERLAP else 0.0


def _explain(
    status: Status,
    a: Reading,
    supporting: Sequence[PassageReading],
    against: Sequence[PassageReading],
) -> str:
    answer = f"answer: {a.describe()}"
    if status == "supported":
        p = supporting[0]
        return f"{answer}; passage {p.doc_id}: {p.reading.describe(with_drug=False)}"
    if status == "contradicted":
        p = against[0]
        return f"{answer}; passage {p.doc_id}: {p.reading.describe(with_drug=False)}"
    if status == "conflict":
        s, c = supporting[0], against[0]
        return (
            f"{answer}; passages disagree: {s.doc_id}: {s.reading.describe(with_drug=False)}; "
            f"{c.doc_id}: {c.reading.describe(with_drug=False)}"
        )
    drug = ", ".join(sorted(a.drugs)) or "this drug"
    who = sorted(a.populations)
    scope = f" for {', '.join(who)}" if who else ""
    return f"{answer}; no retrieved passage says this about {drug}{scope}"


def _dose_facets(
    a: Reading, pool: Sequence[PassageReading]
) -> tuple[Status, list[PassageReading], list[PassageReading]]:
    statuses: list[Status] = []
    support: list[PassageReading] = []
    against: list[PassageReading] = []
    if a.amount is not None:
        same_unit = [p for p in pool if p.reading.amount is not None and p.reading.unit == a.unit]
        # A starting / usual / maximum dose is checked against the passages' dose of that kind
        # when they state one ("start 20 mg" against "start 10 mg", not "usual 20 mg").
        # A starting dose that a passage states is the starting dose: "may be increased to
        # 20 mg" does not back "start with 20 mg" beside "start with 10 mg".
        if a.qualifier is not None and any(p.reading.qualifier == a.qualifier for p in same_unit):
            kept = (a.qualifier,) if a.qualifier == "start" else (a.qualifier, None)
            same_unit = [p for p in same_unit if p.reading.qualifier in kept]
        agree = [
            p
            for p in same_unit
            if _amount_agrees(a, p.reading)
            and not _cap_only(a, p, pool)
            and not _below_the_dose(a, p, same_unit)
        ]
        if a.populations and a.qualifier is None and _group_dose_stated(a, same_unit, agree):
            agree = [p for p in agree if p.reading.qualifier != "max"]
        other_basis = [p for p in same_unit if _same_amount_other_basis(a, p.reading)]
        differ = other_basis + [p for p in same_unit if p not in agree and p not in other_basis]
        status, clash = _facet_status(a, agree, differ, limit=a.qualifier in ("max", "min"))
        statuses.append(status)
        support += agree
        against += clash
    if a.frequency is not None:
        stated = [p for p in pool if p.reading.frequency is not None]
        # The frequency of the statement that gave the amount: "100 mg four times a day" is
        # not backed by "50 mg four times a day, or 100 mg twice a day".
        with_amount = [p for p in support if p.reading.frequency is not None]
        # "7.5 mg once a week" against "7.5 mg per week": one dose per period, also beside
        # another statement that backs the amount and gives a frequency of its own ("30 mg
        # once a day" against "at most 60 mg a day" and "60 mg every other day")
        per_period = [
            p
            for p in support
            if p.reading.frequency is None
            and p.reading.basis is not None
            and _one_dose_per(a, p.reading.basis)
        ]
        if with_amount:
            stated = with_amount + per_period
        if not stated:
            stated = per_period
        agree = [
            p
            for p in stated
            if p.reading.frequency is None or _frequency_ok(a.frequency, p.reading.frequency)
        ]
        differ = [p for p in stated if p not in agree]
        if a.amount is None and _only_a_bound(a.frequency, agree, differ):
            agree = []  # "every 6 hours" against "60 mg every 4 hours … at least 4 hours apart"
        status, clash = _facet_status(a, agree, differ, limit=False)
        statuses.append(status)
        support += agree
        against += clash
    if a.duration is not None:
        # the length of the statements that agreed on how often too ("1 mg twice daily" for
        # "1 mg twice a day until the end of the 12-week course", not the kidney patients' "1
        # mg once daily" after "for 3 days")
        agreeing = [
            p
            for p in support
            if a.frequency is None
            or p.reading.frequency is None
            or _frequency_ok(a.frequency, p.reading.frequency)
        ]
        lasting, course_support, course_clash = _duration_facet(a, pool, agreeing)
        if lasting is not None:
            statuses.append(lasting)
            support, against = course_support, against + course_clash
    if not statuses:
        return "unknown", [], []
    return worst(statuses), support, against


def _only_a_bound(
    f: Span, agree: Sequence[PassageReading], differ: Sequence[PassageReading]
) -> bool:
    """Whether an exact frequency stated alone meets only the passages' bounds on how often
    (at most 6 a day, from "at least 4 hours apart") while they state the regimen's own
    frequency with its amount, another one: the bound does not make that other regimen
    right."""
    return (
        f.kind == "exact"
        and bool(agree)
        and all(
            p.reading.frequency is not None and p.reading.frequency.kind != "exact" for p in agree
        )
        and any(
            p.reading.amount is not None
            and p.reading.frequency is not None
            and p.reading.frequency.kind == "exact"
            for p in differ
        )
    )


def _duration_facet(
    a: Reading, pool: Sequence[PassageReading], support: list[PassageReading]
) -> tuple[Status | None, list[PassageReading], list[PassageReading]]:
    """How long the course lasts, judged against the passage statements that agreed on the
    rest and state a length ("50 mg four times a day for 3 days" does not back "… for 7
    days"); an answer that states only a length meets the drug's stated lengths. ``None``:
    no passage reading to judge it by (the number is still looked for among the passages)."""
    courses = [
        p
        for p in pool
        if p.reading.duration is not None
        and p.reading.amount is None
        and p.reading.frequency is None
    ]
    if a.amount is None and a.frequency is None:
        timed = [p for p in pool if p.reading.duration is not None]
    else:  # the length stated with the dose, else a sentence of its own ("no longer than 5 days")
        timed = [p for p in support if p.reading.duration is not None] or courses
    if not timed:
        return None, support, []
    agree = [p for p in timed if _course_ok(a.duration, p.reading.duration)]  # type: ignore[arg-type]
    if agree:
        return "supported", [p for p in support if p not in timed or p in agree] or agree, []
    return "contradicted", [], timed


#: How far a length in months may spread (a month is 28 to 31 days) and still be one length.
_MONTH_SPREAD: Final = Decimal("0.12")


def _course_ok(a: Span, p: Span) -> bool:
    """:func:`_span_ok` for how long a course lasts; a length in months the answer gives (a
    narrow spread of days) also meets a passage's exact days within it ("2 tháng" for "60
    ngày", "3 months" for "90 days") (round 27)."""
    if _span_ok(a, p):
        return True
    return (
        a.kind == p.kind == "exact"
        and a.low <= p.low <= p.high <= a.high
        and a.high - a.low <= a.low * _MONTH_SPREAD
    )


def _below_the_dose(a: Reading, p: PassageReading, pool: Sequence[PassageReading]) -> bool:
    """Whether ``p`` is a maximum that an exact amount meets only by being lower than the dose
    the passages state on the same basis ("450–975 mg a day" against "750–1,500 mg a day; at
    most 2,000 mg a day"): the ceiling does not make an amount under the dose range right
    (round 25)."""
    if a.amount is None or a.amount.kind != "exact" or a.qualifier in ("max", "min"):
        return False
    r = p.reading
    if r.amount is None or (r.amount.kind != "max" and r.qualifier != "max"):
        return False
    return any(
        q.reading.amount is not None
        and q.reading.amount.kind == "exact"
        and q.reading.qualifier in (None, "usual")
        and q.reading.basis == r.basis
        and q.reading.drugs == r.drugs
        and a.amount.low < q.reading.amount.low
        for q in pool
    )


def _cap_only(a: Reading, p: PassageReading, pool: Sequence[PassageReading]) -> bool:
    """Whether ``p`` is only the cap of a per-kg dose its sentence states ("10–20 mg/kg twice
    daily, with a maximum of 750 mg per dose"): the cap bounds the dose but does not make an
    exact amount under it right (500 mg for a child of unknown weight)."""
    return (
        a.amount is not None
        and a.amount.kind == "exact"
        and p.reading.amount is not None
        and p.reading.amount.kind == "max"
        and any(
            q.sentence == p.sentence
            and q.doc_id == p.doc_id
            and q.reading.unit is not None
            and q.reading.unit.endswith("/kg")
            for q in pool
        )
    )


def _group_dose_stated(
    a: Reading, same_unit: Sequence[PassageReading], agree: Sequence[PassageReading]
) -> bool:
    """Whether the passages state the dose of the answer's own group (not adults in general) on
    its basis, and that dose is not the answer's: then a maximum the amount stays under does not
    back it ("Người cao tuổi: 7,5 mg/ngày … Liều tối đa 15 mg/ngày" against 15 mg a day for an
    older person; "ouderen: 5 mg per dag; maximaal 10 mg per dag" against 10 mg for someone
    of 80). An exact amount with no qualifier of its own only."""
    group = a.populations - {"adult"}
    if not group or a.qualifier is not None or a.amount is None or a.amount.kind != "exact":
        return False
    return any(
        p.reading.qualifier is None
        and p.reading.amount is not None
        and p.reading.amount.kind == "exact"
        and p.reading.basis == a.basis
        and p.reading.populations & group
        and p not in agree
        for p in same_unit
    )


def _facet_status(
    a: Reading, agree: list[PassageReading], differ: list[PassageReading], *, limit: bool
) -> tuple[Status, list[PassageReading]]:
    """The facet's status and the passage readings that speak against the answer."""
    if agree:
        if limit:
            docs = {p.doc_id for p in agree}
            drugs = frozenset().union(*(p.reading.drugs for p in agree))
            groups = {p.reading.populations for p in agree}
            clash = [
                p
                for p in differ
                if p.doc_id not in docs
                and p.reading.drugs & drugs
                and p.reading.populations in groups
                and p.reading.qualifier == a.qualifier
                and p.reading.basis == a.basis
            ]
            if clash:
                return "conflict", clash
        return "supported", []
    return ("contradicted" if differ else "unknown"), differ


def _polarity_facet(
    a: Reading, pool: Sequence[PassageReading]
) -> tuple[Status, list[PassageReading], list[PassageReading]]:
    scored = [(p, _condition_score(a, p.reading)) for p in pool]
    scored = [(p, s) for p, s in scored if s > 0]
    if not scored:
        return "unknown", [], []
    best = max(s for _, s in scored)
    top = [p for p, s in scored if s == best]
    negative = a.polarity in NEGATIVE
    agree = [p for p in top if (p.reading.polarity in NEGATIVE) == negative]
    differ = [p for p in top if p not in agree]
    if agree and differ:
        return "conflict", agree, differ
    if agree:
        return "supported", agree, []
    return "contradicted", [], differ


def _pool(a: Reading, passages: Sequence[PassageReading]) -> list[PassageReading]:
    return [
        p
        for p in passages
        if p.reading.kind == a.kind and _drugs_ok(a, p.reading) and _population_ok(a, p.reading)
    ]


def _judge(
    a: Reading, passages: Sequence[PassageReading]
) -> tuple[Status, list[PassageReading], list[PassageReading]]:
    pool = _pool(a, passages)
    named = [p for p in pool if p.reading.drugs]
    if a.drugs and any(a.drugs & p.reading.drugs for p in named):
        pool = [p for p in pool if a.drugs & p.reading.drugs]
    if a.kind == "dose":
        return _dose_facets(a, pool)
    return _polarity_facet(a, pool)


#: Rounding allowed when a per-kg dose is worked out for a weight ("0.15 mg/kg for 14 kg is
#: about 2 mg"): the answer's amount may be this share away from the product.
_WEIGHT_ROUNDING: Final = Decimal("0.1")


def _for_weight(
    p: PassageReading,
    unit: str,
    weight: Decimal,
    *,
    limit: bool = False,
    cap: Decimal | None = None,
) -> tuple[PassageReading, PassageReading] | None:
    """A per-kg passage reading worked out for a body weight (``0.15 mg/kg`` × 14 kg = 2.1 mg):
    ``(as judged, with room for rounding; as shown)``, or ``None`` when it is not per kg of
    ``unit``. A ``limit`` (the answer's maximum or minimum) is judged against the product
    itself: a limit meets the passage's bound, or the top of its range, only where it equals
    it ("at most 900 mg" for 45 kg at no more than 20 mg/kg), and room would move that bound.
    ``cap``: the most its sentence allows in ``unit`` (:func:`_sentence_cap`), which the
    product does not pass."""
    r = p.reading
    if r.amount is None or r.unit != f"{unit}/kg":
        return None
    # to a millionth: a share of a day worked out for a weight (50/3 mg/kg × 18 kg) is 300 mg
    low, high = _millionths(r.amount.low * weight), _millionths(r.amount.high * weight)
    if cap is not None:
        low, high = min(low, cap), min(high, cap)
    exact = Span(low.normalize(), high.normalize(), r.amount.kind)
    sentence = f"{p.sentence} [{r.amount.text(r.unit or '')} × {format_decimal(weight)} kg]"
    shown = replace(p, reading=replace(r, amount=exact, unit=unit), sentence=sentence)
    # worked out, it is judged for the groups it was for: a per-kg dose without one is anyone's
    groups = r.populations or _WEIGHED
    if limit:
        return replace(shown, reading=replace(shown.reading, populations=groups)), shown
    room = Span(
        (low * (1 - _WEIGHT_ROUNDING)).normalize(),
        (high * (1 + _WEIGHT_ROUNDING)).normalize(),
        r.amount.kind,
    )
    return replace(shown, reading=replace(r, amount=room, unit=unit, populations=groups)), shown


_MILLIONTH: Final = Decimal("0.000001")


def _millionths(value: Decimal) -> Decimal:
    return value.quantize(_MILLIONTH) if value.adjusted() < 15 else value


def _per_weight(
    a: Reading, passages: Sequence[PassageReading], weight: Decimal | None
) -> tuple[Status, list[PassageReading], list[PassageReading]] | None:
    """An amount for a stated body weight judged against the per-kg passage readings of the
    same drug, worked out for that weight; ``None`` when there are none."""
    if weight is None or a.kind != "dose" or a.amount is None or a.unit not in _PER_KG_UNITS:
        return None
    limit = a.amount.kind != "exact"
    pairs = [
        w
        for p in passages
        if (
            w := _for_weight(p, a.unit, weight, limit=limit, cap=_sentence_cap(p, a.unit, passages))
        )
        is not None
    ]
    if not pairs:
        return None
    shown = {id(judged): exact for judged, exact in pairs}
    status, support, against = _judge(a, [judged for judged, _ in pairs])
    if status == "unknown":
        return None
    return status, [shown[id(p)] for p in support], [shown[id(p)] for p in against]


def _sentence_cap(
    p: PassageReading, unit: str, passages: Sequence[PassageReading]
) -> Decimal | None:
    """The maximum in ``unit`` that the sentence of the per-kg reading ``p`` states on its
    basis ("1,800 mg or 26 mg/kg, whichever is lower", "10–20 mg/kg, with a maximum of 750 mg
    per dose"): a dose worked out for a weight does not pass it. ``None`` without one."""
    r = p.reading
    caps = [
        q.reading.amount.high
        for q in passages
        if q.sentence == p.sentence
        and q.doc_id == p.doc_id
        and q.reading.unit == unit
        and q.reading.amount is not None
        and (q.reading.qualifier == "max" or q.reading.amount.kind == "max")
        and (q.reading.basis is None or r.basis is None or q.reading.basis == r.basis)
    ]
    return min(caps) if caps else None


def _restated(
    p: PassageReading, passages: Sequence[PassageReading] = (), count: Decimal | None = None
) -> PassageReading | None:
    """A passage dose restated on the other basis with its frequency: per dose × doses a day =
    per 24 h ("2.5 mg twice a day" says 5 mg a day), per 24 h ÷ doses a day = per dose
    ("25–45 mg/kg/day in two divided doses" says 12.5–22.5 mg/kg per dose). The frequency is
    the reading's own, else the one its passage's other readings of the drug and group state
    ("1.200 mg per dag. Verdeel de dagdosis over twee innames").

    A range of doses a day is restated with ``count``, the answer's own number of doses a day,
    when the range holds it: "25–50 mg/kg/day in three or four doses" given three times a day
    is 8.3–16.7 mg/kg per dose, and "0.5–1 g two to four times a day" taken twice is 1–2 g a
    day. Each dose is a share of the day's amount only at a count the passage allows, so a
    count outside the range restates nothing. Without a count, a range of doses a day restates
    a day's exact amount only, over at least two doses ("30–60 mg/kg/ngày, chia làm 3–4 lần"
    says 7.5–20 mg/kg per dose), and never a dose as a day's amount (50–100 mg 4 to 6 times a
    day is no backing for 600 mg a day); ``None`` when nothing is restated."""
    r = p.reading
    f = r.frequency if r.frequency is not None else _passage_frequency(p, passages)
    if r.amount is None or f is None or f.kind != "exact" or f.low <= 0:
        return None
    if f.low != f.high and count is not None:
        if not f.low <= count <= f.high:
            return None
        f = Span(count, count, "exact")
    basis: Basis
    weekly = _times_a_week(f)
    if weekly is not None and r.basis == "dose":
        # "50 IU/kg, 3 lần mỗi tuần": fewer than one dose a day, so its total is the week's
        low, high = r.amount.low * weekly, r.amount.high * weekly
        factor, basis = f"× {format_decimal(weekly)} a week", "week"
    elif f.low == f.high and r.basis == "dose":
        low, high = r.amount.low * f.low, r.amount.high * f.low
        factor, basis = f"× {format_decimal(f.low)}", "day"
    elif r.basis == "day" and (f.low == f.high or (f.low >= 2 and r.amount.kind == "exact")):
        low, high = r.amount.low / f.high, r.amount.high / f.low  # divided: 3000 / 3 is 1000
        factor, basis = f"÷ {_count_text(f)}", "dose"
    else:
        return None
    amount = Span(low.normalize(), high.normalize(), r.amount.kind)
    shown = f"{p.sentence} [{r.amount.text(r.unit or '')} {factor}]"
    reading = replace(r, amount=amount, basis=basis, frequency=f)
    return replace(p, reading=reading, sentence=shown)


_HOURS_A_DAY: Final = Decimal(24)
_DAYS_A_WEEK: Final = Decimal(7)


def _times_a_week(f: Span) -> Decimal | None:
    """The whole number of doses a week of a frequency below one a day ("3 times a week" is
    3/7 a day), or ``None``."""
    if f.low != f.high or not 0 < f.low < 1:
        return None
    weekly = f.low * _DAYS_A_WEEK
    whole = weekly.to_integral_value()
    return whole if whole >= 1 and abs(weekly - whole) < Decimal("0.001") else None


def _course_days(r: Reading) -> Decimal | None:
    """The whole number of days (two or more) of a reading's one stated course length."""
    d = r.duration
    if d is None or d.kind != "exact" or d.low != d.high:
        return None
    days = d.low / _HOURS_A_DAY
    return days if days >= 2 and days == days.to_integral_value() else None


def _totals_a_course(a: Reading, beside: Sequence[Reading]) -> bool:
    """Whether an answer's amount may be the total of its course ("1 viên 100 mg buổi sáng và
    1 viên buổi tối, liên tục 3 ngày, tổng cộng 600 mg"): one exact amount with no basis, no
    frequency and no limit of its own, a course length of whole days, and beside it in the
    sentence a smaller amount in the same unit for that course — the dose the total adds up.
    Alone ("take 600 mg for 3 days") an amount is one dose, never a course's total."""
    if (
        a.amount is None
        or a.amount.kind != "exact"
        or a.basis is not None
        or a.frequency is not None
        or a.qualifier is not None
        or _course_days(a) is None
    ):
        return False
    return any(
        b is not a
        and b.amount is not None
        and b.unit == a.unit
        and b.duration == a.duration
        and b.amount.high < a.amount.low
        for b in beside
    )


def _course_total(
    p: PassageReading, passages: Sequence[PassageReading] = ()
) -> PassageReading | None:
    """A passage dose with a course of whole days restated as the course's total: per day ×
    days, a dose per day being the dose × its one number of doses a day ("100 mg x 2 lần/ngày
    trong 3 ngày" totals 600 mg). The total has no basis and no frequency: it is no dose and no
    day's amount. ``None`` without a course length, a limit (a cap is no amount taken), or a
    basis and frequency that give a day's amount."""
    r = p.reading
    days = _course_days(r)
    if days is None or r.amount is None or r.qualifier in ("max", "min"):
        return None
    if r.basis == "dose":
        day = _restated(p, passages)
        if day is None or day.reading.basis != "day" or day.reading.amount is None:
            return None
        per_day, shown = day.reading.amount, day.sentence
    elif r.basis == "day":
        per_day, shown = r.amount, p.sentence
    else:
        return None
    if per_day.kind != "exact":
        return None
    total = Span((per_day.low * days).normalize(), (per_day.high * days).normalize())
    sentence = f"{shown} [× {format_decimal(days)} days]"
    reading = replace(r, amount=total, basis=None, frequency=None)
    return replace(p, reading=reading, sentence=sentence)


def _one_count(a: Reading) -> Decimal | None:
    """The answer's one number of doses a day ("every 8 hours": 3), or ``None``."""
    f = a.frequency
    if f is None or f.kind != "exact" or f.low != f.high:
        return None
    return f.low


def _count_text(f: Span) -> str:
    """A count of doses as the explanation shows it: "3", or "3–4" for a range."""
    lo, hi = format_decimal(f.low), format_decimal(f.high)
    return lo if lo == hi else f"{lo}–{hi}"


def _passage_frequency(p: PassageReading, passages: Sequence[PassageReading]) -> Span | None:
    """The one frequency the other readings of ``p``'s passage state for the same drug and
    group, when they state exactly one: alone ("Verdeel de dagdosis over twee innames") or
    with an amount of the same kind (not a starting dose's "once a day" for a maximum), or one
    exact count beside bounds that hold it ("3 times a day, at least 6 hours apart");
    ``None`` otherwise."""
    r = p.reading
    found = {
        q.reading.frequency
        for q in passages
        if q.passage == p.passage
        and q.doc_id == p.doc_id
        and q.reading.frequency is not None
        and q.reading.kind == "dose"
        and (q.reading.amount is None or q.reading.qualifier == r.qualifier)
        and q.reading.drugs == r.drugs
        and q.reading.populations == r.populations
        and q.reading.age == r.age
    }
    return found.pop() if len(found) == 1 else _exact_within_bounds(found)


def _exact_within_bounds(found: set[Span]) -> Span | None:
    """The one exact frequency of ``found`` when the others are only bounds that hold it (at
    most 4 a day, from "at least 6 hours apart", beside "3 times a day"); ``None`` otherwise."""
    exact = [f for f in found if f.kind == "exact"]
    if len(exact) != 1:
        return None
    (count,) = exact
    bounds = found - {count}
    held = all(
        (b.kind == "max" and count.high <= b.high) or (b.kind == "min" and count.low >= b.low)
        for b in bounds
    )
    return count if held else None


def _allowed_groups(a: Reading, passages: Sequence[PassageReading]) -> frozenset[str]:
    """The risk groups of a dose reading that the same drug's passages allow the drug in
    (a positive safety statement for the group, none negative)."""
    risk = a.populations - _AGE_GROUPS
    if not risk:
        return frozenset()
    safety = [
        p.reading
        for p in passages
        if p.reading.kind == "contraindication" and _drugs_ok(a, p.reading) and p.reading.drugs
    ]
    return frozenset(
        g
        for g in risk
        if any(g in r.conditions and r.polarity not in NEGATIVE for r in safety)
        and not any(g in r.conditions and r.polarity in NEGATIVE for r in safety)
    )


#: Groups a dose is set apart for only where a passage speaks of them: an organ's impairment
#: (pregnancy, breastfeeding and children never: a dose for them no passage gives is a finding).
_ORGANS: Final = frozenset({"renal", "hepatic"})


def _dosed_for_group(a: Reading, passages: Sequence[PassageReading]) -> list[PassageReading]:
    """The passage doses of the drug for the age group a positive safety claim is about, alone
    (no risk condition: "it may be used from 3 years", "cho bé 5 tuổi uống được"), with an age
    band that holds the answer's (both without one: any dose for the group). An answer that
    names no drug ("Thuốc dành cho trẻ từ 2 tuổi trở lên") is met by the doses of passages
    that name none either (round 25)."""
    if a.polarity in NEGATIVE or not a.conditions:
        return []
    groups = a.conditions & _AGE_GROUPS
    if groups != a.conditions:
        return []
    return [
        p
        for p in passages
        if p.reading.kind == "dose"
        and p.reading.amount is not None
        and (a.drugs & p.reading.drugs if a.drugs else not p.reading.drugs)
        and groups <= p.reading.populations
        and _age_held(a.age, p.reading.age)
    ]


def _age_held(
    a: tuple[Decimal | None, Decimal | None] | None, p: tuple[Decimal | None, Decimal | None] | None
) -> bool:
    """Whether the passage's age band holds the answer's (a single age or a band), or neither
    states one."""
    if a is None or p is None:
        return a is None and p is None
    if a[0] is not None and a[0] == a[1]:
        return age_within(a[0], p)
    low = a[0] if a[0] is not None else Decimal(0)
    return (p[0] is None or low >= p[0]) and (p[1] is None or (a[1] is not None and a[1] <= p[1]))


def age_within(age: Decimal, band: tuple[Decimal | None, Decimal | None]) -> bool:
    """Whether an age band (``(min, max)`` years, the max not included: "under 12") holds
    ``age``."""
    return (band[0] is None or band[0] <= age) and (band[1] is None or age < band[1])


def _age_bans(a: Reading, passages: Sequence[PassageReading]) -> list[PassageReading]:
    """The drug's negative safety statements about an age group of the answer's, with an age
    band and about age groups alone (not "children with liver disease")."""
    return [
        p
        for p in passages
        if p.reading.kind == "contraindication"
        and p.reading.polarity in NEGATIVE
        and p.reading.age is not None
        and p.reading.conditions <= _AGE_GROUPS
        and a.populations & p.reading.populations
        and _drugs_ok(a, p.reading)
    ]


def _one_age(a: Reading) -> Decimal | None:
    """The answer's single age (a person's, not a band), or ``None``."""
    if a.age is None or a.age[0] is None or a.age[0] != a.age[1]:
        return None
    return a.age[0]


def _advised_against(a: Reading, passages: Sequence[PassageReading]) -> list[PassageReading]:
    """The negative safety statements of the drug's passages about an age band that holds the
    patient's one age ("Not recommended for adults over 65" for a dose given to someone of 72,
    "niet bij kinderen jonger dan 2 jaar" for a boy of 14 months): a dose for that patient is
    advised against, whatever the amount; so is a permission for them ("acetylsalicylzuur kunt u
    haar bij koorts gewoon geven" for a girl of 11 against "niet aan kinderen onder de 16 jaar";
    round 23). Only for a single age (a person's, not a band) and statements about age groups
    alone (:func:`_age_bans`)."""
    age = _one_age(a)
    if (a.kind != "dose" and a.polarity in NEGATIVE) or age is None:
        return []
    return [
        p
        for p in _age_bans(a, passages)
        if p.reading.age is not None and age_within(age, p.reading.age)
    ]


def _past_the_ban(a: Reading, passages: Sequence[PassageReading]) -> list[PassageReading]:
    """The drug's prohibitions for the young below an age that a permission for one older
    patient clears ("your five-year-old can use it" against "Do not use on children under 2
    years"): the passages forbid the group only below that age, and no other statement of
    theirs about the group forbids the patient's age (:func:`_advised_against` finds those).
    Only for a single age and statements about age groups alone (round 25)."""
    age = _one_age(a)
    if a.kind != "contraindication" or a.polarity in NEGATIVE or age is None:
        return []
    if not a.conditions <= _AGE_GROUPS:
        return []
    cleared: list[PassageReading] = []
    for p in _age_bans(a, passages):
        below, limit = p.reading.age or (None, None)
        if below is None and limit is not None and age >= limit:
            cleared.append(p)  # a ban below an age the patient is past
    return cleared


def _treated_group(a: Reading, passages: Sequence[PassageReading]) -> bool:
    """Whether a young patient's group (a child, an infant, an adolescent) is one the same
    drug's passages say it is used in or allowed for, with an age band that holds the patient's
    age when both state one."""
    young = a.populations & _MINORS
    if not young or a.populations - _AGE_GROUPS or not a.drugs:
        return False
    return any(
        p.reading.kind == "contraindication"
        and p.reading.polarity not in NEGATIVE
        and a.drugs & p.reading.drugs
        and young & p.reading.populations
        and not p.reading.conditions - _AGE_GROUPS
        and (a.age is None or p.reading.age is None or _ages_overlap(a.age, p.reading.age))
        for p in passages
    )


def _as_grown_up(a: Reading) -> Reading:
    """``a`` for the general dose: its young group read as adults, its age left out."""
    return replace(a, populations=(a.populations - _MINORS) | {"adult"}, age=None)


def _as_adult(a: Reading) -> Reading:
    """``a`` with an older person read as an adult (what nothing says of older people, the
    adult statement says)."""
    if "elderly" not in a.populations:
        return a
    return replace(a, populations=(a.populations - {"elderly"}) | {"adult"})


def _rate_of(a: Reading, beside: Sequence[Reading], weight: Decimal | None) -> Reading:
    """A per-kg amount that names no basis, on the basis of the amount of its sentence that it
    works out to for the weight (rate × weight = that amount): "600 mg a day (20 mg for each
    kilo)" is 20 mg/kg a day, "30 mg/kg × 14 kg = 420 mg mỗi lần" 30 mg/kg per dose. Else
    ``a`` as it is, which :func:`_basis_ok` takes for one dose."""
    if a.basis is not None or a.amount is None or weight is None or not _per_kg(a):
        return a
    for b in beside:
        if (
            b.amount is not None
            and b.basis is not None
            and a.unit == f"{b.unit}/kg"
            and b.amount.low == a.amount.low * weight
            and b.amount.high == a.amount.high * weight
        ):
            return replace(a, basis=b.basis)
    return a


def _steps_meet(a: Span | None, p: Span | None) -> bool | None:
    """Whether two sizes or paces of steps agree (``None``: one of them is not stated): the
    answer's inside the passage's, or the passage's inside the answer's ("every 1 to 2 days"
    and "after 2 days at the earliest" both allow a step every other day)."""
    if a is None or p is None:
        return None
    return _span_ok(a, p) or _span_ok(p, a)


def _compare_step(a: Reading, passages: Sequence[PassageReading]) -> Comparison:
    """A step of raising the dose (round 25) against the passages' steps for the drug: the
    size and the pace each agree where both state them. With no step in the passages it stays
    ``unknown`` and decides nothing: its numbers are the passages' or not (the number check)."""
    pool = [
        p
        for p in passages
        if p.reading.step and _drugs_ok(a, p.reading) and _population_ok(a, p.reading)
    ]
    support: list[PassageReading] = []
    against: list[PassageReading] = []
    for p in pool:
        r = p.reading
        size = _steps_meet(a.amount, r.amount)
        if size is not None and a.unit != r.unit:
            size = False
        pace = _steps_meet(a.frequency, r.frequency)
        verdicts = [v for v in (size, pace) if v is not None]
        if not verdicts:
            continue
        (support if all(verdicts) else against).append(p)
    status: Status = "supported" if support else "contradicted" if against else "unknown"
    return Comparison(
        status, a, tuple(support), tuple(against), _explain(status, a, support, against)
    )


def compare(
    a: Reading,
    passages: Sequence[PassageReading],
    weight: Decimal | None = None,
    beside: Sequence[Reading] = (),
    named: frozenset[str] | None = None,
    retrieved: Sequence[PassageReading] | None = None,
) -> Comparison:
    """The status of one answer reading against the passages' readings (see the module doc).
    ``weight``: the body weight (kg) the answer or its question states; an amount is then also
    compared with per-kg passage doses worked out for it. ``beside``: the other readings of the
    answer's sentence (a course's total is checked as one only beside the dose it totals).
    ``named``: the populations and conditions the retrieved passages name anywhere (``None``:
    not known); kidney or liver impairment none of them names does not set a dose apart.
    ``retrieved``: the readings of every retrieved passage about the drug, where ``passages``
    are one cited passage's (``None``: ``passages`` are all); what the drug is used for may
    stand in another passage than its dose."""
    if a.step:
        return _compare_step(a, passages)
    # a passage's step of raising the dose is no dose to compare an answer's with (round 25)
    passages = [p for p in passages if not p.reading.step]
    if retrieved is not None:
        retrieved = [p for p in retrieved if not p.reading.step]
    a = _rate_of(a, beside, weight)
    known = a.weight if a.weight is not None else _point(weight)
    if known is not None:
        # a dose for another body weight than the patient's is not about them ("12 kg to
        # 25 kg: 10 mg" for a child of 38 kg; round 23)
        passages = [
            p for p in passages if p.reading.weight is None or _bands_meet(known, p.reading.weight)
        ]
    status, support, against = _judge(a, passages)
    if status in ("unknown", "contradicted"):
        by_weight = _per_weight(a, passages, weight)
        if by_weight is not None and (status == "unknown" or by_weight[0] == "supported"):
            status, support, against = by_weight
    if status in ("unknown", "contradicted") and a.kind == "dose" and a.amount is not None:
        # An amount on the other basis than the passage writes it: per day for a dose taken
        # so many times a day, or per dose for a day's amount split into so many doses. An
        # amount that names no basis ("600 mg 's ochtends en 600 mg 's avonds") is one dose:
        # it meets a day's amount split, never doses multiplied into a day's.
        count = _one_count(a)
        restated = [
            r
            for p in passages
            if (r := _restated(p, passages, count)) is not None
            and (a.basis is not None or r.reading.basis == "dose")
        ]
        if restated:
            both = [*passages, *restated]
            again = _judge(a, both)
            if again[0] != "supported":
                again = _per_weight(a, both, weight) or again
            if again[0] == "supported":
                status, support, against = again
    if status in ("unknown", "contradicted") and _totals_a_course(a, beside):
        totals = [t for p in passages if (t := _course_total(p, passages)) is not None]
        if totals:
            again = _judge(a, totals)
            if again[0] == "supported":
                status, support, against = again
    if status == "unknown" and "elderly" in a.populations:
        # Nothing said for older people about this: the adult statement applies to them.
        status, support, against = _judge(_as_adult(a), passages)
    if status == "unknown" and a.kind == "dose":
        allowed = _allowed_groups(a, passages)
        if allowed:
            # No dose of its own for the group, and the drug's passages allow its use there
            # ("Tijdens de zwangerschap mag Canesten … worden gebruikt"): the general dose.
            general = replace(
                a, populations=a.populations - allowed, conditions=a.conditions - allowed
            )
            status, support, against = _judge(general, passages)
            if status == "unknown" and "elderly" in general.populations:
                # An older person in a group the passages allow (no dose adjustment in kidney
                # impairment, for a man of 72): the adult dose, as for older people above.
                status, support, against = _judge(_as_adult(general), passages)
    if (
        status == "unknown"
        and a.kind == "dose"
        and _treated_group(a, passages if retrieved is None else retrieved)
    ):
        # The drug's passages say it is for the patient's age ("used … in adults and children
        # aged 1 year and older") and give one dose for all: that dose is the patient's.
        for_all = [p for p in passages if not p.reading.populations]
        status, support, against = _judge(_as_grown_up(a), for_all)
    if status == "unknown" and a.kind == "dose" and named is not None:
        unspoken = a.populations & _ORGANS - named
        if unspoken:
            # Kidney or liver impairment no retrieved passage speaks of: the passages do not
            # set the dose apart for it, so the general dose is the one to meet (the liver
            # disease the drug treats, the question's "kidneys fine for her age").
            general = replace(
                a, populations=a.populations - unspoken, conditions=a.conditions - unspoken
            )
            status, support, against = _judge(_as_adult(general), passages)
    if status == "unknown" and a.kind == "contraindication":
        dosed = _dosed_for_group(a, passages)
        if dosed:
            # No safety statement about the group, and the passages give its dose: its use is
            # what they describe ("children from 3 years: 1 drop twice a day" backs "it may be
            # used from 3 years")
            status, support, against = "supported", dosed, []
    if status == "unknown":
        cleared = _past_the_ban(a, passages)
        if cleared:
            status, support, against = "supported", cleared, []
    if a.age is not None and status in ("supported", "unknown"):
        advised_against = _advised_against(a, passages)
        if advised_against:
            status, support, against = "contradicted", [], advised_against
    # The closest contradiction first: the same amount on another basis, then the same basis
    # and kind of dose ("max 8000 mg per 24 h" against "max 4000 mg per 24 h").
    against.sort(
        key=lambda p: (
            not _same_amount_other_basis(a, p.reading),
            p.reading.basis != a.basis,
            p.reading.qualifier != a.qualifier,
        )
    )
    return Comparison(
        status, a, tuple(support), tuple(against), _explain(status, a, support, against)
    )
