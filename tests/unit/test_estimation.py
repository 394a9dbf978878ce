"""Population-rate estimation from sampled checks: exact values, edges, validation, coverage."""

from __future__ import annotations

import doctest
import math
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.stats import binomtest

import services.estimation as estimation_module
from services.estimation import (
    RateEstimate,
    RateTracker,
    clopper_pearson,
    cluster_degrees_of_freedom,
    cluster_design_effect,
    estimate_rate,
    horvitz_thompson_rate,
    korn_graubard,
)
from services.sampling import Sampler


def cp(x: int, n: int, confidence: float = 0.95) -> tuple[float, float]:
    """Clopper–Pearson via scipy's binomtest, independent of the module's beta.ppf code."""
    ci = binomtest(x, n).proportion_ci(confidence_level=confidence, method="exact")
    return float(ci.low), float(ci.high)


# --- hand-computed cases --------------------------------------------------------------------


def test_post_stratified_estimate_and_interval_by_hand() -> None:
    # always: 100 answers, 30 hits. sampled: 900 answers, 100 checked, 7 hits.
    e = estimate_rate(30, 100, 7, 100, 900, inclusion_probability=0.1)
    assert e is not None
    lo, hi = cp(7, 100)
    assert e.estimate == pytest.approx((30 + 900 * 7 / 100) / 1000)  # 0.093
    assert e.lower == pytest.approx((30 + 900 * lo) / 1000, rel=1e-9)
    assert e.upper == pytest.approx((30 + 900 * hi) / 1000, rel=1e-9)
    assert e.horvitz_thompson == pytest.approx((30 + 7 / 0.1) / 1000)  # 0.1
    assert e.method == "clopper-pearson"
    assert (e.population, e.checked, e.hits) == (1000, 200, 37)
    assert (e.always_population, e.always_checked, e.always_hits) == (100, 100, 30)
    assert (e.sampled_population, e.sampled_checked, e.sampled_hits) == (900, 100, 7)
    assert e.confidence == 0.95
    assert e.design_effect == 1.0


def test_ratio_estimate_differs_from_horvitz_thompson_when_sample_size_is_off() -> None:
    # p = 0.1 of 900 should give ~90 checks; 120 were drawn. HT overshoots, the ratio form does not.
    e = estimate_rate(0, 100, 12, 120, 900, inclusion_probability=0.1)
    assert e is not None
    assert e.estimate == pytest.approx(900 * 0.1 / 1000)
    assert e.horvitz_thompson == pytest.approx(120 / 1000)


def test_zero_hits_in_sample_lower_bound_is_the_always_part() -> None:
    e = estimate_rate(5, 50, 0, 40, 950)
    assert e is not None
    assert e.estimate == pytest.approx(5 / 1000)
    assert e.lower == pytest.approx(5 / 1000)
    assert e.upper == pytest.approx((5 + 950 * (1 - 0.025 ** (1 / 40))) / 1000)


def test_all_hits_in_sample_upper_bound_is_the_whole_stratum() -> None:
    e = estimate_rate(5, 50, 40, 40, 950)
    assert e is not None
    assert e.upper == pytest.approx((5 + 950) / 1000)
    assert e.lower == pytest.approx((5 + 950 * 0.025 ** (1 / 40)) / 1000)


def test_bounds_never_exceed_what_the_checks_prove() -> None:
    # 99 of 100 checked, none a hit: at most the one unchecked answer can be a hit.
    e = estimate_rate(10, 100, 0, 99, 100)
    assert e is not None
    assert e.upper == pytest.approx((10 + 1) / 200)
    # 99 of 100 checked, all hits: at least those 99.
    e = estimate_rate(10, 100, 99, 99, 100)
    assert e is not None
    assert e.lower == pytest.approx((10 + 99) / 200)


def test_sampled_stratum_fully_checked_is_a_census() -> None:
    e = estimate_rate(3, 10, 17, 90, 90, inclusion_probability=1.0)
    assert e is not None
    assert e.estimate == e.lower == e.upper == pytest.approx(0.2)
    assert e.method == "census"
    assert e.horvitz_thompson == pytest.approx(0.2)


