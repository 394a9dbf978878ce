"""The spike detector as a pure state machine: counts in, Alert events out. No broker, no clock."""

from __future__ import annotations

import json
import math
from datetime import UTC, datetime, timedelta

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

from schemas.alerts import Alert, DetectorSettings
from services.alerting import Detector, DetectorState, SeriesKey, WindowClosedError
from services.alerting.baseline import FIELDS
from services.alerting.detector import window_start_of
from services.alerting.state import Baseline
from services.alerting.stats import upper_tail

T0 = datetime(2024, 5, 1, 12, 0, tzinfo=UTC)
LEAK = SeriesKey(category="pii", tenant="acme", direction="leak")
ECHO = SeriesKey(category="pii", tenant="acme", direction="echo")
#: Small and quick: decisions after 5 windows, windows enter the baseline at once.
SMALL = DetectorSettings(
    baseline_half_life=10, min_baseline_windows=5, guard_windows=0, alpha=1e-3, floor=3
)


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


def baseline(d: Detector, key: SeriesKey = LEAK) -> Baseline:
    state = d.series(key)
    assert state is not None
    return state.baseline


# --------------------------------------------------------------------------- the window test


def test_no_decision_before_the_minimum_baseline() -> None:
    d = Detector(SMALL)
    assert feed(d, [2, 2, 2, 2, 500]) == []  # the 5th window has only 4 baseline windows
    assert feed(d, [500], start=5) != []  # now it has 5 (the 500 went in: no decision then)


def test_a_spike_fires_once_with_the_numbers_of_the_decision() -> None:
    d = Detector(SMALL)
    assert feed(d, [10] * 20, messages=1000) == []
    [alert] = feed(d, [40], start=20, messages=1000)
    assert alert.state == "firing" and alert.fired_by == "both"
    assert (alert.category, alert.tenant, alert.direction) == ("pii", "acme", "leak")
    assert (alert.window_start, alert.window_end) == (w(20), w(21))
    assert alert.observed == 40 and alert.test == "binomial" and alert.messages == 1000
    assert alert.expected == pytest.approx(10.0, rel=0.02)  # the baseline share, 1 %
    # the p-value is the tail the detector says it computed, at the dispersion it reports
    q, e, kappa = alert.expected / 1000, 1000, alert.dispersion
    forecast = ((alert.variance_factor - 1) * e * q * (1 - q) - e * (e - 1) * q * q * kappa) / (
        e * e * q * q
    )
    assert alert.p_value == pytest.approx(
        float(upper_tail([40], [e], [q], [kappa + forecast], [True])[0]), rel=1e-6
    )
    assert 1.0 < alert.variance_factor < 1.5  # the baseline's own uncertainty (20 windows)
    assert alert.p_value < 1e-6
    assert alert.adjusted_threshold == pytest.approx(1e-3)  # one series: BH changes nothing
    assert alert.baseline_windows == 20 and alert.floor == 3
    assert alert.started_at == w(20) and alert.resolved_at is None
    assert alert.settings == SMALL
    assert alert.cusum is not None and alert.cusum.windows >= 1
    assert d.firing() == [alert]
    assert feed(d, [40, 40], start=21, messages=1000) == []  # still firing: no new event


def test_a_count_below_the_floor_never_fires_however_small_its_p_value() -> None:
    below, at = Detector(SMALL), Detector(SMALL)
    feed(below, [0] * 10)
    feed(at, [0] * 10)
    assert feed(below, [2], start=10) == []  # p ~ 1e-3 against a zero baseline, but 2 < 3
    [alert] = feed(at, [3], start=10)
    assert alert.observed == 3 and alert.p_value < 1e-3


def test_a_zero_baseline_is_not_degenerate() -> None:
    d = Detector(SMALL)
    feed(d, [0] * 10)
    [alert] = feed(d, [3], start=10)
    assert 0.0 < alert.expected < 0.2  # the prior: a small positive rate
    assert alert.p_value > 0.0


def test_fire_windows_needs_consecutive_significant_windows() -> None:
    quiet = SMALL.model_copy(update={"fire_windows": 2, "cusum_threshold": 100.0})
    d = Detector(quiet)
    feed(d, [2] * 10)
    assert feed(d, [20, 2, 20], start=10) == []  # interrupted run
    [alert] = feed(d, [20], start=13)
    assert alert.started_at == w(12)  # the run began one window earlier


