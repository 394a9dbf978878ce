"""Throughput and memory of ``vigil worker`` through the real broker, side by side with a bare
consumer, and ``vigil scan`` on the same data (issue 9, item 6).

For each mix (``examples``: the example log cycled with unique ids, ~100-byte messages; ``rag``:
1 KiB events, answers with retrieval passages) the benchmark produces N events to a fresh topic
of the local broker, then measures on that topic, back to back:

1. a bare aiokafka consumer that ``json.loads`` every message (the ceiling), then two Faust apps
   that do only that (``_faust_floor.py``: an agent over ``take_events``, and the worker's
   batch route), Faust's own cost per message (``--no-faust-floor`` skips them);
2. one ``vigil worker`` as a user runs it (the console script, settings through ``VIGIL_*``,
   RocksDB store, its own data dir and app id) until its consumer group has committed the end
   offsets of the input **and** of every other topic the worker consumes (the evaluation-set
   samples and decisions, review labels, alert counts, claim checks); CPU seconds per event of
   the process and its children (``/proc/<pid>/stat``), RSS every few seconds, start-to-ready;
3. the bare consumer again (the machine is shared: the two bare runs bracket the worker's);
4. two workers in one group (pinned to different CPUs);
5. restarts of the first worker's app: with its data dir (local RocksDB kept) and with an empty
   one (every table partition recovered from the changelog): start-to-ready of each;

then ``vigil scan`` on the same generator's files: 10k and 40k events (peak RSS, events per
CPU-second as the difference of the two), and a ~1 GB RAG file (peak RSS), generated in a
temporary folder and deleted. With ``--profile``, one more worker runs under cProfile and the
cost per event is split into decode, screening, claim check, review/eval-set/alerting hooks,
state writes, producer and the rest (Faust, aiokafka, timers).

**Start-to-ready** is the time from starting the ``vigil worker`` process to the first
``/healthz`` answer (polled every 0.1 s) that says ``"status": "ok"`` with every partition of
the input topic held by the worker(s): the process has imported, compiled the rule packs, joined
the group, received its assignment and recovered its table partitions; its agents consume from
there. The time to the first committed input offset is reported too (an upper bound that
includes Faust's commit interval).

Nothing here asserts a timing: a run prints pass/miss against the issue's targets and writes
``benchmarks/results/streaming[_quick].json`` and ``.md``. The machine is shared, so every row
carries the load average seen around it, and ratios are taken between runs of the same
invocation only.

    python benchmarks/streaming.py                # both mixes, 300k events each, scans, restarts
    python benchmarks/streaming.py --quick        # smoke run: 3k events, no 1 GB scan
    python benchmarks/streaming.py --mix rag --events 50000 --profile --no-scan
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import secrets
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
import uuid
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _common as C
from _faust_floor import MODES as FLOOR_MODES
from _faust_floor import floor
from _kafka import Kafka, bare_consume, broker, lag_by_topic, produce
from _procs import (
    free_port,
    loadavg,
    peak_rss_kib,
    pinned,
    stop_process,
    thread_split,
    tree_cpu_seconds,
    tree_rss_kib,
    uptime,
)
from _profiles import PROFILE_OFF, PROFILE_ON, PySpy, profiled_worker, summarize_cprofile
from _streaming_report import (
    RSS_MARKS,
    evaluate,
    marginal_rate,
    markdown,
    rates,
    ratio,
    screened_total,
    steady_rate,
    value_at,
)

KIB = 1024


MIX_NAMES = ("examples", "rag")


def write_mix(
    mix: str, path: Path, n: int, *, min_bytes: int = 0, shift: float = C.DAY_SECONDS
) -> int:
    """The file of ``n`` events of ``mix`` (``min_bytes`` for the 1 GB file); its size.
    ``shift``: seconds the example log's timestamps move per cycle (:func:`C.example_events`)."""
    if mix == "examples":
        return C.write_example_file(path, n, shift_seconds=shift)
    return C.write_events_file(path, n, KIB, mix="rag", min_bytes=min_bytes)


