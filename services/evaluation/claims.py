"""Claim support against a registry of facts (SPEC §5).

A claim is ``{entity, attribute, value}``; a fact adds ``source``. Evidence for a claim is every
fact with the exact same ``(entity, attribute)`` pair; strings are compared as given, without
case folding, stripping or unit normalisation (``"4g"`` is not ``"4 g"``).

The decision, :func:`support_status`, is kept apart from the list-based :func:`claim_support` so
that the streaming stage's indexed ``FactRegistry`` (no 128-fact limit) applies the very same
rule:

========================================  ================
registered distinct values for the pair   status
========================================  ================
none                                      ``unknown``
two or more (even if one of them matches) ``conflict``
exactly one, equal to the claimed value   ``supported``
exactly one, different                    ``contradicted``
========================================  ================

``unknown`` is missing evidence, never a proven falsehood. Two sources registering the same value
are not a conflict. ``sources`` lists every source id registered for the pair, sorted, unique.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Final, Literal, TypedDict

from services.evaluation._checks import check_text, fail, type_name

__all__ = [
    "CLAIM_KEYS",
    "CLAIM_STATUSES",
    "FACT_KEYS",
    "MAX_CLAIMS",
    "MAX_FACTS",
    "MAX_VALUE_CHARS",
    "ClaimStatus",
    "ClaimSupport",
    "SupportDecision",
    "claim_support",
    "support_status",
]

ClaimStatus = Literal["supported", "contradicted", "conflict", "unknown"]
CLAIM_STATUSES: Final[tuple[ClaimStatus, ...]] = (
    "supported",
    "contradicted",
    "conflict",
    "unknown",
)

MAX_CLAIMS: Final = 32
MAX_FACTS: Final = 128
MAX_VALUE_CHARS: Final = 200
CLAIM_KEYS: Final = frozenset({"entity", "attribute", "value"})
FACT_KEYS: Final = frozenset({"entity", "attribute", "value", "source"})


class ClaimSupport(TypedDict):
    """One row of :func:`claim_support`'s result (plain JSON-ready dict)."""

    status: ClaimStatus
    sources: list[str]


@dataclass(frozen=True, slots=True)
class SupportDecision:
    """Outcome of :func:`support_status`: a status and the sorted, unique source ids."""

    status: ClaimStatus
    sources: tuple[str, ...]

    def as_dict(self) -> ClaimSupport:
        """The ``{status, sources}`` dict that :func:`claim_support` returns."""
        return {"status": self.status, "sources": list(self.sources)}


_UNKNOWN: Final = SupportDecision("unknown", ())


def support_status(registered: Mapping[str, Iterable[str]], value: str) -> SupportDecision:
    """Decide the support status of a claimed ``value`` given the evidence for its pair.

    ``registered`` maps each distinct value registered for the claim's exact ``(entity,
    attribute)`` pair to the source ids that registered it; an empty mapping means no evidence.
    Inputs are trusted here (callers validate); values are compared with ``==``, as given.

    >>> support_status({}, "4 g")
    SupportDecision(status='unknown', sources=())
    >>> support_status({"4 g": {"fk-2", "fk-1"}}, "4 g")
    SupportDecision(status='supported', sources=('fk-1', 'fk-2'))
    >>> support_status({"4 g": {"fk-1"}}, "4g")
    SupportDecision(status='contradicted', sources=('fk-1',))
    >>> support_status({"4 g": {"fk-1"}, "3 g": {"nhg-7"}}, "4 g")
    SupportDecision(status='conflict', sources=('fk-1', 'nhg-7'))
    """
    if not registered:
        return _UNKNOWN
    sources = tuple(sorted({source for ids in registered.values() for source in ids}))
    status: ClaimStatus
    if len(registered) > 1:
        status = "conflict"
    elif value in registered:
        status = "supported"
    else:
        status = "contradicted"
    return SupportDecision(status, sources)


