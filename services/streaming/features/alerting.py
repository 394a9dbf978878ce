"""Leakage-spike detection in the worker (SPEC §7): windowed counts → one detector → alerts.

How the parts fit (``docs/alerting.md`` has the why)::

    screen_events ──after_screen──▶ table alerts-window-counts   (per input partition)
                                        │ timer: every ended window's totals, per partition
                                        ▼
                          topic vigil.alerts.counts (partition 0 only)
                                        │ agent, concurrency 1: the only owner of the detector
                                        ▼
    table alerts-detector ◀── Detector ──▶ topic vigil.alerts (Alert, keyed by alert_id)
                                        ├─▶ gauge vigil_spike_active{category,tenant}
                                        └─▶ Alertmanager API v2 (when configured)

- **Counting.** The ``after_screen`` hook adds each screened message to the tumbling window it
  was screened in (the worker's clock): one message per (tenant label, role), and per series
  (category, tenant label, direction) one message *with at least one finding* of that series —
  the binomial test needs a count of messages, at most the messages of the roles the direction
  applies to (``input``: user, system, tool; ``leak``, ``echo``, ``output``: assistant). The
  counts live in the Faust table ``alerts-window-counts``, one key per input partition, whose
  changelog makes them survive restarts; each key also remembers the last offset it counted, so
  a message redelivered after a crash is not counted twice.
- **Routing.** A timer sends the totals of every ended window of the partitions this worker
  owns to partition 0 of ``vigil.alerts.counts`` (again when late messages change them). The
  detector must see all series of a window together (multiple-testing control across series),
  so one agent instance reads that one partition and owns the detector; its state lives in the
  table ``alerts-detector`` (one key per series, plus the pending per-partition totals and the
  last closed window).
- **Closing.** A window is closed ``grace_seconds`` after it ends, by wall clock: the timer of
  the worker that owns the detector sends a tick while windows are pending. Per-partition totals
  are kept as sent (a re-send replaces them), so re-sends and redeliveries are harmless; totals
  of a window that is already closed are counted as late
  (``vigil_alert_late_reports_total``) and dropped. A window with no report at all (no traffic,
  or every worker down) is a gap in the baselines, not a window of zeros.
- **Alerts.** Firing and resolved :class:`~schemas.alerts.Alert` events go to ``vigil.alerts``;
  ``vigil_spike_active{category,tenant}`` is 1 while any direction of the category fires for the
  tenant label (on the worker that owns the detector; take ``max`` across workers). With
  ``VIGIL_ALERTS_ALERTMANAGER_URL`` the changes and every firing alert are pushed to
  Alertmanager after each closed window (and at least once a window while firing), from a
  background task so a slow Alertmanager never stalls the stream.

Settings: :class:`AlertingSettings` (environment ``VIGIL_ALERTS_*``). Nothing here raises into
the screening agent: the hook, the timer and the agent log and count their errors
(``vigil_alert_errors_total{stage}``) and go on.
"""

from __future__ import annotations

import asyncio
import contextlib
import copy
import json
import logging
import time
import uuid
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Annotated, Any, get_args

import faust
from faust.streams import current_event
from faust.types import TP
from prometheus_client import CollectorRegistry, Counter, Gauge
from pydantic import Field, ValidationError, field_validator
from pydantic_settings import BaseSettings, NoDecode, SettingsConfigDict

from schemas.alerts import Alert, Correction, DetectorSettings
from schemas.events import ChatEvent
from schemas.outputs import Category, Direction, Finding
from services.alerting import (
    AlertmanagerConfig,
    AlertmanagerRejected,
    AlertmanagerUnavailable,
    AsyncAlertmanagerClient,
    Detector,
    DetectorState,
    SeriesKey,
    SeriesState,
)
from services.screening import VALUE_CATEGORIES
from services.settings import Settings

__all__ = [
    "COUNTS_TABLE",
    "DETECTOR_TABLE",
    "ROLES_OF",
    "AlertingSettings",
    "register",
    "topics",
]

log = logging.getLogger("vigil.alerting")

