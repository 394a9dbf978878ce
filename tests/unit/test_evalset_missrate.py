"""Miss-rate estimates from labelled random-unflagged cases, and the Hájek weighting behind them."""

from __future__ import annotations

import math
import random

import pytest

from schemas.evalset import EvalCase, EvalLabel
from services.estimation import clopper_pearson
from services.evalsets.missrate import estimate_miss_rates
from services.evalsets.weighting import hajek, subsample_weights


def case(
    i: int,
    missed: list[str] | None,
    pi: float = 0.1,
    stratum: str = "unflagged|nl|t",
    period: str = "2026-W45",
) -> EvalCase:
    cid = f"c{i}"
    return EvalCase(
        case_id=f"{period}:{cid}",
        period=period,
        conversation_id=cid,
        event_id=None,
        stratum=stratum,
        flag_stratum=stratum.split("|")[0],  # type: ignore[arg-type]
        language="nl",
        tenant="t",
        inclusion_probability=pi,
        inclusion_final=True,
        question="q",
        answer="a",
        label=None if missed is None else EvalLabel(conversation_id=cid, missed_categories=missed),  # type: ignore[arg-type]
    )


def test_equal_probabilities_give_exact_clopper_pearson() -> None:
    cases = [case(i, ["pii"] if i < 3 else []) for i in range(40)]
    cases += [case(100, None)]  # unlabelled: not used
    cases += [case(200, ["pii"], stratum="pii|nl|t")]  # flagged: not part of the miss rate
    rep = estimate_miss_rates(cases, confidence=0.95)
    assert (rep.unflagged_cases, rep.labelled) == (41, 40)
    pii = rep.rates["pii"]
    assert (pii.missed, pii.labelled, pii.method) == (3, 40, "clopper-pearson")
    assert pii.estimate == pytest.approx(3 / 40)
    assert (pii.lower, pii.upper) == pytest.approx(clopper_pearson(3, 40, 0.95))
    assert pii.population == pytest.approx(41 / 0.1)  # the unlabelled case's weight spreads
    assert rep.rates["medical"].estimate == 0.0
    assert rep.rates["medical"].upper == pytest.approx(clopper_pearson(0, 40)[1])
    assert rep.rates["any"].missed == 3


def test_unequal_probabilities_are_weighted() -> None:
    # Stratum A: π = 0.5, 1 of 4 missed; stratum B: π = 0.05, 2 of 4 missed.
    a = [case(i, ["pii"] if i == 0 else [], 0.5, "unflagged|nl|a") for i in range(4)]
    b = [case(10 + i, ["pii"] if i < 2 else [], 0.05, "unflagged|nl|b") for i in range(4)]
    rep = estimate_miss_rates(a + b)
    pii = rep.rates["pii"]
    expected = (1 * 2 + 2 * 20) / (4 * 2 + 4 * 20)
    assert pii.estimate == pytest.approx(expected)
    assert pii.method == "korn-graubard"
    assert pii.lower is not None and pii.upper is not None
    assert pii.lower < expected < pii.upper
    assert "nonsense" not in rep.rates and set(rep.rates) >= {"pii", "medical", "any"}


def test_new_categories_in_labels_are_reported_and_no_labels_give_no_estimate() -> None:
    rep = estimate_miss_rates([case(0, ["secret"]), case(1, [])], categories=["pii"])
    assert list(rep.rates) == ["pii", "secret", "any"]
    empty = estimate_miss_rates([case(0, None)])
    assert empty.labelled == 0 and empty.rates["pii"].estimate is None


def test_subsample_weights_keep_group_totals() -> None:
    w = subsample_weights([2.0, 2.0, 2.0, 10.0], ["a", "a", "a", "b"], [True, False, True, True])
    assert w == [3.0, 0.0, 3.0, 10.0]


def test_hajek_validation_and_normal_interval() -> None:
    assert hajek([], [], []) is None
    with pytest.raises(ValueError):
        hajek([1], [0.0], ["a"])
    with pytest.raises(ValueError):
        hajek([0.5], [1.0], ["a"], binary=True)
    with pytest.raises(ValueError):
        hajek([1, 2], [1.0], ["a"])
    e = hajek([0.2, 0.4, 0.9, 0.7], [4.0, 4.0, 4.0, 4.0], ["a", "a", "a", "a"])
    assert e is not None and e.method == "normal"
    assert e.estimate == pytest.approx(0.55)
    # Stratified SRS variance with finite-population correction (n=4, N=16).
    s2 = sum((y - 0.55) ** 2 for y in [0.2, 0.4, 0.9, 0.7]) / 3
    half = 1.959963984540054 * math.sqrt((1 - 4 / 16) * s2 / 4)
    assert (e.lower, e.upper) == pytest.approx((0.55 - half, 0.55 + half))


def test_weighted_interval_coverage_by_simulation() -> None:
    """Two strata sampled at very different rates: the Korn–Graubard interval covers the
    population miss rate in about 95% of repeated samples (at least 90% here)."""
    rng = random.Random(5)
    big = [rng.random() < 0.04 for _ in range(4000)]
    small = [rng.random() < 0.20 for _ in range(300)]
    truth = (sum(big) + sum(small)) / (len(big) + len(small))
    covered = 0
    runs = 300
    for _ in range(runs):
        cases = []
        for idx in rng.sample(range(len(big)), 60):
            cases.append(case(idx, ["pii"] if big[idx] else [], 60 / 4000, "unflagged|en|big"))
        for idx in rng.sample(range(len(small)), 30):
            cases.append(
                case(10_000 + idx, ["pii"] if small[idx] else [], 30 / 300, "unflagged|en|small")
            )
        r = estimate_miss_rates(cases).rates["pii"]
        assert r.lower is not None and r.upper is not None
        covered += r.lower <= truth <= r.upper
    assert covered / runs >= 0.90
