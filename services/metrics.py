"""Vigil's Prometheus metrics, in one place, with the registry as a parameter.

Labels come only from fixed, small sets: roles, categories, severities, directions, dead-letter
reasons, the loaded rule ids, and tenants from a configured allow-list (every other tenant is
``other``). No label ever carries message content or a value from it.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import get_args

from prometheus_client import CollectorRegistry, Counter, Histogram, generate_latest

from schemas.events import ChatEvent, Role
from schemas.outputs import DeadLetterReason, Direction, Finding

__all__ = ["OTHER_TENANT", "VigilMetrics"]

OTHER_TENANT = "other"
NO_TENANT = "none"

_LATENCY_BUCKETS = (0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.1, 0.5, 2.0)


class VigilMetrics:
    """Counters and histograms of the screening path.

    Counters (``_total``) count things that only go up: events, dead letters, findings. The
    histogram measures per-event processing time in seconds. Every label child is created up front
    so that a series exists at zero before its first increment (alert rules need that).
    """

    def __init__(
        self,
        registry: CollectorRegistry,
        *,
        rule_ids: Iterable[tuple[str, str, str]] = (),
        tenants: Iterable[str] = (),
    ) -> None:
        self.registry = registry
        self._tenants = frozenset(tenants)
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
        self.answers = Counter(
            "vigil_answers_total",
            "Assistant answers by outcome (answered or abstained).",
            ["outcome", "tenant"],
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
        for tenant in (*self._tenants, OTHER_TENANT, NO_TENANT):
            for role in get_args(Role):
                self.events.labels(role=role, tenant=tenant)
            for outcome in ("answered", "abstained"):
                self.answers.labels(outcome=outcome, tenant=tenant)
        directions = get_args(Direction)
        for rule_id, category, severity in rule_ids:
            for direction in directions:
                self.findings.labels(
                    rule=rule_id, category=category, severity=severity, direction=direction
                )
        self.latency.labels(stage="screen")

    def tenant_label(self, tenant: str | None) -> str:
        if tenant is None:
            return NO_TENANT
        return tenant if tenant in self._tenants else OTHER_TENANT

    def observe_event(
        self, event: ChatEvent, findings: list[Finding], abstained: bool | None, seconds: float
    ) -> None:
        tenant = self.tenant_label(event.tenant)
        self.events.labels(role=event.role, tenant=tenant).inc()
        for f in findings:
            self.findings.labels(
                rule=f.rule_id, category=f.category, severity=f.severity, direction=f.direction
            ).inc()
        if abstained is not None:
            outcome = "abstained" if abstained else "answered"
            self.answers.labels(outcome=outcome, tenant=tenant).inc()
        self.latency.labels(stage="screen").observe(seconds)

    def observe_dead_letter(self, reason: DeadLetterReason) -> None:
        self.invalid.labels(reason=reason).inc()

    def exposition(self) -> bytes:
        """The registry in the Prometheus text format."""
        return generate_latest(self.registry)