#: Faust tables (their changelogs are ``<app_id>-<table>-changelog``).
COUNTS_TABLE = "alerts-window-counts"
DETECTOR_TABLE = "alerts-detector"
#: The roles whose messages a direction's findings come from (the binomial test's ``n``).
ROLES_OF: dict[str, frozenset[str]] = {
    "input": frozenset({"user", "system", "tool"}),
    "leak": frozenset({"assistant"}),
    "echo": frozenset({"assistant"}),
    "output": frozenset({"assistant"}),
}
#: Every per-window report and tick goes to this partition of the counts topic, so one agent
#: instance sees them all even if the topic was created with more partitions.
COUNTS_PARTITION = 0
_COUNTS_KEY = b"counts"
_DEFAULTS = DetectorSettings()
_STAGES = ("count", "flush", "detect", "push")


class AlertingSettings(BaseSettings):
    """The spike detector in the worker. Environment: ``VIGIL_ALERTS_`` + the field name."""

    model_config = SettingsConfigDict(env_prefix="VIGIL_ALERTS_", extra="ignore", frozen=True)

    enabled: bool = True
    #: Output: one ``Alert`` per change of state, keyed by ``alert_id``.
    topic: str = "vigil.alerts"
    #: Internal: per-window totals and ticks for the detector (partition 0 only).
    counts_topic: str = "vigil.alerts.counts"
    window_seconds: int = Field(default=_DEFAULTS.window_seconds, ge=1)
    #: How long after a window ends it is closed: room for the other partitions' totals.
    grace_seconds: float = Field(default=10.0, ge=0)
    #: How often totals are sent and ticks checked; default ``min(window, grace) / 2`` in
    #: [0.2 s, 5 s].
    tick_seconds: float | None = Field(default=None, gt=0)
    baseline_windows: int = Field(default=_DEFAULTS.baseline_windows, ge=1)
    min_baseline_windows: int = Field(default=_DEFAULTS.min_baseline_windows, ge=1)
    alpha: float = Field(default=_DEFAULTS.alpha, gt=0.0, lt=1.0)
    correction: Correction = _DEFAULTS.correction
    floor: int = Field(default=_DEFAULTS.floor, ge=1)
    fire_windows: int = Field(default=_DEFAULTS.fire_windows, ge=1)
    resolve_windows: int = Field(default=_DEFAULTS.resolve_windows, ge=1)
    prior_count: float = Field(default=_DEFAULTS.prior_count, gt=0.0)
    #: Directions that get series (comma-separated in the environment).
    directions: Annotated[list[Direction], NoDecode] = Field(
        default_factory=lambda: list(get_args(Direction))
    )
    #: ``category/direction`` pairs that get a series for every tenant label with traffic from
    #: its first window, before any finding (so a first-ever spike meets a baseline of zeros).
    #: Default: ``<category>/leak`` for each value-carrying category (pii, secret, prompt_leak)
    #: of the loaded rules. Other pairs get series once they have been seen for any tenant.
    watch: Annotated[list[str] | None, NoDecode] = None
    #: Base URL of Alertmanager (``http://alertmanager:9093``); unset: no push.
    alertmanager_url: str | None = None
    alertmanager_severity: str = "warning"
    alertmanager_timeout_seconds: float = Field(default=5.0, gt=0)
    alertmanager_max_retries: int = Field(default=3, ge=0)
    generator_url: str | None = None

    @field_validator("directions", "watch", mode="before")
    @classmethod
    def _split(cls, value: object) -> object:
        if isinstance(value, str):
            text = value.strip()
            if text.startswith("["):
                return json.loads(text)
            return [v.strip() for v in text.split(",") if v.strip()]
        return value

    @field_validator("watch")
    @classmethod
    def _pairs(cls, value: list[str] | None) -> list[str] | None:
        for pair in value or []:
            category, _, direction = pair.partition("/")
            if category not in get_args(Category) or direction not in get_args(Direction):
                raise ValueError(f"not a category/direction pair: {pair!r}")
        return value

    def watched(self, rule_categories: Iterable[str]) -> frozenset[tuple[str, str]]:
        """The watched (category, direction) pairs, given the categories of the loaded rules."""
        if self.watch is None:
            pairs = {(c, "leak") for c in VALUE_CATEGORIES if c in set(rule_categories)}
        else:
            pairs = {(p.partition("/")[0], p.partition("/")[2]) for p in self.watch}
        return frozenset((c, d) for c, d in pairs if d in self.directions)

    def detector_settings(self) -> DetectorSettings:
        return DetectorSettings(
            window_seconds=self.window_seconds,
            baseline_windows=self.baseline_windows,
            min_baseline_windows=self.min_baseline_windows,
            alpha=self.alpha,
            correction=self.correction,
            floor=self.floor,
            fire_windows=self.fire_windows,
            resolve_windows=self.resolve_windows,
            prior_count=self.prior_count,
        )

    @property
    def tick(self) -> float:
        if self.tick_seconds is not None:
            return self.tick_seconds
        return min(5.0, max(0.2, min(float(self.window_seconds), self.grace_seconds) / 2))

    @property
    def retention_seconds(self) -> float:
        """How long after its end a partition keeps a window's counts: until the detector has
        closed it (re-sends of late totals), plus two ticks. Later totals would be late anyway."""
        return self.grace_seconds + 2 * self.tick

    def alertmanager(self) -> AlertmanagerConfig | None:
        if not self.alertmanager_url:
            return None
        return AlertmanagerConfig(
            url=self.alertmanager_url,
            severity=self.alertmanager_severity,
            generator_url=self.generator_url,
            # Re-sent every window: the TTL must outlive a few of them.
            firing_ttl_seconds=max(900.0, 3.0 * (self.window_seconds + self.grace_seconds)),
            timeout_seconds=self.alertmanager_timeout_seconds,
            max_retries=self.alertmanager_max_retries,
        )


