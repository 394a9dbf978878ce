"""Totals an answer works out from its own figures (round 26).

An answer that gives a dose often adds up what it comes to: "one 600 mg tablet every 12 hours
for five days, so ten tablets in all", "mỗi lần 1 viên, ngày 2 lần, trong 14 ngày; tổng cộng 28
viên", "drie tabletten per dag, acht weken lang: in totaal 168 tabletten". Read as a dose, such
a total is a dose no passage states (ten tablets of 600 mg at once), and its number is in no
passage either. It states nothing new: it is the product of figures the answer states itself,
and those are checked.

An amount is **worked out** when a phrase of the language's ``totals`` (``medical_cues.yaml``:
"in total", "in all", "in totaal", "tổng cộng") stands right beside it, it is one exact amount
with no denominator of time, and its value is what a figure the answer stated before it (or in
the same sentence) in the same unit — or one, for a count of tablets, drops or sachets — comes
to over a course the answer states: times its doses a day ("every 12 hours" is two; "twice a
day" as the reader read it; one when it states none) and its number of days, or times a count
of doses it states ("6 lần", "× 3"). Worked out, it is no reading and no number to look for
among the passages. A total that is not the product of the answer's own
figures is read as before, so a total that contradicts the dose it follows still raises a
finding.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Final

from services.grounding.medical.reading import Reading
from services.grounding.quantities import Amount
from services.grounding.tokens import Tokens, phrase_spans

__all__ = ["Figures", "worked_out_totals"]

#: Units whose amounts count things taken (tablets, drops, doses): such a total may be a
#: product of counts alone ("6 doses of 2 tablets": 12 tablets).
_COUNTED: Final = frozenset({"tablet", "puff", "sachet", "drop", "times"})
_DAY: Final = Decimal(24)
#: How far a total phrase may stand before its amount ("in totaal zijn dat 168 tabletten") and
#: after it ("ten tablets in all"), in tokens between them.
_BEFORE: Final = 3
_AFTER: Final = 1


@dataclass(slots=True)
class Figures:
    """What the answer has stated so far: every amount's value by unit; the numbers of days of
    its courses; its numbers of doses a day ("every 12 hours": 2, and the frequencies the reader
    read, "twice a day"); and its counts of doses ("6 lần", "× 3"). Sentences are kept as they
    come and read into these sets only when a total asks (most answers state none)."""

    stated: list[tuple[Sequence[Amount], Sequence[Reading]]] = field(default_factory=list)

    def add(self, found: Sequence[Amount], readings: Sequence[Reading] = ()) -> None:
        self.stated.append((found, readings))

    def totals(
        self, unit: str, extra: Sequence[Amount] = (), readings: Sequence[Reading] = ()
    ) -> set[Decimal]:
        """What a dose in ``unit`` the answer states comes to (one, for a count of things
        taken): over a course, times its doses a day (one when the answer states none) and its
        days; or times a count of doses. ``extra`` and ``readings``: the sentence's own."""
        base: set[Decimal] = {Decimal(1)} if unit in _COUNTED else set()
        days: set[Decimal] = set()
        per_day: set[Decimal] = set()
        doses: set[Decimal] = set()
        for found, read in (*self.stated, (extra, readings)):
            for a in found:
                for q in a.parts:
                    if q.unit == unit and q.value > 0:
                        base.add(q.value)
                    if q.unit == "h" and q.value >= _DAY and q.value % _DAY == 0:
                        days.add(q.value / _DAY)
                    elif q.unit == "h" and 0 < q.value < _DAY and _DAY % q.value == 0:
                        per_day.add(_DAY / q.value)
                    elif q.unit in ("", "times") and _whole(q.value):
                        doses.add(q.value)
            for r in read:
                f = r.frequency
                if f is not None and f.kind == "exact" and f.low == f.high and _whole(f.low):
                    per_day.add(f.low)
        per_day = per_day or {Decimal(1)}
        out: set[Decimal] = set()
        for b in base:
            out.update(b * f * d for f in per_day for d in days)
            out.update(b * n for n in doses if n >= 2)
        return out


def _whole(value: Decimal) -> bool:
    """A whole number of at least one."""
    return value >= 1 and value == value.to_integral_value()


def _beside_total(t: Tokens, a: Amount, phrases: Sequence[tuple[str, ...]]) -> bool:
    """Whether a total phrase ends at most :data:`_BEFORE` tokens before the amount or starts
    at most :data:`_AFTER` tokens after it."""
    words, longest = t.words, max(map(len, phrases))
    before = phrase_spans(words, max(0, a.t0 - _BEFORE - longest), a.t0, phrases)
    if any(e >= a.t0 - _BEFORE for _, e in before):
        return True
    after = phrase_spans(words, a.t1, min(len(words), a.t1 + _AFTER + longest), phrases)
    return any(s <= a.t1 + _AFTER for s, _ in after)


def worked_out_totals(
    t: Tokens,
    found: Sequence[Amount],
    readings: Sequence[Reading],
    before: Figures,
    phrases: Sequence[tuple[str, ...]],
) -> list[Amount]:
    """The amounts of the sentence ``t`` that are totals worked out from the answer's own
    figures: those stated before (``before``) and this sentence's other amounts and readings."""
    if not phrases:
        return []
    firsts = {p[0] for p in phrases}
    if firsts.isdisjoint(t.words):
        return []  # no total phrase in the sentence: most sentences
    out: list[Amount] = []
    for a in found:
        if (
            len(a.parts) != 1
            or a.per_time is not None
            or a.per_dose
            or not _beside_total(t, a, phrases)
        ):
            continue
        total = a.parts[0]
        others = [b for b in found if b is not a]
        if total.value in before.totals(total.unit, others, readings):
            out.append(a)
    return out
