"""Ranked-retrieval metrics for one query (SPEC §6).

``returned`` is the ranked list of doc ids the retriever gave (best first, rank 1). Conventions
shared by all three metrics:

- Doc ids are exact ``str``, non-empty after ``strip()``. An empty ``returned`` is a valid
  outcome (the retriever found nothing) and scores 0.
- The top-k are the first ``k`` *positions* of ``returned``. A duplicate id keeps its position
  (it used a slot the model saw) but earns credit only at its first occurrence, so returning the
  same passage twice can never raise a score.
- ``k`` is a positive ``int`` (not ``bool``); ``k`` larger than ``len(returned)`` is fine.

Average :func:`reciprocal_rank` over queries to get MRR.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Collection, Mapping, Sequence
from typing import Final, SupportsFloat

import numpy as np

from services.evaluation._checks import check_text, fail, sequence_items, type_name

__all__ = ["MAX_GRADE", "ndcg_at_k", "recall_at_k", "reciprocal_rank"]

MAX_GRADE: Final = 100.0
"""Largest graded relevance accepted by :func:`ndcg_at_k` (keeps ``2**grade`` far from overflow)."""


def _ranked(returned: object) -> list[str]:
    items = sequence_items("returned", returned, low=0, high=None)
    return [check_text(f"returned[{i}]", doc) for i, doc in enumerate(items)]


def _relevant_set(relevant: object) -> set[str]:
    if isinstance(relevant, Mapping):
        fail("relevant: must be a collection of doc ids, got a mapping (graded: use ndcg_at_k)")
    if not isinstance(relevant, set | frozenset | list | tuple):
        fail(f"relevant: must be a set, frozenset, list or tuple, got {type_name(relevant)}")
    if not relevant:
        fail("relevant: needs at least 1 relevant doc id (the metric is undefined otherwise)")
    return {check_text(f"relevant[{i}]", doc) for i, doc in enumerate(relevant)}


def _cutoff(k: object) -> int:
    if isinstance(k, bool | np.bool_) or not isinstance(k, numbers.Integral):
        fail(f"k: must be an int, got {type_name(k)}")
    if k < 1:
        fail(f"k: must be >= 1, got {int(k)}")
    return int(k)


def recall_at_k(returned: Sequence[str], relevant: Collection[str], k: int) -> float:
    """Share of the relevant docs found in the top ``k`` of ``returned``.

    ``recall@k = |top_k(returned) ∩ relevant| / |relevant|``. The denominator is always
    ``|relevant|`` (not ``min(k, |relevant|)``). ``relevant`` must be non-empty:
    a query without relevant docs has no recall and raises ``ValueError``.

    >>> recall_at_k(["d3", "d1", "d9", "d2"], {"d1", "d2"}, k=2)
    0.5
    >>> recall_at_k(["d1", "d1", "d2"], {"d1", "d2"}, k=2)  # the duplicate uses a slot
    0.5
    >>> recall_at_k([], {"d1"}, k=5)
    0.0
    """
    ranked = _ranked(returned)
    wanted = _relevant_set(relevant)
    cut = _cutoff(k)
    return len(wanted.intersection(ranked[:cut])) / len(wanted)


def reciprocal_rank(returned: Sequence[str], relevant: Collection[str]) -> float:
    """``1 / rank`` of the first relevant doc in ``returned`` (rank 1 is the first); 0.0 if none.

    ``relevant`` must be non-empty, as for :func:`recall_at_k`: averaging a query that has no
    relevant docs into MRR as a silent 0 would bias it, so such a query raises ``ValueError``.

    >>> reciprocal_rank(["d3", "d1", "d2"], {"d1", "d2"})
    0.5
    >>> reciprocal_rank(["d3"], {"d1"})
    0.0
    """
    ranked = _ranked(returned)
    wanted = _relevant_set(relevant)
    for rank, doc in enumerate(ranked, start=1):
        if doc in wanted:
            return 1.0 / rank
    return 0.0


def _grades(relevance: object) -> dict[str, float]:
    if not isinstance(relevance, Mapping):
        fail(f"relevance: must be a mapping of doc id to grade, got {type_name(relevance)}")
    grades: dict[str, float] = {}
    for doc, grade in relevance.items():
        check_text("relevance key", doc)
        where = "relevance[<doc id>]"
        if isinstance(grade, bool | np.bool_) or not isinstance(grade, numbers.Real):
            fail(f"{where}: must be a real number, got {type_name(grade)}")
        value = float(grade)
        if not math.isfinite(value) or not 0.0 <= value <= MAX_GRADE:
            fail(f"{where}: must be a finite number in [0, {MAX_GRADE:g}], got {value!r}")
        grades[doc] = value
    return grades


def _gain(grade: float, rank: int) -> float:
    return (2.0**grade - 1.0) / math.log2(rank + 1)


def ndcg_at_k(returned: Sequence[str], relevance: Mapping[str, SupportsFloat], k: int) -> float:
    """Normalised discounted cumulative gain at ``k`` with graded relevance.

    ``relevance`` maps doc id to a grade in [0, 100] (unlisted docs have grade 0)::

        DCG@k  = sum over ranks i = 1..k of (2**rel(returned[i]) - 1) / log2(i + 1)
        IDCG@k = the same sum over the grades of ``relevance`` sorted descending
        nDCG@k = DCG@k / IDCG@k, and 0.0 when IDCG@k == 0 (no doc has a positive grade)

    A repeated doc id gains nothing after its first occurrence, so nDCG stays in [0, 1].

    >>> ndcg_at_k(["d1", "d2"], {"d1": 3, "d2": 1}, k=2)
    1.0
    >>> # DCG = 1 + 7/log2(3), IDCG = 7 + 1/log2(3)
    >>> round(ndcg_at_k(["d2", "d1"], {"d1": 3, "d2": 1}, k=2), 4)
    0.7098
    >>> ndcg_at_k(["d1"], {"d1": 0}, k=1)
    0.0
    """
    ranked = _ranked(returned)
    grades = _grades(relevance)
    cut = _cutoff(k)
    seen: set[str] = set()
    dcg = 0.0
    for rank, doc in enumerate(ranked[:cut], start=1):
        if doc not in seen:
            seen.add(doc)
            dcg += _gain(grades.get(doc, 0.0), rank)
    ideal = sorted(grades.values(), reverse=True)[:cut]
    idcg = sum(_gain(grade, rank) for rank, grade in enumerate(ideal, start=1))
    if idcg <= 0.0:
        return 0.0
    return min(1.0, dcg / idcg)
