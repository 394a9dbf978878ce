"""Push :class:`~schemas.alerts.Alert` events to Alertmanager's API v2 (``POST /api/v2/alerts``).

Alertmanager identifies an alert by its labels: ``alertname`` (``VigilLeakSpike`` by default),
``category``, ``tenant``, ``direction`` and ``severity``; the numbers of the decision travel as
annotations: which test fired (``test``: ``window``, ``cusum`` or ``both``), the window's
``observed``/``expected``/``p_value``, the evidence over windows (``evidence_windows``,
``evidence_observed``, ``evidence_expected``, ``cusum``) and the ``dispersion`` allowed for.
A ``firing`` alert is sent with ``endsAt = now + firing_ttl_seconds``: Alertmanager
resolves an alert whose ``endsAt`` has passed, so a worker that dies does not leave a spike
firing forever — and a live worker must re-send :meth:`Detector.firing` more often than the TTL
(every window is plenty). A ``resolved`` alert is sent with ``endsAt = resolved_at``.

Retried with exponential back-off: connection errors, timeouts, 429 and 5xx. Not retried: other
statuses (the request is wrong; Alertmanager's reason is in the error). The sync and async
clients share the payload and the retry policy; they differ only in how they wait and send.
"""

from __future__ import annotations

import asyncio
import math
import random
import time
from collections.abc import Awaitable, Callable, Sequence
from datetime import UTC, datetime, timedelta
from types import TracebackType
from typing import Any, Self

import httpx
from pydantic import BaseModel, ConfigDict, Field, SecretStr

from schemas.alerts import Alert
from schemas.outputs import Category
from services.judge.backoff import backoff_delay

__all__ = [
    "AlertmanagerClient",
    "AlertmanagerConfig",
    "AlertmanagerError",
    "AlertmanagerRejected",
    "AlertmanagerUnavailable",
    "AsyncAlertmanagerClient",
    "to_payload",
]

_PATH = "/api/v2/alerts"
_USER_AGENT = "vigil-alerting/1"
_MAX_DETAIL = 500


class AlertmanagerError(Exception):
    """Alertmanager did not take the alerts."""


class AlertmanagerRejected(AlertmanagerError):
    """Alertmanager answered with a status that retrying will not change (e.g. 400)."""

    def __init__(self, url: str, status: int, detail: str) -> None:
        super().__init__(f"Alertmanager at {url} rejected the alerts: HTTP {status}: {detail}")
        self.status = status
        self.detail = detail


class AlertmanagerUnavailable(AlertmanagerError):
    """Every attempt failed with a retryable error (network, timeout, 429 or 5xx)."""

    def __init__(self, url: str, attempts: int, last: str) -> None:
        super().__init__(f"Alertmanager at {url} unavailable after {attempts} attempts: {last}")
        self.attempts = attempts
        self.last = last


