"""Deployment files: docker-compose.yml references, Prometheus config checked by promtool."""

from __future__ import annotations

import subprocess
from pathlib import Path

import yaml

from tests.support.tools import require_tool

ROOT = Path(__file__).resolve().parents[2]


def test_compose_services_and_paths() -> None:
    compose = yaml.safe_load((ROOT / "docker-compose.yml").read_text())
    services = compose["services"]
    assert {"kafka", "vigil-init", "vigil-worker", "prometheus"} <= set(services)
    for name, svc in services.items():
        for volume in svc.get("volumes", []):
            host = volume.split(":", 1)[0]
            if host.startswith("."):
                assert (ROOT / host).exists(), f"{name}: {host} does not exist"
        if "build" in svc:
            assert (ROOT / svc["build"] / "Dockerfile").exists()
    env = services["vigil-worker"]["environment"]
    assert env["VIGIL_KAFKA_BOOTSTRAP"] == "kafka:9092"
    assert services["kafka"]["image"].startswith("apache/kafka:")


def test_prometheus_config_is_valid() -> None:
    promtool = require_tool("promtool")
    res = subprocess.run(
        [promtool, "check", "config", str(ROOT / "deploy/prometheus/prometheus.yml")],
        capture_output=True,
        text=True,
    )
    assert res.returncode == 0, res.stdout + res.stderr
