"""A judge for synchronous callers (``vigil scan``) that keeps its client, cache and circuit
breaker across calls, on a private event loop."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

from services.judge.client import Judge
from services.judge.config import JudgeConfig
from services.judge.metrics import JudgeMetrics
from services.judge.result import JudgeRequest, JudgeResult

__all__ = ["BlockingJudge"]


class BlockingJudge:
    """``run(requests)`` blocks until every request is judged (concurrently, capped).

    Unlike :func:`~services.judge.judge_many`, one client lives for the whole scan, so its cache
    and its circuit breaker carry over from answer to answer. Use as a context manager.
    """

    def __init__(self, config: JudgeConfig, *, metrics: JudgeMetrics | None = None) -> None:
        self._loop = asyncio.new_event_loop()
        self._judge = Judge(config, metrics=metrics)

    def run(self, requests: Sequence[JudgeRequest]) -> list[JudgeResult]:
        if not requests:
            return []
        return self._loop.run_until_complete(self._judge.judge_all(list(requests)))

    def close(self) -> None:
        if self._loop.is_closed():
            return
        self._loop.run_until_complete(self._judge.aclose())
        self._loop.close()

    def __enter__(self) -> BlockingJudge:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