def test_resolve_after_quiet_windows_with_the_same_id_then_a_new_episode() -> None:
    d = Detector(SMALL.model_copy(update={"resolve_windows": 3}))
    feed(d, [20] * 15, messages=2000)
    [fired] = feed(d, [80], start=15, messages=2000)
    quiet = [20] * 3
    alerts = feed(d, quiet * 10, start=16, messages=2000)
    [resolved] = alerts
    assert resolved.state == "resolved"
    assert resolved.alert_id == fired.alert_id
    assert resolved.started_at == w(15)
    assert resolved.resolved_at == resolved.window_end
    assert resolved.fired_by == fired.fired_by  # the test that fired the episode
    assert d.firing() == []
    state = d.series(LEAK)
    assert state is not None and state.status == "resolved"
    assert state.baseline.cusum == 0.0  # the evidence starts again
    end = 16 + 30
    [again] = feed(d, [80], start=end, messages=2000)  # a new episode, a new id
    assert again.state == "firing" and again.alert_id != fired.alert_id


def test_windows_while_firing_stay_out_of_the_baseline() -> None:
    d = Detector(SMALL.model_copy(update={"resolve_windows": 2}))
    feed(d, [10] * 10, messages=1000)
    before = baseline(d)
    feed(d, [60, 80, 60], start=10, messages=1000)  # fires, stays firing
    after = baseline(d)
    assert (after.windows, after.a_f, after.b_f) == (before.windows, before.a_f, before.b_f)
    assert d.firing()


def test_the_guard_keeps_the_start_of_a_spike_out_of_the_baseline() -> None:
    """Windows enter ``guard_windows`` late; when the series fires, those waiting never do."""
    guarded = DetectorSettings(min_baseline_windows=5, guard_windows=4, alpha=1e-9)
    d = Detector(guarded)
    feed(d, [10] * 60, messages=1000)
    assert baseline(d).windows == 56 and len(baseline(d).guard) == 4
    kept = baseline(d)
    alerts = feed(d, [25] * 12, start=60, messages=1000)  # 2.5×: the CUSUM builds up, fires
    [alert] = alerts
    assert alert.fired_by == "cusum"
    fired_at = (alert.window_start - T0) // timedelta(seconds=60) - 60  # 0: the first
    assert 1 <= fired_at <= 4
    # before it fired, one window a window left the guard (pre-spike ones: the guard is 4 long);
    # at the firing, the windows still waiting were dropped, and nothing enters while firing
    assert baseline(d).windows == kept.windows + fired_at
    assert all(g.keep == 0 for g in baseline(d).guard)


def test_a_poisson_series_not_observed_counts_zero_and_a_binomial_one_leaves_a_gap() -> None:
    d = Detector(SMALL)
    for i in range(3):
        d.observe(LEAK, w(i), 1)
        d.observe(ECHO, w(i), 1, messages=100)
        d.close_window(w(i))
    d.observe(LEAK, w(3), 1)  # ECHO says nothing in windows 3 and 4, LEAK nothing in 4
    d.close_window(w(3))
    d.close_window(w(4))
    assert baseline(d, LEAK).windows == 5  # windows 3 and 4 closed: 1 and 0
    assert baseline(d, LEAK).b_f < baseline(d, LEAK).windows  # a zero went in
    assert baseline(d, ECHO).windows == 3  # no messages reported: no window


def test_windows_never_closed_leave_a_gap_not_zeros() -> None:
    d = Detector(SMALL)
    feed(d, [1] * 3)
    feed(d, [1], start=50)
    assert baseline(d).windows == 4
    assert baseline(d).b_f == pytest.approx(baseline(d).a_f)  # all four windows held 1


def test_a_series_keeps_its_kind() -> None:
    d = Detector(SMALL)
    d.observe(LEAK, w(0), 1, messages=10)
    with pytest.raises(ValueError, match="binomial series"):
        d.observe(LEAK, w(0), 1)
    d.observe(ECHO, w(0), 1)
    with pytest.raises(ValueError, match="poisson series"):
        d.observe(ECHO, w(0), 1, messages=10)


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
    no_cusum = SMALL.model_copy(update={"cusum_threshold": 100.0, "baseline_half_life": 60})
    for correction in ("none", "bh", "holm", "bonferroni"):
        d = Detector(no_cusum.model_copy(update={"correction": correction}))
        for i in range(200):
            for k in keys:
                d.observe(k, w(i), 5)
            d.close_window(w(i))
        d.observe(keys[0], w(200), 14)  # mu ~ 5: p ~ 5e-4
        for k in keys[1:]:
            d.observe(k, w(200), 5)
        results[correction] = d.close_window(w(200))
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


# --------------------------------------------------------------------------- robustness