def test_no_sampled_stratum_is_a_census_of_the_always_stratum() -> None:
    e = estimate_rate(7, 20, 0, 0, 0)
    assert e is not None
    assert e.estimate == e.lower == e.upper == pytest.approx(0.35)
    assert e.method == "census"


def test_nothing_checked_in_sampled_stratum_is_not_estimable() -> None:
    e = estimate_rate(30, 100, 0, 0, 900, inclusion_probability=0.0)
    assert not e.estimable
    assert e.not_estimable == "unchecked-stratum"
    assert (e.estimate, e.lower, e.upper) == (None, None, None)  # no [0.03, 0.93] posing as one
    assert e.method == "not-estimable"
    assert e.horvitz_thompson is None
    assert (e.population, e.checked, e.hits) == (1000, 100, 30)  # the counts are still given


def test_only_sampled_stratum_and_nothing_checked() -> None:
    e = estimate_rate(0, 0, 0, 0, 10)
    assert (e.estimable, e.estimate, e.lower, e.upper) == (False, None, None, None)


def test_empty_population_is_not_estimable() -> None:
    for e in (estimate_rate(0, 0, 0, 0, 0), RateTracker().estimate()):
        assert not e.estimable
        assert e.not_estimable == "no-answers"
        assert e.population == 0


def test_higher_confidence_gives_a_wider_interval() -> None:
    e90 = estimate_rate(30, 100, 7, 100, 900, 0.90)
    e99 = estimate_rate(30, 100, 7, 100, 900, 0.99)
    assert e90 is not None and e99 is not None
    assert e99.lower < e90.lower <= e90.upper < e99.upper
    assert e90.estimate == e99.estimate


def test_design_effect_uses_the_effective_sample_size() -> None:
    plain = estimate_rate(0, 0, 20, 200, 2000)
    kg = estimate_rate(0, 0, 20, 200, 2000, design_effect=2.0)
    assert plain is not None and kg is not None
    lo, hi = cp(10, 100)  # x/deff, n/deff
    assert kg.lower == pytest.approx(2000 * lo / 2000)
    assert kg.upper == pytest.approx(2000 * hi / 2000)
    assert kg.estimate == plain.estimate
    assert kg.upper - kg.lower > plain.upper - plain.lower
    assert kg.method == "korn-graubard"
    assert kg.design_effect == 2.0


def test_korn_graubard_degrees_of_freedom_by_hand() -> None:
    # 200 answers from 10 conversations, deff 2: n* = 100, times (t_199 / t_9)², x* in proportion.
    from scipy.stats import t

    factor = (t.ppf(0.975, 199) / t.ppf(0.975, 9)) ** 2
    kg = korn_graubard(20, 200, 2.0, 9)
    n_eff = 100 * factor
    assert kg.effective_n == pytest.approx(n_eff)
    lo, hi = clopper_pearson(10 * factor, n_eff)
    assert (kg.lower, kg.upper) == (pytest.approx(lo), pytest.approx(hi))
    e = estimate_rate(0, 0, 20, 200, 2000, design_effect=2.0, conversations=10)
    assert e.effective_sample_size == pytest.approx(n_eff)
    assert (e.conversations, e.degrees_of_freedom) == (10, 9)
    assert (e.lower, e.upper) == (pytest.approx(lo), pytest.approx(hi))
    assert e.method == "korn-graubard"


def test_one_degree_of_freedom_gives_the_widest_interval() -> None:
    kg = korn_graubard(3, 10, 1.0, 1)
    assert kg.effective_n == pytest.approx(10 * (2.2622 / 12.7062) ** 2, rel=1e-4)  # (t_9/t_1)²
    assert kg.upper - kg.lower > 0.8


