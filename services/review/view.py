"""What a reviewer sees of an item: the JSON the API serves and the page draws.

:func:`item_view` is the item without ``originals`` and ``seen`` (values only when revealed),
plus what a reviewer needs to judge it:

- ``reason_groups``: the reasons de-duplicated by code (count, rules, the policy's description);
- ``findings[].plain`` and ``highlights``: a plain-language sentence for every finding and
  every highlighted span, also those without a finding row (``rules/explanations.yaml``);
- ``evidence``: per checked answer, each sentence claim with the passage it was checked against
  and the span of that passage that matches it best, and each fact check with the value the
  registry holds beside the answer's; a dose or contraindication claim carries ``medical``, its
  structured readings (``MedicalCheck``: drug, amount, unit, basis, polarity, population) with
  the passage claims that support or contradict them. Fields a claim gains later are passed on
  as they are, under ``extra``;
- ``answer``: the answer the label's answer fields are about by default, with its passages.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from schemas.review import ReviewItem, ReviewPassage, Turn
from schemas.verdicts import ClaimCheck, GroundingReport
from services.grounding.quantities import quantities
from services.grounding.sentences import split_sentences
from services.grounding.text import claim_units, detect_language, passage_units
from services.review.evidence import reveal_finding, reveal_turn
from services.review.explain import Explanations, default_explanations
from services.review.labels import answer_turn
from services.review.policy import TriagePolicy, band

__all__ = ["ViewContext", "item_view", "matching_span"]

#: ClaimCheck fields the page shows in its own places (``medical``: the structured readings);
#: any other field of the claim goes to ``extra``, which the page shows as it is.
_CLAIM_FIELDS = frozenset(
    {"text", "kind", "grounded", "method", "support", "best_doc"}
    | {"numbers_missing", "cited_docs", "judge", "medical"}
)
_OFFSETS = frozenset({"start", "end"})
_MIN_SHARE = 0.25


@dataclass(frozen=True)
class ViewContext:
    """Configuration the view reads: reason descriptions (the policy) and explanations."""

    policy: TriagePolicy | None = None
    explanations: Explanations = field(default_factory=default_explanations)


def matching_span(claim: str, passage: str, language: str | None) -> tuple[int, int] | None:
    """The sentence of ``passage`` that shares most with ``claim``: its quantities (``4 g`` =
    ``4000 mg``) count double, then content units. ``None`` when no sentence shares a quantity
    or a quarter of the claim's content units."""
    lang = detect_language(claim, language)
    units = claim_units(claim, lang)
    keys = {q.key for q in quantities(claim, lang) if q.has_unit}
    # A sentence that shares a single common word with a long claim does not match it.
    enough = max(1, math.ceil(_MIN_SHARE * len(units)))
    best: tuple[int, int, int] | None = None
    for sentence in split_sentences(passage, lang):
        text = passage[sentence.start : sentence.end]
        words = len(units & passage_units(text, lang))
        numbers = len(keys & {q.key for q in quantities(text, lang) if q.has_unit})
        if words < enough and not numbers:
            continue
        shared = words + 2 * numbers
        if best is None or shared > best[0]:
            best = (shared, sentence.start, sentence.end)
    return None if best is None else (best[1], best[2])


def _passage_view(
    p: ReviewPassage | None, claim: ClaimCheck, language: str | None
) -> dict[str, Any] | None:
    if p is None:
        return None
    span = matching_span(claim.text, p.text, language)
    return {
        "doc_id": p.doc_id,
        "rank": p.rank,
        "text": p.text,
        "truncated": p.truncated,
        "span": list(span) if span else None,
    }


def _evidence(report: GroundingReport, turn: Turn | None) -> dict[str, Any]:
    passages = {p.doc_id: p for p in (turn.passages if turn else [])}
    claims = []
    for i, c in enumerate(report.claims):
        data = c.model_dump(mode="json")
        doc = c.best_doc or next(iter(c.cited_docs), None)
        claims.append(
            {
                "index": i,
                **{k: v for k, v in data.items() if k in _CLAIM_FIELDS},
                "passage": _passage_view(passages.get(doc) if doc else None, c, report.language),
                "passage_missing": doc is not None and doc not in passages,
                "extra": {
                    k: v
                    for k, v in data.items()
                    if k not in _CLAIM_FIELDS and k not in _OFFSETS and v not in (None, [], {})
                },
            }
        )
    facts = [
        {
            "index": i,
            "entity": fc.claim.entity,
            "attribute": fc.claim.attribute,
            "answer_value": fc.claim.value,
            "registered": fc.registered,
            "status": fc.status,
            "sources": fc.sources,
            "origin": fc.origin,
        }
        for i, fc in enumerate(report.fact_checks)
    ]
    return {
        "event_id": report.event_id,
        "turn_index": report.turn_index,
        "faithfulness": report.faithfulness,
        "stratum": report.stratum,
        "judge_used": report.judge_used,
        "claims": claims,
        "fact_checks": facts,
        "fabricated_citations": report.fabricated_citations,
        "unsupported_citations": [u.model_dump(mode="json") for u in report.unsupported_citations],
    }


def _reason_groups(item: ReviewItem, policy: TriagePolicy | None) -> list[dict[str, Any]]:
    groups: dict[str, dict[str, Any]] = {}
    for r in item.reasons:
        g = groups.setdefault(
            r.code,
            {
                "code": r.code,
                "priority": r.priority,
                "count": 0,
                "rule_ids": [],
                "description": policy.describe(r.code) if policy else None,
            },
        )
        g["count"] += 1
        g["priority"] = max(g["priority"], r.priority)
        if r.rule_id and r.rule_id not in g["rule_ids"]:
            g["rule_ids"].append(r.rule_id)
    return sorted(groups.values(), key=lambda g: -int(g["priority"]))


def _turns(item: ReviewItem, reveal: bool) -> Sequence[Turn]:
    if not reveal:
        return item.turns
    return [reveal_turn(t, item.originals)[0] for t in item.turns]


def item_view(
    item: ReviewItem, *, reveal: bool = False, ctx: ViewContext | None = None
) -> dict[str, Any]:
    """The JSON a reviewer sees (see the module docstring): never ``originals`` nor ``seen``;
    values only when revealed."""
    ctx = ctx or ViewContext()
    explain = ctx.explanations
    data = item.model_dump(mode="json", exclude={"originals", "seen"})
    turns = _turns(item, reveal)
    findings = [reveal_finding(f, item.originals) if reveal else f for f in item.findings]
    data["turns"] = [t.model_dump(mode="json") for t in turns]
    data["findings"] = [
        {**f.model_dump(mode="json"), "plain": explain.finding(masked)}
        for f, masked in zip(findings, item.findings, strict=True)
    ]
    rows = {f.finding_id for f in item.findings}
    data["highlights"] = {
        m.finding_id: {
            "plain": explain.mark(m, t),
            "rule_id": m.rule_id,
            "entity": m.entity,
            "severity": m.severity,
            "has_row": m.finding_id in rows,
        }
        for t in item.turns
        for m in t.marks
    }
    by_event = {t.event_id: t for t in item.turns}
    data["evidence"] = [_evidence(v, by_event.get(v.event_id)) for v in item.verdicts]
    data["reason_groups"] = _reason_groups(item, ctx.policy)
    answer = answer_turn(item)
    data["answer"] = (
        None
        if answer is None
        else {
            "event_id": answer.event_id,
            "turn_index": answer.turn_index,
            "passages": [p.doc_id for p in answer.passages],
        }
    )
    data["band"] = band(item.priority)
    data["revealable"] = len(item.originals)
    data["revealed"] = reveal
    return data
