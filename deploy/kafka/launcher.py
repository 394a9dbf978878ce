#!/usr/bin/env python3
"""Local single-node Kafka (KRaft) for Vigil development and integration tests.

Usage::

    python deploy/kafka/launcher.py start  [--state-dir DIR] [--port N] [--mode auto|docker|maven]
    python deploy/kafka/launcher.py stop   [--state-dir DIR]
    python deploy/kafka/launcher.py status [--state-dir DIR]

``start`` picks the first that applies:

1. ``VIGIL_KAFKA_BOOTSTRAP`` is set: wait until that broker answers and print it (nothing is
   started, so ``stop`` has nothing to stop).
2. A Docker engine answers: run the ``apache/kafka`` image (KRaft, combined broker+controller).
3. Otherwise: copy the broker's jars from Maven Central (``deploy/kafka/pom.xml``) into
   ``${XDG_CACHE_HOME:-~/.cache}/vigil/kafka/<version>/libs`` once, then run ``kafka.Kafka`` with
   the local ``java``.

On success it writes ``<state-dir>/bootstrap`` and prints ``VIGIL_KAFKA_BOOTSTRAP=127.0.0.1:PORT``.

Python API (import this file by path): ``start(state_dir, port=None) -> str``, ``stop(state_dir)``,
``status(state_dir) -> dict | None``, ``wait_ready(bootstrap, timeout)``.

Only the standard library and kafka-python (for the readiness probe) are used.
"""

from __future__ import annotations

import argparse
import base64
import contextlib
import fcntl
import hashlib
import json
import logging
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
import uuid
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
REPO_ROOT = HERE.parent.parent
POM = HERE / "pom.xml"
DEFAULT_STATE_DIR = REPO_ROOT / ".kafka-local"
ENV_BOOTSTRAP = "VIGIL_KAFKA_BOOTSTRAP"
ENV_MODE = "VIGIL_KAFKA_MODE"  # auto (default) | docker | maven

HOST = "127.0.0.1"
HEAP = "512m"
READY_TIMEOUT_S = 90.0
STOP_TIMEOUT_S = 30.0
DOCKER_PROBE_TIMEOUT_S = 5.0
DEPENDENCY_PLUGIN = "org.apache.maven.plugins:maven-dependency-plugin:3.8.1"
MIN_JAVA = 17

STATE_FILE = "state.json"
BOOTSTRAP_FILE = "bootstrap"
PORTS_FILE = "ports.json"  # kept across stop/start so the bootstrap address stays the same

log = logging.getLogger("vigil.kafka.launcher")


class LauncherError(RuntimeError):
    """A failure with a message meant for a person."""


# --------------------------------------------------------------------------- versions / config


def _pom_properties() -> dict[str, str]:
    ns = {"m": "http://maven.apache.org/POM/4.0.0"}
    root = ET.parse(POM).getroot()
    props = root.find("m:properties", ns)
    out: dict[str, str] = {}
    if props is not None:
        for child in props:
            out[child.tag.split("}", 1)[-1]] = (child.text or "").strip()
    return out


def kafka_version() -> str:
    """The Kafka version pinned in deploy/kafka/pom.xml (single source of truth)."""
    return _pom_properties()["kafka.version"]


def docker_image() -> str:
    return f"apache/kafka:{kafka_version()}"


