"""Vigil's Prometheus metrics, in one place, with the registry as a parameter.

Labels come only from fixed, small sets: roles, categories, severities, directions, dead-letter
reasons, the loaded rule ids, and tenants from a configured allow-list (every other tenant is
``other``). No label ever carries message content or a value from it.
"""

from __future__ import annotations

import logging
from collections import Counter as Counter_
from collections.abc import Iterable
from typing import get_args

from prometheus_client import CollectorRegistry, Counter, Histogram, generate_latest
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector

from schemas.estimates import PopulationEstimates
from schemas.events import ChatEvent, Role
from schemas.outputs import Category, DeadLetterReason, Direction, Finding
from schemas.verdicts import ClaimStatus, GroundingReport
from services.estimation import DEFAULT_MAX_CONVERSATIONS, RateTracker
from services.judge import JudgeMetrics
from services.sampling import SampleDecision

__all__ = ["MEASURES", "OTHER_TENANT", "RateCollector", "VigilMetrics"]

log = logging.getLogger("vigil.metrics")

OTHER_TENANT = "other"
NO_TENANT = "none"

#: Population rates estimated from the sampled checks: an answer with at least one ungrounded
#: claim, an answer with at least one fabricated citation.
MEASURES = ("unsupported_claim", "fabricated_citation")
_FAITHFULNESS_BUCKETS = (0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 0.95, 0.999, 1.0)
_LATENCY_BUCKETS = (0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.1, 0.5, 2.0)


