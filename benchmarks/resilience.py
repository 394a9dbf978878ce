"""Failure behaviour of ``vigil worker`` against a private local broker (issue 9 item 5).

Three measurements, each with its own broker (``deploy/kafka/launcher.py`` in a temporary state
dir, so stopping it disturbs nobody else's tests):

``broker-down``
    A worker runs on a few hundred events; the broker is stopped for ``--outage`` seconds
    (SIGTERM, controlled shutdown) and started again on the same port. Reported: the worker's log
    lines per second and its CPU (user + system, from ``/proc/<pid>/stat``) during the outage,
    the lines by logger, and whether the worker carried on afterwards (events sent after the
    restart are processed).
``kill``
    ``--events`` events are replayed; once a third of the findings are out a worker is killed
    with SIGKILL. With ``--workers 1`` a new one takes over with the same app id; with
    ``--workers 2`` the one that does *not* own partition 0 is killed and the survivor takes its
    partitions over, so the killed worker's sends to partitions it did not own (eval-set
    summaries to the sampler on partition 0) and the sampler's decisions to the killed worker's
    partitions are in play. Reported, read ``read_committed`` as a downstream consumer in
    exactly-once mode would, per ``--guarantee``: findings published more than once and missing;
    eval-set summaries on the sampler's topic more than once (by event and check state); the
    sampler's ``update`` decisions more than once (by period, conversation and selection: an
    update can also repeat legitimately when a selection changes and changes back, so read this
    next to the other mode's figure).
``recovery``
    ``--keys`` conversations each leave one key of conversation memory in the state table; the
    worker is stopped and a new one started, once on the same data dir (RocksDB on disk: reads
    only the changelog's tail) and once on an empty one (replays the whole changelog). Reported:
    seconds from start to ``/healthz`` "ok" for each.

Usage::

    python benchmarks/resilience.py broker-down --outage 30
    python benchmarks/resilience.py kill --guarantee at_least_once --events 4000
    python benchmarks/resilience.py kill --guarantee exactly_once --events 4000
    python benchmarks/resilience.py kill --guarantee exactly_once --events 4000 --workers 2
    python benchmarks/resilience.py recovery --keys 20000 --keys 100000

Results go to ``benchmarks/results/resilience_<name>.json``; the figures are in
``docs/streaming.md``. Nothing here is asserted as a timing in a test.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

import _common as C

from tests.support.broker import PrivateBroker
from tests.support.chat_events import event, generate_events, write_jsonl
from tests.support.kafka_io import TopicReader, events_total
from tests.support.parity import ScanResult, findings_of
from tests.support.worker_process import VigilStack, WorkerProcess

CLK_TCK = os.sysconf("SC_CLK_TCK")


def cpu_seconds(pid: int) -> float:
    """User + system CPU seconds of process ``pid`` (all its threads)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / CLK_TCK


def loggers_of(lines: list[str]) -> Counter[str]:
    """Log lines by kind: level and the start of the message, numbers and quoted parts erased
    (Faust's format, ``[date] [pid] [LEVEL] message``, names no logger)."""
    counts: Counter[str] = Counter()
    for line in lines:
        m = re.match(r"\[[^\]]*\] \[\d+\] \[(\w+)\] (.*)", line)
        if m is None:
            counts["(continuation or other)"] += 1
            continue
        text = re.sub(r"'[^']*'|\"[^\"]*\"|\d+", "_", m.group(2))
        counts[f"{m.group(1)} {text[:70]}"] += 1
    return counts


def _wait(done: Any, what: str, timeout_s: float, stack: VigilStack) -> None:
    deadline = time.monotonic() + timeout_s
    while not done():
        if time.monotonic() > deadline:
            raise SystemExit(f"timed out waiting for {what}\n{stack.diagnostics()}")
        time.sleep(0.5)


def _processed(worker: WorkerProcess) -> float:
    try:
        return events_total(worker.metrics(timeout_s=5))
    except OSError:
        return -1.0


# --------------------------------------------------------------------------- broker-down


class Watch:
    """Log lines and CPU of one worker over a stretch of time."""

    def __init__(self, worker: WorkerProcess) -> None:
        assert worker.proc is not None
        self.worker = worker
        self.pid = worker.proc.pid
        self.lines0 = self._lines()
        self.cpu0 = cpu_seconds(self.pid)
        self.t0 = time.monotonic()

    def _lines(self) -> int:
        return len(self.worker.log_text().splitlines())

    def result(self) -> dict[str, Any]:
        seconds = time.monotonic() - self.t0
        lines = self.worker.log_text().splitlines()[self.lines0 :]
        return {
            "seconds": round(seconds, 1),
            "log_lines": len(lines),
            "log_lines_per_second": round(len(lines) / seconds, 1),
            "cpu_share_of_a_core": round((cpu_seconds(self.pid) - self.cpu0) / seconds, 3),
            "top_sources": loggers_of(lines).most_common(8),
            "sample_lines": [*lines[:4], "...", *lines[-4:]],
        }


