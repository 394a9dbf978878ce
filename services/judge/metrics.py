"""Prometheus metrics of the judge client, with the registry as a parameter.

A counter for calls by outcome (the label comes from the fixed set ``OUTCOMES``; every child exists
at zero from the start so alert rules can use it at once) and a histogram of how long calls that
went out over the network took, retries and back-off included. Cache hits and calls refused by the
open circuit make no request, so they are counted but not timed.
"""

from __future__ import annotations

from collections import Counter as Counter_

from prometheus_client import CollectorRegistry, Counter, Histogram

from services.judge.result import OUTCOMES, JudgeResult

__all__ = ["JudgeMetrics"]

_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0)
_NOT_TIMED = frozenset({"cached", "circuit_open"})


class JudgeMetrics:
    def __init__(self, registry: CollectorRegistry) -> None:
        self.calls = Counter(
            "vigil_judge_calls_total",
            "Calls to the claim judge, by how they ended.",
            ["outcome"],
            registry=registry,
        )
        self.latency = Histogram(
            "vigil_judge_seconds",
            "Wall time of judge calls that made a request, retries included, in seconds.",
            buckets=_BUCKETS,
            registry=registry,
        )
        for outcome in OUTCOMES:
            self.calls.labels(outcome=outcome)

    def counts(self) -> Counter_[str]:
        """Calls so far by outcome (the outcomes with at least one call)."""
        out: Counter_[str] = Counter_()
        for metric in self.calls.collect():
            for sample in metric.samples:
                if sample.name.endswith("_total") and sample.value:
                    out[sample.labels["outcome"]] += int(sample.value)
        return out

    def observe(self, result: JudgeResult) -> None:
        self.calls.labels(outcome=result.outcome).inc()
        if result.outcome not in _NOT_TIMED:
            self.latency.observe(result.seconds)