def _changelog(settings: Settings, table: str) -> str:
    return f"{settings.app_id}-{table}-changelog"


def topics(settings: Settings) -> list[tuple[str, bool]]:
    """Topics for ``vigil topics create``: (name, compacted).

    ``vigil topics create`` gives every topic the same partition count; the counts topic and the
    detector's changelog need only one (every record goes to partition 0), so more is harmless.
    Created by the worker itself, they get one.
    """
    cfg = AlertingSettings()
    if not cfg.enabled:
        return []
    return [
        (cfg.topic, False),
        (cfg.counts_topic, False),
        (_changelog(settings, COUNTS_TABLE), True),
        (_changelog(settings, DETECTOR_TABLE), True),
    ]


# --------------------------------------------------------------------------------- metrics


class AlertingMetrics:
    def __init__(self, registry: CollectorRegistry) -> None:
        self.spike_active = Gauge(
            "vigil_spike_active",
            "1 while the spike detector fires for the category and tenant label (any direction).",
            ["category", "tenant"],
            registry=registry,
        )
        self.alerts = Counter(
            "vigil_alert_events_total",
            "Alert events published by the spike detector, by state.",
            ["state"],
            registry=registry,
        )
        self.windows = Counter(
            "vigil_alert_windows_closed_total",
            "Windows of counts closed (tested) by the spike detector.",
            registry=registry,
        )
        self.late = Counter(
            "vigil_alert_late_reports_total",
            "Per-partition window totals that arrived after their window was closed.",
            registry=registry,
        )
        self.pushes = Counter(
            "vigil_alertmanager_pushes_total",
            "Pushes of the detector's alerts to Alertmanager, by outcome.",
            ["outcome"],
            registry=registry,
        )
        self.errors = Counter(
            "vigil_alert_errors_total",
            "Unexpected errors in the spike-detection path, by stage (nothing is raised).",
            ["stage"],
            registry=registry,
        )
        for state in ("firing", "resolved"):
            self.alerts.labels(state=state)
        for outcome in ("ok", "unavailable", "rejected", "dropped"):
            self.pushes.labels(outcome=outcome)
        for stage in _STAGES:
            self.errors.labels(stage=stage)


# --------------------------------------------------------------------------------- keys


def series_field(category: str, tenant: str, direction: str) -> str:
    return json.dumps([category, tenant, direction], separators=(",", ":"))


def messages_field(tenant: str, role: str) -> str:
    return json.dumps([tenant, role], separators=(",", ":"))


def _partition_key(partition: int) -> str:
    return f"p/{partition}"


def _series_table_key(key: SeriesKey) -> str:
    return "series/" + series_field(key.category, key.tenant, key.direction)


