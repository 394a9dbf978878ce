"""The async judge client: one ``httpx.AsyncClient``, bounded in every direction.

Per call: cache → circuit breaker → up to ``1 + max_retries`` attempts. Each attempt holds a slot
of the concurrency semaphore and is cut off after ``timeout_seconds`` (an ``asyncio.timeout`` on
top of httpx's own, so a server that trickles bytes cannot hold a slot longer). Back-off pauses do
not hold a slot.

Retried: connection errors, timeouts, 429 and 5xx (``Retry-After`` is honoured when it is at most
``backoff_max_seconds``; a longer one ends the call). Not retried: other statuses, and malformed
2xx replies (a deterministic judge would only repeat itself).

The breaker measures availability: a call fails when it ends in ``timeout``, ``connect_error``,
``malformed`` or a retried status. A verdict, or a 4xx that is about the request, proves the judge
is up.

Whatever goes wrong, the label is ``unverified`` — never ``entailment``.
"""

from __future__ import annotations

import asyncio
import random
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from types import TracebackType
from typing import Any, Self

import httpx

from schemas.verdicts import JudgeLabel
from services.judge.backoff import backoff_delay, retry_after_seconds
from services.judge.breaker import CircuitBreaker
from services.judge.cache import VerdictCache, cache_key
from services.judge.config import JudgeConfig
from services.judge.metrics import JudgeMetrics
from services.judge.protocols import PROTOCOLS, Verdict
from services.judge.result import JudgeOutcome, JudgeRequest, JudgeResult

__all__ = ["Judge"]

_USER_AGENT = "vigil-judge/1"


class _ReplyTooLarge(Exception):
    pass


@dataclass(frozen=True, slots=True)
class _Attempt:
    outcome: JudgeOutcome
    verdict: Verdict | None = None
    retryable: bool = False
    retry_after: float | None = None

    @property
    def judge_unavailable(self) -> bool:
        """Does this count against the judge in the circuit breaker?"""
        return self.outcome in ("timeout", "connect_error", "malformed") or self.retryable