@pytest.mark.parametrize(
    ("args", "match"),
    [
        ((1, 0, 1.0, None), "hits"),
        ((2, 1, 1.0, None), "hits"),
        ((1, 10, 0.5, None), "design_effect"),
        ((1, 10, 1.0, 0.5), "degrees_of_freedom"),
        ((1, 10, 1.0, math.nan), "degrees_of_freedom"),
    ],
)
def test_korn_graubard_validation(args: tuple[Any, ...], match: str) -> None:
    with pytest.raises(ValueError, match=match):
        korn_graubard(*args)


def test_conversations_must_fit_the_checks() -> None:
    with pytest.raises(ValueError, match="conversations"):
        estimate_rate(0, 0, 1, 10, 100, conversations=11)
    with pytest.raises(ValueError, match="degrees_of_freedom"):
        estimate_rate(0, 0, 1, 10, 100, conversations=5, degrees_of_freedom=0.5)
    one = estimate_rate(0, 0, 1, 10, 100, conversations=1)
    assert one.degrees_of_freedom == 1.0  # one conversation: the widest interval
    assert estimate_rate(0, 0, 0, 0, 100, conversations=0).not_estimable == "unchecked-stratum"


# --- validation -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "args",
    [
        (-1, 10, 0, 0, 0),
        (0, -1, 0, 0, 0),
        (0, 0, -1, 0, 0),
        (0, 0, 0, -1, 0),
        (0, 0, 0, 0, -1),
        (1.0, 10, 0, 0, 0),
        (True, 10, 0, 0, 0),
        ("1", 10, 0, 0, 0),
        (11, 10, 0, 0, 0),  # hits above checks
        (0, 10, 6, 5, 100),  # hits above checks
        (0, 10, 0, 101, 100),  # checks above the stratum
        (None, 10, 0, 0, 0),
    ],
)
def test_invalid_counts_raise(args: tuple[Any, ...]) -> None:
    with pytest.raises(ValueError):
        estimate_rate(*args)


@pytest.mark.parametrize("confidence", [0, 1, 0.0, 1.0, -0.5, 1.5, math.nan, True, "0.95", None])
def test_invalid_confidence_raises(confidence: Any) -> None:
    with pytest.raises(ValueError, match="confidence"):
        estimate_rate(1, 10, 1, 10, 100, confidence)


@pytest.mark.parametrize("deff", [0.5, 0.0, -1.0, math.nan, math.inf, True, "2"])
def test_invalid_design_effect_raises(deff: Any) -> None:
    with pytest.raises(ValueError, match="design_effect"):
        estimate_rate(1, 10, 1, 10, 100, design_effect=deff)


@pytest.mark.parametrize("p", [-0.1, 1.1, math.nan, True, "0.1"])
def test_invalid_inclusion_probability_raises(p: Any) -> None:
    with pytest.raises(ValueError, match="inclusion_probability"):
        estimate_rate(1, 10, 1, 10, 100, inclusion_probability=p)


def test_checks_with_inclusion_probability_zero_raise() -> None:
    with pytest.raises(ValueError, match="probability 0"):
        estimate_rate(1, 10, 1, 10, 100, inclusion_probability=0.0)


def test_numpy_integers_are_accepted() -> None:
    args: tuple[Any, ...] = (np.int64(30), np.int32(100), np.int64(7), 100, np.uint16(900))
    e = estimate_rate(*args)
    assert e == estimate_rate(30, 100, 7, 100, 900)


# --- building blocks ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("x", "n"), [(0, 1), (1, 1), (0, 10), (3, 10), (10, 10), (7, 100), (1, 5000), (2500, 5000)]
)
@pytest.mark.parametrize("confidence", [0.8, 0.95, 0.999])
def test_clopper_pearson_matches_binomtest(x: int, n: int, confidence: float) -> None:
    lo, hi = clopper_pearson(x, n, confidence)
    exp_lo, exp_hi = cp(x, n, confidence)
    assert lo == pytest.approx(exp_lo, abs=1e-12)
    assert hi == pytest.approx(exp_hi, abs=1e-12)