def _traffic(
    rng: np.random.Generator, windows: int, volume: float, rate: float, cv: float = 0.0
) -> tuple[list[int], list[int]]:
    n = rng.poisson(volume, windows)
    r = np.full(windows, rate)
    if cv:
        sigma = math.sqrt(math.log1p(cv * cv))
        r = r * rng.lognormal(-sigma * sigma / 2, sigma, windows)
    return rng.binomial(n, r).tolist(), n.tolist()


def test_window_to_window_variation_is_estimated_and_allowed_for() -> None:
    """10 % rate variation at 10,000 messages doubles the variance of the count: the detector
    estimates it (κ ≈ 0.01) and judges a window against it, where a binomial test would not."""
    rng = np.random.default_rng(11)
    d = Detector()
    k, n = _traffic(rng, 1500, 10_000, 0.01, cv=0.1)
    alerts: list[Alert] = []
    for i, (kk, nn) in enumerate(zip(k, n, strict=True)):
        d.observe(LEAK, w(i), kk, nn)
        alerts += d.close_window(w(i))
    b = baseline(d)
    kappa = b.disp_num / b.disp_den
    assert 0.005 < kappa < 0.02
    # a window 50 % up: 5 binomial standard deviations, but 3.5 of the real ones
    d.observe(LEAK, w(1500), 150, 10_000)
    assert d.close_window(w(1500)) == []
    assert stats.binom.sf(149, 10_000, 0.01) < 1e-5
    assert len(alerts) <= 1


def test_the_forecast_follows_a_slow_drift() -> None:
    """The rate doubles over 1,000 windows; the trend keeps the forecast on it."""
    rng = np.random.default_rng(5)
    d = Detector()
    last = None
    for i in range(1200):
        rate = 0.01 * (1.0 + min(1.0, max(0.0, (i - 200) / 1000)))
        n = int(rng.poisson(10_000))
        d.observe(LEAK, w(i), int(rng.binomial(n, rate)), n)
        alerts = d.close_window(w(i))
        assert alerts == []
        last = i
    assert last is not None
    d.observe(LEAK, w(1200), 200, 10_000)
    assert d.close_window(w(1200)) == []
    b = baseline(d)
    level = b.b_f / b.a_f
    assert 0.0185 < level < 0.02  # the fast estimate lags a little behind the 2 % reached


def test_a_sustained_small_spike_is_caught_by_the_cusum_with_its_evidence() -> None:
    """1 % of 100 messages: one leak a window. Tripled, no single window is surprising enough,
    the evidence of several is."""
    rng = np.random.default_rng(3)
    d = Detector()
    k, n = _traffic(rng, 600, 100, 0.01)
    for i, (kk, nn) in enumerate(zip(k, n, strict=True)):
        d.observe(LEAK, w(i), kk, nn)
        d.close_window(w(i))
    assert d.firing() == []
    k, n = _traffic(rng, 40, 100, 0.03)
    fired: list[Alert] = []
    for i, (kk, nn) in enumerate(zip(k, n, strict=True), 600):
        d.observe(LEAK, w(i), kk, nn)
        fired += d.close_window(w(i))
        if fired:
            break
    [alert] = fired
    assert alert.fired_by == "cusum"
    assert alert.p_value > alert.adjusted_threshold  # the window alone was not enough
    c = alert.cusum
    assert c is not None
    defaults = DetectorSettings()
    assert c.statistic >= c.threshold == defaults.cusum_threshold
    assert c.ratio == defaults.cusum_ratio
    assert 2 <= c.windows <= 40 and c.observed >= 3
    assert c.observed > 2 * c.expected  # the evidence says "about three times"


# --------------------------------------------------------------------------- state


def test_state_round_trips_through_json_and_resumes_identically() -> None:
    settings_ = SMALL.model_copy(
        update={"fire_windows": 2, "resolve_windows": 2, "guard_windows": 3}
    )
    script = [2] * 10 + [20, 30] + [2] * 20 + [25, 25, 2]
    original = Detector(settings_)
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
    assert rest_a == rest_b
    assert [a.state for a in rest_a] == ["firing", "resolved", "firing"]


def test_exported_state_is_a_copy() -> None:
    d = Detector(SMALL)
    feed(d, [1] * 3)
    state = d.state()
    feed(d, [1], start=3)
    assert state.series[0].baseline.windows == 3


def test_the_exported_numbers_are_the_banks() -> None:
    assert set(FIELDS) == set(Baseline.model_fields) - {"guard"}


# --------------------------------------------------------------------------- bounds