class Judge:
    """Ask an HTTP judge whether a premise entails a hypothesis.

    Use as ``async with Judge(config) as judge: result = await judge.judge(p, h, "en")``, or call
    :meth:`aclose` when done. One instance per event loop.
    """

    def __init__(
        self,
        config: JudgeConfig,
        *,
        metrics: JudgeMetrics | None = None,
        transport: httpx.AsyncBaseTransport | None = None,
        rng: random.Random | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.config = config
        self._spec = PROTOCOLS[config.protocol]
        self._metrics = metrics
        self._rng = rng or random.Random()
        self._cache = VerdictCache(config.cache_size)
        self._breaker = CircuitBreaker(
            config.breaker_failure_threshold, config.breaker_reset_seconds, clock=clock
        )
        self._semaphore = asyncio.Semaphore(config.max_concurrency)
        headers = {"Accept": "application/json", "User-Agent": _USER_AGENT}
        if config.api_key is not None:
            headers["Authorization"] = f"Bearer {config.api_key.get_secret_value()}"
        self._client = httpx.AsyncClient(
            base_url=config.url,
            headers=headers,
            timeout=httpx.Timeout(config.timeout_seconds),
            limits=httpx.Limits(
                max_connections=config.max_concurrency,
                max_keepalive_connections=config.max_concurrency,
            ),
            transport=transport,
            follow_redirects=False,
        )

    @property
    def breaker(self) -> CircuitBreaker:
        return self._breaker

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        await self._client.aclose()

    async def judge(
        self, premise: str, hypothesis: str, language: str | None = None
    ) -> JudgeResult:
        """The verdict on one pair. Never raises for a judge failure; cancellation propagates."""
        started = time.perf_counter()
        cfg = self.config
        key = cache_key(cfg.protocol, cfg.model, premise, hypothesis, language)
        hit = self._cache.get(key)
        if hit is not None:
            return self._finish(started, "cached", hit, attempts=0)
        trial = self._breaker.state == "half_open"
        if not self._breaker.allow():
            return self._finish(started, "circuit_open", None, attempts=0)
        try:
            attempt, attempts = await self._call(premise, hypothesis, language)
        except BaseException:  # cancelled: a trial that never finished must not block the next
            if trial:
                self._breaker.release()
            raise
        if attempt.judge_unavailable:
            self._breaker.record_failure()
        else:
            self._breaker.record_success()
        if attempt.verdict is not None:
            self._cache.put(key, attempt.verdict)
        return self._finish(started, attempt.outcome, attempt.verdict, attempts)

    async def judge_all(self, requests: Sequence[JudgeRequest]) -> list[JudgeResult]:
        """Verdicts in request order, at most ``max_concurrency`` calls in flight."""
        results: list[JudgeResult | None] = [None] * len(requests)
        pending = iter(enumerate(requests))

        async def worker() -> None:
            for index, request in pending:
                results[index] = await self.judge(
                    request.premise, request.hypothesis, request.language
                )

        async with asyncio.TaskGroup() as group:
            for _ in range(min(self.config.max_concurrency, len(requests))):
                group.create_task(worker())
        return [result for result in results if result is not None]

    async def _call(
        self, premise: str, hypothesis: str, language: str | None
    ) -> tuple[_Attempt, int]:
        cfg = self.config
        body = self._spec.build(premise, hypothesis, language, cfg)
        attempts = 0
        while True:
            attempts += 1
            attempt = await self._attempt(body)
            if attempt.verdict is not None or not attempt.retryable or attempts > cfg.max_retries:
                return attempt, attempts
            delay = backoff_delay(
                attempts,
                cfg.backoff_base_seconds,
                cfg.backoff_max_seconds,
                jitter=cfg.jitter,
                rng=self._rng,
            )
            if attempt.retry_after is not None:
                if attempt.retry_after > cfg.backoff_max_seconds:
                    return attempt, attempts
                delay = attempt.retry_after
            await asyncio.sleep(delay)

    async def _attempt(self, body: dict[str, Any]) -> _Attempt:
        try:
            async with self._semaphore, asyncio.timeout(self.config.timeout_seconds):
                status, retry_after, content = await self._post(body)
        except (TimeoutError, httpx.TimeoutException):
            return _Attempt("timeout", retryable=True)
        except (httpx.NetworkError, httpx.RemoteProtocolError):
            return _Attempt("connect_error", retryable=True)
        except httpx.HTTPError:
            return _Attempt("connect_error")
        except _ReplyTooLarge:
            return _Attempt("malformed")
        if 200 <= status < 300:
            verdict = self._spec.parse(content)
            return _Attempt("ok", verdict=verdict) if verdict else _Attempt("malformed")
        if status == 429 or status >= 500:
            return _Attempt(
                "http_error", retryable=True, retry_after=retry_after_seconds(retry_after)
            )
        return _Attempt("http_error")

    async def _post(self, body: dict[str, Any]) -> tuple[int, str | None, bytes]:
        limit = self.config.max_response_bytes
        async with self._client.stream("POST", self._spec.path, json=body) as response:
            retry_after = response.headers.get("retry-after")
            if not response.is_success:
                return response.status_code, retry_after, b""
            chunks: list[bytes] = []
            size = 0
            async for chunk in response.aiter_bytes():
                size += len(chunk)
                if size > limit:
                    raise _ReplyTooLarge
                chunks.append(chunk)
            return response.status_code, retry_after, b"".join(chunks)

    def _finish(
        self, started: float, outcome: JudgeOutcome, verdict: Verdict | None, attempts: int
    ) -> JudgeResult:
        label: JudgeLabel = "unverified"
        score: float | None = None
        if verdict is not None:
            score = verdict.score
            label = verdict.label
            if label == "entailment" and score < self.config.entailment_threshold:
                label = "neutral"
        result = JudgeResult(
            label=label,
            score=score,
            outcome=outcome,
            cached=outcome == "cached",
            attempts=attempts,
            seconds=time.perf_counter() - started,
        )
        if self._metrics is not None:
            self._metrics.observe(result)
        return result
