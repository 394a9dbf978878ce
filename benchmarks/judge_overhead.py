"""What the judge client costs per call, against the loopback judge of the test suite.

Rows: a healthy judge (one at a time, and a batch through ``judge_many``), cache hits, calls
refused by the open circuit, a judge that is down (connection refused), and a judge that hangs
(every call waits for its timeout). The point of the last three: with the judge unusable a call
costs microseconds once the breaker is open, and the worst case is bounded by the configuration.
Loopback numbers measure the client and the stdlib server, not a real model.

    .venv/bin/python benchmarks/judge_overhead.py [--calls N]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import time
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
if str(REPO_ROOT) not in sys.path:  # runnable as a script from anywhere
    sys.path.insert(0, str(REPO_ROOT))

from services.judge import Judge, JudgeConfig, JudgeRequest, judge_many  # noqa: E402
from tests.support.judge_server import JudgeServer  # noqa: E402

PREMISE = "The maximum dose of paracetamol is 4 g per day for adults."


def _config(server: JudgeServer, **overrides: object) -> JudgeConfig:
    settings: dict[str, object] = {
        "url": server.url,
        "timeout_seconds": 1.0,
        "max_retries": 0,
        "backoff_base_seconds": 0.0,
        "breaker_failure_threshold": 5,
        "breaker_reset_seconds": 60.0,
    }
    settings.update(overrides)
    return JudgeConfig.model_validate(settings)


async def _sequential(config: JudgeConfig, calls: int, *, same: bool = False) -> list[float]:
    times: list[float] = []
    async with Judge(config) as judge:
        for i in range(calls):
            hypothesis = "maximum dose" if same else f"claim number {i}"
            started = time.perf_counter()
            await judge.judge(PREMISE, hypothesis, "en")
            times.append(time.perf_counter() - started)
    return times


async def _after_breaker_opens(config: JudgeConfig, calls: int) -> list[float]:
    times: list[float] = []
    async with Judge(config) as judge:
        for i in range(config.breaker_failure_threshold):
            await judge.judge(PREMISE, f"opening {i}", "en")
        for i in range(calls):
            started = time.perf_counter()
            result = await judge.judge(PREMISE, f"claim number {i}", "en")
            times.append(time.perf_counter() - started)
            assert result.outcome == "circuit_open"
    return times


def _row(name: str, times: list[float]) -> str:
    ordered = sorted(times)
    p50 = statistics.median(ordered) * 1e6
    p99 = ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))] * 1e6
    return f"| {name} | {len(times)} | {p50:,.0f} | {p99:,.0f} |"


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--calls", type=int, default=500)
    args = parser.parse_args(argv)
    calls = args.calls
    rows: list[str] = []
    with JudgeServer() as server:
        config = _config(server)
        rows.append(_row("healthy, one at a time", asyncio.run(_sequential(config, calls))))
        rows.append(_row("cache hit", asyncio.run(_sequential(config, calls, same=True))[1:]))
        server.set_mode("failing")
        rows.append(_row("circuit open", asyncio.run(_after_breaker_opens(config, calls))))
        server.set_mode("down")
        down = _config(server, breaker_failure_threshold=10**6)
        rows.append(_row("down, breaker never opens", asyncio.run(_sequential(down, calls))))
        server.set_mode("slow", slow_seconds=5.0)
        hanging = _config(server, timeout_seconds=0.05, breaker_failure_threshold=10**6)
        rows.append(_row("hanging, timeout 50 ms", asyncio.run(_sequential(hanging, 20))))
        server.set_mode("healthy")
        batch = [JudgeRequest(premise=PREMISE, hypothesis=f"claim {i}") for i in range(calls)]
        started = time.perf_counter()
        judge_many(batch, _config(server, max_concurrency=8))
        batch_seconds = time.perf_counter() - started
    print("| case | calls | p50 µs | p99 µs |")
    print("|---|---:|---:|---:|")
    print("\n".join(rows))
    print(
        f"\njudge_many, {calls} distinct pairs, max_concurrency 8: {batch_seconds:.2f} s "
        f"({calls / batch_seconds:,.0f} calls/s)"
    )


if __name__ == "__main__":
    main()