class AlertmanagerConfig(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    url: str = Field(description="Base URL, e.g. http://alertmanager:9093")
    alertname: str = "VigilLeakSpike"
    severity: str = "warning"
    severity_by_category: dict[Category, str] = Field(default_factory=dict)
    generator_url: str | None = Field(default=None, description="Link back to Vigil, if any.")
    firing_ttl_seconds: float = Field(default=900.0, gt=0)
    timeout_seconds: float = Field(default=5.0, gt=0)
    max_retries: int = Field(default=3, ge=0)
    backoff_base_seconds: float = Field(default=0.5, ge=0)
    backoff_max_seconds: float = Field(default=10.0, ge=0)
    jitter: bool = True
    bearer_token: SecretStr | None = None


def _rfc3339(ts: datetime) -> str:
    return ts.astimezone(UTC).isoformat().replace("+00:00", "Z")


def to_payload(
    alerts: Sequence[Alert], config: AlertmanagerConfig, *, now: datetime | None = None
) -> list[dict[str, Any]]:
    """The JSON body of ``POST /api/v2/alerts`` for ``alerts``."""
    now = now or datetime.now(UTC)
    body = []
    for a in alerts:
        labels = {
            "alertname": config.alertname,
            "category": a.category,
            "tenant": a.tenant,
            "direction": a.direction,
            "severity": config.severity_by_category.get(a.category, config.severity),
        }
        annotations = {
            "summary": _summary(a),
            "description": _description(a),
            "alert_id": a.alert_id,
            "observed": str(a.observed),
            "expected": f"{a.expected:.6g}",
            "p_value": f"{a.p_value:.6g}",
            "test": a.fired_by,
            "dispersion": f"{a.dispersion:.6g}",
        }
        if a.cusum is not None:
            annotations |= {
                "evidence_windows": str(a.cusum.windows),
                "evidence_observed": str(a.cusum.observed),
                "evidence_expected": f"{a.cusum.expected:.6g}",
                "cusum": f"{a.cusum.statistic:.6g}",
            }
        ends = (
            a.resolved_at
            if a.resolved_at is not None
            else (now + timedelta(seconds=config.firing_ttl_seconds))
        )
        item: dict[str, Any] = {
            "labels": labels,
            "annotations": annotations,
            "startsAt": _rfc3339(a.started_at),
            "endsAt": _rfc3339(ends),
        }
        if config.generator_url:
            item["generatorURL"] = config.generator_url
        body.append(item)
    return body


def _summary(a: Alert) -> str:
    """One line: what spiked, and the evidence of the test that fired."""
    what = f"{a.category} {a.direction} findings spiking for tenant {a.tenant}: "
    if a.fired_by == "cusum" and a.cusum is not None:
        return (
            what + f"{a.cusum.observed} in the last {a.cusum.windows} windows of "
            f"{a.settings.window_seconds}s, expected {a.cusum.expected:.3g}"
        )
    share = f" of {a.messages} messages" if a.messages is not None else ""
    return what + (
        f"{a.observed}{share} in {a.settings.window_seconds}s, expected {a.expected:.3g}"
    )


def _description(a: Alert) -> str:
    """Both tests' numbers, whichever fired, and the settings they ran at."""
    dispersion = (
        f" allowing a rate variation of {math.sqrt(a.dispersion):.0%} between windows"
        if a.dispersion > 0
        else ""
    )
    lines = [
        f"Fired by the {_FIRED_BY[a.fired_by]}. State {a.state} at window "
        f"{_rfc3339(a.window_start)}.",
        f"Window test ({a.test}{dispersion}, baseline of {a.baseline_windows} windows): "
        f"{a.observed} observed, {a.expected:.3g} expected, p={a.p_value:.3g} (threshold "
        f"{a.adjusted_threshold:.3g} after {a.settings.correction} correction at "
        f"alpha={a.settings.alpha:g}; floor {a.floor}).",
    ]
    if a.cusum is not None:
        c = a.cusum
        lines.append(
            f"Evidence over windows (CUSUM for ×{c.ratio:g}): {c.observed} observed, "
            f"{c.expected:.3g} expected in {c.windows} windows; {c.statistic:.3g} of "
            f"{c.threshold:g} nats."
        )
    return " ".join(lines)


_FIRED_BY = {
    "window": "window test (this window's count alone)",
    "cusum": "CUSUM (evidence accumulated over windows)",
    "both": "window test and the CUSUM",
}


class _Policy:
    """What to do after one attempt: shared by both clients."""

    def __init__(self, config: AlertmanagerConfig, rng: random.Random | None) -> None:
        self.config = config
        self.rng = rng or random.Random()
        self.url = config.url.rstrip("/") + _PATH

    def client_kwargs(self) -> dict[str, Any]:
        headers = {"Content-Type": "application/json", "User-Agent": _USER_AGENT}
        if self.config.bearer_token is not None:
            headers["Authorization"] = f"Bearer {self.config.bearer_token.get_secret_value()}"
        return {
            "headers": headers,
            "timeout": httpx.Timeout(self.config.timeout_seconds),
            "follow_redirects": False,
        }

    def outcome(self, response: httpx.Response | None, error: Exception | None) -> str | None:
        """None when done; else the retryable failure. Raises for a non-retryable status."""
        if error is not None:
            return f"{type(error).__name__}: {error}"
        assert response is not None
        if response.is_success:
            return None
        detail = response.text[:_MAX_DETAIL].strip()
        if response.status_code == 429 or response.status_code >= 500:
            return f"HTTP {response.status_code}: {detail}"
        raise AlertmanagerRejected(self.url, response.status_code, detail)

    def delay(self, attempts: int, last: str) -> float:
        """The pause before the next attempt, or :class:`AlertmanagerUnavailable` when done."""
        if attempts > self.config.max_retries:
            raise AlertmanagerUnavailable(self.url, attempts, last)
        cfg = self.config
        return backoff_delay(
            attempts,
            cfg.backoff_base_seconds,
            cfg.backoff_max_seconds,
            jitter=cfg.jitter,
            rng=self.rng,
        )


class AlertmanagerClient:
    """Blocking client: ``with AlertmanagerClient(cfg) as am: am.push(alerts)``."""

    def __init__(
        self,
        config: AlertmanagerConfig,
        *,
        transport: httpx.BaseTransport | None = None,
        rng: random.Random | None = None,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self._policy = _Policy(config, rng)
        self._sleep = sleep
        self._client = httpx.Client(transport=transport, **self._policy.client_kwargs())

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self, t: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    def close(self) -> None:
        self._client.close()

    def push(self, alerts: Sequence[Alert], *, now: datetime | None = None) -> None:
        """Send ``alerts`` (nothing for an empty list). Raises :class:`AlertmanagerError`."""
        if not alerts:
            return
        body = to_payload(alerts, self._policy.config, now=now)
        attempt = 0
        while True:
            attempt += 1
            response, error = None, None
            try:
                response = self._client.post(self._policy.url, json=body)
            except (httpx.TimeoutException, httpx.NetworkError, httpx.RemoteProtocolError) as exc:
                error = exc
            last = self._policy.outcome(response, error)
            if last is None:
                return
            self._sleep(self._policy.delay(attempt, last))


class AsyncAlertmanagerClient:
    """Async client: ``async with AsyncAlertmanagerClient(cfg) as am: await am.push(alerts)``."""

    def __init__(
        self,
        config: AlertmanagerConfig,
        *,
        transport: httpx.AsyncBaseTransport | None = None,
        rng: random.Random | None = None,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
    ) -> None:
        self._policy = _Policy(config, rng)
        self._sleep = sleep
        self._client = httpx.AsyncClient(transport=transport, **self._policy.client_kwargs())

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self, t: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        await self._client.aclose()

    async def push(self, alerts: Sequence[Alert], *, now: datetime | None = None) -> None:
        """Send ``alerts`` (nothing for an empty list). Raises :class:`AlertmanagerError`."""
        if not alerts:
            return
        body = to_payload(alerts, self._policy.config, now=now)
        attempt = 0
        while True:
            attempt += 1
            response, error = None, None
            try:
                response = await self._client.post(self._policy.url, json=body)
            except (httpx.TimeoutException, httpx.NetworkError, httpx.RemoteProtocolError) as exc:
                error = exc
            last = self._policy.outcome(response, error)
            if last is None:
                return
            await self._sleep(self._policy.delay(attempt, last))