@pytest.mark.parametrize(("x", "n"), [(-1, 10), (11, 10), (0, 0), (math.nan, 10), (1, math.inf)])
def test_clopper_pearson_rejects_bad_counts(x: float, n: float) -> None:
    with pytest.raises(ValueError):
        clopper_pearson(x, n)


def test_horvitz_thompson() -> None:
    assert horvitz_thompson_rate({1.0: 30, 0.1: 7}, 1000) == pytest.approx(0.1)
    assert horvitz_thompson_rate({0.5: 10, 0.25: 10}, 100) == pytest.approx(0.6)
    assert horvitz_thompson_rate({0.01: 5}, 100) == pytest.approx(5.0)  # may exceed 1
    assert horvitz_thompson_rate({}, 0) is None
    with pytest.raises(ValueError):
        horvitz_thompson_rate({0.0: 1}, 10)
    with pytest.raises(ValueError):
        horvitz_thompson_rate({1.5: 1}, 10)
    with pytest.raises(ValueError):
        horvitz_thompson_rate({0.5: -1}, 10)


def test_design_effect_of_independent_answers_is_one() -> None:
    assert cluster_design_effect([1] * 50, [1] * 10 + [0] * 40) == 1.0
    assert cluster_design_effect([], []) == 1.0


def test_design_effect_when_conversations_agree_is_the_maximum() -> None:
    sizes = [2, 4, 6, 2, 4, 6]
    hits = [2, 0, 6, 0, 4, 0]
    assert cluster_design_effect(sizes, hits) == pytest.approx(sum(m * m for m in sizes) / 24)


@pytest.mark.parametrize("hits", [[0, 0, 0], [2, 3, 4]])
def test_design_effect_without_variation_is_conservative(hits: list[int]) -> None:
    sizes = [2, 3, 4]
    assert cluster_design_effect(sizes, hits) == pytest.approx((4 + 9 + 16) / 9)


def test_design_effect_of_one_conversation_is_its_size() -> None:
    assert cluster_design_effect([7], [3]) == 7.0


def test_design_effect_matches_the_linearisation_formula() -> None:
    rng = np.random.default_rng(7)
    sizes = 1 + rng.poisson(3, 400)
    hits = rng.binomial(sizes, rng.beta(0.5, 4.5, 400))
    m, y = sizes.astype(float), hits.astype(float)
    r = y.sum() / m.sum()
    k = len(m)
    v_clu = k / (k - 1) * ((y - r * m) ** 2).sum() / m.sum() ** 2
    v_srs = r * (1 - r) / m.sum()
    expected = min(max(v_clu / v_srs, 1.0), (m * m).sum() / m.sum())
    assert cluster_design_effect(sizes.tolist(), hits.tolist()) == pytest.approx(expected)
    assert expected > 1.2  # the data are clustered


def _residual_df(sizes: list[int], hits: list[int]) -> float:
    m, y = np.asarray(sizes, float), np.asarray(hits, float)
    e = y - y.sum() / m.sum() * m
    k = len(m)
    if not (e**2).sum() > 1e-12:  # no variation: k − 1
        return k - 1.0
    return min(k - 1.0, max(1.0, 3 * (e**2).sum() ** 2 / (e**4).sum() - 2))


def test_degrees_of_freedom_match_the_formula_and_fall_when_few_conversations_carry_hits() -> None:
    rng = np.random.default_rng(3)
    sizes = (1 + rng.poisson(9, 30)).tolist()
    spread = rng.binomial(sizes, 0.2).tolist()
    assert cluster_degrees_of_freedom(sizes, spread) == pytest.approx(_residual_df(sizes, spread))
    assert cluster_degrees_of_freedom(sizes, spread) > 20  # hits everywhere: close to k − 1
    lumped = [sizes[0]] + [0] * 29  # one conversation holds every hit
    assert cluster_degrees_of_freedom(sizes, lumped) < 2
    assert cluster_degrees_of_freedom([1] * 40, [1] * 3 + [0] * 37) == 39  # no clustering
    assert cluster_degrees_of_freedom([5] * 6, [0] * 6) == 5  # no variation: k − 1
    assert cluster_degrees_of_freedom([7], [3]) == 1


