"""Pushes the detector's alerts to Alertmanager from a background task (latest batches win)."""

from __future__ import annotations

import asyncio
import contextlib
import logging

from schemas.alerts import Alert
from services.alerting.alertmanager import (
    AlertmanagerConfig,
    AlertmanagerRejected,
    AlertmanagerUnavailable,
    AsyncAlertmanagerClient,
)
from services.alerting.core import AlertingMetrics

__all__ = ["Pusher"]

log = logging.getLogger("vigil.alerting")


class Pusher:
    """Pushes batches of alerts to Alertmanager from a background task (latest batches win)."""

    def __init__(self, config: AlertmanagerConfig | None, metrics: AlertingMetrics) -> None:
        self.config = config
        self.metrics = metrics
        self.queue: asyncio.Queue[list[Alert]] = asyncio.Queue(maxsize=64)

    def submit(self, alerts: list[Alert]) -> None:
        if self.config is None or not alerts:
            return
        while self.queue.full():
            with contextlib.suppress(asyncio.QueueEmpty):
                self.queue.get_nowait()
                self.metrics.pushes.labels(outcome="dropped").inc()
        self.queue.put_nowait(alerts)

    async def run(self) -> None:
        if self.config is None:
            return
        async with AsyncAlertmanagerClient(self.config) as client:
            while True:
                batch = await self.queue.get()
                try:
                    await client.push(batch)
                    self.metrics.pushes.labels(outcome="ok").inc()
                except AlertmanagerRejected as exc:
                    self.metrics.pushes.labels(outcome="rejected").inc()
                    log.error("Alertmanager rejected %d alert(s): %s", len(batch), exc.detail)
                except AlertmanagerUnavailable as exc:
                    self.metrics.pushes.labels(outcome="unavailable").inc()
                    log.warning("Alertmanager unavailable: %s", exc.last)
                except Exception as exc:  # the push task must live on
                    self.metrics.errors.labels(stage="push").inc()
                    log.error("pushing to Alertmanager failed: %s", type(exc).__name__)
