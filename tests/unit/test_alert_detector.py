"""The spike detector as a pure state machine: counts in, Alert events out. No broker, no clock."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

import pytest
from scipy import stats

from schemas.alerts import Alert, DetectorSettings
from services.alerting import Detector, DetectorState, SeriesKey, WindowClosedError
from services.alerting.detector import window_start_of

T0 = datetime(2024, 5, 1, 12, 0, tzinfo=UTC)
LEAK = SeriesKey(category="pii", tenant="acme", direction="leak")
ECHO = SeriesKey(category="pii", tenant="acme", direction="echo")
SMALL = DetectorSettings(baseline_windows=10, min_baseline_windows=5, alpha=1e-3, floor=3)


def w(i: int) -> datetime:
    return T0 + timedelta(seconds=60 * i)


def feed(
    d: Detector,
    counts: list[int],
    key: SeriesKey = LEAK,
    start: int = 0,
    messages: int | None = None,
) -> list[Alert]:
    """One window per count, closed in turn; the alerts of all of them."""
    out: list[Alert] = []
    for i, c in enumerate(counts, start):
        d.observe(key, w(i), c, messages)
        out += d.close_window(w(i))
    return out


def test_no_decision_before_the_minimum_baseline() -> None:
    d = Detector(SMALL)
    assert feed(d, [2, 2, 2, 2, 500]) == []  # the 5th window has only 4 baseline windows
    assert feed(d, [500], start=5) != []  # now it has 5 (the 500 went in: no decision)


def test_a_spike_fires_once_with_the_numbers_of_the_decision() -> None:
    d = Detector(SMALL)
    assert feed(d, [2] * 10) == []
    [alert] = feed(d, [20], start=10)
    mu = (20 + 0.5) / 10
    assert alert.state == "firing"
    assert (alert.category, alert.tenant, alert.direction) == ("pii", "acme", "leak")
    assert (alert.window_start, alert.window_end) == (w(10), w(11))
    assert alert.observed == 20 and alert.test == "poisson" and alert.messages is None
    assert alert.expected == pytest.approx(mu)
    assert alert.p_value == pytest.approx(stats.poisson.sf(19, mu))
    assert alert.adjusted_threshold == pytest.approx(1e-3)  # one series: BH changes nothing
    assert alert.baseline_windows == 10 and alert.floor == 3
    assert alert.started_at == w(10) and alert.resolved_at is None
    assert alert.settings == SMALL
    assert d.firing() == [alert]
    assert feed(d, [20, 20], start=11) == []  # still firing: no new event


def test_a_count_below_the_floor_never_fires_however_small_its_p_value() -> None:
    below, at = Detector(SMALL), Detector(SMALL)
    feed(below, [0] * 10)
    feed(at, [0] * 10)
    assert feed(below, [2], start=10) == []  # p ~ 1e-3 / 8 against a zero baseline, but 2 < 3
    [alert] = feed(at, [3], start=10)
    assert alert.observed == 3 and alert.p_value < 1e-3 / 8


def test_a_zero_baseline_is_not_degenerate() -> None:
    d = Detector(SMALL)
    feed(d, [0] * 10)
    [alert] = feed(d, [3], start=10)
    assert alert.expected == pytest.approx(0.5 / 10)
    assert alert.p_value > 0.0


def test_fire_windows_needs_consecutive_significant_windows() -> None:
    d = Detector(SMALL.model_copy(update={"fire_windows": 2}))
    feed(d, [2] * 10)
    assert feed(d, [20, 2, 20], start=10) == []  # interrupted run
    [alert] = feed(d, [20], start=13)
    assert alert.started_at == w(12)  # the run began one window earlier


def test_resolve_after_resolve_windows_quiet_windows_with_the_same_id() -> None:
    d = Detector(SMALL.model_copy(update={"resolve_windows": 3}))
    feed(d, [2] * 10)
    [fired] = feed(d, [20], start=10)
    assert feed(d, [2, 2, 20, 2, 2], start=11) == []  # a significant window resets the count
    [resolved] = feed(d, [2], start=16)
    assert resolved.state == "resolved"
    assert resolved.alert_id == fired.alert_id
    assert resolved.started_at == w(10)
    assert resolved.resolved_at == w(17) == resolved.window_end
    assert resolved.observed == 2
    assert d.firing() == []
    assert d.series(LEAK).status == "resolved"  # type: ignore[union-attr]
    [again] = feed(d, [25], start=17)  # a new episode, a new id
    assert again.state == "firing" and again.alert_id != fired.alert_id


def test_windows_while_firing_stay_out_of_the_baseline() -> None:
    d = Detector(SMALL.model_copy(update={"resolve_windows": 2}))
    feed(d, [2] * 10)
    before = d.series(LEAK).baseline  # type: ignore[union-attr]
    feed(d, [20, 40, 3], start=10)  # fires, stays firing, one quiet window
    assert d.series(LEAK).baseline == before  # type: ignore[union-attr]
    feed(d, [2], start=13)  # resolves: this window counts again
    after = d.series(LEAK).baseline  # type: ignore[union-attr]
    assert [x.count for x in after] == [2] * 10
    assert len(after) == 10  # trimmed to baseline_windows


def test_a_series_not_observed_in_a_closed_window_counts_zero() -> None:
    d = Detector(SMALL)
    feed(d, [1] * 3)
    d.close_window(w(3))
    assert [x.count for x in d.series(LEAK).baseline] == [1, 1, 1, 0]  # type: ignore[union-attr]


def test_windows_never_closed_leave_a_gap_not_zeros() -> None:
    d = Detector(SMALL)
    feed(d, [1] * 3)
    feed(d, [1], start=50)
    assert [x.count for x in d.series(LEAK).baseline] == [1, 1, 1, 1]  # type: ignore[union-attr]


def test_closing_a_window_closes_earlier_windows_that_hold_counts_in_order() -> None:
    d = Detector(SMALL)
    feed(d, [2] * 10)
    d.observe(LEAK, w(10), 20)
    d.observe(LEAK, w(11), 2)
    [alert] = d.close_window(w(12))
    assert alert.window_start == w(10)


def test_late_and_misaligned_windows_are_refused() -> None:
    d = Detector(SMALL)
    feed(d, [1, 1])
    with pytest.raises(WindowClosedError, match="already closed"):
        d.observe(LEAK, w(1), 1)
    with pytest.raises(WindowClosedError):
        d.close_window(w(0))
    with pytest.raises(ValueError, match="not the start"):
        d.observe(LEAK, w(2) + timedelta(seconds=1), 1)
    with pytest.raises(ValueError, match="negative"):
        d.observe(LEAK, w(2), -1)


def test_window_start_of_floors_to_the_epoch_grid() -> None:
    assert window_start_of(T0 + timedelta(seconds=59.9), 60) == T0
    assert window_start_of(T0 + timedelta(seconds=60), 60) == w(1)
    with pytest.raises(ValueError, match="timezone"):
        window_start_of(datetime(2024, 1, 1), 60)


def test_observations_add_up() -> None:
    d = Detector(SMALL)
    feed(d, [2] * 10)
    for _ in range(20):
        d.observe(LEAK, w(10), 1)
    [alert] = d.close_window(w(10))
    assert alert.observed == 20


def test_binomial_test_when_messages_are_known() -> None:
    d = Detector(SMALL)
    feed(d, [10] * 10, messages=1000)
    [alert] = feed(d, [40], start=10, messages=1000)
    share = (100 + 0.5) / (10000 + 1.0)
    assert alert.test == "binomial" and alert.messages == 1000
    assert alert.expected == pytest.approx(1000 * share)
    assert alert.p_value == pytest.approx(stats.binom.sf(39, 1000, share))


def test_binomial_follows_the_traffic_where_poisson_would_fire() -> None:
    # Ten times the traffic, ten times the findings: the same share, not a spike.
    binomial, poisson = Detector(SMALL), Detector(SMALL)
    feed(binomial, [10] * 10, messages=1000)
    feed(poisson, [10] * 10)
    assert feed(binomial, [100], start=10, messages=10000) == []
    assert [a.test for a in feed(poisson, [100], start=10)] == ["poisson"]


def test_a_binomial_count_above_the_messages_is_an_error() -> None:
    d = Detector(SMALL)
    feed(d, [1] * 10, messages=10)
    d.observe(LEAK, w(10), 11, messages=10)
    with pytest.raises(ValueError, match="11 findings in 10 messages"):
        d.close_window(w(10))


def test_multiple_testing_control_across_the_series_of_a_window() -> None:
    # One series with p between alpha/20 and alpha, 19 quiet series beside it.
    keys = [SeriesKey(category="pii", tenant=f"t{i}", direction="leak") for i in range(20)]
    results = {}
    for correction in ("none", "bh", "holm", "bonferroni"):
        d = Detector(SMALL.model_copy(update={"correction": correction}))
        for i in range(10):
            for k in keys:
                d.observe(k, w(i), 5)
            d.close_window(w(i))
        d.observe(keys[0], w(10), 14)  # mu = 5.05: p ~ 5e-4
        for k in keys[1:]:
            d.observe(k, w(10), 5)
        results[correction] = d.close_window(w(10))
    [alert] = results["none"]
    assert 1e-3 / 20 < alert.p_value <= 1e-3
    assert results["bh"] == results["holm"] == results["bonferroni"] == []


def test_bh_fires_several_series_spiking_together() -> None:
    keys = [SeriesKey(category=c, tenant="acme", direction="leak") for c in ("pii", "secret")]
    d = Detector(SMALL)
    for i in range(10):
        for k in keys:
            d.observe(k, w(i), 2)
        d.close_window(w(i))
    for k in keys:
        d.observe(k, w(10), 20)
    alerts = d.close_window(w(10))
    assert sorted(a.category for a in alerts) == ["pii", "secret"]
    assert all(a.adjusted_threshold == pytest.approx(1e-3) for a in alerts)  # 2 of 2 rejected


def test_state_round_trips_through_json_and_resumes_identically() -> None:
    settings = SMALL.model_copy(update={"fire_windows": 2, "resolve_windows": 2})
    script = [2] * 10 + [20, 30, 2, 2, 25, 25, 2]
    original = Detector(settings)
    for i, count in enumerate(script[:11]):  # mid-run: one significant window pending
        original.observe(ECHO, w(i), 1)
        original.observe(LEAK, w(i), count)
        original.close_window(w(i))
    original.observe(LEAK, w(12), 1)  # a pending count travels too
    dumped = json.loads(json.dumps(original.state().model_dump(mode="json")))
    restored = Detector.from_state(DetectorState.model_validate(dumped))
    assert restored.state() == original.state()
    rest_a = feed(original, script[11:], start=11)
    rest_b = feed(restored, script[11:], start=11)
    assert rest_a == rest_b and [a.state for a in rest_a] == ["firing", "resolved", "firing"]


def test_exported_state_is_a_copy() -> None:
    d = Detector(SMALL)
    feed(d, [1] * 3)
    state = d.state()
    feed(d, [1], start=3)
    assert len(state.series[0].baseline) == 3
