"""The sampled claim-check stage (SPEC §5), between screening and the verdicts output.

For each assistant answer it decides, from the conversation's keyed hash and the answer's own
findings, whether the answer is checked (:class:`~services.sampling.Sampler`); a checked answer
is grounded against its passages and the fact registry (:func:`services.grounding.check`), with
the judge's labels when a judge is configured; the report yields findings: an ungrounded dose or
contraindication claim is a critical ``medical`` finding, a fabricated or unsupported citation a
``grounding`` finding. Pure apart from the judge, which the callers run (sync in ``vigil scan``,
async in the worker).
"""

from __future__ import annotations

from dataclasses import dataclass

from pydantic import BaseModel, ConfigDict

from schemas.events import ChatEvent
from schemas.outputs import Category, Finding, Severity
from schemas.verdicts import ClaimCheck, GroundingReport, JudgeLabel, MedicalContext
from services.grounding import (
    FactRegistry,
    GroundingConfig,
    PassageCache,
    check,
    claims_for_judge,
    critical_claims,
    load_extractors,
    load_lexicon,
    medical_context,
)
from services.judge import JudgeConfig, JudgeRequest
from services.sampling import SampleDecision, Sampler
from services.screening import VALUE_CATEGORIES
from services.settings import Settings

__all__ = ["GROUNDING_RULES", "CheckRequest", "Checked", "ClaimChecker", "judge_config"]


@dataclass(frozen=True, slots=True)
class _RuleInfo:
    category: Category
    entity: str
    severity: Severity


#: The findings the claim checks raise, as fixed rule ids (they are metric labels too).
GROUNDING_RULES: dict[str, _RuleInfo] = {
    "grounding.ungrounded_dose": _RuleInfo("medical", "UNGROUNDED_DOSE", "critical"),
    "grounding.ungrounded_contraindication": _RuleInfo(
        "medical", "UNGROUNDED_CONTRAINDICATION", "critical"
    ),
    "grounding.fabricated_citation": _RuleInfo("grounding", "FABRICATED_CITATION", "high"),
    "grounding.unsupported_citation": _RuleInfo("grounding", "UNSUPPORTED_CITATION", "medium"),
}


class CheckRequest(BaseModel):
    """A sampled answer handed from the screening agent to the claim-check agent."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    event: ChatEvent
    decision: SampleDecision
    #: The answer's screening findings: values they matched are masked in the report.
    findings: list[Finding] = []
    #: Drugs and population of the user turn before the answer (no text), for its check.
    context: MedicalContext | None = None


@dataclass(frozen=True, slots=True)
class Checked:
    report: GroundingReport
    findings: list[Finding]


def judge_config(settings: Settings) -> JudgeConfig | None:
    """The judge client's configuration, or ``None`` when no judge is configured."""
    if not settings.judge_url:
        return None
    return JudgeConfig(
        url=settings.judge_url,
        protocol=settings.judge_protocol,
        model=settings.judge_model,
        api_key=settings.judge_api_key,
        timeout_seconds=settings.judge_timeout_seconds,
        max_retries=settings.judge_max_retries,
        max_concurrency=settings.judge_max_concurrency,
    )


