"""The HTTP judge against a real loopback server speaking both protocols (no mocks of httpx).

Every failure mode must end in ``unverified`` — never ``entailment`` — and the server's request
counter shows how many requests really went out (retries, breaker, cache).
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Iterator
from typing import Any

import pytest
from prometheus_client import CollectorRegistry

from services.judge import (
    OUTCOMES,
    Judge,
    JudgeConfig,
    JudgeMetrics,
    JudgeRequest,
    JudgeResult,
    judge_many,
)
from tests.support.judge_server import MALFORMED_KINDS, JudgeServer

PREMISE = "The maximum dose of paracetamol is 4 g per day for adults."
CASES = [
    ("maximum dose of paracetamol for adults", "entailment"),
    ("The maximum dose of paracetamol is 8 g per day.", "contradiction"),
    ("Paracetamol damages the liver.", "neutral"),
]
PROTOCOLS = ["entailment", "openai"]


@pytest.fixture
def server() -> Iterator[JudgeServer]:
    with JudgeServer() as srv:
        yield srv


def make_config(server: JudgeServer, **overrides: Any) -> JudgeConfig:
    settings: dict[str, Any] = {
        "url": server.url,
        "model": "judge-test",
        "timeout_seconds": 1.0,
        "max_retries": 2,
        "backoff_base_seconds": 0.01,
        "backoff_max_seconds": 0.05,
        "breaker_failure_threshold": 100,
        "breaker_reset_seconds": 0.2,
    }
    settings.update(overrides)
    return JudgeConfig(**settings)


def assert_unverified(result: JudgeResult, outcome: str) -> None:
    assert result.label == "unverified"
    assert result.score is None
    assert result.outcome == outcome
    assert not result.cached


# -- healthy ---------------------------------------------------------------------------------


@pytest.mark.parametrize(("hypothesis", "label"), CASES)
async def test_entailment_protocol(server: JudgeServer, hypothesis: str, label: str) -> None:
    async with Judge(make_config(server, protocol="entailment")) as judge:
        result = await judge.judge(PREMISE, hypothesis, "en")
    assert (result.label, result.outcome, result.attempts, result.cached) == (label, "ok", 1, False)
    assert result.score is not None and 0.0 <= result.score <= 1.0
    path, _, body = server.received[-1]
    assert path == "/v1/entailment"
    assert json.loads(body) == {"premise": PREMISE, "hypothesis": hypothesis, "language": "en"}
    assert server.requests == 1


@pytest.mark.parametrize(("hypothesis", "label"), CASES)
async def test_openai_protocol(hypothesis: str, label: str) -> None:
    with JudgeServer(api_key="s3cret") as server:
        config = make_config(server, protocol="openai", api_key="s3cret")
        async with Judge(config) as judge:
            result = await judge.judge(PREMISE, hypothesis, "nl")
        path, headers, body = server.received[-1]
    assert (result.label, result.outcome, result.attempts) == (label, "ok", 1)
    assert path == "/v1/chat/completions"
    assert headers["Authorization"] == "Bearer s3cret"
    sent = json.loads(body)
    assert sent["model"] == "judge-test"
    assert sent["temperature"] == 0
    assert sent["response_format"] == {"type": "json_object"}
    assert [m["role"] for m in sent["messages"]] == ["system", "user"]
    assert json.loads(sent["messages"][1]["content"]) == {
        "premise": PREMISE,
        "hypothesis": hypothesis,
        "language": "nl",
    }


async def test_wrong_api_key_is_a_4xx_not_retried() -> None:
    with JudgeServer(api_key="right") as server:
        config = make_config(server, protocol="openai", api_key="wrong")
        async with Judge(config) as judge:
            result = await judge.judge(PREMISE, "maximum dose", "en")
        assert server.requests == 1
    assert_unverified(result, "http_error")
    assert result.attempts == 1


async def test_entailment_below_threshold_is_neutral(server: JudgeServer) -> None:
    server.set_mode("healthy", entailment_score=0.4)
    async with Judge(make_config(server, entailment_threshold=0.5)) as judge:
        low = await judge.judge(PREMISE, "maximum dose of paracetamol", "en")
    assert (low.label, low.score, low.outcome) == ("neutral", 0.4, "ok")
    server.set_mode("healthy", entailment_score=0.5)
    async with Judge(make_config(server, entailment_threshold=0.5)) as judge:
        edge = await judge.judge(PREMISE, "maximum dose of paracetamol", "en")
    assert (edge.label, edge.score) == ("entailment", 0.5)


# -- slow, failing, flaky, malformed, down ---------------------------------------------------


@pytest.mark.parametrize("protocol", PROTOCOLS)
async def test_slow_judge_times_out_after_retries(server: JudgeServer, protocol: str) -> None:
    server.set_mode("slow", slow_seconds=5.0)
    config = make_config(server, protocol=protocol, timeout_seconds=0.1, max_retries=2)
    started = time.perf_counter()
    async with Judge(config) as judge:
        result = await judge.judge(PREMISE, CASES[0][0], "en")
    assert_unverified(result, "timeout")
    assert result.attempts == 3
    assert server.requests == 3
    assert time.perf_counter() - started < 1.5


@pytest.mark.parametrize("protocol", PROTOCOLS)
async def test_failing_judge_is_retried_then_unverified(server: JudgeServer, protocol: str) -> None:
    server.set_mode("failing", fail_status=503)
    async with Judge(make_config(server, protocol=protocol, max_retries=3)) as judge:
        result = await judge.judge(PREMISE, CASES[0][0], "en")
    assert_unverified(result, "http_error")
    assert result.attempts == 4
    assert server.requests == 4


async def test_flaky_judge_succeeds_after_retries(server: JudgeServer) -> None:
    server.set_mode("flaky", fail_first=2, fail_status=500)
    async with Judge(make_config(server, max_retries=3)) as judge:
        result = await judge.judge(PREMISE, CASES[0][0], "en")
    assert (result.label, result.outcome, result.attempts) == ("entailment", "ok", 3)
    assert server.requests == 3


async def test_flaky_judge_beyond_the_retry_budget_is_unverified(server: JudgeServer) -> None:
    server.set_mode("flaky", fail_first=3)
    async with Judge(make_config(server, max_retries=2)) as judge:
        result = await judge.judge(PREMISE, CASES[0][0], "en")
    assert_unverified(result, "http_error")
    assert server.requests == 3


@pytest.mark.parametrize("protocol", PROTOCOLS)
@pytest.mark.parametrize("kind", MALFORMED_KINDS)
async def test_malformed_reply_is_unverified_and_not_retried(
    server: JudgeServer, protocol: str, kind: str
) -> None:
    server.set_mode("malformed", malformed_kind=kind)
    async with Judge(make_config(server, protocol=protocol, max_retries=3)) as judge:
        result = await judge.judge(PREMISE, CASES[0][0], "en")
        again = await judge.judge(PREMISE, CASES[0][0], "en")
    assert_unverified(result, "malformed")
    assert result.attempts == 1
    assert_unverified(again, "malformed")  # a malformed verdict is not cached either
    assert server.requests == 2


async def test_reply_larger_than_the_limit_is_malformed(server: JudgeServer) -> None:
    config = make_config(server, protocol="openai", max_response_bytes=256)
    async with Judge(config) as judge:
        result = await judge.judge(PREMISE, "x" * 10, "en")
    assert_unverified(result, "malformed")


@pytest.mark.parametrize("protocol", PROTOCOLS)
async def test_down_judge_is_unverified(server: JudgeServer, protocol: str) -> None:
    async with Judge(make_config(server, protocol=protocol, max_retries=2)) as judge:
        assert (await judge.judge(PREMISE, CASES[0][0], "en")).outcome == "ok"
        server.set_mode("down")  # also cuts the kept-alive connection
        down = await judge.judge(PREMISE, CASES[1][0], "en")
        server.set_mode("healthy")
        back = await judge.judge(PREMISE, CASES[2][0], "en")
    assert_unverified(down, "connect_error")
    assert down.attempts == 3
    assert (back.label, back.outcome) == ("neutral", "ok")
    assert server.requests == 2


async def test_nothing_listening_is_unverified() -> None:
    server = JudgeServer().start()
    url = server.url
    server.stop()
    async with Judge(JudgeConfig(url=url, max_retries=1, backoff_base_seconds=0.01)) as judge:
        result = await judge.judge(PREMISE, CASES[0][0], "en")
    assert_unverified(result, "connect_error")
    assert result.attempts == 2


# -- status codes ----------------------------------------------------------------------------


@pytest.mark.parametrize("status", [400, 403, 404, 413, 422])
async def test_client_errors_are_not_retried(server: JudgeServer, status: int) -> None:
    server.set_mode("failing", fail_status=status)
    config = make_config(server, max_retries=3, breaker_failure_threshold=1)
    async with Judge(config) as judge:
        result = await judge.judge(PREMISE, CASES[0][0], "en")
        assert judge.breaker.state == "closed"  # about the request, not the judge's health
    assert_unverified(result, "http_error")
    assert result.attempts == 1
    assert server.requests == 1


async def test_429_honours_a_small_retry_after(server: JudgeServer) -> None:
    server.set_mode("failing", fail_status=429, retry_after="0.1")
    config = make_config(server, max_retries=2, backoff_base_seconds=0.0, backoff_max_seconds=0.5)
    async with Judge(config) as judge:
        result = await judge.judge(PREMISE, CASES[0][0], "en")
    assert_unverified(result, "http_error")
    assert result.attempts == 3
    assert result.seconds >= 0.2
    assert server.requests == 3


async def test_retry_after_longer_than_we_wait_ends_the_call(server: JudgeServer) -> None:
    server.set_mode("failing", fail_status=503, retry_after="60")
    async with Judge(make_config(server, max_retries=3)) as judge:
        result = await judge.judge(PREMISE, CASES[0][0], "en")
    assert_unverified(result, "http_error")
    assert result.attempts == 1
    assert result.seconds < 1.0


# -- circuit breaker -------------------------------------------------------------------------


async def test_breaker_opens_blocks_and_closes_after_a_good_trial(server: JudgeServer) -> None:
    server.set_mode("failing")
    config = make_config(server, max_retries=0, breaker_failure_threshold=2)
    async with Judge(config) as judge:
        first = [await judge.judge(PREMISE, f"claim {i}", "en") for i in range(2)]
        assert [r.outcome for r in first] == ["http_error", "http_error"]
        assert judge.breaker.state == "open"

        blocked = [await judge.judge(PREMISE, f"other claim {i}", "en") for i in range(5)]
        for result in blocked:
            assert_unverified(result, "circuit_open")
            assert result.attempts == 0
        assert server.requests == 2  # nothing reached the server while open

        server.set_mode("healthy")
        await asyncio.sleep(0.25)
        assert judge.breaker.state == "half_open"
        trial = await judge.judge(PREMISE, CASES[0][0], "en")
        assert (trial.label, trial.outcome) == ("entailment", "ok")
        assert judge.breaker.state == "closed"
        after = await judge.judge(PREMISE, CASES[2][0], "en")
        assert after.outcome == "ok"
    assert server.requests == 4


async def test_failed_trial_reopens_the_breaker(server: JudgeServer) -> None:
    server.set_mode("failing")
    config = make_config(server, max_retries=0, breaker_failure_threshold=1)
    async with Judge(config) as judge:
        assert (await judge.judge(PREMISE, "a claim", "en")).outcome == "http_error"
        await asyncio.sleep(0.25)
        trial = await judge.judge(PREMISE, "a claim", "en")
        assert_unverified(trial, "http_error")
        assert trial.attempts == 1
        assert judge.breaker.state == "open"
        assert_unverified(await judge.judge(PREMISE, "a claim", "en"), "circuit_open")
    assert server.requests == 2


async def test_half_open_lets_exactly_one_trial_through(server: JudgeServer) -> None:
    server.set_mode("failing")
    config = make_config(server, max_retries=0, breaker_failure_threshold=1)
    async with Judge(config) as judge:
        await judge.judge(PREMISE, "a claim", "en")
        server.set_mode("slow", slow_seconds=0.2)
        await asyncio.sleep(0.25)
        results = await asyncio.gather(
            *(judge.judge(PREMISE, f"claim number {i}", "en") for i in range(6))
        )
    outcomes = sorted(r.outcome for r in results)
    assert outcomes == ["circuit_open"] * 5 + ["ok"]
    assert server.requests == 2


async def test_timeouts_open_the_breaker(server: JudgeServer) -> None:
    server.set_mode("slow", slow_seconds=5.0)
    config = make_config(server, timeout_seconds=0.05, max_retries=0, breaker_failure_threshold=2)
    async with Judge(config) as judge:
        outcomes = [(await judge.judge(PREMISE, f"c{i}", "en")).outcome for i in range(4)]
    assert outcomes == ["timeout", "timeout", "circuit_open", "circuit_open"]
    # A request the client gave up on may reach the server's handler a little later on a busy
    # machine: wait for the two that were sent, then check that no third one came.
    for _ in range(100):
        if server.requests >= 2:
            break
        await asyncio.sleep(0.05)
    assert server.requests == 2


# -- cache and concurrency -------------------------------------------------------------------


async def test_cache_hit_makes_no_request(server: JudgeServer) -> None:
    async with Judge(make_config(server)) as judge:
        first = await judge.judge(PREMISE, CASES[1][0], "en")
        second = await judge.judge(PREMISE, CASES[1][0], "en")
        assert server.requests == 1
        other_language = await judge.judge(PREMISE, CASES[1][0], "nl")
        assert server.requests == 2
    assert (first.outcome, first.cached) == ("ok", False)
    assert (second.label, second.score, second.outcome) == ("contradiction", 0.9, "cached")
    assert second.cached and second.attempts == 0
    assert other_language.outcome == "ok"


async def test_cache_can_be_disabled(server: JudgeServer) -> None:
    async with Judge(make_config(server, cache_size=0)) as judge:
        for _ in range(3):
            assert (await judge.judge(PREMISE, CASES[0][0], "en")).outcome == "ok"
    assert server.requests == 3


async def test_failures_are_not_cached(server: JudgeServer) -> None:
    server.set_mode("failing")
    async with Judge(make_config(server, max_retries=0)) as judge:
        assert (await judge.judge(PREMISE, CASES[0][0], "en")).outcome == "http_error"
        server.set_mode("healthy")
        result = await judge.judge(PREMISE, CASES[0][0], "en")
    assert (result.label, result.outcome) == ("entailment", "ok")
    assert server.requests == 2


async def test_concurrency_cap_is_respected(server: JudgeServer) -> None:
    server.set_mode("slow", slow_seconds=0.15)
    async with Judge(make_config(server, max_concurrency=3, timeout_seconds=2.0)) as judge:
        results = await asyncio.gather(
            *(judge.judge(PREMISE, f"claim number {i}", "en") for i in range(9))
        )
    assert all(r.outcome == "ok" for r in results)
    assert server.requests == 9
    assert server.max_in_flight == 3


async def test_judge_all_keeps_order_and_cap(server: JudgeServer) -> None:
    server.set_mode("slow", slow_seconds=0.05)
    requests = [JudgeRequest(premise=PREMISE, hypothesis=h, language="en") for h, _ in CASES * 3]
    async with Judge(make_config(server, max_concurrency=2, cache_size=0)) as judge:
        results = await judge.judge_all(requests)
    assert [r.label for r in results] == [label for _, label in CASES * 3]
    assert server.max_in_flight == 2


# -- sync batch entry point ------------------------------------------------------------------


def test_judge_many_in_order(server: JudgeServer) -> None:
    requests = [JudgeRequest(premise=PREMISE, hypothesis=h, language="en") for h, _ in CASES]
    results = judge_many(requests, make_config(server, max_concurrency=2))
    assert [r.label for r in results] == [label for _, label in CASES]
    assert judge_many([], make_config(server)) == []


def test_judge_many_with_the_judge_down(server: JudgeServer) -> None:
    server.set_mode("down")
    requests = [JudgeRequest(premise=PREMISE, hypothesis=h) for h, _ in CASES]
    results = judge_many(requests, make_config(server, max_retries=0))
    assert [(r.label, r.outcome) for r in results] == [("unverified", "connect_error")] * 3


async def test_judge_many_from_inside_a_running_loop(server: JudgeServer) -> None:
    requests = [JudgeRequest(premise=PREMISE, hypothesis=CASES[0][0])]
    results = judge_many(requests, make_config(server))
    assert [r.label for r in results] == ["entailment"]


# -- metrics ---------------------------------------------------------------------------------


async def test_metrics_count_calls_by_outcome(server: JudgeServer) -> None:
    registry = CollectorRegistry()
    metrics = JudgeMetrics(registry)
    for outcome in OUTCOMES:
        assert registry.get_sample_value("vigil_judge_calls_total", {"outcome": outcome}) == 0.0
    config = make_config(server, max_retries=0, breaker_failure_threshold=1)
    async with Judge(config, metrics=metrics) as judge:
        await judge.judge(PREMISE, CASES[0][0], "en")  # ok
        await judge.judge(PREMISE, CASES[0][0], "en")  # cached
        server.set_mode("malformed")
        await judge.judge(PREMISE, CASES[1][0], "en")  # malformed → breaker opens
        await judge.judge(PREMISE, CASES[2][0], "en")  # circuit_open
        await judge.judge(PREMISE, CASES[0][0], "en")  # cached even while open

    def count(outcome: str) -> float | None:
        return registry.get_sample_value("vigil_judge_calls_total", {"outcome": outcome})

    assert {o: count(o) for o in OUTCOMES} == {
        "ok": 1.0,
        "timeout": 0.0,
        "http_error": 0.0,
        "connect_error": 0.0,
        "malformed": 1.0,
        "circuit_open": 1.0,
        "cached": 2.0,
    }
    assert registry.get_sample_value("vigil_judge_seconds_count") == 2.0  # the two real calls
    seconds = registry.get_sample_value("vigil_judge_seconds_sum")
    assert seconds is not None and 0.0 < seconds < 2.0


async def test_cancelled_trial_frees_the_half_open_slot(server: JudgeServer) -> None:
    server.set_mode("failing")
    config = make_config(server, max_retries=0, breaker_failure_threshold=1)
    async with Judge(config) as judge:
        await judge.judge(PREMISE, "a claim", "en")
        server.set_mode("slow", slow_seconds=5.0)
        await asyncio.sleep(0.25)
        trial = asyncio.create_task(judge.judge(PREMISE, "the trial", "en"))
        await asyncio.sleep(0.1)
        assert (await judge.judge(PREMISE, "while trial", "en")).outcome == "circuit_open"
        trial.cancel()
        with pytest.raises(asyncio.CancelledError):
            await trial
        server.set_mode("healthy")
        result = await judge.judge(PREMISE, CASES[0][0], "en")
    assert (result.label, result.outcome) == ("entailment", "ok")
    assert judge.breaker.state == "closed"
