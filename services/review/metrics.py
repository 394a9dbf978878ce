"""The review queue's Prometheus metrics (registry as a parameter; labels from fixed sets).

Counters count what only goes up: items enqueued (by priority band and admission), overflowed
conversations, applied and rejected reviewer actions, labels per rule and verdict, corrected
labels, reveals, expired items, failures the worker caught. The queue depth is a gauge read from
the store at scrape time (per worker: each worker reports the partitions it holds; sum them in
PromQL).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import get_args

from prometheus_client import CollectorRegistry, Counter
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector

from schemas.review import ActionKind, LabelVerdict, RevealEvent, ReviewLabel, ReviewStatus
from services.review.caps import AdmissionDecision
from services.review.policy import BANDS, band
from services.review.queue import Transition
from services.review.store import ReviewStore

__all__ = ["ERROR_STAGES", "FACT_CHECK_RULE", "ReviewMetrics", "precision_update"]

#: The rule label of reviewed fact checks that the checker had marked ``contradicted``.
FACT_CHECK_RULE = "grounding.fact_contradicted"
_ADMISSIONS = ("admitted", "exempt", "sampled")
#: Label values of ``vigil_review_errors_total``.
ERROR_STAGES = ("intake", "tick")
_STATUSES: tuple[str, ...] = get_args(ReviewStatus)


def precision_update(label: ReviewLabel) -> list[tuple[str, LabelVerdict]]:
    """``(rule, verdict)`` pairs a label adds to ``vigil_review_labels_total``.

    One pair per labelled finding (its rule id and verdict, ``unsure`` included), and one per
    fact check the checker had marked ``contradicted`` (rule :data:`FACT_CHECK_RULE`): a true
    positive when the reviewer kept the status, a false positive when they corrected it.
    Precision per rule is then ``tp / (tp + fp)`` in PromQL. A correction adds nothing (a
    counter cannot take back what the corrected label added: it is counted in
    ``vigil_review_label_corrections_total``, and ``vigil eval run`` gives precision from the
    latest labels); each of two reviewers' labels counts.
    """
    if label.supersedes is not None:
        return []
    pairs: list[tuple[str, LabelVerdict]] = [(f.rule_id, f.verdict) for f in label.findings]
    for c in label.claims:
        if c.original == "contradicted":
            pairs.append(
                (
                    FACT_CHECK_RULE,
                    "true_positive" if c.corrected == c.original else "false_positive",
                )
            )
    return pairs


class _DepthCollector(Collector):
    def __init__(self, store: ReviewStore) -> None:
        self.store = store

    def collect(self) -> Iterator[GaugeMetricFamily]:
        counts = self.store.counts()
        family = GaugeMetricFamily(
            "vigil_review_queue_depth",
            "Review items held by this worker, by status.",
            labels=["status"],
        )
        for status in _STATUSES:
            family.add_metric([status], float(counts.get(status, 0)))
        yield family


class ReviewMetrics:
    """Counters of the review queue; call :meth:`observe` with every transition."""

    def __init__(self, registry: CollectorRegistry, *, rule_ids: Iterable[str] = ()) -> None:
        self.registry = registry
        self.enqueued = Counter(
            "vigil_review_items_enqueued_total",
            "New review items (conversations), by priority band and admission.",
            ["band", "admission"],
            registry=registry,
        )
        self.overflowed = Counter(
            "vigil_review_items_overflowed_total",
            "Conversations over their tenant's hourly cap and not sampled, by priority band.",
            ["band"],
            registry=registry,
        )
        self.actions = Counter(
            "vigil_review_actions_total",
            "Reviewer actions, by kind and outcome (applied or rejected).",
            ["action", "outcome"],
            registry=registry,
        )
        self.labeled = Counter(
            "vigil_review_items_labeled_total",
            "Review items labelled, by priority band.",
            ["band"],
            registry=registry,
        )
        self.expired = Counter(
            "vigil_review_items_expired_total",
            "Open review items that expired unclaimed, by priority band.",
            ["band"],
            registry=registry,
        )
        self.labels = Counter(
            "vigil_review_labels_total",
            "Reviewed findings by rule and verdict (true_positive or false_positive).",
            ["rule", "verdict"],
            registry=registry,
        )
        self.corrections = Counter(
            "vigil_review_label_corrections_total",
            "Labels corrected (a new label event superseding the latest one), by priority band.",
            ["band"],
            registry=registry,
        )
        self.reveals = Counter(
            "vigil_review_reveals_total",
            "Views of unmasked values by reviewers with the reveal role.",
            registry=registry,
        )
        self.errors = Counter(
            "vigil_review_errors_total",
            "Failures the worker caught and logged instead of stopping: intake of a flag, the "
            "timer's pass over the queue.",
            ["stage"],
            registry=registry,
        )
        for stage in ERROR_STAGES:
            self.errors.labels(stage)
        for b in BANDS:
            for a in _ADMISSIONS:
                self.enqueued.labels(b, a)
            self.overflowed.labels(b)
            self.labeled.labels(b)
            self.expired.labels(b)
            self.corrections.labels(b)
        for kind in get_args(ActionKind):
            for outcome in ("applied", "rejected"):
                self.actions.labels(kind, outcome)
        for rule in rule_ids:
            for verdict in get_args(LabelVerdict):
                self.labels.labels(rule, verdict)

    def track(self, store: ReviewStore) -> None:
        """Export ``vigil_review_queue_depth{status}`` from ``store`` at every scrape."""
        self.registry.register(_DepthCollector(store))

    def observe(self, t: Transition, admission: AdmissionDecision | None = None) -> None:
        if t.expired is not None:
            self.expired.labels(band(t.expired.priority)).inc()
        if t.outcome == "created" and t.item is not None:
            self.enqueued.labels(band(t.item.priority), t.item.admission).inc()
        elif t.outcome == "overflowed" and admission is not None and not admission.repeat:
            self.overflowed.labels(admission.band).inc()
        for record in t.events:
            if isinstance(record, ReviewLabel):
                if record.supersedes is not None:
                    self.corrections.labels(band(record.priority)).inc()
                elif record.stage == 1:
                    self.labeled.labels(band(record.priority)).inc()
                for rule, verdict in precision_update(record):
                    self.labels.labels(rule, verdict).inc()
            elif isinstance(record, RevealEvent):
                self.reveals.inc()
                self.actions.labels("reveal", "applied").inc()
            elif record.outcome is not None:  # a ReviewAction
                self.actions.labels(record.kind, record.outcome).inc()
