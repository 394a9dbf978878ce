"""A real worker's metrics exposition, built without a broker.

``services.streaming.app.create_app`` builds the worker (every feature module, Faust's Prometheus
sensor) into a fresh registry; nothing connects until the app runs. :func:`exposed_names` gives
every series name the registry can carry, also for labelled families that have no sample yet.
"""

from __future__ import annotations

from pathlib import Path

from prometheus_client import CollectorRegistry

from services.settings import Settings
from services.streaming.app import create_app

__all__ = ["SUFFIXES", "exposed_names", "worker_registry"]

#: The series a family of each type exposes (prometheus_client strips ``_total`` from a
#: counter family's name, and adds ``_created`` to counters and histograms).
SUFFIXES = {
    "counter": ("_total", "_created"),
    "gauge": ("",),
    "histogram": ("_bucket", "_count", "_sum", "_created"),
    "gaugehistogram": ("_bucket", "_gcount", "_gsum"),
    "summary": ("", "_count", "_sum", "_created"),
    "info": ("_info",),
    "stateset": ("",),
    "unknown": ("",),
}


def worker_registry(data_dir: Path, web_port: int = 6198) -> CollectorRegistry:
    """The registry a worker serves at ``/metrics``: Vigil's, its features', Faust's."""
    registry = CollectorRegistry()
    create_app(Settings(data_dir=data_dir, web_port=web_port), registry)
    return registry


def exposed_names(registry: CollectorRegistry) -> set[str]:
    names: set[str] = set()
    for family in registry.collect():
        names |= {family.name + suffix for suffix in SUFFIXES[family.type]}
        names |= {sample.name for sample in family.samples}
    return names