class VigilMetrics:
    """Counters and histograms of the screening path.

    Counters (``_total``) count things that only go up: events, dead letters, findings, and
    messages with findings (``vigil_flagged_messages_total``: what the leak-spike rule counts). The
    histogram measures per-event processing time in seconds. Every label child is created up front
    so that a series exists at zero before its first increment (alert rules need that).
    """

    def __init__(
        self,
        registry: CollectorRegistry,
        *,
        rule_ids: Iterable[tuple[str, str, str]] = (),
        tenants: Iterable[str] = (),
        estimate_max_conversations: int = DEFAULT_MAX_CONVERSATIONS,
    ) -> None:
        self.registry = registry
        self._tenants = frozenset(tenants)
        self._estimate_max_conversations = estimate_max_conversations
        self.events = Counter(
            "vigil_events_total",
            "Chat events screened, by role and tenant.",
            ["role", "tenant"],
            registry=registry,
        )
        self.invalid = Counter(
            "vigil_invalid_events_total",
            "Input messages sent to the dead-letter output, by reason.",
            ["reason"],
            registry=registry,
        )
        self.findings = Counter(
            "vigil_findings_total",
            "Rule findings, by rule, category, severity and direction.",
            ["rule", "category", "severity", "direction"],
            registry=registry,
        )
        self.flagged = Counter(
            "vigil_flagged_messages_total",
            "Screened messages with at least one finding of the category and direction (a "
            "message with three leaked values counts once).",
            ["category", "direction"],
            registry=registry,
        )
        self.answers = Counter(
            "vigil_answers_total",
            "Assistant answers by outcome (answered or abstained).",
            ["outcome", "tenant"],
            registry=registry,
        )
        self.duplicates = Counter(
            "vigil_duplicate_events_total",
            "Input events skipped: an earlier record brought the same event_id within the "
            "duplicate window.",
            registry=registry,
        )
        self.held = Counter(
            "vigil_held_answers_total",
            "Answers with a leak held for the reorder window before echo or leak is decided.",
            registry=registry,
        )
        self.latency = Histogram(
            "vigil_processing_seconds",
            "Time to screen one event, in seconds.",
            ["stage"],
            buckets=_LATENCY_BUCKETS,
            registry=registry,
        )
        for reason in get_args(DeadLetterReason):
            self.invalid.labels(reason=reason)
        # Children are created up front (so every series exists at zero) and kept in dicts for
        # the per-event path: ``labels()`` checks and joins its arguments on every call, which
        # cost more per event than the increments themselves.
        self._event_children = {}
        self._answer_children = {}
        for tenant in (*self._tenants, OTHER_TENANT, NO_TENANT):
            for role in get_args(Role):
                self._event_children[role, tenant] = self.events.labels(role=role, tenant=tenant)
            for outcome in ("answered", "abstained"):
                self._answer_children[outcome, tenant] = self.answers.labels(
                    outcome=outcome, tenant=tenant
                )
        self._flagged_children = {
            (category, direction): self.flagged.labels(category=category, direction=direction)
            for category in get_args(Category)
            for direction in get_args(Direction)
        }
        self._finding_children = {}
        for rule_id, category, severity in rule_ids:
            for direction in get_args(Direction):
                self._finding_children[rule_id, direction] = self.findings.labels(
                    rule=rule_id, category=category, severity=severity, direction=direction
                )
        self._screen_latency = self.latency.labels(stage="screen")
        self._init_checks()

    def _init_checks(self) -> None:
        registry = self.registry
        self.population = Counter(
            "vigil_answers_by_stratum_total",
            "Assistant answers by sampling stratum (the population the checks estimate).",
            ["stratum"],
            registry=registry,
        )
        self.checks = Counter(
            "vigil_sampled_checks_total",
            "Claim-support checks run on assistant answers, by sampling stratum.",
            ["stratum"],
            registry=registry,
        )
        self.check_hits = Counter(
            "vigil_check_hits_total",
            "Checked answers with the measured property (see vigil_estimated_rate), by stratum.",
            ["measure", "stratum"],
            registry=registry,
        )
        self.claim_status = Counter(
            "vigil_claim_status_total",
            "Structured claims checked against the fact registry, by status.",
            ["status"],
            registry=registry,
        )
        self.grounding_claims = Counter(
            "vigil_grounding_claims_total",
            "Atomic answer claims checked against the retrieved passages.",
            ["kind", "grounded", "method"],
            registry=registry,
        )
        self.citations = Counter(
            "vigil_citations_total",
            "Citations in checked answers, by outcome.",
            ["outcome"],
            registry=registry,
        )
        self.faithfulness = Histogram(
            "vigil_faithfulness_ratio",
            "Faithfulness of checked answers: grounded claims / claims (1 with no claims).",
            buckets=_FAITHFULNESS_BUCKETS,
            registry=registry,
        )
        self.judge = JudgeMetrics(registry)
        self.rates = {m: RateTracker(self._estimate_max_conversations) for m in MEASURES}
        # Sampled answers counted into the population but not yet checked, per (stratum, p).
        self._pending: Counter_[tuple[str, float]] = Counter_()
        registry.register(RateCollector(self.rates))
        # As in __init__: every child up front, kept in dicts for the per-answer path.
        self._population_children = {}
        self._check_children = {}
        self._hit_children = {}
        for stratum in ("always", "sampled"):
            self._population_children[stratum] = self.population.labels(stratum=stratum)
            self._check_children[stratum] = self.checks.labels(stratum=stratum)
            for measure in MEASURES:
                self._hit_children[measure, stratum] = self.check_hits.labels(
                    measure=measure, stratum=stratum
                )
        self._status_children = {
            status: self.claim_status.labels(status=status) for status in get_args(ClaimStatus)
        }
        self._citation_children = {
            outcome: self.citations.labels(outcome=outcome)
            for outcome in ("supported", "unsupported", "fabricated")
        }
        self._claim_children = {
            (kind, grounded, method): self.grounding_claims.labels(
                kind=kind, grounded=grounded, method=method
            )
            for kind in ("dose", "contraindication", "other")
            for grounded in ("true", "false")
            for method in ("deterministic", "judge")
        }
        self._check_latency = self.latency.labels(stage="check")

    def observe_decision(self, decision: SampleDecision) -> None:
        """Count one assistant answer into the population of its stratum."""
        self._population_children[decision.stratum].inc()
        p = None if decision.stratum == "always" else decision.inclusion_probability
        for tracker in self.rates.values():
            tracker.observe_population(decision.stratum, p)
        if decision.sampled:
            self._pending[(decision.stratum, decision.inclusion_probability)] += 1

    def observe_report(self, report: GroundingReport, seconds: float) -> None:
        """Count one checked answer.

        A check whose answer this process did not screen (a worker that took over the partition
        of one that died between screening and checking) is counted into the population here, so
        the estimate's counts stay consistent: checked answers are part of the population.
        """
        stratum = report.stratum
        slot = (stratum, report.inclusion_probability)
        if self._pending[slot] > 0:
            self._pending[slot] -= 1
        else:
            p = None if stratum == "always" else report.inclusion_probability
            for tracker in self.rates.values():
                tracker.observe_population(stratum, p)
        self._check_children[stratum].inc()
        hits = {
            "unsupported_claim": bool(report.ungrounded),
            "fabricated_citation": bool(report.fabricated_citations),
        }
        for measure, hit in hits.items():
            if hit:
                self._hit_children[measure, stratum].inc()
            self.rates[measure].observe(
                stratum, report.inclusion_probability, hit, report.conversation_id
            )
        for verdict in report.fact_checks:
            self._status_children[verdict.status].inc()
        cited = 0
        for claim in report.claims:
            grounded = "true" if claim.grounded else "false"
            self._claim_children[claim.kind, grounded, claim.method].inc()
            cited += len(claim.cited_docs)
        fabricated = len(report.fabricated_citations)
        unsupported = len(report.unsupported_citations)
        citations = self._citation_children
        citations["fabricated"].inc(fabricated)
        citations["unsupported"].inc(unsupported)
        citations["supported"].inc(max(0, cited - fabricated - unsupported))
        self.faithfulness.observe(report.faithfulness)
        self._check_latency.observe(seconds)

    def estimates(self, confidence: float = 0.95) -> PopulationEstimates:
        """The current population estimates (``estimates.json``, the scan summary)."""
        return PopulationEstimates(
            confidence=confidence,
            measures={m: t.estimate(confidence) for m, t in self.rates.items()},
        )

    def observe_finding(self, f: Finding) -> None:
        child = self._finding_children.get((f.rule_id, f.direction))
        if child is None:  # a rule the registry was not told about up front
            child = self._finding_children[f.rule_id, f.direction] = self.findings.labels(
                rule=f.rule_id, category=f.category, severity=f.severity, direction=f.direction
            )
        child.inc()

    def tenant_label(self, tenant: str | None) -> str:
        if tenant is None:
            return NO_TENANT
        return tenant if tenant in self._tenants else OTHER_TENANT

    def observe_event(
        self, event: ChatEvent, findings: list[Finding], abstained: bool | None, seconds: float
    ) -> None:
        tenant = self.tenant_label(event.tenant)
        self._event_children[event.role, tenant].inc()
        for f in findings:
            self.observe_finding(f)
        for pair in {(f.category, f.direction) for f in findings}:
            self._flagged_children[pair].inc()
        if abstained is not None:
            outcome = "abstained" if abstained else "answered"
            self._answer_children[outcome, tenant].inc()
        self._screen_latency.observe(seconds)

    def observe_duplicate(self) -> None:
        self.duplicates.inc()

    def observe_held(self) -> None:
        self.held.inc()

    def observe_dead_letter(self, reason: DeadLetterReason) -> None:
        self.invalid.labels(reason=reason).inc()

    def exposition(self) -> bytes:
        """The registry in the Prometheus text format."""
        return generate_latest(self.registry)


