"""The Prometheus rules and configs, checked and unit-tested by the real promtool and amtool.

``deploy/prometheus/tests/*.yml`` test every alert of ``deploy/prometheus/alerts.yml`` on both
sides of its thresholds and of its ``for:`` window, with exact labels and annotations. This module
runs them, and checks that the rules name only metrics the worker exposes.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest
import yaml
from prometheus_client import CollectorRegistry, generate_latest

from tests.support.exposition import exposed_names, worker_registry
from tests.support.tools import require_tool

ROOT = Path(__file__).resolve().parents[2]
PROM = ROOT / "deploy" / "prometheus"
RULES = PROM / "alerts.yml"
RULE_TESTS = sorted((PROM / "tests").glob("*.yml"))
ALERTMANAGER = ROOT / "deploy" / "alertmanager" / "alertmanager.yml"
ALERTS = {
    "VigilLeakSpike",
    "VigilCriticalUngroundedDose",
    "VigilCriticalUngroundedContraindication",
    "VigilDeadLetterRate",
    "VigilJudgeFailing",
    "VigilConsumerLag",
    "VigilNoEvents",
    "VigilWorkersDown",
    "VigilAgentLag",
    "VigilAlertingErrors",
    "VigilAlertPushFailing",
    "VigilReviewOverflow",
    "VigilReviewItemsExpired",
    "VigilReviewErrors",
}
#: Series Prometheus makes itself (not the worker's).
PROMETHEUS_SERIES = {"up"}
#: Faust's own histogram is named in milliseconds; promtool's lint objects, and it is not ours.
KNOWN_FAUST_LINT = {
    "faust_events_runtime_ms metric names should not contain abbreviated units",
    "faust_events_runtime_ms_created metric names should not contain abbreviated units",
}


def run(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        args, capture_output=True, text=True, input=stdin, timeout=120, check=False
    )


def rules() -> list[dict[str, object]]:
    doc = yaml.safe_load(RULES.read_text())
    [group] = doc["groups"]
    assert group["name"] == "vigil"
    return list(group["rules"])


@pytest.fixture(scope="module")
def worker(tmp_path_factory: pytest.TempPathFactory) -> CollectorRegistry:
    """What a worker's /metrics serves: Vigil's, its features', Faust's (prefix "faust")."""
    return worker_registry(tmp_path_factory.mktemp("worker"))


def test_promtool_check_rules() -> None:
    promtool = require_tool("promtool")
    res = run(promtool, "check", "rules", str(RULES))
    assert res.returncode == 0, res.stdout + res.stderr
    assert f"SUCCESS: {len(rules())} rules found" in res.stdout


def test_promtool_test_rules() -> None:
    promtool = require_tool("promtool")
    assert len(RULE_TESTS) >= 10
    res = run(promtool, "test", "rules", *map(str, RULE_TESTS))
    assert res.returncode == 0, res.stdout + res.stderr
    assert res.stdout.count("SUCCESS") == len(RULE_TESTS), res.stdout


def test_promtool_check_config_finds_the_rules() -> None:
    promtool = require_tool("promtool")
    res = run(promtool, "check", "config", str(PROM / "prometheus.yml"))
    assert res.returncode == 0, res.stdout + res.stderr
    assert "SUCCESS: 1 rule files found" in res.stdout


def test_amtool_check_config() -> None:
    amtool = require_tool("amtool")
    res = run(amtool, "check-config", str(ALERTMANAGER))
    assert res.returncode == 0, res.stdout + res.stderr


def test_promtool_check_metrics_on_the_worker_exposition(worker: CollectorRegistry) -> None:
    promtool = require_tool("promtool")
    res = run(promtool, "check", "metrics", stdin=generate_latest(worker).decode())
    problems = {line.strip() for line in (res.stdout + res.stderr).splitlines() if line.strip()}
    assert problems <= KNOWN_FAUST_LINT, problems - KNOWN_FAUST_LINT


def test_every_alert_exists_and_has_a_firing_and_a_quiet_test() -> None:
    assert {r["alert"] for r in rules() if "alert" in r} == ALERTS
    firing: set[str] = set()
    quiet: set[str] = set()
    for path in RULE_TESTS:
        for case in yaml.safe_load(path.read_text())["tests"]:
            for check in case.get("alert_rule_test", []):
                (firing if check["exp_alerts"] else quiet).add(check["alertname"])
    assert firing == ALERTS, ALERTS - firing
    assert quiet == ALERTS, ALERTS - quiet


def test_rules_name_only_metrics_the_worker_exposes(worker: CollectorRegistry) -> None:
    exposed = exposed_names(worker) | PROMETHEUS_SERIES
    recorded = {r["record"] for r in rules() if "record" in r}
    for rule in rules():
        expr = str(rule["expr"])
        names = set(re.findall(r"\b((?:vigil|faust)_[a-z_]+|up(?=\{))\b", expr))
        assert names, rule
        assert names <= exposed, (rule.get("alert") or rule.get("record"), names - exposed)
        used = set(re.findall(r"\bvigil:[a-z_:0-9]+", expr))
        assert used <= recorded, used - recorded


@pytest.mark.parametrize("rule", [r for r in rules() if "alert" in r], ids=lambda r: r["alert"])
def test_alerts_carry_severity_and_annotations(rule: dict[str, object]) -> None:
    labels = rule["labels"]
    annotations = rule["annotations"]
    assert isinstance(labels, dict) and labels["severity"] in {"critical", "warning"}
    assert isinstance(annotations, dict) and {"summary", "description"} <= set(annotations)