def broker_settings(*, log_dir: str | None = None, controller_port: int = 9093) -> dict[str, str]:
    """Broker/controller settings shared by the Maven and Docker paths (listeners excluded)."""
    settings = {
        "process.roles": "broker,controller",
        "node.id": "1",
        "controller.quorum.voters": f"1@{HOST}:{controller_port}",
        "controller.listener.names": "CONTROLLER",
        "inter.broker.listener.name": "PLAINTEXT",
        # Replication factor 1 everywhere: a single node cannot do more.
        "default.replication.factor": "1",
        "min.insync.replicas": "1",
        "offsets.topic.replication.factor": "1",
        "offsets.topic.num.partitions": "10",
        "transaction.state.log.replication.factor": "1",
        "transaction.state.log.min.isr": "1",
        "transaction.state.log.num.partitions": "10",
        "share.coordinator.state.topic.replication.factor": "1",
        "share.coordinator.state.topic.min.isr": "1",
        "share.coordinator.state.topic.num.partitions": "10",
        # Fast consumer groups for tests.
        "group.initial.rebalance.delay.ms": "0",
        "group.min.session.timeout.ms": "1000",
        "auto.create.topics.enable": "true",
        "num.partitions": "1",
        # Small footprint (2-core machines, 512 MiB heap).
        "num.network.threads": "2",
        "num.io.threads": "2",
        "num.recovery.threads.per.data.dir": "1",
        "num.replica.fetchers": "1",
        "background.threads": "4",
        "log.cleaner.threads": "1",
        # Default is 128 MiB, too much for a 512 MiB heap.
        "log.cleaner.dedupe.buffer.size": str(32 * 1024 * 1024),
        "socket.send.buffer.bytes": "102400",
        "socket.receive.buffer.bytes": "102400",
        "socket.request.max.bytes": "104857600",
        "log.retention.hours": "168",
    }
    if log_dir is not None:
        settings["log.dirs"] = log_dir
    return settings


def server_properties(state_dir: Path, port: int, controller_port: int) -> str:
    data_dir = (state_dir / "data").resolve()
    settings = {
        "listeners": f"PLAINTEXT://{HOST}:{port},CONTROLLER://{HOST}:{controller_port}",
        "advertised.listeners": f"PLAINTEXT://{HOST}:{port}",
        "listener.security.protocol.map": "CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT",
        **broker_settings(log_dir=str(data_dir), controller_port=controller_port),
    }
    lines = ["# Written by deploy/kafka/launcher.py; rewritten on every start."]
    lines += [f"{k}={v}" for k, v in settings.items()]
    return "\n".join(lines) + "\n"


LOG4J2_PROPERTIES = """\
# Written by deploy/kafka/launcher.py. Everything goes to ${sys:kafka.logs.dir}/server.log.
status = warn
name = vigil-kafka
appender.file.type = File
appender.file.name = FILE
appender.file.fileName = ${sys:kafka.logs.dir}/server.log
appender.file.append = true
appender.file.layout.type = PatternLayout
appender.file.layout.pattern = [%d] %p %m (%c)%n
rootLogger.level = INFO
rootLogger.appenderRef.file.ref = FILE
logger.kafka.name = kafka
logger.kafka.level = INFO
logger.apache.name = org.apache.kafka
logger.apache.level = INFO
logger.request.name = kafka.request.logger
logger.request.level = WARN
"""


def jvm_flags(logs_dir: Path, log4j_file: Path) -> list[str]:
    return [
        f"-Xms{HEAP}",
        f"-Xmx{HEAP}",
        "-XX:+UseG1GC",
        "-XX:MaxGCPauseMillis=20",
        "-XX:InitiatingHeapOccupancyPercent=35",
        "-XX:+ExplicitGCInvokesConcurrent",
        "-XX:MaxInlineLevel=15",
        "-Djava.awt.headless=true",
        f"-Dkafka.logs.dir={logs_dir}",
        f"-Dlog4j2.configurationFile={log4j_file}",
    ]


# --------------------------------------------------------------------------- small helpers