def _window_start(ts: float, window_seconds: int) -> int:
    return int(ts // window_seconds) * window_seconds


# --------------------------------------------------------------------------------- pusher


class _Pusher:
    """Pushes batches of alerts to Alertmanager from a background task (latest batches win)."""

    def __init__(self, config: AlertmanagerConfig | None, metrics: AlertingMetrics) -> None:
        self.config = config
        self.metrics = metrics
        self.queue: asyncio.Queue[list[Alert]] = asyncio.Queue(maxsize=64)

    def submit(self, alerts: list[Alert]) -> None:
        if self.config is None or not alerts:
            return
        while self.queue.full():
            with contextlib.suppress(asyncio.QueueEmpty):
                self.queue.get_nowait()
                self.metrics.pushes.labels(outcome="dropped").inc()
        self.queue.put_nowait(alerts)

    async def run(self) -> None:
        if self.config is None:
            return
        async with AsyncAlertmanagerClient(self.config) as client:
            while True:
                batch = await self.queue.get()
                try:
                    await client.push(batch)
                    self.metrics.pushes.labels(outcome="ok").inc()
                except AlertmanagerRejected as exc:
                    self.metrics.pushes.labels(outcome="rejected").inc()
                    log.error("Alertmanager rejected %d alert(s): %s", len(batch), exc.detail)
                except AlertmanagerUnavailable as exc:
                    self.metrics.pushes.labels(outcome="unavailable").inc()
                    log.warning("Alertmanager unavailable: %s", exc.last)
                except Exception as exc:  # the push task must live on
                    self.metrics.errors.labels(stage="push").inc()
                    log.error("pushing to Alertmanager failed: %s", type(exc).__name__)


# --------------------------------------------------------------------------------- detector


def _aggregate(reports: dict[str, Any]) -> tuple[dict[str, int], dict[str, int]]:
    series: dict[str, int] = {}
    messages: dict[str, int] = {}
    for report in reports.values():
        for k, n in report.get("s", {}).items():
            series[k] = series.get(k, 0) + int(n)
        for k, n in report.get("m", {}).items():
            messages[k] = messages.get(k, 0) + int(n)
    return series, messages


@dataclass
class DetectorCore:
    """The detector and its pending reports, cached from the ``alerts-detector`` table.

    Only the agent that reads partition 0 of the counts topic calls :meth:`handle` (inside its
    stream, so table writes go to the changelog). The cache is checked against the table's
    revision on every message, so a detector that moved to another worker and back is reloaded.
    """

    cfg: AlertingSettings
    table: Any
    metrics: AlertingMetrics
    watched: frozenset[tuple[str, str]] = frozenset()
    rev: str | None = None
    loaded: bool = False
    detector: Detector = field(init=False)
    known: set[SeriesKey] = field(default_factory=set)
    #: window start (epoch seconds, as str) → input partition (str) → {"s": ..., "m": ...}
    reports: dict[str, dict[str, Any]] = field(default_factory=dict)
    last_push: float = 0.0

    def __post_init__(self) -> None:
        self.detector = Detector(self.cfg.detector_settings())

    # ----------------------------------------------------------------- state
    def load(self) -> None:
        meta = self.table.get("meta")
        rev = meta.get("rev") if isinstance(meta, dict) else None
        if self.loaded and rev == self.rev:
            return
        settings = self.cfg.detector_settings()
        series: list[SeriesState] = []
        last_closed = None
        if isinstance(meta, dict):
            stored = DetectorSettings.model_validate(meta["settings"])
            if stored.window_seconds != settings.window_seconds:
                log.warning(
                    "window changed from %d s to %d s: the detector starts a new baseline",
                    stored.window_seconds,
                    settings.window_seconds,
                )
                for key in [
                    k for k in self.table if isinstance(k, str) and k.startswith("series/")
                ]:
                    del self.table[key]
            else:
                last_closed = meta.get("last_closed")
                for key, value in list(self.table.items()):
                    if isinstance(key, str) and key.startswith("series/") and value:
                        s = SeriesState.model_validate(value)
                        s.baseline = s.baseline[-settings.baseline_windows :]
                        series.append(s)
        state = DetectorState(settings=settings, last_closed=last_closed, series=series)
        self.detector = Detector.from_state(state)
        self.known = {s.key for s in series}
        reports = self.table.get("reports")
        self.reports = copy.deepcopy(reports) if isinstance(reports, dict) else {}
        self.rev, self.loaded = rev, True
        self.update_gauge()

    def release(self) -> None:
        """This worker no longer owns the detector: forget the cache, clear the gauge."""
        if self.loaded:
            self.loaded = False
            self.metrics.spike_active.clear()

    def _save_meta(self) -> None:
        self.rev = uuid.uuid4().hex
        last_closed = self.detector.last_closed
        self.table["meta"] = {
            "rev": self.rev,
            "settings": self.detector.settings.model_dump(mode="json"),
            "last_closed": last_closed.isoformat() if last_closed else None,
        }

    # ----------------------------------------------------------------- input
    def handle(self, message: dict[str, Any], now: float) -> tuple[list[Alert], bool]:
        """Apply one counts-topic message and close every due window.

        Returns the alerts of the closed windows and whether any window was closed.
        """
        self.load()
        changed = False
        if message.get("kind") == "counts":
            changed = self._record(message)
        alerts, closed = self._close_due(now)
        if closed:
            for key in self.known:
                state = self.detector.series(key)
                if state is not None:
                    self.table[_series_table_key(key)] = state.model_dump(mode="json")
        if changed or closed:
            self.table["reports"] = copy.deepcopy(self.reports)
            self._save_meta()
        if closed:
            self.update_gauge()
        return alerts, closed

    def _record(self, message: dict[str, Any]) -> bool:
        window = int(message["window"])
        last = self.detector.last_closed
        if window % self.cfg.window_seconds or (last is not None and window <= last.timestamp()):
            self.metrics.late.inc()  # closed already, or counted under another window length
            return False
        report = {"s": dict(message.get("series", {})), "m": dict(message.get("messages", {}))}
        self.reports.setdefault(str(window), {})[str(int(message["partition"]))] = report
        return True

    def _close_due(self, now: float) -> tuple[list[Alert], bool]:
        cfg = self.cfg
        due = sorted(
            int(w) for w in self.reports if int(w) + cfg.window_seconds + cfg.grace_seconds <= now
        )
        alerts: list[Alert] = []
        for window in due:
            reports = self.reports.pop(str(window))
            start = datetime.fromtimestamp(window, UTC)
            last = self.detector.last_closed
            if last is not None and start <= last:
                continue
            alerts += self._close(start, reports)
            self.metrics.windows.inc()
        return alerts, bool(due)

    def _close(self, start: datetime, reports: dict[str, Any]) -> list[Alert]:
        series, messages = _aggregate(reports)
        for field_, _ in series.items():
            try:
                category, tenant, direction = json.loads(field_)
                key = SeriesKey(category=category, tenant=tenant, direction=direction)
            except (ValueError, TypeError, ValidationError):
                log.warning("ignoring a malformed series in the window counts")
                continue
            if key.direction in self.cfg.directions:
                self.known.add(key)
        # Every tenant with traffic in a direction's roles gets the series of the watched pairs
        # and of the pairs seen for any tenant, so their baselines start before a first finding.
        roles_of_tenant: dict[str, set[str]] = {}
        for field_, n in messages.items():
            tenant, role = json.loads(field_)
            if n > 0:
                roles_of_tenant.setdefault(tenant, set()).add(role)
        pairs = self.watched | {(k.category, k.direction) for k in self.known}
        for category, direction in pairs:
            for tenant, roles in roles_of_tenant.items():
                if roles & ROLES_OF[direction]:
                    self.known.add(
                        SeriesKey.model_validate(
                            {"category": category, "tenant": tenant, "direction": direction}
                        )
                    )
        for key in self.known:
            count = series.get(series_field(key.category, key.tenant, key.direction), 0)
            n = sum(messages.get(messages_field(key.tenant, r), 0) for r in ROLES_OF[key.direction])
            # Counted together, so count <= n; guard anyway: the test must not crash a window.
            self.detector.observe(key, start, count, max(n, count))
        return self.detector.close_window(start)

    def update_gauge(self) -> None:
        firing = {(a.category, a.tenant) for a in self.detector.firing()}
        for key in self.known:
            active = 1 if (key.category, key.tenant) in firing else 0
            self.metrics.spike_active.labels(category=key.category, tenant=key.tenant).set(active)


# --------------------------------------------------------------------------------- feature


@dataclass
class AlertingFeature:
    """Everything :func:`register` wires into the worker (exposed as ``app.vigil_alerting``)."""

    app: faust.App
    settings: Settings
    cfg: AlertingSettings
    metrics: AlertingMetrics
    tenant_label: Callable[[str | None], str]
    counts: Any
    detector_table: Any
    counts_topic: Any
    alerts_topic: Any
    core: DetectorCore
    pusher: _Pusher
    clock: Callable[[], float] = time.time
    #: (input partition, window) → the message total last sent for it (by this process)
    sent: dict[tuple[int, int], int] = field(default_factory=dict)

    # ----------------------------------------------------------------- counting (hook)
    async def after_screen(self, event: ChatEvent, findings: list[Finding], source: str) -> None:
        try:
            self.count(event, findings)
        except Exception as exc:  # a hook must never break screening
            self.metrics.errors.labels(stage="count").inc()
            log.error("counting for spike detection failed at %s: %s", source, type(exc).__name__)

    def count(self, event: ChatEvent, findings: Iterable[Finding]) -> None:
        current = current_event()
        if current is None:
            return
        partition, offset = current.message.partition, current.message.offset
        key = _partition_key(partition)
        value = self.counts.get(key)
        if not isinstance(value, dict):
            value = {"o": -1, "w": {}}
        if offset <= value["o"]:
            return  # redelivered after a crash: already counted
        now = self.clock()
        window = str(_window_start(now, self.cfg.window_seconds))
        windows: dict[str, Any] = value["w"]
        horizon = now - self.cfg.window_seconds - self.cfg.retention_seconds
        for old in [w for w in windows if int(w) < horizon]:
            del windows[old]
        counts = windows.setdefault(window, {"s": {}, "m": {}})
        tenant = self.tenant_label(event.tenant)
        m = messages_field(tenant, event.role)
        counts["m"][m] = counts["m"].get(m, 0) + 1
        seen = {
            (f.category, f.direction)
            for f in findings
            if f.direction in self.cfg.directions and event.role in ROLES_OF[f.direction]
        }
        for category, direction in sorted(seen):
            s = series_field(category, tenant, direction)
            counts["s"][s] = counts["s"].get(s, 0) + 1
        value["o"] = offset
        self.counts[key] = value

    # ----------------------------------------------------------------- timer
    async def on_tick(self) -> None:
        try:
            await self.tick()
        except Exception as exc:  # the timer must live on
            self.metrics.errors.labels(stage="flush").inc()
            log.error("spike-detection timer failed: %s", type(exc).__name__)

    async def tick(self) -> None:
        app = self.app
        if app.rebalancing or getattr(app, "in_recovery", False):
            return
        actives = app.assignor.assigned_actives()
        now = self.clock()
        await self.flush(actives, now)
        if TP(self.cfg.counts_topic, COUNTS_PARTITION) not in actives:
            self.core.release()
            return
        core = self.core
        if not core.loaded or core.reports:
            await self._send({"kind": "tick"})
        firing = core.detector.firing() if core.loaded else []
        if firing and now - core.last_push >= self.cfg.window_seconds:
            core.last_push = now
            self.pusher.submit(firing)

    async def flush(self, actives: set[TP], now: float) -> None:
        """Send the totals of every ended window of the input partitions this worker owns."""
        cfg = self.cfg
        horizon = now - cfg.window_seconds - cfg.retention_seconds
        for tp in sorted(actives):
            if tp.topic != self.settings.input_topic:
                continue
            value = self.counts.get(_partition_key(tp.partition))
            if not isinstance(value, dict):
                continue
            for window, counts in list(value["w"].items()):
                start = int(window)
                if start + cfg.window_seconds > now or start < horizon:
                    continue  # still open, or closed long ago (totals would be late)
                total = sum(counts["m"].values())
                mark = (tp.partition, start)
                if self.sent.get(mark) == total:
                    continue
                await self._send(
                    {
                        "kind": "counts",
                        "window": start,
                        "partition": tp.partition,
                        "series": counts["s"],
                        "messages": counts["m"],
                    }
                )
                self.sent[mark] = total
        for mark in [k for k in self.sent if k[1] < horizon]:
            del self.sent[mark]

    async def _send(self, payload: dict[str, Any]) -> None:
        await self.counts_topic.send(
            key=_COUNTS_KEY,
            value=json.dumps(payload, separators=(",", ":")).encode(),
            partition=COUNTS_PARTITION,
        )

    # ----------------------------------------------------------------- detector agent
    async def detect(self, stream: faust.StreamT[bytes]) -> None:
        async for ev in stream.events():
            try:
                raw = ev.value if isinstance(ev.value, bytes) else b""
                message = json.loads(raw)
                if not isinstance(message, dict):
                    raise ValueError("not an object")
                alerts, closed = self.core.handle(message, self.clock())
                for alert in alerts:
                    await self.alerts_topic.send(
                        key=alert.alert_id.encode(), value=alert.model_dump_json().encode()
                    )
                    self.metrics.alerts.labels(state=alert.state).inc()
                    log.warning(
                        "spike %s: %s/%s/%s observed %d expected %.3g p=%.3g",
                        alert.state,
                        alert.category,
                        alert.tenant,
                        alert.direction,
                        alert.observed,
                        alert.expected,
                        alert.p_value,
                    )
                if closed:
                    resolved = [a for a in alerts if a.state == "resolved"]
                    batch = resolved + self.core.detector.firing()
                    if batch:
                        self.core.last_push = self.clock()
                        self.pusher.submit(batch)
            except Exception as exc:  # a bad record or a bug must not stop the detector
                self.core.loaded = False  # reload the last saved state on the next record
                self.metrics.errors.labels(stage="detect").inc()
                log.error("spike detector failed on a counts record: %s", type(exc).__name__)


def register(ctx: Any) -> None:
    """Wire the spike detector into the worker (see the module docstring)."""
    cfg = AlertingSettings()
    if not cfg.enabled:
        return
    app: faust.App = ctx.app
    settings: Settings = ctx.settings
    metrics = AlertingMetrics(ctx.registry)
    counts = app.Table(
        COUNTS_TABLE,
        default=None,
        partitions=settings.topic_partitions,
        key_type=str,
        value_type=None,  # JSON (see the memory table in app.py)
        help="Spike detection: per input partition, counts of the open and recent windows.",
    )
    detector_table = app.Table(
        DETECTOR_TABLE,
        default=None,
        partitions=1,
        key_type=str,
        value_type=None,
        help="Spike detection: the detector's series, pending window totals, last closed window.",
    )
    counts_topic = app.topic(
        cfg.counts_topic, key_type=bytes, value_type=bytes, partitions=1, internal=True
    )
    alerts_topic = app.topic(cfg.topic, key_type=bytes, value_type=bytes)
    rule_categories = {r.category for r in ctx.pipeline.engine.rules.values()}
    core = DetectorCore(cfg, detector_table, metrics, cfg.watched(rule_categories))
    feature = AlertingFeature(
        app=app,
        settings=settings,
        cfg=cfg,
        metrics=metrics,
        tenant_label=ctx.pipeline.metrics.tenant_label,
        counts=counts,
        detector_table=detector_table,
        counts_topic=counts_topic,
        alerts_topic=alerts_topic,
        core=core,
        pusher=_Pusher(cfg.alertmanager(), metrics),
    )
    ctx.after_screen.append(feature.after_screen)

    async def detect_spikes(stream: faust.StreamT[bytes]) -> None:
        await feature.detect(stream)

    async def spike_timer() -> None:
        await feature.on_tick()

    async def alertmanager_push() -> None:
        await feature.pusher.run()

    app.agent(counts_topic, name="vigil.alerting.detect", concurrency=1)(detect_spikes)
    app.timer(cfg.tick, name="vigil.alerting.tick")(spike_timer)
    if feature.pusher.config is not None:
        app.task(alertmanager_push)
    ctx.topics.update(alerts=alerts_topic, alert_counts=counts_topic)
    app.vigil_alerting = feature  # type: ignore[attr-defined]
