"""Empirical coverage and width of the population-rate intervals of ``services.estimation``.

Simulates populations with a known truth, samples them the way Vigil does (``always`` stratum in
full, the rest with probability ``p``), estimates the rate with the library, and counts how often
the interval contains the realised population rate. Prints markdown tables; with ``--write FILE``
also replaces the generated block of ``FILE`` (between the ``coverage:begin``/``coverage:end``
markers).

    .venv/bin/python benchmarks/estimator_coverage.py --write docs/sampling.md

Three experiments:

A. Independent answers (one answer per conversation). Simulated at the level of counts, with the
   exact distribution of Bernoulli sampling: stratum totals are binomial, the number checked is
   binomial, the hits among them hypergeometric given the stratum's realised hits.
B. Conversations of several answers sampled together, with hits correlated within a conversation
   (intra-class correlation ρ): the plain Clopper–Pearson interval (answers treated as independent)
   beside the Korn–Graubard interval (design effect estimated from the checked conversations).
   Simulated answer by answer; a uniform draw per conversation stands in for the keyed hash
   (``tests/unit/test_sampling.py`` checks the hash's uniformity).
C. The sampling rate changed half-way (two sub-strata, Bonferroni-combined by ``RateTracker``).
D. Few conversations: exactly 1–20 conversations of 1 + Poisson(9) answers checked, hits
   correlated within a conversation up to ρ = 0.5, fed answer by answer with their conversation
   ids to ``RateTracker`` (Korn–Graubard with the degrees-of-freedom correction).

A repetition whose rate is not estimable (no answer of a stratum checked) is not an interval: it
is counted apart and left out of the coverage, never counted as covered.
"""

from __future__ import annotations

import argparse
import math
import re
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from services.estimation import (
    RateEstimate,
    RateTracker,
    clopper_pearson,
    cluster_degrees_of_freedom,
    cluster_design_effect,
    estimate_rate,
)

ALWAYS_SHARE = 0.10
ALWAYS_RATE = 0.30
CONFIDENCE = 0.95
BEGIN = "<!-- coverage:begin -->"
END = "<!-- coverage:end -->"


@dataclass
class Tally:
    covered: int = 0
    width: float = 0.0
    no_estimate: int = 0
    sq_err: float = 0.0
    sq_err_ht: float = 0.0
    estimated: int = 0
    n_eff: float = 0.0

    def add(self, est: RateEstimate, truth: float) -> None:
        if not est.estimable:
            self.no_estimate += 1  # not an interval: neither covered nor missed
            return
        assert est.estimate is not None and est.lower is not None and est.upper is not None
        self.estimated += 1
        self.covered += est.lower - 1e-12 <= truth <= est.upper + 1e-12
        self.width += est.upper - est.lower
        self.n_eff += est.effective_sample_size or est.sampled_checked
        self.sq_err += (est.estimate - truth) ** 2
        if est.horvitz_thompson is not None:
            self.sq_err_ht += (est.horvitz_thompson - truth) ** 2

    @property
    def coverage(self) -> float:
        return self.covered / self.estimated if self.estimated else math.nan

    def coverage_interval(self) -> tuple[float, float]:
        """Exact 95% interval of the coverage itself (the Monte-Carlo error of the row)."""
        lo, hi = clopper_pearson(self.covered, self.estimated, 0.95)
        return lo, hi

    @property
    def mean_width(self) -> float:
        return self.width / self.estimated if self.estimated else math.nan

    def rmse(self, ht: bool = False) -> float:
        if not self.estimated:
            return math.nan
        return math.sqrt((self.sq_err_ht if ht else self.sq_err) / self.estimated)


