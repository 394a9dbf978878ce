"""Kafka side of the streaming benchmark: the broker, offsets through kafka-python's admin
client, producing a file as ``vigil replay`` does, and the bare consumer (the ceiling).

Run as a script, this module is the bare consumer's own process:
``python benchmarks/_kafka.py BOOTSTRAP TOPIC PARTITIONS EXPECTED`` prints one JSON line.
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib.util
import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from types import ModuleType
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _procs import pinned

__all__ = ["Kafka", "bare_consume", "broker", "lag_by_topic", "produce"]

LAUNCHER = Path(__file__).resolve().parents[1] / "deploy" / "kafka" / "launcher.py"


def _load_launcher() -> ModuleType:
    spec = importlib.util.spec_from_file_location("vigil_kafka_launcher", LAUNCHER)
    if spec is None or spec.loader is None:
        raise SystemExit(f"cannot load {LAUNCHER}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


@contextlib.contextmanager
def broker(state_dir: Path, keep: bool) -> Iterator[tuple[str, str]]:
    """``(bootstrap, how)``: ``$VIGIL_KAFKA_BOOTSTRAP`` when set, else a broker of
    ``deploy/kafka/launcher.py`` in ``state_dir`` (stopped at the end unless ``keep``)."""
    launcher = _load_launcher()
    external = os.environ.get("VIGIL_KAFKA_BOOTSTRAP")
    if external:
        if not launcher.wait_ready(external, timeout_s=60):
            raise SystemExit(f"VIGIL_KAFKA_BOOTSTRAP={external}: no broker answers")
        yield external, "VIGIL_KAFKA_BOOTSTRAP"
        return
    bootstrap = launcher.start(state_dir)
    try:
        yield bootstrap, f"deploy/kafka/launcher.py (state {state_dir})"
    finally:
        if not keep:
            launcher.stop(state_dir)


class Kafka:
    """kafka-python admin calls the benchmark needs: partitions, end and committed offsets."""

    def __init__(self, bootstrap: str) -> None:
        from kafka import KafkaAdminClient

        self.admin = KafkaAdminClient(bootstrap_servers=bootstrap, client_id="vigil-bench")
        self._parts: dict[str, list[int]] = {}

    def close(self) -> None:
        self.admin.close()

    def partitions(self, topic: str) -> list[int]:
        if topic not in self._parts:
            try:
                meta = self.admin.describe_topics([topic])
            except Exception:  # not created (yet): nothing to wait for on it
                return []
            parts = sorted(
                p["partition_index"]
                for t in meta
                if not t.get("error_code")
                for p in t.get("partitions") or []
            )
            if not parts:
                return []
            self._parts[topic] = parts
        return self._parts[topic]

    def ends(self, topics: Sequence[str]) -> dict[tuple[str, int], int]:
        from kafka import TopicPartition
        from kafka.admin import OffsetSpec

        specs = {
            TopicPartition(t, p): OffsetSpec.LATEST for t in topics for p in self.partitions(t)
        }
        if not specs:
            return {}
        got = self.admin.list_partition_offsets(specs)
        return {(tp.topic, tp.partition): int(o.offset) for tp, o in got.items()}

    def committed(self, group: str) -> dict[tuple[str, int], int]:
        got = self.admin.list_group_offsets(group).get(group, {})
        return {(tp.topic, tp.partition): int(o.offset) for tp, o in got.items() if o.offset >= 0}

    def assigned_topics(self, group: str) -> set[str]:
        """Topics the group's members are assigned (what the worker consumes, plus its table
        changelogs and Faust's leader topic)."""
        desc = self.admin.describe_groups([group]).get(group, {})
        out: set[str] = set()
        for member in desc.get("members") or []:
            for a in (member.get("member_assignment") or {}).get("assigned_partitions") or []:
                out.add(a["topic"])
        return out

    def delete_topics(self, names: Sequence[str]) -> None:
        existing = set(self.admin.list_topics())
        doomed = [n for n in names if n in existing]
        if doomed:
            with contextlib.suppress(Exception):
                self.admin.delete_topics(doomed, raise_errors=False)


