"""Leakage-spike alerting: the in-process statistical detector and its Alertmanager client.

- :mod:`~services.alerting.baseline` — forecast, dispersion and CUSUM of many series on arrays
- :mod:`~services.alerting.stats` — the window test's tail, the CUSUM's likelihood ratio,
  multiple-testing control
- :mod:`~services.alerting.state` — the detector's state as pydantic models (for a Faust table)
- :mod:`~services.alerting.detector` — :class:`Detector`, pure: counts in, :class:`Alert` out
- :mod:`~services.alerting.alertmanager` — push alerts to Alertmanager's API v2 (sync and async)

The Prometheus rules that catch the same spikes from the metrics live in
``deploy/prometheus/alerts.yml``; ``docs/alerting.md`` compares the two and measures the detector.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from services._lazy import lazy_exports

if TYPE_CHECKING:
    from schemas.alerts import (
        Alert,
        DetectorSettings,
    )
    from services.alerting.alertmanager import (
        AlertmanagerClient,
        AlertmanagerConfig,
        AlertmanagerError,
        AlertmanagerRejected,
        AlertmanagerUnavailable,
        AsyncAlertmanagerClient,
        to_payload,
    )
    from services.alerting.detector import (
        Detector,
        WindowClosedError,
        window_start_of,
    )
    from services.alerting.state import (
        DetectorState,
        SeriesKey,
        SeriesState,
    )

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

_SOURCES = {
    "Alert": "schemas.alerts",
    "DetectorSettings": "schemas.alerts",
    "AlertmanagerClient": "services.alerting.alertmanager",
    "AlertmanagerConfig": "services.alerting.alertmanager",
    "AlertmanagerError": "services.alerting.alertmanager",
    "AlertmanagerRejected": "services.alerting.alertmanager",
    "AlertmanagerUnavailable": "services.alerting.alertmanager",
    "AsyncAlertmanagerClient": "services.alerting.alertmanager",
    "to_payload": "services.alerting.alertmanager",
    "Detector": "services.alerting.detector",
    "WindowClosedError": "services.alerting.detector",
    "window_start_of": "services.alerting.detector",
    "DetectorState": "services.alerting.state",
    "SeriesKey": "services.alerting.state",
    "SeriesState": "services.alerting.state",
}
__getattr__ = lazy_exports(__name__, _SOURCES)
