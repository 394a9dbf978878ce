"""Deployment files: the docker-compose.yml stack, checked without Docker.

The file is read as data and checked like ``docker compose config`` would, plus what this stack
needs: the services (Kafka in KRaft mode, topic creation, two workers, Prometheus, Alertmanager,
Grafana), pinned images, every bind-mounted host path and build context present, host ports
unique, ``depends_on`` naming real services with valid conditions (a health condition needs a
healthcheck, no cycles), the workers' settings consistent with the other services, and the
Prometheus and Alertmanager configs checked by the real ``promtool`` / ``amtool`` *as mounted*
(the host folder behind the container path the server is started with).
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path, PurePosixPath
from typing import Any

import pytest
import yaml

from tests.support.tools import require_tool

ROOT = Path(__file__).resolve().parents[2]
COMPOSE = ROOT / "docker-compose.yml"
SERVICES = {
    "kafka",
    "vigil-init",
    "vigil-worker-1",
    "vigil-worker-2",
    "prometheus",
    "alertmanager",
    "grafana",
}
WORKERS = ("vigil-worker-1", "vigil-worker-2")
#: Keys of a compose service this file may use (a typo such as ``enviroment`` fails here).
SERVICE_KEYS = {
    "image",
    "build",
    "command",
    "entrypoint",
    "environment",
    "volumes",
    "ports",
    "depends_on",
    "healthcheck",
    "restart",
}
CONDITIONS = {"service_started", "service_healthy", "service_completed_successfully"}


def compose() -> dict[str, Any]:
    doc: dict[str, Any] = yaml.safe_load(COMPOSE.read_text())
    return doc


def services() -> dict[str, dict[str, Any]]:
    svc: dict[str, dict[str, Any]] = compose()["services"]
    return svc


def depends_on(svc: dict[str, Any]) -> dict[str, str]:
    deps = svc.get("depends_on", {})
    if isinstance(deps, list):
        return dict.fromkeys(deps, "service_started")
    return {name: spec.get("condition", "service_started") for name, spec in deps.items()}


def mounts(svc: dict[str, Any]) -> list[tuple[str, str, str]]:
    """(source, container target, mode) of each short-syntax volume."""
    out = []
    for volume in svc.get("volumes", []):
        assert isinstance(volume, str), f"use the short volume syntax: {volume!r}"
        source, target, *mode = volume.split(":")
        out.append((source, target, mode[0] if mode else "rw"))
    return out


def host_path_of(svc: dict[str, Any], container_path: str) -> Path:
    """The host file behind ``container_path`` through the service's bind mounts."""
    path = PurePosixPath(container_path)
    for source, target, _ in mounts(svc):
        if source.startswith((".", "/")) and path.is_relative_to(target):
            return (ROOT / source / path.relative_to(target)).resolve()
    raise AssertionError(f"{container_path} is not bind-mounted")


def flag(svc: dict[str, Any], name: str) -> str:
    [value] = [a.split("=", 1)[1] for a in svc["command"] if a.startswith(f"--{name}=")]
    return value


def test_compose_services_images_and_keys() -> None:
    doc = compose()
    assert set(doc) <= {"name", "services", "volumes", "networks"} | {
        k for k in doc if k.startswith("x-")
    }
    svcs = services()
    assert set(svcs) == SERVICES
    for name, svc in svcs.items():
        assert set(svc) <= SERVICE_KEYS, (name, set(svc) - SERVICE_KEYS)
        assert "image" in svc or "build" in svc, name
        if "build" in svc:
            context = ROOT / svc["build"]
            assert (context / "Dockerfile").is_file(), name
        else:  # pulled images are pinned
            image = svc["image"]
            assert re.fullmatch(r"[\w./-]+:[\w.-]+", image) and not image.endswith(":latest")
        for key in ("restart",):
            if key in svc:
                assert svc[key] in {"no", "always", "on-failure", "unless-stopped"}, name
    assert svcs["kafka"]["image"].startswith("apache/kafka:")
    assert svcs["prometheus"]["image"].startswith("prom/prometheus:")
    assert svcs["alertmanager"]["image"].startswith("prom/alertmanager:")
    assert svcs["grafana"]["image"].startswith("grafana/grafana:")


def test_dockerfile_copies_what_exists() -> None:
    dockerfile = (ROOT / "Dockerfile").read_text()
    for line in dockerfile.splitlines():
        if line.startswith("COPY "):
            *sources, _ = line.split()[1:]
            for source in sources:
                assert (ROOT / source).exists(), f"Dockerfile copies missing {source}"
    assert re.search(r"^ENTRYPOINT \[\"vigil\"\]", dockerfile, re.M)


def test_every_referenced_host_path_exists_and_named_volumes_are_declared() -> None:
    declared = set(compose().get("volumes") or {})
    used: set[str] = set()
    for name, svc in services().items():
        for source, target, mode in mounts(svc):
            assert target.startswith("/"), (name, target)
            assert mode in {"ro", "rw"}, (name, mode)
            if source.startswith((".", "/")):
                assert (ROOT / source).exists(), f"{name}: {source} does not exist"
            else:
                assert source in declared, f"{name}: volume {source} is not declared"
                used.add(source)
    assert used == declared, declared - used


