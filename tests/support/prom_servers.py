"""The real Prometheus and Alertmanager (Debian's binaries) on loopback ports, for the tests.

:func:`alertmanager` and :func:`prometheus` are context managers that start one server in a
temporary folder (its storage, its generated config, its log), wait until ``/-/ready`` answers,
and stop it (SIGTERM, then SIGKILL). Give Prometheus any scrape targets (``host:port`` of a
``/metrics`` endpoint: a test exposition server, or real workers) and any rule files::

    with alertmanager(tmp / "am") as am, prometheus(
        tmp / "prom", targets=["127.0.0.1:6066"], rule_files=[rules], alertmanager_url=am.url
    ) as prom:
        wait_for(lambda: prom.firing("VigilLeakSpike"), 60, "VigilLeakSpike never fired")

:func:`shorten_rules` writes a copy of ``deploy/prometheus/alerts.yml`` with shorter ranges and
``for:`` windows, so a test can watch the rules fire in seconds; the shipped file itself is tested
at full length by ``promtool test rules`` (``deploy/prometheus/tests``).

Binaries are found with :func:`tests.support.tools.require_tool` (fail under CI, skip elsewhere).
Nothing here sleeps blindly: :func:`wait_for` polls a condition until a deadline and fails with a
message that says what was awaited and what was last seen.
"""

from __future__ import annotations

import contextlib
import json
import re
import socket
import subprocess
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import yaml

from tests.support.tools import require_tool

__all__ = [
    "ALERTMANAGER_CONFIG",
    "RULES",
    "SHORT_FORS",
    "SHORT_RANGES",
    "AlertmanagerServer",
    "PrometheusServer",
    "alertmanager",
    "free_port",
    "get_json",
    "prometheus",
    "shorten_rules",
    "wait_for",
]

REPO_ROOT = Path(__file__).resolve().parents[2]
RULES = REPO_ROOT / "deploy" / "prometheus" / "alerts.yml"
ALERTMANAGER_CONFIG = REPO_ROOT / "deploy" / "alertmanager" / "alertmanager.yml"
READY_TIMEOUT_S = 60.0
#: Shortened ranges and ``for:`` windows of the shipped rules, so tests see them fire in seconds.
#: The "1 d" baseline becomes 10 minutes: longer than any test, so it holds all the test's data.
SHORT_RANGES = {"5m": "5s", "15m": "15s", "1h": "1m", "1d": "10m"}
SHORT_FORS = {"2m": "1s", "5m": "1s", "10m": "1s"}
STOP_GRACE_S = 10.0

T = TypeVar("T")


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def get_json(url: str, timeout: float = 5.0) -> Any:
    with urllib.request.urlopen(url, timeout=timeout) as response:
        return json.loads(response.read())


def wait_for(
    probe: Callable[[], T | None], timeout_s: float, what: str, interval_s: float = 0.2
) -> T:
    """Poll ``probe`` until it returns something truthy; fail after ``timeout_s`` with ``what``.

    Exceptions from the probe (a server not answering yet) count as "not yet"; the last one is
    in the failure message.
    """
    deadline = time.monotonic() + timeout_s
    last: object = None
    while True:
        try:
            result = probe()
            if result:
                return result
            last = result
        except (OSError, ValueError) as exc:
            last = exc
        if time.monotonic() >= deadline:
            raise AssertionError(
                f"timed out after {timeout_s:.0f}s waiting for {what}; last: {last!r}"
            )
        time.sleep(interval_s)


