"""Leakage-spike detection in the worker (SPEC §7): thin wiring over
:mod:`services.alerting.core`.

How the parts fit (``docs/alerting.md`` has the why)::

    dataflow (every screened message) ──▶ window counts, per input partition (state table)
                                        │ timer: every ended window's totals, per partition
                                        ▼
                          topic vigil.alerts.counts (partition 0 only)
                                        │ agent, concurrency 1: the only owner of the detector
                                        ▼
       detector state (partition 0) ◀── Detector ──▶ topic vigil.alerts (Alert, keyed by id)
                                        ├─▶ gauge vigil_spike_active{category,tenant}
                                        └─▶ Alertmanager API v2 (when configured)

Counting happens in the dataflow (:class:`~services.alerting.core.WindowCounter`, keyed by input
offset so a redelivered message is not counted twice). The timer sends the totals of every
ended window of the partitions this worker owns to partition 0 of the counts topic; the agent
there closes a window ``grace_seconds`` after it ends and tests all series of the window
together (multiple-testing control across series) — one detector per stream, on the worker that
owns partition 0 (its limit: ``docs/streaming.md``). With ``VIGIL_ALERTS_ALERTMANAGER_URL`` the
changes and every firing alert are pushed to Alertmanager from a background task, so a slow
Alertmanager never stalls the stream. Nothing here raises into the stream: errors are logged
and counted (``vigil_alert_errors_total{stage}``).
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Iterator, MutableMapping
from typing import TYPE_CHECKING, Any

from services.alerting.core import (
    ALERTS,
    COUNTS,
    COUNTS_PARTITION,
    AlertingMetrics,
    DetectorCore,
    tick_emit,
)
from services.alerting.pusher import Pusher
from services.alerting.settings import AlertingSettings
from services.dataflow.records import Effects, Emit
from services.settings import Settings
from services.streaming.runner import Record, StreamRunner

if TYPE_CHECKING:
    from services.streaming.app import WorkerContext

__all__ = ["AlertingFeature", "register", "topics"]

log = logging.getLogger("vigil.alerting")


def topics(settings: Settings) -> list[tuple[str, bool]]:
    """Topics for ``vigil topics create``: (name, compacted). The counts topic has the input's
    partition count (co-partitioned with the detector's state); only partition 0 is used."""
    cfg = AlertingSettings()
    if not cfg.enabled:
        return []
    return [(cfg.topic, False), (cfg.counts_topic, False)]


class _DetectorTable(MutableMapping[str, Any]):
    """The detector's store (partition 0 of the state table) as JSON values, looked up at each
    access so a store dropped at a rebalance is never used again."""

    def __init__(self, runner: StreamRunner) -> None:
        self.runner = runner

    def _store(self) -> Any:
        return self.runner.states.store("alerts-detector", COUNTS_PARTITION)

    def __getitem__(self, key: str) -> Any:
        return json.loads(self._store()[key])

    def get(self, key: str, default: Any = None) -> Any:
        raw = self._store().get(key)
        return default if raw is None else json.loads(raw)

    def __setitem__(self, key: str, value: Any) -> None:
        store = self._store()
        store.now = time.time()
        store[key] = json.dumps(value, separators=(",", ":")).encode()

    def __delitem__(self, key: str) -> None:
        del self._store()[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._store())

    def __len__(self) -> int:
        return len(self._store())

    def flush(self) -> None:
        self._store().flush()


class AlertingFeature:
    """The timer and the detector agent (exposed as ``app.vigil_alerting``)."""

    def __init__(self, ctx: WorkerContext, cfg: AlertingSettings) -> None:
        self.app = ctx.app
        self.settings = ctx.settings
        self.cfg = cfg
        self.runner = ctx.runner
        self.metrics = AlertingMetrics(ctx.registry)
        rule_categories = {r.category for r in ctx.flow.pipeline.engine.rules.values()}
        self.table = _DetectorTable(ctx.runner)
        self.core = DetectorCore(cfg, self.table, self.metrics, cfg.watched(rule_categories))
        self.pusher = Pusher(cfg.alertmanager(), self.metrics)
        self.clock = time.time

    def owns_detector(self) -> bool:
        from services.streaming.app import owned_partitions

        return COUNTS_PARTITION in owned_partitions(self.app, self.cfg.counts_topic)

    async def on_tick(self) -> None:
        from services.streaming.app import owned_partitions, serving

        if not serving(self.app):
            return
        try:
            counter = self.runner.flow.counter
            if counter is None:
                return
            now = self.clock()
            emits: list[Emit] = []
            for p in sorted(owned_partitions(self.app, self.settings.input_topic)):
                st = self.runner.partition_state(p)
                if st.counts is not None:
                    st.counts.now = now
                    emits += counter.reports(st.counts, p, now)
                    st.counts.flush()
            if not self.owns_detector():
                self.core.release()
            else:
                core = self.core
                if not core.loaded or core.reports:
                    emits.append(tick_emit())
                firing = core.detector.firing() if core.loaded else []
                if firing and now - core.last_push >= self.cfg.window_seconds:
                    core.last_push = now
                    self.pusher.submit(firing)
            await self.runner.deliver(Effects(emits))
        except Exception as exc:  # the timer must live on
            self.metrics.errors.labels(stage="flush").inc()
            log.error("spike-detection timer failed: %s", type(exc).__name__)

    async def detect(self, records: list[Record]) -> None:
        emits: list[Emit] = []
        batch: list[Any] = []
        for record in records:
            try:
                message = json.loads(record.value)
                if not isinstance(message, dict):
                    raise ValueError("not an object")
                alerts, closed = self.core.handle(message, self.clock())
                self.table.flush()
                for alert in alerts:
                    emits.append(Emit(ALERTS, alert.alert_id.encode(), alert))
                    self.metrics.alerts.labels(state=alert.state).inc()
                    log.warning(
                        "spike %s: %s/%s/%s observed %d expected %.3g p=%.3g",
                        alert.state,
                        alert.category,
                        alert.tenant,
                        alert.direction,
                        alert.observed,
                        alert.expected,
                        alert.p_value,
                    )
                if closed:
                    resolved = [a for a in alerts if a.state == "resolved"]
                    batch = resolved + self.core.detector.firing()
            except Exception as exc:  # a bad record or a bug must not stop the detector
                self.core.loaded = False  # reload the last saved state on the next record
                self.runner.states.store("alerts-detector", COUNTS_PARTITION).discard()
                self.metrics.errors.labels(stage="detect").inc()
                log.error("spike detector failed on a counts record: %s", type(exc).__name__)
        await self.runner.deliver(Effects(emits))
        if batch:
            self.core.last_push = self.clock()
            self.pusher.submit(batch)


def register(ctx: WorkerContext) -> None:
    """Wire the spike detector into the worker (see the module docstring)."""
    cfg = AlertingSettings()
    if not cfg.enabled or ctx.flow.counter is None:
        return
    app = ctx.app
    n = ctx.settings.topic_partitions
    counts_topic = app.topic(
        cfg.counts_topic, key_type=bytes, value_type=bytes, partitions=n, internal=True
    )
    alerts_topic = app.topic(cfg.topic, key_type=bytes, value_type=bytes)
    ctx.channels.update({COUNTS: cfg.counts_topic, ALERTS: cfg.topic})
    ctx.topics.update({ALERTS: alerts_topic, "alert_counts": counts_topic})
    ctx.consumed[cfg.counts_topic] = "alert-counts"
    feature = AlertingFeature(ctx, cfg)

    def after_reset() -> None:
        feature.core.loaded = False

    ctx.on_reset.append(after_reset)

    async def spike_timer() -> None:
        await feature.on_tick()

    async def alertmanager_push() -> None:
        await feature.pusher.run()

    ctx.routes.add(counts_topic, feature.detect)
    app.timer(cfg.tick, name="vigil.alerting.tick")(spike_timer)
    if feature.pusher.config is not None:
        app.task(alertmanager_push)
    app.vigil_alerting = feature  # type: ignore[attr-defined]
