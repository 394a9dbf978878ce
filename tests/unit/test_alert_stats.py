"""The exact tests and the multiple-testing procedures of services.alerting.stats."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

from services.alerting.stats import (
    Decision,
    correct,
    correct_arrays,
    log_likelihood_ratio,
    upper_tail,
)


@pytest.mark.parametrize(("k", "n", "q"), [(1, 100, 0.01), (25, 1000, 0.01), (0, 10, 0.5)])
def test_without_spread_the_window_test_is_the_exact_binomial_tail(
    k: int, n: int, q: float
) -> None:
    got = upper_tail([k], [n], [q], [0.0], [True])[0]
    assert got == pytest.approx(stats.binom.sf(k - 1, n, q), rel=1e-9)


@pytest.mark.parametrize(("k", "mu"), [(1, 0.5), (25, 10.0), (3, 0.01)])
def test_without_spread_the_poisson_test_is_the_exact_poisson_tail(k: int, mu: float) -> None:
    got = upper_tail([k], [1.0], [mu], [0.0], [False])[0]
    assert got == pytest.approx(stats.poisson.sf(k - 1, mu), rel=1e-9)


def test_the_spread_is_a_log_normal_rate_factor() -> None:
    """Against a direct integral over the factor on a fine grid (not the quadrature)."""
    n, q, cv = 10_000, 0.01, 0.3
    sigma = np.sqrt(np.log1p(cv * cv))
    z = np.linspace(-9, 9, 20_001)
    density = stats.norm.pdf(z)
    rates = q * np.exp(sigma * z - sigma * sigma / 2)
    for k in (100, 180, 250):
        direct = np.trapezoid(stats.binom.sf(k - 1, n, rates) * density, z)
        got = upper_tail([k], [n], [q], [cv * cv], [True])[0]
        assert got == pytest.approx(direct, rel=0.05), k
    # the variation makes a high window far less surprising than a binomial would say
    assert upper_tail([180], [n], [q], [cv * cv], [True])[0] > 1000 * stats.binom.sf(179, n, q)


@settings(max_examples=60, deadline=None)
@given(
    st.integers(1, 400),
    st.integers(1, 5_000),
    st.floats(1e-4, 0.3),
    st.floats(0.0, 1.0),
    st.booleans(),
)
def test_the_tail_falls_with_the_count_and_rises_with_the_spread(
    k: int, n: int, q: float, spread: float, binomial: bool
) -> None:
    k = min(k, n)
    e = n if binomial else 1.0
    rate = q if binomial else q * n
    a = upper_tail([k, k + 1], [e, e], [rate, rate], [spread, spread], [binomial, binomial])
    assert 0.0 <= a[1] <= a[0] + 1e-12 <= 1.0 + 1e-12
    if k > 2 * e * rate + 5:  # well above the forecast: more spread, less surprise
        wider = upper_tail([k], [e], [rate], [spread + 0.5], [binomial])[0]
        assert wider >= a[0] - 1e-12


def test_the_likelihood_ratio_without_spread() -> None:
    got = log_likelihood_ratio([30, 5], [1000, 1], [0.01, 2.0], 3.0, [0.0, 0.0], [True, False])
    q, q1 = 0.01, 0.03
    assert got[0] == pytest.approx(30 * np.log(q1 / q) + 970 * np.log((1 - q1) / (1 - q)))
    assert got[1] == pytest.approx(5 * np.log(3.0) - 2.0 * 2.0)
    # a share cannot triple past 1: the alternative stops half-way
    capped = log_likelihood_ratio([8], [10], [0.5], 3.0, [0.0], [True])[0]
    assert capped == pytest.approx(8 * np.log(0.75 / 0.5) + 2 * np.log(0.25 / 0.5))


def test_with_spread_a_high_window_weighs_less() -> None:
    plain, spread = log_likelihood_ratio(
        [250, 250], [10_000] * 2, [0.01] * 2, 3.0, [0.0, 0.09], [True] * 2
    )
    assert 0 < spread < plain / 3


def _direct_log_ratio(k: int, e: float, q: float, spread: float, binomial: bool) -> float:
    """The two likelihood integrals on a very wide, very fine grid of the standard normal z."""
    sigma = np.sqrt(np.log1p(spread))
    z = np.linspace(-80, 80, 400_001)
    logs = []
    for base in (min(3 * q, (1 + q) / 2) if binomial else 3 * q, q):
        rates = base * np.exp(sigma * z - sigma * sigma / 2)
        if binomial:
            ll = stats.binom.logpmf(k, e, np.minimum(rates, 1 - 1e-12))
        else:
            ll = stats.poisson.logpmf(k, e * rates)
        v = ll + stats.norm.logpdf(z)
        top = v.max()
        logs.append(top + np.log(np.trapezoid(np.exp(v - top), z)))
    return float(logs[0] - logs[1])


@pytest.mark.parametrize(
    ("k", "e", "q", "spread", "binomial"),
    [
        (0, 1000, 0.01, 0.2, True),
        (15, 200, 1e-4, 5.0, True),  # far above the forecast, a wide factor: the old failure
        (30, 1000, 0.01, 0.05, True),
        (164, 200, 0.07, 0.0035, True),  # nearly every message, tiny spread
        (200, 200, 0.01, 1.0, True),  # all of them: the share reaches its cap
        (150, 10_000, 8.6e-4, 0.04, False),
        (3, 50, 0.002, 0.5, False),
    ],
)
def test_with_spread_the_likelihood_ratio_is_the_integral_over_the_factor(
    k: int, e: float, q: float, spread: float, binomial: bool
) -> None:
    got = log_likelihood_ratio([k], [e], [q], 3.0, [spread], [binomial])[0]
    assert got == pytest.approx(_direct_log_ratio(k, e, q, spread, binomial), rel=1e-6, abs=1e-7)


@settings(max_examples=60, deadline=None)
@given(
    st.sampled_from([20, 100, 200, 1_000, 10_000]),
    st.floats(1e-5, 0.3),
    st.floats(0.0, 20.0),
    st.booleans(),
)
def test_the_likelihood_ratio_never_falls_as_the_count_grows(
    e: int, q: float, spread: float, binomial: bool
) -> None:
    """Every count from 0 to the window's size (to 3,000): a higher count is at least as much
    evidence for the raised rate. A per-integral quadrature coarser than the likelihood broke
    this at high counts with a wide spread."""
    k = np.arange(0, min(e, 3_000) + 1, dtype=np.float64)
    ones = np.ones_like(k)
    flags = np.full(k.shape, binomial)
    got = log_likelihood_ratio(k, e * ones, q * ones, 3.0, spread * ones, flags)
    assert np.all(np.isfinite(got))
    assert np.all(np.diff(got) >= -1e-9 * np.maximum(1.0, np.abs(got[1:])))


P = [0.01, 0.04, 0.03, 0.005]


@pytest.mark.parametrize(
    ("method", "expected"),
    [
        ("none", [Decision(True, 0.05)] * 4),
        (
            "bonferroni",
            [Decision(r, 0.0125) for r in (True, False, False, True)],
        ),
        # Holm: sorted 0.005 (<= .05/4), 0.01 (<= .05/3), 0.03 (> .05/2 -> stop), 0.04.
        (
            "holm",
            [
                Decision(True, 0.05 / 3),
                Decision(False, 0.05),
                Decision(False, 0.025),
                Decision(True, 0.0125),
            ],
        ),
        # BH: the largest r with p_(r) <= r*.05/4 is r = 4 (0.04 <= 0.05): all rejected.
        ("bh", [Decision(True, 0.05)] * 4),
    ],
)
def test_corrections_on_a_known_example(method: str, expected: list[Decision]) -> None:
    got = correct(P, 0.05, method)  # type: ignore[arg-type]
    assert [d.rejected for d in got] == [d.rejected for d in expected]
    assert [d.threshold for d in got] == pytest.approx([d.threshold for d in expected])


def test_the_array_form_agrees_with_the_decisions() -> None:
    for method in ("none", "bonferroni", "holm", "bh"):
        rejected, threshold = correct_arrays(P, 0.05, method)  # type: ignore[arg-type]
        assert [Decision(bool(r), float(t)) for r, t in zip(rejected, threshold, strict=True)] == (
            correct(P, 0.05, method)  # type: ignore[arg-type]
        )


def test_bh_with_no_rejection_reports_alpha_over_m() -> None:
    assert correct([0.5, 0.9], 0.05, "bh") == [Decision(False, 0.025)] * 2
    assert correct([], 0.05, "bh") == []


@pytest.mark.parametrize("seed", range(20))
def test_bh_agrees_with_scipy_false_discovery_control(seed: int) -> None:
    rng = np.random.default_rng(seed)
    p = np.concatenate([rng.uniform(size=15), rng.uniform(0, 0.01, size=5)])
    alpha = 0.05
    ours = [d.rejected for d in correct(p.tolist(), alpha, "bh")]
    theirs = (stats.false_discovery_control(p, method="bh") <= alpha).tolist()
    assert ours == theirs
