"""The grounding stage: ``check(event, registry, ...) -> GroundingReport`` — a pure function.

For one sampled assistant answer it

1. checks structured claims (the event's and the extracted ones) against the fact registry;
2. splits the answer into atomic claims and grounds each in the retrieved passages
   (:mod:`~services.grounding.evidence`);
3. applies the judge's verdicts that the caller obtained for :func:`claims_for_judge`:
   ``entailment``/``neutral``/``contradiction`` decide the claim (``method="judge"``), but a
   claim whose numbers are missing from every passage is never grounded, whatever the judge says;
   ``unverified`` (judge down, timeout, malformed reply) keeps the deterministic verdict and is
   recorded — it never counts as support by itself;
4. checks citations (:mod:`~services.grounding.citations`);
5. scores faithfulness with :func:`services.evaluation.faithfulness`.

The judge runs outside (HTTP, async, cached); this module never does I/O. A dose or
contraindication claim that is not grounded is a hard failure: :func:`critical_claims` lists
them for the caller, which raises the critical findings.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Literal

from schemas.events import ChatEvent
from schemas.verdicts import ClaimCheck, GroundingReport, JudgeLabel
from services.evaluation import faithfulness
from services.grounding.citations import check_citations
from services.grounding.claims import AtomicClaim, atomic_claims, fact_checks
from services.grounding.config import GroundingConfig
from services.grounding.evidence import Evidence, Verdict, ground
from services.grounding.extractors import ExtractorSet
from services.grounding.facts import FactRegistry
from services.grounding.text import detect_language

__all__ = ["GroundingConfig", "check", "claims_for_judge", "critical_claims"]

_PRIORITY = {"dose": 0, "contraindication": 1, "other": 2}


def _prepare(
    event: ChatEvent, registry: FactRegistry | None
) -> tuple[str | None, list[AtomicClaim], Evidence]:
    if event.role != "assistant":
        raise ValueError(f"grounding checks assistant answers, got a {event.role!r} event")
    language = detect_language(event.content, event.language)
    names = registry.entities if registry is not None else frozenset()
    claims = atomic_claims(event.content, language, names)
    return language, claims, Evidence(event.retrieval or [], language)


def _deterministic(claim: AtomicClaim, evidence: Evidence, config: GroundingConfig) -> Verdict:
    return ground(
        claim.units,
        claim.quantities,
        evidence,
        threshold=config.support_threshold,
        bare_numbers=config.bare_numbers,
    )


def claims_for_judge(
    event: ChatEvent, config: GroundingConfig, registry: FactRegistry | None = None
) -> list[tuple[str, str]]:
    """``(claim_text, premise)`` pairs to send to the judge; the premise is the best passage.

    Dose and contraindication claims come first; at most ``judge_max_claims``, one per distinct
    claim text, only of ``judge_kinds``; none when nothing was retrieved. Pass the judge's labels
    back to :func:`check` as ``judge_results`` keyed by claim text. Give the same ``registry`` as
    to :func:`check` so that claim kinds agree (drug names come from it).
    """
    _, claims, evidence = _prepare(event, registry)
    if not evidence.passages or config.judge_max_claims == 0:
        return []
    ranked = sorted(
        (c for c in claims if c.kind in config.judge_kinds), key=lambda c: _PRIORITY[c.kind]
    )
    pairs: dict[str, str] = {}
    for claim in ranked:
        if claim.text in pairs:
            continue
        verdict = _deterministic(claim, evidence, config)
        best = evidence.passages[verdict.best if verdict.best is not None else 0]
        pairs[claim.text] = best.text[: config.judge_max_premise_chars]
        if len(pairs) >= config.judge_max_claims:
            break
    return list(pairs.items())


def _claim_check(
    claim: AtomicClaim,
    verdict: Verdict,
    evidence: Evidence,
    cited: list[str],
    label: JudgeLabel | None,
) -> ClaimCheck:
    method: Literal["deterministic", "judge"] = "deterministic"
    grounded = verdict.grounded
    if label is not None and label != "unverified":
        method = "judge"
        grounded = label == "entailment" and not verdict.numbers_missing
    return ClaimCheck(
        text=claim.text,
        start=claim.start,
        end=claim.end,
        kind=claim.kind,
        grounded=grounded,
        method=method,
        support=max(0.0, min(1.0, verdict.support)),
        best_doc=evidence.passages[verdict.best].doc_id if verdict.best is not None else None,
        numbers_missing=list(verdict.numbers_missing),
        cited_docs=cited,
        judge=label,
    )


def check(
    event: ChatEvent,
    registry: FactRegistry,
    *,
    extractors: ExtractorSet,
    config: GroundingConfig,
    inclusion_probability: float,
    stratum: Literal["always", "sampled"],
    judge_results: Mapping[str, JudgeLabel] | None = None,
) -> GroundingReport:
    """Check one assistant answer (see the module docstring). Deterministic; no I/O.

    Raises ``ValueError`` for a non-assistant event (and, via the report model, for an inclusion
    probability outside (0, 1]).
    """
    language, claims, evidence = _prepare(event, registry)
    citations = check_citations(
        event.content,
        event.citations or [],
        claims,
        evidence,
        threshold=config.support_threshold,
        bare_numbers=config.bare_numbers,
    )
    judged = judge_results or {}
    checks = [
        _claim_check(
            claim,
            _deterministic(claim, evidence, config),
            evidence,
            cited,
            judged.get(claim.text),
        )
        for claim, cited in zip(claims, citations.cited, strict=True)
    ]
    score = faithfulness([(c.text, c.grounded) for c in checks])
    return GroundingReport(
        event_id=event.event_id,
        conversation_id=event.conversation_id,
        turn_index=event.turn_index,
        timestamp=event.timestamp,
        tenant=event.tenant,
        language=event.language,
        stratum=stratum,
        inclusion_probability=inclusion_probability,
        faithfulness=score.score,
        claims=checks,
        ungrounded=score.ungrounded,
        fabricated_citations=citations.fabricated,
        unsupported_citations=citations.unsupported,
        fact_checks=fact_checks(event, registry, extractors, language),
        judge_used=any(c.method == "judge" for c in checks),
    )


def critical_claims(report: GroundingReport) -> list[ClaimCheck]:
    """Dose and contraindication claims that are not grounded: each is a critical finding."""
    return [c for c in report.claims if c.kind != "other" and not c.grounded]