@dataclass
class App:
    """One app id (consumer group) on the input topic, with its own topics and settings."""

    bootstrap: str
    input_topic: str
    partitions: int
    root: Path
    extra_env: dict[str, str]
    app_id: str = field(default_factory=lambda: f"bench-{uuid.uuid4().hex[:10]}")
    created: list[str] = field(default_factory=list)

    @property
    def base(self) -> Path:
        """This app's folder: data dirs and logs of its workers."""
        path = self.root / self.app_id
        path.mkdir(parents=True, exist_ok=True)
        return path

    def env(self, data_dir: Path, web_port: int) -> dict[str, str]:
        a = self.app_id
        env = {
            **os.environ,
            "VIGIL_KAFKA_BOOTSTRAP": self.bootstrap,
            "VIGIL_INPUT_TOPIC": self.input_topic,
            "VIGIL_FINDINGS_TOPIC": f"{a}.findings",
            "VIGIL_DLQ_TOPIC": f"{a}.dlq",
            "VIGIL_CHECKS_TOPIC": f"{a}.checks",
            "VIGIL_VERDICTS_TOPIC": f"{a}.verdicts",
            "VIGIL_REVIEW_ACTIONS_TOPIC": f"{a}.review.actions",
            "VIGIL_REVIEW_LABELS_TOPIC": f"{a}.review.labels",
            "VIGIL_EVALSET_TOPIC": f"{a}.evalset",
            "VIGIL_EVALSET_ARCHIVE_TOPIC": f"{a}.evalset.archive",
            "VIGIL_EVALSET_LABELS_TOPIC": f"{a}.review.labels",
            "VIGIL_ALERTS_TOPIC": f"{a}.alerts",
            "VIGIL_ALERTS_COUNTS_TOPIC": f"{a}.alerts.counts",
            "VIGIL_APP_ID": a,
            "VIGIL_TOPIC_PARTITIONS": str(self.partitions),
            "VIGIL_DATA_DIR": str(data_dir),
            "VIGIL_WEB_PORT": str(web_port),
            "VIGIL_WEB_HOST": "127.0.0.1",
            "PYTHONUNBUFFERED": "1",
            **self.extra_env,
        }
        return env

    def settings_env(self) -> dict[str, str]:
        return self.env(self.base / "data-x", 6066)  # commands that start no web server

    def create_topics(self) -> None:
        """``vigil topics create``, as a user does once before the first worker starts; the
        names it prints are this app's topics (deleted at the end)."""
        vigil = Path(sys.executable).with_name("vigil")
        cmd = [str(vigil), "topics", "create", "--partitions", str(self.partitions)]
        res = subprocess.run(cmd, env=self.settings_env(), capture_output=True, text=True)
        if res.returncode != 0:
            raise SystemExit(f"vigil topics create failed:\n{res.stdout}\n{res.stderr}")
        names = re.findall(r"^(\S+): (?:created|exists)$", res.stdout, re.M)
        self.created = [n for n in names if n != self.input_topic]

    def own_topics(self) -> list[str]:
        """Every topic of this app: those ``vigil topics create`` made and Faust's own."""
        return [*self.created, f"{self.app_id}-__assignor-__leader"]

    def consumed_topics(self) -> list[str]:
        """The topics the worker consumes, its table changelogs left out (those are read only
        to recover): ``copartitioned_topics`` under this app's settings."""
        with _environ(self.settings_env()):
            from services.settings import Settings
            from services.streaming.admin import changelog_topics, copartitioned_topics

            s = Settings()
            changelogs = set(changelog_topics(s))
            return [t for t in dict.fromkeys(copartitioned_topics(s)) if t not in changelogs]


@contextlib.contextmanager
def _environ(env: Mapping[str, str]) -> Iterator[None]:
    saved = dict(os.environ)
    os.environ.clear()
    os.environ.update(env)
    try:
        yield
    finally:
        os.environ.clear()
        os.environ.update(saved)


