"""The Alertmanager API v2 client against httpx mock transports (the real server: tests/e2e)."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
import pytest

from schemas.alerts import Alert, CusumEvidence, DetectorSettings
from services.alerting import (
    AlertmanagerClient,
    AlertmanagerConfig,
    AlertmanagerRejected,
    AlertmanagerUnavailable,
    AsyncAlertmanagerClient,
    to_payload,
)

T0 = datetime(2024, 5, 1, 12, 0, tzinfo=UTC)
NOW = datetime(2024, 5, 1, 12, 1, 5, tzinfo=UTC)
CONFIG = AlertmanagerConfig(
    url="http://am.test:9093/",
    generator_url="http://vigil.test/alerts",
    severity_by_category={"secret": "critical"},
    firing_ttl_seconds=600,
    jitter=False,
    backoff_base_seconds=0.5,
    max_retries=2,
)


def make_alert(state: str = "firing", **over: Any) -> Alert:
    fields: dict[str, Any] = {
        "alert_id": "0123456789abcdef0123456789abcdef",
        "category": "pii",
        "tenant": "acme",
        "direction": "leak",
        "state": state,
        "window_start": T0,
        "window_end": T0 + timedelta(seconds=60),
        "observed": 31,
        "expected": 10.25,
        "baseline_windows": 250,
        "test": "binomial",
        "messages": 1000,
        "p_value": 2.5e-7,
        "adjusted_threshold": 2e-5,
        "floor": 3,
        "fired_by": "window",
        "dispersion": 0.0,
        "variance_factor": 1.0,
        "cusum": CusumEvidence(
            statistic=15.0, threshold=10.0, ratio=3.0, windows=1, observed=31, expected=10.25
        ),
        "started_at": T0,
        "resolved_at": T0 + timedelta(seconds=60) if state == "resolved" else None,
        "settings": DetectorSettings(alpha=2e-5),
    }
    fields.update(over)
    return Alert(**fields)


def test_payload_of_a_firing_alert() -> None:
    [item] = to_payload([make_alert()], CONFIG, now=NOW)
    assert item["labels"] == {
        "alertname": "VigilLeakSpike",
        "category": "pii",
        "tenant": "acme",
        "direction": "leak",
        "severity": "warning",
    }
    assert item["startsAt"] == "2024-05-01T12:00:00Z"
    assert item["endsAt"] == "2024-05-01T12:11:05Z"  # now + firing TTL
    assert item["generatorURL"] == "http://vigil.test/alerts"
    notes = item["annotations"]
    assert notes["summary"] == (
        "pii leak findings spiking for tenant acme: 31 of 1000 messages in 60s, expected 10.2"
    )
    assert notes["description"] == (
        "Fired by the window test (this window's count alone). State firing at window "
        "2024-05-01T12:00:00Z. Window test (binomial, baseline of 250 windows): 31 observed, "
        "10.2 expected, p=2.5e-07 (threshold 2e-05 after bh correction at alpha=2e-05; floor 3). "
        "Evidence over windows (CUSUM for ×3): 31 observed, 10.2 expected in 1 windows; 15 of "
        "10 nats."
    )
    assert notes["alert_id"] == "0123456789abcdef0123456789abcdef"
    assert (notes["observed"], notes["expected"], notes["p_value"]) == ("31", "10.25", "2.5e-07")
    assert notes["test"] == "window" and notes["dispersion"] == "0"
    assert (notes["evidence_windows"], notes["evidence_observed"]) == ("1", "31")
    assert (notes["evidence_expected"], notes["cusum"]) == ("10.25", "15")


def test_payload_of_an_alert_fired_by_the_cusum_gives_the_evidence_over_windows() -> None:
    evidence = CusumEvidence(
        statistic=10.4, threshold=10.0, ratio=3.0, windows=7, observed=19, expected=6.2
    )
    alert = make_alert(
        fired_by="cusum",
        observed=3,
        messages=100,
        expected=0.9,
        p_value=0.06,
        dispersion=0.01,
        variance_factor=1.01,
        cusum=evidence,
    )
    [item] = to_payload([alert], CONFIG, now=NOW)
    notes = item["annotations"]
    assert notes["summary"] == (
        "pii leak findings spiking for tenant acme: 19 in the last 7 windows of 60s, expected 6.2"
    )
    assert notes["description"].startswith(
        "Fired by the CUSUM (evidence accumulated over windows). State firing"
    )
    assert "binomial allowing a rate variation of 10% between windows" in notes["description"]
    assert "19 observed, 6.2 expected in 7 windows; 10.4 of 10 nats" in notes["description"]
    assert notes["test"] == "cusum"
    assert (notes["evidence_windows"], notes["evidence_observed"]) == ("7", "19")
    assert notes["evidence_expected"] == "6.2"
    assert (notes["observed"], notes["expected"]) == ("3", "0.9")  # the window's own numbers


def test_payload_of_a_resolved_alert_ends_at_resolved_at() -> None:
    [item] = to_payload([make_alert("resolved", category="secret")], CONFIG, now=NOW)
    assert item["endsAt"] == "2024-05-01T12:01:00Z"
    assert item["labels"]["severity"] == "critical"


def test_payload_without_generator_url_omits_it() -> None:
    config = CONFIG.model_copy(update={"generator_url": None})
    assert "generatorURL" not in to_payload([make_alert()], config, now=NOW)[0]


class Script:
    """A mock Alertmanager answering a fixed sequence of statuses (or raising errors)."""

    def __init__(self, *answers: int | Exception) -> None:
        self.answers = list(answers)
        self.requests: list[httpx.Request] = []

    def __call__(self, request: httpx.Request) -> httpx.Response:
        self.requests.append(request)
        answer = self.answers.pop(0)
        if isinstance(answer, Exception):
            raise answer
        body = "" if answer == 200 else f"status {answer} from the script"
        return httpx.Response(answer, text=body)


def sync_client(script: Script, sleeps: list[float], **over: Any) -> AlertmanagerClient:
    config = AlertmanagerConfig.model_validate({**CONFIG.model_dump(), **over})
    return AlertmanagerClient(config, transport=httpx.MockTransport(script), sleep=sleeps.append)


def test_push_posts_the_payload_to_api_v2() -> None:
    script = Script(200)
    sleeps: list[float] = []
    with sync_client(script, sleeps, bearer_token="s3cret") as client:
        client.push([make_alert()], now=NOW)
    [request] = script.requests
    assert request.method == "POST"
    assert str(request.url) == "http://am.test:9093/api/v2/alerts"
    assert request.headers["authorization"] == "Bearer s3cret"
    assert request.headers["content-type"] == "application/json"
    assert json.loads(request.content) == to_payload([make_alert()], CONFIG, now=NOW)
    assert sleeps == []


def test_nothing_to_push_makes_no_request() -> None:
    script: Script = Script()
    with sync_client(script, []) as client:
        client.push([])
    assert script.requests == []


def test_retryable_failures_are_retried_with_backoff() -> None:
    script = Script(503, httpx.ConnectError("refused"), 200)
    sleeps: list[float] = []
    with sync_client(script, sleeps) as client:
        client.push([make_alert()])
    assert len(script.requests) == 3
    assert sleeps == [0.5, 1.0]


def test_a_rejection_is_not_retried_and_says_why() -> None:
    script = Script(400)
    sleeps: list[float] = []
    with sync_client(script, sleeps) as client, pytest.raises(AlertmanagerRejected) as info:
        client.push([make_alert()])
    assert str(info.value) == (
        "Alertmanager at http://am.test:9093/api/v2/alerts rejected the alerts: "
        "HTTP 400: status 400 from the script"
    )
    assert info.value.status == 400 and len(script.requests) == 1 and sleeps == []


def test_giving_up_after_max_retries() -> None:
    script = Script(503, 429, httpx.ReadTimeout("slow"))
    sleeps: list[float] = []
    with sync_client(script, sleeps) as client, pytest.raises(AlertmanagerUnavailable) as info:
        client.push([make_alert()])
    assert info.value.attempts == 3 and len(script.requests) == 3
    assert "ReadTimeout: slow" in str(info.value)
    assert sleeps == [0.5, 1.0]


async def test_async_client_pushes_and_retries() -> None:
    script = Script(502, 200)
    sleeps: list[float] = []

    async def sleep(seconds: float) -> None:
        sleeps.append(seconds)

    transport = httpx.MockTransport(script)
    async with AsyncAlertmanagerClient(CONFIG, transport=transport, sleep=sleep) as client:
        await client.push([make_alert(), make_alert("resolved")], now=NOW)
    assert len(script.requests) == 2 and sleeps == [0.5]
    sent = json.loads(script.requests[-1].content)
    assert [item["endsAt"] for item in sent] == ["2024-05-01T12:11:05Z", "2024-05-01T12:01:00Z"]


async def test_async_client_rejection() -> None:
    script = Script(422)

    async def sleep(seconds: float) -> None:
        raise AssertionError("a rejection must not be retried")

    transport = httpx.MockTransport(script)
    async with AsyncAlertmanagerClient(CONFIG, transport=transport, sleep=sleep) as client:
        with pytest.raises(AlertmanagerRejected, match="HTTP 422"):
            await client.push([make_alert()])
