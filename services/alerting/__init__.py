"""Leakage-spike alerting: the in-process statistical detector and its Alertmanager client.

- :mod:`~services.alerting.stats` — exact Poisson/binomial tests, multiple-testing control
- :mod:`~services.alerting.state` — the detector's state as pydantic models (for a Faust table)
- :mod:`~services.alerting.detector` — :class:`Detector`, pure: counts in, :class:`Alert` out
- :mod:`~services.alerting.alertmanager` — push alerts to Alertmanager's API v2 (sync and async)

The Prometheus rules that catch the same spikes from the metrics live in
``deploy/prometheus/alerts.yml``; ``docs/alerting.md`` compares the two and measures the detector.
"""

from schemas.alerts import Alert, DetectorSettings
from services.alerting.alertmanager import (
    AlertmanagerClient,
    AlertmanagerConfig,
    AlertmanagerError,
    AlertmanagerRejected,
    AlertmanagerUnavailable,
    AsyncAlertmanagerClient,
    to_payload,
)
from services.alerting.detector import Detector, WindowClosedError, window_start_of
from services.alerting.state import DetectorState, SeriesKey, SeriesState

__all__ = [
    "Alert",
    "AlertmanagerClient",
    "AlertmanagerConfig",
    "AlertmanagerError",
    "AlertmanagerRejected",
    "AlertmanagerUnavailable",
    "AsyncAlertmanagerClient",
    "Detector",
    "DetectorSettings",
    "DetectorState",
    "SeriesKey",
    "SeriesState",
    "WindowClosedError",
    "to_payload",
    "window_start_of",
]
