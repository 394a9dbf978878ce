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

from collections.abc import Sequence
from dataclasses import dataclass
from decimal import Decimal

from schemas.events import Passage
from services.grounding.quantities import Quantity, format_decimal, quantities
from services.grounding.text import passage_units

__all__ = ["Evidence", "PassageEvidence", "Verdict", "ground"]


@dataclass(frozen=True, slots=True)
class PassageEvidence:
    doc_id: str
    text: str
    units: frozenset[str]
    keys: frozenset[str]
    numbers: frozenset[Decimal]


@dataclass(frozen=True, slots=True)
class Verdict:
    """The deterministic outcome for one claim against some passages."""

    grounded: bool
    support: float
    best: int | None
    numbers_missing: tuple[str, ...]


def _prepare(passage: Passage, language: str | None) -> PassageEvidence:
    found = quantities(passage.text, language)
    return PassageEvidence(
        doc_id=passage.doc_id,
        text=passage.text,
        units=passage_units(passage.text, language),
        keys=frozenset(q.key for q in found if q.has_unit),
        numbers=frozenset(q.written for q in found),
    )


class Evidence:
    """Passages in retrieval order, their quantities and content units, and their ids."""

    def __init__(self, passages: Sequence[Passage], language: str | None) -> None:
        self.passages = tuple(_prepare(p, language) for p in passages)
        self.language = language
        self.keys = frozenset().union(*(p.keys for p in self.passages))
        self.numbers = frozenset().union(*(p.numbers for p in self.passages))
        self.by_doc: dict[str, list[int]] = {}
        for i, p in enumerate(self.passages):
            self.by_doc.setdefault(p.doc_id, []).append(i)
        # Quantities of each document (all its chunks together), for citation checks.
        self.doc_keys = {
            d: frozenset().union(*(self.passages[i].keys for i in idx))
            for d, idx in self.by_doc.items()
        }
        self.doc_numbers = {
            d: frozenset().union(*(self.passages[i].numbers for i in idx))
            for d, idx in self.by_doc.items()
        }
        # [n] markers count passages by rank when every passage has one, else by list order.
        if passages and all(p.rank is not None for p in passages):
            self.order = sorted(range(len(passages)), key=lambda i: (passages[i].rank, i))
        else:
            self.order = list(range(len(passages)))

    def nth(self, n: int) -> PassageEvidence | None:
        """The passage a ``[n]`` marker means (1-based), or ``None`` when out of range."""
        return self.passages[self.order[n - 1]] if 1 <= n <= len(self.order) else None


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


def ground(
    units: frozenset[str],
    found: Sequence[Quantity],
    evidence: Evidence,
    *,
    threshold: float,
    bare_numbers: bool,
    doc: str | None = None,
) -> Verdict:
    """Ground one claim — its content ``units`` (:func:`~services.grounding.text.claim_units`)
    and its quantities ``found`` — in all passages, or in the passages of the document ``doc``."""
    if doc is None:
        indices = list(range(len(evidence.passages)))
        keys, numbers = evidence.keys, evidence.numbers
    else:
        indices = evidence.by_doc.get(doc, [])
        keys, numbers = (
            evidence.doc_keys.get(doc, frozenset()),
            evidence.doc_numbers.get(doc, frozenset()),
        )
    if not indices:
        return Verdict(False, 0.0, None, _missing(found, frozenset(), frozenset(), bare_numbers))
    chosen = [evidence.passages[i] for i in indices]
    missing = _missing(found, keys, numbers, bare_numbers)
    best, support = indices[0], 1.0
    if units:
        best, support = indices[0], -1.0
        for i, p in zip(indices, chosen, strict=True):
            share = len(units & p.units) / len(units)
            if share > support:
                best, support = i, share
    grounded = not missing and support >= threshold
    return Verdict(grounded, round(support, 6), best, missing)