def broker_down(args: argparse.Namespace) -> dict[str, Any]:
    """A running worker, and one started while the broker is down, through one outage."""
    work = Path(tempfile.mkdtemp(prefix="vigil-resil-"))
    events = generate_events(600, prefix="bd", seed=3, examples=None)
    half = len(events) // 2
    first = write_jsonl(work / "first.jsonl", events[:half])
    second = write_jsonl(work / "second.jsonl", events[half:])
    with PrivateBroker(work / "kafka") as broker:
        assert broker.bootstrap is not None
        running = VigilStack(broker.bootstrap, work / "running", "bd")
        late = VigilStack(broker.bootstrap, work / "late", "bdl")
        try:
            running.create_topics()
            late.create_topics()
            worker = running.start_worker()
            running.replay(first)
            _wait(lambda: _processed(worker) >= half, "the first half", 120, running)
            time.sleep(3)  # settle: commits, timers
            idle = Watch(worker)
            time.sleep(10)
            idle_figures = idle.result()

            broker.stop()
            down = Watch(worker)
            starter = late.start_worker(wait=False)
            time.sleep(1)  # the interpreter's imports are not reconnects
            started = Watch(starter)
            time.sleep(args.outage)
            outage = {"running": down.result(), "started_while_down": started.result()}
            broker.start()
            back = time.monotonic()
            running.replay(second)
            late.replay(second)
            caught_up: dict[str, Any] = {}
            for what, stack, w in (("running", running, worker), ("started", late, starter)):
                if not w.alive:
                    assert w.proc is not None
                    caught_up[what] = f"exited with {w.proc.returncode}"
                    continue
                need = len(events) if w is worker else len(events) - half
                _wait(lambda w=w, n=need: _processed(w) >= n, "new events", 300, stack)
                caught_up[what] = round(time.monotonic() - back, 1)
        finally:
            running.close()
            late.close()
    shutil.rmtree(work, ignore_errors=True)
    return {
        "outage_seconds": args.outage,
        "idle_before": idle_figures,
        **outage,
        "seconds_to_process_new_events_after_restart": caught_up,
    }


# --------------------------------------------------------------------------- kill


def _messages(records: list[Any]) -> list[dict[str, Any]]:
    """The messages of records of the eval-set channels (a JSON array per record, or one)."""
    out: list[dict[str, Any]] = []
    for r in records:
        if r.value is None:
            continue
        value = json.loads(r.value)
        out += value if isinstance(value, list) else [value]
    return out


def _repeats(keys: list[str]) -> int:
    return len(keys) - len(set(keys))


def _summary_keys(records: list[Any]) -> list[str]:
    return [
        f"{m.get('event_id')}|{m.get('check')}"
        for m in _messages(records)
        if m.get("kind") == "summary"
    ]


def _update_keys(records: list[Any]) -> list[str]:
    return [
        json.dumps([m["period"], m["partition"], m.get("conversation_id"), m.get("selection")])
        for m in _messages(records)
        if m.get("kind") == "update"
    ]


