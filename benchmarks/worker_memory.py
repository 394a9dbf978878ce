"""Where a long-running ``vigil worker`` puts its memory (issue 9: RSS at 300k events ≤ 1.15 × at
50k): one worker under :mod:`tracemalloc`, through the real broker, with a snapshot of the
Python heap at every mark.

The worker is the CLI's own ``vigil worker`` started by this file (``--traced-worker``) with
``tracemalloc`` on from the first import; this process produces N events of a mix of
``benchmarks/streaming.py`` to a fresh topic, starts the worker pinned to one CPU, and at every
``--every`` committed input events signals it to write a snapshot (with its traced size and its
RSS). At the end it compares the last snapshot with the first one at or after ``--from`` events:

- *traced* is what Python's allocators hold (objects, their buffers, pymalloc arenas in use);
  RSS beside it. When RSS grows and traced memory does not, the growth is native (RocksDB,
  librdkafka-free aiokafka buffers, malloc arenas and fragmentation), not Python objects;
- the allocation sites whose live size grew most between the two snapshots (by traceback,
  the innermost frames first), with the number of blocks: a steady per-event growth shows up
  as a site whose block count grows with the events.

tracemalloc makes the worker ~2× slower and larger (every live block carries a trace), so
compare its snapshots with each other, never its RSS with a run without it.

    python benchmarks/worker_memory.py --mix rag --events 150000 --every 25000 --from 50000

Writes ``benchmarks/results/worker_memory.{json,md}``; nothing here asserts a figure.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import sys
import sysconfig
import tempfile
import time
import tracemalloc
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _common as C
from _kafka import Kafka, broker
from _procs import loadavg, stop_process, tree_cpu_seconds, tree_rss_kib
from streaming import App, Worker, _extra_env, _new_topic, events_per_mix, wait_ready

KIB = 1024
MIB = 1024 * 1024
#: Tells the traced worker to write its next snapshot.
SNAPSHOT = signal.SIGRTMIN + 3
FRAMES = 12


def traced_worker(out_dir: str, worker_args: list[str]) -> None:
    """``vigil worker`` with tracemalloc on; each :data:`SNAPSHOT` signal writes
    ``snap-<n>.tm`` and a line of ``marks.jsonl`` (traced bytes, peak, RSS) into ``out_dir``."""
    tracemalloc.start(FRAMES)
    from services.cli import app

    folder = Path(out_dir)
    count = 0

    def snapshot(*_: Any) -> None:
        nonlocal count
        count += 1
        snap = tracemalloc.take_snapshot()
        snap.dump(str(folder / f"snap-{count}.tm"))
        traced, peak = tracemalloc.get_traced_memory()
        line = {
            "n": count,
            "traced_mib": round(traced / MIB, 2),
            "traced_peak_mib": round(peak / MIB, 2),
            "tracemalloc_overhead_mib": round(tracemalloc.get_tracemalloc_memory() / MIB, 2),
            "rss_mib": round((tree_rss_kib(os.getpid()) or 0) / KIB, 1),
        }
        with open(folder / "marks.jsonl", "a", encoding="utf-8") as fh:
            fh.write(json.dumps(line) + "\n")

    signal.signal(SNAPSHOT, snapshot)
    app(["worker", *worker_args], prog_name="vigil")


def _committed_events(kafka: Kafka, app: App, tps: list[tuple[str, int]]) -> int:
    committed = kafka.committed(app.app_id)
    return sum(committed.get(tp, 0) for tp in tps)


def _wait_for_mark(folder: Path, n: int, timeout_s: float = 600.0) -> dict[str, Any] | None:
    """The ``marks.jsonl`` line of snapshot ``n`` once the worker wrote it."""
    deadline = time.monotonic() + timeout_s
    path = folder / "marks.jsonl"
    while time.monotonic() < deadline:
        if path.exists():
            for line in path.read_text(encoding="utf-8").splitlines():
                mark = json.loads(line)
                if mark["n"] == n:
                    return dict(mark)
        time.sleep(0.5)
    return None


class TracedWorker(Worker):
    """A :class:`streaming.Worker` started through :func:`traced_worker`."""

    def __init__(self, app: App, cpu: int | None, folder: Path) -> None:
        super().__init__(app, "traced", cpu, app.base / "traced-data")
        self.folder = folder

    def command(self) -> list[str]:
        return [sys.executable, __file__, "--traced-worker", str(self.folder), "--"]


def run(kafka: Kafka, bootstrap: str, args: argparse.Namespace, base: Path) -> dict[str, Any]:
    n = args.events[args.mix]
    topic, produced = _new_topic(bootstrap, args.mix, n, args, base)
    total = produced["events"]
    app = App(bootstrap, topic, args.partitions, base, _extra_env(args))
    app.create_topics()
    folder = app.base / "snapshots"
    folder.mkdir(parents=True, exist_ok=True)
    worker = TracedWorker(app, args.cpu, folder)
    marks: list[dict[str, Any]] = []
    worker.start()
    try:
        ready = wait_ready([worker], args.partitions, args.ready_timeout)
        t0 = time.monotonic()
        tps = [(topic, p) for p in kafka.partitions(topic)]
        next_mark = args.every
        cpu0 = tree_cpu_seconds(worker.pid) or 0.0
        while next_mark <= total:
            if not worker.alive():
                raise SystemExit(f"the traced worker exited:\n{worker.tail()}")
            events = _committed_events(kafka, app, tps)
            if events >= next_mark:
                os.kill(worker.pid, SNAPSHOT)
                mark = _wait_for_mark(folder, len(marks) + 1)
                if mark is None:
                    raise SystemExit(f"no snapshot {len(marks) + 1}:\n{worker.tail()}")
                mark.update(
                    events=events,
                    t=round(time.monotonic() - t0, 1),
                    cpu_s=round((tree_cpu_seconds(worker.pid) or 0.0) - cpu0, 1),
                )
                marks.append(mark)
                print(f"  mark {mark}", flush=True)
                while next_mark <= events:
                    next_mark += args.every
                continue
            if time.monotonic() - t0 > args.timeout:
                break
            time.sleep(1.0)
        growth = compare(folder, marks, args.start, args.top)
    finally:
        if worker.proc is not None:
            stop_process(worker.proc)
        kafka.delete_topics([*app.own_topics(), topic])
    return {
        "events": total,
        "produce": produced,
        "ready": ready,
        "marks": marks,
        "growth": growth,
        "loadavg_end": loadavg(),
    }


def _where(frames: Any, depth: int = 4) -> list[str]:
    """The innermost ``depth`` frames of a traceback (stored oldest first), innermost first,
    repository and library paths made relative."""
    out = []
    for frame in list(frames)[::-1][:depth]:
        name = frame.filename
        for root in (
            str(C.REPO_ROOT) + "/",
            "site-packages/",
            sysconfig.get_paths()["stdlib"] + "/",
        ):
            if root in name:
                name = name.split(root, 1)[1]
        out.append(f"{name}:{frame.lineno}")
    return out


def compare(folder: Path, marks: list[dict[str, Any]], start: int, top: int) -> dict[str, Any]:
    """The last snapshot against the first at or after ``start`` events: top sites by growth."""
    first = next((m for m in marks if m["events"] >= start), None)
    if first is None or first is marks[-1]:
        return {"error": "fewer than two snapshots from --from on"}
    last = marks[-1]
    old = tracemalloc.Snapshot.load(str(folder / f"snap-{first['n']}.tm"))
    new = tracemalloc.Snapshot.load(str(folder / f"snap-{last['n']}.tm"))
    skip = [tracemalloc.Filter(False, tracemalloc.__file__)]
    old, new = old.filter_traces(skip), new.filter_traces(skip)
    events = last["events"] - first["events"]
    sites = []
    for stat in new.compare_to(old, "traceback")[:top]:
        sites.append(
            {
                "grew_kib": round(stat.size_diff / KIB, 1),
                "blocks_grew": stat.count_diff,
                "bytes_per_1k_events": round(stat.size_diff / events * 1000, 1),
                "now_kib": round(stat.size / KIB, 1),
                "where": _where(stat.traceback),
            }
        )
    by_file = [
        {
            "file": _where([s.traceback[0]], 1)[0].rsplit(":", 1)[0],
            "grew_kib": round(s.size_diff / KIB, 1),
        }
        for s in new.compare_to(old, "filename")[:top]
    ]
    return {
        "from": first,
        "to": last,
        "events": events,
        "traced_grew_mib": round(last["traced_mib"] - first["traced_mib"], 2),
        "rss_grew_mib": round(last["rss_mib"] - first["rss_mib"], 1),
        "sites": sites,
        "files": by_file,
    }


def markdown(result: dict[str, Any]) -> str:
    g = result["growth"]
    lines = [
        "| events | traced MiB | RSS MiB | tracemalloc's own MiB | CPU s |",
        "|---:|---:|---:|---:|---:|",
    ]
    for m in result["marks"]:
        lines.append(
            f"| {m['events']:,} | {m['traced_mib']} | {m['rss_mib']} | "
            f"{m['tracemalloc_overhead_mib']} | {m['cpu_s']} |"
        )
    if "error" in g:
        return "\n".join([*lines, "", g["error"]]) + "\n"
    lines += [
        "",
        f"From {g['from']['events']:,} to {g['to']['events']:,} events: traced "
        f"{g['traced_grew_mib']:+} MiB, RSS {g['rss_grew_mib']:+} MiB.",
        "",
        "| grew KiB | blocks | bytes per 1k events | allocated at (innermost first) |",
        "|---:|---:|---:|---|",
    ]
    for s in g["sites"]:
        where = " ← ".join(f"`{w}`" for w in s["where"])
        lines.append(
            f"| {s['grew_kib']} | {s['blocks_grew']:+} | {s['bytes_per_1k_events']} | {where} |"
        )
    return "\n".join(lines) + "\n"


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--mix", choices=["examples", "rag"], default="rag")
    ap.add_argument("--events", default="150000", help="events to produce (150000)")
    ap.add_argument("--every", type=int, default=25_000, help="a snapshot every N events")
    ap.add_argument("--from", dest="start", type=int, default=50_000, help="compare from here")
    ap.add_argument("--top", type=int, default=25, help="allocation sites to list")
    ap.add_argument("--partitions", type=int, default=4)
    ap.add_argument("--sample-rate", type=float, help="VIGIL_SAMPLE_RATE (default: unset)")
    ap.add_argument("--cpu", type=int, default=1, help="CPU the worker is pinned to")
    ap.add_argument("--ready-timeout", type=float, default=300.0)
    ap.add_argument("--timeout", type=float, default=4 * 3600)
    ap.add_argument("--broker-state", default=str(C.REPO_ROOT / ".kafka-bench"))
    ap.add_argument("--keep-broker", action="store_true")
    ap.add_argument("--out", default="worker_memory")
    ap.add_argument("--traced-worker", metavar="DIR", help=argparse.SUPPRESS)
    ap.add_argument("worker_args", nargs="*", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    args.events = events_per_mix(f"{args.mix}={args.events}", 150_000)
    return args


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    if args.traced_worker:
        traced_worker(args.traced_worker, args.worker_args)
        return
    base = Path(tempfile.mkdtemp(prefix="vigil-bench-memory-"))
    result: dict[str, Any] = {"mix": args.mix, "loadavg_start": loadavg()}
    with broker(Path(args.broker_state), args.keep_broker) as (bootstrap, how):
        result["broker"] = how
        kafka = Kafka(bootstrap)
        try:
            result.update(run(kafka, bootstrap, args, base))
        finally:
            kafka.close()
    shutil.rmtree(base, ignore_errors=True)
    path = C.save_result(args.out, result, C.resolve_rules(None))
    text = markdown(result)
    path.with_suffix(".md").write_text(text, encoding="utf-8")
    print("\n" + text)
    print(f"raw results: {C.rel(path)}")


if __name__ == "__main__":
    main()
