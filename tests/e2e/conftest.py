"""End-to-end tests against real servers: shared fixtures.

For the Prometheus/Alertmanager tests: ``am`` is Debian's Alertmanager on a free loopback port in
a temporary folder (``tests/support/prom_servers.py``; without the binary the test fails under CI
and is skipped elsewhere). ``metrics_target`` is a real exposition server (prometheus_client) over
a fresh registry holding the worker's own metrics (``services.metrics.VigilMetrics``): the same
names and labels a worker serves, driven by the test instead of a Kafka stream.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from prometheus_client import CollectorRegistry, start_http_server

from services.metrics import VigilMetrics
from tests.support.prom_servers import AlertmanagerServer, alertmanager, free_port

#: (rule id, category, severity) of the rules whose finding counters exist from the start.
RULE_IDS = [
    ("pii.email", "pii", "high"),
    ("secret.api_key", "secret", "critical"),
    ("grounding.ungrounded_dose", "medical", "critical"),
    ("grounding.ungrounded_contraindication", "medical", "critical"),
]


@dataclass
class MetricsTarget:
    metrics: VigilMetrics
    address: str  # host:port, for a Prometheus scrape config
    stop: Callable[[], None]  # the worker goes away: scrapes fail from then on


@pytest.fixture
def am(tmp_path: Path) -> Iterator[AlertmanagerServer]:
    with alertmanager(tmp_path / "alertmanager") as server:
        yield server


@pytest.fixture
def metrics_target() -> Iterator[MetricsTarget]:
    registry = CollectorRegistry()
    metrics = VigilMetrics(registry, rule_ids=RULE_IDS, tenants=["acme"])
    port = free_port()
    server, thread = start_http_server(port, addr="127.0.0.1", registry=registry)
    stopped = threading.Event()

    def stop() -> None:
        if not stopped.is_set():
            stopped.set()
            server.shutdown()
            server.server_close()
            thread.join(5)

    try:
        yield MetricsTarget(metrics, f"127.0.0.1:{port}", stop)
    finally:
        stop()
