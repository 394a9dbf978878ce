"""A real ``vigil worker`` in a subprocess, on its own topics, for the integration tests.

:class:`VigilStack` names a fresh set of topics and a consumer group (the Faust app id), creates
the topics with ``vigil topics create`` before any worker starts (input, findings, dead letters and
the memory table's changelog, all with the same partition count: Faust refuses mismatched counts,
and a changelog the worker creates itself can miss its first metadata snapshot), and starts,
kills and restarts workers on them. :class:`WorkerProcess` is one worker: output captured to a
log file, ready once ``/healthz`` answers, stopped with SIGTERM and then SIGKILL.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
import uuid
from collections.abc import Callable
from pathlib import Path
from subprocess import CompletedProcess

__all__ = [
    "PARTITIONS",
    "STOP_GRACE_S",
    "VigilStack",
    "WorkerProcess",
    "cli",
    "free_port",
    "run_cli",
]

REPO_ROOT = Path(__file__).resolve().parents[2]
STOP_GRACE_S = 30.0
START_TIMEOUT_S = 120.0
PARTITIONS = 4


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def cli(args: list[str], env: dict[str, str], timeout_s: float = 300.0) -> CompletedProcess[str]:
    """Run ``vigil ARGS`` (this interpreter, ``-m services.cli``), output captured."""
    return subprocess.run(
        [sys.executable, "-m", "services.cli", *args],
        env=env,
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=timeout_s,
    )


def run_cli(args: list[str], env: dict[str, str], timeout_s: float = 300.0) -> str:
    """Run ``vigil ARGS``; its stdout, or fail with its output."""
    proc = cli(args, env, timeout_s)
    if proc.returncode != 0:
        raise AssertionError(
            f"vigil {' '.join(args)} exited {proc.returncode}\n"
            f"--- stdout\n{proc.stdout}\n--- stderr\n{proc.stderr}"
        )
    return proc.stdout


def _tail(path: Path, lines: int = 60) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except FileNotFoundError:
        return f"(no {path})"


class WorkerProcess:
    """One ``vigil worker`` subprocess."""

    def __init__(self, env: dict[str, str], log_path: Path, loglevel: str = "info") -> None:
        self.env = env
        self.log_path = log_path
        self.loglevel = loglevel
        self.port = int(env["VIGIL_WEB_PORT"])
        self.url = f"http://127.0.0.1:{self.port}"
        self.proc: subprocess.Popen[bytes] | None = None

    # ------------------------------------------------------------------ lifecycle

    def start(self, timeout_s: float = START_TIMEOUT_S) -> WorkerProcess:
        """Launch the worker and wait until ``/healthz`` answers."""
        self.launch()
        assert self.proc is not None
        deadline = time.monotonic() + timeout_s
        while True:
            if not self.alive:
                raise AssertionError(
                    f"vigil worker exited with {self.proc.returncode} before /healthz answered"
                    f"\n{self.diagnostics()}"
                )
            if self.healthz(timeout_s=2.0) is not None:
                return self
            if time.monotonic() > deadline:
                raise AssertionError(
                    f"vigil worker: /healthz did not answer within {timeout_s:.0f}s"
                    f"\n{self.diagnostics()}"
                )
            time.sleep(0.3)

    def launch(self) -> WorkerProcess:
        """Start the process without waiting for it (a worker whose broker is not up yet)."""
        with open(self.log_path, "ab") as log:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "services.cli", "worker", "--loglevel", self.loglevel],
                env=self.env,
                cwd=REPO_ROOT,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
            )
        return self

    @property
    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def kill(self) -> None:
        """SIGKILL: an abrupt crash, nothing flushed or committed."""
        if self.proc is not None and self.alive:
            self.proc.send_signal(signal.SIGKILL)
        if self.proc is not None:
            self.proc.wait(timeout=30)

    def stop(self, grace_s: float = STOP_GRACE_S) -> None:
        """SIGTERM (graceful shutdown), then SIGKILL after ``grace_s`` seconds."""
        if self.proc is None or not self.alive:
            return
        self.proc.send_signal(signal.SIGTERM)
        try:
            self.proc.wait(timeout=grace_s)
        except subprocess.TimeoutExpired:
            self.proc.send_signal(signal.SIGKILL)
            self.proc.wait(timeout=30)

    # ------------------------------------------------------------------ HTTP

    def _get(self, path: str, timeout_s: float) -> tuple[int, str]:
        with urllib.request.urlopen(self.url + path, timeout=timeout_s) as resp:
            return resp.status, resp.read().decode("utf-8")

    def healthz(self, timeout_s: float = 10.0) -> dict[str, object] | None:
        """The parsed ``/healthz`` answer, or ``None`` when it does not answer 200."""
        try:
            status, body = self._get("/healthz", timeout_s)
        except (OSError, urllib.error.URLError):
            return None
        return json.loads(body) if status == 200 else None

    def partitions(self) -> set[int]:
        """The input partitions this worker owns, once it serves (empty before)."""
        health = self.healthz() or {}
        parts = health.get("partitions") if health.get("status") == "ok" else None
        return set(parts) if isinstance(parts, list) else set()

    def metrics(self, timeout_s: float = 30.0) -> str:
        status, body = self._get("/metrics", timeout_s)
        assert status == 200, f"/metrics answered {status}"
        return body

    def metrics_when(
        self,
        done: Callable[[str], bool],
        what: str,
        timeout_s: float = 120.0,
        describe: Callable[[str], str] | None = None,
    ) -> str:
        """Scrape ``/metrics`` until ``done(text)``: events without findings leave no other trace,
        so counters are the only way to know the worker has got through a topic."""
        deadline = time.monotonic() + timeout_s
        while True:
            text = self.metrics()
            if done(text):
                return text
            if time.monotonic() > deadline:
                seen = describe(text) if describe is not None else ""
                raise AssertionError(
                    f"/metrics never showed {what} within {timeout_s:.0f}s {seen}\n"
                    f"{self.diagnostics()}"
                )
            time.sleep(0.5)

    # ------------------------------------------------------------------ diagnostics

    def log_text(self) -> str:
        return self.log_path.read_text(errors="replace")

    def diagnostics(self) -> str:
        state = "running" if self.alive else f"exited ({self.proc and self.proc.returncode})"
        text = f"--- worker {state}, log {self.log_path} (tail)\n{_tail(self.log_path)}"
        if self.alive:
            text += f"\n--- its counters and gauges\n{self._metric_summary()}"
        return text

    def _metric_summary(self, limit: int = 150) -> str:
        """The worker's own non-zero samples (no histogram buckets), or why they could not be
        read."""
        try:
            body = self.metrics(timeout_s=5.0)
        except Exception as exc:  # a stalled worker is what the diagnostics are for
            return f"(/metrics not read: {type(exc).__name__}: {exc})"
        keep = [
            line
            for line in body.splitlines()
            if line.startswith("vigil_")
            and "_bucket{" not in line
            and "_created" not in line
            and not line.endswith(" 0.0")
        ]
        return "\n".join(keep[:limit])


class VigilStack:
    """Unique topics, app id and data dir for one test, and the workers running on them."""

    def __init__(
        self,
        bootstrap: str,
        work_dir: Path,
        name: str,
        partitions: int = PARTITIONS,
        **env: str,
    ) -> None:
        suffix = uuid.uuid4().hex[:10]
        self.bootstrap = bootstrap
        self.work_dir = work_dir
        self.input_topic = f"it-{name}-events-{suffix}"
        self.findings_topic = f"it-{name}-findings-{suffix}"
        self.dlq_topic = f"it-{name}-dlq-{suffix}"
        self.checks_topic = f"it-{name}-checks-{suffix}"
        self.verdicts_topic = f"it-{name}-verdicts-{suffix}"
        self.app_id = f"it-{name}-{suffix}"
        self.partitions = partitions
        self.data_dir = work_dir / "worker-data"
        self.data_dir.mkdir(parents=True, exist_ok=True)
        self.workers: list[WorkerProcess] = []
        self.extra_env = env

    def env(self, **overrides: str) -> dict[str, str]:
        """The environment of every process of this stack (workers and CLI commands)."""
        env = dict(os.environ)
        env.update(
            {
                "VIGIL_KAFKA_BOOTSTRAP": self.bootstrap,
                "VIGIL_INPUT_TOPIC": self.input_topic,
                "VIGIL_FINDINGS_TOPIC": self.findings_topic,
                "VIGIL_DLQ_TOPIC": self.dlq_topic,
                "VIGIL_CHECKS_TOPIC": self.checks_topic,
                "VIGIL_VERDICTS_TOPIC": self.verdicts_topic,
                "VIGIL_APP_ID": self.app_id,
                "VIGIL_DATA_DIR": str(self.data_dir),
                "VIGIL_SESSION_TIMEOUT_SECONDS": "6",
                "VIGIL_TOPIC_PARTITIONS": str(self.partitions),
                # The features' topics too: shared names would mix the tests' streams (and
                # their partition counts, which the worker's preflight checks).
                "VIGIL_ALERTS_TOPIC": f"{self.app_id}-alerts",
                "VIGIL_ALERTS_COUNTS_TOPIC": f"{self.app_id}-alert-counts",
                "VIGIL_EVALSET_TOPIC": f"{self.app_id}-evalset",
                "VIGIL_EVALSET_ARCHIVE_TOPIC": f"{self.app_id}-evalset-archive",
                "VIGIL_EVALSET_LABELS_TOPIC": f"{self.app_id}-review-labels",
                "VIGIL_REVIEW_LABELS_TOPIC": f"{self.app_id}-review-labels",
                "VIGIL_REVIEW_ACTIONS_TOPIC": f"{self.app_id}-review-actions",
                "PYTHONUNBUFFERED": "1",
                # The tests compare the workers with in-process scans, which use the built-in
                # development keys; the worker refuses those unless told this is a test setup.
                "VIGIL_ALLOW_DEV_KEYS": "true",
                **self.extra_env,
                **overrides,
            }
        )
        return env

    def create_topics(self, existing: tuple[str, ...] = ()) -> str:
        """``vigil topics create``: every topic of the stack is new but ``existing`` ones."""
        out = run_cli(["topics", "create", "--partitions", str(self.partitions)], self.env())
        for name in existing:
            assert f"{name}: exists" in out, out
        names = (
            self.input_topic,
            self.findings_topic,
            self.dlq_topic,
            self.checks_topic,
            self.verdicts_topic,
            self.changelog_topic,
        )
        for name in names:
            assert f"{name}: created" in out or name in existing, out
        return out

    @property
    def changelog_topic(self) -> str:
        from services.settings import Settings
        from services.streaming.admin import changelog_topics

        (name,) = changelog_topics(Settings(app_id=self.app_id))
        return name

    def start_worker(
        self, loglevel: str = "info", *, wait: bool = True, **overrides: str
    ) -> WorkerProcess:
        """A new worker of this stack's group; ``wait``: until its ``/healthz`` answers.

        Each running worker has a data dir of its own (RocksDB locks it); a new worker takes the
        first one no running worker holds, as a replacement takes over a dead one's volume.
        """
        held = {w.env.get("VIGIL_DATA_DIR") for w in self.workers if w.alive}
        slot = next(
            str(self.data_dir / str(k))
            for k in range(100)
            if str(self.data_dir / str(k)) not in held
        )
        env = self.env(**{"VIGIL_WEB_PORT": str(free_port()), "VIGIL_DATA_DIR": slot, **overrides})
        log_path = self.work_dir / f"worker-{len(self.workers) + 1}.log"
        worker = WorkerProcess(env, log_path, loglevel)
        self.workers.append(worker)
        return worker.start() if wait else worker.launch()

    def replay(self, path: Path, topic: str | None = None) -> str:
        """``vigil replay PATH --topic T`` (the input topic by default)."""
        out = run_cli(["replay", str(path), "--topic", topic or self.input_topic], self.env())
        assert "sent" in out, out
        return out

    def wait(self, done: Callable[[], bool], what: str, timeout_s: float) -> None:
        """Until ``done()``; fail with ``what`` and the workers' logs on timeout."""
        deadline = time.monotonic() + timeout_s
        while not done():
            if time.monotonic() > deadline:
                raise AssertionError(
                    f"timed out after {timeout_s:.0f}s: {what}\n{self.diagnostics()}"
                )
            time.sleep(0.5)

    def committed(self, topic: str | None = None) -> dict[int, int]:
        """The group's committed offsets on ``topic`` (the input topic by default)."""
        from tests.support.kafka_io import committed_offsets

        return committed_offsets(self.bootstrap, self.app_id, topic or self.input_topic)

    def caught_up(self, n_input: int) -> Callable[[], bool]:
        """``done()``: the group has committed ``n_input`` input messages and the whole checks
        topic (the claim checks the screening asked for)."""
        from tests.support.kafka_io import end_offsets

        def done() -> bool:
            if sum(o for o in self.committed().values() if o > 0) < n_input:
                return False
            ends = end_offsets(self.bootstrap, self.checks_topic)
            got = self.committed(self.checks_topic)
            return all(got.get(p, 0) >= end for p, end in ends.items() if end > 0)

        return done

    def assignment(self) -> dict[int, set[int]]:
        """``{index in workers: input partitions it owns}`` of the workers still running."""
        return {i: w.partitions() for i, w in enumerate(self.workers) if w.alive}

    def settled(self) -> bool:
        """Every running worker serves, and together they own each input partition once."""
        owned = self.assignment().values()
        every = sorted(p for parts in owned for p in parts)
        return all(owned) and every == list(range(self.partitions))

    def diagnostics(self) -> str:
        return "\n".join(w.diagnostics() for w in self.workers) or "(no worker started)"

    def close(self) -> None:
        for worker in self.workers:
            with contextlib.suppress(Exception):
                worker.stop()