class RateCollector(Collector):
    """Exposes the current population estimates as gauges, computed when scraped.

    ``vigil_estimated_rate{measure, bound}`` with bound ``estimate``, ``lower`` and ``upper`` (95%),
    only while the rate is estimable; ``vigil_estimated_rate_estimable{measure}`` is 1 then and 0
    while it is not (nothing screened yet, or answers of a stratum counted and none checked) — no
    [0, 1] interval stands in for an estimate. ``vigil_estimated_rate_effective_sample_size``
    gives the answers the interval is worth (Korn–Graubard: after the design effect and the
    degrees-of-freedom correction). The counts behind them are counters
    (``vigil_answers_by_stratum_total``, ``vigil_sampled_checks_total``,
    ``vigil_check_hits_total``), so a fleet-wide estimate can be computed from their sums;
    intervals of separate workers cannot be added.
    """

    def __init__(self, rates: dict[str, RateTracker]) -> None:
        self.rates = rates

    def collect(self):  # type: ignore[no-untyped-def]
        family, estimable, n_eff = self._families()
        for measure, tracker in self.rates.items():
            try:
                est = tracker.estimate()
            except ValueError:  # inconsistent counts must never break the scrape
                log.exception("estimate of %s failed", measure)
                continue
            estimable.add_metric([measure], 1.0 if est.estimable else 0.0)
            if not est.estimable:
                continue
            assert est.estimate is not None and est.lower is not None and est.upper is not None
            family.add_metric([measure, "estimate"], est.estimate)
            family.add_metric([measure, "lower"], est.lower)
            family.add_metric([measure, "upper"], est.upper)
            if est.effective_sample_size is not None:
                n_eff.add_metric([measure], est.effective_sample_size)
        yield family
        yield estimable
        yield n_eff

    @staticmethod
    def _families() -> tuple[GaugeMetricFamily, GaugeMetricFamily, GaugeMetricFamily]:
        return (
            GaugeMetricFamily(
                "vigil_estimated_rate",
                "Estimated population rate from the sampled checks, with 95% interval bounds "
                "(only while estimable).",
                labels=["measure", "bound"],
            ),
            GaugeMetricFamily(
                "vigil_estimated_rate_estimable",
                "1 while the population rate is estimable, 0 while it is not (nothing screened, "
                "or answers of a stratum counted and none of them checked).",
                labels=["measure"],
            ),
            GaugeMetricFamily(
                "vigil_estimated_rate_effective_sample_size",
                "Checked answers the rate's interval is worth after the design effect and the "
                "degrees-of-freedom correction (sampled stratum).",
                labels=["measure"],
            ),
        )

    def describe(self):  # type: ignore[no-untyped-def]
        return list(self._families())