@settings(max_examples=100, deadline=None)
@given(st.lists(st.tuples(st.integers(1, 30), st.floats(0, 1)), min_size=1, max_size=40))
def test_cluster_sums_updated_answer_by_answer_equal_the_batch_formulas(
    convs: list[tuple[int, float]],
) -> None:
    sizes = [m for m, _ in convs]
    hits = [round(m * share) for m, share in convs]
    tracker = RateTracker()
    tracker.observe_population("sampled", 0.5, count=sum(sizes))
    order = [(c, j) for c, m in enumerate(sizes) for j in range(m)]
    for c, j in sorted(order, key=lambda cj: (cj[1], cj[0])):  # interleaved conversations
        tracker.observe("sampled", 0.5, hit=j < hits[c], conversation_id=f"c{c}")
    sums = tracker._sampled[0.5].clusters
    assert sums.design_effect() == pytest.approx(cluster_design_effect(sizes, hits))
    assert sums.degrees_of_freedom() == pytest.approx(cluster_degrees_of_freedom(sizes, hits))
    if len(sizes) > 1 and 0 < sum(hits) < sum(sizes) and max(sizes) > 1:
        assert sums.degrees_of_freedom() == pytest.approx(_residual_df(sizes, hits))


def test_design_effect_validation() -> None:
    with pytest.raises(ValueError):
        cluster_design_effect([1, 2], [1])
    with pytest.raises(ValueError, match="exceed"):
        cluster_design_effect([1, 2], [2, 0])
    with pytest.raises(ValueError):
        cluster_design_effect([-1], [0])


# --- properties -----------------------------------------------------------------------------


@st.composite
def counts(draw: st.DrawFn) -> tuple[int, int, int, int, int]:
    n_a = draw(st.integers(0, 10_000))
    x_a = draw(st.integers(0, n_a))
    big_n_s = draw(st.integers(0, 10_000))
    n_s = draw(st.integers(0, big_n_s))
    x_s = draw(st.integers(0, n_s))
    return x_a, n_a, x_s, n_s, big_n_s


@settings(max_examples=300, deadline=None)
@given(
    counts(),
    st.sampled_from([0.5, 0.8, 0.9, 0.95, 0.99, 0.999]),
    st.floats(1.0, 10.0),
    st.integers(1, 10_000),
)
def test_interval_contains_estimate_and_respects_the_certain_bounds(
    c: tuple[int, int, int, int, int], confidence: float, deff: float, k: int
) -> None:
    x_a, n_a, x_s, n_s, big_n_s = c
    conversations = min(k, n_s) if n_s else None
    e = estimate_rate(
        x_a, n_a, x_s, n_s, big_n_s, confidence, design_effect=deff, conversations=conversations
    )
    n = n_a + big_n_s
    if n == 0 or (n_s == 0 and big_n_s > 0):
        assert not e.estimable and e.not_estimable in ("no-answers", "unchecked-stratum")
        assert (e.estimate, e.lower, e.upper) == (None, None, None)
        return
    assert e.estimable and e.estimate is not None and e.lower is not None and e.upper is not None
    assert 0.0 <= e.lower <= e.estimate <= e.upper <= 1.0
    eps = 1e-12
    assert e.lower >= (x_a + x_s) / n - eps  # every hit seen is in the population
    assert e.upper <= (n - (n_a - x_a) - (n_s - x_s)) / n + eps  # so is every non-hit seen
    RateEstimate.model_validate(e.model_dump())  # the invariants of the published contract