def test_a_series_without_traffic_is_forgotten_after_its_lifetime() -> None:
    d = Detector(SMALL.model_copy(update={"series_idle_windows": 10}))
    for i in range(5):  # last traffic of both in window 4
        d.observe(ECHO, w(i), 1, messages=100)
        d.observe(LEAK, w(i), 1)
        d.close_window(w(i))
    for i in range(5, 14):  # ECHO: windows without messages; LEAK: no count reported
        d.observe(ECHO, w(i), 0, messages=0)
        assert d.close_window(w(i)) == []
    assert ECHO in d and LEAK in d and len(d) == 2
    assert baseline(d, LEAK).windows == 14  # a poisson series' silence still counts zeros
    assert d.series(ECHO).last_seen == w(4)  # type: ignore[union-attr]
    d.close_window(w(14))  # 10 windows after the last traffic
    assert ECHO not in d and LEAK not in d and d.state().series == []
    assert d.dropped == {"idle": 2, "bound": 0}
    feed(d, [1], key=ECHO, start=15, messages=100)  # back: a new baseline
    assert baseline(d, ECHO).windows == 1


def test_a_series_forgotten_while_firing_is_resolved_first() -> None:
    d = Detector(SMALL.model_copy(update={"series_idle_windows": 4}))
    feed(d, [2] * 10)
    [fired] = feed(d, [30], start=10)
    d.close_window(w(11))
    d.close_window(w(13))
    [resolved] = d.close_window(w(14))  # 4 windows after window 10
    assert resolved.state == "resolved" and resolved.alert_id == fired.alert_id
    assert resolved.resolved_at == w(15) and resolved.window_start == fired.window_start
    assert resolved.observed == fired.observed and LEAK not in d and d.firing() == []


def test_beyond_max_series_the_least_recently_seen_quiet_series_is_forgotten() -> None:
    d = Detector(SMALL.model_copy(update={"max_series": 2}))
    a, b, c = (SeriesKey(category="pii", tenant=t, direction="leak") for t in "abc")
    feed(d, [2] * 10 + [30], key=a, messages=100)  # a fires in window 10, then has no traffic
    feed(d, [2] * 5, key=b, start=11, messages=100)  # b: traffic up to window 15
    d.observe(c, w(16), 2, messages=100)  # a third series, over the bound
    assert d.close_window(w(16)) == []
    assert a in d and c in d and b not in d  # b: quiet and seen before c; a fires
    assert d.dropped == {"idle": 0, "bound": 1}
    d.observe(b, w(17), 2, messages=100)  # b again: now c is the quiet one seen least recently
    d.close_window(w(17))
    assert a in d and b in d and c not in d
    assert baseline(d, b).windows == 1  # a new baseline


def test_a_lowered_bound_forgets_firing_series_last_and_resolves_them() -> None:
    d = Detector(SMALL.model_copy(update={"max_series": 3}))
    a, b, c = (SeriesKey(category="pii", tenant=t, direction="leak") for t in "abc")
    for i in range(12):  # a and b fire in window 10, b keeps its traffic one window longer
        if i < 11:
            d.observe(a, w(i), 30 if i == 10 else 2, messages=100)
        d.observe(b, w(i), 30 if i == 10 else 2, messages=100)
        d.observe(c, w(i), 2, messages=100)
        d.close_window(w(i))
    assert len(d.firing()) == 2
    fired_a = next(x for x in d.firing() if x.tenant == "a")
    lowered = d.settings.model_copy(update={"max_series": 1})
    smaller = Detector.from_state(d.state().model_copy(update={"settings": lowered}))
    [resolved] = smaller.close_window(w(12))
    assert b in smaller and len(smaller) == 1  # c (quiet) went first, then a (seen earlier)
    assert resolved.alert_id == fired_a.alert_id and resolved.state == "resolved"
    assert smaller.dropped == {"idle": 0, "bound": 2}