def _key_label(key: object) -> str:
    if type(key) is str and len(key) <= 40:
        return repr(key)
    return f"<{type_name(key)}>"


def _check_records(name: str, records: object, keys: frozenset[str], limit: int) -> None:
    """Validate a list of flat string records; sizes first, then each record."""
    if type(records) is not list:
        fail(f"{name}: must be a list of dicts, got {type_name(records)}")
    if len(records) > limit:
        fail(f"{name}: at most {limit} items allowed, got {len(records)}")
    expected = sorted(keys)
    for i, record in enumerate(records):
        if type(record) is not dict:
            fail(f"{name}[{i}]: must be a dict, got {type_name(record)}")
        if record.keys() != keys:
            missing = sorted(keys - record.keys())
            unexpected = sorted(_key_label(k) for k in record.keys() - keys)
            fail(
                f"{name}[{i}]: keys must be exactly {expected}; "
                f"missing {missing}, unexpected [{', '.join(unexpected)}]"
            )
        for key in expected:
            where = f"{name}[{i}][{key!r}]"
            text = check_text(where, record[key])
            if len(text) > MAX_VALUE_CHARS:
                fail(f"{where}: at most {MAX_VALUE_CHARS} characters allowed, got {len(text)}")


def claim_support(claims: list[dict[str, str]], facts: list[dict[str, str]]) -> list[ClaimSupport]:
    """Check each claim against the facts; one ``{status, sources}`` dict per claim, in order.

    Limits (checked before any work): at most 32 claims and 128 facts, each a list of plain
    dicts with exactly the keys ``entity, attribute, value`` (facts also ``source``); every value
    an exact ``str``, non-empty after ``strip()`` and at most 200 characters (``len`` of the
    string as given). Anything else raises ``ValueError`` naming the index and key. No claims
    gives ``[]``; no facts makes every claim ``unknown``.

    >>> facts = [
    ...     {"entity": "paracetamol", "attribute": "max_dose", "value": "4 g", "source": "fk-2"},
    ...     {"entity": "paracetamol", "attribute": "max_dose", "value": "4 g", "source": "fk-1"},
    ...     {"entity": "ibuprofen", "attribute": "max_dose", "value": "1200 mg", "source": "a"},
    ...     {"entity": "ibuprofen", "attribute": "max_dose", "value": "2400 mg", "source": "b"},
    ... ]
    >>> claims = [
    ...     {"entity": "paracetamol", "attribute": "max_dose", "value": "4 g"},
    ...     {"entity": "paracetamol", "attribute": "max_dose", "value": "4g"},
    ...     {"entity": "ibuprofen", "attribute": "max_dose", "value": "1200 mg"},
    ...     {"entity": "aspirin", "attribute": "max_dose", "value": "4 g"},
    ... ]
    >>> for row in claim_support(claims, facts):
    ...     print(row)
    {'status': 'supported', 'sources': ['fk-1', 'fk-2']}
    {'status': 'contradicted', 'sources': ['fk-1', 'fk-2']}
    {'status': 'conflict', 'sources': ['a', 'b']}
    {'status': 'unknown', 'sources': []}
    >>> claim_support([{"entity": "x", "attribute": "y", "value": " "}], [])  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    services.evaluation.errors.EvaluationInputError: claims[0]['value']: must not be empty ...
    """
    _check_records("claims", claims, CLAIM_KEYS, MAX_CLAIMS)
    _check_records("facts", facts, FACT_KEYS, MAX_FACTS)
    index: dict[tuple[str, str], dict[str, set[str]]] = {}
    for fact in facts:
        by_value = index.setdefault((fact["entity"], fact["attribute"]), {})
        by_value.setdefault(fact["value"], set()).add(fact["source"])
    no_evidence: dict[str, set[str]] = {}
    return [
        support_status(index.get((c["entity"], c["attribute"]), no_evidence), c["value"]).as_dict()
        for c in claims
    ]