@settings(max_examples=200, deadline=None)
@given(
    st.integers(2, 2_000),
    st.floats(0.0, 1.0),
    st.floats(1.0, 20.0),
    st.floats(0.0, 1.0),
)
def test_fewer_conversations_never_narrow_the_interval(
    n: int, share: float, deff: float, where: float
) -> None:
    """The degrees-of-freedom correction only widens: fewer conversations, a wider interval, and
    with as many conversations as answers it changes nothing."""
    hits = round(share * n)
    df_hi = 1.0 + where * (n - 2)
    df_lo = max(1.0, df_hi / 2)
    wide = korn_graubard(hits, n, deff, df_lo)
    narrow = korn_graubard(hits, n, deff, df_hi)
    eps = 1e-9
    assert wide.lower <= narrow.lower + eps and narrow.upper <= wide.upper + eps
    assert wide.effective_n <= narrow.effective_n + eps
    assert korn_graubard(hits, n, deff, n - 1) == korn_graubard(hits, n, deff, None)


# --- the tracker ----------------------------------------------------------------------------


def feed(tracker: RateTracker, stratum: Any, p: float, population: int, hits: list[bool]) -> None:
    tracker.observe_population(stratum, p, count=population)
    for h in hits:
        tracker.observe(stratum, p, hit=h)


def test_tracker_matches_estimate_rate() -> None:
    t = RateTracker()
    feed(t, "always", 1.0, 100, [True] * 30 + [False] * 70)
    feed(t, "sampled", 0.1, 900, [True] * 7 + [False] * 93)
    assert t.estimate() == estimate_rate(30, 100, 7, 100, 900, inclusion_probability=0.1)
    assert t.estimate(0.9) == estimate_rate(30, 100, 7, 100, 900, 0.9, inclusion_probability=0.1)


def test_tracker_population_one_by_one_and_always_without_probability() -> None:
    t = RateTracker()
    for _ in range(4):
        t.observe_population("always")
    for _ in range(6):
        t.observe_population("sampled", 0.5)
    t.observe("always", 1.0, hit=True)
    for _ in range(3):
        t.observe("always", 1.0, hit=False)
    t.observe("sampled", 0.5, hit=True)
    t.observe("sampled", 0.5, hit=False)
    e = t.estimate()
    assert e is not None
    assert e.estimate == pytest.approx((1 + 6 * 0.5) / 10)
    assert (e.population, e.checked, e.hits) == (10, 6, 2)


def test_tracker_with_rate_zero_has_no_estimate() -> None:
    t = RateTracker()
    feed(t, "always", 1.0, 10, [True, False] * 5)
    t.observe_population("sampled", 0.0, count=90)
    e = t.estimate()
    assert not e.estimable
    assert e.not_estimable == "unchecked-stratum"
    assert (e.estimate, e.lower, e.upper) == (None, None, None)


def test_tracker_splits_strata_when_the_rate_changes() -> None:
    t = RateTracker()
    feed(t, "always", 1.0, 100, [True] * 20 + [False] * 80)
    feed(t, "sampled", 0.1, 500, [True] * 5 + [False] * 45)
    feed(t, "sampled", 0.4, 400, [True] * 16 + [False] * 144)
    e = t.estimate(0.95)
    assert e is not None
    assert e.estimate == pytest.approx((20 + 500 * 0.1 + 400 * 0.1) / 1000)
    lo1, hi1 = cp(5, 50, 0.975)  # Bonferroni: two sub-strata, α/2 each
    lo2, hi2 = cp(16, 160, 0.975)
    assert e.lower == pytest.approx((20 + 500 * lo1 + 400 * lo2) / 1000, rel=1e-9)
    assert e.upper == pytest.approx((20 + 500 * hi1 + 400 * hi2) / 1000, rel=1e-9)
    assert e.horvitz_thompson == pytest.approx((20 + 5 / 0.1 + 16 / 0.4) / 1000)


def test_tracker_unchecked_always_answers_widen_the_interval() -> None:
    t = RateTracker()
    feed(t, "always", 1.0, 100, [True] * 18 + [False] * 72)  # 10 always answers not checked
    feed(t, "sampled", 1.0, 100, [False] * 100)
    e = t.estimate()
    assert e is not None
    assert e.estimate == pytest.approx(18 * 100 / 90 / 200)
    assert (e.lower, e.upper) == (pytest.approx(18 / 200), pytest.approx(28 / 200))
    assert e.method == "clopper-pearson"  # not a census any more
    assert e.horvitz_thompson is None