def test_ports_are_published_on_loopback_only_unique_and_workers_publish_their_web_port() -> None:
    seen: dict[str, str] = {}
    for name, svc in services().items():
        for port in svc.get("ports", []):
            assert isinstance(port, str), f"{name}: quote ports ({port!r})"
            # Secure default: nothing is reachable from other hosts (plain HTTP, tokens).
            address, host, container = port.split(":")
            assert address == "127.0.0.1", f"{name} publishes {port} beyond this host"
            assert host.isdigit() and container.isdigit(), (name, port)
            assert host not in seen, f"host port {host} of {name} is taken by {seen[host]}"
            seen[host] = name
    web_ports = set()
    for name in WORKERS:
        svc = services()[name]
        port = svc["environment"]["VIGIL_WEB_PORT"]
        assert svc["ports"] == [f"127.0.0.1:{port}:{port}"], name
        web_ports.add(port)
    assert len(web_ports) == len(WORKERS), "the workers need distinct web ports"
    assert "ports" not in services()["kafka"], "the broker has no authentication: keep it inside"


# ----------------------------------------------------------- variables, as `docker compose config`

_VARIABLE = re.compile(r"\$\{(?P<name>\w+)(?:(?P<op>:\?|:-)(?P<arg>[^}]*))?\}")


class MissingVariable(LookupError):
    pass


def interpolate(value: Any, env: dict[str, str]) -> Any:
    """``docker compose config``'s interpolation of ``${VAR}``, ``${VAR:-default}`` and
    ``${VAR:?message}`` (unset or empty → the default / an error with the message); a key with a
    null value passes the variable through from the environment, or is left out."""
    if isinstance(value, dict):
        out = {}
        for k, v in value.items():
            if v is None and k in env:
                out[k] = env[k]
            elif v is not None:
                out[k] = interpolate(v, env)
        return out
    if isinstance(value, list):
        return [interpolate(v, env) for v in value]
    if not isinstance(value, str):
        return value

    def one(m: re.Match[str]) -> str:
        found = env.get(m["name"], "")
        if found:
            return found
        if m["op"] == ":?":
            raise MissingVariable(f"required variable {m['name']} is missing a value: {m['arg']}")
        return m["arg"] or ""

    return _VARIABLE.sub(one, value)


SECRETS = ("VIGIL_MEMORY_KEY", "VIGIL_SAMPLE_KEY", "VIGIL_EVALSET_KEY")


def test_compose_refuses_to_start_without_its_secrets() -> None:
    env = {name: "x" * 64 for name in SECRETS}
    interpolate(compose(), env)  # resolves with every secret set
    for name in SECRETS:
        with pytest.raises(MissingVariable, match=rf"{name} .*openssl rand"):
            interpolate(compose(), {k: v for k, v in env.items() if k != name})
    for name in (*WORKERS, "vigil-init"):
        raw = services()[name]["environment"]
        for secret in SECRETS:
            # No default in the file: a default is a key every reader of the file knows.
            assert re.fullmatch(rf"\$\{{{secret}:\?[^}}]+\}}", raw[secret]), (name, raw[secret])


def test_compose_passes_review_tokens_through_and_the_worker_refuses_dev_keys() -> None:
    from services.settings import KNOWN_DEV_KEYS, Settings, dev_keys_in_use

    env = {name: "y" * 64 for name in SECRETS}
    resolved = interpolate(compose(), env)
    for name in WORKERS:
        worker_env = resolved["services"][name]["environment"]
        assert "VIGIL_REVIEW_TOKENS" not in worker_env  # unset: the worker logs why 401
        assert "VIGIL_ALLOW_DEV_KEYS" not in worker_env
        assert not set(worker_env.values()) & KNOWN_DEV_KEYS
    tokens = '{"' + "t" * 32 + '": {"name": "ann"}}'
    resolved = interpolate(compose(), {**env, "VIGIL_REVIEW_TOKENS": tokens})
    for name in WORKERS:
        assert resolved["services"][name]["environment"]["VIGIL_REVIEW_TOKENS"] == tokens
    # The old compose default is refused like the built-in development key.
    old = Settings(memory_key="change-me-in-production", sample_key="z" * 40)
    assert "VIGIL_MEMORY_KEY" in dev_keys_in_use(old)


def test_kafka_keeps_its_data_in_a_volume() -> None:
    kafka = services()["kafka"]
    log_dir = kafka["environment"]["KAFKA_LOG_DIRS"]
    assert [(s, t) for s, t, _ in mounts(kafka)] == [("kafka-data", log_dir)]
    assert "kafka-data" in compose()["volumes"]
    # A formatted log directory names its cluster: the id must not change between starts.
    assert re.fullmatch(r"[A-Za-z0-9_-]{22}", kafka["environment"]["CLUSTER_ID"])