@settings(max_examples=40, deadline=None)
@given(
    st.lists(
        st.lists(st.tuples(st.integers(0, 3), st.integers(0, 40), st.booleans()), max_size=4),
        min_size=1,
        max_size=60,
    ),
    st.integers(1, 3),
    st.integers(1, 8),
)
def test_any_traffic_keeps_the_series_within_their_bound_and_lifetime(
    windows: list[list[tuple[int, int, bool]]], max_series: int, idle: int
) -> None:
    """Whatever series report whatever counts: after every closed window the detector holds at
    most ``max_series`` series, none idle for ``series_idle_windows``; every firing alert is
    followed by at most one resolved one with its id; and a restored detector continues
    identically (the lifetime travels with the state)."""
    cfg = SMALL.model_copy(
        update={"max_series": max_series, "series_idle_windows": idle, "alpha": 0.05}
    )
    keys = [SeriesKey(category="pii", tenant=f"t{i}", direction="leak") for i in range(4)]
    d = Detector(cfg)
    last_traffic: dict[SeriesKey, int] = {}
    alerts: list[Alert] = []
    for i, reports in enumerate(windows):
        if i == len(windows) // 2:
            dumped = json.loads(json.dumps(d.state().model_dump(mode="json")))
            d = Detector.from_state(DetectorState.model_validate(dumped))
        for t, k, has_traffic in reports:
            n = 40 if has_traffic else 0
            d.observe(keys[t], w(i), min(k, n), n)
            if has_traffic:
                last_traffic[keys[t]] = i
        alerts += d.close_window(w(i))
        assert len(d) <= max_series
        for key in keys:
            if key in d:
                state = d.series(key)
                assert state is not None and state.last_seen is not None
                assert state.last_seen > w(i - idle)
    by_id: dict[str, list[str]] = {}
    for a in alerts:
        by_id.setdefault(a.alert_id, []).append(a.state)
    assert all(states in (["firing"], ["firing", "resolved"]) for states in by_id.values())
    assert {a.alert_id for a in d.firing()} <= {i for i, s in by_id.items() if s == ["firing"]}


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.integers(0, 30), min_size=12, max_size=40),
    st.integers(0, 60),
    st.integers(1, 30),
)
def test_more_findings_in_the_window_tested_never_undo_a_decision(
    history: list[int], k: int, more: int
) -> None:
    """Same history, one window with ``k`` or ``k + more`` findings of 200 messages: the higher
    count has the smaller p-value, the larger CUSUM, and fires whenever the lower one does."""
    cfg = SMALL.model_copy(update={"guard_windows": 2, "min_baseline_windows": 8})
    low, high = Detector(cfg), Detector(cfg)
    for d in (low, high):
        feed(d, [min(c, 200) for c in history], messages=200)
    n = len(history)
    a_low = feed(low, [k], start=n, messages=200)
    a_high = feed(high, [min(k + more, 200)], start=n, messages=200)
    s_low, s_high = baseline(low), baseline(high)
    assert s_high.cusum >= s_low.cusum - 1e-9
    if any(a.state == "firing" for a in a_low):
        assert any(a.state == "firing" for a in a_high)
        fired_low = next(a for a in a_low if a.state == "firing")
        fired_high = next(a for a in a_high if a.state == "firing")
        assert fired_high.p_value <= fired_low.p_value + 1e-12


@settings(max_examples=40, deadline=None)
@given(
    st.lists(st.tuples(st.integers(0, 60), st.integers(0, 400)), min_size=1, max_size=120),
    st.integers(0, 6),
    st.integers(0, 119),
)
def test_any_count_sequence_keeps_the_state_bounded_and_consistent(
    windows: list[tuple[int, int]], guard: int, cut: int
) -> None:
    """Whatever the counts: the state is bounded (a fixed set of numbers, at most ``guard``
    windows waiting), p-values and statistics stay in range, episodes alternate firing /
    resolved under one id, and a detector restored from JSON at any point continues
    identically."""
    cfg = DetectorSettings(
        baseline_half_life=5, min_baseline_windows=3, guard_windows=guard, alpha=0.01
    )
    d = Detector(cfg)
    resumed: Detector | None = None
    episodes: list[Alert] = []
    tail_a: list[Alert] = []
    tail_b: list[Alert] = []
    for i, (k, n) in enumerate(windows):
        if i == cut:
            dumped = json.loads(json.dumps(d.state().model_dump(mode="json")))
            resumed = Detector.from_state(DetectorState.model_validate(dumped))
        k = min(k, n)
        for det in (d, resumed) if resumed is not None else (d,):
            det.observe(LEAK, w(i), k, n)
        alerts = d.close_window(w(i))
        if resumed is not None:
            tail_a += alerts
            tail_b += resumed.close_window(w(i))
        episodes += alerts
        b = baseline(d)
        assert len(b.guard) <= guard
        assert b.windows <= i + 1
        assert 0.0 <= b.cusum <= 1.5 * cfg.cusum_threshold
        for a in alerts:
            assert 0.0 <= a.p_value <= 1.0 and a.expected >= 0.0 and a.variance_factor >= 1.0
    assert tail_a == tail_b
    states = [a.state for a in episodes]
    assert states == ["firing", "resolved"] * (len(states) // 2) + ["firing"] * (len(states) % 2)
    for fired, resolved in zip(episodes[::2], episodes[1::2], strict=False):
        assert fired.alert_id == resolved.alert_id