@dataclass
class _Server:
    name: str
    process: subprocess.Popen[bytes]
    url: str
    workdir: Path
    log: Path

    def log_tail(self, lines: int = 40) -> str:
        with contextlib.suppress(OSError):
            return "\n".join(self.log.read_text(errors="replace").splitlines()[-lines:])
        return ""

    def get(self, path: str, **params: str) -> Any:
        query = f"?{urllib.parse.urlencode(params)}" if params else ""
        return get_json(f"{self.url}{path}{query}")

    def _wait_ready(self) -> None:
        def ready() -> bool:
            if self.process.poll() is not None:
                raise AssertionError(
                    f"{self.name} exited with {self.process.returncode}:\n{self.log_tail()}"
                )
            try:
                with urllib.request.urlopen(f"{self.url}/-/ready", timeout=2) as r:
                    return bool(r.status == 200)
            except urllib.error.HTTPError:  # 503 while starting
                return False

        try:
            wait_for(ready, READY_TIMEOUT_S, f"{self.name} /-/ready at {self.url}")
        except AssertionError as exc:
            raise AssertionError(f"{exc}\n--- {self.name} log\n{self.log_tail()}") from None

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(STOP_GRACE_S)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(STOP_GRACE_S)


class AlertmanagerServer(_Server):
    def alerts(self, **filters: str) -> list[dict[str, Any]]:
        """``GET /api/v2/alerts`` (active, suppressed included), filtered by exact label values."""
        matchers = [f'{k}="{v}"' for k, v in filters.items()]
        query = "&".join(f"filter={urllib.parse.quote(m)}" for m in matchers)
        result: list[dict[str, Any]] = get_json(f"{self.url}/api/v2/alerts?{query}")
        return result

    def post_alerts(self, alerts: list[dict[str, Any]]) -> None:
        """``POST /api/v2/alerts`` as Prometheus sends them (labels, annotations, times)."""
        request = urllib.request.Request(
            f"{self.url}/api/v2/alerts",
            data=json.dumps(alerts).encode(),
            headers={"Content-Type": "application/json"},
            method="POST",
        )
        with urllib.request.urlopen(request, timeout=5) as response:
            assert response.status == 200, response.status


class PrometheusServer(_Server):
    def alerts(self, alertname: str, state: str = "firing") -> list[dict[str, Any]]:
        """Alerts of ``alertname`` in ``state`` (pending or firing) from ``/api/v1/alerts``."""
        alerts = self.get("/api/v1/alerts")["data"]["alerts"]
        return [
            a for a in alerts if a["labels"].get("alertname") == alertname and a["state"] == state
        ]

    def query(self, promql: str) -> list[dict[str, Any]]:
        result: list[dict[str, Any]] = self.get("/api/v1/query", query=promql)["data"]["result"]
        return result

    def targets_up(self) -> list[str]:
        targets = self.get("/api/v1/targets")["data"]["activeTargets"]
        return [t["scrapeUrl"] for t in targets if t["health"] == "up"]


def _spawn(name: str, args: list[str], workdir: Path) -> tuple[subprocess.Popen[bytes], Path]:
    log = workdir / f"{name}.log"
    with log.open("wb") as out:
        process = subprocess.Popen(
            args, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, cwd=workdir
        )
    return process, log


@contextlib.contextmanager
def alertmanager(workdir: Path, config: Path = ALERTMANAGER_CONFIG) -> Iterator[AlertmanagerServer]:
    """A real Alertmanager on a free loopback port, clustering off, storage in ``workdir``."""
    binary = require_tool("prometheus-alertmanager")
    workdir.mkdir(parents=True, exist_ok=True)
    port = free_port()
    process, log = _spawn(
        "alertmanager",
        [
            binary,
            f"--config.file={config}",
            f"--storage.path={workdir / 'data'}",
            f"--web.listen-address=127.0.0.1:{port}",
            f"--web.external-url=http://127.0.0.1:{port}/",
            "--cluster.listen-address=",  # no clustering, no gossip port
            "--log.level=debug",
        ],
        workdir,
    )
    server = AlertmanagerServer("alertmanager", process, f"http://127.0.0.1:{port}", workdir, log)
    try:
        server._wait_ready()
        yield server
    finally:
        server.stop()


