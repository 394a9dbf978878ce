"""The detector stage of the dataflow (``services.alerting.core.DetectorCore``) over a plain
keyed store: counts messages in, alerts out, state kept in the store. No broker, no Faust."""

from __future__ import annotations

import json

from prometheus_client import CollectorRegistry

from services.alerting.core import AlertingMetrics, DetectorCore, JsonView, alerting_specs
from services.alerting.settings import AlertingSettings
from services.dataflow.state import MemoryStore

WINDOW = 60


def _core(table: JsonView, cfg: AlertingSettings) -> DetectorCore:
    metrics = AlertingMetrics(CollectorRegistry())
    return DetectorCore(cfg, table, metrics, frozenset({("pii", "leak")}))


def _counts(window: int, leaks: int, answers: int = 1000) -> dict[str, object]:
    return {
        "kind": "counts",
        "window": window,
        "partition": 0,
        "series": {json.dumps(["pii", "acme", "leak"], separators=(",", ":")): leaks},
        "messages": {json.dumps(["acme", "assistant"], separators=(",", ":")): answers},
    }


def _run(core: DetectorCore, windows: list[int], start: int = 0) -> list:
    alerts = []
    for i, leaks in enumerate(windows, start):
        out, _ = core.handle(_counts(i * WINDOW, leaks), now=(i + 1) * WINDOW + 30.0)
        alerts += out
    return alerts


def test_the_core_fires_on_a_spike_and_keeps_bounded_state_in_the_store() -> None:
    cfg = AlertingSettings(window_seconds=WINDOW, grace_seconds=10, min_baseline_windows=5)
    spec = alerting_specs(cfg)["alerts-detector"]
    table = JsonView(MemoryStore(spec))
    core = _core(table, cfg)
    assert _run(core, [10] * 40) == []
    alerts = _run(core, [60], start=40)
    assert [(a.category, a.tenant, a.direction, a.state) for a in alerts] == [
        ("pii", "acme", "leak", "firing")
    ]
    saved = table["series/" + json.dumps(["pii", "acme", "leak"], separators=(",", ":"))]
    assert saved["kind"] == "binomial" and len(saved["baseline"]["guard"]) <= cfg.guard_windows
    size = len(json.dumps(saved))
    _run(core, [10] * 200, start=41)
    saved = table["series/" + json.dumps(["pii", "acme", "leak"], separators=(",", ":"))]
    assert len(json.dumps(saved)) < size + 200  # a fixed set of numbers, whatever the age
    # a second core reading the same store resumes where the first stopped
    again = _core(table, cfg)
    again.load()
    assert again.detector.state() == core.detector.state()


def test_state_saved_by_the_earlier_detector_starts_new_baselines() -> None:
    """Version 1 kept a list of windows per series and ``baseline_windows`` in its settings: the
    new detector reads neither, says so, and starts again instead of failing every record."""
    cfg = AlertingSettings(window_seconds=WINDOW, grace_seconds=10, min_baseline_windows=5)
    table = JsonView(MemoryStore(alerting_specs(cfg)["alerts-detector"]))
    old_settings = {"window_seconds": WINDOW, "baseline_windows": 60, "min_baseline_windows": 30}
    table["meta"] = {"rev": "old", "settings": old_settings, "last_closed": None}
    key = "series/" + json.dumps(["pii", "acme", "leak"], separators=(",", ":"))
    table[key] = {
        "key": {"category": "pii", "tenant": "acme", "direction": "leak"},
        "status": "ok",
        "baseline": [{"count": 3, "messages": 1000}] * 60,
    }
    core = _core(table, cfg)
    core.load()
    assert key not in table and core.detector.state().series == []
    assert _run(core, [10] * 40) == []
    assert table[key]["kind"] == "binomial"


def test_series_the_detector_forgets_leave_the_store_and_the_gauge() -> None:
    cfg = AlertingSettings(
        window_seconds=WINDOW, grace_seconds=10, min_baseline_windows=5, series_idle_windows=20
    )
    registry = CollectorRegistry()
    table = JsonView(MemoryStore(alerting_specs(cfg)["alerts-detector"]))
    core = DetectorCore(cfg, table, AlertingMetrics(registry), frozenset({("pii", "leak")}))
    _run(core, [1] * 10)
    key = "series/" + json.dumps(["pii", "acme", "leak"], separators=(",", ":"))
    labels = {"category": "pii", "tenant": "acme"}
    assert key in table and registry.get_sample_value("vigil_spike_active", labels) == 0
    for i in range(10, 30):  # acme goes quiet; another tenant keeps the windows closing
        out, _ = core.handle(
            {
                "kind": "counts",
                "window": i * WINDOW,
                "partition": 0,
                "series": {},
                "messages": {json.dumps(["beta", "assistant"], separators=(",", ":")): 100},
            },
            now=(i + 1) * WINDOW + 30.0,
        )
        assert out == []
    assert key not in table
    assert registry.get_sample_value("vigil_spike_active", labels) is None
    dropped = registry.get_sample_value("vigil_alert_series_dropped_total", {"reason": "idle"})
    assert dropped == 1
    assert len(table) <= cfg.max_series + 2