def test_tracker_with_conversation_ids_uses_the_design_effect() -> None:
    t = RateTracker()
    t.observe_population("sampled", 0.2, count=1000)
    sizes, hits = [], []
    for c in range(50):
        m = 1 + c % 5
        y = m if c % 7 == 0 else 0
        sizes.append(m)
        hits.append(y)
        for j in range(m):
            t.observe("sampled", 0.2, hit=j < y, conversation_id=f"c{c}")
    e = t.estimate()
    assert e is not None
    deff = cluster_design_effect(sizes, hits)
    assert deff > 1
    assert e.design_effect == pytest.approx(deff)
    assert e.method == "korn-graubard"
    df = cluster_degrees_of_freedom(sizes, hits)
    assert e.conversations == 50 and e.degrees_of_freedom == pytest.approx(df)
    assert 1 <= df < 49  # the hits sit in 8 of the 50 conversations
    expected = estimate_rate(
        0,
        0,
        sum(hits),
        sum(sizes),
        1000,
        design_effect=deff,
        conversations=50,
        degrees_of_freedom=df,
    )
    assert (e.lower, e.upper) == (pytest.approx(expected.lower), pytest.approx(expected.upper))
    assert e.effective_sample_size == pytest.approx(expected.effective_sample_size)


def test_tracker_without_conversation_ids_treats_answers_as_independent() -> None:
    t = RateTracker()
    feed(t, "sampled", 0.2, 1000, [True] * 30 + [False] * 170)
    e = t.estimate()
    assert e.design_effect == 1.0
    assert e.method == "clopper-pearson"
    assert e.conversations is None and e.degrees_of_freedom is None


def test_tracker_with_one_answer_per_conversation_is_exactly_clopper_pearson() -> None:
    t = RateTracker()
    t.observe_population("sampled", 0.2, count=1000)
    for i in range(200):
        t.observe("sampled", 0.2, hit=i < 30, conversation_id=f"c{i}")
    e = t.estimate()
    plain = estimate_rate(0, 0, 30, 200, 1000)
    assert (e.lower, e.upper, e.method) == (plain.lower, plain.upper, "clopper-pearson")
    assert e.conversations == 200 and e.effective_sample_size == 200


def test_tracker_keeps_a_bounded_number_of_conversations() -> None:
    t = RateTracker(max_conversations=3)
    t.observe_population("sampled", 0.5, count=100)
    for c in "abcde":
        for _ in range(2):
            t.observe("sampled", 0.5, hit=c == "a", conversation_id=c)
    bucket = t._sampled[0.5]
    assert list(bucket.conversations) == ["c", "d", "e"]  # the least recent went first
    assert bucket.clusters.k == 5 and bucket.checked == 10
    t.observe("sampled", 0.5, hit=False, conversation_id="a")  # forgotten: a new cluster
    assert bucket.clusters.k == 6
    with pytest.raises(ValueError, match="max_conversations"):
        RateTracker(max_conversations=0)


def test_tracker_validation() -> None:
    t = RateTracker()
    with pytest.raises(ValueError, match="stratum"):
        t.observe_population("other")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="inclusion probability"):
        t.observe_population("sampled")
    with pytest.raises(ValueError, match="must be 1"):
        t.observe_population("always", 0.5)
    with pytest.raises(ValueError, match="must be 1"):
        t.observe("always", 0.5, hit=True)
    with pytest.raises(ValueError):
        t.observe("sampled", 0.0, hit=True)  # a checked answer had probability > 0
    with pytest.raises(ValueError):
        t.observe("sampled", 1.5, hit=True)
    with pytest.raises(ValueError, match="hit"):
        t.observe("sampled", 0.5, hit=1)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="conversation_id"):
        t.observe("sampled", 0.5, hit=True, conversation_id=3)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="count"):
        t.observe_population("always", count=-1)
    t.observe("sampled", 0.5, hit=True)  # checked but never counted in the population
    with pytest.raises(ValueError, match="observe_population"):
        t.estimate()
    t.observe_population("sampled", 0.5)
    assert t.estimate().estimable
    with pytest.raises(ValueError, match="confidence"):
        t.estimate(1.0)


