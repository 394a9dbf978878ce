"""The exact tests and the multiple-testing procedures of services.alerting.stats."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from services.alerting.stats import Decision, binomial_test, correct, poisson_test


def test_poisson_p_value_is_the_upper_tail_at_the_baseline_mean() -> None:
    # Baseline: 300 findings over 30 windows (+0.5 prior) -> mu = 10.0167 per window.
    p, mu = poisson_test([25, 0, 10], [300, 300, 300], [30, 30, 30], prior=0.5)
    assert mu[0] == pytest.approx(300.5 / 30)
    assert p[0] == pytest.approx(stats.poisson.sf(24, 300.5 / 30))
    assert p[1] == 1.0  # no findings is never surprising
    assert 0.4 < p[2] < 0.6


def test_zero_baseline_gives_a_small_positive_rate_not_zero() -> None:
    p, mu = poisson_test([1, 3], [0, 0], [30, 30], prior=0.5)
    assert mu[0] == pytest.approx(0.5 / 30)
    assert 0.0 < p[1] < p[0] < 1.0


def test_binomial_p_value_uses_the_baseline_share() -> None:
    p, expected = binomial_test([30], [1000], [300], [30000], prior=0.5)
    share = 300.5 / 30001
    assert expected[0] == pytest.approx(1000 * share)
    assert p[0] == pytest.approx(stats.binom.sf(29, 1000, share))


def test_binomial_count_above_messages_is_an_error() -> None:
    with pytest.raises(ValueError, match="cannot exceed"):
        binomial_test([5], [4], [0], [100], prior=0.5)


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
