"""The provisioned Grafana dashboard queries only metrics that a real worker exposes.

The exposition is the real one: ``services.streaming.app.create_app`` builds the worker (every
feature module, Faust's Prometheus sensor) into a fresh registry — no broker is needed to build
it — and every family the registry collects gives the names of the series it exposes (also for
labelled families without samples yet). Each PromQL expression of the dashboard (panel targets
and annotations) is reduced to the metric names it selects; every one must be exposed, be a
recording rule of ``deploy/prometheus/alerts.yml`` (whose expressions ``test_promtool`` checks
the same way), or be a series Prometheus makes itself (``up``, ``ALERTS``).
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.support.exposition import exposed_names, worker_registry

ROOT = Path(__file__).resolve().parents[2]
GRAFANA = ROOT / "deploy" / "grafana"
DASHBOARD = GRAFANA / "dashboards" / "vigil.json"
DATASOURCES = GRAFANA / "provisioning" / "datasources" / "prometheus.yml"
PROVIDERS = GRAFANA / "provisioning" / "dashboards" / "vigil.yml"
RULES = ROOT / "deploy" / "prometheus" / "alerts.yml"
COMPOSE = ROOT / "docker-compose.yml"

#: Series that Prometheus itself makes, not the worker.
PROMETHEUS_SERIES = {"up", "ALERTS"}
#: Names in a PromQL expression that are not metric names (operators, modifiers, literals).
PROMQL_WORDS = {
    "and",
    "or",
    "unless",
    "bool",
    "atan2",
    "offset",
    "by",
    "without",
    "on",
    "ignoring",
    "group_left",
    "group_right",
    "inf",
    "nan",
}
#: What the dashboard must show (SPEC §7 / issue 6), by a metric each panel group uses.
REQUIRED = {
    "events": "vigil_events_total",
    "findings by category and direction": "vigil_findings_total",
    "leak rate vs baseline": "vigil:assistant_messages_with_leak:ratio_rate1d",
    "faithfulness": "vigil_faithfulness_ratio_bucket",
    "claim statuses": "vigil_claim_status_total",
    "estimated rates with bounds": "vigil_estimated_rate",
    "review queue depth": "vigil_review_queue_depth",
    "dead letters": "vigil_invalid_events_total",
    "judge health": "vigil_judge_calls_total",
    "consumer lag": "faust_topic_partition_offset_commited",
    "spike state": "vigil_spike_active",
}


def metric_names(expr: str) -> set[str]:
    """The metric names a PromQL expression selects (functions, labels, keywords removed)."""
    s = re.sub(r'"(?:[^"\\]|\\.)*"|\'(?:[^\'\\]|\\.)*\'|`[^`]*`', '""', expr)  # string literals
    s = re.sub(r"\{[^{}]*\}", " ", s)  # label matchers
    s = re.sub(r"\[[^\]]*\]", " ", s)  # ranges and subqueries
    s = re.sub(r"\b(?:by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)", " ", s)
    s = re.sub(r"\boffset\s+-?[0-9a-z]+", " ", s)
    s = re.sub(r"\$\{?\w+\}?", " ", s)  # Grafana variables
    names = set()
    for m in re.finditer(r"(?<![\w:.$])([a-zA-Z_:][a-zA-Z0-9_:]*)(\s*\()?", s):
        if m.group(2) is None and m.group(1) not in PROMQL_WORDS:
            names.add(m.group(1))
    return names


@pytest.fixture(scope="module")
def exposed(tmp_path_factory: pytest.TempPathFactory) -> set[str]:
    """Every series name a worker's /metrics can carry: Vigil's, its features', Faust's."""
    names = exposed_names(worker_registry(tmp_path_factory.mktemp("worker")))
    assert any(n.startswith("faust_") for n in names), "Faust's sensor is not registered"
    return names


def recorded() -> set[str]:
    doc = yaml.safe_load(RULES.read_text())
    return {r["record"] for g in doc["groups"] for r in g["rules"] if "record" in r}


def dashboard() -> dict[str, Any]:
    doc: dict[str, Any] = json.loads(DASHBOARD.read_text())
    return doc


def panels() -> list[dict[str, Any]]:
    out = []
    for p in dashboard()["panels"]:
        out.append(p)
        out.extend(p.get("panels", []))  # collapsed rows hold their panels
    return out


def queries() -> list[tuple[str, str]]:
    """(where, expr) of every PromQL expression in the dashboard."""
    found = [
        (f"panel {p['title']!r} {t['refId']}", t["expr"])
        for p in panels()
        for t in p.get("targets", [])
    ]
    for a in dashboard()["annotations"]["list"]:
        if "expr" in a:
            found.append((f"annotation {a['name']!r}", a["expr"]))
    for v in dashboard()["templating"]["list"]:
        query = v.get("query")
        if isinstance(query, dict):
            query = query.get("query")
        if v.get("type") == "query" and isinstance(query, str):
            found.append((f"variable {v['name']!r}", re.sub(r"^\w+\((.*)\)$", r"\1", query)))
    return found


def test_metric_names_are_parsed_out_of_promql() -> None:
    assert metric_names(
        'sum by (category, direction) (rate(vigil_findings_total{direction="leak"}[$__rate_'
        "interval])) / on () group_left () sum(rate(vigil_events_total[5m] offset 1h))"
    ) == {"vigil_findings_total", "vigil_events_total"}
    assert metric_names(
        "histogram_quantile(0.95, sum by (le) (rate(vigil_judge_seconds_bucket[5m]))) > 1e3"
    ) == {"vigil_judge_seconds_bucket"}
    assert metric_names(
        "3 * vigil:assistant_messages_with_leak:ratio_rate1d and ALERTS{a='x{y}'}"
    ) == {"vigil:assistant_messages_with_leak:ratio_rate1d", "ALERTS"}
    assert metric_names("max by (topic) (a_b - c_d) unless bool vector(0)") == {"a_b", "c_d"}


def test_dashboard_is_well_formed() -> None:
    doc = dashboard()
    assert doc["uid"] == "vigil-overview" and doc["title"] == "Vigil"
    ids = [p["id"] for p in panels()]
    assert len(ids) == len(set(ids)), "panel ids must be unique"
    uid = yaml.safe_load(DATASOURCES.read_text())["datasources"][0]["uid"]
    for p in panels():
        pos = p["gridPos"]
        assert pos["x"] >= 0 and pos["x"] + pos["w"] <= 24 and pos["h"] > 0, p["title"]
        if p["type"] == "row":
            continue
        assert p["datasource"] == {"type": "prometheus", "uid": uid}, p["title"]
        refs = [t["refId"] for t in p["targets"]]
        assert refs and len(refs) == len(set(refs)), p["title"]
        for t in p["targets"]:
            assert t["datasource"]["uid"] == uid and t["expr"].strip(), p["title"]
    # Panels do not overlap.
    cells: set[tuple[int, int]] = set()
    for p in panels():
        pos = p["gridPos"]
        mine = {
            (x, y)
            for x in range(pos["x"], pos["x"] + pos["w"])
            for y in range(pos["y"], pos["y"] + pos["h"])
        }
        assert not cells & mine, f"{p['title']!r} overlaps another panel"
        cells |= mine


@pytest.mark.parametrize(("where", "expr"), queries(), ids=[w for w, _ in queries()])
def test_every_query_names_a_metric_the_worker_exposes(
    where: str, expr: str, exposed: set[str]
) -> None:
    names = metric_names(expr)
    assert names, f"{where}: no metric in {expr!r}"
    unknown = names - exposed - recorded() - PROMETHEUS_SERIES
    assert not unknown, f"{where}: {sorted(unknown)} not exposed by the worker: {expr}"


def test_dashboard_shows_every_required_signal() -> None:
    used = set().union(*(metric_names(e) for _, e in queries()))
    missing = {what: name for what, name in REQUIRED.items() if name not in used}
    assert not missing, missing


def test_provisioning_points_at_the_compose_services() -> None:
    services = yaml.safe_load(COMPOSE.read_text())["services"]
    [source] = yaml.safe_load(DATASOURCES.read_text())["datasources"]
    assert source["type"] == "prometheus" and source["access"] == "proxy"
    assert source["url"] == "http://prometheus:9090"
    # Published on loopback by default (docs/security.md); the container port is what counts here.
    assert "9090" in {port.rsplit(":", 1)[-1] for port in services["prometheus"]["ports"]}
    [provider] = yaml.safe_load(PROVIDERS.read_text())["providers"]
    mounts = {}
    for volume in services["grafana"]["volumes"]:
        host_path, target = volume.split(":")[:2]
        mounts[target] = (ROOT / host_path).resolve()
    assert mounts[provider["options"]["path"]] == DASHBOARD.parent.resolve()
    assert mounts["/etc/grafana/provisioning"] == (GRAFANA / "provisioning").resolve()
