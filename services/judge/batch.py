"""A synchronous entry point for ``vigil scan``: judge a batch on a private event loop."""

from __future__ import annotations

import asyncio
from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor

from services.judge.client import Judge
from services.judge.config import JudgeConfig
from services.judge.metrics import JudgeMetrics
from services.judge.result import JudgeRequest, JudgeResult

__all__ = ["judge_many"]


def judge_many(
    requests: Iterable[JudgeRequest],
    config: JudgeConfig,
    *,
    metrics: JudgeMetrics | None = None,
) -> list[JudgeResult]:
    """Judge every request, at most ``config.max_concurrency`` at a time; results in order.

    Runs its own event loop. Called from a thread that already runs one (a notebook, a Faust
    agent), it runs that loop in a helper thread instead of failing. The client, its cache and its
    breaker live for this one batch.
    """
    batch = list(requests)
    if not batch:
        return []

    async def run() -> list[JudgeResult]:
        async with Judge(config, metrics=metrics) as judge:
            return await judge.judge_all(batch)

    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(run())
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="vigil-judge") as pool:
        return pool.submit(lambda: asyncio.run(run())).result()