class ClaimChecker:
    """Sampling decision, grounding check and findings for assistant answers."""

    def __init__(self, settings: Settings) -> None:
        self.registry = FactRegistry.load([settings.facts_dir])
        self.extractors = load_extractors([settings.extractors_dir])
        self.lexicon = load_lexicon(settings.grounding_lexicon_dir)
        #: Prepared passages, shared by every answer this process checks (scan and worker).
        self.cache = PassageCache(
            max_entries=settings.grounding_cache_entries,
            max_bytes=settings.grounding_cache_bytes,
            ttl_seconds=settings.grounding_cache_ttl_seconds,
        )
        overrides: dict[str, object] = {}
        if settings.support_threshold is not None:
            overrides["support_threshold"] = settings.support_threshold
        self.config = GroundingConfig.model_validate(overrides)
        self.sampler = Sampler(settings.sample_key_bytes, settings.sample_rate)
        self.key = settings.key_bytes

    def decide(self, event: ChatEvent, findings: list[Finding]) -> SampleDecision | None:
        """The sampling decision for an assistant answer; ``None`` for other roles."""
        if event.role != "assistant":
            return None
        return self.sampler.decide(event.conversation_id, findings)

    def judge_requests(
        self, event: ChatEvent, context: MedicalContext | None = None
    ) -> list[JudgeRequest]:
        pairs = claims_for_judge(
            event,
            self.config,
            self.registry,
            lexicon=self.lexicon,
            cache=self.cache,
            context=context,
        )
        return [
            JudgeRequest(premise=premise, hypothesis=claim, language=event.base_language)
            for claim, premise in pairs
        ]

    def check(
        self,
        event: ChatEvent,
        decision: SampleDecision,
        judge_results: dict[str, JudgeLabel] | None = None,
        screened: list[Finding] | None = None,
        context: MedicalContext | None = None,
    ) -> Checked:
        """Check one sampled answer. ``screened`` are the answer's screening findings: values
        they matched (personal data, secrets) are masked in the report's texts as in findings.
        ``context``: drugs and population of the user's preceding turn
        (:meth:`medical_context`), when the runner keeps it."""
        report = check(
            event,
            self.registry,
            extractors=self.extractors,
            config=self.config,
            inclusion_probability=decision.inclusion_probability,
            stratum=decision.stratum,
            judge_results=judge_results,
            lexicon=self.lexicon,
            cache=self.cache,
            context=context,
        )
        report = _redact(report, event, screened or [])
        return Checked(report, self._findings(event, report))

    def medical_context(self, event: ChatEvent) -> MedicalContext:
        """Drugs and population a user turn states, for the answer after it."""
        return medical_context(event.content, event.language, self.lexicon)

    def _findings(self, event: ChatEvent, report: GroundingReport) -> list[Finding]:
        out: list[Finding] = []
        for claim in critical_claims(report):
            rule = f"grounding.ungrounded_{claim.kind}"
            off = [m for m in claim.medical if m.status != "supported"]
            if off:
                why = "; ".join(f"{m.status}: {m.explanation}" for m in off)
            else:
                why = "not grounded in the retrieved passages"
            if claim.numbers_missing:
                why += f"; numbers missing: {', '.join(claim.numbers_missing)}"
            out.append(self._finding(event, rule, claim.start, claim.end, claim.text, why))
        for doc_id in report.fabricated_citations:
            start, end = _locate(event.content, doc_id)
            why = f"cites {doc_id!r}, which was not among the retrieved passages"
            rule = "grounding.fabricated_citation"
            out.append(self._finding(event, rule, start, end, doc_id, why))
        for issue in report.unsupported_citations:
            start, end = _locate(event.content, issue.claim)
            why = f"cited passage {issue.doc_id!r} does not support the sentence"
            out.append(
                self._finding(event, "grounding.unsupported_citation", start, end, issue.claim, why)
            )
        return out

    def _finding(
        self, event: ChatEvent, rule_id: str, start: int, end: int, evidence: str, why: str
    ) -> Finding:
        info = GROUNDING_RULES[rule_id]
        return Finding.in_event(
            event,
            rule_id=rule_id,
            category=info.category,
            entity=info.entity,
            severity=info.severity,
            start=start,
            end=end,
            evidence=evidence[:200],
            direction="output",
            score=1.0,
            explanation=why,
        )


def _redact(report: GroundingReport, event: ChatEvent, screened: list[Finding]) -> GroundingReport:
    """Replace every personal or secret value found by screening with its masked evidence."""
    pairs = [
        (event.content[f.start : f.end], f.evidence)
        for f in screened
        if f.category in VALUE_CATEGORIES and f.end > f.start
    ]
    if not pairs:
        return report
    pairs.sort(key=lambda p: -len(p[0]))

    digits = [("".join(ch for ch in v if ch.isdigit()), e) for v, e in pairs]

    def mask(text: str) -> str:
        for value, evidence in pairs:
            text = text.replace(value, evidence)
        return text

    def mask_number(number: str) -> str:
        """A normalised number taken from a masked value is replaced by that value's mask."""
        bare = "".join(ch for ch in number if ch.isdigit())
        for value_digits, evidence in digits:
            if len(bare) >= 3 and bare in value_digits:
                return evidence
        return mask(number)

    def claim(c: ClaimCheck) -> ClaimCheck:
        missing = [mask_number(n) for n in c.numbers_missing]
        medical = [
            m.model_copy(
                update={
                    "explanation": mask(m.explanation),
                    "supporting": [
                        p.model_copy(update={"sentence": mask(p.sentence)}) for p in m.supporting
                    ],
                    "contradicting": [
                        p.model_copy(update={"sentence": mask(p.sentence)}) for p in m.contradicting
                    ],
                }
            )
            for m in c.medical
        ]
        return c.model_copy(
            update={"text": mask(c.text), "numbers_missing": missing, "medical": medical}
        )

    return report.model_copy(
        update={
            "claims": [claim(c) for c in report.claims],
            "ungrounded": [mask(t) for t in report.ungrounded],
            "unsupported_citations": [
                i.model_copy(update={"claim": mask(i.claim)}) for i in report.unsupported_citations
            ],
        }
    )


def _locate(content: str, needle: str) -> tuple[int, int]:
    at = content.find(needle)
    return (at, at + len(needle)) if at >= 0 else (0, 0)