class Worker:
    """One ``vigil worker`` process of an :class:`App`."""

    def __init__(
        self, app: App, name: str, cpu: int | None, data_dir: Path, cprofile: Path | None = None
    ) -> None:
        self.app = app
        self.name = name
        self.cpu = cpu
        self.data_dir = data_dir
        self.port = free_port()
        self.log = app.base / f"{name}.log"
        self.cprofile = cprofile
        self.proc: subprocess.Popen[bytes] | None = None
        self.started = 0.0

    def command(self) -> list[str]:
        """The worker's command line: the console script, or under cProfile."""
        if self.cprofile is None:
            return [str(Path(sys.executable).with_name("vigil")), "worker"]
        return [sys.executable, __file__, "--profiled-worker", str(self.cprofile), "--"]

    def start(self) -> None:
        self.data_dir.mkdir(parents=True, exist_ok=True)
        cmd = [*self.command(), "--loglevel", "warning"]
        with open(self.log, "ab") as log:
            self.started = time.monotonic()
            self.proc = subprocess.Popen(
                pinned(cmd, self.cpu),
                env=self.app.env(self.data_dir, self.port),
                cwd=C.REPO_ROOT,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
            )

    @property
    def pid(self) -> int:
        assert self.proc is not None
        return self.proc.pid

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def healthz(self) -> dict[str, Any] | None:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/healthz", timeout=2) as resp:
                return json.loads(resp.read()) if resp.status == 200 else None
        except (OSError, urllib.error.URLError, ValueError):
            return None

    def events_screened(self) -> float | None:
        """``vigil_events_total`` summed over its labels, from ``/metrics``."""
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/metrics", timeout=5) as resp:
                text = resp.read().decode("utf-8", "replace")
        except (OSError, urllib.error.URLError):
            return None
        return screened_total(text)

    def tail(self, lines: int = 30) -> str:
        try:
            return "\n".join(self.log.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return ""

    def warnings(self) -> dict[str, int]:
        """How often the log shows the warnings issue 9 lists."""
        try:
            text = self.log.read_text(errors="replace")
        except OSError:
            return {}
        pats = {
            "producer buffer full": r"producer buffer full",
            "Timer commit is overlapping": r"Timer commit is overlapping",
            "not responding": r"is not responding",
            "ERROR lines": r"\[ERROR\]",
            "Traceback": r"Traceback",
        }
        return {k: len(re.findall(p, text)) for k, p in pats.items()}


class NotReady(SystemExit):
    """Workers that did not get ready in time (ends the run, unless the caller records it)."""

    def __init__(self, message: str, web_up_s: float | None) -> None:
        super().__init__(message)
        self.web_up_s = web_up_s


def wait_ready(workers: Sequence[Worker], partitions: int, timeout_s: float) -> dict[str, Any]:
    """Poll ``/healthz`` every 0.1 s until every worker says ``ok`` and together they hold every
    input partition (see the module docstring); the seconds from each start."""
    t_web: dict[str, float] = {}
    deadline = time.monotonic() + timeout_s
    while True:
        held: set[int] = set()
        ok = True
        for w in workers:
            if not w.alive():
                raise SystemExit(f"{w.name} exited before it was ready:\n{w.tail()}")
            h = w.healthz()
            if h is None:
                ok = False
                continue
            t_web.setdefault(w.name, time.monotonic() - w.started)
            ok = ok and h.get("status") == "ok"
            held |= set(h.get("partitions") or [])
        if ok and held == set(range(partitions)):
            now = time.monotonic()
            return {
                "ready_s": max(now - w.started for w in workers),
                "web_up_s": max(t_web.values()),
            }
        if time.monotonic() > deadline:
            raise NotReady(
                f"workers not ready within {timeout_s:.0f}s:\n{workers[0].tail()}",
                max(t_web.values(), default=None),
            )
        time.sleep(0.1)


def first_event(workers: Sequence[Worker], timeout_s: float = 30.0) -> float | None:
    """Seconds from the start to the first screened event (``vigil_events_total`` > 0 on
    ``/metrics``, polled every 0.1 s): when the workers are not only ready but consuming."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        for w in workers:
            if (w.events_screened() or 0) > 0:
                return time.monotonic() - w.started
        time.sleep(0.1)
    return None


def drain(
    kafka: Kafka,
    app: App,
    workers: Sequence[Worker],
    total: int,
    consumed: list[str],
    sample_s: float,
    timeout_s: float,
    stop_at: int | None = None,
) -> dict[str, Any]:
    """Sample CPU, RSS and committed offsets until the group has committed the end of the input
    and of every consumed topic at one instant (lag 0 everywhere), or until ``stop_at`` input
    events are committed (the profiled run), or ``timeout_s``."""
    t0 = time.monotonic()
    cpu0 = sum(tree_cpu_seconds(w.pid) or 0.0 for w in workers)
    split0 = [thread_split(w.pid) for w in workers]
    samples: list[dict[str, Any]] = []
    input_tps = [(app.input_topic, p) for p in kafka.partitions(app.input_topic)]
    last_kept = -1e9
    status = "timeout"
    seen_topics: set[str] = set()
    while True:
        now = time.monotonic()
        committed = kafka.committed(app.app_id)
        seen_topics |= {t for t, _ in committed}
        # the group commits offsets only for what it consumes: watch those topics too
        watch = list(dict.fromkeys([*consumed, *sorted(seen_topics)]))
        ends = kafka.ends(watch)
        lags = lag_by_topic(ends, committed)
        events = sum(committed.get(tp, 0) for tp in input_tps)
        cpu = sum(tree_cpu_seconds(w.pid) or 0.0 for w in workers)
        rss = [tree_rss_kib(w.pid) for w in workers]
        sample = {
            "t": round(now - t0, 3),
            "events": events,
            "cpu_s": round(cpu - cpu0, 3),
            "rss_mib": round(sum(r or 0 for r in rss) / KIB, 1),
            "rss_mib_each": [None if r is None else round(r / KIB, 1) for r in rss],
            "lag": {t: v for t, v in lags.items() if t != app.input_topic and v},
            "input_lag": lags.get(app.input_topic, 0),
        }
        done = events >= total and all(v == 0 for v in lags.values())
        if done or now - last_kept >= sample_s:
            samples.append(sample)
            last_kept = now
        if done:
            status = "done"
            break
        if stop_at is not None and events >= stop_at:
            status = "stopped"
            break
        if not all(w.alive() for w in workers):
            status = "exited"
            break
        if now - t0 > timeout_s:
            break
        # close to the end, poll fast so the end time is not rounded up to a whole sample
        near = events >= total or (samples and total - events < 0.02 * total)
        time.sleep(0.25 if near else min(sample_s, 1.0))
    end = samples[-1] if samples else sample
    split = split_delta(split0, [thread_split(w.pid) for w in workers])
    peak_lag: dict[str, int] = {}
    for s in samples:
        for topic, v in s["lag"].items():
            peak_lag[topic] = max(peak_lag.get(topic, 0), v)
    return {
        "status": status,
        "wall_s": end["t"],
        # when the input alone was committed to its end; the rest is the secondary topics' drain
        "input_done_s": next((s["t"] for s in samples if s["events"] >= total), None),
        "peak_secondary_lag": peak_lag,
        "events": end["events"],
        "cpu_s": end["cpu_s"],
        "cpu_split": split,
        "lag_at_end": {**end["lag"], app.input_topic: end["input_lag"]},
        "secondary_lag_at_end": sum(end["lag"].values()),
        "consumed_topics": watch,
        "committed_topics": sorted(seen_topics),
        "samples": samples,
        "peak_rss_mib": [
            None if (k := peak_rss_kib(w.pid)) is None else round(k / KIB, 1) for w in workers
        ],
    }


def split_delta(
    before: Sequence[dict[str, float] | None], after: Sequence[dict[str, float] | None]
) -> dict[str, float] | None:
    """The workers' :func:`_procs.thread_split` over a run, summed (``None`` if one is gone)."""
    if any(a is None or b is None for a, b in zip(before, after, strict=True)):
        return None
    out: dict[str, float] = {}
    for a, b in zip(before, after, strict=True):
        assert a is not None and b is not None
        for k, v in b.items():
            out[k] = round(out.get(k, 0.0) + v - a[k], 3)
    return out


def run_workers(
    kafka: Kafka,
    app: App,
    cpus: Sequence[int | None],
    total: int,
    args: argparse.Namespace,
    *,
    label: str,
    profiler: str | None = None,
    profile_out: Path | None = None,
    stop_at: int | None = None,
) -> dict[str, Any]:
    """Start ``len(cpus)`` workers of ``app`` together, wait until ready, drain, stop; with
    ``profiler`` (``py-spy`` or ``cprofile``, one worker) profile from ready to the stop."""
    cprof = profile_out if profiler == "cprofile" else None
    workers = [
        Worker(app, f"{label}-{i + 1}", cpu, app.base / f"{label}-{i + 1}-data", cprof)
        for i, cpu in enumerate(cpus)
    ]
    spy: PySpy | None = None
    consumed = app.consumed_topics()
    load0 = loadavg()
    for w in workers:
        w.start()
    try:
        ready = wait_ready(workers, app.partitions, args.ready_timeout)
        ready["first_event_s"] = first_event(workers)
        assigned = kafka.assigned_topics(app.app_id)
        # what the members are assigned beyond copartitioned_topics (none expected) is watched
        extra = sorted(
            t
            for t in assigned
            if t not in consumed and not t.endswith("-changelog") and "__assignor" not in t
        )
        consumed = [*consumed, *extra]
        if profiler == "cprofile":
            os.kill(workers[0].pid, PROFILE_ON)
        elif profiler == "py-spy":
            assert profile_out is not None
            spy = PySpy(_py_spy(), workers[0].pid, profile_out, rate=PY_SPY_RATE)
        res = drain(
            kafka, app, workers, total, consumed, args.sample_seconds, args.timeout, stop_at
        )
        first_commit = next((s["t"] for s in res["samples"] if s["events"] > 0), None)
        if spy is not None:
            res["py_spy"] = spy.stop()
        if cprof is not None:
            os.kill(workers[0].pid, PROFILE_OFF)
            for _ in range(300):  # written by the worker's main thread at its next turn
                if cprof.exists() and cprof.stat().st_size:
                    break
                time.sleep(0.1)
            time.sleep(1.0)
    finally:
        stop_s = [stop_process(w.proc) for w in workers if w.proc is not None]
    res.update(ready)
    res["first_commit_s"] = None if first_commit is None else ready["ready_s"] + first_commit
    res.update(rates(res["events"], res["wall_s"], res["cpu_s"]))
    res["input_events_per_s"] = res["events"] / res["input_done_s"] if res["input_done_s"] else None
    res["steady_events_per_s"] = steady_rate(res["samples"], total)
    res["assigned_topics"] = sorted(assigned)
    res["assigned_beyond_copartitioned"] = extra
    res["workers"] = len(workers)
    res["cpus"] = list(cpus)
    res["loadavg"] = [load0, loadavg()]
    res["stop_s"] = stop_s
    res["log_warnings"] = [w.warnings() for w in workers]
    res["app_id"] = app.app_id
    if res["status"] not in ("done", "stopped"):
        res["log_tail"] = workers[0].tail()
    for mark in RSS_MARKS:
        res[f"rss_mib_at_{mark // 1000}k"] = value_at(res["samples"], mark, "rss_mib")
    return res


def restart_ready(
    app: App, cpu: int | None, data_dir: Path, label: str, args: argparse.Namespace
) -> dict[str, Any]:
    """Start-to-ready of a worker of an app that has state already (``data_dir`` kept or
    empty), then stop it. Not ready within ``--ready-timeout``: recorded as such (status
    ``not ready``, its log's tail), and the run goes on."""
    w = Worker(app, label, cpu, data_dir)
    load0 = loadavg()
    w.start()
    try:
        ready = wait_ready([w], app.partitions, args.ready_timeout)
    except NotReady as exc:
        ready = {
            "status": "not ready",
            "ready_s": None,
            "timeout_s": args.ready_timeout,
            "web_up_s": exc.web_up_s,
            "log_tail": w.tail(),
        }
    finally:
        assert w.proc is not None
        stop_process(w.proc)
    return {**ready, "loadavg": [load0, loadavg()]}


PY_SPY_RATE = 100


def _py_spy() -> str:
    exe = Path(sys.executable).with_name("py-spy")
    found = str(exe) if exe.exists() else shutil.which("py-spy")
    if not found:
        raise SystemExit("--profile needs py-spy: pip install -e '.[bench]' (or use --cprofile)")
    return found


def profile_worker(
    kafka: Kafka,
    bootstrap: str,
    topic: str,
    total: int,
    args: argparse.Namespace,
    base: Path,
    profiler: str,
) -> dict[str, Any]:
    """One more worker on ``topic`` (its own app id) with ``profiler`` from ready until
    ``--profile-events`` input events are committed (``benchmarks/_profiles.py``)."""
    app = App(bootstrap, topic, args.partitions, base, _extra_env(args))
    app.create_topics()
    suffix = ".prof" if profiler == "cprofile" else ".txt"
    out_file = Path(args.profile_dir) / f"{app.app_id}-{profiler}{suffix}"
    out_file.parent.mkdir(parents=True, exist_ok=True)
    stop_at = min(total, args.profile_events)
    try:
        res = run_workers(
            kafka,
            app,
            [args.cpu],
            total,
            args,
            label=f"profile-{profiler}",
            profiler=profiler,
            profile_out=out_file,
            stop_at=stop_at,
        )
    finally:
        _cleanup_app(kafka, app, args)
    out: dict[str, Any] = {"run": {k: v for k, v in res.items() if k not in ("samples", "py_spy")}}
    events = res["events"]
    if profiler == "py-spy":
        spy = res.get("py_spy") or {"error": "no py-spy result"}
        out.update(spy)
        if spy.get("samples") and events and res["cpu_s"]:
            # A sample stands for 1/rate s of a thread that was running *or ready to run*: on a
            # loaded machine most are waits for the CPU, so the shares of the samples are
            # spread over the CPU time the worker really used in the same interval.
            cpu_us = res["cpu_s"] / events * 1e6
            per = cpu_us / spy["samples"]
            for key in ("contexts", "stages", "libraries", "groups"):
                out[f"{key}_us_per_event"] = {k: v * per for k, v in spy[key].items()}
            out["parts_us_per_event"] = {
                c: {k: v * per for k, v in p.items()} for c, p in spy["parts"].items()
            }
            out["us_per_event"] = cpu_us
            out["sampled_us_per_event"] = spy["samples"] / spy["rate"] / events * 1e6
    elif out_file.exists():
        out.update(summarize_cprofile(out_file, C.REPO_ROOT))
        out["file"] = str(out_file)
    else:
        out["error"] = "the profiled worker wrote no profile"
    out["events"] = events if profiler == "py-spy" else out.get("events")
    return out


def scan_runs(
    mixes: Sequence[str], args: argparse.Namespace, rules: C.RulesChoice
) -> dict[str, Any]:
    """``vigil scan`` of 10k and 40k events of each mix, and of ~1 GB of the RAG mix."""
    import throughput as T

    out: dict[str, Any] = {}
    sizes = (1_000, 4_000) if args.quick else (10_000, 40_000)
    env = _extra_env(args)
    pin = args.cpu is not None
    for mix in mixes:
        rows = []
        for n in sizes:
            tmp = Path(tempfile.mkdtemp(prefix="vigil-bench-scan-"))
            try:
                file = tmp / "events.jsonl"
                write_mix(mix, file, n, shift=args.cycle_shift)
                load0 = loadavg()
                r = T.run_vigil_scan(file, tmp / "out", rules, pin, cpu=args.cpu or 0, env=env)
                r["loadavg"] = [load0, loadavg()]
                rows.append(r)
            finally:
                shutil.rmtree(tmp, ignore_errors=True)
        a, b = rows
        out[mix] = {
            "runs": rows,
            "rss_ratio": b["peak_rss_mib"] / a["peak_rss_mib"],
            "marginal_events_per_cpu_s": marginal_rate(
                a["events"], a["cpu_s"], b["events"], b["cpu_s"]
            ),
        }
    if args.gb > 0 and not args.quick:
        tmp = Path(tempfile.mkdtemp(prefix="vigil-bench-gb-", dir="/tmp"))
        try:
            file = tmp / "events.jsonl"
            t0 = time.monotonic()
            size = write_mix("rag", file, 0, min_bytes=int(args.gb * 1e9))
            gen = time.monotonic() - t0
            load0 = loadavg()
            r = T.run_vigil_scan(file, tmp / "out", rules, pin, cpu=args.cpu or 0, env=env)
            r.update(file_bytes=size, generate_s=gen, loadavg=[load0, loadavg()])
            out["rag_gb"] = r
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
    return out


def faust_floor(
    bootstrap: str, topic: str, total: int, mode: str, cpu: int | None
) -> dict[str, Any]:
    """A Faust app that only decodes the topic (:mod:`_faust_floor`), with its rates."""
    load0 = loadavg()
    out = floor(bootstrap, topic, total, mode, cpu)
    out.update(rates(out["events"], out["wall_s"], out["cpu_s"]))
    out["loadavg"] = [load0, loadavg()]
    out["cpu"] = cpu
    return out


def bare(
    bootstrap: str, topic: str, partitions: int, total: int, cpu: int | None
) -> dict[str, Any]:
    """The bare consumer's run (:func:`_kafka.bare_consume`) with its rates and the load."""
    load0 = loadavg()
    out = bare_consume(bootstrap, topic, partitions, total, cpu)
    out.update(rates(out["events"], out["wall_s"], out["cpu_s"]))
    out["loadavg"] = [load0, loadavg()]
    out["cpu"] = cpu
    return out


#: The keyed hashes' secrets of every worker of this run, as an operator sets them (the worker
#: refuses the development keys); one set per run, so every worker of a group agrees.
_RUN_KEYS = {
    name: secrets.token_hex(32)
    for name in ("VIGIL_MEMORY_KEY", "VIGIL_SAMPLE_KEY", "VIGIL_EVALSET_KEY")
}


def _extra_env(args: argparse.Namespace) -> dict[str, str]:
    env: dict[str, str] = dict(_RUN_KEYS)
    if args.sample_rate is not None:
        env["VIGIL_SAMPLE_RATE"] = str(args.sample_rate)
    return env


def _cleanup_app(kafka: Kafka, app: App, args: argparse.Namespace) -> None:
    if not args.keep_topics:
        kafka.delete_topics(app.own_topics())


def events_per_mix(spec: str | None, default: int) -> dict[str, int]:
    """``--events``: one number for every mix, or ``examples=N,rag=M`` (others: ``default``)."""
    out = dict.fromkeys(MIX_NAMES, default)
    if not spec:
        return out
    if "=" not in spec:
        return dict.fromkeys(MIX_NAMES, int(spec))
    for part in spec.split(","):
        mix, _, n = part.partition("=")
        if mix.strip() not in out:
            raise SystemExit(f"--events: unknown mix {mix!r} (one of {', '.join(MIX_NAMES)})")
        out[mix.strip()] = int(n)
    return out


def _new_topic(
    bootstrap: str, mix: str, n: int, args: argparse.Namespace, base: Path
) -> tuple[str, dict[str, Any]]:
    """A fresh topic holding ``n`` events of ``mix``; ``(name, production figures)``."""
    topic = f"bench-{mix}-{uuid.uuid4().hex[:8]}"
    file = base / f"{topic}.jsonl"
    size = write_mix(mix, file, n, shift=args.cycle_shift)
    print(f"[{mix}] producing {n:,} events to {topic} …", flush=True)
    got = produce(bootstrap, topic, file, args.partitions)
    file.unlink()
    return topic, {**got, "file_bytes": size, "topic": topic}


def bench_mix(
    kafka: Kafka, bootstrap: str, mix: str, args: argparse.Namespace, base: Path
) -> dict[str, Any]:
    """Everything measured for ``mix`` (module docstring, steps 1–5): on a topic of
    ``--events`` events, and the scale-out on a topic of ``--scale-events``."""
    n = args.events[mix]
    topic, produced = _new_topic(bootstrap, mix, n, args, base)
    out: dict[str, Any] = {"topic": topic, "partitions": args.partitions, "produce": produced}
    total = produced["events"]
    apps: list[App] = []
    topics = [topic]

    def new_app(on: str) -> App:
        app = App(bootstrap, on, args.partitions, base, _extra_env(args))
        apps.append(app)
        app.create_topics()
        return app

    try:
        print(f"[{mix}] bare consumer #1 …", flush=True)
        out["bare_1"] = bare(bootstrap, topic, args.partitions, total, args.cpu)
        if args.faust_floor:
            for mode in FLOOR_MODES:
                print(f"[{mix}] Faust {mode} that only decodes …", flush=True)
                out[f"faust_{mode}"] = faust_floor(bootstrap, topic, total, mode, args.cpu)
        app = new_app(topic)
        print(f"[{mix}] one worker (app {app.app_id}) …", flush=True)
        one = run_workers(kafka, app, [args.cpu], total, args, label="one")
        out["one_worker"] = one
        print(f"[{mix}] bare consumer #2 …", flush=True)
        out["bare_2"] = bare(bootstrap, topic, args.partitions, total, args.cpu)
        bare_rate = [out[k]["events_per_s"] for k in ("bare_1", "bare_2")]
        bare_cpu = [out[k]["events_per_cpu_s"] for k in ("bare_1", "bare_2")]
        out["bare_mean_events_per_s"] = sum(bare_rate) / 2
        out["worker_vs_bare"] = ratio(one["events_per_s"], out["bare_mean_events_per_s"])
        out["worker_vs_bare_cpu"] = ratio(one["events_per_cpu_s"], sum(bare_cpu) / 2)
        if args.restart:
            print(f"[{mix}] restarts: same data dir, then an empty one …", flush=True)
            out["restart_warm"] = restart_ready(
                app, args.cpu, app.base / "one-1-data", "restart-warm", args
            )
            out["restart_cold"] = restart_ready(
                app, args.cpu, app.base / f"empty-{app.app_id}", "restart-cold", args
            )
        if args.workers >= 2:
            out["scale"] = scale_out(kafka, bootstrap, mix, args, base, new_app, topics)
            out["two_over_one"] = out["scale"]["two_over_one"]
        for profiler in ("py-spy", "cprofile"):
            if profiler in args.profilers:
                print(f"[{mix}] worker under {profiler} …", flush=True)
                out[f"profile_{profiler}"] = profile_worker(
                    kafka, bootstrap, topic, total, args, base, profiler
                )
    finally:
        for a in apps:
            _cleanup_app(kafka, a, args)
        if not args.keep_topics:
            kafka.delete_topics(topics)
    return out


def scale_out(
    kafka: Kafka,
    bootstrap: str,
    mix: str,
    args: argparse.Namespace,
    base: Path,
    new_app: Any,
    topics: list[str],
) -> dict[str, Any]:
    """One worker, then two in one group (each a fresh app), on one topic of
    ``--scale-events`` events, each until every consumed topic is drained."""
    topic, produced = _new_topic(bootstrap, mix, args.scale_events, args, base)
    topics.append(topic)
    k = produced["events"]
    print(f"[{mix}] scale-out on {k:,} events: one worker …", flush=True)
    one = run_workers(kafka, new_app(topic), [args.cpu], k, args, label="scale-one")
    cpus = args.two_cpus if args.cpu is not None else [None, None]
    print(f"[{mix}] scale-out: two workers on CPUs {cpus} …", flush=True)
    two = run_workers(kafka, new_app(topic), cpus, k, args, label="scale-two")
    return {
        "produce": produced,
        "one_worker": one,
        "two_workers": two,
        "two_over_one": ratio(two["events_per_s"], one["events_per_s"]),
    }


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument(
        "--events",
        help="events of the main topic: N, or per mix as examples=N,rag=M (default 300000; "
        "--quick 3000)",
    )
    ap.add_argument(
        "--scale-events",
        type=int,
        help="events of the scale-out topic (one worker, then two; default 50000; --quick 2000)",
    )
    ap.add_argument("--mix", choices=[*MIX_NAMES, "both"], default="both")
    ap.add_argument("--partitions", type=int, default=4, help="input topic partitions (4)")
    ap.add_argument(
        "--sample-rate", type=float, help="VIGIL_SAMPLE_RATE for worker and scan (default: unset)"
    )
    ap.add_argument("--workers", type=int, choices=[1, 2], default=2, help="2: also two workers")
    ap.add_argument(
        "--cpu", type=int, default=1, help="CPU for the bare consumer, one worker, scan"
    )
    ap.add_argument(
        "--two-cpus",
        type=lambda s: [int(x) for x in s.split(",")],
        default=[0, 1],
        help="CPUs of the two workers (0,1)",
    )
    ap.add_argument("--no-pin", action="store_true", help="pin nothing (taskset not used)")
    ap.add_argument("--sample-seconds", type=float, default=3.0, help="RSS/offset sample period")
    ap.add_argument("--timeout", type=float, default=4 * 3600, help="per worker run, seconds")
    ap.add_argument("--ready-timeout", type=float, default=180.0)
    ap.add_argument("--no-restart", dest="restart", action="store_false")
    ap.add_argument(
        "--profile", action="store_true", help="one more worker, sampled by py-spy (per event)"
    )
    ap.add_argument(
        "--cprofile", action="store_true", help="one more worker under cProfile (call counts)"
    )
    ap.add_argument("--profile-events", type=int, default=20_000)
    ap.add_argument("--profile-dir", default=tempfile.gettempdir(), help="where .prof files go")
    ap.add_argument("--no-scan", dest="scan", action="store_false")
    ap.add_argument(
        "--no-faust-floor",
        dest="faust_floor",
        action="store_false",
        help="skip the Faust apps that only decode (an agent, a batch route)",
    )
    ap.add_argument(
        "--scan-only", action="store_true", help="only the `vigil scan` part (no broker, no worker)"
    )
    ap.add_argument("--gb", type=float, default=1.0, help="size of the RAG scan file (0: skip)")
    ap.add_argument("--rules", help="pack folder or file for vigil scan (default: Settings)")
    ap.add_argument("--quick", action="store_true", help="smoke run: 3000 events, small scans")
    ap.add_argument("--broker-state", default=str(C.REPO_ROOT / ".kafka-bench"))
    ap.add_argument("--keep-broker", action="store_true", help="leave the started broker up")
    ap.add_argument("--keep-topics", action="store_true")
    ap.add_argument("--out", help="result name (default streaming[_quick])")
    ap.add_argument(
        "--cycle-shift",
        type=float,
        default=C.DAY_SECONDS,
        help="examples mix: seconds its timestamps move per cycle of the log (86400, a day: an "
        f"ISO week every ~2,900 events, so periods close and retire all along; "
        f"{C.DENSE_SHIFT:.0f}: about a second per event, as the RAG mix)",
    )
    # internal: the profiled worker's own process
    ap.add_argument("--profiled-worker", metavar="OUT", help=argparse.SUPPRESS)
    ap.add_argument("worker_args", nargs="*", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    args.events = events_per_mix(args.events, 3_000 if args.quick else 300_000)
    if args.scale_events is None:
        args.scale_events = 2_000 if args.quick else 50_000
    if args.no_pin:
        args.cpu = None
    args.profilers = [p for p, on in (("py-spy", args.profile), ("cprofile", args.cprofile)) if on]
    return args


def main(argv: list[str] | None = None) -> dict[str, Any] | None:
    args = parse_args(argv)
    if args.profiled_worker:
        profiled_worker(args.profiled_worker, args.worker_args)
        return None
    mixes = list(MIX_NAMES) if args.mix == "both" else [args.mix]
    rules = C.resolve_rules(args.rules)
    result: dict[str, Any] = {
        "events": args.events,
        "scale_events": args.scale_events,
        "partitions": args.partitions,
        "examples_cycle_shift_s": args.cycle_shift,
        "sample_rate": args.sample_rate if args.sample_rate is not None else "default",
        "pinning": "none"
        if args.cpu is None
        else f"CPU {args.cpu} (bare, one worker, scan); CPUs {args.two_cpus} (two workers)",
        "loadavg_start": loadavg(),
        "uptime_start": uptime(),
        "mixes": {},
    }
    base = Path(tempfile.mkdtemp(prefix="vigil-bench-stream-"))
    t_start = time.monotonic()
    name = args.out or ("streaming_quick" if args.quick else "streaming")

    def save(complete: bool) -> dict[str, Any]:
        """Write the JSON and the markdown (after every part too, so a long run that dies
        keeps what it measured; ``complete`` says whether it got to the end)."""
        result.update(
            complete=complete,
            loadavg_end=loadavg(),
            uptime_end=uptime(),
            duration_s=time.monotonic() - t_start,
        )
        result["targets"] = evaluate(result)
        path = C.save_result(name, result, rules)
        saved: dict[str, Any] = json.loads(path.read_text())
        path.with_suffix(".md").write_text(markdown(saved), encoding="utf-8")
        return saved

    try:
        with (
            contextlib.nullcontext(("", "none (--scan-only)"))
            if args.scan_only
            else broker(Path(args.broker_state), args.keep_broker)
        ) as (bootstrap, how):
            result["broker"] = how
            if not args.scan_only:
                kafka = Kafka(bootstrap)
                try:
                    for mix in mixes:
                        result["mixes"][mix] = bench_mix(kafka, bootstrap, mix, args, base)
                        save(complete=False)
                finally:
                    kafka.close()
        if args.scan:
            print("[scan] vigil scan …", flush=True)
            result["scan"] = scan_runs(mixes, args, rules)
    finally:
        shutil.rmtree(base, ignore_errors=True)
    saved = save(complete=True)
    path = C.RESULTS_DIR / f"{name}.json"
    print("\n" + markdown(saved))
    print(f"raw results: {C.rel(path)}; table: {C.rel(path.with_suffix('.md'))}")
    return saved


if __name__ == "__main__":
    main()
