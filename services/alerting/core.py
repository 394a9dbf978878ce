"""The spike-detection stage of the dataflow (pure): window counts per partition → detector.

- :class:`WindowCounter`, on the partition that screened the messages: adds each message to the
  tumbling window of the runner's clock (one message per (tenant label, role); per series
  (category, tenant label, direction) one message *with at least one finding* of it), keeps the
  last offset counted so a redelivered message is not counted twice, and hands the totals of
  every ended window to the detector (:meth:`WindowCounter.reports`).
- :class:`DetectorCore`, on one partition of the stream: collects the totals of each window from
  every partition and closes a window ``grace_seconds`` after its end, testing all series of the
  window together (:class:`~services.alerting.detector.Detector`).

Both keep their state in a :class:`~services.dataflow.state.KeyedStore` (JSON values). The worker
wiring (``services/streaming/features/alerting.py``) routes the totals to partition 0 of the
counts topic; the design and its limit (one detector per stream) are in ``docs/alerting.md``.
"""

from __future__ import annotations

import contextlib
import copy
import json
import logging
import uuid
from collections.abc import Iterable, Iterator, MutableMapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from functools import lru_cache
from typing import Any, get_args

from prometheus_client import CollectorRegistry, Counter, Gauge
from pydantic import ValidationError

from schemas.alerts import Alert
from schemas.events import ChatEvent
from schemas.outputs import Finding
from services.alerting.detector import Detector, DropReason
from services.alerting.settings import ROLES_OF, AlertingSettings
from services.alerting.state import DetectorState, SeriesKey, SeriesState
from services.dataflow.records import Emit
from services.dataflow.state import KeyedStore, StateSpec

__all__ = [
    "COUNTS",
    "COUNTS_PARTITION",
    "AlertingMetrics",
    "DetectorCore",
    "JsonView",
    "WindowCounter",
    "alerting_specs",
    "messages_field",
    "series_field",
]

log = logging.getLogger("vigil.alerting")

#: The channel of per-window totals and ticks (partition 0 of the counts topic in the worker).
COUNTS = "alerts.counts"
#: The channel of firing and resolved alerts.
ALERTS = "alerts"
COUNTS_PARTITION = 0
COUNTS_KEY = b"counts"
_STAGES = ("count", "flush", "detect", "push")


def alerting_specs(cfg: AlertingSettings) -> dict[str, StateSpec]:
    """Both alerting state kinds: one key per partition; one per series (at most ``max_series``,
    forgotten after ``series_idle_windows`` without traffic: the detector's own bounds, which the
    core applies to the store) plus two."""
    return {
        "alerts-window-counts": StateSpec(
            kind="alerts-window-counts",
            max_entries=16,
            ttl_seconds=cfg.window_seconds + cfg.retention_seconds + 3600.0,
            max_value_bytes=cfg.max_value_bytes,
            description="Per input partition: message counts of the open and recent windows.",
            setting="VIGIL_ALERTS_MAX_VALUE_BYTES",
        ),
        "alerts-detector": StateSpec(
            kind="alerts-detector",
            max_entries=cfg.max_series + 2,  # the series, "meta" and "reports"
            # A backstop: the core deletes a series' key when the detector forgets it.
            ttl_seconds=cfg.window_seconds * (cfg.series_idle_windows + 2) + cfg.grace_seconds,
            max_value_bytes=cfg.max_value_bytes,
            description="The detector: series baselines, pending window totals, last window.",
            setting="VIGIL_ALERTS_MAX_VALUE_BYTES",
        ),
    }


class JsonView(MutableMapping[str, Any]):
    """A :class:`KeyedStore` seen as a mapping of JSON values."""

    def __init__(self, store: KeyedStore) -> None:
        self.store = store

    def __getitem__(self, key: str) -> Any:
        return json.loads(self.store[key])

    def get(self, key: str, default: Any = None) -> Any:
        raw = self.store.get(key)
        return default if raw is None else json.loads(raw)

    def __setitem__(self, key: str, value: Any) -> None:
        self.store[key] = json.dumps(value, separators=(",", ":")).encode()

    def __delitem__(self, key: str) -> None:
        del self.store[key]

    def __contains__(self, key: object) -> bool:
        return key in self.store

    def __iter__(self) -> Iterator[str]:
        return iter(self.store)

    def __len__(self) -> int:
        return len(self.store)