def kill(args: argparse.Namespace) -> dict[str, Any]:
    work = Path(tempfile.mkdtemp(prefix="vigil-resil-"))
    events = generate_events(args.events, prefix="kl", seed=5, examples=None)
    path = write_jsonl(work / "events.jsonl", events)
    scan = ScanResult(path, work / "scan")
    want = {f"{e}:{r}:{s}-{t}" for e, r, s, t in scan.directions}
    with PrivateBroker(work / "kafka") as broker:
        bootstrap = broker.bootstrap
        stack = VigilStack(
            bootstrap, work / "stack", "kill", VIGIL_PROCESSING_GUARANTEE=args.guarantee
        )
        stack.create_topics()
        reader = TopicReader(bootstrap, stack.findings_topic, committed_only=True)
        samples = TopicReader(bootstrap, f"{stack.app_id}-evalset-samples", committed_only=True)
        decisions = TopicReader(bootstrap, f"{stack.app_id}-evalset-decisions", committed_only=True)
        try:
            for _ in range(args.workers):
                stack.start_worker()
            if args.workers > 1:
                _wait(stack.settled, "the workers to share the partitions", 120, stack)
            t0 = time.monotonic()
            stack.replay(path)
            reader.read_until(
                lambda r: len({f.finding_id for f in findings_of(r)}) >= len(want) // 3,
                600,
                "a third of the findings",
                stack.diagnostics,
            )
            owners = stack.assignment()
            (victim,) = [i for i, owned in owners.items() if args.workers == 1 or 0 not in owned]
            stack.workers[victim].kill()
            killed_at = time.time()
            killed = time.monotonic() - t0
            if args.workers == 1:
                stack.start_worker()
            restarted = time.monotonic()
            reader.read_until(
                lambda r: {f.finding_id for f in findings_of(r)} >= want,
                900,
                "every finding",
                stack.diagnostics,
            )
            done = time.monotonic() - restarted
            _wait(stack.caught_up(len(events)), "the group to commit every event", 600, stack)
            reader.drain(quiet_s=5.0)
            samples.drain(quiet_s=5.0)
            decisions.drain(quiet_s=5.0)
            got = Counter(f.finding_id for f in findings_of(reader.records))
            copies = [
                {
                    "finding": f.finding_id,
                    "partition": r.partition,
                    "offset": r.offset,
                    "seconds_after_kill": round(r.timestamp / 1000 - killed_at, 2),
                }
                for r in reader.records
                for f in findings_of([r])
                if got[f.finding_id] > 1
            ]
            summaries, updates = _summary_keys(samples.records), _update_keys(decisions.records)
        finally:
            for r in (reader, samples, decisions):
                r.close()
            stack.close()
    if copies and args.guarantee == "exactly_once":
        print(f"worker logs kept in {work}")
    else:
        shutil.rmtree(work, ignore_errors=True)
    return {
        "guarantee": args.guarantee,
        "events": args.events,
        "workers": args.workers,
        "partitions_at_kill": {str(i): sorted(p) for i, p in owners.items()},
        "killed_worker": victim,
        "findings_expected": len(want),
        "findings_read": sum(got.values()),
        "duplicates": sum(got.values()) - len(got),
        "lost": len(want - set(got)),
        "unexpected": len(set(got) - want),
        "evalset_summaries_read": len(summaries),
        "evalset_summaries_repeated": _repeats(summaries),
        "evalset_updates_read": len(updates),
        "evalset_updates_repeated": _repeats(updates),
        "killed_after_seconds": round(killed, 1),
        "all_findings_seconds_after_restart": round(done, 1),
        "copies": copies[:20],
    }


# --------------------------------------------------------------------------- recovery


def _user_turns(n: int) -> list[dict[str, Any]]:
    return [
        event(f"rc-{i:06d}-t0", f"rc-{i:06d}", 0, "user", f"Mail me at u{i}.rc@example.org")
        for i in range(n)
    ]


def _ready_seconds(stack: VigilStack, **env: str) -> float:
    t0 = time.monotonic()
    worker = stack.start_worker(**env)
    while (worker.healthz(timeout_s=2) or {}).get("status") != "ok":
        if not worker.alive or time.monotonic() - t0 > 900:
            raise SystemExit(f"worker not ready\n{worker.diagnostics()}")
        time.sleep(0.2)
    return time.monotonic() - t0


def recovery(args: argparse.Namespace) -> dict[str, Any]:
    rows = []
    for n in args.keys:
        work = Path(tempfile.mkdtemp(prefix="vigil-resil-"))
        path = write_jsonl(work / "users.jsonl", _user_turns(n))
        with PrivateBroker(work / "kafka") as broker:
            bootstrap = broker.bootstrap
            stack = VigilStack(bootstrap, work / "stack", "rec")
            stack.create_topics()
            try:
                worker = stack.start_worker()
                stack.replay(path)
                _wait(lambda w=worker, n=n: _processed(w) >= n, f"{n} events", 1800, stack)
                time.sleep(5)  # the last batch's changelog writes and commit
                worker.stop()
                same_dir = _ready_seconds(stack)
                stack.workers[-1].stop()
                empty = work / "empty-data"
                fresh = _ready_seconds(stack, VIGIL_DATA_DIR=str(empty))
                stack.workers[-1].stop()
            finally:
                stack.close()
        rows.append(
            {
                "keys": n,
                "ready_same_data_dir_s": round(same_dir, 1),
                "ready_empty_data_dir_s": round(fresh, 1),
            }
        )
        shutil.rmtree(work, ignore_errors=True)
    return {"rows": rows}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="what", required=True)
    p = sub.add_parser("broker-down")
    p.add_argument("--outage", type=float, default=30.0)
    p.add_argument("--name", default="broker_down")
    p = sub.add_parser("kill")
    p.add_argument("--guarantee", choices=["at_least_once", "exactly_once"], required=True)
    p.add_argument("--events", type=int, default=4000)
    p.add_argument("--workers", type=int, choices=[1, 2], default=1)
    p.add_argument("--name", default=None)
    p = sub.add_parser("recovery")
    p.add_argument("--keys", type=int, action="append", required=True)
    p.add_argument("--name", default="recovery")
    args = parser.parse_args()
    run = {"broker-down": broker_down, "kill": kill, "recovery": recovery}[args.what]
    result = run(args)
    name = args.name or f"kill_{args.guarantee}{'_2w' if args.workers > 1 else ''}"
    out = C.save_result(f"resilience_{name}", result)
    print(json.dumps(result, indent=2))
    print(f"wrote {C.rel(out)}")


if __name__ == "__main__":
    main()