def prometheus_config(
    targets: Sequence[str],
    rule_files: Sequence[Path],
    alertmanager_url: str | None,
    *,
    interval: str = "1s",
    job: str = "vigil",
) -> dict[str, Any]:
    config: dict[str, Any] = {
        "global": {"scrape_interval": interval, "evaluation_interval": interval},
        "rule_files": [str(p) for p in rule_files],
        "scrape_configs": [
            {
                "job_name": job,
                "metrics_path": "/metrics",
                "static_configs": [{"targets": list(targets)}],
            }
        ],
    }
    if alertmanager_url is not None:
        host = urllib.parse.urlsplit(alertmanager_url).netloc
        config["alerting"] = {"alertmanagers": [{"static_configs": [{"targets": [host]}]}]}
    return config


@contextlib.contextmanager
def prometheus(
    workdir: Path,
    targets: Sequence[str],
    rule_files: Sequence[Path] = (RULES,),
    alertmanager_url: str | None = None,
    *,
    interval: str = "1s",
    job: str = "vigil",
) -> Iterator[PrometheusServer]:
    """A real Prometheus scraping ``targets`` every ``interval``, evaluating ``rule_files`` as
    often, and sending alerts to ``alertmanager_url`` (if given). Storage and config in
    ``workdir``; the config is checked by ``promtool check config`` first."""
    binary = require_tool("prometheus")
    promtool = require_tool("promtool")
    workdir.mkdir(parents=True, exist_ok=True)
    config_path = workdir / "prometheus.yml"
    config = prometheus_config(targets, rule_files, alertmanager_url, interval=interval, job=job)
    config_path.write_text(yaml.safe_dump(config, sort_keys=False))
    check = subprocess.run(
        [promtool, "check", "config", str(config_path)], capture_output=True, text=True, timeout=60
    )
    if check.returncode != 0:
        raise AssertionError(
            f"generated Prometheus config is invalid:\n{check.stdout}{check.stderr}"
        )
    port = free_port()
    process, log = _spawn(
        "prometheus",
        [
            binary,
            f"--config.file={config_path}",
            f"--storage.tsdb.path={workdir / 'data'}",
            f"--web.listen-address=127.0.0.1:{port}",
            f"--web.external-url=http://127.0.0.1:{port}/",  # for the alerts' generatorURL
            # Re-send firing alerts every second (default 1m) so Alertmanager sees them at once.
            "--rules.alert.resend-delay=1s",
            "--log.level=debug",
        ],
        workdir,
    )
    server = PrometheusServer("prometheus", process, f"http://127.0.0.1:{port}", workdir, log)
    try:
        server._wait_ready()
        yield server
    finally:
        server.stop()


_RANGE = re.compile(r"\[(\d+[smhdwy])\]")


def shorten_rules(
    dest: Path,
    ranges: Mapping[str, str],
    fors: Mapping[str, str],
    src: Path = RULES,
) -> Path:
    """Write ``src`` to ``dest`` with every range ``[d]`` mapped by ``ranges`` and every ``for:``
    by ``fors``. Expressions, labels and annotations are otherwise the shipped ones. A duration
    missing from a mapping is an error, so a new rule cannot slip through at full length."""
    doc = yaml.safe_load(src.read_text())

    def short_range(match: re.Match[str]) -> str:
        if match.group(1) not in ranges:
            raise KeyError(f"no short form for range [{match.group(1)}] in {src}")
        return f"[{ranges[match.group(1)]}]"

    for group in doc["groups"]:
        for rule in group["rules"]:
            rule["expr"] = _RANGE.sub(short_range, rule["expr"])
            if "for" in rule:
                if rule["for"] not in fors:
                    raise KeyError(f"no short form for `for: {rule['for']}` in {src}")
                rule["for"] = fors[rule["for"]]
    dest.parent.mkdir(parents=True, exist_ok=True)
    dest.write_text(yaml.safe_dump(doc, sort_keys=False))
    return dest
