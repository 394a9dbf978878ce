"""Rotation of the evaluation sets: the last N periods are active, older ones retire.

Retiring never deletes silently: :func:`rotate` returns the retired cases so the caller writes
them to the archive (a topic or file) *before* it forgets the periods' sampler state
(``EvalsetSampler.forget``).

Near-duplicates
    Within the active set, cases whose questions normalise to the same text are duplicates
    (:func:`normalise_question`): Unicode NFKC, case folding, punctuation and symbols removed,
    whitespace collapsed. Digits are **kept**: ``500 mg`` and ``1000 mg`` are different medical
    questions. One case per group is kept — a labelled one first, then the most recent period,
    then the smallest case id — and the others are returned, not dropped. Cases without a
    question are never duplicates. Deduplication serves the evaluation view; population-weighted
    estimates (``missrate``) should use the undeduplicated sample, whose inclusion probabilities
    are those of the design.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Iterable, Sequence

from pydantic import BaseModel, ConfigDict

from schemas.evalset import EvalCase
from services.evalsets.periods import kind_of, periods_order_key

__all__ = ["Dedup", "Rotation", "active_periods", "dedupe", "normalise_question", "rotate"]


def normalise_question(text: str) -> str:
    """The dedup key of a question.

    >>> normalise_question("  What is the MAX dose of Paracetamol?? ")
    'what is the max dose of paracetamol'
    >>> normalise_question("Liều 500 mg?") == normalise_question("liều 500mg") # spaces differ
    False
    >>> normalise_question("Liều  500 mg!") == normalise_question("liều 500 mg")
    True
    """
    folded = unicodedata.normalize("NFKC", text).casefold()
    kept = "".join(" " if unicodedata.category(ch)[0] in "PSZC" else ch for ch in folded)
    return " ".join(kept.split())


def active_periods(periods: Iterable[str], current: str, n: int) -> list[str]:
    """The ``n`` most recent periods up to and including ``current``, oldest first."""
    if n < 1:
        raise ValueError("n must be >= 1")
    kind = kind_of(current)
    start = periods_order_key(current)
    known = sorted(
        {p for p in periods if kind_of(p) == kind and periods_order_key(p) <= start} | {current},
        key=periods_order_key,
    )
    return known[-n:]


class Rotation(BaseModel):
    """Which periods stay active and the cases that retire to the archive."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    active_periods: list[str]
    retired_periods: list[str]
    active: list[EvalCase]
    retired: list[EvalCase]


def rotate(cases: Sequence[EvalCase], current: str, n: int = 4) -> Rotation:
    """Split cases into the active set (last ``n`` periods up to ``current``) and the retired.

    Cases of periods *after* ``current`` (clock skew, late configuration) stay active.
    """
    periods = {c.period for c in cases}
    active = set(active_periods(periods, current, n))
    start = periods_order_key(current)
    retired_periods = sorted(
        (p for p in periods if p not in active and periods_order_key(p) < start),
        key=periods_order_key,
    )
    gone = set(retired_periods)
    return Rotation(
        active_periods=sorted(active, key=periods_order_key),
        retired_periods=retired_periods,
        active=[c for c in cases if c.period not in gone],
        retired=[c for c in cases if c.period in gone],
    )


class Dedup(BaseModel):
    """Cases kept (one per normalised question) and the duplicates set aside."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    kept: list[EvalCase]
    duplicates: list[EvalCase]


def _preference(case: EvalCase) -> tuple[bool, float, str]:
    # sorted() ascending: labelled first, newest period first, then case id.
    return (case.label is None, -periods_order_key(case.period).timestamp(), case.case_id)


def dedupe(cases: Sequence[EvalCase]) -> Dedup:
    """Keep one case per normalised question (see the module docstring), in input order."""
    best: dict[str, EvalCase] = {}
    for case in cases:
        if not case.question:
            continue
        key = normalise_question(case.question)
        if not key:
            continue
        if key not in best or _preference(case) < _preference(best[key]):
            best[key] = case
    winners = {c.case_id for c in best.values()}
    kept: list[EvalCase] = []
    dups: list[EvalCase] = []
    for case in cases:
        has_key = bool(case.question and normalise_question(case.question))
        (kept if not has_key or case.case_id in winners else dups).append(case)
    return Dedup(kept=kept, duplicates=dups)