def test_depends_on_is_valid_and_acyclic() -> None:
    svcs = services()
    for name, svc in svcs.items():
        for dep, condition in depends_on(svc).items():
            assert dep in svcs and dep != name, (name, dep)
            assert condition in CONDITIONS, (name, dep, condition)
            if condition == "service_healthy":
                assert "healthcheck" in svcs[dep], f"{name} waits for {dep}'s health: none"
            if condition == "service_completed_successfully":
                assert svcs[dep].get("restart") == "no", f"{dep} must run once"

    def visit(name: str, path: tuple[str, ...]) -> None:
        assert name not in path, f"depends_on cycle: {' -> '.join((*path, name))}"
        for dep in depends_on(svcs[name]):
            visit(dep, (*path, name))

    for name in svcs:
        visit(name, ())


def test_kafka_runs_kraft_and_the_vigil_services_use_it() -> None:
    svcs = services()
    kafka = svcs["kafka"]["environment"]
    assert "controller" in kafka["KAFKA_PROCESS_ROLES"] and "broker" in kafka["KAFKA_PROCESS_ROLES"]
    assert not any("ZOOKEEPER" in k for k in kafka)
    assert kafka["KAFKA_ADVERTISED_LISTENERS"] == "PLAINTEXT://kafka:9092"
    init = svcs["vigil-init"]
    assert init["command"] == ["topics", "create"]
    assert depends_on(init) == {"kafka": "service_healthy"}
    for name in ("vigil-init", *WORKERS):
        env = svcs[name]["environment"]
        assert env["VIGIL_KAFKA_BOOTSTRAP"] == "kafka:9092", name
        assert (
            env["VIGIL_TOPIC_PARTITIONS"]
            == svcs["vigil-init"]["environment"]["VIGIL_TOPIC_PARTITIONS"]
        )
    for name in WORKERS:
        svc = svcs[name]
        assert svc["command"] == ["worker"]
        assert depends_on(svc)["vigil-init"] == "service_completed_successfully"
        assert svc["environment"]["VIGIL_ALERTS_ALERTMANAGER_URL"] == "http://alertmanager:9093"


def test_prometheus_scrapes_the_workers_and_alerts_alertmanager() -> None:
    svcs = services()
    prom = svcs["prometheus"]
    config_path = host_path_of(prom, flag(prom, "config.file"))
    # The whole folder is mounted, so alerts.yml (relative to prometheus.yml) comes along.
    assert config_path.parent == (ROOT / "deploy" / "prometheus").resolve()
    config = yaml.safe_load(config_path.read_text())
    [job] = config["scrape_configs"]
    [static] = job["static_configs"]
    want = {f"{w}:{svcs[w]['environment']['VIGIL_WEB_PORT']}" for w in WORKERS}
    assert set(static["targets"]) == want
    [am] = config["alerting"]["alertmanagers"]
    assert am["static_configs"][0]["targets"] == ["alertmanager:9093"]
    assert "alertmanager" in depends_on(prom)


def test_promtool_check_config_as_mounted() -> None:
    promtool = require_tool("promtool")
    prom = services()["prometheus"]
    config_path = host_path_of(prom, flag(prom, "config.file"))
    res = subprocess.run(
        [promtool, "check", "config", str(config_path)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert res.returncode == 0, res.stdout + res.stderr
    assert "SUCCESS: 1 rule files found" in res.stdout
    rules = yaml.safe_load((config_path.parent / "alerts.yml").read_text())["groups"][0]["rules"]
    assert f"SUCCESS: {len(rules)} rules found" in res.stdout


def test_amtool_check_config_as_mounted() -> None:
    amtool = require_tool("amtool")
    am = services()["alertmanager"]
    config_path = host_path_of(am, flag(am, "config.file"))
    res = subprocess.run(
        [amtool, "check-config", str(config_path)], capture_output=True, text=True, timeout=60
    )
    assert res.returncode == 0, res.stdout + res.stderr


@pytest.mark.parametrize(
    ("container", "host"),
    [
        ("/etc/grafana/provisioning/datasources/prometheus.yml", "datasources/prometheus.yml"),
        ("/etc/grafana/provisioning/dashboards/vigil.yml", "dashboards/vigil.yml"),
    ],
)
def test_grafana_provisioning_is_mounted(container: str, host: str) -> None:
    grafana = services()["grafana"]
    path = host_path_of(grafana, container)
    assert path == (ROOT / "deploy" / "grafana" / "provisioning" / host).resolve()
    assert path.is_file()
    dashboards = host_path_of(grafana, "/var/lib/grafana/dashboards/vigil.json")
    assert dashboards.is_file()
    home = grafana["environment"]["GF_DASHBOARDS_DEFAULT_HOME_DASHBOARD_PATH"]
    assert host_path_of(grafana, home) == dashboards