# --------------------------------------------------------------------------------- metrics


class AlertingMetrics:
    """The spike detector's metrics (registry as a parameter)."""

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
        self.dropped = Counter(
            "vigil_alert_series_dropped_total",
            "Series the spike detector forgot, by reason: idle (no traffic for "
            "series_idle_windows) or bound (more than max_series).",
            ["reason"],
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
        for reason in get_args(DropReason):
            self.dropped.labels(reason=reason)


# --------------------------------------------------------------------------------- keys


#: Fields are built per screened message from labels of small fixed sets (categories, tenant
#: labels, directions, roles): remembered, not encoded each time.
_FIELDS = 4096


@lru_cache(maxsize=_FIELDS)
def series_field(category: str, tenant: str, direction: str) -> str:
    return json.dumps([category, tenant, direction], separators=(",", ":"))


@lru_cache(maxsize=_FIELDS)
def messages_field(tenant: str, role: str) -> str:
    return json.dumps([tenant, role], separators=(",", ":"))


def _partition_key(partition: int) -> str:
    return f"p/{partition}"


def _series_table_key(key: SeriesKey) -> str:
    return "series/" + series_field(key.category, key.tenant, key.direction)


def _window_start(ts: float, window_seconds: int) -> int:
    return int(ts // window_seconds) * window_seconds


# --------------------------------------------------------------------------------- counting


class WindowCounter:
    """Counts screened messages into tumbling windows, per partition (see the module docstring).

    The counts of a partition are held decoded between :meth:`flush` calls (the runner calls it
    once per batch), so a batch costs one write of the partition's key, not one per message.
    """

    def __init__(self, cfg: AlertingSettings, tenant_label: Any) -> None:
        self.cfg = cfg
        self.tenant_label = tenant_label
        self._pending: dict[int, tuple[KeyedStore, dict[str, Any]]] = {}
        #: (partition, window) → the message total last reported for it (by this process)
        self.sent: dict[tuple[int, int], int] = {}

    def _value(self, store: KeyedStore, partition: int) -> dict[str, Any]:
        hit = self._pending.get(partition)
        if hit is not None and hit[0] is store:
            return hit[1]
        raw = store.get(_partition_key(partition))
        value = json.loads(raw) if raw else None
        if not isinstance(value, dict):
            value = {"o": -1, "w": {}}
        self._pending[partition] = (store, value)
        return value

    def count(
        self,
        event: ChatEvent,
        findings: Iterable[Finding],
        store: KeyedStore,
        *,
        partition: int,
        offset: int | None,
        now: float,
    ) -> bool:
        """Add one screened message; ``False`` when its offset was counted already. ``offset``
        ``None``: a message not read from the partition just now (an answer released from the
        reorder window, its offset behind those counted since): counted, offset untouched."""
        value = self._value(store, partition)
        if offset is not None and offset <= value["o"]:
            return False  # redelivered after a crash: already counted
        cfg = self.cfg
        window = str(_window_start(now, cfg.window_seconds))
        windows: dict[str, Any] = value["w"]
        if window not in windows:
            horizon = now - cfg.window_seconds - cfg.retention_seconds
            for old in [w for w in windows if int(w) < horizon]:
                del windows[old]
        counts = windows.setdefault(window, {"s": {}, "m": {}})
        tenant = self.tenant_label(event.tenant)
        m = messages_field(tenant, event.role)
        counts["m"][m] = counts["m"].get(m, 0) + 1
        seen = {
            (f.category, f.direction)
            for f in findings
            if f.direction in cfg.directions and event.role in ROLES_OF[f.direction]
        }
        for category, direction in sorted(seen):
            s = series_field(category, tenant, direction)
            counts["s"][s] = counts["s"].get(s, 0) + 1
        if offset is not None:
            value["o"] = offset
        return True

    def flush(self) -> None:
        """Write the counts held since the last flush."""
        for partition, (store, value) in self._pending.items():
            store[_partition_key(partition)] = json.dumps(value, separators=(",", ":")).encode()
        self._pending.clear()

    def reset(self) -> None:
        """Forget what is held (after a rebalance: the table is the truth)."""
        self._pending.clear()
        self.sent.clear()

    def reports(self, store: KeyedStore, partition: int, now: float) -> list[Emit]:
        """The totals of every ended window of ``partition`` not reported with these counts."""
        self.flush()
        cfg = self.cfg
        horizon = now - cfg.window_seconds - cfg.retention_seconds
        raw = store.get(_partition_key(partition))
        value = json.loads(raw) if raw else None
        out: list[Emit] = []
        if isinstance(value, dict):
            for window, counts in list(value["w"].items()):
                start = int(window)
                if start + cfg.window_seconds > now or start < horizon:
                    continue  # still open, or closed long ago (totals would be late)
                total = sum(counts["m"].values())
                mark = (partition, start)
                if self.sent.get(mark) == total:
                    continue
                payload = {
                    "kind": "counts",
                    "window": start,
                    "partition": partition,
                    "series": counts["s"],
                    "messages": counts["m"],
                }
                out.append(Emit(COUNTS, COUNTS_KEY, _json(payload), COUNTS_PARTITION))
                self.sent[mark] = total
        for mark in [k for k in self.sent if k[1] < horizon]:
            del self.sent[mark]
        return out


def tick_emit() -> Emit:
    return Emit(COUNTS, COUNTS_KEY, _json({"kind": "tick"}), COUNTS_PARTITION)


def _json(payload: dict[str, Any]) -> bytes:
    return json.dumps(payload, separators=(",", ":")).encode()


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
    #: The detector's store as JSON values (:class:`JsonView`).
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
            stored = meta.get("settings", {}).get("window_seconds")
            keys = [k for k in self.table if isinstance(k, str) and k.startswith("series/")]
            if stored != settings.window_seconds:
                log.warning(
                    "window changed from %s s to %d s: the detector starts a new baseline",
                    stored,
                    settings.window_seconds,
                )
                for key in keys:
                    del self.table[key]
            else:
                last_closed = meta.get("last_closed")
                stale = []
                for key in keys:
                    value = self.table.get(key)
                    try:
                        series.append(SeriesState.model_validate(value))
                    except ValidationError:
                        stale.append(key)
                if stale:  # saved by an earlier version (a list of windows, not weighted sums)
                    log.warning(
                        "%d series were saved by an earlier version of the detector: they start "
                        "new baselines",
                        len(stale),
                    )
                    for key in stale:
                        del self.table[key]
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
            self._drop_forgotten()
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
            before = dict(self.detector.dropped)
            alerts += self._close(start, reports)
            self.metrics.windows.inc()
            for reason, n in self.detector.dropped.items():
                if n > before[reason]:
                    self.metrics.dropped.labels(reason=reason).inc(n - before[reason])
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

    def _drop_forgotten(self) -> None:
        """Delete the keys (and gauge labels) of the series the detector has forgotten."""
        gone = [k for k in self.known if k not in self.detector]
        if not gone:
            return
        self.known.difference_update(gone)
        for key in gone:
            if _series_table_key(key) in self.table:
                del self.table[_series_table_key(key)]
        left = {(k.category, k.tenant) for k in self.known}
        for pair in {(k.category, k.tenant) for k in gone} - left:
            with contextlib.suppress(KeyError):  # never set
                self.metrics.spike_active.remove(*pair)

    def update_gauge(self) -> None:
        firing = {(a.category, a.tenant) for a in self.detector.firing()}
        for key in self.known:
            active = 1 if (key.category, key.tenant) in firing else 0
            self.metrics.spike_active.labels(category=key.category, tenant=key.tenant).set(active)
