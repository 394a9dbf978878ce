"""Leak spikes reach the real Alertmanager both ways: pushed by the in-process detector, and fired
by the real Prometheus from the worker's metrics.

The Prometheus test runs ``deploy/prometheus/alerts.yml`` with its ranges and ``for:`` windows
shortened (5m → 5s, 1d → 10m, ``for`` → 1s) so a spike fires in seconds; the shipped file is
tested at full length by ``promtool test rules`` (tests/unit/test_promtool.py).

Timing is by conditions, not sleeps: the spike starts once Prometheus holds 40 scrapes of
baseline, since the "1-day" baseline (here: all the data, under 10 minutes) must stay well below a
third of the spike's share while the alert's ``for:`` runs.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from schemas.alerts import Alert, DetectorSettings
from services.alerting import (
    AlertmanagerClient,
    AlertmanagerConfig,
    AlertmanagerRejected,
    AsyncAlertmanagerClient,
    Detector,
    SeriesKey,
    window_start_of,
)
from tests.e2e.conftest import MetricsTarget
from tests.support.prom_servers import AlertmanagerServer, prometheus, shorten_rules, wait_for

SETTINGS = DetectorSettings(min_baseline_windows=5, resolve_windows=2)
GENERATOR = "http://vigil.test/alerts"
SHORT_RANGES = {"5m": "5s", "1d": "10m"}
SHORT_FORS = {"5m": "1s", "10m": "1s"}
BASELINE_SCRAPES = 40


def detector_episode(key: SeriesKey) -> tuple[Alert, Alert]:
    """A real firing and resolved alert from the detector, in windows that ended minutes ago."""
    detector = Detector(SETTINGS)
    start = window_start_of(datetime.now(UTC), 60) - timedelta(minutes=20)
    alerts: list[Alert] = []
    # a spike, then quiet windows until the evidence has decayed and the alert resolves
    for i, count in enumerate([2] * 10 + [30] + [2] * 9):
        window = start + timedelta(minutes=i)
        detector.observe(key, window, count, messages=1000)
        alerts += detector.close_window(window)
    firing, resolved = alerts
    assert (firing.state, resolved.state) == ("firing", "resolved")
    return firing, resolved


def labels_of(key: SeriesKey, severity: str = "warning") -> dict[str, str]:
    return {
        "alertname": "VigilLeakSpike",
        "category": key.category,
        "tenant": key.tenant,
        "direction": key.direction,
        "severity": severity,
    }


def test_detector_alert_pushed_arrives_and_resolves(am: AlertmanagerServer) -> None:
    key = SeriesKey(category="pii", tenant="acme", direction="leak")
    firing, resolved = detector_episode(key)
    config = AlertmanagerConfig(url=am.url, generator_url=GENERATOR)
    with AlertmanagerClient(config) as client:
        client.push([firing])
        [got] = wait_for(
            lambda: am.alerts(alertname="VigilLeakSpike", tenant="acme"),
            30,
            "the pushed alert in GET /api/v2/alerts",
        )
        assert got["labels"] == labels_of(key)
        assert got["annotations"]["alert_id"] == firing.alert_id
        assert got["annotations"]["summary"].startswith("pii leak findings spiking for tenant acme")
        assert got["generatorURL"] == GENERATOR
        assert got["status"]["state"] == "active"
        assert datetime.fromisoformat(got["startsAt"]) == firing.started_at

        client.push([resolved])
        wait_for(
            lambda: am.alerts(alertname="VigilLeakSpike", tenant="acme") == [],
            30,
            "the resolved alert to leave the active alerts",
        )


async def test_async_push_arrives(am: AlertmanagerServer) -> None:
    key = SeriesKey(category="secret", tenant="other", direction="leak")
    firing, _ = detector_episode(key)
    config = AlertmanagerConfig(url=am.url, severity_by_category={"secret": "critical"})
    async with AsyncAlertmanagerClient(config) as client:
        await client.push([firing])
    [got] = wait_for(
        lambda: am.alerts(category="secret"), 30, "the async-pushed alert in GET /api/v2/alerts"
    )
    assert got["labels"] == labels_of(key, severity="critical")


def test_real_alertmanager_rejection_is_reported(am: AlertmanagerServer) -> None:
    # Started a day from now, sent with a one-minute TTL: endsAt before startsAt, which
    # Alertmanager refuses with 400 and a reason.
    key = SeriesKey(category="pii", tenant="acme", direction="leak")
    firing, _ = detector_episode(key)
    future = firing.model_copy(update={"started_at": datetime.now(UTC) + timedelta(days=1)})
    config = AlertmanagerConfig(url=am.url, firing_ttl_seconds=60)
    with AlertmanagerClient(config) as client, pytest.raises(AlertmanagerRejected) as info:
        client.push([future])
    assert info.value.status == 400
    assert "start time must be before end time" in info.value.detail


class Traffic:
    """Drives the worker's counters like a stream of assistant messages: 100 per second, with a
    given share carrying a pii leak finding. Paced by an Event, stopped by the test."""

    def __init__(self, target: MetricsTarget) -> None:
        self.metrics = target.metrics
        self.leak_share = 0.002
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._owed = 0.0

    def _run(self) -> None:
        events = self.metrics.events.labels(role="assistant", tenant="acme")
        leaks = self.metrics.findings.labels(
            rule="pii.email", category="pii", severity="high", direction="leak"
        )
        while not self._stop.wait(0.1):
            events.inc(10)
            self._owed += 10 * self.leak_share
            whole = int(self._owed)
            if whole:
                leaks.inc(whole)
                self._owed -= whole

    def __enter__(self) -> Traffic:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(5)


@pytest.fixture
def short_rules(tmp_path: Path) -> Path:
    return shorten_rules(tmp_path / "alerts-short.yml", SHORT_RANGES, SHORT_FORS)


@pytest.fixture
def traffic(metrics_target: MetricsTarget) -> Iterator[Traffic]:
    with Traffic(metrics_target) as t:
        yield t


def test_shortened_rules_keep_everything_but_durations(short_rules: Path) -> None:
    shipped = Path("deploy/prometheus/alerts.yml").resolve()
    text = short_rules.read_text()
    assert "[5m]" not in text and "[1d]" not in text and "[5s]" in text and "[10m]" in text
    with pytest.raises(KeyError, match=r"\[5m\]"):
        shorten_rules(short_rules.parent / "x.yml", {"1d": "1m"}, SHORT_FORS, src=shipped)


def test_prometheus_fires_on_a_leak_spike_and_alertmanager_receives_it(
    tmp_path: Path,
    am: AlertmanagerServer,
    metrics_target: MetricsTarget,
    traffic: Traffic,
    short_rules: Path,
) -> None:
    with prometheus(
        tmp_path / "prometheus",
        targets=[metrics_target.address],
        rule_files=[short_rules],
        alertmanager_url=am.url,
    ) as prom:
        # Baseline: 0.2% of assistant messages leak, under the 0.5% floor.
        wait_for(
            lambda: prom.query(
                'vigil:leak_findings_per_assistant_message:ratio_rate5m{category="pii"}'
            ),
            60,
            "Prometheus to scrape the target and record the leak share",
        )
        scrapes = 'count_over_time(vigil_events_total{role="assistant",tenant="acme"}[10m])'
        wait_for(
            lambda: prom.query(f"{scrapes} >= {BASELINE_SCRAPES}"),
            120,
            f"{BASELINE_SCRAPES} scrapes of baseline traffic",
            interval_s=1.0,
        )
        assert prom.targets_up() == [f"http://{metrics_target.address}/metrics"]
        assert prom.alerts("VigilLeakSpike", "pending") == []
        assert prom.alerts("VigilLeakSpike", "firing") == []

        traffic.leak_share = 0.5  # 250x the baseline, 100x the floor
        [fired] = wait_for(
            lambda: prom.alerts("VigilLeakSpike", "firing"),
            90,
            "VigilLeakSpike to fire in Prometheus (/api/v1/alerts)",
        )
        expected = {"alertname": "VigilLeakSpike", "category": "pii", "severity": "critical"}
        assert fired["labels"] == expected
        summary = fired["annotations"]["summary"]
        assert re.fullmatch(r"pii leak findings in [0-9.]+% of assistant messages \(5m\)", summary)
        assert "1-day baseline of" in fired["annotations"]["description"]

        [received] = wait_for(
            lambda: am.alerts(alertname="VigilLeakSpike"),
            60,
            "Prometheus's VigilLeakSpike in Alertmanager (GET /api/v2/alerts)",
        )
        assert received["labels"] == expected
        assert received["annotations"]["summary"].startswith("pii leak findings in ")
        assert received["generatorURL"].startswith(prom.url)
        assert received["status"]["state"] == "active"