def _eprint(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def _cache_root() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "vigil" / "kafka" / kafka_version()


def _read_state(state_dir: Path) -> dict[str, Any] | None:
    try:
        return json.loads((state_dir / STATE_FILE).read_text())
    except (FileNotFoundError, json.JSONDecodeError):
        return None


def _write_state(state_dir: Path, state: dict[str, Any]) -> None:
    tmp = state_dir / (STATE_FILE + ".tmp")
    tmp.write_text(json.dumps(state, indent=2) + "\n")
    tmp.replace(state_dir / STATE_FILE)


def _clear_state(state_dir: Path) -> None:
    for name in (STATE_FILE, BOOTSTRAP_FILE):
        with contextlib.suppress(FileNotFoundError):
            (state_dir / name).unlink()


def _port_free(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        try:
            s.bind((HOST, port))
        except OSError:
            return False
    return True


def _free_port(exclude: frozenset[int] | set[int] = frozenset()) -> int:
    for _ in range(50):
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
            s.bind((HOST, 0))
            port = s.getsockname()[1]
        if port not in exclude:
            return port
    raise LauncherError("could not find a free loopback port")


def _tail(path: Path, lines: int = 40, width: int = 300) -> str:
    try:
        text = path.read_text(errors="replace")
    except FileNotFoundError:
        return f"(no {path})"
    tail = text.splitlines()[-lines:]
    return "\n".join(line if len(line) <= width else line[:width] + " ..." for line in tail)


def _cluster_id() -> str:
    # Kafka's Uuid: base64url of 16 random bytes, unpadded; never starting with "-" (CLI parsing).
    while True:
        cid = base64.urlsafe_b64encode(uuid.uuid4().bytes).rstrip(b"=").decode()
        if not cid.startswith("-"):
            return cid


# Popen objects of brokers started by this process, so stop() can reap them (no zombies).
_CHILDREN: dict[int, subprocess.Popen[bytes]] = {}


def _pid_alive(pid: int) -> bool:
    child = _CHILDREN.get(pid)
    if child is not None:
        if child.poll() is None:
            return True
        _CHILDREN.pop(pid, None)
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:  # A zombie still answers kill(0); treat it as dead.
        stat = Path(f"/proc/{pid}/stat").read_text()
        return stat.rsplit(")", 1)[1].split()[0] != "Z"
    except (FileNotFoundError, IndexError):
        return True


def _is_our_broker(pid: int, state_dir: Path) -> bool:
    """True if pid is the kafka.Kafka JVM that start() launched for this state dir."""
    try:
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    except FileNotFoundError:
        return _pid_alive(pid)  # no /proc: trust the pid file
    props = str((state_dir / "server.properties").resolve()).encode()
    return b"kafka.Kafka" in cmdline and props in cmdline


# --------------------------------------------------------------------------- readiness


def _admin_client_class() -> Any:
    try:
        from kafka import KafkaAdminClient
    except ImportError as exc:  # pragma: no cover - environment problem
        raise LauncherError(
            "kafka-python is not installed (pip install kafka-python); it is needed to check "
            "that the broker is ready"
        ) from exc
    return KafkaAdminClient


def probe(bootstrap: str, timeout_s: float = 3.0) -> bool:
    """One readiness probe: True if the broker answers a metadata request."""
    admin_class = _admin_client_class()
    ms = int(timeout_s * 1000)
    config: dict[str, Any] = {"request_timeout_ms": ms, "client_id": "vigil-kafka-launcher"}
    # kafka-python 3.x has bootstrap_timeout_ms; 2.x rejects unknown keys and has this instead.
    for key in ("bootstrap_timeout_ms", "api_version_auto_timeout_ms"):
        if key in getattr(admin_class, "DEFAULT_CONFIG", {}):
            config[key] = ms
            break
    admin = None
    try:
        admin = admin_class(bootstrap_servers=bootstrap, **config)
        admin.list_topics()
        return True
    except Exception:
        return False
    finally:
        if admin is not None:
            with contextlib.suppress(Exception):
                admin.close()


def nothing_listens(bootstrap: str, timeout_s: float = 2.0) -> str | None:
    """Why no address of ``bootstrap`` accepts a TCP connection, or ``None`` when one does.

    A broker that is still starting accepts connections (or is about to: then ``wait_ready``
    waits for it); an address where the connection is refused, or whose name does not resolve,
    has no broker to wait for.
    """
    reasons = []
    for address in (a.strip() for a in bootstrap.split(",") if a.strip()):
        host, _, port = address.rpartition(":")
        try:
            with socket.create_connection((host.strip("[]") or HOST, int(port)), timeout_s):
                return None
        except TimeoutError:
            return None  # a filtered port or a slow host: not provably gone, let the probe wait
        except (OSError, ValueError) as exc:
            reasons.append(f"{address}: {getattr(exc, 'strerror', None) or exc}")
    return "; ".join(reasons) or "no address"


def wait_ready(
    bootstrap: str,
    timeout_s: float = READY_TIMEOUT_S,
    alive: Any = None,
) -> bool:
    """Poll until the broker answers; False after timeout_s or as soon as alive() is False."""
    kafka_logger = logging.getLogger("kafka")
    old_level = kafka_logger.level
    kafka_logger.setLevel(logging.CRITICAL)  # connection-refused noise while the JVM boots
    try:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if alive is not None and not alive():
                return False
            if probe(bootstrap, timeout_s=min(3.0, max(0.5, deadline - time.monotonic()))):
                return True
            time.sleep(0.5)
        return False
    finally:
        kafka_logger.setLevel(old_level)


# --------------------------------------------------------------------------- Maven path


def _java() -> str:
    java = shutil.which("java")
    if java is None and os.environ.get("JAVA_HOME"):
        candidate = Path(os.environ["JAVA_HOME"]) / "bin" / "java"
        if candidate.exists():
            java = str(candidate)
    if java is None:
        raise LauncherError(
            f"java not found: Kafka {kafka_version()} needs a Java {MIN_JAVA}+ runtime on PATH "
            "(Debian: apt-get install -y openjdk-17-jre-headless), or set "
            f"{ENV_BOOTSTRAP} to an existing broker"
        )
    out = subprocess.run([java, "-version"], capture_output=True, text=True, timeout=30)
    m = re.search(r'version "(\d+)(?:\.(\d+))?', out.stderr + out.stdout)
    if m:
        major = int(m.group(1))
        if major == 1 and m.group(2):  # "1.8.0_x"
            major = int(m.group(2))
        if major < MIN_JAVA:
            raise LauncherError(
                f"{java} is Java {major}; Kafka {kafka_version()} needs Java {MIN_JAVA}+"
            )
    return java


def _pom_digest() -> str:
    return hashlib.sha256(POM.read_bytes()).hexdigest()


def ensure_jars(verbose: bool = True) -> Path:
    """Copy the broker's runtime jars into the cache once; return the libs folder."""
    cache = _cache_root()
    libs = cache / "libs"
    marker = cache / "libs.complete"
    digest = _pom_digest()
    if marker.exists() and marker.read_text().strip() == digest and libs.is_dir():
        return libs
    cache.mkdir(parents=True, exist_ok=True)
    with open(cache / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # another launcher may be downloading right now
        if marker.exists() and marker.read_text().strip() == digest and libs.is_dir():
            return libs
        mvn = shutil.which("mvn")
        if mvn is None:
            raise LauncherError(
                f"mvn not found: it is needed once to download Kafka {kafka_version()} from "
                "Maven Central (Debian: apt-get install -y maven), or set "
                f"{ENV_BOOTSTRAP} to an existing broker"
            )
        tmp = cache / f"libs.tmp-{os.getpid()}"
        shutil.rmtree(tmp, ignore_errors=True)
        cmd = [
            mvn,
            "-B",
            "-q",
            "-Dstyle.color=never",
            "-f",
            str(POM),
            f"{DEPENDENCY_PLUGIN}:copy-dependencies",
            "-DincludeScope=runtime",
            f"-DoutputDirectory={tmp}",
        ]
        if verbose:
            _eprint(f"Downloading Kafka {kafka_version()} jars from Maven Central into {libs} ...")
        t0 = time.monotonic()
        try:
            out = subprocess.run(cmd, capture_output=True, text=True, timeout=900)
        except subprocess.TimeoutExpired as exc:
            shutil.rmtree(tmp, ignore_errors=True)
            raise LauncherError("Maven took more than 15 minutes to download the jars") from exc
        if out.returncode != 0:
            shutil.rmtree(tmp, ignore_errors=True)
            tail = "\n".join((out.stdout + out.stderr).splitlines()[-30:])
            raise LauncherError(
                f"Maven could not download Kafka {kafka_version()} (exit {out.returncode}). "
                "Is Maven Central reachable (proxy settings go in ~/.m2/settings.xml)?\n"
                f"command: {' '.join(cmd)}\n{tail}"
            )
        jar = tmp / f"kafka_2.13-{kafka_version()}.jar"
        if not jar.exists():
            shutil.rmtree(tmp, ignore_errors=True)
            raise LauncherError(f"Maven finished but {jar.name} is missing from {tmp}")
        shutil.rmtree(libs, ignore_errors=True)
        tmp.replace(libs)
        marker.write_text(digest + "\n")
        if verbose:
            n = len(list(libs.glob("*.jar")))
            _eprint(f"  {n} jars in {time.monotonic() - t0:.1f}s")
    return libs


def _start_maven(state_dir: Path, port: int | None, timeout_s: float) -> dict[str, Any]:
    java = _java()
    libs = ensure_jars()
    try:
        previous = json.loads((state_dir / PORTS_FILE).read_text())
    except (FileNotFoundError, json.JSONDecodeError):
        previous = {}

    if port is not None:
        if not _port_free(port):
            raise LauncherError(f"port {HOST}:{port} is already in use; pick another with --port")
    else:
        old = previous.get("port")
        port = old if isinstance(old, int) and _port_free(old) else _free_port()
    old_cport = previous.get("controller_port")
    if isinstance(old_cport, int) and old_cport != port and _port_free(old_cport):
        controller_port = old_cport
    else:
        controller_port = _free_port(exclude={port})
    (state_dir / PORTS_FILE).write_text(
        json.dumps({"port": port, "controller_port": controller_port}) + "\n"
    )

    logs_dir = (state_dir / "logs").resolve()
    logs_dir.mkdir(parents=True, exist_ok=True)
    (state_dir / "data").mkdir(parents=True, exist_ok=True)
    props = (state_dir / "server.properties").resolve()
    props.write_text(server_properties(state_dir, port, controller_port))
    log4j_file = (state_dir / "log4j2.properties").resolve()
    log4j_file.write_text(LOG4J2_PROPERTIES)

    cid_file = state_dir / "cluster.id"
    if cid_file.exists():
        cluster_id = cid_file.read_text().strip()
    else:
        cluster_id = _cluster_id()
        cid_file.write_text(cluster_id + "\n")

    classpath = f"{libs}/*"
    flags = jvm_flags(logs_dir, log4j_file)
    fmt = subprocess.run(
        [
            java,
            *flags,
            "-cp",
            classpath,
            "kafka.tools.StorageTool",
            "format",
            "-t",
            cluster_id,
            "-c",
            str(props),
            "--ignore-formatted",
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    if fmt.returncode != 0:
        raise LauncherError(
            f"formatting the Kafka storage in {state_dir / 'data'} failed "
            f"(exit {fmt.returncode}):\n{fmt.stdout}{fmt.stderr}"
        )

    out_path = logs_dir / "kafka.out"
    with open(out_path, "ab") as out:
        proc = subprocess.Popen(
            [java, *flags, "-cp", classpath, "kafka.Kafka", str(props)],
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            cwd=state_dir,
            start_new_session=True,
            close_fds=True,
        )
    _CHILDREN[proc.pid] = proc
    (state_dir / "kafka.pid").write_text(f"{proc.pid}\n")
    bootstrap = f"{HOST}:{port}"
    state = {
        "mode": "maven",
        "pid": proc.pid,
        "port": port,
        "controller_port": controller_port,
        "bootstrap": bootstrap,
        "kafka_version": kafka_version(),
        "started_at": time.time(),
    }
    _write_state(state_dir, state)

    try:
        ready = wait_ready(bootstrap, timeout_s, alive=lambda: _pid_alive(proc.pid))
    except BaseException:  # Ctrl-C or an unexpected error: leave nothing behind
        _kill_pid(proc.pid, grace_s=5.0)
        _clear_state(state_dir)
        raise
    if not ready:
        exited = proc.poll()
        why = (
            f"the JVM exited with code {exited}"
            if exited is not None
            else f"it did not answer within {timeout_s:.0f}s"
        )
        report = (
            f"Kafka {kafka_version()} failed to start on {bootstrap}: {why}.\n"
            f"--- tail of {logs_dir / 'server.log'}\n{_tail(logs_dir / 'server.log')}\n"
            f"--- tail of {out_path}\n{_tail(out_path, 20)}"
        )
        _kill_pid(proc.pid, grace_s=5.0)
        _clear_state(state_dir)
        raise LauncherError(report)
    return state


# --------------------------------------------------------------------------- Docker path


def docker_available() -> bool:
    if shutil.which("docker") is None:
        return False
    try:
        res = subprocess.run(
            ["docker", "info"],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            timeout=DOCKER_PROBE_TIMEOUT_S,
        )
    except (subprocess.TimeoutExpired, OSError):
        return False
    return res.returncode == 0


def _docker_env(port: int) -> list[str]:
    # The apache/kafka image turns KAFKA_FOO_BAR into foo.bar. Inside the container the broker
    # listens on 19092 for itself and on 9092 for the host (published on 127.0.0.1:port).
    settings = broker_settings(controller_port=9093)
    settings.update(
        {
            "listeners": "PLAINTEXT://0.0.0.0:19092,HOST://0.0.0.0:9092,"
            "CONTROLLER://127.0.0.1:9093",
            "advertised.listeners": f"PLAINTEXT://127.0.0.1:19092,HOST://{HOST}:{port}",
            "listener.security.protocol.map": "CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT,"
            "HOST:PLAINTEXT",
            "controller.quorum.voters": "1@127.0.0.1:9093",
            "log.dirs": "/tmp/kraft-combined-logs",  # the image's default, writable by its user
        }
    )
    env = [f"KAFKA_{k.upper().replace('.', '_')}={v}" for k, v in settings.items()]
    env.append(f"KAFKA_HEAP_OPTS=-Xms{HEAP} -Xmx{HEAP}")
    return env


def _start_docker(state_dir: Path, port: int | None, timeout_s: float) -> dict[str, Any]:
    if port is None:
        port = _free_port()
    elif not _port_free(port):
        raise LauncherError(f"port {HOST}:{port} is already in use; pick another with --port")
    name = f"vigil-kafka-{uuid.uuid4().hex[:10]}"
    cmd = ["docker", "run", "-d", "--name", name, "-p", f"{HOST}:{port}:9092"]
    for item in _docker_env(port):
        cmd += ["-e", item]
    cmd.append(docker_image())
    res = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    if res.returncode != 0:
        raise LauncherError(f"docker run {docker_image()} failed:\n{res.stderr.strip()}")
    bootstrap = f"{HOST}:{port}"
    state = {
        "mode": "docker",
        "container": name,
        "port": port,
        "bootstrap": bootstrap,
        "kafka_version": kafka_version(),
        "started_at": time.time(),
    }
    _write_state(state_dir, state)
    if not wait_ready(bootstrap, timeout_s, alive=lambda: _container_running(name)):
        logs = subprocess.run(
            ["docker", "logs", "--tail", "40", name], capture_output=True, text=True
        )
        subprocess.run(["docker", "rm", "-f", name], capture_output=True)
        _clear_state(state_dir)
        raise LauncherError(
            f"Kafka container {name} did not become ready on {bootstrap} within "
            f"{timeout_s:.0f}s.\n--- docker logs\n{logs.stdout}{logs.stderr}"
        )
    return state


def _container_running(name: str) -> bool:
    res = subprocess.run(
        ["docker", "inspect", "-f", "{{.State.Running}}", name],
        capture_output=True,
        text=True,
        timeout=30,
    )
    return res.returncode == 0 and res.stdout.strip() == "true"


# --------------------------------------------------------------------------- public API


def _running(state_dir: Path, state: dict[str, Any] | None) -> bool:
    if not state:
        return False
    if state.get("mode") == "maven":
        pid = state.get("pid")
        return isinstance(pid, int) and _pid_alive(pid) and _is_our_broker(pid, state_dir)
    if state.get("mode") == "docker":
        name = state.get("container")
        return bool(name) and shutil.which("docker") is not None and _container_running(name)
    return False


def start(
    state_dir: str | os.PathLike[str] = DEFAULT_STATE_DIR,
    port: int | None = None,
    *,
    mode: str | None = None,
    timeout_s: float = READY_TIMEOUT_S,
) -> str:
    """Start (or find) a broker and return its bootstrap address ``127.0.0.1:PORT``."""
    _admin_client_class()  # fail before starting anything if kafka-python is missing
    external = os.environ.get(ENV_BOOTSTRAP)
    if external:
        unreachable = nothing_listens(external)
        if unreachable:
            raise LauncherError(
                f"{ENV_BOOTSTRAP}={external} is set, but nothing listens there ({unreachable}). "
                "It is probably left from an earlier "
                '`eval "export $(python deploy/kafka/launcher.py start)"` whose broker has '
                f"stopped. Run `unset {ENV_BOOTSTRAP}` and start again for a local broker, or "
                "point it at a broker that runs."
            )
        if not wait_ready(external, timeout_s):
            raise LauncherError(
                f"{ENV_BOOTSTRAP}={external} is set but no broker answered there within "
                f"{timeout_s:.0f}s"
            )
        return external

    sdir = Path(state_dir).resolve()
    sdir.mkdir(parents=True, exist_ok=True)
    state = _read_state(sdir)
    if _running(sdir, state):
        assert state is not None
        bootstrap = str(state["bootstrap"])
        if port is not None and port != state.get("port"):
            raise LauncherError(
                f"a broker from {sdir} is already running on {bootstrap}; stop it first"
            )
        if not wait_ready(bootstrap, timeout_s):
            raise LauncherError(f"a broker from {sdir} is running but {bootstrap} does not answer")
        return bootstrap
    if state:
        _clear_state(sdir)  # stale: the process is gone

    mode = (mode or os.environ.get(ENV_MODE) or "auto").lower()
    if mode not in {"auto", "docker", "maven"}:
        raise LauncherError(f"unknown mode {mode!r}: use auto, docker or maven")
    if mode == "docker" or (mode == "auto" and docker_available()):
        state = _start_docker(sdir, port, timeout_s)
    else:
        state = _start_maven(sdir, port, timeout_s)
    (sdir / BOOTSTRAP_FILE).write_text(state["bootstrap"] + "\n")
    return str(state["bootstrap"])


def _kill_pid(pid: int, grace_s: float = STOP_TIMEOUT_S) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGTERM)  # controlled shutdown
    deadline = time.monotonic() + grace_s
    while time.monotonic() < deadline and _pid_alive(pid):
        time.sleep(0.2)
    if _pid_alive(pid):
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and _pid_alive(pid):
            time.sleep(0.1)
    child = _CHILDREN.pop(pid, None)
    if child is not None:
        with contextlib.suppress(subprocess.TimeoutExpired):
            child.wait(timeout=5)


def stop(state_dir: str | os.PathLike[str] = DEFAULT_STATE_DIR) -> bool:
    """Stop the broker that start() launched for state_dir. Returns True if one was stopped."""
    sdir = Path(state_dir).resolve()
    state = _read_state(sdir)
    if not state:
        return False
    stopped = False
    if state.get("mode") == "maven":
        pid = state.get("pid")
        if isinstance(pid, int) and _pid_alive(pid) and _is_our_broker(pid, sdir):
            _kill_pid(pid)
            stopped = True
        with contextlib.suppress(FileNotFoundError):
            (sdir / "kafka.pid").unlink()
    elif state.get("mode") == "docker":
        name = state.get("container")
        if name and shutil.which("docker"):
            res = subprocess.run(
                ["docker", "rm", "-f", "-t", str(int(STOP_TIMEOUT_S)), name],
                capture_output=True,
                text=True,
                timeout=STOP_TIMEOUT_S + 30,
            )
            if res.returncode != 0:
                # Older clients have no -t for rm: stop (SIGTERM, then SIGKILL) and remove.
                subprocess.run(
                    ["docker", "stop", "-t", str(int(STOP_TIMEOUT_S)), name],
                    capture_output=True,
                    timeout=STOP_TIMEOUT_S + 30,
                )
                res = subprocess.run(["docker", "rm", "-f", name], capture_output=True)
            stopped = res.returncode == 0
    _clear_state(sdir)
    return stopped


def status(state_dir: str | os.PathLike[str] = DEFAULT_STATE_DIR) -> dict[str, Any] | None:
    """The recorded state if a broker started from state_dir is running, else None."""
    sdir = Path(state_dir).resolve()
    state = _read_state(sdir)
    return state if _running(sdir, state) else None


# --------------------------------------------------------------------------- CLI


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="launcher.py", description="Local single-node Kafka for Vigil."
    )
    sub = parser.add_subparsers(dest="command", required=True)
    for name in ("start", "stop", "status"):
        p = sub.add_parser(name)
        p.add_argument(
            "--state-dir",
            type=Path,
            default=DEFAULT_STATE_DIR,
            help=f"where config, data, logs and the pid live (default {DEFAULT_STATE_DIR})",
        )
        if name == "start":
            p.add_argument("--port", type=int, default=None, help="broker port (default: free)")
            p.add_argument(
                "--mode",
                choices=["auto", "docker", "maven"],
                default=None,
                help=f"default ${ENV_MODE} or auto (Docker if its engine answers, else Maven)",
            )
            p.add_argument("--timeout", type=float, default=READY_TIMEOUT_S)
    args = parser.parse_args(argv)

    try:
        if args.command == "start":
            t0 = time.monotonic()
            bootstrap = start(args.state_dir, args.port, mode=args.mode, timeout_s=args.timeout)
            if os.environ.get(ENV_BOOTSTRAP):
                _eprint(f"using the broker from ${ENV_BOOTSTRAP} (nothing started)")
            else:
                _eprint(f"Kafka ready in {time.monotonic() - t0:.1f}s (state: {args.state_dir})")
            print(f"{ENV_BOOTSTRAP}={bootstrap}", flush=True)
            return 0
        if args.command == "stop":
            stopped = stop(args.state_dir)
            _eprint("stopped" if stopped else f"nothing running from {args.state_dir}")
            return 0
        state = status(args.state_dir)
        if state is None:
            print(f"not running (state: {args.state_dir})")
            return 3
        what = f"pid {state['pid']}" if state["mode"] == "maven" else state["container"]
        print(f"running ({state['mode']}, Kafka {state['kafka_version']}, {what})")
        print(f"{ENV_BOOTSTRAP}={state['bootstrap']}")
        return 0
    except LauncherError as exc:
        _eprint(f"error: {exc}")
        return 1
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
