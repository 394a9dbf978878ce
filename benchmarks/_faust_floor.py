"""Faust's own cost per message: a Faust app that only ``json.loads`` each record of a topic.

Two ways of receiving the records, each in a fresh process and consumer group, measured from
the first record to the last (imports, joining and assignment left out), CPU of every thread:

- ``agent``: an agent over ``stream.take_events(500, within=0.05)``, as the worker's agents
  received their records before ``services/streaming/batches.py``;
- ``route``: the worker's :class:`~services.streaming.batches.BatchConsumer` handing each
  fetched batch of a routed topic to one coroutine (``BatchRoutes``), as the worker does now.

Run by ``benchmarks/streaming.py`` beside the bare aiokafka consumer (the ceiling), so the three
are measured on one topic in one run; by hand::

    python benchmarks/_faust_floor.py BOOTSTRAP TOPIC EVENTS agent|route
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from _procs import pinned

MODES = ("agent", "route")


def floor(bootstrap: str, topic: str, expect: int, mode: str, cpu: int | None) -> dict[str, Any]:
    """One mode's run in its own (pinned) process; its figures."""
    cmd = [sys.executable, __file__, bootstrap, topic, str(expect), mode]
    res = subprocess.run(pinned(cmd, cpu), capture_output=True, text=True, timeout=1800)
    # Faust hands a worker's stdout to its logger: the figures are a log line's JSON.
    found = [
        ln[ln.index('{"mode"') :]
        for ln in (res.stdout + res.stderr).splitlines()
        if '{"mode"' in ln
    ]
    if res.returncode != 0 or not found:
        raise SystemExit(f"Faust floor ({mode}) failed:\n{res.stdout[-2000:]}{res.stderr[-3000:]}")
    out: dict[str, Any] = json.loads(found[-1])
    return out


def _app(bootstrap: str, topic: str, expect: int, mode: str) -> Any:
    import faust

    from services.streaming.batches import BatchConsumer, BatchRoutes

    data = tempfile.mkdtemp(prefix="faust-floor-")
    app = faust.App(
        f"faust-floor-{uuid.uuid4().hex[:8]}",
        broker=f"kafka://{bootstrap}",
        store="memory://",
        web_enabled=False,
        datadir=data,
        key_serializer="raw",
        value_serializer="raw",
        producer_linger_ms=5,
    )
    source = app.topic(topic, key_type=bytes, value_type=bytes)
    seen = {"n": 0, "wall": 0.0, "cpu": 0.0}

    def took(n: int) -> None:
        if seen["n"] == 0:
            seen["wall"], seen["cpu"] = time.perf_counter(), time.process_time()
        seen["n"] += n
        if seen["n"] >= expect:
            wall = time.perf_counter() - seen["wall"]
            cpu = time.process_time() - seen["cpu"]
            result = {"mode": mode, "events": seen["n"], "wall_s": wall, "cpu_s": cpu}
            print(json.dumps(result), flush=True)
            os._exit(0)

    if mode == "agent":

        @app.agent(source, concurrency=1)
        async def agent(stream: Any) -> None:
            async for events in stream.take_events(500, within=0.05):
                for event in events:
                    json.loads(event.message.value)
                took(len(events))

    else:
        app.transport.Consumer = BatchConsumer

        async def process(records: Any, handle: Any, ack: Any) -> None:
            await handle(records)
            ack()

        async def handle(records: Any) -> None:
            for record in records:
                json.loads(record.value)
            took(len(records))

        app.vigil_routes = BatchRoutes(app, 500, process)
        app.vigil_routes.add(source, handle)
    return app


if __name__ == "__main__":
    _bootstrap, _topic, _expect, _mode = sys.argv[1:5]
    if _mode not in MODES:
        raise SystemExit(f"mode: one of {', '.join(MODES)}")
    _faust_app = _app(_bootstrap, _topic, int(_expect), _mode)
    sys.argv = [sys.argv[0], "worker", "--loglevel", "warn", "--without-web"]
    _faust_app.main()