def experiment_a(rng: np.random.Generator, reps: int) -> list[str]:
    rows = [
        "| rate (sampled stratum) | p | N | mean checked (both strata) | coverage | mean width "
        "| RMSE post-strat. | RMSE HT | not estimable |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for theta in (0.005, 0.02, 0.07, 0.2):
        for p in (0.01, 0.05, 0.1, 0.5):
            for n_pop in (1_000, 10_000, 100_000):
                n_always = round(n_pop * ALWAYS_SHARE)
                n_s = n_pop - n_always
                tally = Tally()
                checked = 0
                x_a = rng.binomial(n_always, ALWAYS_RATE, reps)
                big_x_s = rng.binomial(n_s, theta, reps)
                n_checked = rng.binomial(n_s, p, reps)
                for i in range(reps):
                    ns = int(n_checked[i])
                    xs = int(rng.hypergeometric(big_x_s[i], n_s - big_x_s[i], ns)) if ns else 0
                    checked += n_always + ns
                    truth = (int(x_a[i]) + int(big_x_s[i])) / n_pop
                    est = estimate_rate(
                        int(x_a[i]), n_always, xs, ns, n_s, CONFIDENCE, inclusion_probability=p
                    )
                    tally.add(est, truth)
                rows.append(
                    f"| {theta} | {p} | {n_pop:,} | {checked / reps:,.0f} | {tally.coverage:.3f} "
                    f"| {tally.mean_width:.4f} | {tally.rmse():.4f} | {tally.rmse(ht=True):.4f} "
                    f"| {tally.no_estimate} |"
                )
    return rows


def experiment_b(rng: np.random.Generator, reps: int) -> list[str]:
    conversations = 2_500
    rows = [
        "| rate (sampled stratum) | ρ | p | mean deff | coverage CP | width CP "
        "| coverage KG | width KG |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for theta in (0.02, 0.07, 0.2):
        for rho in (0.0, 0.2, 0.5):
            for p in (0.05, 0.2):
                cp, kg = Tally(), Tally()
                deff_sum = 0.0
                for _ in range(reps):
                    sizes = 1 + rng.poisson(3.0, conversations)  # mean 4 answers
                    conv = np.repeat(np.arange(conversations), sizes)
                    if rho > 0:
                        a = theta * (1 - rho) / rho
                        b = (1 - theta) * (1 - rho) / rho
                        q = rng.beta(a, b, conversations)
                    else:
                        q = np.full(conversations, theta)
                    always = rng.random(conv.size) < ALWAYS_SHARE
                    hit = np.where(
                        always,
                        rng.random(conv.size) < ALWAYS_RATE,
                        rng.random(conv.size) < q[conv],
                    )
                    in_sample = (rng.random(conversations) < p)[conv]
                    truth = float(hit.mean())
                    x_a = int(hit[always].sum())
                    n_a = int(always.sum())
                    pick = ~always & in_sample
                    m_c = np.bincount(conv[pick], minlength=conversations)
                    y_c = np.bincount(conv[pick], weights=hit[pick], minlength=conversations)
                    keep = m_c > 0
                    ns = int(pick.sum())
                    xs = int(hit[pick].sum())
                    deff = cluster_design_effect(
                        m_c[keep].tolist(), y_c[keep].astype(np.int64).tolist()
                    )
                    deff_sum += deff
                    big_n_s = conv.size - n_a
                    cp.add(estimate_rate(x_a, n_a, xs, ns, big_n_s, CONFIDENCE), truth)
                    sizes, hits = m_c[keep].tolist(), y_c[keep].astype(np.int64).tolist()
                    kg.add(
                        estimate_rate(
                            x_a,
                            n_a,
                            xs,
                            ns,
                            big_n_s,
                            CONFIDENCE,
                            design_effect=deff,
                            conversations=len(sizes) if ns else None,
                            degrees_of_freedom=(
                                cluster_degrees_of_freedom(sizes, hits) if ns else None
                            ),
                        ),
                        truth,
                    )
                rows.append(
                    f"| {theta} | {rho} | {p} | {deff_sum / reps:.2f} | {cp.coverage:.3f} "
                    f"| {cp.mean_width:.4f} | {kg.coverage:.3f} | {kg.mean_width:.4f} |"
                )
    return rows


def experiment_c(rng: np.random.Generator, reps: int) -> list[str]:
    rows = [
        "| rate (sampled stratum) | p before → after | N | coverage | mean width |",
        "|---:|---:|---:|---:|---:|",
    ]
    for theta in (0.02, 0.07, 0.2):
        for p1, p2 in ((0.05, 0.2), (0.1, 0.01)):
            n_pop = 4_000
            n_always = round(n_pop * ALWAYS_SHARE)
            half = (n_pop - n_always) // 2
            tally = Tally()
            for _ in range(reps):
                tracker = RateTracker()
                x_a = int(rng.binomial(n_always, ALWAYS_RATE))
                tracker.observe_population("always", count=n_always)
                for _ in range(x_a):
                    tracker.observe("always", 1.0, hit=True)
                for _ in range(n_always - x_a):
                    tracker.observe("always", 1.0, hit=False)
                total = x_a
                for p in (p1, p2):
                    big_x = int(rng.binomial(half, theta))
                    ns = int(rng.binomial(half, p))
                    xs = int(rng.hypergeometric(big_x, half - big_x, ns)) if ns else 0
                    total += big_x
                    tracker.observe_population("sampled", p, count=half)
                    for j in range(ns):
                        tracker.observe("sampled", p, hit=j < xs)
                tally.add(tracker.estimate(CONFIDENCE), total / (n_always + 2 * half))
            rows.append(
                f"| {theta} | {p1} → {p2} | {n_pop:,} | {tally.coverage:.3f} "
                f"| {tally.mean_width:.4f} |"
            )
    return rows


GRID_RATES = (0.02, 0.07, 0.2, 0.5)
GRID_RHOS = (0.0, 0.1, 0.2, 0.5)
GRID_CONVERSATIONS = (1, 2, 3, 5, 8, 11, 20)
GRID_POPULATION = 1_000  # conversations


def experiment_d(rng: np.random.Generator, reps: int) -> tuple[list[str], float]:
    """Few conversations checked; returns the rows and the lowest coverage with >= 2."""
    rows = [
        "| rate | ρ | conversations checked | mean answers checked | mean n_eff | coverage "
        "| 95% interval of the coverage | mean width |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    worst = 1.0
    for theta in GRID_RATES:
        for rho in GRID_RHOS:
            for c in GRID_CONVERSATIONS:
                tally = Tally()
                answers = 0
                for _ in range(reps):
                    sizes = 1 + rng.poisson(9.0, GRID_POPULATION)
                    if rho > 0:
                        a = theta * (1 - rho) / rho
                        b = (1 - theta) * (1 - rho) / rho
                        q = rng.beta(a, b, GRID_POPULATION)
                    else:
                        q = np.full(GRID_POPULATION, theta)
                    hits = rng.binomial(sizes, q)
                    truth = float(hits.sum() / sizes.sum())
                    p = c / GRID_POPULATION
                    tracker = RateTracker()
                    tracker.observe_population("sampled", p, count=int(sizes.sum()))
                    for conv in rng.choice(GRID_POPULATION, size=c, replace=False).tolist():
                        m, y = int(sizes[conv]), int(hits[conv])
                        answers += m
                        for j in range(m):
                            tracker.observe("sampled", p, hit=j < y, conversation_id=f"c{conv}")
                    tally.add(tracker.estimate(CONFIDENCE), truth)
                lo, hi = tally.coverage_interval()
                if c >= 2:
                    worst = min(worst, tally.coverage)
                rows.append(
                    f"| {theta} | {rho} | {c} | {answers / reps:.1f} | "
                    f"{tally.n_eff / tally.estimated:.1f} | {tally.coverage:.3f} | "
                    f"[{lo:.3f}, {hi:.3f}] | {tally.mean_width:.3f} |"
                )
    return rows, worst


def render(reps: int, seed: int) -> str:
    rng = np.random.default_rng(seed)
    started = time.perf_counter()
    a = experiment_a(rng, reps)
    b = experiment_b(rng, reps)
    c = experiment_c(rng, reps)
    d, worst = experiment_d(rng, reps)
    sys.stderr.write(f"simulated in {time.perf_counter() - started:.0f} s\n")
    mc = 1.96 * math.sqrt(CONFIDENCE * (1 - CONFIDENCE) / reps)
    lines = [
        f"Generated by `benchmarks/estimator_coverage.py --reps {reps} --seed {seed}` "
        f"(deterministic for a given seed). Nominal confidence {CONFIDENCE}; {reps:,} "
        f"repetitions per row, so a coverage estimate has a Monte-Carlo error of about "
        f"±{mc:.3f} (95%). In every population {ALWAYS_SHARE:.0%} of the answers are in the "
        f"`always` stratum with rate {ALWAYS_RATE}; the truth is the realised rate over all "
        "answers of that population.",
        "",
        "A repetition whose rate is not estimable (no answer of a stratum checked) has no "
        "interval: it is counted apart and left out of the coverage, not counted as covered.",
        "",
        "**A. Independent answers** (post-stratified estimate, Clopper–Pearson interval; RMSE of "
        "the post-stratified estimate beside plain Horvitz–Thompson; *not estimable*: "
        "repetitions in which no `sampled`-stratum answer was checked)",
        "",
        *a,
        "",
        "**B. Conversations sampled together** (2,500 conversations of 1 + Poisson(3) answers, "
        "hit probability per conversation ~ Beta with mean = rate and intra-class correlation ρ; "
        "CP = Clopper–Pearson treating answers as independent, KG = Korn–Graubard with the "
        "design effect and the degrees of freedom estimated from the checked conversations, as "
        "`RateTracker` does)",
        "",
        *b,
        "",
        "**C. Sampling rate changed half-way** (two sub-strata of equal size, each with its own "
        "Clopper–Pearson interval at 1 − α/2, bounds added)",
        "",
        *c,
        "",
        f"**D. Few conversations checked** ({GRID_POPULATION:,} conversations of 1 + Poisson(9) "
        "answers, hit probability per conversation ~ Beta with mean = rate and intra-class "
        "correlation ρ; exactly the given number of conversations checked, at random, fed "
        "answer by answer with their ids to `RateTracker`: Korn–Graubard with the design "
        "effect and the degrees of freedom of the checked conversations; no `always` stratum; "
        "the truth is the realised rate of all answers; *n_eff*: the effective sample size "
        "after the degrees-of-freedom correction). Lowest coverage with ≥ 2 conversations "
        f"checked: **{worst:.3f}**.",
        "",
        *d,
    ]
    return "\n".join(lines) + "\n"


def write_block(path: Path, block: str) -> None:
    text = path.read_text(encoding="utf-8")
    pattern = re.compile(re.escape(BEGIN) + r".*?" + re.escape(END), re.DOTALL)
    if not pattern.search(text):
        raise SystemExit(f"{path}: markers {BEGIN} / {END} not found")
    path.write_text(pattern.sub(lambda _: f"{BEGIN}\n{block}{END}", text), encoding="utf-8")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=1000, help="repetitions per row")
    parser.add_argument("--seed", type=int, default=20240601)
    parser.add_argument("--write", type=Path, help="replace the generated block of this file")
    args = parser.parse_args(argv)
    block = render(args.reps, args.seed)
    sys.stdout.write(block)
    if args.write:
        write_block(args.write, block)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