def test_estimate_is_a_frozen_model() -> None:
    e = estimate_rate(1, 10, 1, 10, 100)
    assert isinstance(e, RateEstimate)
    with pytest.raises(ValueError):
        e.lower = 0.0  # type: ignore[misc]
    assert RateEstimate.model_validate_json(e.model_dump_json()) == e


def test_module_doctests() -> None:
    result = doctest.testmod(estimation_module, optionflags=doctest.ELLIPSIS)
    assert result.attempted > 0
    assert result.failed == 0


# --- coverage by simulation with known truth ------------------------------------------------


def test_coverage_end_to_end_with_the_real_sampler() -> None:
    """200 populations of 5,000 answers (one per conversation); ~20% in the always stratum with
    rate 0.3, the rest rate 0.07, sampled at p = 0.1 by the keyed hash; the 95% interval must
    cover the realised population rate in ≥ 93% of them. Seeded: deterministic, cannot flake."""
    rng = np.random.default_rng(20240601)
    reps, size, p = 200, 5_000, 0.1
    medical = [SimpleNamespace(conversation_id="", category="medical", severity="low")]
    covered = 0
    widths = []
    for rep in range(reps):
        sampler = Sampler(f"key-{rep}".encode(), p)
        always_arr = rng.random(size) < 0.2
        hit_arr = np.where(always_arr, rng.random(size) < 0.3, rng.random(size) < 0.07)
        always, hit = always_arr.tolist(), hit_arr.tolist()
        tracker = RateTracker()
        for i in range(size):
            cid = f"conv-{i}"
            if always[i]:
                medical[0].conversation_id = cid
                decision = sampler.decide(cid, medical)
            else:
                decision = sampler.decide(cid, [])
            tracker.observe_population(decision.stratum, decision.inclusion_probability)
            if decision.sampled:
                tracker.observe(decision.stratum, decision.inclusion_probability, hit[i], cid)
        e = tracker.estimate(0.95)
        assert e is not None and e.estimate is not None
        truth = float(hit_arr.mean())
        covered += e.lower <= truth <= e.upper
        widths.append(e.upper - e.lower)
    assert covered / reps >= 0.93
    assert float(np.mean(widths)) < 0.06  # and the interval is informative


def test_korn_graubard_restores_coverage_when_conversations_are_alike() -> None:
    """Whole conversations are sampled; answers within one are strongly alike (ICC 0.5).
    Answers treated as independent under-cover; the design-effect interval does not."""
    rng = np.random.default_rng(99)
    reps, conversations, p, theta, rho = 200, 1_500, 0.1, 0.1, 0.5
    a, b = theta * (1 - rho) / rho, (1 - theta) * (1 - rho) / rho
    covered_cp = covered_kg = 0
    for _ in range(reps):
        sizes = 1 + rng.poisson(3.0, conversations)
        conv = np.repeat(np.arange(conversations), sizes)
        hit = rng.random(conv.size) < rng.beta(a, b, conversations)[conv]
        pick = (rng.random(conversations) < p)[conv]
        truth = float(hit.mean())
        m = np.bincount(conv[pick], minlength=conversations)
        y = np.bincount(conv[pick], weights=hit[pick], minlength=conversations).astype(int)
        deff = cluster_design_effect(m[m > 0].tolist(), y[m > 0].tolist())
        args = (0, 0, int(hit[pick].sum()), int(pick.sum()), conv.size)
        plain = estimate_rate(*args)
        kg = estimate_rate(*args, design_effect=deff)
        assert plain is not None and kg is not None
        covered_cp += plain.lower <= truth <= plain.upper
        covered_kg += kg.lower <= truth <= kg.upper
    assert covered_kg / reps >= 0.92
    assert covered_cp / reps < 0.9