def lag_by_topic(
    ends: Mapping[tuple[str, int], int], committed: Mapping[tuple[str, int], int]
) -> dict[str, int]:
    """Records not yet committed, per topic: Σ over its partitions of ``end - committed``.

    A partition without a committed offset counts from 0 (the benchmark's topics are fresh, so
    their log starts at 0); a committed offset past the end (it cannot be, unless the end was
    read first) counts as 0."""
    out: dict[str, int] = {}
    for (topic, part), end in ends.items():
        done = committed.get((topic, part), 0)
        out[topic] = out.get(topic, 0) + max(0, end - done)
    return out


def produce(bootstrap: str, topic: str, path: Path, partitions: int) -> dict[str, Any]:
    """Create ``topic`` and produce the file into it as ``vigil replay`` does (keyed by
    conversation id)."""
    from kafka import KafkaAdminClient
    from kafka.admin import NewTopic

    from services.settings import Settings
    from services.streaming.admin import replay

    admin = KafkaAdminClient(bootstrap_servers=bootstrap, client_id="vigil-bench")
    try:
        admin.create_topics([NewTopic(topic, num_partitions=partitions, replication_factor=1)])
    finally:
        admin.close()
    t0 = time.monotonic()
    with open(path, "rb") as fh:
        result = replay(
            Settings(kafka_bootstrap=bootstrap),
            ((i, ln.rstrip(b"\n")) for i, ln in enumerate(fh, start=1) if ln.strip()),
            topic,
            source=path.name,
        )
    if result.too_large:
        raise RuntimeError(f"{len(result.too_large)} lines too large for {topic}")
    return {"events": result.sent, "seconds": time.monotonic() - t0, "bytes": path.stat().st_size}


async def _bare(bootstrap: str, topic: str, partitions: int, expect: int) -> dict[str, Any]:
    from aiokafka import AIOKafkaConsumer, TopicPartition

    consumer = AIOKafkaConsumer(
        bootstrap_servers=bootstrap, group_id=None, enable_auto_commit=False
    )
    await consumer.start()
    try:
        tps = [TopicPartition(topic, p) for p in range(partitions)]
        consumer.assign(tps)
        await consumer.seek_to_beginning(*tps)
        n = nbytes = 0
        t0, c0 = time.perf_counter(), time.process_time()
        while n < expect:
            batch = await consumer.getmany(timeout_ms=1000, max_records=10_000)
            for messages in batch.values():
                for m in messages:
                    json.loads(m.value)
                    nbytes += len(m.value)
                n += len(messages)
        wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    finally:
        await consumer.stop()
    return {"events": n, "bytes": nbytes, "wall_s": wall, "cpu_s": cpu}


def bare_consume(
    bootstrap: str, topic: str, partitions: int, expect: int, cpu: int | None
) -> dict[str, Any]:
    """The ceiling: a fresh aiokafka consumer in its own (pinned) process reads the topic from
    the start and ``json.loads`` every message; events, bytes, wall and CPU seconds of the
    reading loop only (imports and connecting left out)."""
    cmd = [sys.executable, __file__, bootstrap, topic, str(partitions), str(expect)]
    res = subprocess.run(pinned(cmd, cpu), capture_output=True, text=True, timeout=3600)
    if res.returncode != 0:
        raise SystemExit(f"bare consumer failed:\n{res.stderr[-3000:]}")
    out: dict[str, Any] = json.loads(res.stdout.strip().splitlines()[-1])
    return out


if __name__ == "__main__":  # the bare consumer's own process
    _bootstrap, _topic, _parts, _expect = sys.argv[1:5]
    print(json.dumps(asyncio.run(_bare(_bootstrap, _topic, int(_parts), int(_expect)))))
